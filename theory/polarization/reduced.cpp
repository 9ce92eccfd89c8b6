#include "hdat/polarization/reduced.hpp"

#include <fmt/format.h>

#include <cmath>

#include "hdat/polarization/normalization.hpp"

namespace hdat::polarization {

namespace {

// A vector block of a flat state (the layout's named offset, not a hand-computed one).
auto vector_block(const ConstVecRef& x, const StateLayout& layout, const std::string& name) {
  const Block& b = layout.block(name);
  return x.segment(b.offset, b.size());
}
auto vector_block(VecRef x, const StateLayout& layout, const std::string& name) {
  const Block& b = layout.block(name);
  return x.segment(b.offset, b.size());
}

}  // namespace

OdeSystem FlowSystem::system() const {
  return [this](const ConstVecRef& x, VecRef dx, double) { rhs(x, dx); };
}

// ---------------------------------------------------------------------------------------------
// Logistic loss: (u, a), derivation.md §2.

ReducedLogistic::ReducedLogistic(const Config& c, const Instance& in)
    : T_(c.T), b_(c.b()), rho_(c.replicator_sign), norm_(c.normalization), beta_star_(in.beta_star), u0_(in.u0), a0_(in.a0) {
  layout_.add_vector("u", T_).add_vector("a", T_);
  kind_ = FlowKind::reduced;
  col0_sq_ = in.V0.colwise().squaredNorm().transpose();
  V0_sq_ = in.V0.squaredNorm();
  s_.resize(T_);
  g_.resize(T_);
}

Eigen::VectorXd ReducedLogistic::initial_state() const {
  Eigen::VectorXd x(layout_.size());
  layout_.view(x, "u") = u0_;
  layout_.view(x, "a") = a0_;
  return x;
}

Eigen::VectorXd ReducedLogistic::state_of(const Eigen::MatrixXd& V, const Eigen::VectorXd& a) const {
  Eigen::VectorXd x(layout_.size());
  layout_.view(x, "u") = V.transpose() * beta_star_;
  layout_.view(x, "a") = a;
  return x;
}

void ReducedLogistic::rhs(const ConstVecRef& x, VecRef dx) const {
  const auto u = vector_block(x, layout_, "u");
  const auto a = vector_block(x, layout_, "a");
  const double F = weights(norm_, a, s_);
  const double z = u.dot(s_);
  const double gamma = logistic(-z);  // γ = −ℓ'(z) = 1/(1 + e^z)
  vector_block(dx, layout_, "u") = b_ * gamma * s_;
  vjp(norm_, a, s_, F, u, g_);  // Jᵀ u (= C(s) u = s ⊙ (u − s·u) for softmax)
  vector_block(dx, layout_, "a") = rho_ * gamma * g_;
}

Measurement ReducedLogistic::measure(const Eigen::VectorXd& x) const {
  Measurement m;
  m.u = layout_.view(x, "u");
  m.logits = layout_.view(x, "a");
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
// Square loss: (u, a, Q), derivation.md §3.

ReducedSquare::ReducedSquare(const Config& c, const Instance& in)
    : T_(c.T), b_(c.b()), rho_(c.replicator_sign), norm_(c.normalization), beta_star_(in.beta_star), u0_(in.u0), a0_(in.a0), Q0_(in.Q0) {
  layout_.add_vector("u", T_).add_vector("a", T_).add("Q", T_, T_, /*symmetric=*/true);
  kind_ = FlowKind::reduced;
  s_.resize(T_);
  w_.resize(T_);
  g_.resize(T_);
}

Eigen::VectorXd ReducedSquare::initial_state() const {
  Eigen::VectorXd x(layout_.size());
  layout_.view(x, "u") = u0_;
  layout_.view(x, "a") = a0_;
  layout_.view(x, "Q") = Q0_;
  return x;
}

Eigen::VectorXd ReducedSquare::state_of(const Eigen::MatrixXd& V, const Eigen::VectorXd& a) const {
  Eigen::VectorXd x(layout_.size());
  layout_.view(x, "u") = V.transpose() * beta_star_;
  layout_.view(x, "a") = a;
  layout_.view(x, "Q") = V.transpose() * V;
  return x;
}

void ReducedSquare::rhs(const ConstVecRef& x, VecRef dx) const {
  const auto u = vector_block(x, layout_, "u");
  const auto a = vector_block(x, layout_, "a");
  const auto Q = layout_.view(x.data(), "Q");
  const double F = weights(norm_, a, s_);
  w_.noalias() = u - Q * s_;  // w = Vᵀ r, r = β* − V s
  vector_block(dx, layout_, "u") = s_ * (b_ - u.dot(s_));
  auto dQ = layout_.view(dx.data(), "Q");
  dQ.noalias() = s_ * w_.transpose();
  dQ.noalias() += w_ * s_.transpose();
  vjp(norm_, a, s_, F, w_, g_);
  vector_block(dx, layout_, "a") = rho_ * g_;
}

Measurement ReducedSquare::measure(const Eigen::VectorXd& x) const {
  Measurement m;
  m.u = layout_.view(x, "u");
  m.Q = layout_.view(x, "Q");
  m.logits = layout_.view(x, "a");
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
// Full-parameter flow: (a, V) or (a, U), derivation.md §6.

FullFlow::FullFlow(const Config& c, const Instance& in) : c_(&c), in_(&in), rho_(c.replicator_sign), model_(c, in) {
  layout_.add_vector("a", c.T).add(weights_name(), c.d, c.T);
  kind_ = FlowKind::full;
}

const std::string& FullFlow::weights_name() const {
  static const std::string V = "V", U = "U";
  return c_->architecture == Architecture::tied ? U : V;
}

Eigen::VectorXd FullFlow::initial_state() const { return state_of(in_->V0, in_->a0); }

Eigen::VectorXd FullFlow::state_of(const Eigen::MatrixXd& V, const Eigen::VectorXd& a) const {
  Eigen::VectorXd x(layout_.size());
  layout_.view(x, "a") = a;
  layout_.view(x, weights_name()) = V;
  return x;
}

void FullFlow::rhs(const ConstVecRef& x, VecRef dx) const {
  Eigen::Ref<Eigen::MatrixXd> gV(layout_.view(dx.data(), weights_name()));
  Vec ga(vector_block(dx, layout_, "a"));
  model_.evaluate(layout_.view(x.data(), weights_name()), vector_block(x, layout_, "a"), &gV, &ga);
  gV = -gV;
  ga *= -rho_;
}

Measurement FullFlow::measure(const Eigen::VectorXd& x) const {
  return model_.measure(layout_.view(x.data(), weights_name()), vector_block(ConstVecRef(x), layout_, "a"));
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
  o.component_name = [layout = flow.layout()](int k) { return layout.component_name(k); };
  return o;
}

}  // namespace hdat::polarization
