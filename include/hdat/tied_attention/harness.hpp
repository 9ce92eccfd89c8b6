#pragma once
// The commands of the `tied-attention` model (curve, simulate, validate) and its figures.
#include <filesystem>
#include <vector>

#include "hdat/core/registry.hpp"

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

RunOutput curve_command(const Params& p, RunContext& ctx);
RunOutput simulate_command(const Params& p, RunContext& ctx);
RunOutput validate_command(const Params& p, RunContext& ctx);
void plot_folder(const std::filesystem::path& dir);

}  // namespace hdat::tied
