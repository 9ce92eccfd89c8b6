#include "hdat/core/normal_stream.hpp"

#include <sleef.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "hdat/core/random.hpp"

#if defined(__AES__) || defined(__VAES__)
#include <immintrin.h>
#endif
#if defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__VAES__)
#define HDAT_NORMAL_STREAM_AVX512 1
#endif

namespace hdat::rng {

// In a unity build this file shares a unit with others: its helpers live in a namespace of their own
// (and have internal linkage, which also lets the compiler inline them into the block loop).
namespace ars_box_muller {
namespace {

constexpr std::size_t kBlock = 16;     // numbers per block
constexpr std::size_t kPairs = 8;      // ARS counters per block
constexpr int kRounds = 7;             // Random123's default for ARS-1xm128i
constexpr double kTwoPow53 = 0x1p-53;
constexpr std::uint64_t kWeylLow = 0x9E3779B97F4A7C15ull;   // the round keys' increments (Random123's
constexpr std::uint64_t kWeylHigh = 0xBB67AE8584CAA73Bull;  // golden ratio and √3 − 1 as 64-bit words)

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

struct Words {
  std::uint64_t low, high;  // a_c and b_c
};

// ARS-7 of counter (c, 0) under key (key, 0): v = c ⊕ k, then six rounds and a last one, the round
// key advancing by the Weyl increment (in each 64-bit half) before each.
Words ars_portable(std::uint64_t key, std::uint64_t counter) {
  std::uint64_t k_low = key, k_high = 0;
  Bytes v = bytes_of(counter ^ key, 0);
  for (int round = 1; round <= kRounds; ++round) {
    k_low += kWeylLow, k_high += kWeylHigh;
    v = aes_round(v, bytes_of(k_low, k_high), round == kRounds);
  }
  return {word_of(v, 0), word_of(v, 1)};
}

#if defined(__AES__)
// The same with the AES-NI instruction on one lane.
Words ars_one_lane(std::uint64_t key, std::uint64_t counter) {
  const __m128i weyl = _mm_set_epi64x(static_cast<long long>(kWeylHigh), static_cast<long long>(kWeylLow));
  __m128i k = _mm_set_epi64x(0, static_cast<long long>(key));
  __m128i v = _mm_xor_si128(_mm_set_epi64x(0, static_cast<long long>(counter)), k);
  for (int round = 1; round < kRounds; ++round) {
    k = _mm_add_epi64(k, weyl);
    v = _mm_aesenc_si128(v, k);
  }
  v = _mm_aesenclast_si128(v, _mm_add_epi64(k, weyl));
  return {static_cast<std::uint64_t>(_mm_cvtsi128_si64(v)), static_cast<std::uint64_t>(_mm_extract_epi64(v, 1))};
}
#else
Words ars_one_lane(std::uint64_t key, std::uint64_t counter) { return ars_portable(key, counter); }
#endif

// One block on one lane: the formula of the header, counter by counter.
template <class Ars>
void block_one_lane(std::uint64_t key, std::uint64_t block, double* out, Ars ars) {
  for (std::size_t j = 0; j < kPairs; ++j) {
    const Words w = ars(key, kPairs * block + j);
    const double u1 = static_cast<double>((w.low >> 11) + 1) * kTwoPow53;
    const double u2 = static_cast<double>(w.high >> 11) * kTwoPow53;
    const double rho = std::sqrt(-2.0 * Sleef_log_u35(u1));
    const Sleef_double2 sc = Sleef_sincospi_u35(2.0 * u2);  // x = sin(2π u₂), y = cos(2π u₂)
    out[j] = rho * sc.y;
    out[j + kPairs] = rho * sc.x;
  }
}

#ifdef HDAT_NORMAL_STREAM_AVX512
// ln u on eight lanes for u in (0, 1], without a division: u = 2^e m with m in [0.75, 1.5) (getmant
// and getexp), m = (1 + r)/c with c from a table over twelve buckets of m of width 1/16, and
// ln u = e ln 2 + ln(1/c) + ln(1 + r), the last by its series to r¹⁵. The two buckets around 1 take
// c = 1, so that r = m − 1 is exact there and ln u keeps its relative accuracy as u → 1; elsewhere
// |r| < 1/30. Measured within 1.4 · 2⁻⁵² relative of the exact logarithm, at 2.5 times the speed of
// SLEEF's 3.5-ulp logd8, which took a third of the block.
struct LogTable {
  alignas(64) double c[16];
  alignas(64) double log_inverse_c[16];  // ln(1/c), from the long double logarithm
};

LogTable make_log_table() {
  LogTable t{};
  for (int i = 0; i < 16; ++i) {
    const double middle = 0.75 + (i + 0.5) / 16.0;
    t.c[i] = (i == 3 || i == 4) ? 1.0 : 1.0 / middle;  // buckets 3 and 4 are [0.9375, 1) and [1, 1.0625)
    t.log_inverse_c[i] = static_cast<double>(-std::log(static_cast<long double>(t.c[i])));
  }
  return t;
}

// Built on first use (a function-local static), so that no stream filled during another file's static
// initialisation can see it empty.
const LogTable& log_table() {
  static const LogTable table = make_log_table();
  return table;
}

[[gnu::always_inline]] inline __m512d log_unit_interval(__m512d u, const LogTable& table) {
  const __m512d one = _mm512_set1_pd(1.0);
  const __m512d m = _mm512_getmant_pd(u, _MM_MANT_NORM_p75_1p5, _MM_MANT_SIGN_src);
  __m512d e = _mm512_getexp_pd(u);
  e = _mm512_mask_add_pd(e, _mm512_cmp_pd_mask(m, one, _CMP_LT_OQ), e, one);  // m < 1: u = 2^(e+1) m
  const __m512i bucket = _mm512_cvttpd_epi64(_mm512_mul_pd(_mm512_sub_pd(m, _mm512_set1_pd(0.75)), _mm512_set1_pd(16.0)));
  const __m512d c = _mm512_permutex2var_pd(_mm512_load_pd(table.c), bucket, _mm512_load_pd(table.c + 8));
  const __m512d log_inverse_c =
      _mm512_permutex2var_pd(_mm512_load_pd(table.log_inverse_c), bucket, _mm512_load_pd(table.log_inverse_c + 8));
  const __m512d r = _mm512_fmsub_pd(m, c, one);
  // ln(1 + r) = r Σ_{k≥1} (−r)^(k−1)/k, Horner from k = 15.
  __m512d series = _mm512_set1_pd(1.0 / 15);
  for (int k = 14; k >= 1; --k) series = _mm512_fmadd_pd(series, r, _mm512_set1_pd((k % 2 ? 1.0 : -1.0) / k));
  const __m512d log1p_r = _mm512_mul_pd(r, series);
  // ln 2 in two parts: e · ln2_high is exact for |e| ≤ 2¹¹.
  const __m512d ln2_high = _mm512_set1_pd(0x1.62e42fefa3800p-1), ln2_low = _mm512_set1_pd(0x1.ef35793c76730p-45);
  return _mm512_add_pd(_mm512_fmadd_pd(e, ln2_high, log_inverse_c), _mm512_fmadd_pd(e, ln2_low, log1p_r));
}

// sin 2πu and cos 2πu on eight lanes for u in [0, 1): t = 4u, q the nearest integer, r = t − q in
// [−1/2, 1/2] (exact), θ = r π/2 in [−π/4, π/4], sin θ and cos θ by their series to θ¹⁷ and θ¹⁸ (the
// next terms are below 10⁻¹⁹), then the quarter turn q mod 4. Within 1.5 · 2⁻⁵³ of the exact values
// (tested); inlined into the block, where SLEEF's general sincospi was a call of 13% more time.
struct SinCos {
  __m512d sin, cos;
};

constexpr auto kSinSeries = [] {  // (−1)^k / (2k + 1)!
  std::array<double, 9> a{};
  double factorial = 1;
  for (int n = 1; n <= 17; ++n) {
    factorial *= n;
    if (n % 2 == 1) a[(n - 1) / 2] = ((n - 1) / 2 % 2 ? -1.0 : 1.0) / factorial;
  }
  return a;
}();
constexpr auto kCosSeries = [] {  // (−1)^k / (2k)!
  std::array<double, 10> a{};
  double factorial = 1;
  a[0] = 1;
  for (int n = 1; n <= 18; ++n) {
    factorial *= n;
    if (n % 2 == 0) a[n / 2] = (n / 2 % 2 ? -1.0 : 1.0) / factorial;
  }
  return a;
}();

[[gnu::always_inline]] inline SinCos sincos_turns(__m512d u) {
  const __m512d t = _mm512_mul_pd(u, _mm512_set1_pd(4.0));
  const __m512d q = _mm512_roundscale_pd(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512d theta = _mm512_mul_pd(_mm512_sub_pd(t, q), _mm512_set1_pd(1.5707963267948966));
  const __m512d z = _mm512_mul_pd(theta, theta);
  __m512d sin_series = _mm512_set1_pd(kSinSeries[8]);
  for (int k = 7; k >= 0; --k) sin_series = _mm512_fmadd_pd(sin_series, z, _mm512_set1_pd(kSinSeries[k]));
  __m512d cos_series = _mm512_set1_pd(kCosSeries[9]);
  for (int k = 8; k >= 0; --k) cos_series = _mm512_fmadd_pd(cos_series, z, _mm512_set1_pd(kCosSeries[k]));
  const __m512d sin_theta = _mm512_mul_pd(theta, sin_series), cos_theta = cos_series;
  // The angle is q quarter turns plus θ: q odd swaps sine and cosine, q = 2, 3 negates the sine and
  // q = 1, 2 the cosine.
  const __m512i quarter = _mm512_cvtpd_epi64(q);
  const __mmask8 swap = _mm512_test_epi64_mask(quarter, _mm512_set1_epi64(1));
  const __mmask8 negate_sin = _mm512_test_epi64_mask(quarter, _mm512_set1_epi64(2));
  const __mmask8 negate_cos = _mm512_test_epi64_mask(_mm512_add_epi64(quarter, _mm512_set1_epi64(1)), _mm512_set1_epi64(2));
  const __m512d minus_zero = _mm512_set1_pd(-0.0);
  const __m512d sin = _mm512_mask_blend_pd(swap, sin_theta, cos_theta), cos = _mm512_mask_blend_pd(swap, cos_theta, sin_theta);
  return {_mm512_mask_xor_pd(sin, negate_sin, sin, minus_zero), _mm512_mask_xor_pd(cos, negate_cos, cos, minus_zero)};
}

// ARS-7 of the block's eight counters, four 128-bit lanes per register (VAES), then Box–Muller on
// eight lanes: the a words of the eight counters in one register, the b words in another.
void block_avx512(std::uint64_t key, std::uint64_t block, double* out, const LogTable& log_table) {
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
  const __m512i a = _mm512_permutex2var_epi64(v0, _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0), v1);
  const __m512i b = _mm512_permutex2var_epi64(v0, _mm512_set_epi64(15, 13, 11, 9, 7, 5, 3, 1), v1);
  const __m512d scale = _mm512_set1_pd(kTwoPow53);
  const __m512d u1 = _mm512_mul_pd(_mm512_cvtepu64_pd(_mm512_add_epi64(_mm512_srli_epi64(a, 11), _mm512_set1_epi64(1))), scale);
  const __m512d u2 = _mm512_mul_pd(_mm512_cvtepu64_pd(_mm512_srli_epi64(b, 11)), scale);
  const __m512d rho = _mm512_sqrt_pd(_mm512_mul_pd(_mm512_set1_pd(-2.0), log_unit_interval(u1, log_table)));
  const SinCos angle = sincos_turns(u2);
  _mm512_storeu_pd(out, _mm512_mul_pd(rho, angle.cos));
  _mm512_storeu_pd(out + kPairs, _mm512_mul_pd(rho, angle.sin));
}
#endif

// `count` whole blocks from `block` on, contiguous in out.
void whole_blocks(std::uint64_t key, std::uint64_t block, std::size_t count, double* out) {
#ifdef HDAT_NORMAL_STREAM_AVX512
  const LogTable& table = log_table();  // looked up once per fill: the guard of its static costs 3% per block
  for (; count > 0; --count, ++block, out += kBlock) block_avx512(key, block, out, table);
#else
  for (; count > 0; --count, ++block, out += kBlock) block_one_lane(key, block, out, ars_one_lane);
#endif
}

}  // namespace
}  // namespace ars_box_muller

using namespace ars_box_muller;

NormalStream::NormalStream(std::uint64_t seed, std::uint64_t replica, std::uint64_t stream)
    : key_(stream_seed(seed, replica, stream)) {}

void NormalStream::reference_block(std::uint64_t block, double* out) const {
  block_one_lane(key_, block, out, ars_portable);
}

namespace detail {
bool log_unit_interval(const double* u, double* out, std::size_t n) {
#ifdef HDAT_NORMAL_STREAM_AVX512
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm512_storeu_pd(out + i, ars_box_muller::log_unit_interval(_mm512_loadu_pd(u + i), ars_box_muller::log_table()));
  if (i < n) {
    double in[8] = {1, 1, 1, 1, 1, 1, 1, 1}, result[8];
    std::copy(u + i, u + n, in);
    _mm512_storeu_pd(result, ars_box_muller::log_unit_interval(_mm512_loadu_pd(in), ars_box_muller::log_table()));
    std::copy(result, result + (n - i), out + i);
  }
  return true;
#else
  (void)u, (void)out, (void)n;
  return false;
#endif
}
bool sincos_turns(const double* u, double* sin, double* cos, std::size_t n) {
#ifdef HDAT_NORMAL_STREAM_AVX512
  for (std::size_t i = 0; i < n; i += 8) {
    double in[8] = {0, 0, 0, 0, 0, 0, 0, 0}, s[8], c[8];
    const std::size_t m = std::min<std::size_t>(8, n - i);
    std::copy(u + i, u + i + m, in);
    const ars_box_muller::SinCos r = ars_box_muller::sincos_turns(_mm512_loadu_pd(in));
    _mm512_storeu_pd(s, r.sin);
    _mm512_storeu_pd(c, r.cos);
    std::copy(s, s + m, sin + i);
    std::copy(c, c + m, cos + i);
  }
  return true;
#else
  (void)u, (void)sin, (void)cos, (void)n;
  return false;
#endif
}
}  // namespace detail

bool NormalStream::vectorised() {
#ifdef HDAT_NORMAL_STREAM_AVX512
  return true;
#else
  return false;
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
