#pragma once
// The `tied-attention` model's declaration: its parameters (one ParamSet shared by the theory and
// the finite-d simulator) and the objects both sides build from them (the target's spectral law,
// the α grid, the seeds).
#include <memory>
#include <string>
#include <vector>

#include "hdat/core/params.hpp"
#include "hdat/tied_attention/spectral_law.hpp"

namespace hdat::tied_attention {

/// Every key of the model (spec: T, kappa0, kappa, noise, lambda, beta, beta0, target, gamma, task,
/// alphas, d, seeds, training; plus numerical settings).
const ParamSet& param_set();

/// Cross-key checks (throws InputError).
void check_params(const Params& p);

/// The sample ratios of `alphas`: a JSON list, or "start:stop:count" (linear), or
/// "log:start:stop:count".
std::vector<double> alpha_grid(const Params& p, const std::string& key = "alphas");

/// Seeds of `seeds`: an integer n (seeds 1..n) or a list.
std::vector<long> seed_list(const Params& p);

/// Q0 = Tr S0²/d: the `Q0` key, or 1 + κ0 when unset.
double target_Q0(const Params& p);

/// The target's spectral law μ0 for the theory: Wishart (d → ∞) or the power law at finite d = `d`.
std::shared_ptr<const TargetLaw> make_target_law(const Params& p);

/// Which output channel the theory uses: "linear" (T = 1, or forced) or "softmax".
std::string channel_of(const Params& p);

/// Quadrature settings from the parameters.
QuadratureOptions quadrature_options(const Params& p);

}  // namespace hdat::tied_attention
