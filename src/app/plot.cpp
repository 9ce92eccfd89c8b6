#include "hdat/app/plot.hpp"

#include <algorithm>
#include <chrono>

#include "hdat/core/error.hpp"
#include "hdat/core/output.hpp"
#include "hdat/core/plot.hpp"
#include "hdat/core/registry.hpp"
#include "hdat/optimize/optimize.hpp"
#include "hdat/sweep/plot.hpp"

namespace hdat::app {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// The figures in DIR written since `since` (a model's plot function does not say which it wrote).
std::vector<fs::path> images_since(const fs::path& dir, fs::file_time_type since) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".png" && e.last_write_time() >= since) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<fs::path> pngs(const std::vector<fs::path>& stems) {
  std::vector<fs::path> out;
  for (const auto& s : stems) out.push_back(s.string() + ".png");
  return out;
}

}  // namespace

PlotOutcome plot_folder(const fs::path& dir, const PlotRequest& a) {
  if (!fs::is_directory(dir)) throw InputError("DIR", "no such folder: " + dir.string());
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

  PlotOutcome outcome;
  const bool is_sweep = run.value("command", "") == "sweep";
  if (a.sweep_options() && !is_sweep)
    throw InputError("DIR", "--observable, --contour, --x, --y, --heatmap, --lines and --together apply to sweep folders only");
  if (is_sweep) {
    sweep::SweepPlotOptions o;
    o.observables = a.observables;
    o.contours = a.contours;
    o.x = a.x, o.y = a.y;
    o.kind = a.heatmap ? sweep::SweepPlotOptions::Kind::heatmap : a.lines ? sweep::SweepPlotOptions::Kind::lines
                                                                          : sweep::SweepPlotOptions::Kind::automatic;
    o.together = a.together;
    outcome.figures = pngs(sweep::plot_sweep(dir, o));
  } else if (run.value("command", "") == "optimize") {
    for (const auto& f : optimize::plot_optimize(dir.string())) outcome.figures.push_back(f);
  } else {
    const ModelEntry* model = run.contains("model") && run["model"].is_string() ? registry().find(run["model"].get<std::string>()) : nullptr;
    bool generic = a.generic || !model || !model->plot;
    if (!generic) {
      try {
        model->plot(dir);
        outcome.figures = images_since(dir, since);
        if (outcome.figures.empty()) {
          outcome.notes += "hdat: the " + model->name + " model drew no figure for this folder; drawing the generic ones\n";
          generic = true;
        }
      } catch (const InputError&) {
        throw;
      } catch (const std::exception& e) {
        outcome.notes += "hdat: the " + model->name + " model's figures failed (" + e.what() + "); drawing the generic ones\n";
        generic = true;
      }
    }
    if (generic) outcome.figures = pngs(sweep::plot_generic(dir));
  }
  if (outcome.figures.empty()) throw InputError("DIR", "nothing to draw in " + dir.string() + " (no CSV file with a numeric column)");
  return outcome;
}

}  // namespace hdat::app
