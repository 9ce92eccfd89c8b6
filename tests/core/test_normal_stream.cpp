// The counter-based Gaussian stream (hdat/core/normal_stream.hpp): the fast path against the plain C++
// reference, the reference against Random123's ARS, reproducibility under any split and thread count,
// and the law (moments, tails, Kolmogorov–Smirnov, independence within and across streams).
#include <doctest/doctest.h>

#include <algorithm>
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
    double fast[16], reference[16];
    s.fill_at(16 * block, fast, 16);
    s.reference_block(block, reference);
    for (int j = 0; j < 16; ++j) {
      CAPTURE(block);
      CAPTURE(j);
      // SLEEF's eight-lane and one-lane functions may differ in the last bits, the ARS bits may not.
      CHECK(fast[j] == doctest::Approx(reference[j]).epsilon(1e-13));
    }
  }
#if defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__VAES__)
  CHECK(NormalStream::vectorised());  // a build for this CPU takes the eight-lane path tested above
#endif
}

#if defined(__AES__)
// The reference's AES rounds are written out in C++; Random123's ARS (AES-NI) computes the formula
// independently: number j of block b from counter 8b + j mod 8, by the header's Box–Muller.
TEST_CASE("normal stream: the reference block is Random123's ARS-7 with Box-Muller") {
  for (std::uint64_t seed : {std::uint64_t{1}, std::uint64_t{2024}}) {
    const NormalStream s(seed, 3, hdat::rng::training_data);
    for (std::uint64_t block : {std::uint64_t{0}, std::uint64_t{5}, (std::uint64_t{1} << 40) + 5}) {
      double reference[16];
      s.reference_block(block, reference);
      for (int j = 0; j < 8; ++j) {
        ars1xm128i_key_t key;
        key.v[0].m = _mm_set_epi64x(0, static_cast<long long>(s.key()));
        ars1xm128i_ctr_t counter;
        counter.v[0].m = _mm_set_epi64x(0, static_cast<long long>(8 * block + static_cast<std::uint64_t>(j)));
        const __m128i r = ars1xm128i_R(7, counter, key).v[0].m;
        const auto a = static_cast<std::uint64_t>(_mm_cvtsi128_si64(r));
        const auto b = static_cast<std::uint64_t>(_mm_extract_epi64(r, 1));
        const double u1 = static_cast<double>((a >> 11) + 1) * 0x1p-53, u2 = static_cast<double>(b >> 11) * 0x1p-53;
        const double rho = std::sqrt(-2 * std::log(u1)), angle = 2 * boost::math::constants::pi<double>() * u2;
        CAPTURE(block);
        CAPTURE(j);
        CHECK(reference[j] == doctest::Approx(rho * std::cos(angle)).epsilon(1e-12));
        CHECK(reference[j + 8] == doctest::Approx(rho * std::sin(angle)).epsilon(1e-12));
      }
    }
  }
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

TEST_CASE("normal stream: no correlation between neighbours, between the cos and sin halves of a block, nor across streams") {
  const std::size_t n = 1 << 20;
  NormalStream a(5, 0, hdat::rng::training_data), b(5, 1, hdat::rng::training_data), c(5, 0, hdat::rng::test_set);
  const std::vector<double> x = draw(a, n), y = draw(b, n), z = draw(c, n);
  const double bound = 5.0 / std::sqrt(static_cast<double>(n));
  CHECK(std::abs(correlation(x, y)) < bound);
  CHECK(std::abs(correlation(x, z)) < bound);

  // Lag 1, and the two numbers of one Box–Muller pair (16b + j and 16b + j + 8): also their squares,
  // which share ρ² = z₁² + z₂² and would correlate if ρ and the angle were not independent uniforms.
  std::vector<double> first, next, cos_half, sin_half, cos_sq, sin_sq;
  for (std::size_t i = 0; i + 1 < n; ++i) first.push_back(x[i]), next.push_back(x[i + 1]);
  for (std::size_t i = 0; i < n; i += 16)
    for (std::size_t j = 0; j < 8; ++j) {
      cos_half.push_back(x[i + j]), sin_half.push_back(x[i + j + 8]);
      cos_sq.push_back(x[i + j] * x[i + j]), sin_sq.push_back(x[i + j + 8] * x[i + j + 8]);
    }
  const double pair_bound = 5.0 / std::sqrt(static_cast<double>(cos_half.size()));
  CHECK(std::abs(correlation(first, next)) < bound);
  CHECK(std::abs(correlation(cos_half, sin_half)) < pair_bound);
  CHECK(std::abs(correlation(cos_sq, sin_sq)) < pair_bound);
}

TEST_CASE("the eight-lane logarithm of (0, 1]: within 2 · 2⁻⁵² relative of the long double logarithm") {
  // Every representable kind of u the stream makes, (k + 1) 2⁻⁵³: the ends, both sides of 1 and of
  // the buckets' edges (0.75 + j/16), every power of two, and a million uniform points.
  std::vector<double> u;
  for (int k = 0; k < 2000; ++k) {
    u.push_back(1.0 - k * 0x1p-53);
    u.push_back((k + 1) * 0x1p-53);
    u.push_back(std::ldexp(1.0, -(k % 54)));
    u.push_back(std::nextafter(std::ldexp(1.5, -(k % 53) - 1), 0.0));
    for (int j = 0; j <= 12; ++j) {
      const double edge = std::ldexp(0.75 + j / 16.0, -(k % 50)) * (j < 4 ? 1.0 : 0.5);
      u.push_back(std::nextafter(edge, 0.0));
      u.push_back(edge);
      u.push_back(std::nextafter(edge, 2.0));
    }
  }
  auto bits = hdat::rng::engine(3);
  for (int k = 0; k < 1000000; ++k) u.push_back(static_cast<double>((bits() >> 11) + 1) * 0x1p-53);
  u.erase(std::remove_if(u.begin(), u.end(), [](double x) { return !(x > 0.0 && x <= 1.0); }), u.end());
  std::vector<double> out(u.size());
  if (!hdat::rng::detail::log_unit_interval(u.data(), out.data(), u.size())) return;  // no AVX-512 path here
  double worst = 0, worst_u = 1;
  for (std::size_t i = 0; i < u.size(); ++i) {
    const long double exact = std::log(static_cast<long double>(u[i]));
    const double error = exact == 0 ? std::fabs(out[i]) : static_cast<double>(std::fabs((out[i] - exact) / exact));
    if (error > worst) worst = error, worst_u = u[i];
  }
  INFO("worst relative error " << worst / 0x1p-52 << " · 2⁻⁵² at u = " << worst_u);
  CHECK(worst <= 2 * 0x1p-52);  // measured 1.34
}

TEST_CASE("the eight-lane sin and cos of 2πu: within 2 · 2⁻⁵³ of the long double values") {
  // u = k 2⁻⁵³ in [0, 1): both sides of every eighth of a turn (the quarter-turn reduction's
  // boundaries and their midpoints), and a million uniform points.
  std::vector<double> u;
  for (int k = 0; k < 2000; ++k)
    for (int j = 0; j <= 8; ++j) u.push_back(j / 8.0 + (k - 1000) * 0x1p-53);
  auto bits = hdat::rng::engine(4);
  for (int k = 0; k < 1000000; ++k) u.push_back(static_cast<double>(bits() >> 11) * 0x1p-53);
  u.erase(std::remove_if(u.begin(), u.end(), [](double x) { return !(x >= 0.0 && x < 1.0); }), u.end());
  std::vector<double> sin(u.size()), cos(u.size());
  if (!hdat::rng::detail::sincos_turns(u.data(), sin.data(), cos.data(), u.size())) return;  // no AVX-512 path
  const long double two_pi = 6.283185307179586476925286766559005768L;
  double worst = 0, worst_u = 0;
  for (std::size_t i = 0; i < u.size(); ++i) {
    const long double angle = two_pi * u[i];
    const double error = static_cast<double>(std::max(std::fabs(sin[i] - std::sin(angle)), std::fabs(cos[i] - std::cos(angle))));
    if (error > worst) worst = error, worst_u = u[i];
  }
  INFO("worst absolute error " << worst / 0x1p-53 << " · 2⁻⁵³ at u = " << worst_u);
  CHECK(worst <= 2 * 0x1p-53);  // measured 1.44
}
