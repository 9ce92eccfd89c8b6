#pragma once
// Thresholds and the Bayes-optimal reference (derivation.md §5, §6).
//
// Constraint counting: one linear measurement per sample for T = 1; for T >= 2 the softmax sees
// T(T+1)/2 symmetric fields minus the one flat direction (adding a constant to every entry of H
// shifts every row equally), i.e. (T² + T − 2)/2 per sample. Every threshold in α of the T = 1
// problem is therefore divided by (T² + T − 2)/2: factor c_T = 1 (T = 1), 2/(T² + T − 2) (T >= 2).
#include <memory>
#include <vector>

#include "hdat/tied_attention/bayes_channel.hpp"
#include "hdat/tied_attention/spectral_law.hpp"

namespace hdat::tied_attention {

/// 1 for T = 1, 2/(T² + T − 2) for T >= 2.
double constraint_factor(int T);

/// Interpolation threshold at λ → 0⁺: α_interp = c_T ∂_δJ(δ̄, 0)/(4 δ̄) with δ̄ the smallest root of
/// Q0 + Δ/2 = J(δ̄, 0) − (δ̄/2) ∂_δJ(δ̄, 0). Needs Δ > 0.
struct InterpolationThreshold {
  double alpha = 0, delta_bar = 0;
  bool ok = false;
};
InterpolationThreshold alpha_interp(const std::shared_ptr<const TargetLaw>& target, double noise, int T,
                                    LawMethod method = LawMethod::automatic);

/// ∫ (x − s)₊^k σ_sc(dx) for the semicircle on [−2, 2], k = 0, 1, 2.
double semicircle_tail_moment(double s, int k);

/// Perfect recovery of the noiseless problem at λ → 0⁺ (statistical dimension of the descent cone
/// of Tr + PSD at a rank-κ0 d matrix, per measurement):
///   α_perf = c_T [κ0 − κ0²/2 + min_s (κ0(1 − κ0) s²/2 + (1 − κ0)²/2 ∫(x − s)₊² σ_sc(dx))].
struct PerfectRecovery {
  double alpha = 0, s_star = 0;
};
PerfectRecovery alpha_perf(double rank_fraction, int T);

/// The same bracket at s = 0: statistical dimension of the tangent cone of the PSD cone at S0.
/// This is the Δ → 0 limit of α_interp (derivation.md §5: the spec's claim α_interp → α_perf is
/// not right; the limit is this larger value).
double alpha_interp_noiseless_limit(double rank_fraction, int T);

/// Bayes-optimal perfect recovery: α_PR = c_T (κ0 − κ0²/2) (κ0 < 1).
double alpha_pr(double rank_fraction, int T);

/// Rank fraction of the target (κ0 for Wishart with κ0 < 1, share of nonzero eigenvalues otherwise).
double target_rank_fraction(const TargetLaw& target);

/// RIE denoising MMSE of S0 from S0 + √v Z: mmse(v) = v − (4π²/3) v² ∫ ρ_v³ (ρ_v = μ0 ⊞ σ_v).
double rie_mmse(const std::shared_ptr<const TargetLaw>& target, double v, LawMethod method = LawMethod::automatic);

/// Bayes-optimal error along α: the fixed point of the state evolution reached from the uninformed
/// start (state_evolution.hpp), v = mmse(δ²), δ² = 1/(2 α I(Q0 − v, v)). For the linear (K fields)
/// and softmax (K − 1 identifiable fields, any β0) channels I = k/(v + Δ/2), so the fixed point solves
///   mmse(w) + Δ/2 = 2 α_eff w,   w = δ²,   α_eff = α k
/// (k = K linear, K − 1 = (T² + T − 2)/2 softmax: the spec's formula, with the label noise, which the
/// spec's noiseless version leaves out), bracketed on a log grid (the largest root, the uninformed
/// branch). Hardmax (T = 2): the state evolution iterated to convergence, its update by QMC.
struct BayesPoint {
  double alpha = 0, v = 0, qhat = 0, q = 0, mmse = 0;
  double mmse_se = 0;  ///< sampling error (hardmax)
  int roots = 0;       ///< fixed points found (the uninformed one, largest v, is kept)
  bool ok = false;
};
std::vector<BayesPoint> bayes_optimal_curve(const std::shared_ptr<const TargetLaw>& target, double noise, int T,
                                            BayesChannel channel, const std::vector<double>& alphas,
                                            LawMethod method = LawMethod::automatic,
                                            const ChannelInformationOptions& information = {});
/// The channel of T: linear for T = 1, softmax otherwise.
std::vector<BayesPoint> bayes_optimal_curve(const std::shared_ptr<const TargetLaw>& target, double noise, int T,
                                            const std::vector<double>& alphas,
                                            LawMethod method = LawMethod::automatic);

}  // namespace hdat::tied_attention
