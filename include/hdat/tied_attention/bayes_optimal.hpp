#pragma once
// The Bayes-optimal side of `tied-attention` on the command line: AMP at finite d against its state
// evolution (`simulate` / `validate` with estimator=amp), the Bayes-optimal column of curve.csv for
// every channel, the perfect-recovery threshold where one exists, and the figures of AMP's outputs.
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "hdat/core/registry.hpp"
#include "hdat/tied_attention/amp.hpp"
#include "hdat/tied_attention/model.hpp"
#include "hdat/tied_attention/state_evolution.hpp"

namespace hdat::tied_attention {

/// The state evolution of the configuration for the prior μ0 (break_term and sampling keys honoured).
StateEvolutionOptions state_evolution_options(const Config& c, std::shared_ptr<const TargetLaw> prior, int threads = 1);
/// AMP's options for the prior μ0.
AmpOptions amp_options(const Config& c, std::shared_ptr<const TargetLaw> prior);

/// The Bayes-optimal MSE along α (curve.csv's `bayes_mse`) and its sampling error (hardmax).
struct BayesColumn {
  std::vector<double> mse, se;
  nlohmann::json info;
};
BayesColumn bayes_column(const Config& c, const std::shared_ptr<const TargetLaw>& target, const std::vector<double>& alphas);
/// The gap between the best ERM (factorised training, λ of the scanned grid minimising the
/// theoretical MSE) and the Bayes-optimal error, per α: bayes_gap.csv. `scan`: curve's λ scan.
struct LambdaScanPoint {
  double alpha = 0;
  Training training = Training::factorized;
  double lambda = 0, test_error = 0, mse = 0;
  bool converged = false;
};
Table bayes_gap_table(const std::vector<LambdaScanPoint>& scan, const std::vector<double>& alphas, const BayesColumn& bayes);
/// α_PR where perfect recovery exists (Δ = 0, linear or softmax channel), else null.
nlohmann::json bayes_perfect_recovery(const Config& c, double rank_fraction);

RunOutput amp_simulate_command(const Config& c, RunContext& ctx);
RunOutput amp_validate_command(const Config& c, RunContext& ctx);
/// Figures of a folder written by an AMP command (nothing when it has no AMP output).
void amp_plot_folder(const std::filesystem::path& dir);

}  // namespace hdat::tied_attention
