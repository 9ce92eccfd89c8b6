#pragma once
// The D → ∞ order-parameter ODE of online SGD for the specialization model (derivation.md):
//
//   dM_hf/dt  = −η E[ Σ_ℓ g_hℓ (λ_fℓ − κ_h M_hf) ]
//   dR_hh'/dt = −η E[ Σ_ℓ g_h'ℓ (χ_hℓ − κ_h' R_hh') + g_hℓ (χ_h'ℓ − κ_h R_hh') ]
//               + (η²/B) E[ Σ_ℓ (|a|² + Δ²) J_{:,hℓ}·J_{:,h'ℓ} + 2 g_hℓ g_h'ℓ ]
//   db_h/dt   = −η_b E[ Σ_ℓ g_hℓ ]          (train_bias; no η_b² term at this scaling, derivation.md §4)
//
// with a = e_ε − w, g_hℓ = ∂e/∂χ_hℓ = −a·J_{:,hℓ}, e = ½(Δ² + |a|²), and the local fields
// λ_ℓ ~ N(θ δ_ℓε, I_F), χ_ℓ = M λ_ℓ + C ζ_ℓ, C Cᵀ = R − M Mᵀ. Expectations run over a FIXED sample
// set (common random numbers or randomised Sobol): the right-hand side is a smooth deterministic
// function of (M, R), and an adaptive integrator applies. The sample set is closed under
// permutations of the heads (for H! ≤ 120), so exchangeable heads stay exactly exchangeable: the
// symmetric manifold is invariant, as it is for the exact expectation.
#include <Eigen/Dense>
#include <memory>
#include <vector>

#include "hdat/core/gaussian.hpp"
#include "hdat/core/integrate.hpp"
#include "hdat/core/model.hpp"
#include "hdat/specialization/model.hpp"

namespace hdat::specialization {

struct FlowOptions {
  long samples = 20000;
  Sampling sampling = Sampling::sobol;
  std::uint64_t seed = 0;
  std::uint64_t replica = 0;  ///< independent sample sets of one seed (validate's theory replicas)
  int threads = 0;
  bool symmetrize_heads = true;  ///< close the sample set under head permutations (when H! ≤ 120)
  /// Testing only (key break_term): "eta2" drops the η² term; "sign_gg" flips the sign of its 2 g g part;
  /// "bias_sign" flips the sign of the bias's drift; "bias_logit" leaves b out of the logits.
  std::string break_term = "none";
};

/// The expectations that make up the right-hand side at one state, with standard errors.
struct FlowTerms {
  Eigen::MatrixXd dM, dM_se;              ///< H x F
  Eigen::MatrixXd dR_drift, dR_drift_se;  ///< H x H: the terms linear in η
  Eigen::MatrixXd dR_noise, dR_noise_se;  ///< H x H: the η²/B term (SGD noise)
  Eigen::VectorXd db, db_se;              ///< H: the bias's drift −η_b E[Σ_ℓ g_hℓ] (zero unless train_bias)
  double risk = 0, risk_se = 0;           ///< population risk E[½(Δ² + |a|²)]
  double psd_violation = 0;               ///< most negative eigenvalue of R − M Mᵀ (clamped to 0)
};

/// The total attention weight of each head, and its weight on the signal token, on the sequences of
/// each support point θ^k of an enumerated prior (the per-sequence gating of softmax1: a head is
/// "off" on sequences whose feature it does not carry). Rows k, columns h.
struct HeadGating {
  Eigen::MatrixXd thetas;                          ///< K x F: the support points
  Eigen::VectorXd probs;                           ///< their probabilities
  Eigen::MatrixXd total, total_se;                 ///< E[Σ_ℓ a_hℓ | θ^k]
  Eigen::MatrixXd on_signal, on_signal_se;         ///< E[a_hε | θ^k]
};

/// The theory of the model (hdat::OdeTheory): state x = (M, R[, b]) packed with setup.layout().
class OrderParameterFlow : public OdeTheory {
 public:
  OrderParameterFlow(const Config& setup, const FlowOptions& options);

  /// dx/dt. An Odeint system.
  void operator()(const ConstVecRef& x, VecRef dxdt, double t) const override;
  /// The drift in its terms: "eta" (linear in η: dM and the drift of R), "eta2" (the η²/B SGD-noise
  /// term of R) and, with train_bias, "bias" (the drift of b), with standard errors.
  DriftTerms terms(const Eigen::VectorXd& x, double t) const override;
  /// The population risk, with its standard error.
  Observables observe(const Eigen::VectorXd& x, double t) const override;
  /// Every term at (M, R) and biases b, with standard errors.
  FlowTerms terms(const Eigen::MatrixXd& M, const Eigen::MatrixXd& R, const Eigen::VectorXd& b, bool with_se = true) const;
  /// The same at learning rate `eta` (a schedule's value) instead of the setup's.
  FlowTerms terms_at(const Eigen::MatrixXd& M, const Eigen::MatrixXd& R, const Eigen::VectorXd& b, bool with_se, double eta) const;
  /// The drift f at state x and learning rate η, and its EXACT derivatives on the same fixed sample
  /// set (hdat optimize): ∂f/∂x (n × n) and ∂f/∂η (n), by forward differentiation of every
  /// per-sample quantity (dual numbers through the attention, the fields and C = (R − MMᵀ)^{1/2}).
  void drift_derivatives(const Eigen::VectorXd& x, double eta, Eigen::VectorXd& f, Eigen::MatrixXd* f_x, Eigen::VectorXd* f_eta) const;
  /// The population risk at x and its exact gradient ∂ℛ/∂x on the same sample set.
  double risk_gradient(const Eigen::VectorXd& x, Eigen::VectorXd* r_x) const;
  /// The same with the fixed bias (a logic error when the bias is trained: then b is part of the state).
  FlowTerms terms(const Eigen::MatrixXd& M, const Eigen::MatrixXd& R, bool with_se = true) const;
  /// Population risk ℛ(M, R, b) and its standard error (cheaper than terms()).
  std::pair<double, double> risk(const Eigen::MatrixXd& M, const Eigen::MatrixXd& R, const Eigen::VectorXd& b) const;
  std::pair<double, double> risk(const Eigen::MatrixXd& M, const Eigen::MatrixXd& R) const;  ///< fixed bias
  /// Risk of the model with only `kept` heads (pruning; for bayes they leave the normalisation too).
  std::pair<double, double> risk_with_heads(const Eigen::MatrixXd& M, const Eigen::MatrixXd& R, const Eigen::VectorXd& b,
                                            const std::vector<int>& kept) const;
  /// Per-sequence gating of the heads at (M, R, b) (enumerated priors only: discrete, signs with F ≤ 3).
  HeadGating gating(const Eigen::MatrixXd& M, const Eigen::MatrixXd& R, const Eigen::VectorXd& b) const;
  bool enumerated_prior() const { return !theta_from_sample_; }

  const Config& setup() const { return setup_; }
  const StateLayout& layout() const override { return layout_; }
  long evaluations_per_expectation() const;  ///< samples × head permutations × prior points
  int permutations() const { return static_cast<int>(perms_.size()); }
  const GaussianSampleSet& samples() const { return *samples_; }
  const FlowOptions& options() const { return options_; }

 private:
  /// The attention of the heads with overlaps R and biases b (their logit offsets; break_term=bias_logit drops b).
  Attention attention_at(const Config& setup, const Eigen::MatrixXd& R, const Eigen::VectorXd& b) const;
  bool keeps_noise() const;     ///< false with break_term=eta2
  double bias_rate() const;     ///< η_b of the drift of b (0 unless train_bias)
  Config setup_;
  FlowOptions options_;
  StateLayout layout_;
  std::shared_ptr<GaussianSampleSet> samples_;
  std::vector<std::vector<int>> perms_;
  Eigen::MatrixXd thetas_;   ///< enumerated prior points (discrete, small signs): K x F
  Eigen::VectorXd theta_w_;  ///< their weights
  bool theta_from_sample_ = false;
};

/// Principal square root of the PSD part of S (negative eigenvalues clamped): smooth on PD
/// matrices and equivariant under head permutations. Writes the most negative eigenvalue to `lowest`.
Eigen::MatrixXd psd_sqrt(const Eigen::MatrixXd& S, double* lowest = nullptr);
/// Its derivative along dS (symmetric): X with X C + C X = dS, C = psd_sqrt(S), solved in S's
/// eigenbasis, X̃_ij = dS̃_ij / (√λ_i + √λ_j) (0 where both vanish).
Eigen::MatrixXd psd_sqrt_derivative(const Eigen::MatrixXd& S, const Eigen::MatrixXd& dS);

}  // namespace hdat::specialization
