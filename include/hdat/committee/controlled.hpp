#pragma once
// The committee's controllable parameters for `hdat optimize` (hdat/core/control.hpp): the learning
// rate η and the dropout keep-probability r over time, and the test-time output scale p_f.
//
// The drift is written here index by index, exactly as derivation.md §2 and §9 state it, for any
// scalar type: with double it is the reference the bulk right-hand side (ode.cpp) is tested against;
// with a dual number (hdat/core/autodiff.hpp) it gives the exact Jacobians ∂f/∂x and ∂f/∂(η, r) that
// the optimiser's sensitivities need. The Gaussian integrals are the templates of integrals.hpp.
#include <Eigen/Dense>
#include <vector>

#include "hdat/committee/integrals.hpp"
#include "hdat/committee/model.hpp"
#include "hdat/core/control.hpp"

namespace hdat::committee {

/// f = dx/dt at state x (Config::layout()) for learning rate `eta` and keep-probability `r`:
///   dR_in = η v_i Σ_c s_c E[μ_i μ_c] I3(i, n*, c) − wd R_in
///   dQ_ik = η Σ_c s_c (v_i E[μ_i μ_c] I3(i,k,c) + v_k E[μ_k μ_c] I3(k,i,c)) − 2 wd Q_ik
///           + η² v_i v_k [Σ_cd s_c s_d E[μ_i μ_k μ_c μ_d] I4(i,k,c,d) + σ² E[μ_i μ_k] J2(i,k)]
///   dv_i  = η_v Σ_c s_c E[μ_i μ_c] I2(i, c)          (train_v),    dT = 0,
/// s = (−v, v*), the masks' moments r^(distinct students) (mask_moment). The theory's break_term is
/// not applied (this is the correct theory).
template <class S>
void drift_by_index(const Config& st, const StateLayout& layout, const S* x, const S& eta, const S& r, S* f) {
  const int K = st.K, M = st.M, L = K + M, n = layout.size();
  const int oQ = layout.block("Q").offset, oR = layout.block("R").offset, oT = layout.block("T").offset;
  const int ov = st.train_v ? layout.block("v").offset : -1;
  const Activation g = st.activation;
  const S zero = r * 0.0;  // a constant with the derivative slots of the inputs
  Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic> C(L, L);
  for (int k = 0; k < K; ++k)
    for (int i = 0; i < K; ++i) C(i, k) = x[oQ + i + K * k];
  for (int m = 0; m < M; ++m)
    for (int i = 0; i < K; ++i) C(i, K + m) = C(K + m, i) = x[oR + i + K * m];
  for (int m = 0; m < M; ++m)
    for (int j = 0; j < M; ++j) C(K + j, K + m) = x[oT + j + M * m];
  std::vector<S> s(static_cast<std::size_t>(L), zero);
  for (int k = 0; k < K; ++k) {
    const S v = st.train_v ? S(x[ov + k]) : S(zero + st.v0(k));
    s[k] = -v;
  }
  for (int m = 0; m < M; ++m) s[K + m] = zero + st.vstar(m);
  for (int k = 0; k < n; ++k) f[k] = zero;

  for (int m = 0; m < M; ++m)
    for (int i = 0; i < K; ++i) {
      S sum = zero;
      for (int c = 0; c < L; ++c) sum += s[c] * mask_moment(r, K, i, c) * I3_of<S>(g, C, i, K + m, c);
      f[oR + i + K * m] = eta * (-s[i]) * sum - st.wd * C(i, K + m);
    }
  for (int k = 0; k < K; ++k)
    for (int i = 0; i <= k; ++i) {
      S lin = zero, sq = zero;
      for (int c = 0; c < L; ++c) {
        lin += (-s[i]) * s[c] * mask_moment(r, K, i, c) * I3_of<S>(g, C, i, k, c);
        lin += (-s[k]) * s[c] * mask_moment(r, K, k, c) * I3_of<S>(g, C, k, i, c);
        for (int d = 0; d < L; ++d) sq += s[c] * s[d] * mask_moment(r, K, i, k, c, d) * I4_of<S>(g, C, i, k, c, d);
      }
      sq += st.noise * st.noise * mask_moment(r, K, i, k) * J2_of<S>(g, C, i, k);
      const S value = eta * lin + eta * eta * s[i] * s[k] * sq - 2 * st.wd * C(i, k);
      f[oQ + i + K * k] = value;
      f[oQ + k + K * i] = value;
    }
  if (st.train_v)
    for (int i = 0; i < K; ++i) {
      S sum = zero;
      for (int c = 0; c < L; ++c) sum += s[c] * mask_moment(r, K, i, c) * I2_of<S>(g, C, i, c);
      f[ov + i] = st.eta_v * sum;
    }
}

/// The test error ½ E[(p_f Σ_k v_k g(λ_k) − Σ_m v*_m g(ν_m))²] (every unit kept, output scaled by
/// p_f, noise excluded) at state x, for any scalar type.
template <class S>
S test_error_by_index(const Config& st, const StateLayout& layout, const S* x, const S& p_f) {
  const int K = st.K, M = st.M, L = K + M;
  const int oQ = layout.block("Q").offset, oR = layout.block("R").offset, oT = layout.block("T").offset;
  const int ov = st.train_v ? layout.block("v").offset : -1;
  const S zero = p_f * 0.0;
  Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic> C(L, L);
  for (int k = 0; k < K; ++k)
    for (int i = 0; i < K; ++i) C(i, k) = x[oQ + i + K * k];
  for (int m = 0; m < M; ++m)
    for (int i = 0; i < K; ++i) C(i, K + m) = C(K + m, i) = x[oR + i + K * m];
  for (int m = 0; m < M; ++m)
    for (int j = 0; j < M; ++j) C(K + j, K + m) = x[oT + j + M * m];
  std::vector<S> s(static_cast<std::size_t>(L), zero);
  for (int k = 0; k < K; ++k) {
    const S v = st.train_v ? S(x[ov + k]) : S(zero + st.v0(k));
    s[k] = -p_f * v;
  }
  for (int m = 0; m < M; ++m) s[K + m] = zero + st.vstar(m);
  S sum = zero;
  for (int c = 0; c < L; ++c)
    for (int d = 0; d < L; ++d) sum += s[c] * s[d] * I2_of<S>(st.activation, C, c, d);
  return 0.5 * sum;
}

/// The committee's ControlledTheory: controls (eta, dropout_keep, test_scale).
class CommitteeControlled final : public ControlledTheory {
 public:
  explicit CommitteeControlled(const Config& setup);
  const StateLayout& layout() const override { return layout_; }
  const std::vector<ControlSpec>& controls() const override { return controls_; }
  Eigen::VectorXd defaults() const override;
  void drift(const Eigen::VectorXd& x, const Eigen::VectorXd& u, Eigen::VectorXd& f, Eigen::MatrixXd* f_x,
             Eigen::MatrixXd* f_u) const override;
  std::string risk_name() const override { return "eg"; }
  double risk(const Eigen::VectorXd& x, const Eigen::VectorXd& u, Eigen::VectorXd* r_x, Eigen::VectorXd* r_u) const override;

 private:
  Config setup_;
  StateLayout layout_;
  std::vector<ControlSpec> controls_;
};

}  // namespace hdat::committee
