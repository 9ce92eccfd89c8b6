// The figures of validate folders, from the files the harness writes (validation_figures.hpp).
#include "hdat/core/validation_figures.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "hdat/core/error.hpp"
#include "hdat/core/output.hpp"
#include "hdat/core/plot.hpp"
#include "hdat/core/statistics.hpp"
#include "hdat/core/table.hpp"

namespace hdat::plot {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// ---- reading the folder ---------------------------------------------------------------------------

json read_json(const fs::path& file) {
  if (!fs::exists(file)) throw InputError("DIR", "no " + file.filename().string() + " in " + file.parent_path().string());
  json j = json::parse(read_file(file), nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw InputError("DIR", "malformed " + file.string() + " (not a JSON object)");
  return j;
}

Table read_table(const fs::path& file, const std::vector<std::string>& needed) {
  if (!fs::exists(file)) throw InputError("DIR", "no " + file.filename().string() + " in " + file.parent_path().string());
  Table t;
  try {
    t = Table::read_csv_file(file.string());
  } catch (const std::exception& e) {
    throw InputError("DIR", fmt::format("malformed {}: {}", file.string(), e.what()));
  }
  for (const auto& c : needed)
    if (!t.has_column(c)) throw InputError("DIR", fmt::format("malformed {}: no column '{}'", file.string(), c));
  if (t.empty()) throw InputError("DIR", fmt::format("{} has no rows: nothing to draw", file.string()));
  return t;
}

// A value of a record, or a message naming the file and the key.
const json& field(const json& record, const std::string& key, const std::string& file) {
  if (!record.contains(key)) throw InputError("DIR", fmt::format("malformed {}: no \"{}\"", file, key));
  return record[key];
}

double number_at(const json& j, const std::string& key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : NAN;
}

// ---- the verdict in the title ---------------------------------------------------------------------

// Lines of at most `width` characters, broken at spaces.
std::string wrap(const std::string& text, std::size_t width) {
  std::string out, line;
  std::size_t from = 0;
  while (from <= text.size()) {
    const std::size_t space = text.find(' ', from);
    const std::string word = text.substr(from, space == std::string::npos ? std::string::npos : space - from);
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    if (space == std::string::npos) break;
    from = space + 1;
  }
  return out + line;
}

// The verdict fields of a validation record: `verdict` ("agree", "disagree", "undecided"),
// `criterion` and `false_alarm`; a state-evolution verdict of today is an object with the
// criterion and the count of failures.
std::string verdict_line(const json& record) {
  std::string word = "?", criterion, false_alarm;
  const json* r = &record;
  if (record.contains("verdict") && record["verdict"].is_object()) {
    r = &record["verdict"];
    if (!r->contains("verdict") && r->contains("failures") && (*r)["failures"].is_number())
      word = (*r)["failures"].get<int>() == 0 ? "agree" : "disagree";
  }
  if (r->contains("verdict") && (*r)["verdict"].is_string()) word = (*r)["verdict"].get<std::string>();
  else if (r->contains("agree") && (*r)["agree"].is_boolean()) word = (*r)["agree"].get<bool>() ? "agree" : "disagree";
  for (const json* where : {r, &record}) {
    if (criterion.empty() && where->contains("criterion") && (*where)["criterion"].is_string()) criterion = (*where)["criterion"];
    if (false_alarm.empty() && where->contains("false_alarm") && !(*where)["false_alarm"].is_null())
      false_alarm = (*where)["false_alarm"].is_string() ? (*where)["false_alarm"].get<std::string>() : (*where)["false_alarm"].dump();
  }
  // The test in a few words where the record names it (the full criterion is in validate.json).
  const auto number = [](const json& j, const char* key, const char* form = "{:.3g}") {
    return j.contains(key) && j[key].is_number() ? fmt::format(fmt::runtime(form), j[key].get<double>()) : std::string("-");
  };
  if (r->contains("sign_flip") && (*r)["sign_flip"].is_object()) {
    const json& f = (*r)["sign_flip"];
    criterion = fmt::format("sign-flip test over {} seeds ({} patterns), critical value {}, attained false alarm {} (full criterion: validate.json)",
                            number(f, "seeds", "{:.0f}"), number(f, "patterns", "{:.0f}"), number(f, "critical_value"), number(f, "attained_false_alarm"));
  } else if (r->contains("test") && (*r)["test"].is_string() && r->contains("tests")) {
    criterion = fmt::format("{} over {} entries, critical value {} (full criterion: validate.json)", (*r)["test"].get<std::string>(),
                            number(*r, "tests", "{:.0f}"), number(*r, "critical_value"));
  }
  std::string upper = word;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  std::vector<std::string> clauses = {"verdict: " + upper};
  if (!criterion.empty()) clauses.push_back("criterion: " + criterion);
  if (!false_alarm.empty()) clauses.push_back("false-alarm rate: " + false_alarm);
  // A clause that fits on a line is not split ("false-alarm rate: 0.01" stays with its value): it
  // starts a new line where the current one has no room; a longer clause is broken at spaces.
  constexpr std::size_t width = 130;
  std::string text, line;  // the finished lines, and the current one (at most `width` long)
  for (std::size_t k = 0; k < clauses.size(); ++k) {
    const std::string piece = clauses[k] + (k + 1 < clauses.size() ? ";" : "");
    if (!line.empty() && piece.size() <= width && line.size() + 1 + piece.size() > width) {
      text += line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + piece;
    if (line.size() > width) {
      const std::string wrapped = wrap(line, width);
      const std::size_t last = wrapped.rfind('\n');
      text += wrapped.substr(0, last + 1);
      line = wrapped.substr(last + 1);
    }
  }
  return text + line;
}

std::string model_of(const json& run) { return run.contains("model") && run["model"].is_string() ? run["model"].get<std::string>() : ""; }

// ---- helpers for series -----------------------------------------------------------------------------

Series make_series(std::string label, Style style, int color) {
  Series s;
  s.label = std::move(label);
  s.style = style;
  s.color = color;
  return s;
}

// The block a quantity belongs to: M for M_0_1, the quantity itself for an observable.
std::string block_of(const std::string& quantity) {
  static const std::regex block_re("^([A-Za-z][A-Za-z0-9]*)_([0-9]+)(_[0-9]+)?$");
  std::smatch m;
  return std::regex_match(quantity, m, block_re) ? m[1].str() : quantity;
}

// The distinct values of a column, in order of first appearance.
std::vector<double> distinct_values(const Table& t, const std::string& column) {
  std::vector<double> out;
  for (std::size_t r = 0; r < t.rows(); ++r)
    if (std::find(out.begin(), out.end(), t.number(r, column)) == out.end()) out.push_back(t.number(r, column));
  return out;
}

bool spans_decades(const std::vector<double>& v) {
  double lo = INFINITY, hi = 0;
  for (double x : v)
    if (std::isfinite(x) && x > 0) lo = std::min(lo, x), hi = std::max(hi, x);
  return std::isfinite(lo) && hi / lo > 100;
}

// The sizes of the records with a margin on a log axis, so that no point sits on the frame.
std::optional<std::pair<double, double>> padded_sizes(const json& per_size, const std::string& size_name) {
  double lo = INFINITY, hi = 0;
  for (const auto& s : per_size) {
    const double x = number_at(s, size_name);
    if (std::isfinite(x) && x > 0) lo = std::min(lo, x), hi = std::max(hi, x);
  }
  if (!std::isfinite(lo)) return std::nullopt;
  return std::make_pair(lo / 1.4, hi * 1.4);
}

// ---- dynamics, mode=trajectory ------------------------------------------------------------------------

struct Trajectory {
  json run, record;
  std::string size_name;
  Table curves;
  Table points;  // validate.csv (the compared window), may be empty
  std::vector<std::string> quantities;  // in the order of validate_curves.csv
};

Trajectory read_trajectory(const fs::path& dir, const json& run, const json& record) {
  Trajectory v;
  v.run = run;
  v.record = record;
  const json& size = field(record, "size", "validate.json");
  if (!size.is_string()) throw InputError("DIR", "malformed validate.json: \"size\" is not a name");
  v.size_name = size.get<std::string>();
  v.curves = read_table(dir / "validate_curves.csv", {v.size_name, "t"});
  for (const auto& c : v.curves.columns()) {
    const std::string suffix = "_theory";
    if (c.size() > suffix.size() && c.compare(c.size() - suffix.size(), suffix.size(), suffix) == 0) {
      const std::string q = c.substr(0, c.size() - suffix.size());
      if (v.curves.has_column(q + "_sim")) v.quantities.push_back(q);
    }
  }
  if (v.quantities.empty()) throw InputError("DIR", "malformed validate_curves.csv: no quantity with _theory and _sim columns");
  if (fs::exists(dir / "validate.csv")) {
    const Table p = read_table(dir / "validate.csv", {v.size_name, "t", "quantity", "theory"});
    if (p.has_column("allowed") || p.has_column("theory_se")) v.points = p;
  }
  return v;
}

// The half width of the band around the theory at (size, t, q): what the criterion allows there, else
// two of the theory's standard errors; NaN outside the compared window.
class Bands {
 public:
  explicit Bands(const Table& points, const std::string& size_name) {
    if (points.empty()) return;
    column_ = points.has_column("allowed") ? "allowed" : "theory_se";
    factor_ = column_ == "allowed" ? 1.0 : 2.0;
    for (std::size_t r = 0; r < points.rows(); ++r)
      half_[{points.number(r, size_name), points.number(r, "t"), points.text(r, "quantity")}] = factor_ * points.number(r, column_);
  }
  double at(double size, double t, const std::string& q) const {
    const auto it = half_.find({size, t, q});
    return it == half_.end() ? NAN : it->second;
  }
  std::string meaning() const { return column_ == "allowed" ? "band: the deviation the criterion allows" : "band: 2 SE of the theory"; }
  bool any() const { return !half_.empty(); }

 private:
  std::string column_;
  double factor_ = 1;
  std::map<std::tuple<double, double, std::string>, double> half_;
};

// One panel per observable and per block (its first eight entries) at one size.
std::vector<Panel> size_panels(const Trajectory& v, const Bands& bands, double size) {
  std::vector<std::size_t> rows;
  std::vector<double> times;
  for (std::size_t r = 0; r < v.curves.rows(); ++r)
    if (v.curves.number(r, v.size_name) == size) rows.push_back(r), times.push_back(v.curves.number(r, "t"));
  const bool logx = spans_decades(times);
  double t_compare = NAN;
  for (const auto& s : v.record.value("per_size", json::array()))
    if (number_at(s, v.size_name) == size) t_compare = number_at(s, "t_compare");
  std::vector<std::string> blocks;
  for (const auto& q : v.quantities)
    if (std::find(blocks.begin(), blocks.end(), block_of(q)) == blocks.end()) blocks.push_back(block_of(q));
  std::vector<Panel> panels;
  for (const auto& b : blocks) {
    Panel p;
    p.title = std::isfinite(t_compare) ? fmt::format("{} (compared up to t = {:.3g})", b, t_compare) : b;
    p.xlabel = "t";
    p.ylabel = b;
    p.logx = logx;
    p.legend = "top left";
    std::vector<std::string> members;
    for (const auto& q : v.quantities)
      if (block_of(q) == b) members.push_back(q);
    const std::size_t shown = std::min<std::size_t>(members.size(), 8);
    if (shown < members.size()) p.title += fmt::format(", first {} of {}", shown, members.size());
    for (std::size_t k = 0; k < shown; ++k) {
      const std::string& q = members[k];
      const int color = static_cast<int>(k);
      Series band = make_series("", Style::band, color), line = make_series(shown > 1 ? q : "", Style::lines, color),
             points = make_series("", Style::errorbars, color);
      for (std::size_t r : rows) {
        const double t = v.curves.number(r, "t"), th = v.curves.number(r, q + "_theory");
        line.x.push_back(t), line.y.push_back(th);
        points.x.push_back(t), points.y.push_back(v.curves.number(r, q + "_sim"));
        points.yerr.push_back(v.curves.has_column(q + "_sim_se") ? v.curves.number(r, q + "_sim_se") : 0.0);
        const double half = bands.at(size, t, q);
        if (std::isfinite(half)) band.x.push_back(t), band.y.push_back(th), band.yerr.push_back(half);
      }
      if (!band.x.empty()) p.series.push_back(std::move(band));
      p.series.push_back(std::move(line));
      p.series.push_back(std::move(points));
    }
    panels.push_back(std::move(p));
  }
  return panels;
}

void draw_sizes(const fs::path& dir, const Trajectory& v) {
  const Bands bands(v.points, v.size_name);
  const std::string verdict = verdict_line(v.record);
  for (double size : distinct_values(v.curves, v.size_name)) {
    int seeds = 0;
    std::string size_verdict;
    for (const auto& s : v.record.value("per_size", json::array()))
      if (number_at(s, v.size_name) == size) {
        seeds = s.value("seeds", 0);
        if (s.contains("judged") && s["judged"].is_boolean() && !s["judged"].get<bool>()) size_verdict = " (this size not judged)";
        else if (s.contains("agree") && s["agree"].is_boolean()) size_verdict = s["agree"].get<bool>() ? " (this size agrees)" : " (this size DISAGREES)";
      }
    Figure f;
    f.columns = 3;
    f.title = fmt::format("{} validate at {} = {:g}{}: theory (lines{}) vs simulation (points, ± SE over {} seeds)\n{}", model_of(v.run),
                          v.size_name, size, size_verdict, bands.any() ? "; " + bands.meaning() : "", seeds, verdict);
    f.panels = size_panels(v, bands, size);
    if (f.panels.size() < 3) f.columns = static_cast<int>(f.panels.size());
    render(f, dir / fmt::format("validate_{}{}", v.size_name, format_number(size)));
  }
}

// The gap per block against size (log-log) with the fitted power law size^p.
std::optional<Panel> gap_panel(const Trajectory& v) {
  const json per_size = v.record.value("per_size", json::array());
  const json exponents = v.record.value("gap_exponent", json::object());
  Panel p;
  p.title = "RMS gap |theory - simulation|";
  const double window = number_at(v.record, "gap_window");
  if (std::isfinite(window)) p.title += fmt::format(" on t <= {:.3g}", window);
  const double expected = number_at(v.record, "gap_exponent_expected");
  if (std::isfinite(expected)) p.title += fmt::format(" (expected p about {:g})", expected);
  p.xlabel = v.size_name;
  p.ylabel = "gap";
  p.logx = p.logy = true;
  p.legend = "bottom left";
  p.xrange = padded_sizes(per_size, v.size_name);
  int color = 0;
  for (auto it = exponents.begin(); it != exponents.end(); ++it, ++color) {
    const std::string& b = it.key();
    const double slope = it.value().is_number() ? it.value().get<double>() : NAN;
    Series pts = make_series(std::isfinite(slope) ? fmt::format("{}: p = {:.2f}", b, slope) : b, Style::points, color);
    for (const auto& s : per_size) {
      const double size = number_at(s, v.size_name), gap = s.contains("gap_rms") ? number_at(s["gap_rms"], b) : NAN;
      if (std::isfinite(gap) && gap > 0) pts.x.push_back(size), pts.y.push_back(gap);
    }
    if (pts.x.empty()) continue;
    if (std::isfinite(slope) && pts.x.size() > 1) {
      // The fitted law through the points' geometric centre.
      double log_c = 0;
      for (std::size_t k = 0; k < pts.x.size(); ++k) log_c += std::log(pts.y[k]) - slope * std::log(pts.x[k]);
      log_c /= static_cast<double>(pts.x.size());
      Series fit = make_series("", Style::dashed, color);
      for (double x : {pts.x.front(), pts.x.back()}) fit.x.push_back(x), fit.y.push_back(std::exp(log_c + slope * std::log(x)));
      p.series.push_back(std::move(fit));
    }
    p.series.push_back(std::move(pts));
  }
  if (p.series.empty()) return std::nullopt;
  return p;
}

// The largest |deviation| / allowed at each size: the verdict's own measure (1 is the limit).
std::optional<Panel> worst_panel(const Trajectory& v) {
  Panel p;
  p.title = "largest |theory - simulation| / allowed (1: the criterion's limit)";
  p.xlabel = v.size_name;
  p.ylabel = "max deviation / allowed";
  p.logx = true;
  Series judged = make_series("judged", Style::linespoints, 0), not_judged = make_series("not judged", Style::points, 7);
  for (const auto& s : v.record.value("per_size", json::array())) {
    const double w = number_at(s, "max_deviation_over_allowed");
    if (!std::isfinite(w)) continue;
    const bool is_judged = !s.contains("judged") || !s["judged"].is_boolean() || s["judged"].get<bool>();
    Series& into = is_judged ? judged : not_judged;
    into.x.push_back(number_at(s, v.size_name)), into.y.push_back(w);
  }
  if (judged.x.empty() && not_judged.x.empty()) return std::nullopt;
  if (not_judged.x.empty()) judged.label.clear();
  // From 0, and always showing the limit 1.
  double top = 1.0;
  for (const auto* s : {&judged, &not_judged})
    for (double y : s->y) top = std::max(top, y);
  p.yrange = std::make_pair(0.0, 1.15 * top);
  p.xrange = padded_sizes(v.record.value("per_size", json::array()), v.size_name);
  p.series = {judged, not_judged};
  p.hlines.push_back({1.0, "limit"});
  return p;
}

std::optional<Panel> escape_panel(const fs::path& dir, const Trajectory& v) {
  if (!fs::exists(dir / "escape.csv")) return std::nullopt;
  const std::string log_size = "log_" + v.size_name;
  const Table e = read_table(dir / "escape.csv", {log_size, "escape_time"});
  Panel p;
  p.title = "plateau escape time (seed mean, ± SE)";
  p.xlabel = "log " + v.size_name;
  p.ylabel = "escape time";
  Series s = make_series("", Style::errorbars, 0);
  for (std::size_t r = 0; r < e.rows(); ++r)
    if (std::isfinite(e.number(r, "escape_time"))) {
      s.x.push_back(e.number(r, log_size));
      s.y.push_back(e.number(r, "escape_time"));
      const double se = e.has_column("escape_time_se") ? e.number(r, "escape_time_se") : NAN;
      s.yerr.push_back(std::isfinite(se) ? se : 0.0);
    }
  if (s.x.empty()) return std::nullopt;
  const double slope = number_at(v.record, "escape_time_slope_vs_log_size");
  if (std::isfinite(slope)) p.title += fmt::format(", slope {:.2f} per unit log {}", slope, v.size_name);
  p.series.push_back(s);
  return p;
}

void draw_scaling(const fs::path& dir, const Trajectory& v) {
  Figure f;
  f.title = fmt::format("{} validate: finite-size trend of the gap\n{}", model_of(v.run), verdict_line(v.record));
  for (const auto& panel : {gap_panel(v), worst_panel(v), escape_panel(dir, v)})
    if (panel) f.panels.push_back(*panel);
  if (f.panels.empty()) return;
  f.columns = static_cast<int>(f.panels.size());
  render(f, dir / "validate_scaling");
}

// ---- dynamics, mode=drift -------------------------------------------------------------------------------

void draw_drift(const fs::path& dir, const json& run, const json& record) {
  const Table t = read_table(dir / "drift.csv", {"t", "term", "entry", "theory", "simulation", "simulation_se"});
  std::vector<std::string> terms;
  for (std::size_t r = 0; r < t.rows(); ++r)
    if (std::find(terms.begin(), terms.end(), t.text(r, "term")) == terms.end()) terms.push_back(t.text(r, "term"));
  const std::vector<double> times = distinct_values(t, "t");
  std::string size;
  for (auto it = record.begin(); it != record.end(); ++it)
    if (it.value().is_number() && run.contains("config") && run["config"].is_object() && run["config"].contains(it.key()))
      size = fmt::format(" at {} = {:g}", it.key(), it.value().get<double>());
  Figure f;
  f.title = fmt::format("{} drift check{}: each term's theory against the measured mean increment (± SE, {} samples)\n{}", model_of(run),
                        size, record.contains("samples") ? record["samples"].dump() : "?", verdict_line(record));
  Panel z;
  z.title = "z = (theory - measured) / combined SE, every entry";
  z.xlabel = "entry (terms in turn)";
  z.ylabel = "z";
  Series outside = make_series("outside the criterion", Style::points, 1);
  double index = 0;
  for (std::size_t k = 0; k < terms.size(); ++k) {
    Panel p;
    p.xlabel = "theory";
    p.ylabel = "measured";
    p.legend = "top left";
    double lo = INFINITY, hi = -INFINITY, worst = 0;
    int failing = 0;  // entries outside the criterion (also those whose z is not a number)
    Series zs = make_series(terms[k], Style::points, static_cast<int>(k % 10));
    for (std::size_t i = 0; i < times.size(); ++i) {
      Series s = make_series(times.size() > 1 ? fmt::format("t = {:g}", times[i]) : "", Style::errorbars, static_cast<int>(i));
      for (std::size_t r = 0; r < t.rows(); ++r) {
        if (t.text(r, "term") != terms[k] || t.number(r, "t") != times[i]) continue;
        const double th = t.number(r, "theory");
        s.x.push_back(th), s.y.push_back(t.number(r, "simulation")), s.yerr.push_back(t.number(r, "simulation_se"));
        lo = std::min(lo, th), hi = std::max(hi, th);
        if (t.has_column("z")) {
          const double zr = t.number(r, "z");
          if (std::isfinite(zr)) worst = std::max(worst, std::fabs(zr));
          zs.x.push_back(index), zs.y.push_back(zr);
          if (t.has_column("agree") && t.number(r, "agree") == 0) outside.x.push_back(index), outside.y.push_back(zr);
        }
        if (t.has_column("agree") && t.number(r, "agree") == 0) ++failing;
        index += 1;
      }
      if (!s.x.empty()) p.series.push_back(std::move(s));
    }
    p.title = t.has_column("z") ? fmt::format("term {} (largest finite |z| {:.2f})", terms[k], worst) : "term " + terms[k];
    if (failing > 0) p.title += fmt::format("\n{} entries outside the criterion", failing);
    if (std::isfinite(lo)) {
      Series diagonal = make_series("measured = theory", Style::dashed, 7);
      diagonal.x = {lo, hi}, diagonal.y = {lo, hi};
      p.series.insert(p.series.begin(), diagonal);
    }
    f.panels.push_back(std::move(p));
    if (!zs.x.empty()) z.series.push_back(std::move(zs));
  }
  if (!z.series.empty()) {
    if (!outside.x.empty()) z.series.push_back(outside);
    z.hlines.push_back({0.0, ""});
    f.panels.push_back(std::move(z));
  }
  f.columns = std::min<int>(3, static_cast<int>(f.panels.size()));
  render(f, dir / "validate");
}

// ---- state evolution ------------------------------------------------------------------------------------

struct Extrapolation {
  std::string control;
  std::vector<int> dims;
  std::string diff, diff_se;  // the difference columns' prefixes ("diff" / "paired_diff" ...)
  Table t;
};

Extrapolation read_extrapolation(const fs::path& dir) {
  Extrapolation e;
  e.t = read_table(dir / "validate.csv", {"observable", "theory", "extrapolated_diff", "extrapolated_se"});
  e.control = e.t.columns().front();
  static const std::regex sim_re("^sim_d([0-9]+)$");
  for (const auto& c : e.t.columns()) {
    std::smatch m;
    if (std::regex_match(c, m, sim_re)) e.dims.push_back(std::stoi(m[1].str()));
  }
  if (e.dims.empty()) throw InputError("DIR", "malformed validate.csv: no sim_d<d> column");
  const std::string tail = fmt::format("_d{}", e.dims.front());
  for (const auto& c : e.t.columns()) {
    if (c.size() <= tail.size() || c.compare(c.size() - tail.size(), tail.size(), tail) != 0) continue;
    const std::string prefix = c.substr(0, c.size() - tail.size());
    if (prefix == "sim" || prefix == "se") continue;
    (prefix.find("se") != std::string::npos ? e.diff_se : e.diff) = prefix;
  }
  if (e.diff.empty() || e.diff_se.empty()) throw InputError("DIR", "malformed validate.csv: no difference columns per d");
  return e;
}

// [lo, hi] of `values` widened by 8 % of the span (or of |value| for one value): no point on the frame.
std::pair<double, double> padded(const std::vector<double>& values) {
  double lo = INFINITY, hi = -INFINITY;
  for (double v : values)
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!std::isfinite(lo)) return {0.0, 1.0};
  const double pad = hi > lo ? 0.08 * (hi - lo) : std::max(0.1 * std::fabs(lo), 0.1);
  return {lo - pad, hi + pad};
}

std::vector<Panel> observable_panels(const Extrapolation& e, const std::string& observable) {
  std::vector<std::size_t> rows;
  std::vector<double> controls;
  for (std::size_t r = 0; r < e.t.rows(); ++r)
    if (e.t.text(r, "observable") == observable) rows.push_back(r), controls.push_back(e.t.number(r, e.control));
  Panel curve;
  curve.title = observable + ": theory (line) and fits at each d (± SE)";
  curve.xlabel = e.control;
  curve.ylabel = observable;
  Series theory = make_series("theory", Style::lines, 0);
  for (std::size_t r : rows) theory.x.push_back(e.t.number(r, e.control)), theory.y.push_back(e.t.number(r, "theory"));
  curve.series.push_back(theory);
  curve.xrange = padded(controls);
  for (std::size_t k = 0; k < e.dims.size(); ++k) {
    Series s = make_series(fmt::format("d = {}", e.dims[k]), Style::errorbars, static_cast<int>(k + 1));
    for (std::size_t r : rows) {
      s.x.push_back(e.t.number(r, e.control));
      s.y.push_back(e.t.number(r, fmt::format("sim_d{}", e.dims[k])));
      s.yerr.push_back(e.t.number(r, fmt::format("se_d{}", e.dims[k])));
    }
    curve.series.push_back(std::move(s));
  }
  // The difference against 1/d, with the fit a + b/d down to 1/d = 0 (at most ten control values).
  Panel inverse;
  inverse.title = observable + ": difference (± SE) against 1/d, fit a + b/d";
  inverse.xlabel = "1/d";
  inverse.ylabel = "simulation - theory";
  std::vector<double> inverse_d;
  for (int d : e.dims) inverse_d.push_back(1.0 / d);
  const std::size_t step = std::max<std::size_t>(1, (rows.size() + 9) / 10);
  for (std::size_t k = 0, color = 0; k < rows.size(); k += step, ++color) {
    const std::size_t r = rows[k];
    Series pts = make_series(fmt::format("{} = {}", e.control, format_number(e.t.number(r, e.control))), Style::errorbars,
                             static_cast<int>(color));
    std::vector<double> d, y, se;
    for (int dim : e.dims) {
      d.push_back(dim);
      y.push_back(e.t.number(r, fmt::format("{}_d{}", e.diff, dim)));
      se.push_back(e.t.number(r, fmt::format("{}_d{}", e.diff_se, dim)));
    }
    pts.x = inverse_d, pts.y = y, pts.yerr = se;
    const stats::InverseSizeFit fit = stats::extrapolate_inverse_size(d, y, se);
    Series line = make_series("", Style::dashed, static_cast<int>(color));
    for (double x : {0.0, *std::max_element(inverse_d.begin(), inverse_d.end())}) line.x.push_back(x), line.y.push_back(fit.a + fit.b * x);
    // The intercept itself, at 1/d = 0.
    Series at_zero = make_series("", Style::errorbars, static_cast<int>(color));
    at_zero.x = {0.0}, at_zero.y = {fit.a}, at_zero.yerr = {fit.a_se};
    inverse.series.push_back(std::move(line));
    inverse.series.push_back(std::move(pts));
    inverse.series.push_back(std::move(at_zero));
  }
  const double largest = *std::max_element(inverse_d.begin(), inverse_d.end());
  inverse.xrange = std::make_pair(-0.06 * largest, 1.06 * largest);
  inverse.hlines.push_back({0.0, ""});
  // The intercept a against the control value, and the band it must stay in.
  Panel intercept;
  intercept.title = observable + ": d -> infinity intercept a (± SE) and the allowed band";
  intercept.xlabel = e.control;
  intercept.ylabel = "a";
  Series band = make_series("", Style::band, 7), a = make_series("", Style::errorbars, 0),
         failing = make_series("fails", Style::points, 1);
  for (std::size_t r : rows) {
    const double x = e.t.number(r, e.control);
    if (e.t.has_column("allowed")) band.x.push_back(x), band.y.push_back(0.0), band.yerr.push_back(e.t.number(r, "allowed"));
    a.x.push_back(x), a.y.push_back(e.t.number(r, "extrapolated_diff")), a.yerr.push_back(e.t.number(r, "extrapolated_se"));
    if (e.t.has_column("pass") && e.t.number(r, "pass") == 0) failing.x.push_back(x), failing.y.push_back(e.t.number(r, "extrapolated_diff"));
  }
  if (!band.x.empty()) intercept.series.push_back(band);
  intercept.series.push_back(a);
  if (!failing.x.empty()) intercept.series.push_back(failing);
  intercept.hlines.push_back({0.0, ""});
  intercept.xrange = padded(controls);
  return {curve, inverse, intercept};
}

void draw_extrapolation(const fs::path& dir, const json& run) {
  const Extrapolation e = read_extrapolation(dir);
  std::vector<std::string> observables;
  for (std::size_t r = 0; r < e.t.rows(); ++r)
    if (std::find(observables.begin(), observables.end(), e.t.text(r, "observable")) == observables.end())
      observables.push_back(e.t.text(r, "observable"));
  Figure f;
  f.columns = 3;
  f.title = fmt::format("{} validate: theory against fits at d = {}, extrapolated to d -> infinity\n{}", model_of(run),
                        fmt::join(e.dims, ", "), verdict_line(run));
  for (const auto& o : observables)
    for (auto& p : observable_panels(e, o)) f.panels.push_back(std::move(p));
  render(f, dir / "validate_extrapolation");
}

}  // namespace

bool is_validation_folder(const fs::path& dir) {
  if (fs::exists(dir / "validate.json")) return true;
  if (!fs::exists(dir / "validate.csv")) return false;
  try {
    const Table t = Table::read_csv_file((dir / "validate.csv").string());
    return t.has_column("extrapolated_diff");
  } catch (const std::exception&) {
    return false;
  }
}

void plot_validation(const fs::path& dir) {
  const json run = fs::exists(dir / "run.json") ? read_json(dir / "run.json") : json::object();
  if (fs::exists(dir / "validate.json")) {
    const json record = read_json(dir / "validate.json");
    const json& mode = field(record, "mode", "validate.json");
    if (mode == "drift") return draw_drift(dir, run, record);
    if (mode != "trajectory") throw InputError("DIR", "malformed validate.json: \"mode\" is " + mode.dump() + " (trajectory or drift)");
    const Trajectory v = read_trajectory(dir, run, record);
    draw_sizes(dir, v);
    draw_scaling(dir, v);
    return;
  }
  draw_extrapolation(dir, run);
}

}  // namespace hdat::plot
