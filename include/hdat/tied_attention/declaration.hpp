#pragma once
// The `tied-attention` model through the contract (curve, simulate, validate from the core harness),
// the pieces its ERM and AMP commands share, and its figures.
#include <filesystem>
#include <vector>

#include "hdat/core/model.hpp"
#include "hdat/core/registry.hpp"
#include "hdat/core/statistics.hpp"
#include "hdat/tied_attention/attention_erm.hpp"
#include "hdat/tied_attention/target.hpp"

namespace hdat::tied_attention {

/// Mean and standard error over seeds (the core's, hdat/core/statistics.hpp).
using Stat = stats::MeanSe;

/// The teacher and the attention model of the configuration at dimension d (shared by ERM and AMP,
/// so that both see the same data for the same seed).
TeacherSpec teacher_spec(const Params& p, int d);
AttentionSpec attention_spec(const Params& p, int d, double noise);
/// The replica index of a run at dimension d and the α of index `alpha_index` (its data streams).
std::uint64_t run_replica(int d, std::size_t alpha_index);
/// The target's law at dimension d for the theory: Wishart (any d), or the power law at this d.
std::shared_ptr<const TargetLaw> target_law_at(const Params& p, int d);
/// The sampled target's own spectrum (zeros of a rank-deficient target kept exact).
std::shared_ptr<const TargetLaw> empirical_target(const Eigen::MatrixXd& S0);
/// The factors of the test-only `break_term` key (1 where the term is intact).
struct BrokenTerms {
  double ddelta_J = 1, dq_M = 1;             ///< ERM theory: prior side, sample side
  double shrinkage = 1, information = 1;     ///< Bayes state evolution: denoiser, channel
};
BrokenTerms broken_terms(const Params& p);

/// The two trainings the λ comparison (lambda_grid) sets side by side: factorised (trace penalty)
/// and direct (Frobenius penalty).
inline constexpr const char* kTrainings[2] = {"factorized", "direct"};

/// The model's declaration through the contract (ERM; estimator=amp and simulate with lambda_grid
/// are the model's own commands beside it).
const FixedPointModel& erm_model();

RunOutput curve_command(const Params& p, RunContext& ctx);
RunOutput simulate_command(const Params& p, RunContext& ctx);
RunOutput validate_command(const Params& p, RunContext& ctx);
void plot_folder(const std::filesystem::path& dir);

/// The distinct values of v, sorted (the alphas or dims found in a table).
std::vector<double> distinct(std::vector<double> v);

}  // namespace hdat::tied_attention
