#include "hdat/sweep/plot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <tuple>

#include "hdat/core/error.hpp"
#include "hdat/core/output.hpp"
#include "hdat/core/plot.hpp"
#include "hdat/core/table.hpp"
#include "hdat/core/constants.hpp"
#include "hdat/core/suggest.hpp"

namespace hdat::sweep {

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {


std::string safe_name(const std::string& s) {
  std::string o;
  for (char c : s) o += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '_';
  return o;
}

// A grid value as the text sweep.csv holds for it (Table::text gives the same for its cells).
std::string value_key(const json& v) {
  if (v.is_number()) return format_number(v.get<double>());
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

json read_run(const fs::path& dir) {
  const fs::path f = dir / "run.json";
  if (!fs::exists(f)) return json::object();
  json j = json::parse(read_file(f), nullptr, false);
  return j.is_discarded() || !j.is_object() ? json::object() : j;
}

bool positive_span_over(const std::vector<double>& v, double ratio) {
  double lo = INFINITY, hi = 0;
  for (double x : v)
    if (std::isfinite(x) && x > 0) lo = std::min(lo, x), hi = std::max(hi, x);
  return hi > 0 && std::isfinite(lo) && hi / lo > ratio;
}

bool all_positive(const std::vector<double>& v) {
  bool any = false;
  for (double x : v) {
    if (std::isnan(x)) continue;
    if (!(x > 0)) return false;
    any = true;
  }
  return any;
}

// Log y when every value is positive and they span more than three decades (risks decaying to zero).
void auto_logy(plot::Panel& p) {
  std::vector<double> all;
  for (const auto& s : p.series) all.insert(all.end(), s.y.begin(), s.y.end());
  p.logy = all_positive(all) && positive_span_over(all, 1e3);
}

struct SweepAxis {
  std::string key;
  std::vector<json> values;
  bool log = false, numeric = false;
};

}  // namespace

// The steps of plot_sweep: what to draw, against which axes, then heat maps or line plots.
namespace sweep_figures {
namespace {

std::vector<SweepAxis> grid_axes(const json& run) {
  std::vector<SweepAxis> axes;
  for (const auto& a : run.at("grid")) axes.push_back({a.at("key"), a.at("values").get<std::vector<json>>(), a.value("log", false), a.value("numeric", false)});
  return axes;
}

// The observables asked for (by label or spec), else all of the sweep's; each a column of sweep.csv.
std::vector<std::string> requested_observables(const json& run, const Table& t, const SweepPlotOptions& o) {
  std::vector<std::string> labels;
  for (const auto& ob : run.at("observables")) labels.push_back(ob.at("label"));
  if (!o.observables.empty()) {
    std::vector<std::string> chosen;
    for (const auto& want : o.observables) {
      std::string found;
      for (const auto& ob : run.at("observables"))
        if (ob.at("label") == want || ob.at("spec") == want) found = ob.at("label");
      if (found.empty()) {
        throw InputError("--observable", fmt::format("'{}' is not a column of this sweep{}", want, did_you_mean_among(want, labels, "it has")));
      }
      chosen.push_back(found);
    }
    labels = chosen;
  }
  for (const auto& l : labels)
    if (!t.has_column(l)) throw InputError("DIR", fmt::format("sweep.csv has no column '{}'", l));
  return labels;
}

// The standard error column of an observable (its error bars), or "".
std::string se_column(const Table& t, const std::string& label) { return t.has_column(label + "_se") ? label + "_se" : ""; }

bool is_error_bar_of_another(const std::string& label, const std::vector<std::string>& labels) {
  const std::string suffix = "_se";
  return label.size() > suffix.size() && label.compare(label.size() - suffix.size(), suffix.size(), suffix) == 0 &&
         std::find(labels.begin(), labels.end(), label.substr(0, label.size() - suffix.size())) != labels.end();
}

// An observable without a single finite value (e.g. an event that never happened) has nothing to
// draw; <name>_se beside <name> is its error bars, not a figure of its own.
std::vector<std::string> drawable_observables(const std::vector<std::string>& labels, const Table& t) {
  std::vector<std::string> drawable;
  for (const auto& l : labels) {
    if (is_error_bar_of_another(l, labels)) continue;
    bool any = false;
    for (std::size_t r = 0; r < t.rows() && !any; ++r) any = std::isfinite(t.number(r, l));
    if (any) drawable.push_back(l);
    else fmt::print(stderr, "hdat plot: {} has no finite value in sweep.csv; not drawn\n", l);
  }
  if (drawable.empty()) throw InputError("DIR", "no observable of this sweep has a finite value: nothing to draw");
  return drawable;
}

// The swept keys on the figure (x, and y of a heat map) and the others, which make one heat map
// each per combination of their values, or one line each.
struct FigureAxes {
  const SweepAxis* x = nullptr;
  const SweepAxis* y = nullptr;
  bool heat = false;
  std::vector<const SweepAxis*> others;
};

const SweepAxis* axis_named(const std::vector<const SweepAxis*>& varying, const std::string& key, const char* option) {
  for (const auto* a : varying)
    if (a->key == key) return a;
  std::string have;
  for (const auto* a : varying) have += (have.empty() ? "" : ", ") + a->key;
  throw InputError(option, fmt::format("'{}' is not a swept key with more than one value (swept: {})", key, have));
}

// The keys asked for, else x: the numeric key with most values (else the first swept), y: the next
// numeric one. A heat map when asked, or by default for two numeric keys of at least four values.
FigureAxes figure_axes(const std::vector<SweepAxis>& axes, const SweepPlotOptions& o) {
  std::vector<const SweepAxis*> varying, numeric;
  for (const auto& a : axes)
    if (a.values.size() > 1) {
      varying.push_back(&a);
      if (a.numeric) numeric.push_back(&a);
    }
  if (varying.empty()) throw InputError("DIR", "the sweep has a single point: nothing to draw against");
  std::stable_sort(numeric.begin(), numeric.end(), [](const SweepAxis* a, const SweepAxis* b) { return a->values.size() > b->values.size(); });
  FigureAxes f;
  f.x = !o.x.empty() ? axis_named(varying, o.x, "--x") : !numeric.empty() ? numeric[0] : varying[0];
  if (!o.y.empty()) f.y = axis_named(varying, o.y, "--y");
  else
    for (const auto* a : numeric)
      if (a != f.x) {
        f.y = a;
        break;
      }
  const SweepAxis *ax = f.x, *ay = f.y;
  if (o.kind == SweepPlotOptions::Kind::heatmap) {
    if (!ay || !ax->numeric || !ay->numeric) throw InputError("--heatmap", "needs two swept number keys with more than one value each");
    f.heat = true;
  } else if (o.kind == SweepPlotOptions::Kind::automatic) {
    f.heat = ay && ax->numeric && ay->numeric && (!o.y.empty() || (ax->values.size() >= 4 && ay->values.size() >= 4));
  }
  if (f.heat && ax == ay) throw InputError("--y", "x and y must be different keys");
  for (const auto* a : varying)
    if (a != ax && !(f.heat && a == ay)) f.others.push_back(a);
  return f;
}

// The rows of sweep.csv as the figures read them.
class SweepRows {
 public:
  SweepRows(const Table& t, const FigureAxes& axes) : t_(t), axes_(axes) {
    for (std::size_t r = 0; r < t.rows(); ++r)
      if (std::find(combos_.begin(), combos_.end(), combo_of(r)) == combos_.end()) combos_.push_back(combo_of(r));
  }
  const Table& table() const { return t_; }
  // Which rows carry a result: failures and pending points are left blank.
  bool usable(std::size_t r) const {
    const std::string s = t_.text(r, "status");
    return s == "ok" || s == "disagree" || s == "undecided";
  }
  // The values of the keys not on the figure, "key=value, ..." ("" when there are none).
  std::string combo_of(std::size_t r) const {
    std::string s;
    for (const auto* a : axes_.others) s += (s.empty() ? "" : ", ") + a->key + "=" + t_.text(r, a->key);
    return s;
  }
  const std::vector<std::string>& combos() const { return combos_; }  // in row (grid) order
  // The value of a numeric key, else the index of the row's value among the key's values.
  double x_position(const SweepAxis& a, std::size_t r) const {
    const std::string k = t_.text(r, a.key);
    for (std::size_t i = 0; i < a.values.size(); ++i)
      if (value_key(a.values[i]) == k) return a.numeric ? a.values[i].get<double>() : static_cast<double>(i);
    return kNaN;
  }

 private:
  const Table& t_;
  const FigureAxes& axes_;
  std::vector<std::string> combos_;
};

std::string axis_label(const SweepAxis& a) {
  if (a.numeric) return a.key;
  std::string l = a.key + " (";
  for (std::size_t i = 0; i < a.values.size(); ++i) l += (i ? ", " : "") + std::to_string(i) + ": " + value_key(a.values[i]);
  return l + ")";
}

plot::Heatmap heatmap_of(const SweepRows& rows, const FigureAxes& axes, const std::string& label, const std::string& combo,
                         const std::string& title_prefix, const SweepPlotOptions& o) {
  const Table& t = rows.table();
  const SweepAxis &ax = *axes.x, &ay = *axes.y;
  plot::Heatmap h;
  h.xlabel = ax.key, h.ylabel = ay.key, h.zlabel = label;
  h.title = fmt::format("{}: {}{}", title_prefix, label, combo.empty() ? "" : " (" + combo + ")");
  for (const auto& v : ax.values) h.x.push_back(v.get<double>());
  for (const auto& v : ay.values) h.y.push_back(v.get<double>());
  h.z = Eigen::MatrixXd::Constant(static_cast<Eigen::Index>(h.x.size()), static_cast<Eigen::Index>(h.y.size()), kNaN);
  for (std::size_t r = 0; r < t.rows(); ++r) {
    if (rows.combo_of(r) != combo || !rows.usable(r)) continue;
    const std::string kx = t.text(r, ax.key), ky = t.text(r, ay.key);
    for (std::size_t i = 0; i < ax.values.size(); ++i)
      for (std::size_t j = 0; j < ay.values.size(); ++j)
        if (value_key(ax.values[i]) == kx && value_key(ay.values[j]) == ky)
          h.z(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = t.number(r, label);
  }
  h.contours = o.contours;
  h.logx = ax.log, h.logy = ay.log;
  return h;
}

// One heat map per observable and combination of the other keys (at most 48 combinations).
std::vector<fs::path> draw_heatmaps(const fs::path& dir, const SweepRows& rows, const FigureAxes& axes, const std::vector<std::string>& labels,
                                    const std::string& title_prefix, const SweepPlotOptions& o) {
  const std::size_t max_figures = 48;
  const std::vector<std::string>& combos = rows.combos();
  std::vector<fs::path> stems;
  for (const auto& label : labels)
    for (std::size_t c = 0; c < combos.size() && c < max_figures; ++c) {
      plot::Figure f;
      f.heatmap = heatmap_of(rows, axes, label, combos[c], title_prefix, o);
      f.panel_width = 700, f.panel_height = 540;
      const fs::path stem = dir / ("sweep_" + safe_name(label) + (combos[c].empty() ? "" : "_" + safe_name(combos[c])));
      plot::render(f, stem);
      stems.push_back(stem);
    }
  return stems;
}

// The line of one observable at one combination of the other keys, in x order (blank where no result).
// With a standard error column, points with error bars (add_lines joins them).
plot::Series line_of(const SweepRows& rows, const SweepAxis& ax, const std::string& label, const std::string& combo, const std::string& name) {
  const Table& t = rows.table();
  const std::string se = se_column(t, label);
  plot::Series s;
  s.label = name;
  s.style = se.empty() ? plot::Style::linespoints : plot::Style::errorbars;
  std::vector<std::array<double, 3>> xy;
  for (std::size_t r = 0; r < t.rows(); ++r)
    if (rows.combo_of(r) == combo)
      xy.push_back({rows.x_position(ax, r), rows.usable(r) ? t.number(r, label) : kNaN, rows.usable(r) && !se.empty() ? t.number(r, se) : kNaN});
  std::sort(xy.begin(), xy.end(), [](const auto& a, const auto& b) { return a[0] < b[0]; });
  for (const auto& [x, y, e] : xy) {
    s.x.push_back(x), s.y.push_back(y);
    if (!se.empty()) s.yerr.push_back(e);
  }
  return s;
}

// The series of a panel, each in its own colour; points with error bars joined by a line.
void add_lines(plot::Panel& p, std::vector<plot::Series> lines) {
  for (auto& l : lines) {
    if (l.color < 0) l.color = static_cast<int>(std::count_if(p.series.begin(), p.series.end(), [](const plot::Series& s) { return !s.label.empty(); }));
    if (l.style == plot::Style::errorbars) {
      plot::Series joined = l;
      joined.label.clear();
      joined.style = plot::Style::lines;
      joined.yerr.clear();
      p.series.push_back(std::move(joined));
    }
    p.series.push_back(std::move(l));
  }
}

// A validate sweep's points whose verdict is not "agree" marked on the panel (the value is drawn
// either way): where a point did not decide, or disagreed, the figure says so, not only sweep.csv's
// status and reason columns.
void mark_verdicts(plot::Panel& p, const SweepRows& rows, const SweepAxis& ax, const std::string& label) {
  const Table& t = rows.table();
  for (const auto& [status, name, color] : {std::tuple<std::string, std::string, int>{"undecided", "undecided (sweep.csv: reason)", 5},
                                            {"disagree", "DISAGREE", 1}}) {
    plot::Series marks;
    marks.label = name, marks.style = plot::Style::ring, marks.color = color;
    for (std::size_t r = 0; r < t.rows(); ++r)
      if (t.text(r, "status") == status && std::isfinite(t.number(r, label))) marks.x.push_back(rows.x_position(ax, r)), marks.y.push_back(t.number(r, label));
    if (!marks.x.empty()) p.series.push_back(std::move(marks));
  }
}

// Every observable in one panel.
// The grid's extent with a margin (a factor on a log axis; the positions of a categorical one), so
// that the first and last points are not on the frame.
std::optional<std::pair<double, double>> padded_axis(const SweepAxis& ax) {
  double lo = INFINITY, hi = -INFINITY;
  for (std::size_t i = 0; i < ax.values.size(); ++i) {
    const double v = ax.numeric ? ax.values[i].get<double>() : static_cast<double>(i);
    lo = std::min(lo, v), hi = std::max(hi, v);
  }
  if (!(hi > lo)) return std::nullopt;
  if (ax.log) return std::make_pair(lo / std::pow(hi / lo, 0.04), hi * std::pow(hi / lo, 0.04));
  return std::make_pair(lo - 0.04 * (hi - lo), hi + 0.04 * (hi - lo));
}

plot::Panel panel_together(const SweepRows& rows, const SweepAxis& ax, const std::vector<std::string>& labels) {
  plot::Panel p;
  p.xrange = padded_axis(ax);
  p.xlabel = axis_label(ax), p.ylabel = labels.size() == 1 ? labels[0] : "value";
  p.logx = ax.log;
  for (const auto& label : labels) {
    std::vector<plot::Series> lines;
    for (const auto& combo : rows.combos()) lines.push_back(line_of(rows, ax, label, combo, combo.empty() ? label : label + ", " + combo));
    // An observable that does not depend on the other keys (the Bayes risk against the activation)
    // is one reference line, not several on top of each other.
    bool same = true;
    for (const auto& l : lines) same = same && l.x == lines.front().x && l.y == lines.front().y;
    if (same && lines.size() > 1) {
      lines.resize(1);
      lines.front().label = label;
      lines.front().style = plot::Style::dashed;
      lines.front().color = 7;  // grey
    }
    add_lines(p, std::move(lines));
  }
  for (const auto& label : labels) mark_verdicts(p, rows, ax, label);
  auto_logy(p);
  return p;
}

plot::Panel panel_of(const SweepRows& rows, const SweepAxis& ax, const std::string& label) {
  plot::Panel p;
  p.xrange = padded_axis(ax);
  p.title = label;
  p.xlabel = axis_label(ax), p.ylabel = label;
  p.logx = ax.log;
  std::vector<plot::Series> lines;
  for (const auto& combo : rows.combos()) lines.push_back(line_of(rows, ax, label, combo, combo.empty() ? label : combo));
  add_lines(p, std::move(lines));
  mark_verdicts(p, rows, ax, label);
  auto_logy(p);
  return p;
}

// One figure DIR/sweep: a panel per observable, or all in one.
fs::path draw_lines(const fs::path& dir, const SweepRows& rows, const FigureAxes& axes, const std::vector<std::string>& labels,
                    const std::string& title_prefix, const SweepPlotOptions& o) {
  plot::Figure f;
  f.title = title_prefix;
  if (o.together) f.panels.push_back(panel_together(rows, *axes.x, labels));
  else
    for (const auto& label : labels) f.panels.push_back(panel_of(rows, *axes.x, label));
  f.columns = f.panels.size() > 1 ? 2 : 1;
  const fs::path stem = dir / "sweep";
  plot::render(f, stem);
  return stem;
}

}  // namespace
}  // namespace sweep_figures

std::vector<fs::path> plot_sweep(const fs::path& dir, const SweepPlotOptions& o) {
  using namespace sweep_figures;
  const json run = read_run(dir);
  if (run.value("command", "") != "sweep") throw InputError("DIR", dir.string() + " is not a sweep folder (run.json \"command\" is not \"sweep\")");
  if (!fs::exists(dir / "sweep.csv")) throw InputError("DIR", "no sweep.csv in " + dir.string());
  const Table t = Table::read_csv_file((dir / "sweep.csv").string());
  const std::vector<SweepAxis> axes = grid_axes(run);
  const std::vector<std::string> labels = drawable_observables(requested_observables(run, t, o), t);
  const FigureAxes on_figure = figure_axes(axes, o);
  const SweepRows rows(t, on_figure);
  const std::string title_prefix = fmt::format("{} sweep of {}", run.value("model", ""), run.value("mode", ""));
  if (on_figure.heat) return draw_heatmaps(dir, rows, on_figure, labels, title_prefix, o);
  return {draw_lines(dir, rows, on_figure, labels, title_prefix, o)};
}

// The steps of plot_generic: each table of the folder, a panel per group of its columns.
namespace generic_figures {
namespace {

// Every .csv of the folder that hdat can read as a table, by stem (hidden files left out).
std::map<std::string, Table> folder_tables(const fs::path& dir) {
  std::vector<fs::path> csvs;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".csv" && e.path().filename().string().front() != '.') csvs.push_back(e.path());
  std::sort(csvs.begin(), csvs.end());
  std::map<std::string, Table> tables;
  for (const auto& p : csvs) {
    try {
      tables[p.stem().string()] = Table::read_csv_file(p.string());
    } catch (const std::exception&) {
      // not a table hdat can read: no figure
    }
  }
  return tables;
}

// Numbers only, and at least one of them finite.
bool is_number_column(const Table& t, std::size_t c) {
  bool any_finite = false;
  for (std::size_t r = 0; r < t.rows(); ++r) {
    const Cell& cell = t.row(r)[c];
    const double* d = std::get_if<double>(&cell);
    if (!d) return false;
    any_finite = any_finite || std::isfinite(*d);
  }
  return any_finite;
}

// The first column when it holds numbers (on a log scale when it spans over two decades), else the row index.
struct XAxis {
  std::string column;
  bool numeric;
  std::vector<double> values;
  bool log;
};

XAxis x_axis(const Table& t) {
  XAxis a;
  a.column = t.columns()[0];
  a.numeric = is_number_column(t, 0);
  for (std::size_t r = 0; r < t.rows(); ++r) a.values.push_back(a.numeric ? t.number(r, a.column) : static_cast<double>(r));
  a.log = a.numeric && positive_span_over(a.values, 100.0);
  return a;
}

// Columns named <column>_se (or _sd, _std, _err, _stderr) beside <column> are its error bars, not curves.
struct ErrorColumns {
  std::set<std::string> all;
  std::map<std::string, std::string> of;  // column -> its error column
};

ErrorColumns error_columns(const Table& t) {
  static const std::vector<std::string> suffixes = {"_se", "_sd", "_std", "_err", "_stderr"};
  ErrorColumns e;
  for (const auto& c : t.columns())
    for (const auto& suf : suffixes)
      if (c.size() > suf.size() && c.compare(c.size() - suf.size(), suf.size(), suf) == 0) {
        const std::string base = c.substr(0, c.size() - suf.size());
        if (t.has_column(base)) e.all.insert(c), e.of[base] = c;
      }
  return e;
}

// The columns of one panel: one column, or a block q_0, q_1, ... (also Q_0_1, ...) named q.
struct ColumnGroup {
  std::string name;
  std::vector<std::string> columns;
};

// The number columns after x, grouped, in order of first appearance.
std::vector<ColumnGroup> column_groups(const Table& t, const ErrorColumns& errors) {
  static const std::regex block_re("^([A-Za-z][A-Za-z0-9]*)_([0-9]+)(_[0-9]+)?$");
  std::vector<ColumnGroup> groups;
  for (std::size_t c = 1; c < t.columns().size(); ++c) {
    const std::string& col = t.columns()[c];
    if (errors.all.count(col) || !is_number_column(t, c)) continue;
    std::smatch m;
    const std::string g = std::regex_match(col, m, block_re) ? m[1].str() : col;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const ColumnGroup& p) { return p.name == g; });
    if (it == groups.end()) groups.push_back({g, {col}});
    else it->columns.push_back(col);
  }
  return groups;
}

// One table as its panels draw it.
struct TableView {
  const Table& table;
  const XAxis& x;
  const ErrorColumns& errors;
  const Table* sim;  // a simulation drawn over this theory curve, or null
  bool points;       // points (a simulation, a short table) rather than lines
};

// Column `col` against x, with its error bars when drawn as points; `alone` in its panel.
plot::Series column_series(const TableView& v, const std::string& col, int color, bool alone) {
  plot::Series s;
  s.label = alone ? (v.sim ? "theory" : "") : col;
  s.color = color;
  const auto err = v.errors.of.find(col);
  s.style = v.points ? (err != v.errors.of.end() ? plot::Style::errorbars : plot::Style::linespoints) : plot::Style::lines;
  for (std::size_t r = 0; r < v.table.rows(); ++r) {
    if (v.x.log && v.x.values[r] < 0) continue;
    s.x.push_back(v.x.values[r]);
    s.y.push_back(v.table.number(r, col));
    if (s.style == plot::Style::errorbars) s.yerr.push_back(v.table.number(r, err->second));
  }
  return s;
}

// The simulation's column `col`, with its standard errors when it has them.
plot::Series sim_series(const TableView& v, const std::string& col, int color, bool alone) {
  const Table& sim = *v.sim;
  plot::Series ss;
  ss.label = alone ? "simulation" : col + " (sim)";
  ss.color = color;
  const std::string se = sim.has_column(col + "_se") ? col + "_se" : "";
  ss.style = se.empty() ? plot::Style::points : plot::Style::errorbars;
  for (std::size_t r = 0; r < sim.rows(); ++r) {
    const double sx = sim.number(r, v.x.column);
    if (v.x.log && sx < 0) continue;
    ss.x.push_back(sx);
    ss.y.push_back(sim.number(r, col));
    if (!se.empty()) ss.yerr.push_back(sim.number(r, se));
  }
  return ss;
}

// Reference values in run.json named <something>_<column> (bayes_risk on the risk panel), except
// the final_ and initial_ values, which are the curve's own ends.
void add_reference_lines(plot::Panel& p, const json& run, const std::string& column) {
  const std::string suffix = "_" + column;
  for (auto it = run.begin(); it != run.end(); ++it) {
    const std::string& k = it.key();
    if (it.value().is_number() && k.size() > suffix.size() && k.compare(k.size() - suffix.size(), suffix.size(), suffix) == 0 &&
        k.rfind("final", 0) != 0 && k.rfind("initial", 0) != 0)
      p.hlines.emplace_back(it.value().get<double>(), k);
  }
}

// A panel of a group's first 16 columns, each over its simulation when there is one.
plot::Panel group_panel(const TableView& v, const ColumnGroup& g, const json& run) {
  const std::vector<std::string>& cols = g.columns;
  const bool alone = cols.size() == 1;
  const std::size_t shown = std::min<std::size_t>(cols.size(), 16);
  plot::Panel p;
  p.title = alone ? cols[0] : fmt::format("{}{}", g.name, shown < cols.size() ? fmt::format(" (first {} of {})", shown, cols.size()) : "");
  p.xlabel = v.x.numeric ? v.x.column : "row";
  p.ylabel = alone ? cols[0] : g.name;
  p.logx = v.x.log;
  for (std::size_t k = 0; k < shown; ++k) {
    plot::Series s = column_series(v, cols[k], static_cast<int>(k), alone);
    // A curve with a standard error: its band ± one SE under the line.
    const auto err = v.errors.of.find(cols[k]);
    if (s.style == plot::Style::lines && err != v.errors.of.end()) {
      plot::Series band = s;
      band.label.clear();
      band.style = plot::Style::band;
      for (std::size_t r = 0; r < v.table.rows(); ++r)
        if (!v.x.log || v.x.values[r] >= 0) band.yerr.push_back(v.table.number(r, err->second));
      p.series.push_back(std::move(band));
    }
    p.series.push_back(std::move(s));
    if (v.sim && v.sim->has_column(cols[k])) p.series.push_back(sim_series(v, cols[k], static_cast<int>(k), alone));
  }
  if (alone) add_reference_lines(p, run, cols[0]);
  auto_logy(p);
  return p;
}

// The panels of one table (none when it has no number column to draw); `tables` for its simulation.
std::vector<plot::Panel> table_panels(const std::string& stem_name, const Table& t, const std::map<std::string, Table>& tables,
                                      const json& run) {
  if (t.rows() == 0 || t.columns().size() < 2) return {};
  const XAxis x = x_axis(t);
  const ErrorColumns errors = error_columns(t);
  const std::vector<ColumnGroup> groups = column_groups(t, errors);
  if (groups.empty()) return {};
  // A simulation beside a theory curve is drawn over it.
  const auto sim = tables.find("sim");
  const bool over_sim =
      stem_name == "curve" && sim != tables.end() && !sim->second.columns().empty() && sim->second.columns()[0] == x.column;
  const TableView v{.table = t, .x = x, .errors = errors, .sim = over_sim ? &sim->second : nullptr,
                    .points = stem_name.rfind("sim", 0) == 0 || t.rows() <= 12};
  std::vector<plot::Panel> panels;
  for (const ColumnGroup& g : groups) panels.push_back(group_panel(v, g, run));
  return panels;
}

// DIR/<stem>, then DIR/<stem>_2, ...: at most 12 panels a figure.
std::vector<fs::path> render_panels(const fs::path& dir, const std::string& stem_name, const std::string& title,
                                    const std::vector<plot::Panel>& panels) {
  const std::size_t per_figure = 12;
  std::vector<fs::path> stems;
  for (std::size_t first = 0, part = 1; first < panels.size(); first += per_figure, ++part) {
    plot::Figure f;
    f.title = title;
    f.panels.assign(panels.begin() + static_cast<long>(first), panels.begin() + static_cast<long>(std::min(panels.size(), first + per_figure)));
    f.columns = f.panels.size() == 1 ? 1 : f.panels.size() <= 4 ? 2 : 3;
    const fs::path stem = dir / (part == 1 ? stem_name : fmt::format("{}_{}", stem_name, part));
    plot::render(f, stem);
    stems.push_back(stem);
  }
  return stems;
}

}  // namespace
}  // namespace generic_figures

std::vector<fs::path> plot_generic(const fs::path& dir) {
  using namespace generic_figures;
  if (!fs::is_directory(dir)) throw InputError("DIR", "no such folder: " + dir.string());
  const json run = read_run(dir);
  const std::map<std::string, Table> tables = folder_tables(dir);
  const std::string title_prefix = run.contains("model") ? fmt::format("{} {}: ", run.value("model", ""), run.value("command", "")) : "";
  std::vector<fs::path> stems;
  for (const auto& [stem_name, t] : tables)
    for (const fs::path& stem : render_panels(dir, stem_name, title_prefix + stem_name + ".csv", table_panels(stem_name, t, tables, run)))
      stems.push_back(stem);
  return stems;
}

}  // namespace hdat::sweep
