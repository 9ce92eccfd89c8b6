#pragma once
// A counter-based stream of standard normal numbers, for the simulators' bulk Gaussian data (the
// D-dimensional tokens of online SGD). Number i of a stream is a pure function of the stream's key
// and of i: a fill split into pieces, done in any order or on any number of threads, gives the same
// numbers as one fill, and a stream can be read from any position without drawing what precedes it.
//
// The law (docs/architecture.md, "Random numbers"): the numbers come in blocks of 16; block b uses
// the ARS-7 counters c = 8b, ..., 8b + 7 (Random123's ARS-1xm128i, AES rounds keyed by a Weyl
// sequence; key = (stream_seed(...), 0) and counter (c, 0) as two 64-bit words, low first). Number
// 16b + j is drawn from one 64-bit word, the low word of counter 8b + j for j < 8 and the high word of
// counter 8b + j − 8 for j ≥ 8, by the ziggurat of Marsaglia and Tsang (2000) with 2048 layers: the
// word's low 11 bits choose a layer i, its next bit the sign, its top 52 bits u ∈ [0, 1), and the
// number is ±u x_i when u x_i < x_{i+1}, inside the layer's part wholly under the density (99.77% of
// words). The rest (the wedges and the tail beyond r = x_1 ≈ 4.216) is finished exactly with further
// words from a fallback stream, ARS-7 under key (stream_seed(...), 1) at counters (i, k), k = 0, 1, …,
// so that a number stays a function of its position i (normal_stream.cpp). Four paths compute it:
// eight lanes at once with AVX-512 and VAES (the AES rounds of four counters per instruction, the
// layer tables read by gathers), four lanes with AVX2 and VAES (two counters per instruction, the
// table by 16-byte loads), one lane with AES-NI, and one lane in plain C++ (the reference, on any
// CPU); they do the same floating-point operations and give the same bits. Why ARS and a
// ziggurat: the AES rounds cost a quarter of Philox's multiplications per number, and the ziggurat's
// usual draw is one multiplication and one comparison where Box–Muller needs ln, √ and sin/cos:
// measured side by side 1.7 times the rate of an ARS Box–Muller with ln and sincos written for it
// (docs/specialization.md, "Speed"). 2048 layers rather than the usual 128 or 256 because every draw
// that leaves the vector path costs a mispredicted branch and a scalar finish: 0.23% of draws here,
// 1.5% at 256 (the full step measured 0.545 ms at 1024 layers, 0.50 at 2048, 0.48 at 4096, whose u
// would keep only 51 bits).
#include <cstddef>
#include <cstdint>

namespace hdat::rng {

namespace detail {
/// The ziggurat's tables, for the tests: x[0..layers] (x[1] = tail_start = r, x[layers] = 0) and
/// f[i] = exp(−x[i]²/2); every layer has area layer_area = r f(r) + ∫_r^∞ f.
struct ZigguratLayers {
  const double* x;
  const double* f;
  int layers;
  double tail_start;
  double layer_area;
};
ZigguratLayers ziggurat_layers();
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

  /// Block `block` (16 numbers) by the law above on one lane, counter by counter, the AES rounds in
  /// plain C++: the reference the fast paths (and it, Random123's ARS) are tested against.
  void reference_block(std::uint64_t block, double* out) const;

  /// How many numbers this build computes at once: 8 (AVX-512 with VAES), 4 (AVX2 with VAES) or 1.
  static int lanes();

 private:
  std::uint64_t key_;
  std::uint64_t position_ = 0;
};

}  // namespace hdat::rng
