#pragma once
// The sample side of the fixed point (derivation.md §8):
//   M(Σ, m, q) = E min_{H ∈ Sym_T} [ Tr(H − Ω)²/(4Σ) + L(Y, H) ],
// Ω and the teacher field h0 jointly Gaussian per entry e with covariance c_e [[q, m], [m, Q0]],
// labels Y = σ_β0(h0 + noise) (softmax; one-hot at the row argmax for hardmax labels) or
// Y = h0 + noise (linear), noise variance c_e Δ/2.
// Parametrisation (Z0 independent of the order parameters, so that only Ω moves):
//   h0_e = √(c_e Q0) u_e,  Ω_e = √c_e (a u_e + b w_e),  a = m/√Q0,  b = √(q − m²/Q0).
// Derivatives by the envelope theorem, with Stein's lemma on w (no 1/b, low variance):
//   ∂_Σ M = −E Σ_e w_e r_e²/(4Σ²)                      (r = H* − Ω)
//   ∂_q M = ½ E Σ_e c_e [∇²_Ω f]_ee,   ∇²_Ω f = D − D (∇²F)^{-1} D,  D = diag(w_e/(2Σ))
//   ∂_m M = E Σ_e (∂f/∂Ω_e) √c_e u_e/√Q0 − (m/Q0) E Σ_e c_e [∇²_Ω f]_ee
// and q̂ = −4α ∂_Σ M, m̂ = −2α ∂_m M, Σ̂ = 4α ∂_q M. Expectations over a fixed (common random
// numbers) randomised Sobol or Monte Carlo set; standard errors from the spread of its groups.
#include <Eigen/Dense>
#include <cstdint>
#include <vector>

#include "hdat/core/gaussian.hpp"
#include "hdat/tied_attention/prox.hpp"

namespace hdat::tied {

struct SampleSideOptions {
  long samples = 1 << 16;
  Sampling sampling = Sampling::sobol;
  int groups = 16;           ///< random shifts (RQMC) or independent blocks (MC): the error estimate
  std::uint64_t seed = 1;
  int threads = 0;           ///< 0: OpenMP default
  ProxOptions prox;
  /// Second start from the label-matching logits where the prox may be non-convex (1/(2Σ) < 5β²).
  /// Probed on every 16th sample; once a probe finds a lower minimum, applied to every sample.
  bool multistart = true;
  bool warm_start = true;    ///< reuse each sample's previous minimiser
  /// Linear channel: use the closed form (Gaussian expectations in closed form, no sampling).
  bool exact_linear = true;
  /// For tests that must see a comparison fail: multiplies ∂_q M (hence Σ̂). 1 = correct.
  double broken_dq_factor = 1.0;
  /// Labels one-hot at each row's argmax of h0 + noise (channel=hardmax, β0 → ∞) instead of σ_β0.
  bool hardmax_labels = false;
};

struct SampleSideResult {
  double M = 0, dM_dSigma = 0, dM_dm = 0, dM_dq = 0;
  double qhat = 0, mhat = 0, Sigmahat = 0;
  double test_error = 0, test_error_clean = 0, train_loss = 0;
  double se_test_error = 0, se_test_error_clean = 0, se_train_loss = 0;
  Eigen::Matrix3d hat_cov = Eigen::Matrix3d::Zero();  ///< covariance of the estimates of (q̂, m̂, Σ̂)
  double mean_prox_iterations = 0;
  long multistart_switches = 0;  ///< samples where the second start won
  long unconverged = 0;          ///< samples whose prox did not meet its tolerance
};

class SampleSide {
 public:
  SampleSide(int T, Channel channel, double beta, double beta0, double Q0, double noise, SampleSideOptions options = {});
  /// The sample side at (Σ, m, q) for sample ratio α (α only scales the hats).
  SampleSideResult evaluate(double alpha, double Sigma, double m, double q);
  /// Forget the warm starts.
  void reset() { warm_valid_ = false; }
  int T() const { return layout_.T(); }
  long samples() const { return set_.size(); }
  const SampleSideOptions& options() const { return opt_; }

 private:
  SymLayout layout_;
  Channel channel_;
  double beta_, beta0_, Q0_, noise_;
  SampleSideOptions opt_;
  GaussianSampleSet set_;
  std::vector<double> warm_;  ///< K values per sample
  bool warm_valid_ = false;
  bool multistart_all_ = false;  ///< a probe found a better second minimum: multistart every sample
};

}  // namespace hdat::tied
