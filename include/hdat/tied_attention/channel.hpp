#pragma once
// The sample side of the fixed point (derivation.md §8):
//   M(Σ, m, q) = E min_{H ∈ Sym_T} [ Tr(H − Ω)²/(4Σ) + L(Y, H) ],
// Ω and the teacher field h0 jointly Gaussian per entry e with covariance c_e [[q, m], [m, Q0]],
// labels Y = σ_β0(h0 + noise) (softmax; one-hot at the row argmax for hardmax labels) or
// Y = h0 + noise (linear), noise variance c_e Δ/2.
// Parametrisation (Z0 independent of the order parameters, so that only Ω moves):
//   h0_e = √(c_e Q0) u_e,  Ω_e = √c_e (a u_e + b w_e),  a = m/√Q0,  b = √(q − m²/Q0).
// Derivatives by the envelope theorem at the GLOBAL minimiser H* (r = H* − Ω, ∂f/∂Ω = −D r,
// D = diag(w_e/(2Σ))):
//   ∂_Σ M = −E Σ_e w_e r_e²/(4Σ²)
//   ∂_q M = E Σ_e (∂f/∂Ω_e) √c_e w_e/(2b)                                       (pathwise)
//   ∂_m M = E Σ_e (∂f/∂Ω_e) √c_e u_e/√Q0 − (m/(Q0 b)) E Σ_e (∂f/∂Ω_e) √c_e w_e
// Where the prox is convex, ∂f/∂Ω is smooth and one more Stein step on w gives the lower-variance
// Hessian form ∂_q M = ½ E Σ_e c_e [∇²_Ω f]_ee (∇²_Ω f = D − D (∇²F)⁻¹ D), used there. Where it may be
// non-convex, H* jumps between branches, ∂f/∂Ω jumps with it, and that second Stein step would miss
// the jumps' contribution: the pathwise forms are used (f itself is continuous, so they stay
// unbiased; derivation.md §8.3).
// q̂ = −4α ∂_Σ M, m̂ = −2α ∂_m M, Σ̂ = 4α ∂_q M. Expectations over a fixed (common random
// numbers) randomised Sobol or Monte Carlo set; standard errors from the spread of its groups.
#include <Eigen/Dense>
#include <cstdint>
#include <vector>

#include "hdat/core/gaussian.hpp"
#include "hdat/tied_attention/prox.hpp"

namespace hdat::tied_attention {

struct SampleSideOptions {
  long samples = 1 << 16;
  Sampling sampling = Sampling::sobol;
  int groups = 16;           ///< random shifts (RQMC) or independent blocks (MC): the error estimate
  std::uint64_t seed = 1;
  int threads = 0;           ///< 0: OpenMP default
  ProxOptions prox;
  /// Where the prox may be non-convex (1/(2Σ) < 5β²): the global minimiser of every sample, from
  /// every branch start (prox_global). false: the warm start (else Ω) only — a local minimum (tests).
  bool multistart = true;
  bool warm_start = true;    ///< reuse each sample's previous minimiser (one more start where non-convex)
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
  /// Which derivative estimators gave m̂, Σ̂: pathwise (prox possibly non-convex) or the Hessian form.
  bool pathwise = false;
  /// The Hessian-form (second Stein step) estimates at the same samples, for comparison: unbiased
  /// only where the minimiser is continuous in Ω (equal to dM_dq, dM_dm when !pathwise).
  double dM_dq_hessian = 0, dM_dm_hessian = 0;
  long multistart_switches = 0;  ///< samples whose global minimum is not the one reached from the first start
  long multiple_minima = 0;      ///< samples whose prox has more than one local minimum
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
};

}  // namespace hdat::tied_attention
