#include <doctest/doctest.h>

#include <filesystem>

#include "hdat/core/plot.hpp"

using namespace hdat;

TEST_CASE("a two-panel figure and a heat map render to PNG and SVG") {
  if (!plot::available()) {
    MESSAGE("gnuplot not installed: skipped");
    return;
  }
  const auto dir = std::filesystem::temp_directory_path() / "hdat_test_plot";
  std::filesystem::remove_all(dir);
  plot::Figure f;
  f.title = "test figure";
  plot::Panel p;
  p.title = "risk";
  p.logx = true;
  p.series.push_back({"theory", {1, 10, 100}, {0.5, 0.3, 0.2}, {}, plot::Style::lines});
  p.series.push_back({"simulation", {1, 10, 100}, {0.52, 0.29, 0.21}, {0.01, 0.01, 0.02}, plot::Style::errorbars});
  p.hlines.push_back({0.1, "Bayes risk"});
  f.panels.push_back(p);
  f.panels.push_back(p);
  plot::render(f, dir / "curve");
  CHECK(std::filesystem::file_size(dir / "curve.png") > 1000);
  CHECK(std::filesystem::file_size(dir / "curve.svg") > 1000);

  plot::Figure h;
  plot::Heatmap hm;
  hm.x = {0, 1, 2};
  hm.y = {0, 1};
  hm.z = Eigen::MatrixXd::Random(3, 2);
  hm.contours = {0.0};
  h.heatmap = hm;
  plot::render(h, dir / "heat");
  CHECK(std::filesystem::file_size(dir / "heat.png") > 1000);
  std::filesystem::remove_all(dir);
}
