// The objective's gradient from the sensitivities (src/optimize/sensitivity.cpp) against central
// finite differences of whole integrations, for every controllable parameter of every model that has
// one (committee: eta, dropout_keep, test_scale; specialization: eta), every objective (final,
// average, time to a target), both piecewise shapes and the smooth families; and the exact
// Jacobians the sensitivities are built from, against finite differences of the right-hand sides.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "hdat/committee/controlled.hpp"
#include "hdat/committee/ode.hpp"
#include "hdat/core/random.hpp"
#include "hdat/optimize/sensitivity.hpp"
#include "hdat/specialization/controlled.hpp"

using namespace hdat;

namespace {

// A valid committee state: overlaps of random weights (students partly aligned with the teachers).
Eigen::VectorXd committee_state(const committee::Config& s, std::uint64_t replica) {
  auto eng = rng::engine(5, replica, rng::user);
  boost::random::normal_distribution<double> normal;
  const int D = 30;
  Eigen::MatrixXd W(s.K, D), Ws(s.M, D);
  for (int m = 0; m < s.M; ++m)
    for (int j = 0; j < D; ++j) Ws(m, j) = normal(eng);
  for (int k = 0; k < s.K; ++k)
    for (int j = 0; j < D; ++j) W(k, j) = 0.3 * Ws(k % s.M, j) + 0.5 * normal(eng);
  committee::Overlaps o;
  o.Q = W * W.transpose() / D;
  o.R = W * Ws.transpose() / D;
  o.T = Ws * Ws.transpose() / D;
  o.v = s.v0;
  if (s.train_v) o.v = s.v0 * 1.1;
  return committee::pack(s, o);
}

committee::Config committee_setup(int K, int M, committee::Activation g) {
  committee::Config s = committee::Config::defaults(K, M);
  s.activation = g;
  s.noise = 0.3;
  s.eta = 0.8;
  s.dropout_keep = 0.7;
  s.test_scale = 0.9;
  return s;
}

ControlSchedule schedule(const std::string& control, ScheduleShape shape, double T, std::vector<double> values) {
  ControlSchedule c;
  c.control = control;
  c.shape = shape;
  c.t_final = T;
  c.theta = Eigen::Map<const Eigen::VectorXd>(values.data(), static_cast<Eigen::Index>(values.size()));
  return c;
}

IntegrateOptions tight() {
  IntegrateOptions o;
  o.rtol = 1e-12;
  o.atol = 1e-14;
  return o;
}

/// Largest |gradient − central difference| over the parameters, relative to the largest |gradient|.
double gradient_error(const optimize::Evaluator& ev, const optimize::Protocol& p, double h, std::string* report = nullptr) {
  const optimize::Evaluation e = ev.evaluate(p, true);
  REQUIRE(e.ok);
  const Eigen::VectorXd theta = p.pack();
  double worst = 0, scale = e.gradient.cwiseAbs().maxCoeff();
  REQUIRE(scale > 0);
  const auto names = p.parameter_names();
  for (Eigen::Index k = 0; k < theta.size(); ++k) {
    optimize::Protocol plus = p, minus = p;
    Eigen::VectorXd t = theta;
    t(k) += h;
    plus.unpack(t);
    t(k) -= 2 * h;
    minus.unpack(t);
    const double fd = (ev.evaluate(plus, false).objective - ev.evaluate(minus, false).objective) / (2 * h);
    worst = std::max(worst, std::fabs(fd - e.gradient(k)) / scale);
    if (report) *report += fmt::format("  {} {:.10g} fd {:.10g}\n", names[static_cast<std::size_t>(k)], e.gradient(k), fd);
  }
  return worst;
}

}  // namespace

TEST_CASE("committee: the drift written index by index equals the bulk right-hand side, with and without dropout") {
  for (const auto g : {committee::Activation::erf, committee::Activation::linear})
    for (int train_v = 0; train_v <= 1; ++train_v)
      for (double r : {1.0, 0.7, 0.25}) {
        committee::Config s = committee_setup(3, 2, g);
        s.train_v = train_v;
        s.wd = 0.05;
        s.dropout_keep = r;
        const committee::CommitteeODE ode(s, 1);
        const StateLayout l = s.layout();
        const Eigen::VectorXd x = committee_state(s, 3);
        Eigen::VectorXd bulk(l.size()), index(l.size());
        ode(x, bulk, 0.0);
        committee::drift_by_index<double>(s, l, x.data(), s.eta, r, index.data());
        CAPTURE(r);
        CAPTURE(train_v);
        CHECK((bulk - index).cwiseAbs().maxCoeff() < 1e-13 * (1 + bulk.cwiseAbs().maxCoeff()));
        // The terms add up to the same drift.
        CHECK((ode.terms(x, 0.0).total() - bulk).cwiseAbs().maxCoeff() < 1e-13);
      }
}

TEST_CASE("committee: the exact Jacobians by dual numbers equal finite differences of the drift and the test error") {
  committee::Config s = committee_setup(2, 2, committee::Activation::erf);
  s.train_v = true;
  const committee::CommitteeControlled th(s);
  const Eigen::VectorXd x = committee_state(s, 1), u = th.defaults();
  Eigen::VectorXd f;
  Eigen::MatrixXd fx, fu;
  th.drift(x, u, f, &fx, &fu);
  const double h = 1e-6;
  for (int k = 0; k < x.size(); ++k) {
    Eigen::VectorXd xp = x, xm = x, fp, fm;
    xp(k) += h, xm(k) -= h;
    th.drift(xp, u, fp, nullptr, nullptr);
    th.drift(xm, u, fm, nullptr, nullptr);
    CHECK(((fp - fm) / (2 * h) - fx.col(k)).cwiseAbs().maxCoeff() < 1e-7);
  }
  for (int c = 0; c < 2; ++c) {
    Eigen::VectorXd up = u, um = u, fp, fm;
    up(c) += h, um(c) -= h;
    th.drift(x, up, fp, nullptr, nullptr);
    th.drift(x, um, fm, nullptr, nullptr);
    CHECK(((fp - fm) / (2 * h) - fu.col(c)).cwiseAbs().maxCoeff() < 1e-7);
  }
  Eigen::VectorXd rx, ru;
  th.risk(x, u, &rx, &ru);
  for (int k = 0; k < x.size(); ++k) {
    Eigen::VectorXd xp = x, xm = x;
    xp(k) += h, xm(k) -= h;
    CHECK((th.risk(xp, u, nullptr, nullptr) - th.risk(xm, u, nullptr, nullptr)) / (2 * h) == doctest::Approx(rx(k)).epsilon(1e-6).scale(1));
  }
  Eigen::VectorXd up = u, um = u;
  up(2) += h, um(2) -= h;
  CHECK((th.risk(x, up, nullptr, nullptr) - th.risk(x, um, nullptr, nullptr)) / (2 * h) == doctest::Approx(ru(2)).epsilon(1e-6));
}

TEST_CASE("committee: dJ/dtheta by sensitivities equals finite differences for eta, dropout_keep and test_scale, every objective and shape") {
  const committee::Config s = committee_setup(2, 1, committee::Activation::erf);
  const committee::CommitteeControlled th(s);
  const Eigen::VectorXd x0 = committee_state(s, 2);
  const double T = 3;
  for (const auto shape : {ScheduleShape::piecewise_constant, ScheduleShape::piecewise_linear})
    for (const auto kind : {optimize::Objective::final_risk, optimize::Objective::average_risk, optimize::Objective::time_to_target}) {
      optimize::Protocol p;
      const bool linear = shape == ScheduleShape::piecewise_linear;
      p.schedules.push_back(schedule("eta", shape, T, linear ? std::vector<double>{0.9, 1.3, 0.6, 0.4} : std::vector<double>{1.2, 0.7, 0.5}));
      p.schedules.push_back(schedule("dropout_keep", shape, T, linear ? std::vector<double>{0.6, 0.9, 0.8} : std::vector<double>{0.5, 0.95}));
      p.finals = {"test_scale"};
      p.final_values = Eigen::VectorXd::Constant(1, 0.85);
      optimize::ObjectiveSpec spec;
      spec.kind = kind;
      spec.t_final = T;
      if (kind == optimize::Objective::time_to_target) {  // a target the protocol reaches inside the horizon
        const optimize::Evaluator plain(th, x0, {optimize::Objective::final_risk, T}, tight());
        const Table c = plain.curve(p, {0.0, 0.45 * T});
        spec.target = c.number(1, "eg");
      }
      const optimize::Evaluator ev(th, x0, spec, tight());
      std::string report;
      const double err = gradient_error(ev, p, 1e-5, &report);
      CAPTURE(shape_name(shape));
      CAPTURE(optimize::objective_name(kind));
      INFO(report);
      CHECK(err < 2e-6);
    }
}

TEST_CASE("committee: the families' gradients (step decay, cosine, power law) and their means' gradients") {
  const committee::Config s = committee_setup(2, 2, committee::Activation::erf);
  const committee::CommitteeControlled th(s);
  const Eigen::VectorXd x0 = committee_state(s, 4);
  const double T = 4;
  const optimize::Evaluator ev(th, x0, {optimize::Objective::final_risk, T}, tight());
  const std::vector<std::pair<ScheduleShape, std::vector<double>>> families = {
      {ScheduleShape::step_decay, {1.1, 0.6}}, {ScheduleShape::cosine, {1.3, 0.2}}, {ScheduleShape::power_law, {1.2, 0.7, 0.8}}};
  for (const auto& [shape, theta] : families) {
    optimize::Protocol p;
    p.schedules.push_back(schedule("eta", shape, T, theta));
    p.final_values.resize(0);
    CAPTURE(shape_name(shape));
    CHECK(gradient_error(ev, p, 1e-6) < 2e-6);
    Eigen::VectorXd g;
    const ControlSchedule& c = p.schedules[0];
    c.mean(&g);
    for (Eigen::Index k = 0; k < c.theta.size(); ++k) {
      ControlSchedule a = c, b = c;
      a.theta(k) += 1e-6, b.theta(k) -= 1e-6;
      CHECK((a.mean() - b.mean()) / 2e-6 == doctest::Approx(g(k)).epsilon(1e-7));
    }
  }
}

namespace {
specialization::Config small_specialization() {
  specialization::Config s;
  s.D = 200, s.L = 3, s.F = 2, s.H = 2;
  s.eta = 0.8;
  s.noise = 0.1;
  s.activation = specialization::Activation::softmax;
  s.aggregation = specialization::Aggregation::mean;
  s.bias = Eigen::VectorXd::Zero(2);
  s.prior.kind = specialization::Prior::Kind::gaussian;
  s.prior.mean = Eigen::Vector2d(1.0, 1.0);
  s.prior.std = Eigen::Vector2d(1.5, 0.6);
  return s;
}
specialization::FlowOptions small_flow() {
  specialization::FlowOptions o;
  o.samples = 400;
  o.threads = 1;
  return o;
}
Eigen::VectorXd specialization_state(const specialization::Config& s) {
  Eigen::MatrixXd M(2, 2), R(2, 2);
  M << 0.3, 0.1, -0.05, 0.25;
  R << 0.35, 0.02, 0.02, 0.3;
  return specialization::pack_state(s, M, R);
}
}  // namespace

TEST_CASE("specialization: psd_sqrt's derivative solves X C + C X = dS") {
  Eigen::MatrixXd S(3, 3), dS(3, 3);
  S << 1.0, 0.2, 0.1, 0.2, 0.7, -0.1, 0.1, -0.1, 0.5;
  dS << 0.3, -0.2, 0.05, -0.2, 0.1, 0.4, 0.05, 0.4, -0.3;
  const Eigen::MatrixXd X = specialization::psd_sqrt_derivative(S, dS);
  const double h = 1e-6;
  const Eigen::MatrixXd fd = (specialization::psd_sqrt(S + h * dS) - specialization::psd_sqrt(S - h * dS)) / (2 * h);
  CHECK((X - fd).cwiseAbs().maxCoeff() < 1e-8);
}

TEST_CASE("specialization: the exact Jacobian of the sampled drift and risk equals finite differences, every activation") {
  for (const auto act : {specialization::Activation::softmax, specialization::Activation::softmax1, specialization::Activation::bayes}) {
    specialization::Config s = small_specialization();
    s.activation = act;
    if (act == specialization::Activation::softmax1) s.bias = Eigen::Vector2d(-0.5, 0.3);
    if (act == specialization::Activation::bayes) s.train_bias = true, s.bias = Eigen::Vector2d(0.2, -0.1);
    const specialization::SpecializationControlled th(s, small_flow());
    Eigen::VectorXd x = specialization_state(s);
    if (s.train_bias) x.tail(2) = s.bias;
    const Eigen::VectorXd u = th.defaults();
    Eigen::VectorXd f, f_plain;
    Eigen::MatrixXd fx, fu;
    th.drift(x, u, f, &fx, &fu);
    th.drift(x, u, f_plain, nullptr, nullptr);
    CAPTURE(static_cast<int>(act));
    CHECK((f - f_plain).cwiseAbs().maxCoeff() < 1e-13);
    const double h = 1e-6;
    double worst = 0;
    for (int k = 0; k < x.size(); ++k) {
      Eigen::VectorXd xp = x, xm = x, fp, fm;
      xp(k) += h, xm(k) -= h;
      th.drift(xp, u, fp, nullptr, nullptr);
      th.drift(xm, u, fm, nullptr, nullptr);
      worst = std::max(worst, ((fp - fm) / (2 * h) - fx.col(k)).cwiseAbs().maxCoeff());
    }
    CHECK(worst < 1e-6 * (1 + fx.cwiseAbs().maxCoeff()));
    Eigen::VectorXd up = u, um = u, fp, fm;
    up(0) += h, um(0) -= h;
    th.drift(x, up, fp, nullptr, nullptr);
    th.drift(x, um, fm, nullptr, nullptr);
    CHECK(((fp - fm) / (2 * h) - fu.col(0)).cwiseAbs().maxCoeff() < 1e-7);
    Eigen::VectorXd rx;
    const double r = th.risk(x, u, &rx, nullptr);
    CHECK(r == doctest::Approx(th.risk(x, u, nullptr, nullptr)).epsilon(1e-13));
    for (int k = 0; k < x.size(); ++k) {
      Eigen::VectorXd xp = x, xm = x;
      xp(k) += h, xm(k) -= h;
      CHECK((th.risk(xp, u, nullptr, nullptr) - th.risk(xm, u, nullptr, nullptr)) / (2 * h) == doctest::Approx(rx(k)).epsilon(1e-6).scale(1));
    }
  }
}

TEST_CASE("specialization: dJ/deta by sensitivities equals finite differences, final and average risk, both shapes") {
  const specialization::Config s = small_specialization();
  const specialization::SpecializationControlled th(s, small_flow());
  const Eigen::VectorXd x0 = specialization_state(s);
  const double T = 2;
  IntegrateOptions o;
  o.rtol = 1e-10;
  o.atol = 1e-12;
  for (const auto shape : {ScheduleShape::piecewise_constant, ScheduleShape::piecewise_linear})
    for (const auto kind : {optimize::Objective::final_risk, optimize::Objective::average_risk}) {
      optimize::Protocol p;
      p.schedules.push_back(schedule("eta", shape, T, shape == ScheduleShape::piecewise_linear ? std::vector<double>{1.2, 0.5, 0.9}
                                                                                              : std::vector<double>{1.5, 0.6, 1.0}));
      p.final_values.resize(0);
      const optimize::Evaluator ev(th, x0, {kind, T}, o);
      CAPTURE(shape_name(shape));
      CAPTURE(optimize::objective_name(kind));
      CHECK(gradient_error(ev, p, 1e-5) < 1e-5);
    }
}
