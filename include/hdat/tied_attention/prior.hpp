#pragma once
// The prior side: the spectral denoiser Ŝ = η · ReLU(S0 + δ Z − t I) and the function
//   J(δ, t) = ∫_t^∞ (x − t)² μ_δ(dx)
// with its derivatives (derivation.md §3):
//   ∂_t J = −2 ∫_t^∞ (x − t) μ_δ(dx),     ∂_δ J = 4δ ∫_t^∞ ρ_δ(x) (x − t) H_δ(x) dx
// (the second from the free heat equation ∂_v ρ = −∂_x(ρ H), v = δ²). One quadrature pass
// computes all of them at the same nodes.
#include <memory>

#include "hdat/tied_attention/spectral_law.hpp"

namespace hdat::tied_attention {

struct JValues {
  double delta = 0, t = 0;
  double J = 0;           ///< ∫ (x − t)₊² dμ_δ
  double dJ_dt = 0;       ///< ∂_t J = −2 ∫ (x − t)₊ dμ_δ
  double dJ_ddelta = 0;   ///< ∂_δ J = 4δ ∫ (x − t)₊ H_δ dμ_δ
  double mass_above = 0;  ///< 1 − F_δ(t): rank of Ŝ over d
  QVec<4> error = QVec<4>::Zero();  ///< quadrature error estimates of (J, ∂_t J, ∂_δ J, mass_above)
  QuadratureStats stats;
};

/// J and its derivatives at threshold t for the law μ_δ (δ = law.delta()).
JValues j_values(const SpectralLaw& law, double t, const QuadratureOptions& opt = {});

/// ∫ ρ_δ(x)³ dx (the RIE/Bayes-optimal MMSE needs it).
double rho_cubed(const SpectralLaw& law, const QuadratureOptions& opt = {}, QuadratureStats* stats = nullptr);

/// Moments ∫ x^k dμ_δ, k = 0, 1, 2 (checks: 1, mean of μ0, Q0 + δ²).
QVec<3> law_moments(const SpectralLaw& law, const QuadratureOptions& opt = {});

/// J(0, t) = ∫ (x − t)₊² μ0(dx) for the Wishart target itself (δ = 0: atom + MP bulk), and its
/// derivatives (∂_δ J(0, t) = 0). Used by thresholds and the δ → 0 limits.
JValues j_values_wishart_delta0(const WishartTarget& target, double t, const QuadratureOptions& opt = {});

}  // namespace hdat::tied_attention
