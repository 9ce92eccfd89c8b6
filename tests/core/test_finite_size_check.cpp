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
  // se(a) of the fit over x = 1/40, 1/60, 1/80 with se 0.01 each: √(Sxx / det) = 0.0209 (by hand), on
  // ν ≈ 15.7 (Welch–Satterthwaite, 7 per d): c = t_15.7(1 − 0.01 / 6) ≈ 3.5, so 0.1 ≈ 4.8 se(a) is outside.
  InverseSizeCheck check({"alpha", "observable"}, dims, {0.01, 0.1, 0.0}, {"paired_diff", "paired_se"});
  check.add({0.1, std::string("mse")}, 1.0, trend(dims, 0.0, 2.0, 0.01));  // a = 0
  check.add({0.2, std::string("mse")}, 1.0, trend(dims, 0.1, 2.0, 0.01));  // a = 0.1
  check.add({0.3, std::string("mse")}, 1.0, trend(dims, 0.0, 2.0, 0.01), false);
  CHECK(check.checks() == 3);
  CHECK(check.failures() == 2);
  CHECK_FALSE(check.agree());
  CHECK(check.result().kind == VerdictKind::disagree);
  const Table t = check.table();
  CHECK(t.rows() == 3);
  CHECK(t.has_column("paired_diff_d60"));
  CHECK(t.has_column("paired_se_d80"));
  CHECK(t.has_column("sim_d40"));
  CHECK(t.number(1, "extrapolated_diff") == doctest::Approx(0.1).epsilon(1e-9));  // the exact intercept of a + b/d
  CHECK(t.number(1, "extrapolated_se") == doctest::Approx(0.02087).epsilon(1e-3));
  CHECK(t.number(0, "pass") == 1.0);
  CHECK(t.number(1, "pass") == 0.0);
  CHECK(t.number(2, "pass") == 0.0);
  const nlohmann::json v = check.verdict("the mean difference");
  CHECK(v["failures"] == 2);
  CHECK(v["verdict"] == "disagree");
  CHECK(v["worst"]["alpha"] == 0.2);
  CHECK(v["worst_ratio"].get<double>() > 1);
  CHECK(v["tests"] == 3);
  CHECK(v["criterion"].get<std::string>().find("Bonferroni") != std::string::npos);
}

TEST_CASE("the degrees of freedom of the intercept: n - 1 at one d; Welch-Satterthwaite over two") {
  InverseSizeCheck one({"alpha"}, {40}, {});
  one.add({0.1}, 1.0, trend({40}, 0.0, 0.0, 0.01));
  CHECK(one.table().number(0, "dof") == doctest::Approx(7));
  // x = 1/40, 1/80, equal errors: a = 2 y(80) − y(40), so ν = 7 (1 + 4)² / (1 + 16).
  InverseSizeCheck two({"alpha"}, {40, 80}, {});
  two.add({0.1}, 1.0, trend({40, 80}, 0.0, 1.0, 0.01));
  CHECK(two.table().number(0, "dof") == doctest::Approx(7.0 * 25.0 / 17.0).epsilon(1e-9));
  CHECK(two.table().number(0, "extrapolated_se") == doctest::Approx(0.01 * std::sqrt(5.0)).epsilon(1e-9));
}

TEST_CASE("the relative floor admits a model error proportional to the theory value; fit_se overrides the error of the fit") {
  const std::vector<int> dims = {40, 80};
  InverseSizeCheck strict({"alpha"}, dims, {0.01, 0.1, 0.0}), lenient({"alpha"}, dims, {0.01, 0.1, 0.05});
  strict.add({0.1}, 1.0, trend(dims, 0.03, 1.0, 0.001));
  lenient.add({0.1}, 1.0, trend(dims, 0.03, 1.0, 0.001));  // 0.03 <= 0.05 * |1|
  CHECK(strict.failures() == 1);
  CHECK(lenient.failures() == 0);
  CHECK(lenient.agree());
  auto coarse = trend(dims, 0.03, 1.0, 0.001);
  for (auto& m : coarse) m.fit_se = 0.1;  // e.g. the resolution of a quantised observable
  InverseSizeCheck quantised({"alpha"}, dims, {0.01, 0.1, 0.0});
  quantised.add({0.2}, 1.0, coarse);
  CHECK(quantised.failures() == 0);
  // ... but an observable known to ±0.1 cannot resolve 10% of a theory value of 1: undecided.
  CHECK(quantised.result().kind == VerdictKind::undecided);
  CHECK_THROWS_AS(strict.add({0.3}, 1.0, trend({40}, 0, 0, 0.1)), std::invalid_argument);
}
