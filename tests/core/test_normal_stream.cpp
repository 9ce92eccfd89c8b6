// The counter-based Gaussian stream (hdat/core/normal_stream.hpp): the fast path against the plain C++
// reference, the reference against Random123's ARS, reproducibility under any split and thread count,
// and the law (moments, tails, Kolmogorov–Smirnov, independence within and across streams).
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <boost/math/constants/constants.hpp>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <cstdint>
#include <vector>

#include "hdat/core/normal_stream.hpp"
#include "hdat/core/random.hpp"

#if defined(__AES__)
#include <Random123/ars.h>
#endif

using hdat::rng::NormalStream;

namespace {

std::vector<double> draw(NormalStream& s, std::size_t n) {
  std::vector<double> x(n);
  s.fill(x.data(), n);
  return x;
}

double mean_of(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += v;
  return s / static_cast<double>(x.size());
}

double moment_of(const std::vector<double>& x, int k) {
  double s = 0;
  for (double v : x) s += std::pow(v, k);
  return s / static_cast<double>(x.size());
}

// Pearson correlation of x[i] and y[i].
double correlation(const std::vector<double>& x, const std::vector<double>& y) {
  const double mx = mean_of(x), my = mean_of(y);
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxy / std::sqrt(sxx * syy);
}

}  // namespace

TEST_CASE("normal stream: every block of the fast path equals the plain C++ reference, also far into the stream") {
  const NormalStream s(2024, 3, hdat::rng::training_data);
  // Blocks near the start, an odd one, and blocks whose counters pass 2³² and 2⁴⁴.
  for (std::uint64_t block : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{7}, (std::uint64_t{1} << 29) - 1,
                              std::uint64_t{1} << 29, (std::uint64_t{1} << 40) + 5}) {
    // Three blocks in one fill: a path may take blocks in pairs and a last one alone.
    double fast[48], reference[48];
    s.fill_at(16 * block, fast, 48);
    for (int b = 0; b < 3; ++b) s.reference_block(block + b, reference + 16 * b);
    for (int j = 0; j < 48; ++j) {
      CAPTURE(block);
      CAPTURE(j);
      CHECK(fast[j] == reference[j]);  // the same operations on every path: the same bits
    }
  }
  // a build for this CPU takes the widest path it has, the one tested above
#if defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__VAES__)
  CHECK(NormalStream::lanes() == 8);
#elif defined(__AVX2__) && defined(__VAES__)
  CHECK(NormalStream::lanes() == 4);
#else
  CHECK(NormalStream::lanes() == 1);
#endif
}

#if defined(__AES__)
namespace {
// ARS-7 by Random123 (AES-NI) of a 128-bit counter under a 128-bit key, as two 64-bit words.
std::array<std::uint64_t, 2> random123_ars(std::uint64_t key_low, std::uint64_t key_high, std::uint64_t counter_low, std::uint64_t counter_high) {
  ars1xm128i_key_t key;
  key.v[0].m = _mm_set_epi64x(static_cast<long long>(key_high), static_cast<long long>(key_low));
  ars1xm128i_ctr_t counter;
  counter.v[0].m = _mm_set_epi64x(static_cast<long long>(counter_high), static_cast<long long>(counter_low));
  const __m128i r = ars1xm128i_R(7, counter, key).v[0].m;
  return {static_cast<std::uint64_t>(_mm_cvtsi128_si64(r)), static_cast<std::uint64_t>(_mm_extract_epi64(r, 1))};
}

// The header's law written again from its text, on Random123's ARS and the tables: the candidate
// ±u x_i of the word, accepted when u x_i < x_{i+1}; else, from the fallback stream (key (k, 1),
// counters (position, 0), (position, 1), …), the tail beyond r for layer 0 (Marsaglia's pairs of
// exponentials) or a uniform height in the layer against exp(−x²/2), restarting from the next word.
double number_by_the_law(std::uint64_t key, std::uint64_t position, std::uint64_t word) {
  const auto z = hdat::rng::detail::ziggurat_layers();
  std::uint64_t k = 0;
  for (;;) {
    const std::uint64_t layer = word % 2048;
    const double sign = (word >> 11) % 2 ? -1.0 : 1.0, u = static_cast<double>(word >> 12) * 0x1p-52;
    const double x = u * z.x[layer];
    if (x < z.x[layer + 1]) return sign * x;
    if (layer == 0)
      for (;;) {
        const auto e = random123_ars(key, 1, position, k++);
        const double a = -std::log(static_cast<double>((e[0] >> 11) + 1) * 0x1p-53) / z.tail_start;
        if (-2 * std::log(static_cast<double>((e[1] >> 11) + 1) * 0x1p-53) > a * a) return sign * (z.tail_start + a);
      }
    const auto e = random123_ars(key, 1, position, k++);
    const double height = z.f[layer] + static_cast<double>(e[0] >> 11) * 0x1p-53 * (z.f[layer + 1] - z.f[layer]);
    if (height < std::exp(-x * x / 2)) return sign * x;
    word = e[1];
  }
}
}  // namespace

// The reference's AES rounds are written out in C++; Random123's ARS (AES-NI) and the law as the
// header states it compute every number independently, the slow path's numbers included.
TEST_CASE("normal stream: the reference block is Random123's ARS-7 with the ziggurat of the header") {
  int finished_slowly = 0;
  for (std::uint64_t seed : {std::uint64_t{1}, std::uint64_t{2024}}) {
    const NormalStream s(seed, 3, hdat::rng::training_data);
    std::vector<std::uint64_t> blocks = {0, 5, (std::uint64_t{1} << 40) + 5};
    for (std::uint64_t b = 100; b < 2100; ++b) blocks.push_back(b);  // 32 000 numbers: ~70 leave the fast path
    for (std::uint64_t block : blocks) {
      double reference[16];
      s.reference_block(block, reference);
      for (std::uint64_t j = 0; j < 16; ++j) {
        const auto words = random123_ars(s.key(), 0, 8 * block + j % 8, 0);
        const std::uint64_t word = words[j / 8];
        const double expected = number_by_the_law(s.key(), 16 * block + j, word);
        const double candidate = static_cast<double>(word >> 12) * 0x1p-52 * hdat::rng::detail::ziggurat_layers().x[word % 2048];
        if (std::abs(expected) != candidate) ++finished_slowly;
        CAPTURE(block);
        CAPTURE(j);
        CHECK(reference[j] == expected);
      }
    }
  }
  CHECK(finished_slowly > 50);  // the comparison covered the wedges' and the tail's path
}
#endif

TEST_CASE("normal stream: one fill, pieces of any size, reads from any position and threads give the same numbers") {
  NormalStream whole(7, 0, hdat::rng::training_data);
  const std::vector<double> x = draw(whole, 5000);
  CHECK(whole.position() == 5000);

  NormalStream pieces(7, 0, hdat::rng::training_data);
  std::vector<double> y;
  for (std::size_t size : {1, 15, 16, 17, 3, 33, 100, 1000, 2}) {
    const std::vector<double> piece = draw(pieces, size);
    y.insert(y.end(), piece.begin(), piece.end());
  }
  y.resize(std::min(y.size(), x.size()));
  CHECK(std::equal(y.begin(), y.end(), x.begin()));

  for (std::uint64_t first : {0, 1, 15, 17, 31, 1001}) {
    std::vector<double> slice(257);
    whole.fill_at(first, slice.data(), slice.size());
    CHECK(std::equal(slice.begin(), slice.end(), x.begin() + static_cast<long>(first)));
  }

  // Chunks filled by OpenMP threads in whatever order: the numbers of the serial fill.
  std::vector<double> parallel(x.size());
  const long chunks = 37, chunk = static_cast<long>(x.size()) / chunks + 1;
#pragma omp parallel for schedule(dynamic, 1) num_threads(4)
  for (long c = 0; c < chunks; ++c) {
    const long begin = c * chunk, end = std::min<long>(begin + chunk, static_cast<long>(x.size()));
    if (begin < end) whole.fill_at(static_cast<std::uint64_t>(begin), parallel.data() + begin, static_cast<std::size_t>(end - begin));
  }
  CHECK(parallel == x);

  NormalStream other_seed(8, 0, hdat::rng::training_data);
  CHECK(draw(other_seed, 16) != std::vector<double>(x.begin(), x.begin() + 16));
}

TEST_CASE("normal stream: moments, tails and Kolmogorov-Smirnov of the standard normal law") {
  NormalStream s(11, 2, hdat::rng::training_data);
  const std::size_t n = 1 << 22;
  const std::vector<double> x = draw(s, n);
  const double root_n = std::sqrt(static_cast<double>(n));
  // Each statistic within 5 standard errors: mean (s.e. 1/√n), E z² (√2/√n), E z³ (√15/√n), E z⁴ (√96/√n).
  CHECK(std::abs(mean_of(x)) < 5.0 / root_n);
  CHECK(std::abs(moment_of(x, 2) - 1.0) < 5.0 * std::sqrt(2.0) / root_n);
  CHECK(std::abs(moment_of(x, 3)) < 5.0 * std::sqrt(15.0) / root_n);
  CHECK(std::abs(moment_of(x, 4) - 3.0) < 5.0 * std::sqrt(96.0) / root_n);

  // Tails: the share beyond |z| > c against 2Φ(−c), binomial standard error.
  const boost::math::normal_distribution<double> gauss;
  for (double c : {1.0, 2.0, 3.0, 4.0, 4.5}) {
    const double p = 2.0 * boost::math::cdf(gauss, -c);
    const double share = static_cast<double>(std::count_if(x.begin(), x.end(), [c](double v) { return std::abs(v) > c; })) / n;
    CAPTURE(c);
    CHECK(std::abs(share - p) < 5.0 * std::sqrt(p * (1 - p) / n));
  }
  // Fine histogram: 240 bins of width 0.05 on
  // [−6, 6], χ² against the exact bin probabilities, below the 0.1% point (about 320 for 239 d.o.f.).
  {
    const int bins = 240;
    std::vector<double> count(bins, 0.0);
    for (double v : x)
      if (std::abs(v) < 6.0) count[static_cast<int>((v + 6.0) / 0.05)] += 1;
    double chi2 = 0;
    int used = 0;
    for (int k = 0; k < bins; ++k) {
      const double expected = n * (boost::math::cdf(gauss, -6.0 + 0.05 * (k + 1)) - boost::math::cdf(gauss, -6.0 + 0.05 * k));
      if (expected < 20) continue;
      chi2 += (count[k] - expected) * (count[k] - expected) / expected;
      ++used;
    }
    CAPTURE(used);
    CHECK(chi2 < used + 3.1 * std::sqrt(2.0 * used) + 10);
  }
  // The largest |z| of 4·10⁶ draws: below √(2 ln n) + 1 and not truncated (above 4.5).
  const double largest = std::abs(*std::max_element(x.begin(), x.end(), [](double a, double b) { return std::abs(a) < std::abs(b); }));
  CHECK(largest > 4.5);
  CHECK(largest < std::sqrt(2.0 * std::log(static_cast<double>(n))) + 1.0);

  // Kolmogorov–Smirnov on the first 2¹⁸: √n·sup|F_n − Φ| below 1.95 (level 0.001).
  std::vector<double> sorted(x.begin(), x.begin() + (1 << 18));
  std::sort(sorted.begin(), sorted.end());
  double ks = 0;
  const double m = static_cast<double>(sorted.size());
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const double F = boost::math::cdf(gauss, sorted[i]);
    ks = std::max({ks, std::abs(F - i / m), std::abs((i + 1) / m - F)});
  }
  CHECK(ks * std::sqrt(m) < 1.95);
}

TEST_CASE("normal stream: no correlation between neighbours, between the two words of one counter, nor across streams") {
  const std::size_t n = 1 << 20;
  NormalStream a(5, 0, hdat::rng::training_data), b(5, 1, hdat::rng::training_data), c(5, 0, hdat::rng::test_set);
  const std::vector<double> x = draw(a, n), y = draw(b, n), z = draw(c, n);
  const double bound = 5.0 / std::sqrt(static_cast<double>(n));
  CHECK(std::abs(correlation(x, y)) < bound);
  CHECK(std::abs(correlation(x, z)) < bound);

  // Lag 1, and the two numbers of one ARS counter (16b + j and 16b + j + 8, its low and high words):
  // also their squares, which would correlate if the two halves of one AES output were related.
  std::vector<double> first, next, low_word, high_word, low_sq, high_sq;
  for (std::size_t i = 0; i + 1 < n; ++i) first.push_back(x[i]), next.push_back(x[i + 1]);
  for (std::size_t i = 0; i < n; i += 16)
    for (std::size_t j = 0; j < 8; ++j) {
      low_word.push_back(x[i + j]), high_word.push_back(x[i + j + 8]);
      low_sq.push_back(x[i + j] * x[i + j]), high_sq.push_back(x[i + j + 8] * x[i + j + 8]);
    }
  const double pair_bound = 5.0 / std::sqrt(static_cast<double>(low_word.size()));
  CHECK(std::abs(correlation(first, next)) < bound);
  CHECK(std::abs(correlation(low_word, high_word)) < pair_bound);
  CHECK(std::abs(correlation(low_sq, high_sq)) < pair_bound);
}

TEST_CASE("the ziggurat's layers: equal areas, the base and its tail, the top, f = exp(−x²/2)") {
  const auto z = hdat::rng::detail::ziggurat_layers();
  REQUIRE(z.layers == 2048);
  const double r = z.tail_start, v = z.layer_area;
  const long double pi = 3.141592653589793238462643383279502884L;
  auto f = [](long double x) { return std::exp(-x * x / 2); };
  CHECK(z.x[1] == r);
  CHECK(z.x[z.layers] == 0.0);
  // The base: the rectangle [0, r] × [0, f(r)] and the tail beyond r make v, which x_0 f(r) also is.
  const long double tail = std::sqrt(pi / 2) * std::erfc(static_cast<long double>(r) / std::sqrt(2.0L));
  CHECK(static_cast<double>((r * f(r) + tail) / v) == doctest::Approx(1.0).epsilon(1e-14));
  CHECK(static_cast<double>(z.x[0] * f(r) / v) == doctest::Approx(1.0).epsilon(1e-14));
  // Layers 1 … N − 1, the top one (up to f(0) = 1) included: area x_i (f(x_{i+1}) − f(x_i)) = v.
  double worst = 0;
  for (int i = 1; i < z.layers; ++i) {
    CHECK(z.x[i + 1] < z.x[i]);
    CHECK(z.f[i] == doctest::Approx(static_cast<double>(f(z.x[i]))).epsilon(1e-15));
    worst = std::max(worst, std::abs(static_cast<double>(z.x[i] * (f(z.x[i + 1]) - f(z.x[i])) / v) - 1));
  }
  INFO("largest relative deviation of a layer's area from v: " << worst);
  CHECK(worst < 1e-12);  // measured 3.3e-13: the doubles' rounding of x amplified by f(x_{i+1}) − f(x_i)
  // The N layers hold the whole half-density ∫₀^∞ f = √(π/2) and the overhangs above it: a little more.
  const double share_outside = static_cast<double>(z.layers * v / std::sqrt(pi / 2)) - 1;
  CHECK(share_outside > 0);
  CHECK(share_outside < 0.002);  // 0.104% at 2048 layers
}

TEST_CASE("normal stream: the ziggurat's wedges and tail, from 2²⁷ numbers") {
  // The law where the draw leaves the fast path: a 1000-bin χ² of |z| on [0, r) (the wedges are
  // everywhere along it, a share of every bin), and beyond r the count and the mean excess
  // E(|z| − r | |z| > r) = φ(r)/Q(r) − r against their exact values.
  const auto z = hdat::rng::detail::ziggurat_layers();
  const double r = z.tail_start;
  const boost::math::normal_distribution<double> gauss;
  NormalStream s(13, 0, hdat::rng::training_data);
  const std::size_t n = std::size_t{1} << 27, chunk = std::size_t{1} << 20;
  const int bins = 1000;
  std::vector<double> count(bins, 0.0), buffer(chunk);
  double beyond = 0, excess = 0;
  for (std::size_t done = 0; done < n; done += chunk) {
    s.fill(buffer.data(), chunk);
    for (double x : buffer) {
      const double a = std::abs(x);
      if (a < r) count[static_cast<int>(a / r * bins)] += 1;
      else beyond += 1, excess += a - r;
    }
  }
  double chi2 = 0;
  for (int k = 0; k < bins; ++k) {
    const double expected = n * 2 * (boost::math::cdf(gauss, r * (k + 1) / bins) - boost::math::cdf(gauss, r * k / bins));
    chi2 += (count[k] - expected) * (count[k] - expected) / expected;
  }
  CAPTURE(chi2);
  CHECK(chi2 < bins + 4 * std::sqrt(2.0 * bins));  // 999 d.o.f.: mean 999, s.d. 45
  const double p = 2 * boost::math::cdf(gauss, -r);
  CHECK(std::abs(beyond - n * p) < 5 * std::sqrt(n * p));
  const double q = boost::math::cdf(gauss, -r), mean_excess = boost::math::pdf(gauss, r) / q - r;
  // Var(|z| | |z| > r) = 1 + r λ − λ² for λ = φ(r)/Q(r) = r + m (the truncated normal), that is
  // 1 − r m − m² for the mean excess m; over `beyond` draws.
  const double spread = std::sqrt((1 - r * mean_excess - mean_excess * mean_excess) / beyond);
  CAPTURE(excess / beyond);
  CAPTURE(mean_excess);
  CHECK(std::abs(excess / beyond - mean_excess) < 5 * spread);
}
