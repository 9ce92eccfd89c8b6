#include "hdat/polarization/gd.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "hdat/core/progress.hpp"
#include "hdat/polarization/observables.hpp"
#include "hdat/core/constants.hpp"

namespace hdat::polarization {

std::vector<long> steps_of(const std::vector<double>& times, double lr) {
  std::vector<long> s;
  for (double t : times) s.push_back(std::llround(t / lr));
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  return s;
}

std::vector<double> on_step_grid(const std::vector<double>& times, double lr) {
  std::vector<double> out;
  for (long k : steps_of(times, lr)) out.push_back(static_cast<double>(k) * lr);
  return out;
}

namespace {


double conserved(Invariant kind, const Eigen::VectorXd& a) { return kind == Invariant::mean_a ? a.mean() : a.squaredNorm(); }

}  // namespace

GradientDescent::GradientDescent(const Config& c, const Instance& in, double lr)
    : c_(c),
      in_(in),
      lr_(lr),
      model_(c_, in_),
      flow_(make_flow(c_, in_)),
      V_(in_.V0),
      gV_(in_.V0.rows(), in_.V0.cols()),
      a_(in_.a0),
      ga_(in_.a0.size()),
      value_logistic_(c_.architecture == Architecture::value && c_.loss == Loss::logistic),
      invariant_kind_(c_.architecture == Architecture::value ? invariant_of(c_.normalization) : Invariant::none),
      invariant0_(conserved(invariant_kind_, in_.a0)),
      beta_hat_(in_.beta_star.size() ? Eigen::VectorXd(in_.beta_star / in_.beta_star.norm()) : Eigen::VectorXd()),
      watch_logits_(c_.architecture == Architecture::value &&
                    (c_.normalization == Normalization::l1 || c_.normalization == Normalization::relu ||
                     c_.normalization == Normalization::elementwise_relu)),
      watch_simplex_(c_.architecture == Architecture::value && c_.normalization == Normalization::sum),
      seen_(c_.T, 0),
      sign0_(in_.a0.array().sign()),
      F_prev_(in_.a0.sum()) {}

void GradientDescent::add_event(const std::string& kind, int index, const std::string& message) {
  if (events_.size() < 200)
    events_.push_back({{"kind", kind}, {"index", index}, {"step", steps_}, {"t", static_cast<double>(steps_) * lr_}, {"message", message}});
}

void GradientDescent::step(bool check_identities) {
  Eigen::Ref<Eigen::MatrixXd> gV(gV_);
  Eigen::Ref<Eigen::VectorXd> ga(ga_);
  const double L = model_.evaluate(V_, a_, &gV, &ga);
  if (!std::isfinite(L) || !gV_.allFinite() || !ga_.allFinite()) {
    finite_ = false;
    add_event("nonfinite", -1, "the loss or its gradient is not finite: gradient descent stopped");
    return;
  }
  if (steps_ > 0 && L > loss_prev_ + 1e-12 * std::fabs(loss_prev_) + 1e-300) {
    ++increases_;
    worst_increase_ = std::max(worst_increase_, (L - loss_prev_) / std::max(std::fabs(loss_prev_), 1e-300));
  }
  loss_prev_ = L;
  const double V2_before = check_identities && value_logistic_ ? V_.squaredNorm() : 0.0;
  V_.noalias() -= lr_ * gV_;
  a_.noalias() -= lr_ * ga_;
  ++steps_;
  if (check_identities && value_logistic_) {
    // |V_{k+1}|² − |V_k|² = 2ηγz + η²γ²b|s|² exactly (gradient −γβ*sᵀ).
    const double z = in_.beta_star.dot(model_.output());
    const double gamma = logistic(-z);
    const double rhs = 2 * lr_ * gamma * z + lr_ * lr_ * gamma * gamma * in_.beta_star.squaredNorm() * model_.weights().squaredNorm();
    energy_residual_ = std::max(energy_residual_, std::fabs(V_.squaredNorm() - V2_before - rhs) / std::max(1.0, V2_before));
  }
  if (invariant_kind_ != Invariant::none) invariant_drift_ = std::max(invariant_drift_, std::fabs(conserved(invariant_kind_, a_) - invariant0_));
  if (watch_logits_ || watch_simplex_) watch_signs();
}

void GradientDescent::watch_signs() {
  for (int i = 0; i < c_.T; ++i) {
    const double sg = a_(i) > 0 ? 1.0 : a_(i) < 0 ? -1.0 : 0.0;
    if (!seen_[i] && sg != sign0_(i)) {
      seen_[i] = 1;
      add_event(watch_simplex_ ? "simplex_boundary" : "coordinate_zero", i,
                watch_simplex_ ? fmt::format("a_{} changed sign: s_{} = a_{}/Σa left the simplex's sign pattern", i, i, i)
                               : fmt::format("logit a_{} crossed 0", i));
    }
  }
  if (watch_simplex_) {
    const double F = a_.sum();
    if (F * F_prev_ <= 0) add_event("normaliser_zero", -1, "the normaliser F = Σ a_j crossed 0");
    F_prev_ = F;
  }
}

void GradientDescent::advance_steps(long target) {
  const auto start = std::chrono::steady_clock::now();
  // The exact identities of a step are checked on the first step of every advance (one per
  // observation interval); the conservation laws and the loss on every step.
  bool first = true;
  while (steps_ < target && finite_) {
    step(first);
    first = false;
    if ((steps_ & 0xFFFF) == 0 && hdat::interrupted()) {
      interrupted_ = true;
      break;
    }
  }
  wall_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Measurement GradientDescent::measure() {
  Measurement m = model_.measure(V_, a_);
  if (value_logistic_) perp_ = std::max(perp_, ((V_ - in_.V0) - beta_hat_ * (beta_hat_.transpose() * (V_ - in_.V0))).norm());
  largest_logit_ = std::max(largest_logit_, m.logits.cwiseAbs().maxCoeff());
  largest_V_norm_ = std::max(largest_V_norm_, m.V_norm);
  return m;
}

Eigen::VectorXd GradientDescent::state() const {
  if (!finite_) return Eigen::VectorXd::Constant(flow_->size(), kNaN);
  return flow_->state_of(V_, a_);
}

Observables GradientDescent::observe() {
  const Observables o = besides_blocks(all_observables(c_, time(), measure()), flow_->layout());
  if (finite_) return o;
  Observables undefined;  // past a non-finite step nothing is measured
  for (std::size_t k = 0; k < o.size(); ++k) {
    if (k == o.blocks_at()) undefined.blocks_here();
    undefined.add(o.names()[k], kNaN);
  }
  return undefined;
}

DriftTerms GradientDescent::increment() {
  Eigen::Ref<Eigen::MatrixXd> gV(gV_);
  Eigen::Ref<Eigen::VectorXd> ga(ga_);
  model_.evaluate(V_, a_, &gV, &ga);
  const Eigen::MatrixXd V1 = V_ - lr_ * gV_;
  const Eigen::VectorXd a1 = a_ - lr_ * ga_;
  Eigen::VectorXd inc = (flow_->state_of(V1, a1) - flow_->state_of(V_, a_)) / lr_;
  // ΔQ/η = −(GᵀV + VᵀG) + η GᵀG exactly (G = ∂L/∂V): the flow's part is the first.
  if (flow_->layout().contains("Q")) flow_->layout().view(inc, "Q") -= lr_ * (gV_.transpose() * gV_);
  return DriftTerms().add("drift", std::move(inc));
}

nlohmann::json GradientDescent::invariants() const {
  nlohmann::json inv;
  inv["loss_increases"] = increases_;
  inv["worst_relative_loss_increase"] = worst_increase_;
  if (invariant_kind_ == Invariant::mean_a) inv["mean_a_drift"] = invariant_drift_;
  if (invariant_kind_ == Invariant::norm2_a) inv["a_norm2_drift"] = invariant_drift_;
  if (value_logistic_) {
    inv["V_minus_V0_orthogonal_to_beta"] = perp_;
    inv["energy_identity_residual"] = energy_residual_;
  }
  return inv;
}

std::vector<std::string> GradientDescent::identity_failures() const {
  std::vector<std::string> out;
  const double steps = static_cast<double>(steps_);
  // Round-off grows at most linearly with the steps, on the scale of the values.
  if (invariant_kind_ == Invariant::mean_a && !(invariant_drift_ <= 1e-12 + 1e-15 * steps * (1 + largest_logit_)))
    out.push_back(fmt::format("mean(a) drifted by {:.3g} at η = {:g} (conserved: 1ᵀC(s) = 0)", invariant_drift_, lr_));
  if (value_logistic_ && !(perp_ <= 1e-12 + 1e-15 * steps * (1 + largest_V_norm_)))
    out.push_back(fmt::format("V − V(0) left span(β*) by {:.3g} at η = {:g}", perp_, lr_));
  if (value_logistic_ && !(energy_residual_ <= 1e-12))
    out.push_back(fmt::format("|V|² identity violated by {:.3g} at η = {:g}", energy_residual_, lr_));
  return out;
}

nlohmann::json GradientDescent::record() const {
  return {{"steps", steps_},
          {"finite", finite_},
          {"wall_seconds", wall_seconds_},
          {"steps_per_second", wall_seconds_ > 0 ? static_cast<double>(steps_) / wall_seconds_ : 0.0},
          {"invariants", invariants()},
          {"events", events_},
          {"identity_failures", identity_failures()}};
}

Table GdRun::table(const Config& c) const {
  Table t = observation_table(c, observations);
  t.add_column("step", std::vector<double>(steps.begin(), steps.begin() + static_cast<long>(observations.size())));
  return t;
}

GdRun gradient_descent(const Config& c, const Instance& in, const GdOptions& opt) {
  const auto start = std::chrono::steady_clock::now();
  GradientDescent gd(c, in, opt.lr);
  GdRun run;
  run.steps = steps_of(opt.times, opt.lr);
  const long last = run.steps.empty() ? 0 : run.steps.back();
  Progress progress("gradient descent", last, !opt.quiet && last > 2'000'000);
  for (long k : run.steps) {
    const long before = gd.steps();
    gd.advance_steps(k);
    progress.advance(gd.steps() - before);
    if (!gd.finite() || gd.interrupted()) break;
    run.observations.push_back(observation(c, static_cast<double>(k) * opt.lr, gd.measure()));
  }
  progress.finish();
  run.steps_done = gd.steps();
  run.finite = gd.finite();
  run.interrupted = gd.interrupted();
  run.record = gd.record();
  run.invariants = gd.invariants();
  run.events = gd.events();
  run.V_final = gd.V();
  run.a_final = gd.a();
  run.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

}  // namespace hdat::polarization
