#pragma once
// `hdat plot DIR` as a function (the command line and hdat.plot() in Python share it): the figures of
// any output folder, through gnuplot (PNG, SVG and the script).
//   a sweep folder      heat maps (two swept numbers; contour levels) or line plots (one axis)
//   a model's folder    the model's own figures (ModelEntry::plot), else the generic ones
//   any other folder    every numeric column of each CSV against its first column
#include <filesystem>
#include <string>
#include <vector>

namespace hdat::app {

struct PlotRequest {
  std::vector<std::string> observables;  ///< sweep: sweep.csv columns to draw (empty: all)
  std::vector<double> contours;          ///< sweep heat maps: contour levels
  std::string x, y;                      ///< sweep: the swept keys on the axes
  bool heatmap = false, lines = false, together = false;
  bool generic = false;                  ///< the generic figures even where the model has its own
  bool sweep_options() const { return !observables.empty() || !contours.empty() || !x.empty() || !y.empty() || heatmap || lines || together; }
};

struct PlotOutcome {
  std::vector<std::filesystem::path> figures;  ///< the PNG files written (an SVG beside each where gnuplot made one)
  std::string notes;                           ///< fallbacks taken (printed on stderr by the command line)
};

/// Draw the figures of `dir`. InputError (key DIR or the option) on a folder with nothing to draw or
/// options that do not fit it; std::runtime_error when gnuplot is missing.
PlotOutcome plot_folder(const std::filesystem::path& dir, const PlotRequest& request = {});

}  // namespace hdat::app
