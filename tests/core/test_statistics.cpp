#include <doctest/doctest.h>

#include <boost/random/normal_distribution.hpp>
#include <vector>

#include "hdat/core/random.hpp"
#include "hdat/core/statistics.hpp"

using namespace hdat;

namespace {
std::vector<double> normals(int n, double shift, std::uint64_t replica) {
  auto eng = rng::engine(3, replica, rng::user);
  boost::random::normal_distribution<double> normal;
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double& x : v) x = normal(eng) + shift;
  return v;
}
}  // namespace

TEST_CASE("two-sample Kolmogorov-Smirnov: identical, disjoint, same law, shifted law") {
  const std::vector<double> a = {0.1, 0.5, 0.9, 1.3};
  CHECK(stats::ks_two_sample(a, a).statistic == 0.0);
  CHECK(stats::ks_two_sample(a, a).p_value == 1.0);
  const stats::KolmogorovSmirnov disjoint = stats::ks_two_sample({1, 2, 3, 4, 5, 6, 7, 8}, {11, 12, 13, 14, 15, 16, 17, 18});
  CHECK(disjoint.statistic == 1.0);
  CHECK(disjoint.p_value < 1e-3);
  // D for samples {1, 3} and {2, 4}: F_a − F_b reaches 1/2 at x = 1 and x = 3.
  CHECK(stats::ks_two_sample({1, 3}, {2, 4}).statistic == doctest::Approx(0.5));
  // Same law: p-values spread over (0, 1); over 200 pairs of samples about 1% fall below 0.01.
  int small = 0;
  for (int r = 0; r < 200; ++r)
    if (stats::ks_two_sample(normals(300, 0, 2 * r), normals(300, 0, 2 * r + 1)).p_value < 0.01) ++small;
  CHECK(small <= 8);  // binomial(200, 0.01): P(> 8) < 1e-3
  // A shift of 0.4 standard deviations at n = 1000 is found: D ≈ 2Φ(0.2) − 1 ≈ 0.16, λ ≈ 3.5, p ~ 1e-10.
  const stats::KolmogorovSmirnov shifted = stats::ks_two_sample(normals(1000, 0, 900), normals(1000, 0.4, 901));
  CHECK(shifted.statistic == doctest::Approx(0.16).epsilon(0.3));
  CHECK(shifted.p_value < 1e-5);
}
