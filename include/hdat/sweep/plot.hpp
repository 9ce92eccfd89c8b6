#pragma once
// Figures of output folders (`hdat plot DIR`), through hdat::plot (gnuplot; PNG, SVG and the script).
//  - a sweep folder (run.json "command": "sweep"): heat maps over two numeric swept axes with contour
//    lines at chosen levels, or line plots against one axis with one line per value of the other axes;
//  - any other folder: every numeric column of each CSV against its first column (log x when the first
//    column spans more than two decades), order-parameter blocks BLOCK_i_j in one panel, COL_se columns
//    as error bars, a simulation (sim.csv) drawn as points with error bars over the theory (curve.csv),
//    and reference lines from run.json (e.g. bayes_risk on the risk panel).
// Model-specific figures come from ModelEntry::plot; the command line falls back to plot_generic.
#include <filesystem>
#include <string>
#include <vector>

namespace hdat::sweep {

struct SweepPlotOptions {
  std::vector<std::string> observables;  ///< sweep.csv columns (labels) to draw; empty: all
  std::vector<double> contours;          ///< contour levels on heat maps
  std::string x, y;                      ///< swept keys for the x (and heat-map y) axis; empty: chosen
  enum class Kind { automatic, heatmap, lines } kind = Kind::automatic;
  bool together = false;                 ///< line plots: every observable in one panel
};

/// Figures of a sweep folder; returns the stems written (DIR/sweep_<obs>.png, DIR/sweep.png ...).
std::vector<std::filesystem::path> plot_sweep(const std::filesystem::path& dir, const SweepPlotOptions& options = {});

/// The fallback figures of any folder: one figure per CSV (several when it has many columns).
std::vector<std::filesystem::path> plot_generic(const std::filesystem::path& dir);

}  // namespace hdat::sweep
