#pragma once
// The rotationally invariant estimator (RIE): the Bayes denoiser of a symmetric S0 with a Haar
// eigenbasis and spectral law μ0, observed as R = S0 + δ Z (Z GOE, semicircle on [−2, 2]);
// derivation.md §10.2:
//   E[S0 | R] = Σ_i ξ(λ_i) u_i u_iᵀ,   ξ(λ) = λ − 2δ² H_δ(λ) = 2 ψ⁻¹(λ) − λ,
// with (λ_i, u_i) the eigenpairs of R, H_δ the Hilbert transform of μ_δ = μ0 ⊞ σ_{δ²}, and ψ the
// subordination map of spectral_law.hpp (H_δ(ψ(u)) = (ψ(u) − u)/δ²). AMP's Onsager term needs the
// divergence of R ↦ Ŝ in orthonormal coordinates of Sym_d (Daleckii–Krein):
//   div = Σ_i ξ'(λ_i) + Σ_{i<j} (ξ(λ_i) − ξ(λ_j))/(λ_i − λ_j),   ξ'(λ) = 2/ψ'(ψ⁻¹(λ)) − 1.
// μ0 is any TargetLaw: the Wishart limit (√κ0·MP) or a finite-d spectrum (DiscreteTarget).
// Eigenvalues of R outside the support of μ_δ (finite d) get the edge values of ξ: constant beyond
// the outer edges, linear across inner gaps (the continuation's slope is infinite at the edges).
#include <Eigen/Dense>
#include <memory>

#include "hdat/tied_attention/target.hpp"

namespace hdat::tied_attention {

struct RieOptions {
  /// Test only: multiplies the shrinkage term 2δ²H_δ (1 = the Bayes denoiser).
  double shrinkage_factor = 1.0;
};

/// ξ and ξ' at a list of eigenvalues.
struct RieSpectrum {
  Eigen::VectorXd xi, dxi;
};

struct RieResult {
  Eigen::MatrixXd estimate;      ///< Ŝ = U diag(ξ(λ)) Uᵀ
  Eigen::MatrixXd eigenvectors;  ///< U
  Eigen::VectorXd eigenvalues;   ///< λ of R, increasing
  Eigen::VectorXd shrunk;        ///< ξ(λ)
  Eigen::VectorXd shrunk_slope;  ///< ξ'(λ)
  double divergence = 0;        ///< Σ_i ∂Ŝ_i/∂R_i over orthonormal coordinates of Sym_d
  double eig_seconds = 0, shrink_seconds = 0;
};

class RieDenoiser {
 public:
  explicit RieDenoiser(std::shared_ptr<const TargetLaw> prior, RieOptions options = {});
  /// ξ(λ) and ξ'(λ) for noise level δ (δ = 0: the identity).
  RieSpectrum shrink(const Eigen::VectorXd& lambda, double delta) const;
  /// Ŝ and the divergence for R (symmetric).
  RieResult operator()(const Eigen::MatrixXd& R, double delta) const;
  const TargetLaw& prior() const { return *prior_; }
  const std::shared_ptr<const TargetLaw>& prior_ptr() const { return prior_; }

 private:
  std::shared_ptr<const TargetLaw> prior_;
  RieOptions opt_;
};

/// The Daleckii–Krein kernel of the Jacobian: dŜ[E] = U (D ∘ UᵀEU) Uᵀ with
/// D_ij = (ξ_i − ξ_j)/(λ_i − λ_j) (i ≠ j), D_ii = ξ'_i (ties as in spectral_divergence).
Eigen::MatrixXd divided_differences(const Eigen::VectorXd& lambda, const Eigen::VectorXd& xi, const Eigen::VectorXd& dxi);

/// Σ_i ξ'_i + Σ_{i<j} (ξ_i − ξ_j)/(λ_i − λ_j); at (near) ties the divided difference is (ξ'_i + ξ'_j)/2.
double spectral_divergence(const Eigen::VectorXd& lambda, const Eigen::VectorXd& xi, const Eigen::VectorXd& dxi);

}  // namespace hdat::tied_attention
