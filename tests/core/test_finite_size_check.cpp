#include <doctest/doctest.h>

#include <cmath>

#include "hdat/core/finite_size_check.hpp"

using namespace hdat;

namespace {
// Measurements whose mean difference is exactly a + b/d, with standard error se at every d.
std::vector<SizeMeasurement> trend(const std::vector<int>& dims, double a, double b, double se) {
  std::vector<SizeMeasurement> m;
  for (int d : dims) {
    SizeMeasurement s;
    s.simulation = {1.0 + a + b / d, se, 8};
    s.difference = {a + b / d, se, 8};
    m.push_back(s);
  }
  return m;
}
}  // namespace

TEST_CASE("a pure 1/d trend agrees; an offset that does not vanish as d grows disagrees; so does a failed condition") {
  const std::vector<int> dims = {40, 60, 80};
  InverseSizeCheck check({"alpha", "observable"}, dims, {3.0, 0.0}, {"paired_diff", "paired_se"});
  CHECK(check.add({0.1, std::string("mse")}, 1.0, trend(dims, 0.0, 2.0, 0.01)));          // a = 0
  CHECK_FALSE(check.add({0.2, std::string("mse")}, 1.0, trend(dims, 0.1, 2.0, 0.01)));    // a = 0.1 = 10 se(a)-ish
  CHECK_FALSE(check.add({0.3, std::string("mse")}, 1.0, trend(dims, 0.0, 2.0, 0.01), false));
  CHECK(check.checks() == 3);
  CHECK(check.failures() == 2);
  CHECK_FALSE(check.agree());
  const Table& t = check.table();
  CHECK(t.rows() == 3);
  CHECK(t.has_column("paired_diff_d60"));
  CHECK(t.has_column("paired_se_d80"));
  CHECK(t.has_column("sim_d40"));
  CHECK(t.number(1, "extrapolated_diff") == doctest::Approx(0.1).epsilon(1e-9));  // the exact intercept of a + b/d
  CHECK(t.number(0, "pass") == 1.0);
  const nlohmann::json v = check.verdict("the mean difference");
  CHECK(v["failures"] == 2);
  CHECK(v["worst"]["alpha"] == 0.2);
  CHECK(v["worst_ratio"].get<double>() > 1);
  CHECK(v["criterion"].get<std::string>().find("3 * se(a)") != std::string::npos);
}

TEST_CASE("the relative floor admits a model error proportional to the theory value; fit_se overrides the error of the fit") {
  const std::vector<int> dims = {40, 80};
  InverseSizeCheck strict({"alpha"}, dims, {3.0, 0.0}), lenient({"alpha"}, dims, {3.0, 0.05});
  CHECK_FALSE(strict.add({0.1}, 1.0, trend(dims, 0.03, 1.0, 0.001)));
  CHECK(lenient.add({0.1}, 1.0, trend(dims, 0.03, 1.0, 0.001)));  // 0.03 <= 0.05 * |1|
  auto coarse = trend(dims, 0.03, 1.0, 0.001);
  for (auto& m : coarse) m.fit_se = 0.1;  // e.g. the resolution of a quantised observable
  CHECK(strict.add({0.2}, 1.0, coarse));
  CHECK_THROWS_AS(strict.add({0.3}, 1.0, trend({40}, 0, 0, 0.1)), std::invalid_argument);
}
