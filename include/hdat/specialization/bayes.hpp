#pragma once
// The Bayes risk of the single-location model (derivation.md §5): with the location posterior
// π_ℓ ∝ E_θ[exp(θ·λ_ℓ − |θ|²/2)], E_Bayes = ½ (Δ² + 1 − E[Σ_ℓ π_ℓ²]).
#include <utility>

#include "hdat/specialization/model.hpp"

namespace hdat::specialization {

/// Log of the unnormalised posterior weight of a token with teacher field λ (length F).
double log_location_weight(const Prior& prior, const Eigen::Ref<const Eigen::VectorXd>& lambda);

/// (Bayes risk, standard error) by Monte Carlo / QMC over the fields (discrete priors: exact sum over θ).
std::pair<double, double> bayes_risk(const Config& s, long samples, Sampling sampling, std::uint64_t seed, int threads = 0);

}  // namespace hdat::specialization
