#pragma once
// The `tied-attention` model through the contract (curve, simulate, validate from the core harness),
// the pieces its ERM and AMP commands share, and its figures.
#include <filesystem>
#include <vector>

#include "hdat/core/model.hpp"
#include "hdat/core/registry.hpp"
#include "hdat/core/statistics.hpp"
#include "hdat/tied_attention/attention_erm.hpp"
#include "hdat/tied_attention/model.hpp"
#include "hdat/tied_attention/target.hpp"

namespace hdat::tied_attention {

/// Mean and standard error over seeds (the core's, hdat/core/statistics.hpp).
using Stat = stats::MeanSe;

/// The teacher and the attention model of the configuration at dimension d (shared by ERM and AMP,
/// so that both see the same data for the same seed).
TeacherSpec teacher_spec(const Config& c, int d);
AttentionSpec attention_spec(const Config& c, int d, double noise);
/// The replica index of a run at dimension d and the α of index `alpha_index` (its data streams).
std::uint64_t run_replica(int d, std::size_t alpha_index);
/// The sampled target's own spectrum (zeros of a rank-deficient target kept exact).
std::shared_ptr<const TargetLaw> empirical_target(const Eigen::MatrixXd& S0);

/// The two trainings the λ comparison (lambda_grid) sets side by side: factorised (trace penalty)
/// and direct (Frobenius penalty).
inline constexpr Training kTrainings[2] = {Training::factorized, Training::direct};

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
