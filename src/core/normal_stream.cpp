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
// ARS-7 of the block's eight counters, four 128-bit lanes per register (VAES), then Box–Muller on
// eight lanes: the a words of the eight counters in one register, the b words in another.
void block_avx512(std::uint64_t key, std::uint64_t block, double* out) {
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
  const __m512d rho = _mm512_sqrt_pd(_mm512_mul_pd(_mm512_set1_pd(-2.0), Sleef_logd8_u35avx512f(u1)));
  const Sleef___m512d_2 sc = Sleef_sincospid8_u35avx512f(_mm512_add_pd(u2, u2));
  _mm512_storeu_pd(out, _mm512_mul_pd(rho, sc.y));
  _mm512_storeu_pd(out + kPairs, _mm512_mul_pd(rho, sc.x));
}
#endif

// `count` whole blocks from `block` on, contiguous in out.
void whole_blocks(std::uint64_t key, std::uint64_t block, std::size_t count, double* out) {
#ifdef HDAT_NORMAL_STREAM_AVX512
  for (; count > 0; --count, ++block, out += kBlock) block_avx512(key, block, out);
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
