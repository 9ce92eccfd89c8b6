// The spec's reference numbers (an independent NumPy re-run of the authors' setups), reproduced
// within their stated digits (half a unit of the last stated digit). The initial conditions are the
// NumPy draws of those scripts (init=numpy / numpy_target_first), checked separately against the
// listed u(0) of the logistic toy.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "helpers.hpp"
#include "hdat/polarization/curve.hpp"
#include "hdat/polarization/instance.hpp"
#include "hdat/polarization/gd.hpp"
#include "hdat/polarization/observables.hpp"
#include "hdat/polarization/reduced.hpp"

using namespace hdat;
using namespace hdat::polarization;
using test_pol::config;

namespace {

double s_max_at(const std::vector<Observation>& run, double time) {
  for (const Observation& o : run)
    if (std::fabs(o.t - time) <= 1e-9 * time) return o.s_top();
  FAIL("time not observed: " << time);
  return NAN;
}

GdRun run_gd(const Config& c, const Instance& in, std::vector<double> times) {
  GdOptions o;
  o.lr = c.lr;
  o.times = std::move(times);
  return gradient_descent(c, in, o);
}

std::vector<double> last_weights(const GdRun& run) {
  const Eigen::VectorXd& s = run.observations.back().m.s;
  return {s.data(), s.data() + s.size()};
}

}  // namespace

TEST_CASE("logistic toy: reduced ODE s_max at t = 1e2..1e5 and GD s_max after 1e3..1e6 steps (lr 0.1)") {
  Config c = config({{"init", "numpy"}, {"seed", 123}, {"t_points", std::vector<double>{0, 1e2, 1e3, 1e4, 1e5}}});
  const Instance in = make_instance(c);
  const CurveResult r = theory_curve(c, in);
  CHECK(std::fabs(s_max_at(r.observations, 1e2) - 0.2327) <= 5e-5);
  CHECK(std::fabs(s_max_at(r.observations, 1e3) - 0.8752) <= 5e-5);
  CHECK(std::fabs(s_max_at(r.observations, 1e4) - 0.9526) <= 5e-5);
  CHECK(std::fabs(s_max_at(r.observations, 1e5) - 0.97492) <= 5e-6);
  CHECK(std::fabs((1 - s_max_at(r.observations, 1e5)) - 0.025) <= 5e-4);  // "still 0.025 at t = 1e5 for T = 8"
  // 1e3 .. 1e6 steps of 0.1, observed like the harness does; at every observation the one-step
  // increment of (u, a) equals the reduced right-hand side to round-off (the drift check).
  GradientDescent gd(c, in, c.lr);
  const ReducedLogistic flow(c, in);
  std::vector<Observation> gdt;
  double drift_residual = 0;
  for (double t : {0.0, 1e2, 1e3, 1e4, 1e5}) {
    gd.advance_to(t);
    const Eigen::VectorXd x = gd.state();
    Eigen::VectorXd f(x.size());
    flow.rhs(x, f);
    drift_residual = std::max(drift_residual, (gd.increment().total() - f).cwiseAbs().maxCoeff() / std::max(1.0, f.cwiseAbs().maxCoeff()));
    gdt.push_back(observation(c, t, gd.measure()));
  }
  CHECK(gd.finite());
  CHECK(gd.steps() == 1000000);
  CHECK(std::fabs(s_max_at(gdt, 1e2) - 0.2321) <= 5e-5);
  CHECK(std::fabs(s_max_at(gdt, 1e3) - 0.8748) <= 5e-5);
  CHECK(std::fabs(s_max_at(gdt, 1e4) - 0.9525) <= 5e-5);
  CHECK(std::fabs(s_max_at(gdt, 1e5) - 0.97489) <= 5e-6);
  CHECK(gdt.back().top == 6);
  MESSAGE("GD 1e6 steps at d = T = 8: " << gd.wall_seconds() << " s");
  // The invariants along those 1e6 steps hold to round-off.
  const nlohmann::json inv = gd.invariants();
  CHECK(inv["mean_a_drift"].get<double>() < 1e-12);
  CHECK(inv["energy_identity_residual"].get<double>() < 1e-14);
  CHECK(inv["V_minus_V0_orthogonal_to_beta"].get<double>() < 1e-11);
  CHECK(drift_residual < 1e-10);
  CHECK(inv["loss_increases"].get<long>() == 0);
  CHECK(gd.identity_failures().empty());
}

TEST_CASE("logistic toy from the spec's listed 4-digit u(0): the reference numbers lie within the rounding's spread") {
  // u(0) is listed to 4 decimals; its rounding (±5e-5) moves s_max at t = 1e2..1e3 by ~1e-4, more than
  // the stated digits. The flow from every u(0) consistent with the listing must bracket the spec's
  // numbers (within half a unit of their last digit).
  const std::vector<double> listed = {-0.2957, -0.2169, -0.0516, -0.1410, -0.1257, -0.0683, -0.0320, -0.1280};
  const double times[] = {1e2, 1e3, 1e4, 1e5}, ref[] = {0.2327, 0.8752, 0.9526, 0.97492}, half[] = {5e-5, 5e-5, 5e-5, 5e-6};
  double lo[4] = {1, 1, 1, 1}, hi[4] = {0, 0, 0, 0};
  std::mt19937 g(1);
  std::uniform_real_distribution<double> U(-5e-5, 5e-5);
  for (int sample = 0; sample < 24; ++sample) {
    // Sample 0: the listing; 1, 2: the corners favouring / disfavouring the winner (token 6); then random.
    std::vector<double> u0 = listed;
    for (int i = 0; sample > 0 && i < 8; ++i) {
      const double toward_winner = (i == 6 ? 5e-5 : -5e-5);
      u0[i] += sample == 1 ? toward_winner : sample == 2 ? -toward_winner : U(g);
    }
    const Config c = config({{"init", "explicit"}, {"u0", u0}, {"t_points", std::vector<double>{0, 1e2, 1e3, 1e4, 1e5}}});
    const CurveResult r = theory_curve(c, make_instance(c));
    for (int i = 0; i < 4; ++i) {
      const double s = s_max_at(r.observations, times[i]);
      lo[i] = std::min(lo[i], s);
      hi[i] = std::max(hi[i], s);
    }
  }
  for (int i = 0; i < 4; ++i) {
    CAPTURE(times[i]);
    CHECK(ref[i] >= lo[i] - half[i]);
    CHECK(ref[i] <= hi[i] + half[i]);
  }
}

TEST_CASE("normalisation comparison (logistic, d = T = 10, a0 = 1 + 0.1 N, lr 0.5, 1e5 steps)") {
  auto run = [](const std::string& nm) {
    const Config c = config({{"normalization", nm}, {"init", "numpy_target_first"}, {"seed", 42}, {"T", 10}, {"d", 10}, {"a0_mean", 1.0},
                             {"a0_std", 0.1}, {"lr", 0.5}});
    const Instance in = make_instance(c);
    return run_gd(c, in, {0, 5e4});
  };
  {
    const auto s = last_weights(run("softmax"));
    CHECK(std::fabs(*std::max_element(s.begin(), s.end()) - 0.976) <= 5e-4);
  }
  {
    const GdRun g = run("square");
    CHECK(std::fabs(g.observations.at(1).one_minus_s_top - 2e-8) <= 5e-9);  // "≈ 1 − 2e-8"
  }
  {
    const GdRun g = run("relu");
    CHECK(g.observations.at(1).one_minus_s_top == 0.0);  // one-hot
  }
  {
    const auto s = last_weights(run("sum"));
    CHECK(std::fabs(*std::min_element(s.begin(), s.end()) - (-2.0)) <= 0.5);  // "weights in [−2, 3.6]"
    CHECK(std::fabs(*std::max_element(s.begin(), s.end()) - 3.6) <= 0.05);
  }
  {
    const auto s = last_weights(run("sigmoid"));
    for (double x : s) CHECK(std::fabs(x - 0.8) <= 0.05);  // "≈ 0.8 on every token"
  }
}

TEST_CASE("regression |y − X W s|², d = n = T = 20, lr 1e-3, 3e5 steps: final max weight for κ = 1..5") {
  const double ref[] = {0.053, 0.098, 0.631, 0.868, 0.939};
  for (int kappa = 1; kappa <= 5; ++kappa) {
    CAPTURE(kappa);
    const Config c = config({{"loss", "regression"}, {"init", "numpy"}, {"seed", 123}, {"T", 20}, {"d", 20}, {"n", 20}, {"V0_std", 1e-5},
                             {"a0_std", 1e-3}, {"lr", 1e-3}, {"kappa", kappa}});
    const Instance in = make_instance(c);
    const GdRun g = run_gd(c, in, {0, 300});
    CHECK(g.steps_done == 300000);
    CHECK(std::fabs(g.observations.at(1).s_top() - ref[kappa - 1]) <= 5e-4);
  }
}

TEST_CASE("tied model β = U σ(U a), U0 = I, logistic, lr 0.05, 1e4 steps: max weight and the winner's column") {
  for (int D : {10, 20, 50, 100}) {
    CAPTURE(D);
    const Config c = config({{"architecture", "tied"}, {"T", D}, {"d", D}, {"init", "numpy_target_first"}, {"seed", 42}, {"a0_mean", 1.0},
                             {"a0_std", 0.1}, {"lr", 0.05}});
    const Instance in = make_instance(c);
    const GdRun g = run_gd(c, in, {0, 500});
    const double s_max = g.observations.at(1).s_top();
    CHECK(s_max >= 0.998 - 5e-4);  // "≈ 0.998–0.9996 for D = 10..100"
    CHECK(s_max <= 0.9996 + 5e-5);
    CHECK(g.observations.at(0).m.top_col_norm == doctest::Approx(1.0));  // from 1
    CHECK(std::fabs(g.observations.at(1).m.top_col_norm - 6.3) <= 0.06);  // "≈ 6.3" (6.29 at D = 100 .. 6.35 at D = 10)
    CHECK(std::fabs(g.observations.at(1).m.max_other_col_norm - 1.0) <= 0.5);  // "the others stay ≈ 1"
  }
}

TEST_CASE("gradient descent's observations: t = step · lr, and sim.csv lists them with their step") {
  const Config c = config({{"init", "numpy"}, {"seed", 123}, {"lr", 0.1}});
  const GdRun g = run_gd(c, make_instance(c), {0, 0.5, 2});
  REQUIRE(g.observations.size() == 3);
  const Table t = g.table(c);
  REQUIRE(t.rows() == 3);
  CHECK(t.columns().back() == "step");
  const long steps[] = {0, 5, 20};
  for (std::size_t k = 0; k < 3; ++k) {
    CHECK(g.steps[k] == steps[k]);
    CHECK(g.observations[k].t == static_cast<double>(steps[k]) * 0.1);
    CHECK(t.number(k, "step") == static_cast<double>(steps[k]));
    CHECK(t.number(k, "t") == g.observations[k].t);
    CHECK(t.number(k, "one_minus_s_top") == g.observations[k].one_minus_s_top);
  }
}
