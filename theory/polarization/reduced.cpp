#include "hdat/polarization/reduced.hpp"

#include <fmt/format.h>

#include <cmath>

#include "hdat/polarization/normalization.hpp"

namespace hdat::polarization {

OdeSystem FlowSystem::system() {
  return [this](const ConstVecRef& x, VecRef dx, double) { rhs(x, dx); };
}

// ---------------------------------------------------------------------------------------------
// Logistic loss: (u, a), derivation.md §2.

ReducedLogistic::ReducedLogistic(const Config& c, const Instance& in)
    : T_(c.T), b_(c.b()), rho_(c.replicator_sign), norm_(c.normalization), u0_(in.u0), a0_(in.a0) {
  layout_.add("u", T_, 1).add("a", T_, 1);
  kind_ = FlowKind::reduced;
  col0_sq_ = in.V0.colwise().squaredNorm().transpose();
  V0_sq_ = in.V0.squaredNorm();
  s_.resize(T_);
  g_.resize(T_);
}

Eigen::VectorXd ReducedLogistic::initial_state() const {
  Eigen::VectorXd x(2 * T_);
  x << u0_, a0_;
  return x;
}

void ReducedLogistic::rhs(const ConstVecRef& x, VecRef dx) {
  const auto u = x.segment(0, T_);
  const auto a = x.segment(T_, T_);
  const double F = weights(norm_, a, s_);
  const double z = u.dot(s_);
  const double gamma = logistic(-z);  // γ = −ℓ'(z) = 1/(1 + e^z)
  dx.segment(0, T_) = b_ * gamma * s_;
  vjp(norm_, a, s_, F, u, g_);  // Jᵀ u (= C(s) u = s ⊙ (u − s·u) for softmax)
  dx.segment(T_, T_) = rho_ * gamma * g_;
}

Measured ReducedLogistic::measure(const Eigen::VectorXd& x) {
  Measured m;
  m.u = x.segment(0, T_);
  m.logits = x.segment(T_, T_);
  m.s.resize(T_);
  m.normaliser = weights(norm_, m.logits, m.s);
  m.z = m.u.dot(m.s);
  m.loss = softplus(-m.z);
  // V = V(0) + β*(u − u(0))ᵀ/b, so |V|² = |V(0)|² + (|u|² − |u(0)|²)/b, column by column too.
  m.V_norm = std::sqrt(V0_sq_ + (m.u.squaredNorm() - u0_.squaredNorm()) / b_);
  const int top = top_index(m.s);
  m.top_col_norm = 0;
  m.max_other_col_norm = 0;
  for (int j = 0; j < T_; ++j) {
    const double cn = std::sqrt(col0_sq_(j) + (m.u(j) * m.u(j) - u0_(j) * u0_(j)) / b_);
    if (j == top) m.top_col_norm = cn;
    else m.max_other_col_norm = std::max(m.max_other_col_norm, cn);
  }
  return m;
}

// ---------------------------------------------------------------------------------------------
// Square loss: (u, Q, a), derivation.md §3.

ReducedSquare::ReducedSquare(const Config& c, const Instance& in)
    : T_(c.T), b_(c.b()), rho_(c.replicator_sign), norm_(c.normalization), u0_(in.u0), a0_(in.a0), Q0_(in.Q0) {
  layout_.add("u", T_, 1).add("Q", T_, T_, /*symmetric=*/true).add("a", T_, 1);
  kind_ = FlowKind::reduced;
  s_.resize(T_);
  w_.resize(T_);
  g_.resize(T_);
}

Eigen::VectorXd ReducedSquare::initial_state() const {
  Eigen::VectorXd x(layout_.size());
  x.segment(0, T_) = u0_;
  Eigen::Map<Eigen::MatrixXd>(x.data() + T_, T_, T_) = Q0_;
  x.segment(T_ + T_ * T_, T_) = a0_;
  return x;
}

void ReducedSquare::rhs(const ConstVecRef& x, VecRef dx) {
  const auto u = x.segment(0, T_);
  Eigen::Map<const Eigen::MatrixXd> Q(x.data() + T_, T_, T_);
  const auto a = x.segment(T_ + T_ * T_, T_);
  const double F = weights(norm_, a, s_);
  w_.noalias() = u - Q * s_;  // w = Vᵀ r, r = β* − V s
  dx.segment(0, T_) = s_ * (b_ - u.dot(s_));
  Eigen::Map<Eigen::MatrixXd> dQ(dx.data() + T_, T_, T_);
  dQ.noalias() = s_ * w_.transpose();
  dQ.noalias() += w_ * s_.transpose();
  vjp(norm_, a, s_, F, w_, g_);
  dx.segment(T_ + T_ * T_, T_) = rho_ * g_;
}

Measured ReducedSquare::measure(const Eigen::VectorXd& x) {
  Measured m;
  m.u = x.segment(0, T_);
  m.Q = Eigen::Map<const Eigen::MatrixXd>(x.data() + T_, T_, T_);
  m.logits = x.segment(T_ + T_ * T_, T_);
  m.s.resize(T_);
  m.normaliser = weights(norm_, m.logits, m.s);
  m.z = m.u.dot(m.s);
  // ½|β* − V s|² = ½(b − 2 u·s + sᵀQs): exact algebra; below ~1e-16 b it is round-off.
  m.loss = 0.5 * (b_ - 2.0 * m.z + m.s.dot(m.Q * m.s));
  m.V_norm = std::sqrt(m.Q.trace());
  const int top = top_index(m.s);
  m.top_col_norm = std::sqrt(m.Q(top, top));
  m.max_other_col_norm = 0;
  for (int j = 0; j < T_; ++j)
    if (j != top) m.max_other_col_norm = std::max(m.max_other_col_norm, std::sqrt(m.Q(j, j)));
  return m;
}

// ---------------------------------------------------------------------------------------------
// Full-parameter flow: (V, a) or (U, a), derivation.md §6.

FullFlow::FullFlow(const Config& c, const Instance& in) : c_(&c), in_(&in), model_(c, in) {
  layout_.add(c.architecture == Architecture::tied ? "U" : "V", c.d, c.T).add("a", c.T, 1);
  kind_ = FlowKind::full;
}

Eigen::VectorXd FullFlow::initial_state() const {
  Eigen::VectorXd x(layout_.size());
  Eigen::Map<Eigen::MatrixXd>(x.data(), c_->d, c_->T) = in_->V0;
  x.segment(c_->d * c_->T, c_->T) = in_->a0;
  return x;
}

void FullFlow::rhs(const ConstVecRef& x, VecRef dx) {
  const int dT = c_->d * c_->T;
  Eigen::Map<const Eigen::MatrixXd> V(x.data(), c_->d, c_->T);
  Eigen::Map<Eigen::MatrixXd> gV(dx.data(), c_->d, c_->T);
  Eigen::Ref<Eigen::MatrixXd> gVref(gV);
  Vec ga(dx.segment(dT, c_->T));
  model_.evaluate(V, x.segment(dT, c_->T), &gVref, &ga);
  dx = -dx;
}

Measured FullFlow::measure(const Eigen::VectorXd& x) {
  const int dT = c_->d * c_->T;
  Eigen::Map<const Eigen::MatrixXd> V(x.data(), c_->d, c_->T);
  Measured m;
  m.loss = model_.evaluate(V, x.segment(dT, c_->T));
  m.logits = model_.logits();
  m.s = model_.weights();
  m.normaliser = model_.normaliser();
  m.u = V.transpose() * in_->direction;
  m.z = m.u.dot(m.s);
  m.V_norm = V.norm();
  const int top = top_index(m.s);
  m.top_col_norm = V.col(top).norm();
  m.max_other_col_norm = 0;
  for (int j = 0; j < c_->T; ++j)
    if (j != top) m.max_other_col_norm = std::max(m.max_other_col_norm, V.col(j).norm());
  if (has_Q_columns(*c_)) m.Q = V.transpose() * V;
  return m;
}

std::unique_ptr<FlowSystem> make_flow(const Config& c, const Instance& in) {
  if (c.flow == FlowKind::reduced) {
    if (c.loss == Loss::logistic) return std::make_unique<ReducedLogistic>(c, in);
    return std::make_unique<ReducedSquare>(c, in);
  }
  return std::make_unique<FullFlow>(c, in);
}

std::vector<EventCondition> event_conditions(const Config& c, const FlowSystem& flow) {
  std::vector<EventCondition> out;
  const int off = flow.logits_offset();
  if (off < 0) return out;
  const int T = c.T;
  switch (c.normalization) {
    case Normalization::sum:
      for (int i = 0; i < T; ++i)
        out.push_back({"simplex_boundary", i, EventAction::report,
                       [off, T, i](const Eigen::VectorXd& x) { return x(off + i) / x.segment(off, T).sum(); }, -1,
                       fmt::format("weight s_{} = a_{}/Σa changed sign: the weights left (or re-entered) the simplex", i, i)});
      out.push_back({"normaliser_zero", -1, EventAction::stop, [off, T](const Eigen::VectorXd& x) { return x.segment(off, T).sum(); }, -1,
                     "the normaliser F = Σ a_j crossed 0: the weights are singular there (the flow ends)"});
      break;
    case Normalization::l1:
      for (int i = 0; i < T; ++i)
        out.push_back({"coordinate_zero", i, EventAction::freeze, [off, i](const Eigen::VectorXd& x) { return x(off + i); }, off + i,
                       fmt::format("logit a_{} reached 0 in finite time (|x| is not differentiable there): continued as the "
                                   "Filippov sliding solution a_{} = 0, s_{} = 0", i, i, i)});
      break;
    case Normalization::relu:
    case Normalization::elementwise_relu:
      for (int i = 0; i < T; ++i)
        out.push_back({"coordinate_zero", i, EventAction::freeze, [off, i](const Eigen::VectorXd& x) { return x(off + i); }, off + i,
                       fmt::format("logit a_{} reached 0 in finite time: s_{} = 0 and its gradient vanishes (a dead coordinate)", i, i)});
      break;
    default: break;
  }
  return out;
}

IntegrateOptions integrate_options(const Config& c, const FlowSystem& flow) {
  IntegrateOptions o;
  o.stepper = stepper_from_name(c.stepper);
  o.rtol = c.rtol;
  o.atol = c.atol;
  o.log_time = c.log_time;
  const StateLayout* layout = &flow.layout();
  o.component_name = [layout](int k) { return layout->component_name(k); };
  return o;
}

}  // namespace hdat::polarization
