#include "hdat/polarization/gd.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include "hdat/core/progress.hpp"
#include "hdat/polarization/full_model.hpp"
#include "hdat/polarization/normalization.hpp"
#include "hdat/polarization/observables.hpp"
#include "hdat/polarization/reduced.hpp"

namespace hdat::polarization {

std::vector<long> steps_of(const std::vector<double>& times, double lr) {
  std::vector<long> s;
  for (double t : times) s.push_back(std::llround(t / lr));
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  return s;
}

nlohmann::json GdRun::to_json() const {
  return {{"steps", steps_done}, {"finite", finite}, {"wall_seconds", wall_seconds},
          {"steps_per_second", wall_seconds > 0 ? steps_done / wall_seconds : 0.0}, {"invariants", invariants}, {"events", events}};
}

namespace {

// The order parameters (u, [Q], a) of the reduced flow's state layout, measured from (V, a).
Eigen::VectorXd order_parameters(const Config& c, const Instance& in, const Eigen::MatrixXd& V, const Eigen::VectorXd& a) {
  const int T = c.T;
  Eigen::VectorXd x(c.loss == Loss::square ? 2 * T + T * T : 2 * T);
  x.segment(0, T) = V.transpose() * in.direction;
  if (c.loss == Loss::square) {
    Eigen::Map<Eigen::MatrixXd>(x.data() + T, T, T) = V.transpose() * V;
    x.segment(T + T * T, T) = a;
  } else {
    x.segment(T, T) = a;
  }
  return x;
}

}  // namespace

GdRun gradient_descent(const Config& c, const Instance& in, const GdOptions& opt) {
  const auto start = std::chrono::steady_clock::now();
  GdRun run;
  const double eta = opt.lr;
  const int T = c.T;
  FullModel model(c, in);
  Eigen::MatrixXd V = in.V0, gV(V.rows(), V.cols());
  Eigen::VectorXd a = in.a0, ga(a.size());
  Eigen::Ref<Eigen::MatrixXd> gVref(gV);
  Eigen::Ref<Eigen::VectorXd> garef(ga);
  run.steps = steps_of(opt.times, eta);
  const long last = run.steps.empty() ? 0 : run.steps.back();

  auto cols = observable_columns(c);
  cols.push_back("step");
  run.table = Table(cols);

  // Drift check against the reduced right-hand side (same Config, reduced flow).
  Config cr = c;
  cr.flow = FlowKind::reduced;
  std::unique_ptr<FlowSystem> reduced;
  if (opt.drift_check && c.reducible()) reduced = make_flow(cr, in);

  const bool value_logistic = c.architecture == Architecture::value && c.loss == Loss::logistic;
  const Invariant inv_kind = c.architecture == Architecture::value ? invariant_of(c.normalization) : Invariant::none;
  auto invariant = [&](const Eigen::VectorXd& x) { return inv_kind == Invariant::mean_a ? x.mean() : x.squaredNorm(); };
  const double inv0 = invariant(a);
  double inv_drift = 0, worst_increase = 0, energy_res = 0, perp = 0, drift_ua = 0, drift_Q = 0;
  long increases = 0;
  const Eigen::VectorXd bhat = in.beta_star.size() ? Eigen::VectorXd(in.beta_star / in.beta_star.norm()) : Eigen::VectorXd();

  // Events of the discrete run: first sign change of each logit (l1, relu) or weight (sum).
  const bool watch_logits = c.architecture == Architecture::value &&
                            (c.normalization == Normalization::l1 || c.normalization == Normalization::relu ||
                             c.normalization == Normalization::elementwise_relu);
  const bool watch_simplex = c.architecture == Architecture::value && c.normalization == Normalization::sum;
  std::vector<char> seen(T, 0);
  double F_prev = a.sum();
  Eigen::VectorXd a_prev_sign = a.array().sign();
  nlohmann::json events = nlohmann::json::array();
  auto add_event = [&](const std::string& kind, int index, long k, const std::string& msg) {
    if (events.size() < 200) events.push_back({{"kind", kind}, {"index", index}, {"step", k}, {"t", k * eta}, {"message", msg}});
  };

  Progress progress("gradient descent", last, !opt.quiet && last > 2'000'000);
  double L_prev = 0;
  long reported = 0;
  std::size_t next = 0;
  long k = 0;
  Eigen::VectorXd x_before;
  for (k = 0; k <= last; ++k) {
    const double L = model.evaluate(V, a, &gVref, &garef);
    if (!std::isfinite(L) || !gV.allFinite() || !ga.allFinite()) {
      run.finite = false;
      add_event("nonfinite", -1, k, "the loss or its gradient is not finite: gradient descent stopped");
      break;
    }
    if (k > 0 && L > L_prev + 1e-12 * std::fabs(L_prev) + 1e-300) {
      ++increases;
      worst_increase = std::max(worst_increase, (L - L_prev) / std::max(std::fabs(L_prev), 1e-300));
    }
    L_prev = L;
    const bool record = next < run.steps.size() && run.steps[next] == k;
    if (record) {
      Measured m;
      m.logits = model.logits();
      m.s = model.weights();
      m.loss = L;
      m.normaliser = model.normaliser();
      m.u = V.transpose() * in.direction;
      m.z = m.u.dot(m.s);
      m.V_norm = V.norm();
      const int top = top_index(m.s);
      m.top_col_norm = V.col(top).norm();
      for (int j = 0; j < T; ++j)
        if (j != top) m.max_other_col_norm = std::max(m.max_other_col_norm, V.col(j).norm());
      if (has_Q_columns(c)) m.Q = V.transpose() * V;
      auto row = observable_row(c, k * eta, m);
      row.push_back(static_cast<double>(k));
      run.table.add_row(row);
      ++next;
      if (value_logistic) perp = std::max(perp, ((V - in.V0) - bhat * (bhat.transpose() * (V - in.V0))).norm());
      if (reduced) x_before = order_parameters(c, in, V, a);
    }
    if (k == last) break;
    const double V2_before = V.squaredNorm();
    V.noalias() -= eta * gV;
    a.noalias() -= eta * ga;
    if (record && value_logistic) {
      // |V_{k+1}|² − |V_k|² = 2ηγz + η²γ²b|s|² exactly (gradient −γβ*sᵀ).
      const double z = in.beta_star.dot(model.output());
      const double gamma = logistic(-z);
      const double rhs = 2 * eta * gamma * z + eta * eta * gamma * gamma * in.beta_star.squaredNorm() * model.weights().squaredNorm();
      energy_res = std::max(energy_res, std::fabs(V.squaredNorm() - V2_before - rhs) / std::max(1.0, V2_before));
    }
    if (record && reduced) {
      const Eigen::VectorXd x_after = order_parameters(c, in, V, a);
      Eigen::VectorXd f(x_before.size());
      reduced->rhs(x_before, f);
      Eigen::VectorXd res = (x_after - x_before) / eta - f;
      if (c.loss == Loss::square) {
        // ΔQ/η − f_Q = η GᵀG exactly (G = ∂L/∂V): remove it, what is left is round-off.
        Eigen::Map<Eigen::MatrixXd>(res.data() + T, T, T) -= eta * (gV.transpose() * gV);
        drift_Q = std::max(drift_Q, res.segment(T, T * T).cwiseAbs().maxCoeff());
        res.segment(T, T * T).setZero();
      }
      drift_ua = std::max(drift_ua, res.cwiseAbs().maxCoeff() / std::max(1.0, f.cwiseAbs().maxCoeff()));
    }
    if (inv_kind != Invariant::none) inv_drift = std::max(inv_drift, std::fabs(invariant(a) - inv0));
    if (watch_logits || watch_simplex) {
      for (int i = 0; i < T; ++i) {
        const double sg = a(i) > 0 ? 1.0 : a(i) < 0 ? -1.0 : 0.0;
        if (!seen[i] && sg != a_prev_sign(i)) {
          seen[i] = 1;
          add_event(watch_simplex ? "simplex_boundary" : "coordinate_zero", i, k + 1,
                    watch_simplex ? fmt::format("a_{} changed sign: s_{} = a_{}/Σa left the simplex's sign pattern", i, i, i)
                                  : fmt::format("logit a_{} crossed 0", i));
        }
      }
      if (watch_simplex) {
        const double F = a.sum();
        if (F * F_prev <= 0) add_event("normaliser_zero", -1, k + 1, "the normaliser F = Σ a_j crossed 0");
        F_prev = F;
      }
    }
    if (k > 0 && (k & 0xFFFF) == 0) {
      progress.advance(k - reported);
      reported = k;
      if (interrupted()) {
        run.interrupted = true;
        break;
      }
    }
  }
  progress.advance(k - reported);
  progress.finish();
  run.steps_done = k;
  run.events = events;
  run.V_final = V;
  run.a_final = a;
  nlohmann::json inv;
  inv["loss_increases"] = increases;
  inv["worst_relative_loss_increase"] = worst_increase;
  if (inv_kind == Invariant::mean_a) inv["mean_a_drift"] = inv_drift;
  if (inv_kind == Invariant::norm2_a) inv["a_norm2_drift"] = inv_drift;
  if (value_logistic) {
    inv["V_minus_V0_orthogonal_to_beta"] = perp;
    inv["energy_identity_residual"] = energy_res;
  }
  if (reduced) {
    inv["drift_residual_u_a"] = drift_ua;
    if (c.loss == Loss::square) inv["drift_residual_Q"] = drift_Q;
  }
  run.invariants = inv;
  run.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

}  // namespace hdat::polarization
