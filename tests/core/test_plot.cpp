#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

#include "../gnuplot_script.hpp"
#include "hdat/core/output.hpp"
#include "hdat/core/plot.hpp"

using namespace hdat;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::size_t files_in(const fs::path& dir) {
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.is_regular_file();
  return n;
}

plot::Panel two_series_panel() {
  plot::Panel p;
  p.title = "risk";
  p.logx = true;
  p.series.push_back({"theory", {1, 10, 100}, {0.5, 0.3, 0.2}, {}, plot::Style::lines});
  p.series.push_back({"simulation", {1, 10, 100}, {0.52, 0.29, 0.21}, {0.01, 0.01, 0.02}, plot::Style::errorbars});
  p.hlines.push_back({0.1, "Bayes risk"});
  return p;
}

}  // namespace

TEST_CASE("a two-panel figure and a heat map render to PNG and SVG") {
  if (!plot::available()) {
    MESSAGE("gnuplot not installed: skipped");
    return;
  }
  const auto dir = fresh_dir("hdat_test_plot");
  plot::Figure f;
  f.title = "test figure";
  f.panels.push_back(two_series_panel());
  f.panels.push_back(two_series_panel());
  plot::render(f, dir / "curve");
  CHECK(fs::file_size(dir / "curve.png") > 1000);
  CHECK(fs::file_size(dir / "curve.svg") > 1000);
  CHECK(files_in(dir) == 3);  // png, svg, gp: no temporary file left

  plot::Figure h;
  plot::Heatmap hm;
  hm.x = {0, 1, 2};
  hm.y = {0, 1};
  hm.z = Eigen::MatrixXd::Random(3, 2);
  hm.contours = {0.0};
  h.heatmap = hm;
  plot::render(h, dir / "heat");
  CHECK(fs::file_size(dir / "heat.png") > 1000);
  fs::remove_all(dir);
}

TEST_CASE("a panel's key lists two or more items, never a single one") {
  plot::Figure f;
  plot::Panel one;
  one.series.push_back({"risk", {1, 2}, {1, 2}, {}, plot::Style::lines});
  plot::Panel unlabelled;
  unlabelled.series.push_back({"", {1, 2}, {1, 2}, {}, plot::Style::lines});
  f.panels = {one, unlabelled, two_series_panel()};
  const testing::GnuplotScript s(plot::script(f, "pngcairo", "x.png"));
  int keys = 0, no_keys = 0;
  for (const auto& l : s.lines) keys += l.rfind("set key", 0) == 0, no_keys += l == "unset key";
  CHECK(no_keys == 2);
  CHECK(keys == 1);
}

TEST_CASE("t = 0 on a log-time axis is drawn at a tic labelled 0, left of the positive times") {
  plot::Figure f;
  plot::Panel p;
  p.logx = true;
  p.series.push_back({"", {0, 0.1, 1, 10}, {1, 2, 3, 4}, {}, plot::Style::lines});
  f.panels = {p};
  const std::string text = plot::script(f, "pngcairo", "x.png");
  const testing::GnuplotScript s(text);
  // The t = 0 row is drawn, not dropped: the line holds the positive times, and its value at t = 0 is
  // a point of its own (the line does not cross the axis' break).
  REQUIRE(s.rows.at("$d0") == 3);
  REQUIRE(s.rows.at("$d1") == 1);
  REQUIRE(s.has_line("set xtics add (\"0\" "));
  // The tic's position is that point's x: positive and below the smallest positive time.
  const auto at = text.find("set xtics add (\"0\" ") + 19;
  const double x0 = std::stod(text.substr(at));
  CHECK(x0 > 0);
  CHECK(x0 < 0.1);
  CHECK(text.find("$d1 << EOD\n" + format_number(x0) + " 1\nEOD") != std::string::npos);
}

TEST_CASE("a heat map has one cell per grid value and its contour levels in the key") {
  plot::Figure h;
  plot::Heatmap hm;
  hm.x = {0.25, 0.5, 0.75, 1};
  hm.y = {1, 100, 10000};
  hm.logy = true;
  hm.zlabel = "risk";
  hm.z = Eigen::MatrixXd::Constant(4, 3, 0.5);
  hm.z(2, 1) = NAN;  // a blank cell
  hm.contours = {0.25, 0.75};
  h.heatmap = hm;
  const std::string text = plot::script(h, "pngcairo", "x.png");
  const testing::GnuplotScript s(text);
  CHECK(s.rows.at("$cells") == 4 * 3 - 1);
  CHECK(text.find("title \"risk = 0.25\"") != std::string::npos);
  CHECK(text.find("title \"risk = 0.75\"") != std::string::npos);
  // The cell of (0.25, 100) spans x half way to its neighbours (mirrored at the edge), y between the
  // geometric midpoints 10 and 1000 on the log axis.
  CHECK(text.find("\n0.25 100 0.125 0.375 10 1000 0.5\n") != std::string::npos);
}

TEST_CASE("a failing figure says why and leaves nothing; a batch leaves all its figures or none") {
  if (!plot::available()) {
    MESSAGE("gnuplot not installed: skipped");
    return;
  }
  const auto dir = fresh_dir("hdat_test_plot_fail");
  SUBCASE("a panel without a point") {
    plot::Figure f;
    plot::Panel p;
    p.title = "empty";
    p.series.push_back({"nothing", {1, 2}, {NAN, NAN}, {}, plot::Style::lines});
    f.panels = {p};
    CHECK_THROWS_WITH_AS(plot::render(f, dir / "empty"), doctest::Contains("the panel 'empty' has no point"), std::runtime_error);
  }
  SUBCASE("gnuplot fails") {
    plot::Figure f;
    plot::Panel p = two_series_panel();
    p.logx = false;
    p.logy = true;
    p.yrange = std::make_pair(-1.0, 1.0);  // a log axis through zero: gnuplot refuses
    f.panels = {p};
    CHECK_THROWS_WITH_AS(plot::render(f, dir / "bad"), doctest::Contains("gnuplot could not draw"), std::runtime_error);
  }
  SUBCASE("a batch not committed") {
    {
      plot::Batch batch("a caption");
      plot::Figure f;
      f.panels = {two_series_panel()};
      plot::render(f, dir / "first");
      plot::render(f, dir / "second");
    }
    CHECK(files_in(dir) == 0);
  }
  SUBCASE("a batch committed, with its caption in the title") {
    plot::Batch batch("K=3, eta=0.5");
    plot::Figure f;
    f.title = "t";
    f.panels = {two_series_panel()};
    plot::render(f, dir / "first");
    CHECK(!fs::exists(dir / "first.png"));  // not before the commit
    const auto pngs = batch.commit();
    REQUIRE(pngs.size() == 1);
    CHECK(pngs[0] == dir / "first.png");
    CHECK(fs::exists(dir / "first.png"));
    CHECK(read_file(dir / "first.gp").find("K=3, eta=0.5") != std::string::npos);
    CHECK(files_in(dir) == 3);
  }
  CHECK(files_in(dir) <= 3);
  fs::remove_all(dir);
}

// The key sits inside the panel: autoscale leaves room for it at its edge (0.08 of the panel per key
// line, plus one), so that it covers no data; none where the range is given or there is no key.
TEST_CASE("a panel's key gets room at its edge, so that it covers no data") {
  plot::Panel top = two_series_panel();  // three key lines, key at the top
  plot::Panel bottom = two_series_panel();
  bottom.legend = "bottom left";
  plot::Panel fixed = two_series_panel();
  fixed.yrange = std::pair<double, double>{0.0, 1.0};
  plot::Panel one;
  one.series.push_back({"risk", {1, 2}, {1, 2}, {}, plot::Style::lines});
  plot::Figure f;
  f.panels = {top, bottom, fixed, one};
  const testing::GnuplotScript s(plot::script(f, "pngcairo", "x.png"));
  std::vector<std::string> offsets;
  for (const auto& l : s.lines)
    if (l.rfind("set offsets", 0) == 0) offsets.push_back(l);
  CHECK(offsets == std::vector<std::string>{"set offsets 0, 0, graph 0.32, 0", "set offsets 0, 0, 0, graph 0.32", "set offsets 0, 0, 0, 0",
                                            "set offsets 0, 0, 0, 0"});
}

// "0" on a log-time axis stays apart from the first decade tic's label: committee's validate, whose
// first positive time is 0.15, drew "0" at 0.075 beside "0.1" ("00.1").
TEST_CASE("t = 0 on a log-time axis sits at least a factor 3 left of a decade tic beside it") {
  for (double first : {0.15, 0.077, 0.003, 1.0}) {
    CAPTURE(first);
    plot::Panel p;
    p.logx = true;
    p.series.push_back({"", {0, first, 10 * first, 1000 * first}, {1, 2, 3, 4}, {}, plot::Style::lines});
    plot::Figure f;
    f.panels = {p};
    const testing::GnuplotScript s(plot::script(f, "pngcairo", "x.png"));
    double x0 = 0;
    for (const auto& l : s.lines)
      if (l.rfind("set xtics add (\"0\" ", 0) == 0) x0 = std::stod(l.substr(std::string("set xtics add (\"0\" ").size()));
    REQUIRE(x0 > 0);
    CHECK(x0 < first);
    const double decade = std::pow(10.0, std::floor(std::log10(first)));
    for (double tic : {decade, 10 * decade})
      if (tic > x0) CHECK(tic / x0 >= 3 - 1e-9);
  }
}
