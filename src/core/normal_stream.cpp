#include "hdat/core/normal_stream.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>

#include "hdat/core/random.hpp"

#if defined(__AES__) || defined(__VAES__)
#include <immintrin.h>
#endif
#if defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__VAES__)
#define HDAT_NORMAL_STREAM_AVX512 1
#elif defined(__AVX2__) && defined(__VAES__)
#define HDAT_NORMAL_STREAM_AVX2 1
#endif

namespace hdat::rng {

// In a unity build this file shares a unit with others: its helpers live in a namespace of their own
// (and have internal linkage, which also lets the compiler inline them into the block loop).
namespace ars_ziggurat {
namespace {

constexpr std::size_t kBlock = 16;     // numbers per block
constexpr std::size_t kPairs = 8;      // ARS counters per block
constexpr int kRounds = 7;             // Random123's default for ARS-1xm128i
constexpr double kTwoPow52 = 0x1p-52, kTwoPow53 = 0x1p-53;
constexpr std::uint64_t kWeylLow = 0x9E3779B97F4A7C15ull;   // the round keys' increments (Random123's
constexpr std::uint64_t kWeylHigh = 0xBB67AE8584CAA73Bull;  // golden ratio and √3 − 1 as 64-bit words)
constexpr int kLayerBits = 11;
constexpr std::uint64_t kLayers = std::uint64_t{1} << kLayerBits;
constexpr std::uint64_t kFallbackKey = 1;  // the high word of the fallback stream's key

// ---------------------------------------------------------------------------------------------
// The AES round in plain C++ (FIPS-197; the semantics of the AESENC instruction): the reference on
// every CPU. A 128-bit word is 16 bytes, byte 4c + r holding row r of column c.
using Bytes = std::array<std::uint8_t, 16>;

std::uint8_t times_x(std::uint8_t a) { return static_cast<std::uint8_t>((a << 1) ^ ((a & 0x80) ? 0x1B : 0)); }

std::uint8_t gf_multiply(std::uint8_t a, std::uint8_t b) {
  std::uint8_t product = 0;
  for (; b != 0; b >>= 1, a = times_x(a))
    if (b & 1) product ^= a;
  return product;
}

// SubBytes: the multiplicative inverse in GF(2⁸) (0 ↦ 0), then the affine map of FIPS-197 §5.1.1.
std::array<std::uint8_t, 256> make_sbox() {
  std::array<std::uint8_t, 256> box{};
  for (int x = 0; x < 256; ++x) {
    std::uint8_t inverse = 0;
    for (int y = 1; y < 256 && x != 0; ++y)
      if (gf_multiply(static_cast<std::uint8_t>(x), static_cast<std::uint8_t>(y)) == 1) inverse = static_cast<std::uint8_t>(y);
    auto rotl = [](std::uint8_t v, int k) { return static_cast<std::uint8_t>((v << k) | (v >> (8 - k))); };
    box[x] = static_cast<std::uint8_t>(inverse ^ rotl(inverse, 1) ^ rotl(inverse, 2) ^ rotl(inverse, 3) ^ rotl(inverse, 4) ^ 0x63);
  }
  return box;
}

// One round: ShiftRows, SubBytes, MixColumns (not in the last round), then the round key added.
Bytes aes_round(const Bytes& state, const Bytes& round_key, bool last) {
  static const std::array<std::uint8_t, 256> sbox = make_sbox();
  Bytes t{};
  for (int c = 0; c < 4; ++c)
    for (int r = 0; r < 4; ++r) t[4 * c + r] = sbox[state[4 * ((c + r) % 4) + r]];
  if (!last)
    for (int c = 0; c < 4; ++c) {
      const std::uint8_t a0 = t[4 * c], a1 = t[4 * c + 1], a2 = t[4 * c + 2], a3 = t[4 * c + 3];
      t[4 * c] = static_cast<std::uint8_t>(times_x(a0) ^ times_x(a1) ^ a1 ^ a2 ^ a3);
      t[4 * c + 1] = static_cast<std::uint8_t>(a0 ^ times_x(a1) ^ times_x(a2) ^ a2 ^ a3);
      t[4 * c + 2] = static_cast<std::uint8_t>(a0 ^ a1 ^ times_x(a2) ^ times_x(a3) ^ a3);
      t[4 * c + 3] = static_cast<std::uint8_t>(times_x(a0) ^ a0 ^ a1 ^ a2 ^ times_x(a3));
    }
  for (int i = 0; i < 16; ++i) t[i] ^= round_key[i];
  return t;
}

Bytes bytes_of(std::uint64_t low, std::uint64_t high) {
  Bytes b{};
  for (int i = 0; i < 8; ++i) {
    b[i] = static_cast<std::uint8_t>(low >> (8 * i));
    b[8 + i] = static_cast<std::uint8_t>(high >> (8 * i));
  }
  return b;
}

std::uint64_t word_of(const Bytes& b, int half) {
  std::uint64_t w = 0;
  for (int i = 7; i >= 0; --i) w = (w << 8) | b[8 * half + i];
  return w;
}

// A 128-bit key, counter or output of ARS as two 64-bit words.
struct Words {
  std::uint64_t low, high;
};

// ARS-7 of `counter` under `key`: v = counter ⊕ key, then six rounds and a last one, the round key
// advancing by the Weyl increment (in each 64-bit half) before each.
Words ars_portable(Words key, Words counter) {
  std::uint64_t k_low = key.low, k_high = key.high;
  Bytes v = bytes_of(counter.low ^ key.low, counter.high ^ key.high);
  for (int round = 1; round <= kRounds; ++round) {
    k_low += kWeylLow, k_high += kWeylHigh;
    v = aes_round(v, bytes_of(k_low, k_high), round == kRounds);
  }
  return {word_of(v, 0), word_of(v, 1)};
}

#if defined(__AES__)
// The same with the AES-NI instruction on one lane.
Words ars_one_lane(Words key, Words counter) {
  const __m128i weyl = _mm_set_epi64x(static_cast<long long>(kWeylHigh), static_cast<long long>(kWeylLow));
  __m128i k = _mm_set_epi64x(static_cast<long long>(key.high), static_cast<long long>(key.low));
  __m128i v = _mm_xor_si128(_mm_set_epi64x(static_cast<long long>(counter.high), static_cast<long long>(counter.low)), k);
  for (int round = 1; round < kRounds; ++round) {
    k = _mm_add_epi64(k, weyl);
    v = _mm_aesenc_si128(v, k);
  }
  v = _mm_aesenclast_si128(v, _mm_add_epi64(k, weyl));
  return {static_cast<std::uint64_t>(_mm_cvtsi128_si64(v)), static_cast<std::uint64_t>(_mm_extract_epi64(v, 1))};
}
#else
Words ars_one_lane(Words key, Words counter) { return ars_portable(key, counter); }
#endif

// ---------------------------------------------------------------------------------------------
// The ziggurat of f(x) = exp(−x²/2) on x ≥ 0 (Marsaglia and Tsang 2000): kLayers layers of equal
// area v, layer i the rectangle [0, x_i] × [f(x_i), f(x_{i+1})] (i ≥ 1) and layer 0 the base
// [0, x_0] × [0, f(r)], x_0 = v / f(r), which stands for [0, r] × [0, f(r)] and the tail beyond r.
// x_1 = r > x_2 > … > x_{kLayers} = 0; the areas x_i (f(x_{i+1}) − f(x_i)) = v and
// r f(r) + ∫_r^∞ f = v fix every x_i once r is chosen, and r is the root that makes the top layer's
// area, x_{N−1} (1 − f(x_{N−1})), also v. Computed in long double, stored in double: the layers'
// areas agree within 2 · 10⁻¹³ relative (the differences f(x_{i+1}) − f(x_i) are small), so each
// layer's probability is exact to ~10⁻¹⁶. Built in about 10 ms, once per process.
struct Ziggurat {
  alignas(64) double x[kLayers + 1];
  alignas(64) double f[kLayers + 1];  // f(x_i)
  double tail_start;                        // r = x_1
  double layer_area;                        // v
};

long double gauss_density(long double x) { return std::exp(-x * x / 2); }
long double gauss_tail_area(long double r) {  // ∫_r^∞ exp(−x²/2) dx
  return std::sqrt(std::acos(-1.0L) / 2) * std::erfc(r / std::sqrt(2.0L));
}

// The layers from a trial r, into x; +1 when r is too small (v too large: the layers reach f = 1
// before the last one, or leave the top layer less than v), −1 when r is too large.
int ziggurat_layers(long double r, long double* x) {
  const long double v = r * gauss_density(r) + gauss_tail_area(r);
  x[0] = v / gauss_density(r), x[1] = r, x[kLayers] = 0;
  for (std::uint64_t i = 1; i + 1 < kLayers; ++i) {
    const long double next_height = gauss_density(x[i]) + v / x[i];
    if (next_height >= 1) return 1;
    x[i + 1] = std::sqrt(-2 * std::log(next_height));
  }
  const long double top = x[kLayers - 1];
  return top * (1 - gauss_density(top)) < v ? 1 : -1;
}

Ziggurat make_ziggurat() {
  long double low = 1, high = 8, x[kLayers + 1];
  while (high - low > 1e-18L * high) {
    const long double middle = (low + high) / 2;
    (ziggurat_layers(middle, x) > 0 ? low : high) = middle;
  }
  const long double r = (low + high) / 2;
  ziggurat_layers(r, x);
  Ziggurat z{};
  for (std::uint64_t i = 0; i <= kLayers; ++i) {
    z.x[i] = static_cast<double>(x[i]);
    z.f[i] = static_cast<double>(gauss_density(z.x[i]));
  }
  z.tail_start = z.x[1];
  z.layer_area = static_cast<double>(r * gauss_density(r) + gauss_tail_area(r));
  return z;
}

// Built on first use (a function-local static), so that no stream filled during another file's static
// initialisation can see it empty.
const Ziggurat& ziggurat() {
  static const Ziggurat table = make_ziggurat();
  return table;
}

// What one 64-bit word asks of the ziggurat: layer = its low kLayerBits (11) bits, the sign its next
// bit, u = ⌊w / 2¹²⌋ 2⁻⁵² ∈ [0, 1) its top 52 bits; the candidate is ±u x_layer.
struct Draw {
  std::uint64_t layer;
  bool negative;
  double u;
};

Draw draw_of(std::uint64_t w) {
  return {w & (kLayers - 1), ((w >> kLayerBits) & 1) != 0, static_cast<double>(w >> 12) * kTwoPow52};
}

double unit_open_below(std::uint64_t w) { return static_cast<double>((w >> 11) + 1) * kTwoPow53; }  // (0, 1]

// The rest of the ziggurat for the number at `position` whose candidate fell outside its layer's
// inner rectangle (a share 0.23% of draws). Its further words come from the fallback stream, ARS-7
// under key (stream key, 1) at counter (position, k), k = 0, 1, …, so a number stays a function of
// its position alone. Wedge (layer ≥ 1): accept x if a uniform height in the layer lies under f(x),
// else start again from a fresh word; base layer beyond r: the tail by Marsaglia's method (1964).
template <class Ars>
[[gnu::cold, gnu::noinline]] double finish_draw(const Ziggurat& z, std::uint64_t key, std::uint64_t position, std::uint64_t word, Ars ars) {
  std::uint64_t k = 0;
  auto fallback = [&] { return ars(Words{key, kFallbackKey}, Words{position, k++}); };
  for (;;) {
    const Draw d = draw_of(word);
    const double x = d.u * z.x[d.layer], sign = d.negative ? -1.0 : 1.0;
    if (x < z.x[d.layer + 1]) return sign * x;
    if (d.layer == 0)
      for (;;) {  // z > r with density ∝ f(z): r + a with a ~ Exp(r), accepted with probability exp(−a²/2)
        const Words w = fallback();
        const double a = -std::log(unit_open_below(w.low)) / z.tail_start, b = -std::log(unit_open_below(w.high));
        if (2 * b > a * a) return sign * (z.tail_start + a);
      }
    const Words w = fallback();
    const double height = z.f[d.layer] + static_cast<double>(w.low >> 11) * kTwoPow53 * (z.f[d.layer + 1] - z.f[d.layer]);
    if (height < std::exp(-0.5 * x * x)) return sign * x;
    word = w.high;
  }
}

// x with the sign of bit 11 of its word, by the bit itself: a branch on it is mispredicted half the time.
double with_sign_of_word(double x, std::uint64_t word) {
  return std::bit_cast<double>(std::bit_cast<std::uint64_t>(x) ^ ((word << (63 - kLayerBits)) & (1ull << 63)));
}

// The number at `position` from its word: the candidate if it lies in its layer's inner rectangle,
// else the rest of the ziggurat.
template <class Ars>
double number_of_word(const Ziggurat& z, std::uint64_t key, std::uint64_t position, std::uint64_t word, Ars ars) {
  const Draw d = draw_of(word);
  const double x = d.u * z.x[d.layer];
  if (x < z.x[d.layer + 1]) return with_sign_of_word(x, word);
  return finish_draw(z, key, position, word, ars);
}

// One block on one lane, counter by counter: number j < 8 from the low word of counter 8b + j, number
// j ≥ 8 from the high word of counter 8b + j − 8.
template <class Ars>
void block_one_lane(std::uint64_t key, std::uint64_t block, double* out, const Ziggurat& z, Ars ars) {
  std::array<Words, kPairs> w;  // all eight first: independent AES chains overlap in the pipeline
  for (std::size_t j = 0; j < kPairs; ++j) w[j] = ars(Words{key, 0}, Words{kPairs * block + j, 0});
  for (std::size_t j = 0; j < kPairs; ++j) {
    out[j] = number_of_word(z, key, kBlock * block + j, w[j].low, ars);
    out[j + kPairs] = number_of_word(z, key, kBlock * block + j + kPairs, w[j].high, ars);
  }
}

#ifdef HDAT_NORMAL_STREAM_AVX512
// Eight numbers from eight words at stream positions first, …, first + 7: the inner-rectangle test and
// ±u x_layer on eight lanes (two gathers from the 16 kB table of x), the rare rest by finish_draw. The
// same operations as the one-lane path, so the same bits.
[[gnu::always_inline]] inline void eight_numbers(__m512i words, std::uint64_t key, std::uint64_t first, double* out, const Ziggurat& z) {
  const __m512i layer = _mm512_and_si512(words, _mm512_set1_epi64(static_cast<long long>(kLayers - 1)));
  const __m512d u = _mm512_mul_pd(_mm512_cvtepu64_pd(_mm512_srli_epi64(words, 12)), _mm512_set1_pd(kTwoPow52));
  const __m512d x = _mm512_mul_pd(u, _mm512_i64gather_pd(layer, z.x, 8));  // the candidate |x|
  const __m512i sign = _mm512_and_si512(_mm512_slli_epi64(words, 63 - kLayerBits), _mm512_set1_epi64(static_cast<long long>(1ull << 63)));
  _mm512_storeu_pd(out, _mm512_castsi512_pd(_mm512_xor_si512(_mm512_castpd_si512(x), sign)));
  const __mmask8 inner = _mm512_cmp_pd_mask(x, _mm512_i64gather_pd(layer, z.x + 1, 8), _CMP_LT_OQ);
  if (inner != 0xFF) [[unlikely]] {
    alignas(64) std::uint64_t w[8];
    _mm512_store_si512(w, words);
    for (int j = 0; j < 8; ++j)
      if (!((inner >> j) & 1)) out[j] = finish_draw(z, key, first + static_cast<std::uint64_t>(j), w[j], ars_one_lane);
  }
}

// ARS-7 of the block's eight counters, four 128-bit lanes per register (VAES); the low words of the
// eight counters in one register, the high words in another.
void block_avx512(std::uint64_t key, std::uint64_t block, double* out, const Ziggurat& z) {
  const __m512i weyl = _mm512_broadcast_i32x4(
      _mm_set_epi64x(static_cast<long long>(kWeylHigh), static_cast<long long>(kWeylLow)));
  const auto c = static_cast<long long>(kPairs * block);
  __m512i k = _mm512_broadcast_i32x4(_mm_set_epi64x(0, static_cast<long long>(key)));
  __m512i v0 = _mm512_xor_si512(_mm512_set_epi64(0, c + 3, 0, c + 2, 0, c + 1, 0, c), k);
  __m512i v1 = _mm512_xor_si512(_mm512_set_epi64(0, c + 7, 0, c + 6, 0, c + 5, 0, c + 4), k);
  for (int round = 1; round < kRounds; ++round) {
    k = _mm512_add_epi64(k, weyl);
    v0 = _mm512_aesenc_epi128(v0, k);
    v1 = _mm512_aesenc_epi128(v1, k);
  }
  k = _mm512_add_epi64(k, weyl);
  v0 = _mm512_aesenclast_epi128(v0, k);
  v1 = _mm512_aesenclast_epi128(v1, k);
  const __m512i low = _mm512_permutex2var_epi64(v0, _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0), v1);
  const __m512i high = _mm512_permutex2var_epi64(v0, _mm512_set_epi64(15, 13, 11, 9, 7, 5, 3, 1), v1);
  eight_numbers(low, key, kBlock * block, out, z);
  eight_numbers(high, key, kBlock * block + kPairs, out + kPairs, z);
}
#endif

#ifdef HDAT_NORMAL_STREAM_AVX2
// Four numbers at stream positions first, …, first + 3 from their words, given both in a register and
// in memory (word j at scalar[2j]): as eight_numbers on four lanes. The layers' x_i and x_{i+1} come
// by one 16-byte load per lane, its index read from memory (on Zen 3 faster than two gathers, or
// than moving the indices out of the register). AVX2 has no conversion of 64-bit integers to double:
// w >> 12 < 2⁵² is made exact by writing it into the mantissa of 2⁵² and subtracting 2⁵².
[[gnu::always_inline]] inline void four_numbers(__m256i words, const std::uint64_t* scalar, std::uint64_t key, std::uint64_t first, double* out, const Ziggurat& z) {
  const __m256d two_pow_52 = _mm256_set1_pd(0x1p52);
  const __m256d mantissa = _mm256_sub_pd(
      _mm256_castsi256_pd(_mm256_or_si256(_mm256_srli_epi64(words, 12), _mm256_castpd_si256(two_pow_52))), two_pow_52);
  const __m256d u = _mm256_mul_pd(mantissa, _mm256_set1_pd(kTwoPow52));
  __m128d pair[4];  // x_i, x_{i+1} of lane j's layer i
  for (int j = 0; j < 4; ++j) pair[j] = _mm_loadu_pd(z.x + (scalar[2 * j] & (kLayers - 1)));
  const __m256d x_i = _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_unpacklo_pd(pair[0], pair[1])), _mm_unpacklo_pd(pair[2], pair[3]), 1);
  const __m256d x_next = _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_unpackhi_pd(pair[0], pair[1])), _mm_unpackhi_pd(pair[2], pair[3]), 1);
  const __m256d x = _mm256_mul_pd(u, x_i);  // the candidate |x|
  const __m256i sign = _mm256_and_si256(_mm256_slli_epi64(words, 63 - kLayerBits), _mm256_set1_epi64x(static_cast<long long>(1ull << 63)));
  _mm256_storeu_pd(out, _mm256_castsi256_pd(_mm256_xor_si256(_mm256_castpd_si256(x), sign)));
  const int inner = _mm256_movemask_pd(_mm256_cmp_pd(x, x_next, _CMP_LT_OQ));
  if (inner != 0xF) [[unlikely]]
    for (int j = 0; j < 4; ++j)
      if (!((inner >> j) & 1)) out[j] = finish_draw(z, key, first + static_cast<std::uint64_t>(j), scalar[2 * j], ars_one_lane);
}

// ARS-7 of the eight counters of each of `kBlocks` consecutive blocks, two 128-bit lanes per register
// (VAES on 256 bits); two blocks at once keep the AES units busier than one (580 against 490 M/s).
template <int kBlocks>
void blocks_avx2(std::uint64_t key, std::uint64_t block, double* out, const Ziggurat& z) {
  const __m256i weyl = _mm256_broadcastsi128_si256(
      _mm_set_epi64x(static_cast<long long>(kWeylHigh), static_cast<long long>(kWeylLow)));
  const auto c = static_cast<long long>(kPairs * block);
  __m256i k = _mm256_broadcastsi128_si256(_mm_set_epi64x(0, static_cast<long long>(key)));
  __m256i v[4 * kBlocks];  // counters c + 2q and c + 2q + 1 in register q
  for (int q = 0; q < 4 * kBlocks; ++q) v[q] = _mm256_xor_si256(_mm256_set_epi64x(0, c + 2 * q + 1, 0, c + 2 * q), k);
  for (int round = 1; round <= kRounds; ++round) {
    k = _mm256_add_epi64(k, weyl);
    for (auto& lane : v) lane = round < kRounds ? _mm256_aesenc_epi128(lane, k) : _mm256_aesenclast_epi128(lane, k);
  }
  alignas(32) std::uint64_t word[16 * kBlocks];  // counter q's low word at 2q, its high word at 2q + 1
  for (int q = 0; q < 4 * kBlocks; ++q) _mm256_store_si256(reinterpret_cast<__m256i*>(word + 4 * q), v[q]);
  // unpacklo of registers q, q + 1 holds the low words of counters (2q, 2q + 2, 2q + 1, 2q + 3): put in order.
  constexpr int kInOrder = 0b11'01'10'00;
  for (int quarter = 0; quarter < 2 * kBlocks; ++quarter) {  // counters 4·quarter … 4·quarter + 3
    const __m256i a = v[2 * quarter], b = v[2 * quarter + 1];
    const std::uint64_t first = kBlock * (block + quarter / 2) + 4 * (quarter % 2);
    double* to = out + kBlock * (quarter / 2) + 4 * (quarter % 2);
    const std::uint64_t* low = word + 8 * quarter;
    four_numbers(_mm256_permute4x64_epi64(_mm256_unpacklo_epi64(a, b), kInOrder), low, key, first, to, z);
    four_numbers(_mm256_permute4x64_epi64(_mm256_unpackhi_epi64(a, b), kInOrder), low + 1, key, first + kPairs, to + kPairs, z);
  }
}
#endif

// `count` whole blocks from `block` on, contiguous in out.
void whole_blocks(std::uint64_t key, std::uint64_t block, std::size_t count, double* out) {
  const Ziggurat& z = ziggurat();  // looked up once per fill: the guard of its static costs per block
#if defined(HDAT_NORMAL_STREAM_AVX512)
  for (; count > 0; --count, ++block, out += kBlock) block_avx512(key, block, out, z);
#elif defined(HDAT_NORMAL_STREAM_AVX2)
  for (; count > 1; count -= 2, block += 2, out += 2 * kBlock) blocks_avx2<2>(key, block, out, z);
  if (count == 1) blocks_avx2<1>(key, block, out, z);
#else
  for (; count > 0; --count, ++block, out += kBlock) block_one_lane(key, block, out, z, ars_one_lane);
#endif
}

}  // namespace
}  // namespace ars_ziggurat

using namespace ars_ziggurat;

NormalStream::NormalStream(std::uint64_t seed, std::uint64_t replica, std::uint64_t stream)
    : key_(stream_seed(seed, replica, stream)) {}

void NormalStream::reference_block(std::uint64_t block, double* out) const {
  block_one_lane(key_, block, out, ziggurat(), ars_portable);
}

namespace detail {
ZigguratLayers ziggurat_layers() {
  const Ziggurat& z = ziggurat();
  return {z.x, z.f, static_cast<int>(kLayers), z.tail_start, z.layer_area};
}
}  // namespace detail

int NormalStream::lanes() {
#if defined(HDAT_NORMAL_STREAM_AVX512)
  return 8;
#elif defined(HDAT_NORMAL_STREAM_AVX2)
  return 4;
#else
  return 1;
#endif
}


void NormalStream::fill(double* out, std::size_t n) {
  fill_at(position_, out, n);
  position_ += n;
}

void NormalStream::fill_at(std::uint64_t first, double* out, std::size_t n) const {
  double partial[kBlock];
  // A partial first block: computed whole, the wanted part copied.
  if (const std::size_t offset = first % kBlock; offset != 0 && n > 0) {
    whole_blocks(key_, first / kBlock, 1, partial);
    const std::size_t take = std::min(n, kBlock - offset);
    std::copy(partial + offset, partial + offset + take, out);
    first += take, out += take, n -= take;
  }
  const std::size_t blocks = n / kBlock;
  whole_blocks(key_, first / kBlock, blocks, out);
  first += blocks * kBlock, out += blocks * kBlock, n -= blocks * kBlock;
  if (n > 0) {
    whole_blocks(key_, first / kBlock, 1, partial);
    std::copy(partial, partial + n, out);
  }
}

}  // namespace hdat::rng
