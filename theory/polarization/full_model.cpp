#include "hdat/polarization/full_model.hpp"

#include <algorithm>

namespace hdat::polarization {

double output_loss(Loss loss, const Instance& in, const ConstVec& beta, Vec g) {
  switch (loss) {
    case Loss::logistic: {  // ℓ = log(1 + e^{−m}), m = <β*, β>; ∂ℓ/∂β = −γ β*, γ = 1/(1 + e^m)
      const double m = in.beta_star.dot(beta);
      g = -logistic(-m) * in.beta_star;
      return softplus(-m);
    }
    case Loss::square: {  // ℓ = ½|β − β*|²
      g = beta - in.beta_star;
      return 0.5 * g.squaredNorm();
    }
    case Loss::regression: {  // ℓ = |y − Xβ|² (no ½: the spec's and the authors' convention)
      const Eigen::VectorXd r = in.y - in.X * beta;
      g = -2.0 * (in.X.transpose() * r);
      return r.squaredNorm();
    }
    case Loss::xent: {  // ℓ = −Σ p*_k log q_k, q = softmax(β); ∂ℓ/∂β = q − p*
      const double lse = log_sum_exp(beta);
      g = (beta.array() - lse).exp().matrix() - in.p_star;
      return -(in.p_star.array() * (beta.array() - lse)).sum();
    }
  }
  return 0;
}

FullModel::FullModel(const Config& c, const Instance& in) : c_(&c), in_(&in) {
  logits_.resize(c.T);
  s_.resize(c.T);
  beta_.resize(c.d);
  g_beta_.resize(c.d);
  g_s_.resize(c.T);
  g_logits_.resize(c.T);
}

double FullModel::evaluate(const ConstMat& V, const ConstVec& a, Mat* gV, Vec* ga) {
  const bool tied = c_->architecture == Architecture::tied;
  if (tied) logits_.noalias() = V * a;
  else logits_ = a;
  F_ = polarization::weights(c_->normalization, logits_, s_);
  beta_.noalias() = V * s_;
  loss_ = output_loss(c_->loss, *in_, beta_, g_beta_);
  if (!gV && !ga) return loss_;
  // Chain rule: ∂L/∂s = Vᵀ g_β, ∂L/∂logits = Jᵀ ∂L/∂s.
  g_s_.noalias() = V.transpose() * g_beta_;
  vjp(c_->normalization, logits_, s_, F_, g_s_, g_logits_);
  if (gV) {
    gV->noalias() = g_beta_ * s_.transpose();
    if (tied) gV->noalias() += g_logits_ * a.transpose();  // logits = U a: the second path through U
  }
  if (ga) {
    if (tied) ga->noalias() = V.transpose() * g_logits_;
    else *ga = g_logits_;
  }
  return loss_;
}

Measurement FullModel::measure(const ConstMat& V, const ConstVec& a) {
  Measurement m;
  m.loss = evaluate(V, a);
  m.logits = logits_;
  m.s = s_;
  m.normaliser = F_;
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

}  // namespace hdat::polarization
