#pragma once
// The draws of NumPy's legacy global generator (np.random.seed(s); np.random.randn / rand), so that
// hdat can start from exactly the initial conditions of the authors' public NumPy scripts and
// reproduce the spec's reference numbers digit for digit (init=numpy, init=numpy_target_first).
//
// NumPy's RandomState: MT19937 seeded by the reference init_genrand(s) (the same seeding as
// boost::random::mt19937(s)); a double is (a >> 5, b >> 6) of two 32-bit outputs,
// (a · 2^26 + b) / 2^53; a normal is the Marsaglia polar method, which yields two numbers per
// accepted pair and caches the second (returned first: f · x2, then f · x1).
#include <boost/random/mersenne_twister.hpp>
#include <cmath>
#include <cstdint>

namespace hdat::polarization {

class NumpyLegacyRandom {
 public:
  explicit NumpyLegacyRandom(std::uint32_t seed) : mt_(seed) {}

  /// np.random.rand(): uniform on [0, 1) with 53 random bits.
  double uniform() {
    const std::uint32_t a = static_cast<std::uint32_t>(mt_()) >> 5, b = static_cast<std::uint32_t>(mt_()) >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
  }

  /// np.random.randn(): standard normal (legacy polar method with its cached second value).
  double normal() {
    if (has_cached_) {
      has_cached_ = false;
      return cached_;
    }
    double x1, x2, r2;
    do {
      x1 = 2.0 * uniform() - 1.0;
      x2 = 2.0 * uniform() - 1.0;
      r2 = x1 * x1 + x2 * x2;
    } while (r2 >= 1.0 || r2 == 0.0);
    const double f = std::sqrt(-2.0 * std::log(r2) / r2);
    cached_ = f * x1;
    has_cached_ = true;
    return f * x2;
  }

 private:
  boost::random::mt19937 mt_;
  bool has_cached_ = false;
  double cached_ = 0.0;
};

}  // namespace hdat::polarization
