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

// The figures of plot_geometry, one per table of the folder.
namespace geometry_figures {
namespace {

const std::vector<std::string> kDistances = {"euclidean", "cosine"};
const std::vector<std::string> kRoles = {"retriever", "mixer", "reset"};

Table read_table(const fs::path& dir, const char* name) { return Table::read_csv_file((dir / name).string()); }

// An F_N panel: N on a log axis, F_N in [0, 1].
plot::Panel f_panel(const std::string& title) {
  plot::Panel p;
  p.title = title;
  p.xlabel = "N";
  p.ylabel = "F_N";
  p.logx = true;
  p.yrange = std::make_pair(0.0, 1.05);
  return p;
}

// The final query, the latest bin, and all evaluated queries.
std::vector<std::string> fscore_groups(const Table& t) {
  const std::vector<std::string> groups = groups_of(t);
  std::vector<std::string> shown;
  for (const std::string& g : groups)
    if (g == "final" || g == "all") shown.push_back(g);
  if (groups.size() > 2) shown.insert(shown.begin() + 1, groups[groups.size() - 2]);  // the last bin
  return shown;
}

// DIR/fscore: top-N against random sets, per query group and distance.
void plot_fscore(const fs::path& dir) {
  const Table t = read_table(dir, "summary.csv");
  plot::Figure f;
  f.title = "geometric F_N of top-N vs random sets (dashed: 95% bootstrap interval over documents)";
  f.columns = 2;
  for (const std::string& g : fscore_groups(t))
    for (const std::string& d : kDistances) {
      plot::Panel p = f_panel("queries " + g + ", " + d);
      add_band(p, curve(t, {{"queries", g}, {"distance", d}, {"selection", "top"}}, "N", "F", "F_lo", "F_hi"), "top-N", 0);
      add_band(p, curve(t, {{"queries", g}, {"distance", d}, {"selection", "random"}}, "N", "F", "F_lo", "F_hi"), "random", 1);
      f.panels.push_back(std::move(p));
    }
  plot::render(f, dir / "fscore");
}

// DIR/sink_effect: top-N F_N of the final query with and without the sink among the candidates.
void plot_sink_effect(const fs::path& dir) {
  const Table t = read_table(dir, "sink_effect.csv");
  plot::Figure f;
  f.title = "top-N F_N with the sink as a candidate and with it excluded (final query)";
  for (const std::string& d : kDistances) {
    const std::map<std::string, std::string> final_query = {{"queries", "final"}, {"distance", d}};
    plot::Panel p = f_panel(d);
    add_band(p, curve(t, final_query, "N", "F_with_sink", "F_with_sink_lo", "F_with_sink_hi"), "with sink", 0);
    add_band(p, curve(t, final_query, "N", "F_without_sink", "F_without_sink_lo", "F_without_sink_hi"), "without sink", 2);
    const Curve share = curve(t, final_query, "N", "sink_in_top");
    p.series.push_back({"share of top-N sets holding the sink", share.x, share.y, {}, plot::Style::points, 3});
    f.panels.push_back(std::move(p));
  }
  plot::render(f, dir / "sink_effect");
}

// A line per role against the layer, of `suffix`ed columns (the head counts, or "_share").
plot::Panel roles_panel(const Table& t, const std::string& group, const std::string& suffix, const std::string& title,
                        const std::string& ylabel, std::pair<double, double> yrange) {
  plot::Panel p;
  p.title = title;
  p.xlabel = "layer";
  p.ylabel = ylabel;
  p.yrange = yrange;
  int color = 0;
  for (const std::string& r : kRoles) {
    const Curve c = curve(t, {{"queries", group}}, "layer", r + suffix);
    p.series.push_back({r, c.x, c.y, {}, plot::Style::linespoints, color++});
  }
  return p;
}

// DIR/taxonomy: the heads by label over all queries and in the earliest bin (where a sink, if
// any, dominates), and the mean share of the queries' roles.
void plot_taxonomy(const fs::path& dir) {
  const Table t = read_table(dir, "taxonomy.csv");
  plot::Figure f;
  f.title = "head taxonomy per layer: labels (plurality over queries) and mean shares of the queries' roles";
  f.columns = 3;
  const std::vector<std::string> groups = groups_of(t);
  double most = 1;
  for (const std::string& r : kRoles)
    for (double x : t.numbers(r)) most = std::max(most, x);
  std::vector<std::string> shown = {"all"};
  for (const std::string& g : groups)
    if (g != "all" && g != "final") {
      shown.push_back(g);
      break;
    }
  for (const std::string& g : shown)
    f.panels.push_back(roles_panel(t, g, "", "heads by label, queries " + g, "heads", std::make_pair(-0.3, most + 0.8)));
  f.panels.push_back(roles_panel(t, "all", "_share", "mean share of queries per role, all queries", "share", std::make_pair(0.0, 1.05)));
  plot::render(f, dir / "taxonomy");
}

// Column `what` against the first query of the bin, over the rows of one layer.
plot::Series by_query_bin(const Table& t, double layer, const std::string& what, const std::string& label, plot::Style style, int color) {
  plot::Series s{label, {}, {}, {}, style, color};
  for (std::size_t r = 0; r < t.rows(); ++r)
    if (t.number(r, "layer") == layer) {
      s.x.push_back(bin_start(t.text(r, "queries")));
      s.y.push_back(t.number(r, what));
    }
  return s;
}

// DIR/attention_mass: a line per layer of the attention on the sink, the previous token and the
// query itself; on the sink, beside the uniform attention 1/(t+1) on a log scale.
void plot_attention_mass(const fs::path& dir) {
  const Table t = read_table(dir, "attention_mass.csv");
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
    for (double l : layers)
      p.series.push_back(by_query_bin(t, l, what, fmt::format("layer {}", static_cast<int>(l)), plot::Style::linespoints, color++));
    if (what == "sink") {
      p.series.push_back(by_query_bin(t, *layers.begin(), "uniform", "uniform 1/(t+1)", plot::Style::dashed, 9));
      p.logy = true;
    }
    f.panels.push_back(std::move(p));
  }
  f.columns = 3;
  plot::render(f, dir / "attention_mass");
}

// DIR/sparsify: the NLL increase per ranking, from (0, 0) with no head removed.
void plot_sparsify(const fs::path& dir) {
  const Table t = read_table(dir, "sparsify.csv");
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

}  // namespace
}  // namespace geometry_figures

void plot_geometry(const fs::path& dir) {
  using namespace geometry_figures;
  if (fs::exists(dir / "summary.csv")) plot_fscore(dir);
  if (fs::exists(dir / "sink_effect.csv")) plot_sink_effect(dir);
  if (fs::exists(dir / "taxonomy.csv")) plot_taxonomy(dir);
  if (fs::exists(dir / "attention_mass.csv")) plot_attention_mass(dir);
  if (fs::exists(dir / "sparsify.csv")) plot_sparsify(dir);
}

}  // namespace hdat::geometry
