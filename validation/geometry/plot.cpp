// Figures of an `hdat geometry` output folder: F_N against N (top-N vs random, with bootstrap
// intervals), F with and without the sink, the taxonomy per layer, attention mass by query
// position, and the sparsification curves.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "hdat/geometry/analysis.hpp"
#include "hdat/core/plot.hpp"
#include "hdat/core/table.hpp"

namespace hdat::geometry {

namespace {

namespace fs = std::filesystem;

bool match(const Table& t, std::size_t r, const std::map<std::string, std::string>& want) {
  for (const auto& [col, val] : want)
    if (t.text(r, col) != val) return false;
  return true;
}

// x (column), y (column), lo/hi bands of the rows matching `want`.
struct Curve {
  std::vector<double> x, y, lo, hi;
};
Curve curve(const Table& t, const std::map<std::string, std::string>& want, const std::string& xc, const std::string& yc,
            const std::string& loc = "", const std::string& hic = "") {
  Curve c;
  for (std::size_t r = 0; r < t.rows(); ++r)
    if (match(t, r, want)) {
      c.x.push_back(t.number(r, xc));
      c.y.push_back(t.number(r, yc));
      if (!loc.empty()) c.lo.push_back(t.number(r, loc));
      if (!hic.empty()) c.hi.push_back(t.number(r, hic));
    }
  return c;
}

void add_band(plot::Panel& p, const Curve& c, const std::string& label, int color) {
  p.series.push_back({label, c.x, c.y, {}, plot::Style::linespoints, color});
  if (!c.lo.empty()) {
    p.series.push_back({"", c.x, c.lo, {}, plot::Style::dashed, color});
    p.series.push_back({"", c.x, c.hi, {}, plot::Style::dashed, color});
  }
}

// "16-63" -> 16 (the bins are labelled by their first and last query).
double bin_start(const std::string& label) { return std::stod(label.substr(0, label.find('-'))); }

std::vector<std::string> groups_of(const Table& t) {
  std::vector<std::string> g;
  std::set<std::string> seen;
  for (std::size_t r = 0; r < t.rows(); ++r)
    if (seen.insert(t.text(r, "queries")).second) g.push_back(t.text(r, "queries"));
  return g;
}

}  // namespace

void plot_geometry(const fs::path& dir) {
  if (fs::exists(dir / "summary.csv")) {
    const Table t = Table::read_csv_file((dir / "summary.csv").string());
    // Final query, the latest bin, and all evaluated queries; Euclidean and cosine.
    std::vector<std::string> groups = groups_of(t), shown;
    for (const std::string& g : groups)
      if (g == "final" || g == "all") shown.push_back(g);
    if (groups.size() > 2) shown.insert(shown.begin() + 1, groups[groups.size() - 2]);  // the last bin
    plot::Figure f;
    f.title = "geometric F_N of top-N vs random sets (dashed: 95% bootstrap interval over documents)";
    f.columns = 2;
    for (const std::string& g : shown)
      for (const std::string d : {"euclidean", "cosine"}) {
        plot::Panel p;
        p.title = "queries " + g + ", " + d;
        p.xlabel = "N";
        p.ylabel = "F_N";
        p.logx = true;
        p.yrange = std::make_pair(0.0, 1.05);
        add_band(p, curve(t, {{"queries", g}, {"distance", d}, {"selection", "top"}}, "N", "F", "F_lo", "F_hi"), "top-N", 0);
        add_band(p, curve(t, {{"queries", g}, {"distance", d}, {"selection", "random"}}, "N", "F", "F_lo", "F_hi"), "random", 1);
        f.panels.push_back(std::move(p));
      }
    plot::render(f, dir / "fscore");
  }
  if (fs::exists(dir / "sink_effect.csv")) {
    const Table t = Table::read_csv_file((dir / "sink_effect.csv").string());
    plot::Figure f;
    f.title = "top-N F_N with the sink as a candidate and with it excluded (final query)";
    for (const std::string d : {"euclidean", "cosine"}) {
      plot::Panel p;
      p.title = d;
      p.xlabel = "N";
      p.ylabel = "F_N";
      p.logx = true;
      p.yrange = std::make_pair(0.0, 1.05);
      add_band(p, curve(t, {{"queries", "final"}, {"distance", d}}, "N", "F_with_sink", "F_with_sink_lo", "F_with_sink_hi"), "with sink", 0);
      add_band(p, curve(t, {{"queries", "final"}, {"distance", d}}, "N", "F_without_sink", "F_without_sink_lo", "F_without_sink_hi"),
               "without sink", 2);
      p.series.push_back({"share of top-N sets holding the sink", curve(t, {{"queries", "final"}, {"distance", d}}, "N", "sink_in_top").x,
                          curve(t, {{"queries", "final"}, {"distance", d}}, "N", "sink_in_top").y, {}, plot::Style::points, 3});
      f.panels.push_back(std::move(p));
    }
    plot::render(f, dir / "sink_effect");
  }
  if (fs::exists(dir / "taxonomy.csv")) {
    const Table t = Table::read_csv_file((dir / "taxonomy.csv").string());
    plot::Figure f;
    f.title = "head taxonomy per layer: labels (plurality over queries) and mean shares of the queries' roles";
    f.columns = 3;
    const std::vector<std::string> groups = groups_of(t);
    double most = 1;
    for (double x : t.numbers("retriever")) most = std::max(most, x);
    for (double x : t.numbers("mixer")) most = std::max(most, x);
    for (double x : t.numbers("reset")) most = std::max(most, x);
    // Labels over all queries and in the earliest bin (where a sink, if any, dominates).
    std::vector<std::string> shown = {"all"};
    for (const std::string& g : groups)
      if (g != "all" && g != "final") {
        shown.push_back(g);
        break;
      }
    for (const std::string& g : shown) {
      plot::Panel p;
      p.title = "heads by label, queries " + g;
      p.xlabel = "layer";
      p.ylabel = "heads";
      p.yrange = std::make_pair(-0.3, most + 0.8);
      int color = 0;
      for (const std::string r : {"retriever", "mixer", "reset"}) {
        const Curve c = curve(t, {{"queries", g}}, "layer", r);
        p.series.push_back({r, c.x, c.y, {}, plot::Style::linespoints, color++});
      }
      f.panels.push_back(std::move(p));
    }
    plot::Panel p;
    p.title = "mean share of queries per role, all queries";
    p.xlabel = "layer";
    p.ylabel = "share";
    p.yrange = std::make_pair(0.0, 1.05);
    int color = 0;
    for (const std::string r : {"retriever", "mixer", "reset"}) {
      const Curve c = curve(t, {{"queries", "all"}}, "layer", r + "_share");
      p.series.push_back({r, c.x, c.y, {}, plot::Style::linespoints, color++});
    }
    f.panels.push_back(std::move(p));
    plot::render(f, dir / "taxonomy");
  }
  if (fs::exists(dir / "attention_mass.csv")) {
    const Table t = Table::read_csv_file((dir / "attention_mass.csv").string());
    plot::Figure f;
    f.title = "mean attention on the sink (BOS), the previous token and the query itself, by query bin";
    std::set<double> layers;
    for (double l : t.numbers("layer")) layers.insert(l);
    for (const std::string what : {"sink", "previous", "self"}) {
      plot::Panel p;
      p.title = what;
      p.xlabel = "first query of the bin";
      p.logx = true;
      p.ylabel = "attention";
      int color = 0;
      for (double l : layers) {
        plot::Series s{fmt::format("layer {}", static_cast<int>(l)), {}, {}, {}, plot::Style::linespoints, color++};
        for (std::size_t r = 0; r < t.rows(); ++r)
          if (t.number(r, "layer") == l) {
            s.x.push_back(bin_start(t.text(r, "queries")));
            s.y.push_back(t.number(r, what));
          }
        p.series.push_back(std::move(s));
      }
      if (what == "sink") {
        plot::Series u{"uniform 1/(t+1)", {}, {}, {}, plot::Style::dashed, 9};
        for (std::size_t r = 0; r < t.rows(); ++r)
          if (t.number(r, "layer") == *layers.begin()) {
            u.x.push_back(bin_start(t.text(r, "queries")));
            u.y.push_back(t.number(r, "uniform"));
          }
        p.series.push_back(std::move(u));
        p.logy = true;
      }
      f.panels.push_back(std::move(p));
    }
    f.columns = 3;
    plot::render(f, dir / "attention_mass");
  }
  if (fs::exists(dir / "sparsify.csv")) {
    const Table t = Table::read_csv_file((dir / "sparsify.csv").string());
    plot::Figure f;
    f.title = "head sparsification: increase of held-out NLL against the fraction of heads removed";
    f.columns = 1;
    plot::Panel p;
    p.xlabel = "fraction of heads removed";
    p.ylabel = "Δ NLL (nats/token)";
    int color = 0;
    for (const std::string r : {"taxonomy", "write_norm", "entropy", "random"}) {
      Curve c = curve(t, {{"ranking", r}}, "fraction", "delta");
      if (c.x.empty()) continue;
      c.x.insert(c.x.begin(), 0.0);
      c.y.insert(c.y.begin(), 0.0);
      p.series.push_back({r, c.x, c.y, {}, plot::Style::linespoints, color++});
    }
    f.panels.push_back(std::move(p));
    plot::render(f, dir / "sparsify");
  }
}

}  // namespace hdat::geometry
