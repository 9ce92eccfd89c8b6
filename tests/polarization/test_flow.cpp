// The flows: reduced against full along whole trajectories (any d), conservation laws, the loss never
// increasing, the theorems of the logistic flow on generic initial conditions, the events (located,
// reported, frozen), and the speed of a log-time integration to t = 1e40.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "helpers.hpp"
#include "hdat/polarization/curve.hpp"
#include "hdat/polarization/flow.hpp"
#include "hdat/polarization/instance.hpp"
#include "hdat/polarization/reduced.hpp"

using namespace hdat;
using namespace hdat::polarization;
using test_pol::config;

namespace {

double max_abs_difference(const Eigen::VectorXd& x, const Eigen::VectorXd& y) { return (x - y).cwiseAbs().maxCoeff(); }

}  // namespace

TEST_CASE("reduced and full flows agree along the trajectory to the integration tolerance, for d = 1, 3, 20") {
  for (const std::string loss : {"logistic", "square"})
    for (int d : {1, 3, 20}) {
      CAPTURE(loss);
      CAPTURE(d);
      auto sets = std::vector<std::pair<std::string, nlohmann::json>>{
          {"loss", loss}, {"T", 5}, {"d", d}, {"V0_std", 0.6}, {"a0_std", 0.3}, {"seed", 21}, {"t_max", 1e3}, {"points", 40},
          {"rtol", 1e-12}, {"atol", 1e-14}};
      const Config cr = config(sets);
      sets.push_back({"flow", "full"});
      const Config cf = config(sets);
      const Instance in = make_instance(cr);
      const CurveResult r = theory_curve(cr, in), f = theory_curve(cf, in);
      REQUIRE(r.ok);
      REQUIRE(f.ok);
      CHECK(r.info["flow"]["kind"] == "reduced");
      CHECK(f.info["flow"]["kind"] == "full");
      REQUIRE(r.observations.size() == f.observations.size());
      double worst = 0;
      for (std::size_t k = 0; k < r.observations.size(); ++k) {
        const Measurement &x = r.observations[k].m, &y = f.observations[k].m;
        worst = std::max({worst, max_abs_difference(x.s, y.s), max_abs_difference(x.u, y.u), max_abs_difference(x.logits, y.logits)});
      }
      CHECK(worst < 1e-8);
      // The exact recoveries: |V|_F from u alone (logistic), and Q = VᵀV (square).
      CHECK(r.observations.back().m.V_norm == doctest::Approx(f.observations.back().m.V_norm).epsilon(1e-8));
    }
}

TEST_CASE("conservation laws from the symmetries of σ: mean(a) (softmax), |a|² (scale-invariant maps)") {
  for (const std::string nm : {"softmax", "square", "sum", "l1", "relu"})
    for (const std::string loss : {"logistic", "square"}) {
      CAPTURE(nm);
      CAPTURE(loss);
      const Config c = config({{"loss", loss}, {"normalization", nm}, {"T", 6}, {"d", 6}, {"a0_mean", 1.0}, {"a0_std", 0.3}, {"V0_std", 0.3},
                               {"seed", 4}, {"t_max", 1e4}, {"points", 80}});
      const Instance in = make_instance(c);
      const CurveResult r = theory_curve(c, in);
      REQUIRE(r.ok);
      const std::string col = nm == "softmax" ? "mean_a" : "a_norm2";
      const auto v = r.table(c).numbers(col);
      double drift = 0;
      for (double x : v) drift = std::max(drift, std::fabs(x - v.front()));
      CHECK(drift <= 1e-8 * (1 + std::fabs(v.front())));
    }
}

TEST_CASE("the loss never increases along the flow (every loss)") {
  for (const std::string loss : {"logistic", "square", "regression", "xent"})
    for (const std::string flow : {"full", "auto"}) {
      CAPTURE(loss);
      CAPTURE(flow);
      const Config c = config({{"loss", loss}, {"flow", flow}, {"T", 6}, {"d", 5}, {"seed", 9}, {"a0_std", 0.2}, {"t_max", 1e3}, {"points", 120}});
      const Instance in = make_instance(c);
      const CurveResult r = theory_curve(c, in);
      REQUIRE(r.ok);
      // The full flow measures ½|Vs − β*|² directly. The square-loss reduction evaluates it as
      // ½(b − 2u·s + sᵀQs), which cancels: below ~1e-9 b it is the integration error of u and Q.
      // Otherwise a rise is allowed only within what an integration error δ ~ 1e-10 of the state makes
      // of the loss: for the square losses ℓ ∝ |r|², |r| may move by δ, ℓ ≤ (sqrt(ℓ) + δ)².
      const double floor = (loss == "square" && r.info["flow"]["kind"] == "reduced") ? 1e-9 : 0.0;
      const std::vector<Observation>& run = r.observations;
      long up = 0;
      for (std::size_t k = 1; k < run.size(); ++k) {
        const double before = run[k - 1].m.loss, after = run[k].m.loss;
        if (before > floor && after > (1 + 1e-12) * std::pow(std::sqrt(std::fabs(before)) + 1e-10, 2)) ++up;
      }
      CHECK(up == 0);
    }
}

TEST_CASE("theorems of the logistic softmax flow from a(0) = 0 on generic initial conditions") {
  for (int seed : {1, 2, 3, 4, 5})
    for (int T : {4, 8}) {
      CAPTURE(seed);
      CAPTURE(T);
      Config c = config({{"T", T}, {"d", 6}, {"V0_std", 0.3}, {"seed", seed}, {"t_max", 1e100}, {"points", 300}});
      c.times.insert(c.times.end(), {1e20, 1e40, 1e70});
      std::sort(c.times.begin(), c.times.end());
      const Instance in = make_instance(c);
      const CurveResult r = theory_curve(c, in);
      REQUIRE(r.ok);
      const std::vector<Observation>& run = r.observations;
      std::vector<int> rank(T);
      for (int i = 0; i < T; ++i) rank[i] = i;
      std::sort(rank.begin(), rank.end(), [&](int i, int j) { return in.u0(i) > in.u0(j); });
      const int w = rank[0];
      // No crossing: for t > 0 the logits and the projections keep the order of u(0).
      long out_of_order = 0, gap_down = 0;
      double prev_gap = -1;
      for (const Observation& o : run) {
        if (!(o.t > 0)) continue;
        const Eigen::VectorXd &a = o.m.logits, &u = o.m.u;
        for (int i = 0; i + 1 < T; ++i) out_of_order += !(a[rank[i]] > a[rank[i + 1]]) + !(u[rank[i]] > u[rank[i + 1]]);
        const double g = top_gap(a, o.top);
        if (g < prev_gap - 1e-12 * std::fabs(prev_gap)) ++gap_down;
        prev_gap = g;
      }
      CHECK(out_of_order == 0);
      CHECK(gap_down == 0);  // the top gap grows (without bound: like log log² t)
      const Observation& last = run.back();
      CHECK(last.top == w);  // polarises to argmax u(0)
      // (1 − s_top) log² t approaches 2(T−1)/T monotonically (the trend, not a threshold).
      const double lim = 2.0 * (T - 1) / T;
      auto first_at = [&](double tt) {
        std::size_t k = 0;
        while (k < run.size() && run[k].t < tt * (1 - 1e-12)) ++k;
        REQUIRE(k < run.size());
        return run[k];
      };
      double prev = INFINITY;
      for (double tt : {1e20, 1e40, 1e70, 1e100}) {
        const double e = std::fabs(first_at(tt).eps_log2t() - lim);
        CHECK(e < prev);
        prev = e;
      }
      CHECK(prev < 0.05 * lim);
      CHECK(std::fabs(last.z_minus_logt()) < 1e-6);  // z − log t → 0
      // u_j (j ≠ top) level off while u_top ≈ log t keeps growing.
      const Eigen::VectorXd u40 = first_at(1e40).m.u, &uL = last.m.u;
      for (int j = 0; j < T; ++j)
        if (j != w) CHECK(std::fabs(uL[j] - u40[j]) < 1e-3 * (uL[w] - u40[w]));
    }
}

TEST_CASE("non-top gaps rise and then shrink: not every gap grows") {
  Config c = config({{"init", "numpy"}, {"seed", 123}, {"t_max", 1e20}, {"points", 300}});
  const Instance in = make_instance(c);
  const CurveResult r = theory_curve(c, in);
  // Tokens 2 and 5 are second and third by u(0): their gap peaks near t ≈ 3e2 and then decreases.
  std::vector<double> gap, ts;
  for (const Observation& o : r.observations) {
    ts.push_back(o.t);
    gap.push_back(o.m.logits(2) - o.m.logits(5));
  }
  const auto peak = std::max_element(gap.begin(), gap.end()) - gap.begin();
  CHECK(ts[peak] > 10);
  CHECK(ts[peak] < 1e4);
  CHECK(gap.back() < 0.7 * gap[peak]);
  CHECK(gap.back() > 0);  // still ordered
}

TEST_CASE("log time: a logistic flow with T = 8 to t = 1e40 takes well under a second") {
  const Config c = config({{"init", "numpy"}, {"seed", 123}, {"t_max", 1e40}, {"points", 200}});
  const Instance in = make_instance(c);
  const CurveResult r = theory_curve(c, in);
  REQUIRE(r.ok);
  MESSAGE("T = 8 to t = 1e40: " << r.flow.summary.rhs_calls << " rhs calls, " << r.flow.summary.accepted_steps << " steps, "
                                << r.flow.summary.wall_seconds << " s");
  CHECK(r.flow.summary.wall_seconds < 0.5);
  CHECK(r.flow.summary.rhs_calls < 20000);
  CHECK(r.observations.back().t == doctest::Approx(1e40));
}

TEST_CASE("event machinery: located to near machine precision; report, freeze and stop") {
  // dx0/dt = −1 (x0 crosses 0 at t = 0.75: report), dx1/dt = −sign(x1) (dead at 0 like relu: freeze at t = 1.25),
  // x2 = t − 2 (stop at t = 2).
  OdeSystem f = [](const ConstVecRef& x, VecRef dx, double) {
    dx(0) = -1.0;
    dx(1) = x(1) > 0 ? -1.0 : 0.0;
    dx(2) = 1.0;
  };
  Eigen::VectorXd x0(3);
  x0 << 0.75, 1.25, -2.0;
  std::vector<EventCondition> conds = {
      {"cross", 0, EventAction::report, [](const Eigen::VectorXd& x) { return x(0); }, -1, "x0 crossed"},
      {"dead", 1, EventAction::freeze, [](const Eigen::VectorXd& x) { return x(1); }, 1, "x1 dead"},
      {"end", -1, EventAction::stop, [](const Eigen::VectorXd& x) { return x(2); }, -1, "end"}};
  IntegrateOptions o;
  o.rtol = 1e-12;
  o.atol = 1e-14;
  const FlowResult r = run_flow(f, x0, 0.0, lin_spaced(0.0, 3.0, 31), conds, o);
  REQUIRE(r.events.size() == 3);
  CHECK(r.events[0].kind == "cross");
  CHECK(r.events[0].t == doctest::Approx(0.75).epsilon(1e-12));
  CHECK(r.events[0].direction == -1);
  CHECK(r.events[1].kind == "dead");
  CHECK(r.events[1].t == doctest::Approx(1.25).epsilon(1e-12));
  CHECK(r.events[2].kind == "end");
  CHECK(r.events[2].t == doctest::Approx(2.0).epsilon(1e-12));
  CHECK(r.ended_by_event);
  // Observations stop at the stop event; after the freeze x1 is exactly 0.
  CHECK(r.t.back() <= 2.0 + 1e-12);
  for (std::size_t k = 0; k < r.t.size(); ++k) {
    if (r.t[k] > 1.25 + 1e-9) CHECK(r.x[k](1) == 0.0);
    CHECK(r.x[k](0) == doctest::Approx(0.75 - r.t[k]).epsilon(1e-10).scale(1.0));
  }
}

TEST_CASE("events of the normalisations: ReLU and l1 logits die in finite time, f(x) = x leaves the simplex") {
  auto base = [](const std::string& nm) {
    return config({{"normalization", nm}, {"init", "numpy_target_first"}, {"seed", 42}, {"T", 10}, {"d", 10}, {"a0_mean", 1.0}, {"a0_std", 0.1},
                   {"t_max", 5e4}, {"points", 100}});
  };
  // Element-wise ReLU: a logit whose projection stays negative decreases to 0 in finite time.
  const Config ce = config({{"normalization", "elementwise_relu"}, {"init", "explicit"}, {"T", 4}, {"u0", std::vector<double>{1, -1, 0.5, -2}},
                            {"a0", std::vector<double>{1, 0.2, 1, 0.1}}, {"t_max", 100}, {"points", 50}});
  for (const std::string nm : {"relu", "l1", "elementwise_relu"}) {
    CAPTURE(nm);
    const Config c = nm == "elementwise_relu" ? ce : base(nm);
    const Instance in = make_instance(c);
    const CurveResult r = theory_curve(c, in);
    REQUIRE(r.ok);
    REQUIRE(!r.flow.events.empty());
    for (const auto& e : r.flow.events) {
      CHECK(e.kind == "coordinate_zero");
      CHECK(e.action == EventAction::freeze);
      // After its event the logit is exactly 0 (dead) in every later observation.
      for (const Observation& o : r.observations)
        if (o.t > e.t) CHECK(o.m.logits(e.index) == 0.0);
      // The located time is the zero of the logit: integrating to just before it gives a ≈ 0.
      Config cb = c;
      cb.times = {0.0, e.t * (1 - 1e-9)};
      const CurveResult before = theory_curve(cb, in);
      CHECK(std::fabs(before.observations.at(1).m.logits(e.index)) < 1e-6);
    }
    if (nm == "relu") CHECK(r.observations.back().one_minus_s_top == 0.0);  // one-hot in finite time
  }
  const Config c = base("sum");
  const Instance in = make_instance(c);
  const CurveResult r = theory_curve(c, in);
  REQUIRE(r.ok);
  bool left = false;
  for (const auto& e : r.flow.events) left = left || (e.kind == "simplex_boundary" && e.direction < 0 && e.action == EventAction::report);
  CHECK(left);
  CHECK(r.observations.back().m.normaliser > 0);
  CHECK(r.observations.back().m.s.minCoeff() < 0);  // weights outside the simplex, reported, not clamped
}

TEST_CASE("square loss: partial polarisation; from V(0) = 0, a(0) = 0 the weights stay uniform; rank one stays rank one") {
  Config c = config({{"loss", "square"}, {"init", "numpy"}, {"seed", 123}, {"t_max", 1e4}, {"points", 80}});
  const Instance in = make_instance(c);
  const CurveResult r = theory_curve(c, in);
  REQUIRE(r.ok);
  const double s_top = r.observations.back().s_top();
  CHECK(s_top > 1.0 / 8 + 0.01);
  CHECK(s_top < 0.5);  // interior: the drive on a switched off with the residual
  const Config cz = config({{"loss", "square"}, {"init", "explicit"}, {"u0", std::vector<double>(8, 0.0)}, {"t_max", 1e4}, {"points", 50}});
  const CurveResult z = theory_curve(cz, make_instance(cz));
  REQUIRE(z.ok);
  for (const Observation& o : z.observations)
    for (double s : o.m.s) CHECK(std::fabs(s - 0.125) <= 1e-15);
  CHECK(z.observations.back().m.loss < 1e-12);  // V fits the target anyway
  std::vector<double> u0(in.u0.data(), in.u0.data() + 8);
  const Config c1 = config({{"loss", "square"}, {"init", "explicit"}, {"u0", u0}, {"t_max", 1e3}, {"points", 50}});
  const CurveResult one = theory_curve(c1, make_instance(c1));
  double res = 0;
  for (const Observation& o : one.observations)
    for (int i = 0; i < 8; ++i)
      for (int j = i; j < 8; ++j) res = std::max(res, std::fabs(o.Q(i, j) - o.m.u(i) * o.m.u(j)));
  CHECK(res < 1e-9);
}

TEST_CASE("typed observations: the derived quantities follow their formulas and are what curve.csv and sim.csv list") {
  // Tables hold the cells as doubles: NaN (log t at t = 0) equals NaN here.
  auto same = [](double x, double y) { return x == y || (std::isnan(x) && std::isnan(y)); };
  for (const std::string loss : {"logistic", "square"}) {
    CAPTURE(loss);
    const Config c = config({{"loss", loss}, {"init", "numpy"}, {"seed", 123}, {"t_points", std::vector<double>{0, 1, 1e2, 1e4}}});
    const Instance in = make_instance(c);
    const CurveResult r = theory_curve(c, in);
    REQUIRE(r.observations.size() == 4);
    const Table t = r.table(c);
    REQUIRE(t.rows() == 4);
    for (std::size_t k = 0; k < r.observations.size(); ++k) {
      const Observation& o = r.observations[k];
      CAPTURE(o.t);
      Eigen::Index top = 0;
      const double s_max = o.m.s.maxCoeff(&top);
      CHECK(o.top == top);
      CHECK(o.one_minus_s_top == doctest::Approx(1 - s_max).epsilon(1e-12));  // softmax: Σ_{j≠top} s_j
      CHECK(o.s_top() == doctest::Approx(s_max).epsilon(1e-12));
      if (o.t > 0) {
        CHECK(o.eps_log2t() == doctest::Approx((1 - s_max) * std::log(o.t) * std::log(o.t)).epsilon(1e-12));
        CHECK(o.z_minus_logt() == doctest::Approx(o.m.z - std::log(o.t)).epsilon(1e-12));
      } else {
        CHECK(std::isnan(o.eps_log2t()));
        CHECK(std::isnan(o.z_minus_logt()));
      }
      CHECK(t.number(k, "t") == o.t);
      CHECK(t.number(k, "top") == o.top);
      CHECK(t.number(k, "one_minus_s_top") == o.one_minus_s_top);
      CHECK(same(t.number(k, "eps_log2t"), o.eps_log2t()));
      CHECK(same(t.number(k, "z_minus_logt"), o.z_minus_logt()));
      CHECK(t.number(k, "entropy") == o.entropy);
      CHECK(t.number(k, "loss") == o.m.loss);
      for (int i = 0; i < c.T; ++i) {
        CHECK(t.number(k, "s_" + std::to_string(i)) == o.m.s(i));
        CHECK(t.number(k, "u_" + std::to_string(i)) == o.m.u(i));
        CHECK(t.number(k, "a_" + std::to_string(i)) == o.m.logits(i));
      }
      CHECK(t.has_column("Q_0_1") == (loss == "square"));
      if (loss == "square") {
        CHECK(o.Q(0, 1) == o.m.Q(0, 1));
        CHECK(t.number(k, "Q_0_1") == o.Q(0, 1));
      }
    }
  }
}
