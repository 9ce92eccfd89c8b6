#pragma once
// A counter-based stream of standard normal numbers, for the simulators' bulk Gaussian data (the
// D-dimensional tokens of online SGD). Number i of a stream is a pure function of the stream's key
// and of i: a fill split into pieces, done in any order or on any number of threads, gives the same
// numbers as one fill, and a stream can be read from any position without drawing what precedes it.
//
// The law (docs/architecture.md, "Random numbers"): the numbers come in blocks of 16; block b uses
// the ARS-7 counters c = 8b, ..., 8b + 7 (Random123's ARS-1xm128i, AES rounds keyed by a Weyl
// sequence; key = (stream_seed(...), 0) and counter (c, 0) as two 64-bit words, low first). The
// output of counter c, a_c (low word) and b_c (high word), gives by Box–Muller
//   u₁ = (⌊a_c / 2¹¹⌋ + 1) 2⁻⁵³ ∈ (0, 1],  u₂ = ⌊b_c / 2¹¹⌋ 2⁻⁵³ ∈ [0, 1),  ρ = √(−2 ln u₁),
//   number 16b + j = ρ cos(2π u₂) for j < 8 (c = 8b + j) and ρ sin(2π u₂) for j ≥ 8 (c = 8b + j − 8).
// On one lane ln and sincos are SLEEF's (3.5 ulp). On eight lanes they are hdat's own, written for
// these arguments only (normal_stream.cpp): a division-free logarithm of (0, 1], measured within
// 1.4 · 2⁻⁵² relative, and sin and cos of 2πu, within 1.5 · 2⁻⁵³ (the tests bound both by 2); the two
// take 2.2 ns per lane against SLEEF's 3.7. Three paths compute the same formula: eight lanes at once
// with AVX-512 and VAES (the AES rounds of four counters per instruction), one lane with AES-NI, and
// one lane in plain C++ (the reference, on any CPU). The eight-lane and one-lane functions may differ
// in the last bits, so a stream is reproducible bit for bit within a build. Why ARS and Box–Muller:
// the AES rounds cost a quarter of Philox's multiplications per number (measured 630 against 410 M
// numbers/s on this machine's core, both with SLEEF's functions), and Box–Muller needs no rejection
// (every number is one counter's half, whatever the position), where a vectorised ziggurat measured
// 316 M/s (its gathers and 2.8% slow path cost more than SLEEF's ln and sincos).
#include <cstddef>
#include <cstdint>

namespace hdat::rng {

namespace detail {
/// out[i] = ln u[i] for u[i] in (0, 1], by the eight-lane logarithm of the AVX-512 path; false (and
/// nothing written) in a build without that path. For the tests.
bool log_unit_interval(const double* u, double* out, std::size_t n);
/// sin[i] = sin 2πu[i], cos[i] = cos 2πu[i] for u[i] in [0, 1), by the eight-lane functions of the
/// AVX-512 path; false in a build without it. For the tests.
bool sincos_turns(const double* u, double* sin, double* cos, std::size_t n);
}  // namespace detail

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

  /// Block `block` (16 numbers) by the formula above on one lane, counter by counter, the AES rounds
  /// in plain C++: the reference the fast paths (and it, Random123's ARS) are tested against.
  void reference_block(std::uint64_t block, double* out) const;

  /// Whether this build computes eight lanes at once (AVX-512 with VAES) or one.
  static bool vectorised();

 private:
  std::uint64_t key_;
  std::uint64_t position_ = 0;
};

}  // namespace hdat::rng
