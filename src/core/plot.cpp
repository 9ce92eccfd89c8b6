#include "hdat/core/plot.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "hdat/core/output.hpp"
#include "hdat/core/table.hpp"

namespace hdat::plot {
namespace {

const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                          "#bcbd22", "#17becf"};

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '_') o += "\\\\";  // gnuplot enhanced text: literal underscore
    o += c;
  }
  return o;
}

std::string num(double v) { return std::isfinite(v) ? format_number(v) : "NaN"; }

std::string panel_script(const Panel& p, int block_base) {
  std::string s;
  s += fmt::format("set title \"{}\"\n", esc(p.title));
  // A key on the left reads left to right: line sample first, then the left-justified label.
  const bool left = p.legend.find("left") != std::string::npos;
  s += fmt::format("set key {}{} box opaque width 1\n", p.legend, left ? " Left reverse" : "");
  s += fmt::format("set xlabel \"{}\"\nset ylabel \"{}\"\n", esc(p.xlabel), esc(p.ylabel));
  s += p.logx ? "set logscale x\n" : "unset logscale x\n";
  s += p.logy ? "set logscale y\n" : "unset logscale y\n";
  s += p.xrange ? fmt::format("set xrange [{}:{}]\n", num(p.xrange->first), num(p.xrange->second)) : "set xrange [*:*]\n";
  s += p.yrange ? fmt::format("set yrange [{}:{}]\n", num(p.yrange->first), num(p.yrange->second)) : "set yrange [*:*]\n";
  std::vector<std::string> items;
  int color = 0;
  for (std::size_t i = 0; i < p.series.size(); ++i) {
    const Series& se = p.series[i];
    const int c = se.color >= 0 ? se.color : color++;
    const std::string col = kPalette[c % 10];
    const std::string data = fmt::format("$d{}", block_base + static_cast<int>(i));
    const std::string title = se.label.empty() ? "notitle" : fmt::format("title \"{}\"", esc(se.label));
    switch (se.style) {
      case Style::lines: items.push_back(fmt::format("{} u 1:2 w l lw 2 lc rgb \"{}\" {}", data, col, title)); break;
      case Style::dashed: items.push_back(fmt::format("{} u 1:2 w l lw 2 dt 2 lc rgb \"{}\" {}", data, col, title)); break;
      case Style::points: items.push_back(fmt::format("{} u 1:2 w p pt 7 ps 0.6 lc rgb \"{}\" {}", data, col, title)); break;
      case Style::linespoints: items.push_back(fmt::format("{} u 1:2 w lp pt 7 ps 0.6 lw 1.5 lc rgb \"{}\" {}", data, col, title)); break;
      case Style::errorbars: items.push_back(fmt::format("{} u 1:2:3 w yerrorbars pt 7 ps 0.5 lc rgb \"{}\" {}", data, col, title)); break;
    }
  }
  for (const auto& [v, label] : p.hlines)
    items.push_back(fmt::format("{} w l lw 1.5 dt 3 lc rgb \"black\" title \"{}\"", num(v), esc(label)));
  if (items.empty()) items.push_back("NaN notitle");
  s += "plot ";
  for (std::size_t i = 0; i < items.size(); ++i) s += (i ? ", \\\n     " : "") + items[i];
  s += "\n";
  return s;
}

}  // namespace

bool available() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

std::string script(const Figure& f, const std::string& terminal, const std::string& output) {
  std::string s;
  // Data blocks first.
  int block = 0;
  for (const auto& p : f.panels)
    for (const auto& se : p.series) {
      s += fmt::format("$d{} << EOD\n", block++);
      for (std::size_t i = 0; i < se.x.size(); ++i) {
        s += num(se.x[i]) + " " + num(i < se.y.size() ? se.y[i] : NAN);
        if (se.style == Style::errorbars) s += " " + num(i < se.yerr.size() ? se.yerr[i] : 0.0);
        s += "\n";
      }
      s += "EOD\n";
    }
  if (f.heatmap) {
    const Heatmap& h = *f.heatmap;
    s += "$grid << EOD\n";
    for (std::size_t i = 0; i < h.x.size(); ++i) {
      for (std::size_t j = 0; j < h.y.size(); ++j)
        s += fmt::format("{} {} {}\n", num(h.x[i]), num(h.y[j]), num(h.z(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j))));
      s += "\n";
    }
    s += "EOD\n";
  }
  const int n = f.heatmap ? 1 : std::max<int>(1, static_cast<int>(f.panels.size()));
  const int cols = std::min(n, std::max(1, f.columns));
  const int rows = (n + cols - 1) / cols;
  const int w = f.panel_width * cols, hgt = f.panel_height * rows + (f.title.empty() ? 0 : 30);
  if (terminal == "svg") s += fmt::format("set terminal svg size {},{} dynamic enhanced font 'Helvetica,12'\n", w, hgt);
  else s += fmt::format("set terminal pngcairo size {},{} enhanced font 'Helvetica,11'\n", w, hgt);
  s += fmt::format("set output \"{}\"\n", output);
  s += "set key top right box opaque\nset grid lc rgb \"#dddddd\"\nset format y \"%g\"\nset format x \"%g\"\n";
  if (f.heatmap) {
    const Heatmap& h = *f.heatmap;
    s += fmt::format("set title \"{}\"\nset xlabel \"{}\"\nset ylabel \"{}\"\nset cblabel \"{}\"\n", esc(h.title), esc(h.xlabel),
                     esc(h.ylabel), esc(h.zlabel));
    s += h.logx ? "set logscale x\n" : "";
    s += h.logy ? "set logscale y\n" : "";
    s += "set view map\nset palette defined (0 '#440154', 1 '#3b528b', 2 '#21918c', 3 '#5ec962', 4 '#fde725')\nset datafile missing 'NaN'\n";
    if (!h.contours.empty()) {
      s += "set contour base\nset cntrparam levels discrete ";
      for (std::size_t i = 0; i < h.contours.size(); ++i) s += (i ? "," : "") + num(h.contours[i]);
      s += "\nset cntrlabel onecolor\n";
      s += "splot $grid u 1:2:3 w pm3d notitle, $grid u 1:2:3 nosurface w l lw 2 lc rgb \"white\" title \"contours\"\n";
    } else {
      s += "splot $grid u 1:2:3 w pm3d notitle\n";
    }
  } else {
    if (!f.title.empty()) s += fmt::format("set multiplot layout {},{} title \"{}\"\n", rows, cols, esc(f.title));
    else s += fmt::format("set multiplot layout {},{}\n", rows, cols);
    int base = 0;
    for (const auto& p : f.panels) {
      s += panel_script(p, base);
      base += static_cast<int>(p.series.size());
    }
    s += "unset multiplot\n";
  }
  s += "set output\n";
  return s;
}

void render(const Figure& f, const std::filesystem::path& stem) {
  const std::string png = stem.string() + ".png", svg = stem.string() + ".svg", gp = stem.string() + ".gp";
  const std::string text = script(f, "pngcairo", png) + "\n" + script(f, "svg", svg);
  write_file_atomic(gp, text);
  const std::string cmd = fmt::format("gnuplot \"{}\" 2>\"{}.log\"", gp, stem.string());
  if (std::system(cmd.c_str()) != 0)
    throw std::runtime_error(fmt::format("gnuplot failed on {} (see {}.log)", gp, stem.string()));
  std::filesystem::remove(stem.string() + ".log");
}

}  // namespace hdat::plot
