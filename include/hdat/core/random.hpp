#pragma once
// Reproducible random streams. Every draw in hdat comes from an engine seeded by (seed, replica,
// stream): the same numbers for a given seed whatever the number of threads, and independent
// streams for different replicas (simulation seeds) and purposes (weights, data, test set ...).
#include <boost/random/mersenne_twister.hpp>
#include <cstdint>

namespace hdat::rng {

/// SplitMix64 finaliser: a bijective 64-bit mixer (good avalanche), used to derive stream seeds.
constexpr std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// Seed of the stream (seed, replica, stream); distinct triples give unrelated seeds.
constexpr std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t replica = 0, std::uint64_t stream = 0) {
  return mix(mix(mix(seed) ^ (replica + 0x632be59bd9b4e019ULL)) ^ (stream + 0x85ebca6b2f1d3a7bULL));
}

using Engine = boost::random::mt19937_64;

inline Engine engine(std::uint64_t seed, std::uint64_t replica = 0, std::uint64_t stream = 0) {
  return Engine(stream_seed(seed, replica, stream));
}

/// Named stream identifiers, so that two uses of one seed never share numbers by accident.
enum Stream : std::uint64_t {
  theory_samples = 1,
  teacher = 2,
  student_init = 3,
  training_data = 4,
  test_set = 5,
  asymmetry = 6,
  drift_check = 7,
  flow_samples = 11,   ///< the specialization ODE's sample set
  bayes_samples = 12,  ///< the specialization Bayes risk's sample set
  run_coordinates = 13,  ///< a run's replica from its coordinates (dimension, index of the control value)
  power_iteration = 14,  ///< start vectors of power iterations (operator norms)
  training_tokens = 15,  ///< the Gaussian tokens of the training samples (rng::NormalStream)
  test_tokens = 16,      ///< the Gaussian tokens of full-dimensional test samples (rng::NormalStream)
  drift_tokens = 17,     ///< the Gaussian inputs of the drift check's samples (rng::NormalStream)
  user = 100,
};

}  // namespace hdat::rng
