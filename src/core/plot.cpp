#include "hdat/core/plot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>
#include <stdexcept>

#include "hdat/core/output.hpp"
#include "hdat/core/registry.hpp"
#include "hdat/core/table.hpp"

namespace hdat::plot {

namespace fs = std::filesystem;

namespace {

thread_local Batch* current_batch = nullptr;

const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                          "#bcbd22", "#17becf"};

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') o += '\\';
    if (c == '_') o += "\\\\";  // gnuplot enhanced text: literal underscore
    o += c;
  }
  return o;
}

std::string num(double v) { return std::isfinite(v) ? format_number(v) : "NaN"; }

int text_lines(const std::string& s) { return s.empty() ? 0 : 1 + static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

// A point gnuplot can place on the panel's axes.
bool drawable(const Panel& p, double x, double y) {
  return std::isfinite(x) && std::isfinite(y) && (!p.logx || x >= 0) && (!p.logy || y > 0);
}

bool has_points(const Panel& p, const Series& s) {
  for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i)
    if (drawable(p, s.x[i], s.y[i])) return true;
  return false;
}

// t = 0 on a log-time axis: drawn at a first tic labelled "0", a little left of the smallest positive
// time, with a break mark between the two. Returns that position (NaN when the panel needs none) and
// moves the panel's zeros there.
double place_zero_on_log_axis(Panel& p) {
  if (!p.logx) return NAN;
  double lo = INFINITY, hi = 0;
  bool zero = false;
  for (const Series& s : p.series)
    for (double x : s.x) {
      if (x == 0) zero = true;
      if (std::isfinite(x) && x > 0) lo = std::min(lo, x), hi = std::max(hi, x);
    }
  if (!zero || !std::isfinite(lo)) return NAN;
  // A twelfth of the decades shown (at least a factor 2) left of the smallest time, and at least a
  // factor 3 left of a decade tic drawn to its right, so that "0" and that tic's label stay apart
  // (committee's validate, whose first time is 0.15, drew "00.1").
  double x0 = lo / std::max(2.0, std::pow(hi / lo, 1.0 / 12));
  const double decade = std::pow(10.0, std::floor(std::log10(lo)));
  for (double tic : {decade, 10 * decade})
    if (tic > x0 && tic < 3 * x0) x0 = tic / 3;
  // A line does not cross the break: its t = 0 value becomes a point of its colour.
  int next_color = 0;
  std::vector<Series> at_zero;
  for (Series& s : p.series) {
    if (s.color < 0) s.color = next_color++;
    const bool line = s.style == Style::lines || s.style == Style::dashed;
    Series zero{"", {}, {}, {}, Style::points, s.color};
    Series rest = s;
    rest.x.clear(), rest.y.clear(), rest.yerr.clear();
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      const double e = i < s.yerr.size() ? s.yerr[i] : 0.0;
      Series& into = line && s.x[i] == 0 ? zero : rest;
      into.x.push_back(s.x[i] == 0 ? x0 : s.x[i]), into.y.push_back(s.y[i]);
      if (!s.yerr.empty()) into.yerr.push_back(e);
    }
    if (!zero.x.empty()) at_zero.push_back(std::move(zero));
    s = std::move(rest);
  }
  for (Series& z : at_zero) p.series.push_back(std::move(z));
  return x0;
}

// How many items of the panel would the key list?
int key_items(const Panel& p) {
  int n = 0;
  for (const Series& s : p.series) n += !s.label.empty() && has_points(p, s);
  for (const auto& h : p.hlines) n += !h.second.empty();
  return n;
}

// Room for the key inside the panel, at its edge (top or bottom), so that it covers no data:
// autoscale extends the y range there by a fraction of the panel per line of the key. None where the
// range is given or there is no key (a multiplot's later panels start from no offsets).
std::string key_room(const Panel& p, bool key_shown) {
  int lines = 0;
  for (const Series& s : p.series) lines += !s.label.empty() && has_points(p, s) ? text_lines(s.label) : 0;
  for (const auto& h : p.hlines) lines += text_lines(h.second);
  if (!key_shown || p.yrange || lines == 0) return "set offsets 0, 0, 0, 0\n";
  const std::string room = format_number(std::min(0.6, 0.08 * (lines + 1)));
  return p.legend.find("bottom") != std::string::npos ? "set offsets 0, 0, 0, graph " + room + "\n"
                                                       : "set offsets 0, 0, graph " + room + ", 0\n";
}

std::string plot_item(const Series& se, const std::string& data, const std::string& col) {
  const std::string title = se.label.empty() ? "notitle" : fmt::format("title \"{}\"", esc(se.label));
  switch (se.style) {
    case Style::lines: return fmt::format("{} u 1:2 w l lw 2 lc rgb \"{}\" {}", data, col, title);
    case Style::dashed: return fmt::format("{} u 1:2 w l lw 2 dt 2 lc rgb \"{}\" {}", data, col, title);
    case Style::points: return fmt::format("{} u 1:2 w p pt 7 ps 0.6 lc rgb \"{}\" {}", data, col, title);
    case Style::ring: return fmt::format("{} u 1:2 w p pt 6 ps 2 lw 2 lc rgb \"{}\" {}", data, col, title);
    case Style::linespoints: return fmt::format("{} u 1:2 w lp pt 7 ps 0.6 lw 1.5 lc rgb \"{}\" {}", data, col, title);
    case Style::errorbars: return fmt::format("{} u 1:2:3 w yerrorbars pt 7 ps 0.5 lc rgb \"{}\" {}", data, col, title);
    case Style::band:
      return fmt::format("{} u 1:($2-$3):($2+$3) w filledcurves fc rgb \"{}\" fs transparent solid 0.18 noborder {}", data, col, title);
  }
  return "";
}

// The data block of a series (only its drawable points).
std::string data_block(const Panel& p, const Series& se, int id) {
  std::string s = fmt::format("$d{} << EOD\n", id);
  for (std::size_t i = 0; i < se.x.size() && i < se.y.size(); ++i) {
    if (!drawable(p, se.x[i], se.y[i])) continue;
    s += num(se.x[i]) + " " + num(se.y[i]);
    if (se.style == Style::errorbars || se.style == Style::band) {
      const double e = i < se.yerr.size() && std::isfinite(se.yerr[i]) ? se.yerr[i] : 0.0;
      s += " " + num(e);
    }
    s += "\n";
  }
  return s + "EOD\n";
}

// The data blocks of a panel's drawable series, numbered from `first`; `ids` gets each series' block
// (-1: nothing to draw).
std::string panel_data(const Panel& p, int& next, std::vector<int>& ids) {
  std::string s;
  ids.clear();
  for (const Series& se : p.series) {
    if (!has_points(p, se)) {
      ids.push_back(-1);
      continue;
    }
    ids.push_back(next);
    s += data_block(p, se, next++);
  }
  return s;
}

std::string panel_script(const Panel& p, const std::vector<int>& ids, double zero_at) {
  std::string s;
  s += fmt::format("set title \"{}\"\n", esc(p.title));
  // No key for a single item: the panel's title says what it is.
  const bool single_series = key_items(p) <= 1 && (p.hlines.empty() || key_items(p) == 0);
  if (key_items(p) == 0 || single_series) {
    s += "unset key\n";
  } else {
    // A key on the left reads left to right: line sample first, then the left-justified label.
    const bool left = p.legend.find("left") != std::string::npos;
    // height: room below the last entry, whose underscores the box edge would otherwise hide.
    s += fmt::format("set key {}{} box opaque width 1 height 0.6\n", p.legend, left ? " Left reverse" : "");
  }
  s += key_room(p, key_items(p) > 0 && !single_series);
  s += fmt::format("set xlabel \"{}\"\nset ylabel \"{}\"\n", esc(p.xlabel), esc(p.ylabel));
  s += p.logx ? "set logscale x\n" : "unset logscale x\n";
  s += p.logy ? "set logscale y\n" : "unset logscale y\n";
  s += "set xtics autofreq\nunset label\n";
  if (std::isfinite(zero_at)) {
    s += fmt::format("set xtics add (\"0\" {})\n", num(zero_at));
    // The break mark half way (in log) between t = 0's place and the first positive time.
    s += fmt::format("set label \"{{/:Bold //}}\" at first {}, graph 0 center front\n", num(zero_at * 1.6));
  }
  if (p.xrange) s += fmt::format("set xrange [{}:{}]\n", num(p.xrange->first), num(p.xrange->second));
  else if (std::isfinite(zero_at)) s += fmt::format("set xrange [{}:*]\n", num(zero_at / 1.25));
  else s += "set xrange [*:*]\n";
  s += p.yrange ? fmt::format("set yrange [{}:{}]\n", num(p.yrange->first), num(p.yrange->second)) : "set yrange [*:*]\n";
  std::vector<std::string> items;
  int color = 0;
  for (std::size_t i = 0; i < p.series.size(); ++i) {
    const Series& se = p.series[i];
    const int c = se.color >= 0 ? se.color : color++;
    if (ids[i] < 0) continue;
    items.push_back(plot_item(se, fmt::format("$d{}", ids[i]), kPalette[c % 10]));
  }
  for (const auto& [v, label] : p.hlines)
    items.push_back(fmt::format("{} w l lw 1.5 dt 3 lc rgb \"black\" title \"{}\"", num(v), esc(label)));
  if (items.empty()) items.push_back("NaN notitle");
  s += "plot ";
  for (std::size_t i = 0; i < items.size(); ++i) s += (i ? ", \\\n     " : "") + items[i];
  s += "\n";
  return s;
}

// The edges of the cells centred on grid values: half way to each neighbour (geometrically on a log
// axis), the outer edges mirrored; a single value gets a unit (or a factor √10) cell.
std::vector<double> cell_edges(const std::vector<double>& v, bool log) {
  const auto mid = [log](double a, double b) { return log ? std::sqrt(a * b) : 0.5 * (a + b); };
  const std::size_t n = v.size();
  std::vector<double> e(n + 1);
  if (n == 1) {
    e[0] = log ? v[0] / std::sqrt(10.0) : v[0] - 0.5;
    e[1] = log ? v[0] * std::sqrt(10.0) : v[0] + 0.5;
    return e;
  }
  for (std::size_t i = 1; i < n; ++i) e[i] = mid(v[i - 1], v[i]);
  e[0] = log ? v[0] * v[0] / e[1] : 2 * v[0] - e[1];
  e[n] = log ? v[n - 1] * v[n - 1] / e[n - 1] : 2 * v[n - 1] - e[n - 1];
  return e;
}

std::string heatmap_script(const Heatmap& h, const std::string& title) {
  std::string s;
  s += fmt::format("set title \"{}\"\nset xlabel \"{}\"\nset ylabel \"{}\"\nset cblabel \"{}\"\n", esc(title), esc(h.xlabel),
                   esc(h.ylabel), esc(h.zlabel));
  s += "set palette defined (0 '#440154', 1 '#3b528b', 2 '#21918c', 3 '#5ec962', 4 '#fde725')\nset datafile missing 'NaN'\n";
  // Each contour level's lines, computed on the grid into a table of its own (before any log scale:
  // the table then holds data coordinates).
  for (std::size_t k = 0; k < h.contours.size(); ++k)
    s += fmt::format("set contour base\nunset surface\nset cntrparam levels discrete {}\nset table $contour{}\nsplot $grid u 1:2:3 w l\n"
                     "unset table\nunset contour\nset surface\n",
                     num(h.contours[k]), k);
  s += h.logx ? "set logscale x\n" : "unset logscale x\n";
  s += h.logy ? "set logscale y\n" : "unset logscale y\n";
  const std::vector<double> ex = cell_edges(h.x, h.logx), ey = cell_edges(h.y, h.logy);
  s += fmt::format("set xrange [{}:{}]\nset yrange [{}:{}]\n", num(std::min(ex.front(), ex.back())), num(std::max(ex.front(), ex.back())),
                   num(std::min(ey.front(), ey.back())), num(std::max(ey.front(), ey.back())));
  if (h.contours.empty()) s += "unset key\n";
  else s += "set bmargin 6\nset key at screen 0.5, screen 0.035 center bottom horizontal box\n";
  s += "plot $cells u 1:2:3:4:5:6:7 w boxxyerror fs solid 1.0 noborder lc palette notitle";
  const char* dash[] = {"1", "2", "4", "5", "3"};
  for (std::size_t k = 0; k < h.contours.size(); ++k) {
    // A white line under a black one: visible on every colour of the map.
    s += fmt::format(", \\\n     $contour{} u 1:2 w l lw 4 lc rgb \"white\" notitle", k);
    s += fmt::format(", \\\n     $contour{} u 1:2 w l lw 2 dt {} lc rgb \"black\" title \"{} = {}\"", k, dash[k % 5], esc(h.zlabel),
                     num(h.contours[k]));
  }
  return s + "\n";
}

std::string heatmap_data(const Heatmap& h) {
  std::string s = "$grid << EOD\n";
  for (std::size_t i = 0; i < h.x.size(); ++i) {
    for (std::size_t j = 0; j < h.y.size(); ++j)
      s += fmt::format("{} {} {}\n", num(h.x[i]), num(h.y[j]), num(h.z(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j))));
    s += "\n";
  }
  s += "EOD\n$cells << EOD\n";
  const std::vector<double> ex = cell_edges(h.x, h.logx), ey = cell_edges(h.y, h.logy);
  for (std::size_t i = 0; i < h.x.size(); ++i)
    for (std::size_t j = 0; j < h.y.size(); ++j) {
      const double z = h.z(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j));
      if (!std::isfinite(z)) continue;  // a blank cell
      s += fmt::format("{} {} {} {} {} {} {}\n", num(h.x[i]), num(h.y[j]), num(ex[i]), num(ex[i + 1]), num(ey[j]), num(ey[j + 1]), num(z));
    }
  return s + "EOD\n";
}

// `text` in lines of at most `width` characters, broken after ", ".
std::string wrap_list(const std::string& text, std::size_t width) {
  std::string out;
  std::size_t line_start = 0, from = 0;
  while (from < text.size()) {
    std::size_t next = text.find(", ", from);
    next = next == std::string::npos ? text.size() : next + 2;
    if (out.size() - line_start + (next - from) > width && out.size() > line_start) {
      while (!out.empty() && out.back() == ' ') out.pop_back();
      out += "\n";
      line_start = out.size();
    }
    out += text.substr(from, next - from);
    from = next;
  }
  return out;
}

// The figure as it is drawn: the batch's caption under the title, in lines as wide as the figure.
Figure with_caption(const Figure& f) {
  Figure g = f;
  if (!current_batch || current_batch->caption().empty()) return g;
  const int columns = f.heatmap ? 1 : std::min<int>(std::max<int>(1, static_cast<int>(f.panels.size())), std::max(1, f.columns));
  const std::size_t chars = static_cast<std::size_t>(std::max(50, f.panel_width * columns / 7));
  const std::string caption = wrap_list(current_batch->caption(), chars);
  // Each line its own smaller-font group (a group does not carry over a line break).
  std::string small;
  std::size_t from = 0;
  for (;;) {
    const std::size_t end = caption.find('\n', from);
    small += (small.empty() ? "" : "\n") + std::string("{/*0.85 ") + caption.substr(from, end == std::string::npos ? end : end - from) + "}";
    if (end == std::string::npos) break;
    from = end + 1;
  }
  std::string& title = g.heatmap ? g.heatmap->title : g.title;
  title += (title.empty() ? "" : "\n") + small;
  return g;
}

// Why a figure cannot be drawn ("" when it can): a panel with nothing on it, a heat map without a value.
std::string undrawable(const Figure& f) {
  if (f.heatmap) {
    const Heatmap& h = *f.heatmap;
    if (h.x.empty() || h.y.empty() || !h.z.array().isFinite().any())
      return fmt::format("the heat map '{}' has no finite value", h.title);
    return "";
  }
  if (f.panels.empty()) return "the figure has no panel";
  for (const Panel& p : f.panels) {
    bool any = !p.hlines.empty();
    for (const Series& s : p.series) any = any || has_points(p, s);
    if (!any) return fmt::format("the panel '{}' has no point to draw", p.title);
  }
  return "";
}

std::string first_lines(const std::string& text, int n) {
  std::string out;
  std::size_t from = 0;
  for (int i = 0; i < n && from < text.size(); ++i) {
    const std::size_t end = text.find('\n', from);
    out += (out.empty() ? "" : " | ") + text.substr(from, end == std::string::npos ? std::string::npos : end - from);
    if (end == std::string::npos) break;
    from = end + 1;
  }
  return out;
}

}  // namespace

bool available() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

std::string script(const Figure& f0, const std::string& terminal, const std::string& output) {
  Figure f = f0;
  std::vector<double> zero_at;
  for (Panel& p : f.panels) zero_at.push_back(place_zero_on_log_axis(p));
  std::string s;
  // Data blocks first.
  int block = 0;
  std::vector<std::vector<int>> ids(f.panels.size());
  for (std::size_t k = 0; k < f.panels.size(); ++k) s += panel_data(f.panels[k], block, ids[k]);
  if (f.heatmap) s += heatmap_data(*f.heatmap);
  const int n = f.heatmap ? 1 : std::max<int>(1, static_cast<int>(f.panels.size()));
  const int cols = std::min(n, std::max(1, f.columns));
  const int rows = (n + cols - 1) / cols;
  const std::string& title = f.heatmap ? f.heatmap->title : f.title;
  const int w = f.panel_width * cols, hgt = f.panel_height * rows + 22 * text_lines(title) + (f.heatmap ? 0 : 8);
  if (terminal == "svg") s += fmt::format("set terminal svg size {},{} dynamic enhanced font 'Helvetica,12'\n", w, hgt);
  else s += fmt::format("set terminal pngcairo size {},{} enhanced font 'Helvetica,11'\n", w, hgt);
  s += fmt::format("set output \"{}\"\n", output);
  s += "set grid lc rgb \"#dddddd\"\nset format y \"%g\"\nset format x \"%g\"\n";
  if (f.heatmap) {
    s += heatmap_script(*f.heatmap, title);
  } else {
    if (!f.title.empty()) s += fmt::format("set multiplot layout {},{} title \"{}\"\n", rows, cols, esc(f.title));
    else s += fmt::format("set multiplot layout {},{}\n", rows, cols);
    for (std::size_t k = 0; k < f.panels.size(); ++k) s += panel_script(f.panels[k], ids[k], zero_at[k]);
    s += "unset multiplot\n";
  }
  s += "set output\n";
  return s;
}

void render(const Figure& figure, const fs::path& stem) {
  const Figure f = with_caption(figure);
  if (const std::string why = undrawable(f); !why.empty())
    throw std::runtime_error(fmt::format("cannot draw {}: {}", stem.filename().string(), why));
  const fs::path dir = stem.parent_path();
  const std::string name = stem.filename().string();
  const fs::path tmp = dir / ("." + name + ".hdat-tmp");
  const std::string png = tmp.string() + ".png", svg = tmp.string() + ".svg", gp = tmp.string() + ".gp", log = tmp.string() + ".log";
  const auto remove_all_tmp = [&] {
    for (const auto& p : {png, svg, gp, log}) fs::remove(p);
  };
  write_file_atomic(gp, script(f, "pngcairo", png) + "\n" + script(f, "svg", svg));
  const std::string cmd = fmt::format("gnuplot \"{}\" 2>\"{}\"", gp, log);
  const bool ok = std::system(cmd.c_str()) == 0 && fs::exists(png) && fs::file_size(png) > 0 && fs::exists(svg);
  if (!ok) {
    const std::string why = fs::exists(log) ? first_lines(read_file(log), 4) : "";
    remove_all_tmp();
    throw std::runtime_error(fmt::format("gnuplot could not draw {}{}", stem.string(), why.empty() ? "" : ": " + why));
  }
  fs::remove(log);
  // The script kept beside the figures names them by their final names.
  const std::string final_png = stem.string() + ".png", final_svg = stem.string() + ".svg";
  write_file_atomic(gp, script(f, "pngcairo", final_png) + "\n" + script(f, "svg", final_svg));
  const std::vector<Batch::Staged> files = {{png, final_png}, {svg, final_svg}, {gp, stem.string() + ".gp"}};
  if (current_batch) {
    for (const auto& s : files) current_batch->staged_.push_back(s);
    current_batch->pngs_.push_back(final_png);
    return;
  }
  for (const auto& s : files) fs::rename(s.from, s.to);
}

Batch::Batch(std::string caption) : caption_(std::move(caption)), outer_(current_batch) {
  if (caption_.empty() && outer_) caption_ = outer_->caption_;
  current_batch = this;
}

Batch::~Batch() {
  if (!done_) {
    std::error_code ec;
    for (const Staged& s : staged_) fs::remove(s.from, ec);
  }
  current_batch = outer_;
}

std::vector<fs::path> Batch::commit() {
  done_ = true;
  if (outer_) {
    outer_->staged_.insert(outer_->staged_.end(), staged_.begin(), staged_.end());
    outer_->pngs_.insert(outer_->pngs_.end(), pngs_.begin(), pngs_.end());
  } else {
    for (const Staged& s : staged_) fs::rename(s.from, s.to);
  }
  return pngs_;
}

std::string non_default_parameters(const nlohmann::json& run) {
  if (!run.is_object() || !run.contains("model") || !run["model"].is_string() || !run.contains("config") || !run["config"].is_object())
    return "";
  const ModelEntry* model = registry().find(run["model"].get<std::string>());
  if (!model) return "";
  // A sweep's swept keys are on the figure's axes, not in its caption.
  std::set<std::string> swept;
  if (run.contains("grid") && run["grid"].is_array())
    for (const auto& axis : run["grid"])
      if (axis.is_object() && axis.contains("key") && axis["key"].is_string()) swept.insert(axis["key"].get<std::string>());
  std::string out;
  for (const ParamSpec& spec : model->params.specs()) {
    if (swept.count(spec.key)) continue;
    std::string pointer = "/" + spec.key;
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    const nlohmann::json::json_pointer at(pointer);
    if (!run["config"].contains(at)) continue;
    const nlohmann::json& value = run["config"][at];
    if (value == spec.default_value || (value.is_null() && spec.default_value.is_null())) continue;
    std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    // Braces group in gnuplot's enhanced text.
    std::replace(text.begin(), text.end(), '{', '(');
    std::replace(text.begin(), text.end(), '}', ')');
    if (text.size() > 28) text = text.substr(0, 25) + "...";
    out += (out.empty() ? "" : ", ") + spec.key + "=" + text;
  }
  return out;
}

}  // namespace hdat::plot
