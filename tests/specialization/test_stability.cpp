// Linear stability of the unspecialized phase: invariance of the symmetric manifold, the Jacobian
// against the flow it linearises, the predicted order of the features, and H = 1.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cmath>

#include "common.hpp"
#include "hdat/specialization/curve.hpp"
#include "hdat/specialization/stability.hpp"

using namespace hdat;
using namespace hdat::specialization;
using spec_test::params;

namespace {
OrderParameterFlow stability_flow(const Params& p, long samples) {
  FlowOptions o;
  o.samples = samples;
  o.threads = 2;
  return OrderParameterFlow(Config::from(p), o);
}
}  // namespace

TEST_CASE("the symmetric manifold is invariant: a symmetric start stays symmetric to round-off") {
  for (const char* act : {"softmax", "bayes"}) {
    CAPTURE(act);
    const Params p = params({fmt::format("activation={}", act), "H=3", "F=2", "t_max=40", "n_points=5"});
    const auto flow = stability_flow(p, 6000);
    Eigen::MatrixXd M(3, 2), R(3, 3);
    M << 0.3, 0.1, 0.3, 0.1, 0.3, 0.1;
    R << 0.5, 0.2, 0.2, 0.2, 0.5, 0.2, 0.2, 0.2, 0.5;
    const FlowRun tr = integrate_flow(flow, M, R, observation_times(p), integrate_options(p, flow.layout()));
    REQUIRE(tr.solver.ok());
    double worst = 0;
    for (int h = 1; h < 3; ++h) {
      worst = std::max(worst, (tr.M_final.row(h) - tr.M_final.row(0)).cwiseAbs().maxCoeff());
      worst = std::max(worst, std::fabs(tr.R_final(h, h) - tr.R_final(0, 0)));
    }
    worst = std::max(worst, std::fabs(tr.R_final(0, 1) - tr.R_final(1, 2)));
    CHECK(worst < 1e-10);
    CHECK(tr.M_final(0, 0) > 0.5);  // it did move
  }
}

TEST_CASE("fixed point and Jacobian: residual ~ 0; J v matches the flow's directional derivative; modes grow at their rate") {
  const Params p = params({"activation=bayes", "H=2", "F=2"});
  const auto flow = stability_flow(p, 6000);
  PlateauOptions fo;
  fo.t_relax = 300;
  const SymmetricFixedPoint fp = symmetric_fixed_point(flow, fo);
  CHECK(fp.summary.converged);
  CHECK(fp.summary.residual < 1e-9);
  CHECK((fp.M.row(0) - fp.M.row(1)).norm() == 0.0);
  const Linearisation lin = linearise(flow, fp.M, fp.R, fp.b);
  const Coordinates c{2, 2};
  const Eigen::VectorXd x = c.pack(fp.M, fp.R);
  auto f = [&](const Eigen::VectorXd& z) {
    Eigen::MatrixXd M, R;
    c.unpack(z, M, R);
    const FlowTerms t = flow.terms(M, R, false);
    return c.pack(t.dM, t.dR_drift + t.dR_noise);
  };
  // Directional derivatives along random directions, at a different step than the Jacobian's.
  Eigen::VectorXd v = Eigen::VectorXd::LinSpaced(c.size(), -1.0, 1.3).array().sin();
  v /= v.norm();
  const double e = 3e-4;
  const Eigen::VectorXd dir = (f(x + e * v) - f(x - e * v)) / (2 * e);
  CHECK((lin.jacobian * v - dir).norm() < 1e-5 * std::max(1.0, dir.norm()));
  CHECK(lin.jacobian_error.maxCoeff() < 1e-6);
  // Along the leading (head-difference) mode a small perturbation grows like exp(lambda t).
  const Mode& lead = lin.modes.front();
  CHECK(lead.kind == "head-difference");
  CHECK(lead.eigenvalue.real() > 0);
  CHECK(std::fabs(lead.eigenvalue.imag()) < 1e-12);
  const double eps = 1e-6, T = 10;
  Eigen::MatrixXd M0, R0;
  c.unpack(x + eps * lead.vector, M0, R0);
  const FlowRun tr = integrate_flow(flow, M0, R0, {0.0, T}, integrate_options(p, flow.layout()));
  Eigen::MatrixXd d = tr.M_final - fp.M;
  Eigen::MatrixXd M1, R1;
  c.unpack(lead.vector, M1, R1);
  const double growth = std::log(d.norm() / (eps * M1.norm())) / T;
  CHECK(growth == doctest::Approx(lead.eigenvalue.real()).epsilon(0.03));
}

TEST_CASE("for a diagonal prior covariance the predicted order follows Var theta_f") {
  struct Case {
    std::string std;
    std::vector<int> order;
  };
  for (const Case& k : {Case{"[1.5,0.6]", {0, 1}}, Case{"[0.6,1.7]", {1, 0}}, Case{"[0.5,1.6,1.0]", {1, 2, 0}}}) {
    CAPTURE(k.std);
    const int F = k.std == "[0.5,1.6,1.0]" ? 3 : 2;
    const std::string mean = F == 3 ? "[0.9,0.9,0.9]" : "[0.9,0.9]";
    const Params p = params({"activation=bayes", "H=2", fmt::format("F={}", F), "prior.mean=" + mean, "prior.std=" + k.std});
    const auto flow = stability_flow(p, 6000);
    const SymmetricFixedPoint fp = symmetric_fixed_point(flow, PlateauOptions{});
    REQUIRE(fp.summary.converged);
    const Linearisation lin = linearise(flow, fp.M, fp.R, fp.b);
    CHECK(predicted_order(lin, F) == k.order);
    // The Hessian of the risk: the most negative head-difference eigenvalue is along the largest variance.
    for (const auto& m : lin.hessian_modes)
      if (m.kind == "head-difference") {
        CHECK(m.feature == k.order.front());
        break;
      }
  }
}

TEST_CASE("with H = 1 there is no head-difference direction") {
  const Params p = params({"activation=softmax", "H=1", "F=2"});
  const auto flow = stability_flow(p, 4000);
  const SymmetricFixedPoint fp = symmetric_fixed_point(flow, PlateauOptions{});
  CHECK(fp.summary.converged);
  const Linearisation lin = linearise(flow, fp.M, fp.R, fp.b);
  for (const auto& m : lin.modes) CHECK(m.kind == "symmetric");
  CHECK(lin.lambda_max == -INFINITY);
  // The single head's fixed point is stable.
  CHECK(lin.modes.front().eigenvalue.real() < 0);
}

TEST_CASE("trained softmax1 bias: the fixed point includes b; the Jacobian in (M, R, b) matches the flow's directional derivative") {
  const Params p = params({"activation=softmax1", "aggregation=sum", "H=2", "F=2", "train_bias=true", "bias=[-1,-1]"});
  const auto flow = stability_flow(p, 6000);
  PlateauOptions fo;
  fo.t_relax = 300;
  const SymmetricFixedPoint fp = symmetric_fixed_point(flow, fo);
  REQUIRE(fp.summary.converged);
  CHECK(fp.summary.residual < 1e-9);  // includes db = 0
  CHECK(fp.b(0) == fp.b(1));
  const Coordinates c = Coordinates::of(flow.setup());
  REQUIRE(c.size() == 2 * 2 + 3 + 2);
  CHECK(c.name(c.size() - 1) == "b_1");
  const Linearisation lin = linearise(flow, fp.M, fp.R, fp.b);
  const Eigen::VectorXd x = c.pack(fp.M, fp.R, fp.b);
  auto f = [&](const Eigen::VectorXd& z) {
    Eigen::MatrixXd M, R;
    Eigen::VectorXd b;
    c.unpack(z, M, R, b, Eigen::VectorXd());
    const FlowTerms t = flow.terms(M, R, b, false);
    return c.pack(t.dM, t.dR_drift + t.dR_noise, t.db);
  };
  for (int k : {0, c.size() - 1}) {  // a random direction, and the last bias alone
    CAPTURE(k);
    Eigen::VectorXd v = k == 0 ? Eigen::VectorXd(Eigen::VectorXd::LinSpaced(c.size(), -1.0, 1.3).array().sin())
                               : Eigen::VectorXd(Eigen::VectorXd::Unit(c.size(), k));
    v /= v.norm();
    const double e = 3e-4;
    const Eigen::VectorXd dir = (f(x + e * v) - f(x - e * v)) / (2 * e);
    CHECK((lin.jacobian * v - dir).norm() < 1e-5 * std::max(1.0, dir.norm()));
    CHECK(dir.norm() > 1e-4);  // b acts on the flow
  }
}
