// `hdat plot DIR`: figures (PNG, SVG and the gnuplot script) of any output folder.
//   a sweep folder        heat maps (two swept numbers; --contour levels) or line plots (one axis)
//   a model's folder      the model's own figures (ModelEntry::plot), else the generic ones
//   any other folder      every numeric column of each CSV against its first column
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>

#include "commands.hpp"
#include "hdat/core/error.hpp"
#include "hdat/core/output.hpp"
#include "hdat/core/plot.hpp"
#include "hdat/core/registry.hpp"
#include "hdat/sweep/plot.hpp"

namespace hdat {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct PlotArgs {
  std::string dir, x, y;
  std::vector<std::string> observables;
  std::vector<double> contours;
  bool heatmap = false, lines = false, together = false, generic = false;
};

// The figures in DIR written since `since` (a model's plot function does not say which it wrote).
std::vector<fs::path> images_since(const fs::path& dir, fs::file_time_type since) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".png" && e.last_write_time() >= since) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

int run_plot(const PlotArgs& a) {
  const fs::path dir(a.dir);
  if (!fs::is_directory(dir)) throw InputError("DIR", "no such folder: " + a.dir);
  if (a.heatmap && a.lines) throw InputError("--heatmap", "choose --heatmap or --lines, not both");
  if (!plot::available()) throw std::runtime_error("gnuplot is not on the PATH (Debian: apt install gnuplot-nox)");
  json run = json::object();
  if (fs::exists(dir / "run.json")) {
    run = json::parse(read_file(dir / "run.json"), nullptr, false);
    if (run.is_discarded() || !run.is_object()) throw InputError("DIR", "malformed " + (dir / "run.json").string());
  }
  // Timestamps of the folder's file system, a second early for coarse clocks.
  const fs::path probe = dir / ".hdat-plot-start";
  write_file_atomic(probe, "");
  const auto since = fs::last_write_time(probe) - std::chrono::seconds(1);
  fs::remove(probe);

  const bool is_sweep = run.value("command", "") == "sweep";
  const bool sweep_options = !a.observables.empty() || !a.contours.empty() || !a.x.empty() || !a.y.empty() || a.heatmap || a.lines || a.together;
  if (sweep_options && !is_sweep)
    throw InputError("DIR", "--observable, --contour, --x, --y, --heatmap, --lines and --together apply to sweep folders only");
  std::vector<fs::path> written;
  if (is_sweep) {
    sweep::SweepPlotOptions o;
    o.observables = a.observables;
    o.contours = a.contours;
    o.x = a.x, o.y = a.y;
    o.kind = a.heatmap ? sweep::SweepPlotOptions::Kind::heatmap : a.lines ? sweep::SweepPlotOptions::Kind::lines
                                                                          : sweep::SweepPlotOptions::Kind::automatic;
    o.together = a.together;
    for (const auto& s : sweep::plot_sweep(dir, o)) written.push_back(s.string() + ".png");
  } else {
    const ModelEntry* model = run.contains("model") && run["model"].is_string() ? registry().find(run["model"].get<std::string>()) : nullptr;
    bool generic = a.generic || !model || !model->plot;
    if (!generic) {
      try {
        model->plot(dir);
        written = images_since(dir, since);
        if (written.empty()) {
          fmt::print(stderr, "hdat: the {} model drew no figure for this folder; drawing the generic ones\n", model->name);
          generic = true;
        }
      } catch (const InputError&) {
        throw;
      } catch (const std::exception& e) {
        fmt::print(stderr, "hdat: the {} model's figures failed ({}); drawing the generic ones\n", model->name, e.what());
        generic = true;
      }
    }
    if (generic)
      for (const auto& s : sweep::plot_generic(dir)) written.push_back(s.string() + ".png");
  }
  if (written.empty()) throw InputError("DIR", "nothing to draw in " + a.dir + " (no CSV file with a numeric column)");
  for (const auto& w : written) {
    const fs::path svg = fs::path(w).replace_extension(".svg");
    fmt::print("figure {}{}\n", w.string(), fs::exists(svg) ? " (.svg)" : "");
  }
  return 0;
}

}  // namespace

ExtraCommand plot_command(CLI::App& app) {
  static PlotArgs args;
  auto* sub = app.add_subcommand("plot", "figures (PNG and SVG, via gnuplot) of an output folder: curves, validations, sweeps");
  sub->add_option("DIR", args.dir, "output folder of hdat curve | simulate | validate | analyze | sweep ...")->required();
  sub->add_option("--observable", args.observables, "sweep: the sweep.csv columns to draw (default: all)")->allow_extra_args(false);
  sub->add_option("--contour", args.contours, "sweep heat maps: contour levels; repeatable")->allow_extra_args(false);
  sub->add_option("--x", args.x, "sweep: the swept key on the x axis");
  sub->add_option("--y", args.y, "sweep: the swept key on the y axis of a heat map");
  sub->add_flag("--heatmap", args.heatmap, "sweep: heat maps (two swept numbers)");
  sub->add_flag("--lines", args.lines, "sweep: line plots against --x, one line per value of the other swept keys");
  sub->add_flag("--together", args.together, "sweep line plots: every observable in one panel");
  sub->add_flag("--generic", args.generic, "the generic figures even when the model has its own");
  return {sub, [] { return run_plot(args); }};
}

}  // namespace hdat
