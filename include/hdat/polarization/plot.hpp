#pragma once
// Figures of the polarization model's output folders (through hdat::plot; `hdat plot DIR` calls
// plot_folder). Which figures depends on the files present:
//   curve.csv and/or sim.csv      -> polarization.png/svg (weights, logits, u, loss, rates, gaps)
//   convergence.csv, validate.csv -> convergence.png/svg (gap against η, theory vs GD)
//   claim.csv (+ series files)    -> claim.png/svg (the claim's own figure, see claims.hpp)
#include <filesystem>
#include <string>
#include <vector>

namespace hdat::polarization {

/// Render every figure the folder's files allow. Returns the stems written (without extension).
std::vector<std::string> plot_folder(const std::filesystem::path& dir);

}  // namespace hdat::polarization
