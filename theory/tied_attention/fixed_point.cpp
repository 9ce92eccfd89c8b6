#include "hdat/tied_attention/fixed_point.hpp"

#include <chrono>
#include <cmath>

#include "hdat/core/error.hpp"

namespace hdat::tied_attention {

PriorSide::Out PriorSide::evaluate(double qhat, double mhat, double Sigmahat) const {
  if (!(mhat > 0) || !(qhat >= 0) || !(Sigmahat > 0) || !std::isfinite(qhat + mhat + Sigmahat))
    throw NumericalError("prior side: conjugates out of range (qhat = " + std::to_string(qhat) +
                         ", mhat = " + std::to_string(mhat) + ", Sigmahat = " + std::to_string(Sigmahat) + ")");
  Out o;
  o.delta = std::max(std::sqrt(qhat) / mhat, 1e-9);
  if (kind == PriorKind::frobenius) {
    const double S = Sigmahat + 4 * lambda;
    const double Q0 = target->second_moment();
    o.eta = mhat / S;
    o.t = 0;
    o.q = (mhat * mhat * Q0 + qhat) / (S * S);
    o.m = mhat * Q0 / S;
    o.Sigma = 1 / S;
    o.j.J = Q0 + o.delta * o.delta;  // ∫ x² dμ_δ: the Frobenius analogue of J
    o.j.dJ_ddelta = 2 * o.delta;
    o.j.mass_above = 1;
    o.j.delta = o.delta;
    return o;
  }
  o.eta = mhat / Sigmahat;
  o.t = 2 * lambda / mhat;
  const auto law = make_law(target, o.delta, method);
  o.j = j_values(*law, o.t, quadrature);
  o.j.dJ_ddelta *= broken_ddelta_factor;
  o.q = o.eta * o.eta * o.j.J;
  o.m = o.eta * (o.j.J - 0.5 * (o.delta * o.j.dJ_ddelta + o.t * o.j.dJ_dt));
  o.Sigma = o.j.dJ_ddelta / (2 * Sigmahat * o.delta);
  return o;
}

nlohmann::json CurveSolveSummary::to_json() const {
  return {{"solver", "fixed-point iteration (" + method + ") on (Sigma, m, q); sample side by "
                     "common-random-number (Q)MC with Newton proximal steps"},
          {"points", points},
          {"converged_points", converged_points},
          {"sample_side_evaluations", sample_evaluations},
          {"iterations", iterations},
          {"mean_prox_newton_iterations", mean_prox_iterations},
          {"multistart_switches", multistart_switches},
          {"unconverged_prox", unconverged_prox},
          {"wall_seconds", wall_seconds},
          {"message", message}};
}

GeneralSolver::GeneralSolver(PriorSide prior, std::shared_ptr<SampleSide> sample, double Q0, GeneralSolverOptions options)
    : prior_(std::move(prior)), sample_(std::move(sample)), Q0_(Q0), opt_(options) {
  summary_.method = fixed_point_method_name(opt_.fixed_point.method);
}

Eigen::Vector3d GeneralSolver::map(double alpha, const Eigen::Vector3d& x, SampleSideResult* s, PriorSide::Out* p) {
  SampleSideResult sr = sample_->evaluate(alpha, x(0), x(1), x(2));
  ++summary_.sample_evaluations;
  const double n = static_cast<double>(summary_.sample_evaluations);
  summary_.mean_prox_iterations += (sr.mean_prox_iterations - summary_.mean_prox_iterations) / n;
  summary_.multistart_switches += sr.multistart_switches;
  summary_.unconverged_prox += sr.unconverged;
  const PriorSide::Out po = prior_.evaluate(sr.qhat, sr.mhat, sr.Sigmahat);
  if (s) *s = sr;
  if (p) *p = po;
  return {po.Sigma, po.m, po.q};
}

Eigen::Vector3d GeneralSolver::initial_guess(double alpha) const {
  // A small student aligned with the target (m = q/2 ... ) and Σ of order one: the damped
  // iteration is robust from here; warm starts along α do the rest.
  (void)alpha;
  return {0.5, 0.2 * Q0_, 0.1 * Q0_ + 0.01};
}

namespace {
bool valid(const Eigen::Vector3d& x, double Q0) {
  return std::isfinite(x.sum()) && x(0) >= 0 && x(2) >= 0 && x(2) * Q0 >= x(1) * x(1) * (1 - 1e-12);
}
}  // namespace

FixedPointState GeneralSolver::make_state(double alpha, const Eigen::Vector3d& x, const SampleSideResult& s,
                                          const PriorSide::Out& p) const {
  FixedPointState st;
  st.alpha = alpha;
  st.Sigma = x(0);
  st.m = x(1);
  st.q = x(2);
  st.qhat = s.qhat;
  st.mhat = s.mhat;
  st.Sigmahat = s.Sigmahat;
  st.delta = p.delta;
  st.t = p.t;
  st.eta = p.eta;
  st.eps = prior_.lambda > 0 ? p.t / prior_.lambda : 0;
  st.j = p.j;
  st.mse = Q0_ - 2 * st.m + st.q;
  st.train_loss = s.train_loss;
  st.test_error = s.test_error;
  st.test_error_clean = s.test_error_clean;
  if (prior_.kind == PriorKind::trace_psd) {
    st.rank = p.j.mass_above;
    st.trace = -0.5 * p.eta * p.j.dJ_dt;  // Tr Ŝ/d = η ∫ (x − t)₊ dμ_δ
    st.regulariser = prior_.lambda * st.trace;
  } else {
    st.rank = 1;
    st.trace = p.eta * prior_.target->mean();
    st.regulariser = prior_.lambda * st.q;
  }
  st.objective = alpha * st.train_loss + st.regulariser;
  return st;
}

FixedPointErrors GeneralSolver::error_bars(double alpha, const Eigen::Vector3d& x, const SampleSideResult& s) {
  FixedPointErrors e;
  // P' = ∂P/∂h (deterministic, central differences).
  const Eigen::Vector3d h(s.qhat, s.mhat, s.Sigmahat);
  Eigen::Matrix3d Pp, Sp;
  for (int k = 0; k < 3; ++k) {
    const double dh = 1e-5 * std::max(std::fabs(h(k)), 1e-8);
    Eigen::Vector3d hp = h, hm = h;
    hp(k) += dh;
    hm(k) -= dh;
    const auto a = prior_.evaluate(hp(0), hp(1), hp(2)), b = prior_.evaluate(hm(0), hm(1), hm(2));
    Pp.col(k) = (Eigen::Vector3d(a.Sigma, a.m, a.q) - Eigen::Vector3d(b.Sigma, b.m, b.q)) / (2 * dh);
  }
  // S' = ∂S/∂x (common random numbers, forward differences), and ∂(test, train)/∂x.
  Eigen::Matrix<double, 2, 3> Op;
  for (int k = 0; k < 3; ++k) {
    Eigen::Vector3d xp = x;
    const double dx = 1e-4 * std::max(std::fabs(x(k)), 1e-3);
    xp(k) += (k == 1 ? -dx : dx);  // keep q >= m²/Q0: move m toward 0 ... 
    if (k == 1 && x(1) < 0) xp(1) = x(1) + dx;
    const double step = xp(k) - x(k);
    if (!valid(xp, Q0_)) xp(2) = x(2) + std::fabs(step);
    const SampleSideResult sp = sample_->evaluate(alpha, xp(0), xp(1), xp(2));
    ++summary_.sample_evaluations;
    Sp.col(k) = (Eigen::Vector3d(sp.qhat, sp.mhat, sp.Sigmahat) - h) / step;
    Op(0, k) = (sp.test_error - s.test_error) / step;
    Op(1, k) = (sp.train_loss - s.train_loss) / step;
  }
  sample_->evaluate(alpha, x(0), x(1), x(2));  // restore the warm starts at the fixed point
  ++summary_.sample_evaluations;
  const Eigen::Matrix3d A = Pp * Sp;
  const Eigen::Matrix3d B = (Eigen::Matrix3d::Identity() - A).inverse() * Pp;
  const Eigen::Matrix3d C = B * s.hat_cov * B.transpose();
  e.Sigma = std::sqrt(std::max(C(0, 0), 0.0));
  e.m = std::sqrt(std::max(C(1, 1), 0.0));
  e.q = std::sqrt(std::max(C(2, 2), 0.0));
  const Eigen::Vector3d gm(0, -2, 1);
  e.mse = std::sqrt(std::max(gm.dot(C * gm), 0.0));
  const Eigen::Matrix2d Co = Op * C * Op.transpose();
  e.test_error = std::sqrt(std::max(Co(0, 0), 0.0) + s.se_test_error * s.se_test_error);
  e.train_loss = std::sqrt(std::max(Co(1, 1), 0.0) + s.se_train_loss * s.se_train_loss);
  return e;
}

FixedPointState GeneralSolver::solve(double alpha, const Eigen::Vector3d& x0) {
  const auto t0 = std::chrono::steady_clock::now();
  Eigen::Vector3d x = x0;
  if (!valid(x, Q0_)) x = initial_guess(alpha);
  SampleSideResult s;
  PriorSide::Out p;
  FixedPointSummary fp;
  std::string msg;
  try {
    x = solve_fixed_point([&](const Eigen::VectorXd& y) -> Eigen::VectorXd { return map(alpha, y, &s, &p); }, x, opt_.fixed_point,
                          fp, [&](const Eigen::VectorXd& y) { return valid(y, Q0_); });
  } catch (const NumericalError& e) {
    msg = e.what();
  }
  const bool converged = fp.converged;
  const double res = fp.residual;
  const int it = fp.iterations;
  summary_.iterations += it;
  ++summary_.points;
  FixedPointState st;
  if (msg.empty()) {
    // Observables at the converged x (s, p from the last map call, at the previous x: recompute once).
    const Eigen::Vector3d g = map(alpha, x, &s, &p);
    (void)g;
    st = make_state(alpha, x, s, p);
    st.converged = converged;
    st.residual = res;
    if (!converged) st.message = fp.message;
    FixedPointErrors e;
    if (opt_.error_bars && converged) {
      try {
        e = error_bars(alpha, x, s);
      } catch (const NumericalError&) {
      }
    }
    errors_.push_back(e);
  } else {
    st.alpha = alpha;
    st.converged = false;
    st.message = msg;
    errors_.push_back({});
  }
  if (st.converged) ++summary_.converged_points;
  summary_.wall_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

std::vector<FixedPointState> GeneralSolver::curve(const std::vector<double>& alphas) {
  std::vector<FixedPointState> out;
  Eigen::Vector3d x = initial_guess(alphas.empty() ? 0.1 : alphas.front());
  for (double a : alphas) {
    FixedPointState st = solve(a, x);
    if (st.converged) x = Eigen::Vector3d(st.Sigma, st.m, st.q);
    else sample_->reset();
    out.push_back(st);
  }
  return out;
}

}  // namespace hdat::tied_attention
