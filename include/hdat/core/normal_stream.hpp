#pragma once
// A counter-based stream of standard normal numbers, for the simulators' bulk Gaussian data (the
// D-dimensional tokens of online SGD). Number i of a stream is a pure function of the stream's key
// and of i: a fill split into pieces, done in any order or on any number of threads, gives the same
// numbers as one fill, and a stream can be read from any position without drawing what precedes it.
//
// The law (docs/architecture.md, "Random numbers"): the numbers come in blocks of 16; block b uses
// the Philox4x32-10 counters c = 8b, ..., 8b + 7 (Random123; key = stream_seed(...) as two 32-bit
// words, low first; counter words (c mod 2³², ⌊c / 2³²⌋, 0, 0)). The output r₀..r₃ of counter c
// gives a_c = r₀ + 2³² r₁ and b_c = r₂ + 2³² r₃, and Box–Muller:
//   u₁ = (⌊a_c / 2¹¹⌋ + 1) 2⁻⁵³ ∈ (0, 1],  u₂ = ⌊b_c / 2¹¹⌋ 2⁻⁵³ ∈ [0, 1),  ρ = √(−2 ln u₁),
//   number 16b + j = ρ cos(2π u₂) for j < 8 (c = 8b + j) and ρ sin(2π u₂) for j ≥ 8 (c = 8b + j − 8).
// ln and sincos are SLEEF's (3.5 ulp), eight lanes at once with AVX-512; the one-lane path computes
// the same formula with SLEEF's one-lane functions (their last bits may differ from the eight-lane
// ones, so a stream is reproducible bit for bit within a build). Box–Muller rather than a ziggurat:
// no rejection (every number is one counter's half, whatever the position) and, measured on this
// machine, 424 against 316 M numbers/s for a vectorised ziggurat (whose gathers and 2.8% slow path
// cost more than SLEEF's ln and sincos).
#include <cstddef>
#include <cstdint>

namespace hdat::rng {

class NormalStream {
 public:
  /// The stream (seed, replica, stream) of hdat/core/random.hpp: its key is stream_seed(...).
  NormalStream(std::uint64_t seed, std::uint64_t replica, std::uint64_t stream);

  /// The next n numbers of the stream, written to out; the position advances by n.
  void fill(double* out, std::size_t n);
  /// Numbers [first, first + n) of the stream, whatever the current position (which is unchanged).
  void fill_at(std::uint64_t first, double* out, std::size_t n) const;

  std::uint64_t position() const { return position_; }
  void seek(std::uint64_t position) { position_ = position; }
  std::uint64_t key() const { return key_; }

  /// Block `block` (16 numbers) by the formula above on one lane, counter by counter with
  /// Random123's own Philox: the reference the vectorised path is tested against.
  void reference_block(std::uint64_t block, double* out) const;

  /// Whether this build computes eight lanes at once (AVX-512) or one.
  static bool vectorised();

 private:
  std::uint64_t key_;
  std::uint64_t position_ = 0;
};

}  // namespace hdat::rng
