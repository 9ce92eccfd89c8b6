#pragma once
// The spectrum of the learned matrix Ŝ ≐ η · ReLU(S0 + δ Z − t I) (derivation.md §3.3):
//  - an atom at 0 of mass F_δ(t) (rank(Ŝ)/d = 1 − F_δ(t));
//  - a bulk with density (1/η) ρ_δ(x/η + t) for x > 0;
//  - outliers: isolated pieces of μ_δ (one target eigenvalue s each, mass 1/d for a finite-d target)
//    above t, at η(x̄ − t) with x̄ ≈ s + δ²/s (the spike formula).
// Singular values of W (S = W Wᵀ/√(p d)) in units of √d: σ = (√κ · λ)^{1/2}.
#include <vector>

#include "hdat/tied_attention/spectral_law.hpp"

namespace hdat::tied_attention {

struct Outlier {
  double position = 0;           ///< eigenvalue of Ŝ: η (x̄ − t), x̄ the mean of the piece
  double target_eigenvalue = 0;  ///< s
  double spike_formula = 0;      ///< η (s + δ²/s − t)
  double mass = 0;               ///< μ_δ-mass of the piece (1/d)
};

struct LearnedSpectrum {
  double atom = 0;  ///< F_δ(t)
  double eta = 1, t = 0, delta = 0, kappa = 1;
  std::vector<double> x, density;         ///< bulk of Ŝ (x > 0)
  std::vector<double> sv, sv_density;     ///< bulk of the singular values of W / √d
  std::vector<Outlier> outliers;
  double bulk_mass = 0;                   ///< ∫ density (= 1 − atom − outlier masses)
};

/// (1/η) ρ_δ(x/η + t) for x > 0.
double learned_density(const SpectralLaw& law, double t, double eta, double x);

/// The spectrum at the fixed point (δ = law.delta(), t, η); `points` per bulk piece.
/// Pieces of μ_δ whose mass is below `outlier_mass` count as outliers.
LearnedSpectrum learned_spectrum(const SpectralLaw& law, double t, double eta, double kappa, int points = 200,
                                 double outlier_mass = -1);

/// Error decomposition along the learned spectrum (derivation.md §9), for a discrete target:
///  - approximation: per learned outlier (isolated piece above t, one target eigenvalue s),
///    |ŝ v vᵀ − s u uᵀ|² = (ŝ − s)² + 2 ŝ δ²/s  (overlap ⟨u, v⟩² = 1 − δ²/s²), times its mass;
///  - underfitting: the energy of the target eigenvalues without a learned outlier, Σ w_i s_i², minus
///    twice what the bulk recovers of them, 2 m_bulk = 2 (m − m_outliers), m = Tr Ŝ S0/d from the
///    fixed point and m_outliers = Σ ŝ s (1 − δ²/s²) (spike overlaps);
///  - overfitting: the bulk of Ŝ, η² ∫_bulk (x − t)₊² dμ_δ.
/// The sum equals the MSE up to the spike-formula approximation of the outliers' overlaps.
struct ErrorDecomposition {
  int outliers = 0;   ///< learned outliers
  int K_delta = 0;    ///< #{i : s_i > δ}
  double E_over = 0, E_under = 0, E_approx = 0, E_sum = 0;
  double bulk_overlap = 0;  ///< m_bulk
};
ErrorDecomposition decompose_error(const SpectralLaw& law, double t, double eta, double m_total);

}  // namespace hdat::tied_attention
