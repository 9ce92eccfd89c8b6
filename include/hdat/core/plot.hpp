#pragma once
// Figures through gnuplot (Debian's gnuplot-nox): a Figure of panels of series, or a heat map with
// contour lines, rendered to PNG and SVG. The generated gnuplot script (data inlined) is kept beside
// the images, so a user can restyle a figure without rerunning anything.
//
// What every figure gets from here, whoever draws it:
//   - no key on a panel with a single labelled item (its title says what it is);
//   - on a log-time axis, t = 0 drawn at a labelled first tic "0" left of a break mark;
//   - heat maps with one cell per grid value (edges half way to the neighbours, geometric on log
//     axes) and a key naming each contour level;
//   - nothing or everything: gnuplot writes to temporary files that are renamed only when it
//     succeeded; a failure says why and leaves nothing. Inside a Batch (hdat plot) the renames wait
//     until the whole folder's figures are drawn.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Dense>

namespace hdat::plot {

/// band: a shaded region y ± yerr (drawn under the other items of its colour); ring: a large open
/// circle around a point drawn by another series (marks a point, e.g. one whose verdict is undecided).
enum class Style { lines, points, linespoints, errorbars, dashed, band, ring };

struct Series {
  std::string label;
  std::vector<double> x, y;
  std::vector<double> yerr;  ///< for Style::errorbars and Style::band
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
/// Write stem.gp, stem.png and stem.svg (all or none). Throws std::runtime_error saying why when
/// gnuplot fails or when a panel has no finite point to draw.
void render(const Figure& figure, const std::filesystem::path& stem);
/// The gnuplot script for one terminal ("pngcairo" or "svg"), data inlined.
std::string script(const Figure& figure, const std::string& terminal, const std::string& output);

/// The figures of one folder, all or none. While a Batch is alive (in this thread), render() leaves
/// each figure under temporary names and the batch keeps them; commit() moves them into place (into
/// the enclosing batch when there is one); a batch destroyed without commit removes them. `caption`
/// (e.g. the run's parameters that differ from the defaults) is added under every figure's title.
class Batch {
 public:
  explicit Batch(std::string caption = "");
  ~Batch();
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;
  /// The PNG files of the figures drawn in this batch, in the order drawn (final names).
  std::vector<std::filesystem::path> commit();
  const std::string& caption() const { return caption_; }

 private:
  struct Staged {
    std::filesystem::path from, to;
  };
  friend void render(const Figure&, const std::filesystem::path&);
  std::string caption_;
  std::vector<Staged> staged_;
  std::vector<std::filesystem::path> pngs_;
  Batch* outer_ = nullptr;
  bool done_ = false;
};

/// "K=3, eta=0.5": the keys of run.json's "config" whose value differs from the default its model
/// declares (long values shortened; a sweep's swept keys left out); empty when there are none or the
/// model is not registered.
std::string non_default_parameters(const nlohmann::json& run);

}  // namespace hdat::plot
