// The specialization theory by identities: closed forms, error estimates, Bayes-risk limits, flow
// invariants, the drift as a gradient of the population risk, and the behaviour the paper reports.
#include <doctest/doctest.h>

#include <boost/math/quadrature/gauss_kronrod.hpp>
#include <cmath>

#include <fmt/format.h>

#include "common.hpp"
#include "hdat/specialization/bayes.hpp"
#include "hdat/specialization/curve.hpp"
#include "hdat/specialization/ode.hpp"

using namespace hdat;
using namespace hdat::specialization;
using spec_test::params;

namespace {
// E[f(u)] for u ~ N(mu, var) by adaptive Gauss-Kronrod quadrature (an independent reference).
template <class F>
double gauss_expect(F f, double mu, double var) {
  const double sd = std::sqrt(var);
  auto integrand = [&](double x) { return f(mu + sd * x) * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI); };
  return boost::math::quadrature::gauss_kronrod<double, 61>::integrate(integrand, -12.0, 12.0, 15, 1e-13);
}
double sigmoid(double u) { return 1.0 / (1.0 + std::exp(-u)); }

OrderParameterFlow flow_for(const Params& p, long samples, std::uint64_t seed = 0, const std::string& sampling = "sobol") {
  FlowOptions o;
  o.samples = samples;
  o.sampling = sampling_from_name(sampling);
  o.seed = seed;
  o.threads = 2;
  return OrderParameterFlow(Config::from(p), o);
}
}  // namespace

TEST_CASE("expectation engine against closed forms: two tokens, one head (risk and E[lambda g])") {
  // L = 2, H = F = 1, softmax, theta = 1.3 fixed: with u = chi_0 - chi_1 ~ N(M theta, 2R),
  // |e_0 - w|^2 = 2 (1 - sigma(u))^2, and at M = 0 the signal token's E[lambda g] = theta E[g_0] with
  // g_0 = -2 sigma(u) (1 - sigma(u))^2, so dM/dt = 2 eta theta E[sigma (1 - sigma)^2].
  const double theta = 1.3, Delta = 0.1, eta = 0.7;
  for (const char* sampling : {"sobol", "mc"}) {
    CAPTURE(sampling);
    const Params p = params({"L=2", "H=1", "F=1", "activation=softmax", "prior.kind=discrete", "prior.points=[[1.3]]", "noise=0.1",
                             "eta=0.7"});
    const auto flow = flow_for(p, 1 << 16, 3, sampling);
    Eigen::MatrixXd M(1, 1), R(1, 1);
    M << 0.7;
    R << 1.1;
    const FlowTerms t = flow.terms(M, R, true);
    const double risk_ref = 0.5 * Delta * Delta + gauss_expect([](double u) { return std::pow(1 - sigmoid(u), 2); }, 0.7 * theta, 2 * 1.1);
    CHECK(t.risk_se > 0);
    CHECK(std::fabs(t.risk - risk_ref) < 4 * t.risk_se);
    M << 0.0;
    const FlowTerms t0 = flow.terms(M, R, true);
    const double dM_ref = 2 * eta * theta * gauss_expect([](double u) { return sigmoid(u) * std::pow(1 - sigmoid(u), 2); }, 0.0, 2 * 1.1);
    CHECK(std::fabs(t0.dM(0, 0) - dM_ref) < 4 * t0.dM_se(0, 0));
    CHECK(t0.dM_se(0, 0) < 0.02 * dM_ref);
  }
}

TEST_CASE("the risk's standard error matches the spread over independent sample sets") {
  const Params p = params({"activation=softmax", "H=2"});
  Eigen::MatrixXd M(2, 2), R(2, 2);
  M << 0.5, 0.2, 0.1, 0.6;
  R << 0.9, 0.2, 0.2, 0.8;
  for (const char* sampling : {"mc", "sobol"}) {
    CAPTURE(sampling);
    std::vector<double> v;
    double se = 0;
    const int sets = 24;
    for (int s = 0; s < sets; ++s) {
      const auto flow = flow_for(p, 2048, 100 + s, sampling);
      const auto [r, e] = flow.risk(M, R);
      v.push_back(r);
      se += e / sets;
    }
    double mu = 0, var = 0;
    for (double x : v) mu += x / sets;
    for (double x : v) var += (x - mu) * (x - mu) / (sets - 1);
    CHECK(se / std::sqrt(var) > 1 / 1.7);
    CHECK(se / std::sqrt(var) < 1.7);
  }
}

TEST_CASE("Bayes risk: known limits and the Bayes-softmax identity") {
  SUBCASE("no signal: 1/2 (Delta^2 + 1 - 1/L)") {
    for (int L : {2, 4, 9}) {
      const Params p = params({fmt::format("L={}", L), "prior.mean=[0,0]", "prior.std=[0,0]", "noise=0.3"});
      const auto [b, se] = bayes_risk(Config::from(p), 4096, Sampling::monte_carlo, 1);
      CHECK(b == doctest::Approx(0.5 * (0.09 + 1 - 1.0 / L)).epsilon(1e-12));
    }
  }
  SUBCASE("strong signal: 1/2 Delta^2") {
    const Params p = params({"prior.kind=discrete", "prior.points=[[14,0],[0,14]]", "noise=0.3"});
    const auto [b, se] = bayes_risk(Config::from(p), 8192, Sampling::sobol, 1);
    CHECK(b == doctest::Approx(0.5 * 0.09).epsilon(1e-6));
  }
  SUBCASE("between the limits, and decreasing with the signal") {
    double prev = 1;
    for (double a : {0.5, 1.5, 2.5, 4.0}) {
      const Params p = params({"prior.kind=discrete", fmt::format("prior.points=[[{},0],[0,{}]]", a, a), "noise=0.1"});
      const auto [b, se] = bayes_risk(Config::from(p), 8192, Sampling::sobol, 1);
      CHECK(b < prev);
      CHECK(b > 0.5 * 0.01);
      CHECK(b < 0.5 * (0.01 + 1 - 0.25));
      prev = b;
    }
  }
  SUBCASE("Bayes-softmax with k_h = K* theta^h and b_h = log p_h is the Bayes estimator") {
    // M = Theta, R = Theta Theta^T (R - M M^T = 0: the guarded factor is exactly singular here).
    const Params p = params({"prior.kind=discrete", "prior.points=[[2.5,0],[0,1.5]]", "prior.probs=[0.7,0.3]",
                             "bias=[-0.35667494393873245,-1.2039728043259361]", "activation=bayes", "noise=0.1"});
    const Config s = Config::from(p);
    const auto flow = flow_for(p, 1 << 15, 7);
    Eigen::MatrixXd M = s.prior.points;
    Eigen::MatrixXd R = M * M.transpose();
    const auto [r, rse] = flow.risk(M, R);
    const auto [b, bse] = bayes_risk(s, 1 << 15, Sampling::sobol, 9);
    CHECK(std::fabs(r - b) < 4 * std::sqrt(rse * rse + bse * bse));
    // A mismatched key does worse.
    Eigen::MatrixXd M2 = M;
    M2(0, 1) = 0.8;
    const auto [r2, r2se] = flow.risk(M2, M2 * M2.transpose());
    CHECK(r2 > b + 5 * r2se);
  }
}

TEST_CASE("flow invariants: R stays symmetric and R - M M^T positive semidefinite") {
  for (const char* act : {"softmax", "softmax1", "bayes"}) {
    CAPTURE(act);
    const Params p = params({fmt::format("activation={}", act), "H=3", "mc_samples=3000", "t_max=30", "n_points=30"});
    const auto flow = flow_for(p, 3000);
    Eigen::MatrixXd M0, R0;
    initial_overlaps(p, flow.setup(), M0, R0);
    const auto tr = integrate_flow(flow, M0, R0, observation_times(p), integrate_options(p, flow.layout()));
    REQUIRE(tr.solver.ok());
    CHECK(tr.trajectory.size() == 31);
    CHECK(tr.worst_psd_violation > -1e-9);
    CHECK((tr.R_final - tr.R_final.transpose()).cwiseAbs().maxCoeff() < 1e-12);
  }
}

TEST_CASE("the drift (terms linear in eta) is -eta times the gradient of the population risk pulled back to (M, R)") {
  // dk/dt = -eta D grad_k R(M(k), R(k)) with M = K*^T k / D, R = k^T k / D gives
  //   dM_hf = -eta [dR/dM_hf + 2 sum_h' S_hh' M_h'f],
  //   dR_hh' (drift) = -eta [sum_f (dR/dM_h'f M_hf + dR/dM_hf M_h'f) + 2 sum_j (S_h'j R_hj + S_hj R_h'j)],
  // S the symmetrised derivative with respect to R. The risk's derivatives by central differences on
  // the same (common) sample set; the ODE's terms by their own estimators: both estimate the same
  // numbers, so they agree within their Monte Carlo errors.
  for (const char* act : {"softmax", "softmax1", "bayes"}) {
    CAPTURE(act);
    const Params p = params({fmt::format("activation={}", act), "H=2", "eta=0.8", "prior.mean=[0.8,0.4]", "prior.std=[1.2,0.7]"});
    const auto flow = flow_for(p, 1 << 17, 21);
    Eigen::MatrixXd M(2, 2), R(2, 2);
    M << 0.6, 0.3, 0.2, 0.7;
    R << 1.2, 0.4, 0.4, 1.0;
    const FlowTerms t = flow.terms(M, R, true);
    const double h = 1e-4;
    auto risk = [&](const Eigen::MatrixXd& Mx, const Eigen::MatrixXd& Rx) { return flow.risk(Mx, Rx).first; };
    Eigen::MatrixXd dM(2, 2), S(2, 2);
    for (int i = 0; i < 2; ++i)
      for (int f = 0; f < 2; ++f) {
        Eigen::MatrixXd Mp = M, Mm = M;
        Mp(i, f) += h, Mm(i, f) -= h;
        dM(i, f) = (risk(Mp, R) - risk(Mm, R)) / (2 * h);
      }
    for (int i = 0; i < 2; ++i)
      for (int j = i; j < 2; ++j) {
        Eigen::MatrixXd Rp = R, Rm = R;
        Rp(i, j) += h, Rm(i, j) -= h;
        if (i != j) Rp(j, i) += h, Rm(j, i) -= h;
        const double d = (risk(M, Rp) - risk(M, Rm)) / (2 * h);
        S(i, j) = S(j, i) = (i == j) ? d : d / 2;
      }
    const double eta = 0.8;
    const Eigen::MatrixXd gM = -eta * (dM + 2 * S * M);
    const Eigen::MatrixXd gR = -eta * (M * dM.transpose() + dM * M.transpose() + 2 * (R * S + S * R));
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) {
        CAPTURE(i);
        CAPTURE(j);
        CHECK(std::fabs(gM(i, j) - t.dM(i, j)) < 5 * t.dM_se(i, j) + 2e-3 * std::fabs(t.dM(i, j)) + 1e-4);
        CHECK(std::fabs(gR(i, j) - t.dR_drift(i, j)) < 5 * t.dR_drift_se(i, j) + 2e-3 * std::fabs(t.dR_drift(i, j)) + 1e-4);
      }
    // The eta^2 part is not a gradient: it is positive on the diagonal (SGD noise inflates the norms).
    CHECK(t.dR_noise(0, 0) > 0);
    CHECK(t.dR_noise(1, 1) > 0);
  }
}

TEST_CASE("the bias's drift is -eta_b times the gradient of the population risk in b; bayes conserves sum b") {
  // db_h/dt = -eta_b E[sum_l g_hl] = -eta_b dR/db_h (derivation.md §4, b): the ODE's estimator against
  // central differences of the risk on the same sample set.
  for (const char* act : {"softmax1", "bayes"}) {
    CAPTURE(act);
    const Params p = params({fmt::format("activation={}", act), "H=2", "eta=0.8", "train_bias=true", "eta_bias=1.7", "bias=[-1.5,0.4]",
                             "prior.mean=[0.8,0.4]", "prior.std=[1.2,0.7]"});
    const auto flow = flow_for(p, 1 << 16, 22);
    Eigen::MatrixXd M(2, 2), R(2, 2);
    M << 0.6, 0.3, 0.2, 0.7;
    R << 1.2, 0.4, 0.4, 1.0;
    const Eigen::VectorXd b = flow.setup().bias;
    const FlowTerms t = flow.terms(M, R, b, true);
    const double h = 1e-4;
    for (int i = 0; i < 2; ++i) {
      Eigen::VectorXd bp = b, bm = b;
      bp(i) += h, bm(i) -= h;
      const double grad = (flow.risk(M, R, bp).first - flow.risk(M, R, bm).first) / (2 * h);
      CAPTURE(i);
      CHECK(t.db_se(i) > 0);
      CHECK(std::fabs(-1.7 * grad - t.db(i)) < 5 * t.db_se(i) + 2e-3 * std::fabs(t.db(i)) + 1e-5);
      CHECK(std::fabs(t.db(i)) > 10 * t.db_se(i));  // a real drift, not noise
    }
    // The identity fails with the wrong sign of the bias's drift (break_term=bias_sign).
    FlowOptions broken;
    broken.samples = 1 << 16;
    broken.seed = 22;
    broken.threads = 2;
    broken.break_term = "bias_sign";
    const FlowTerms tb = OrderParameterFlow(flow.setup(), broken).terms(M, R, b, true);
    CHECK((tb.db - t.db).norm() > 1.9 * t.db.norm());
    // bayes: a common shift of b cancels in the joint normalisation.
    if (std::string(act) == "bayes") CHECK(std::fabs(t.db.sum()) < 1e-10);
    // The bias acts: with b left out of the logits (break_term=bias_logit), the risk changes.
    if (std::string(act) == "softmax1") {
      const auto with_b = flow.risk(M, R, b), without_b = flow.risk(M, R, Eigen::VectorXd::Zero(2));
      CHECK(std::fabs(with_b.first - without_b.first) > 10 * (with_b.second + without_b.second));
    }
  }
}

TEST_CASE("softmax1: b -> +inf is softmax, b -> -inf switches the head off (risk and drift)") {
  const std::vector<std::string> base = {"H=2", "eta=0.8", "aggregation=sum", "prior.mean=[0.8,0.4]", "prior.std=[1.2,0.7]"};
  auto with = [&](std::vector<std::string> extra) {
    auto sets = base;
    sets.insert(sets.end(), extra.begin(), extra.end());
    return flow_for(params(sets), 1 << 14, 23);
  };
  Eigen::MatrixXd M(2, 2), R(2, 2);
  M << 0.6, 0.3, 0.2, 0.7;
  R << 1.2, 0.4, 0.4, 1.0;
  const FlowTerms soft = with({"activation=softmax"}).terms(M, R, false);
  const FlowTerms plus = with({"activation=softmax1", "bias=[40,40]"}).terms(M, R, false);
  CHECK(std::fabs(plus.risk - soft.risk) < 1e-10);
  CHECK((plus.dM - soft.dM).norm() < 1e-10);
  CHECK((plus.dR_drift + plus.dR_noise - soft.dR_drift - soft.dR_noise).norm() < 1e-10);
  // Head 1 off: its keys do not move (dM_1 = 0, dR_11 = 0), and the model is head 0 alone.
  const auto off_flow = with({"activation=softmax1", "bias=[40,-800]"});
  const FlowTerms off = off_flow.terms(M, R, false);
  CHECK(off.dM.row(1).norm() == 0.0);
  CHECK(off.dR_drift(1, 1) + off.dR_noise(1, 1) == 0.0);
  CHECK(off.dM.row(0).norm() > 1e-3);
  // Same law of head 0's fields, other samples of them (the kept head's own square root): within errors.
  const auto [off_risk, off_se] = off_flow.risk(M, R);
  const auto alone = with({"activation=softmax"}).risk_with_heads(M, R, Eigen::VectorXd::Zero(2), {0});
  CHECK(std::fabs(off_risk - alone.first) < 5 * (off_se + alone.second));
  CHECK(std::fabs(off_risk - soft.risk) > 10 * (off_se + alone.second));  // and not the two-head model
}

TEST_CASE("heads first move together, then specialise (bayes, H = F = 2, theta = 2.5 e_f, eta = 1)") {
  const Params p = params({"activation=bayes", "eta=1", "prior.kind=discrete", "prior.points=[[2.5,0],[0,2.5]]",
                           "mc_samples=8000", "t_points=[0,2,4,100]"});
  const auto flow = flow_for(p, 8000);
  Eigen::MatrixXd M0, R0;
  initial_overlaps(p, flow.setup(), M0, R0);
  const auto tr = integrate_flow(flow, M0, R0, observation_times(p), integrate_options(p, flow.layout()));
  REQUIRE(tr.solver.ok());
  auto M_at = [&](std::size_t r) { return Eigen::MatrixXd(flow.layout().view(tr.trajectory.state(r), "M")); };
  // t = 4: both heads have grown along the mean direction (1, 1) and are still nearly equal.
  const Eigen::MatrixXd M4 = M_at(2);
  CHECK(M4.minCoeff() > 0.2);
  CHECK((M4.row(0) - M4.row(1)).norm() < 0.1 * M4.row(0).norm());
  // t = 100: one head per feature.
  const Eigen::MatrixXd M100 = M_at(3);
  const bool straight = M100(0, 0) > 1.5 && M100(1, 1) > 1.5 && std::fabs(M100(0, 1)) < 0.5 && std::fabs(M100(1, 0)) < 0.5;
  const bool swapped = M100(0, 1) > 1.5 && M100(1, 0) > 1.5 && std::fabs(M100(0, 0)) < 0.5 && std::fabs(M100(1, 1)) < 0.5;
  CHECK((straight || swapped));
  const Events ev = detect_events(tr.trajectory, 2, 2, 0.1);
  CHECK(std::isfinite(ev.plateau_end));
  CHECK(ev.plateau_end > 4);
  // The exactly symmetric start never specialises (the flow keeps exchangeable heads exchangeable).
  Eigen::MatrixXd Ms = Eigen::MatrixXd::Zero(2, 2), Rs = 0.09 * Eigen::MatrixXd::Identity(2, 2);
  const auto sym = integrate_flow(flow, Ms, Rs, observation_times(p), integrate_options(p, flow.layout()));
  const Eigen::MatrixXd Mf = sym.M_final;
  CHECK((Mf.row(0) - Mf.row(1)).norm() < 1e-9);
  CHECK(std::fabs(sym.R_final(0, 0) - sym.R_final(1, 1)) < 1e-9);
}

TEST_CASE("Bayes-softmax with one head per support point and small eta ends near the Bayes risk; pruning") {
  const Params p = params({"activation=bayes", "eta=0.1", "prior.kind=discrete", "prior.points=[[2.5,0],[0,2.5]]", "t_max=2000",
                           "mc_samples=8000", "n_points=12"});
  const auto flow = flow_for(p, 8000);
  Eigen::MatrixXd M0, R0;
  initial_overlaps(p, flow.setup(), M0, R0);
  const auto tr = integrate_flow(flow, M0, R0, observation_times(p), integrate_options(p, flow.layout()));
  REQUIRE(tr.solver.ok());
  const double final_risk = tr.trajectory.quantity(tr.trajectory.size() - 1, *tr.trajectory.observable("risk")).value;
  const auto [b, bse] = bayes_risk(flow.setup(), 1 << 15, Sampling::sobol, 2);
  CHECK(final_risk > b - 0.002);      // no student beats the Bayes risk (up to Monte Carlo error)
  CHECK(final_risk - b < 0.005);      // O(eta) excess, 0.0013 at eta = 0.1
  // Pruning: with one head per support point, neither head can go.
  const auto rows = prune_heads(flow, tr.M_final, tr.R_final, tr.b_final);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].kept == 2);
  CHECK(rows[1].risk > rows[0].risk + 0.1);
}

TEST_CASE("pruning: a redundant bayes head can go (H = 3, F = 2)") {
  // Two heads on the two support points and a copy of the first: in the shared normalisation the
  // copy only doubles one support point's weight (a log 2 shift of its bias), so removing it costs
  // little, while removing a feature's only head costs a lot.
  {
    const Params p = params({"activation=bayes", "H=3", "prior.kind=discrete", "prior.points=[[2.5,0],[0,2.5]]"});
    const auto flow = flow_for(p, 8000);
    Eigen::MatrixXd M(3, 2);
    M << 2.5, 0, 0, 2.5, 2.5, 0;
    const Eigen::MatrixXd R = M * M.transpose() + 0.01 * Eigen::MatrixXd::Identity(3, 3);
    const auto rows = prune_heads(flow, M, R, flow.setup().bias);
    REQUIRE(rows.size() == 3);
    CHECK(rows[1].kept == 2);
    CHECK(rows[1].risk - rows[0].risk < 0.02);
    CHECK(rows[2].risk - rows[0].risk > 0.1);
    const bool keeps_both_features = (rows[1].heads == std::vector<int>{0, 1}) || (rows[1].heads == std::vector<int>{1, 2});
    CHECK(keeps_both_features);
  }
}

TEST_CASE("bad input names the key") {
  auto msg = [](const std::vector<std::string>& sets) {
    try {
      params(sets);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(msg({"prior.mean=[1,2,3]"}).find("prior.mean") != std::string::npos);
  CHECK(msg({"prior.kind=discrete"}).find("prior.points") != std::string::npos);
  CHECK(msg({"M0=[[1,0],[0,1]]"}).find("R0") != std::string::npos);
  CHECK(msg({"M0=[[1,0],[0,1]]", "R0=[[0.5,0],[0,0.5]]"}).find("positive semidefinite") != std::string::npos);
  CHECK(msg({"H=3", "bias=[0,0]"}).find("bias") != std::string::npos);
  // A bias where it does nothing is refused, not ignored: softmax (it cancels per head), bayes with one head.
  CHECK(msg({"activation=softmax", "bias=[-3,-3]"}).find("bias") != std::string::npos);
  CHECK(msg({"activation=softmax", "train_bias=true"}).find("train_bias") != std::string::npos);
  CHECK(msg({"activation=bayes", "H=1", "bias=[1]"}).find("bias") != std::string::npos);
  CHECK(msg({"activation=softmax1", "eta_bias=2"}).find("eta_bias") != std::string::npos);
  CHECK(msg({"activation=softmax1", "break_term=bias_sign"}).find("break_term") != std::string::npos);
  CHECK(msg({"activation=softmax1", "bias=[-3,-3]"}).empty());
  CHECK(msg({"activation=relu"}).find("softmax|softmax1|bayes") != std::string::npos);
}
