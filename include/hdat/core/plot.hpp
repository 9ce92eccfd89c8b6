#pragma once
// Figures through gnuplot (Debian's gnuplot-nox): a Figure of panels of series, or a heat map with
// contour lines, rendered to PNG and SVG. The generated gnuplot script (data inlined) is kept beside
// the images, so a user can restyle a figure without rerunning anything.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Dense>

namespace hdat::plot {

enum class Style { lines, points, linespoints, errorbars, dashed };

struct Series {
  std::string label;
  std::vector<double> x, y;
  std::vector<double> yerr;  ///< for Style::errorbars
  Style style = Style::lines;
  int color = -1;            ///< index into the palette; -1: next one
};

struct Panel {
  std::string title, xlabel, ylabel;
  bool logx = false, logy = false;
  std::vector<Series> series;
  std::vector<std::pair<double, std::string>> hlines;  ///< reference lines (value, label)
  std::optional<std::pair<double, double>> xrange, yrange;
  std::string legend = "top right";  ///< gnuplot key position ("top left", "bottom right", ...)
};

struct Heatmap {
  std::string title, xlabel, ylabel, zlabel;
  std::vector<double> x, y;  ///< grid coordinates
  Eigen::MatrixXd z;         ///< z(i, j) at (x[i], y[j]); NaN cells are left blank
  std::vector<double> contours;  ///< contour levels drawn on top
  bool logx = false, logy = false;
};

struct Figure {
  std::string title;
  int columns = 2;
  std::vector<Panel> panels;
  std::optional<Heatmap> heatmap;  ///< when set, the figure is this heat map
  int panel_width = 560, panel_height = 400;  ///< pixels per panel
};

/// Is gnuplot on the PATH?
bool available();
/// Write stem.gp, stem.png and stem.svg. Throws std::runtime_error when gnuplot fails.
void render(const Figure& figure, const std::filesystem::path& stem);
/// The gnuplot script for one terminal ("pngcairo" or "svg"), data inlined.
std::string script(const Figure& figure, const std::string& terminal, const std::string& output);

}  // namespace hdat::plot
