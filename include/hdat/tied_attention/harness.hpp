#pragma once
// The commands of the `tied-attention` model (curve, simulate, validate) and its figures.
#include <filesystem>
#include <vector>

#include "hdat/core/registry.hpp"
#include "hdat/tied_attention/attention_erm.hpp"
#include "hdat/tied_attention/target.hpp"

namespace hdat::tied {

/// Mean and standard error over seeds.
struct Stat {
  double mean = 0, se = 0;
  int n = 0;
};
Stat stat_of(const std::vector<double>& values);

/// Weighted least squares y = a + b/d (weights 1/se²); se(a) inflated by √(χ²/dof) when dof >= 1
/// and χ²/dof > 1. With one d: a = y.
struct Extrapolation {
  double a = 0, a_se = 0, b = 0, chi2_dof = 0;
  int points = 0;
};
Extrapolation extrapolate_inverse_d(const std::vector<double>& d, const std::vector<double>& y, const std::vector<double>& se);

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

RunOutput curve_command(const Params& p, RunContext& ctx);
RunOutput simulate_command(const Params& p, RunContext& ctx);
RunOutput validate_command(const Params& p, RunContext& ctx);
void plot_folder(const std::filesystem::path& dir);

/// The distinct values of v, sorted (the alphas or dims found in a table).
std::vector<double> distinct(std::vector<double> v);

}  // namespace hdat::tied
