#include "hdat/core/normal_stream.hpp"

#include <Random123/philox.h>
#include <sleef.h>

#include <algorithm>
#include <cmath>

#include "hdat/core/random.hpp"

#if defined(__AVX512F__) && defined(__AVX512DQ__)
#include <immintrin.h>
#define HDAT_NORMAL_STREAM_AVX512 1
#endif

namespace hdat::rng {

// In a unity build this file shares a unit with others: its helpers live in a namespace of their own
// (and have internal linkage, which also lets the compiler inline them into the block loop).
namespace philox_box_muller {
namespace {

constexpr std::size_t kBlock = 16;       // numbers per block
constexpr std::size_t kPairs = 8;        // Philox counters per block
constexpr double kTwoPow53 = 0x1p-53;

std::uint32_t low_word(std::uint64_t x) { return static_cast<std::uint32_t>(x); }
std::uint32_t high_word(std::uint64_t x) { return static_cast<std::uint32_t>(x >> 32); }

// One block on one lane: the formula of the header, counter by counter (Random123's Philox).
void block_one_lane(std::uint64_t key, std::uint64_t block, double* out) {
  const r123::Philox4x32 philox;
  const r123::Philox4x32::key_type k = {{low_word(key), high_word(key)}};
  for (std::size_t j = 0; j < kPairs; ++j) {
    const std::uint64_t c = kPairs * block + j;
    const r123::Philox4x32::ctr_type r = philox({{low_word(c), high_word(c), 0, 0}}, k);
    const std::uint64_t a = r[0] | (std::uint64_t{r[1]} << 32);
    const std::uint64_t b = r[2] | (std::uint64_t{r[3]} << 32);
    const double u1 = static_cast<double>((a >> 11) + 1) * kTwoPow53;
    const double u2 = static_cast<double>(b >> 11) * kTwoPow53;
    const double rho = std::sqrt(-2.0 * Sleef_log_u35(u1));
    const Sleef_double2 sc = Sleef_sincospi_u35(2.0 * u2);  // x = sin(2π u₂), y = cos(2π u₂)
    out[j] = rho * sc.y;
    out[j + kPairs] = rho * sc.x;
  }
}

#ifdef HDAT_NORMAL_STREAM_AVX512
// High 32 bits of the 32 × 32-bit products, sixteen lanes (the even and odd lanes multiply apart).
__m512i mulhi_epu32(__m512i x, __m512i m) {
  const __m512i even = _mm512_srli_epi64(_mm512_mul_epu32(x, m), 32);
  const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(x, 32), m);
  return _mm512_mask_blend_epi32(0xAAAA, even, odd);
}

// Philox4x32-10 on sixteen counters at once: the rounds of Random123's philox4x32 (multipliers
// 0xD2511F53, 0xCD9E8D57; Weyl key increments 0x9E3779B9, 0xBB67AE85). Tested against Random123.
struct PhiloxWords {
  __m512i r0, r1, r2, r3;  // the four output words of sixteen counters
};

PhiloxWords philox16(__m512i c0, __m512i c1, std::uint64_t key) {
  const __m512i M0 = _mm512_set1_epi32(static_cast<int>(0xD2511F53u));
  const __m512i M1 = _mm512_set1_epi32(static_cast<int>(0xCD9E8D57u));
  const __m512i W0 = _mm512_set1_epi32(static_cast<int>(0x9E3779B9u));
  const __m512i W1 = _mm512_set1_epi32(static_cast<int>(0xBB67AE85u));
  __m512i k0 = _mm512_set1_epi32(static_cast<int>(low_word(key)));
  __m512i k1 = _mm512_set1_epi32(static_cast<int>(high_word(key)));
  __m512i c2 = _mm512_setzero_si512(), c3 = _mm512_setzero_si512();
  for (int round = 0; round < 10; ++round) {
    const __m512i hi0 = mulhi_epu32(c0, M0), lo0 = _mm512_mullo_epi32(c0, M0);
    const __m512i hi1 = mulhi_epu32(c2, M1), lo1 = _mm512_mullo_epi32(c2, M1);
    c0 = _mm512_xor_si512(_mm512_xor_si512(hi1, c1), k0);
    c1 = lo1;
    c2 = _mm512_xor_si512(_mm512_xor_si512(hi0, c3), k1);
    c3 = lo0;
    k0 = _mm512_add_epi32(k0, W0);
    k1 = _mm512_add_epi32(k1, W1);
  }
  return {c0, c1, c2, c3};
}

// Eight lanes (half = 0: lanes 0-7, 1: lanes 8-15) of two 32-bit words as 64-bit words low + 2³² high.
__m512i join_words(__m512i low, __m512i high, int half) {
  const __m256i l = half ? _mm512_extracti64x4_epi64(low, 1) : _mm512_castsi512_si256(low);
  const __m256i h = half ? _mm512_extracti64x4_epi64(high, 1) : _mm512_castsi512_si256(high);
  return _mm512_or_si512(_mm512_cvtepu32_epi64(l), _mm512_slli_epi64(_mm512_cvtepu32_epi64(h), 32));
}

// Blocks `block` and `block + 1` (32 numbers) into out: counters 8·block + lane for lanes 0..15.
void two_blocks_avx512(std::uint64_t key, std::uint64_t block, double* out) {
  const std::uint64_t first = kPairs * block;
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i lo = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(low_word(first))), lane);
  __m512i hi = _mm512_set1_epi32(static_cast<int>(high_word(first)));
  const __mmask16 carry = _mm512_cmplt_epu32_mask(lo, lane);  // the low word wrapped around
  hi = _mm512_mask_add_epi32(hi, carry, hi, _mm512_set1_epi32(1));
  const PhiloxWords r = philox16(lo, hi, key);
  const __m512d scale = _mm512_set1_pd(kTwoPow53);
  for (int half = 0; half < 2; ++half) {
    const __m512i a = join_words(r.r0, r.r1, half), b = join_words(r.r2, r.r3, half);
    const __m512d u1 = _mm512_mul_pd(_mm512_cvtepu64_pd(_mm512_add_epi64(_mm512_srli_epi64(a, 11), _mm512_set1_epi64(1))), scale);
    const __m512d u2 = _mm512_mul_pd(_mm512_cvtepu64_pd(_mm512_srli_epi64(b, 11)), scale);
    const __m512d rho = _mm512_sqrt_pd(_mm512_mul_pd(_mm512_set1_pd(-2.0), Sleef_logd8_u35avx512f(u1)));
    const Sleef___m512d_2 sc = Sleef_sincospid8_u35avx512f(_mm512_add_pd(u2, u2));
    double* o = out + kBlock * half;
    _mm512_storeu_pd(o, _mm512_mul_pd(rho, sc.y));
    _mm512_storeu_pd(o + kPairs, _mm512_mul_pd(rho, sc.x));
  }
}
#endif

// `count` whole blocks from `block` on, contiguous in out.
void whole_blocks(std::uint64_t key, std::uint64_t block, std::size_t count, double* out) {
#ifdef HDAT_NORMAL_STREAM_AVX512
  for (; count >= 2; count -= 2, block += 2, out += 2 * kBlock) two_blocks_avx512(key, block, out);
  if (count == 1) {
    double both[2 * kBlock];
    two_blocks_avx512(key, block, both);
    std::copy(both, both + kBlock, out);
  }
#else
  for (; count > 0; --count, ++block, out += kBlock) block_one_lane(key, block, out);
#endif
}

}  // namespace
}  // namespace philox_box_muller

using namespace philox_box_muller;

NormalStream::NormalStream(std::uint64_t seed, std::uint64_t replica, std::uint64_t stream)
    : key_(stream_seed(seed, replica, stream)) {}

void NormalStream::reference_block(std::uint64_t block, double* out) const { block_one_lane(key_, block, out); }

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
