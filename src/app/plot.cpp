#include "hdat/app/plot.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "hdat/core/error.hpp"
#include "hdat/core/output.hpp"
#include "hdat/core/plot.hpp"
#include "hdat/core/registry.hpp"
#include "hdat/core/validation_figures.hpp"
#include "hdat/optimize/optimize.hpp"
#include "hdat/sweep/plot.hpp"

namespace hdat::app {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// The line under every title: what was run, and the parameters that differ from the defaults.
std::string caption_of(const json& run) {
  if (!run.contains("model") || !run["model"].is_string()) return "";
  const std::string what = run["model"].get<std::string>() + " " + run.value("command", std::string());
  const std::string changed = plot::non_default_parameters(run);
  return changed.empty() ? what + ", default parameters" : what + ": " + changed;
}

// A model's folder: the core's validation figures, then the model's own (ModelEntry::plot), else
// the generic ones. A failure is the whole command's: nothing is written.
void plot_model_folder(const fs::path& dir, const json& run, const PlotRequest& a, PlotOutcome& outcome) {
  const ModelEntry* model = run.contains("model") && run["model"].is_string() ? registry().find(run["model"].get<std::string>()) : nullptr;
  bool drew = false;
  if (!a.generic && run.value("command", "") == "validate" && plot::is_validation_folder(dir)) {
    plot::Batch core;
    plot::plot_validation(dir);
    drew = !core.commit().empty();
  }
  if (!a.generic && model && model->plot) {
    plot::Batch own;
    try {
      model->plot(dir);
    } catch (const InputError&) {
      throw;
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("the {} model's figures of {} failed: {}; nothing written", model->name, dir.string(), e.what()));
    }
    drew = !own.commit().empty() || drew;
  }
  if (!drew) {
    if (!a.generic && model && model->plot)
      outcome.notes += "hdat: the " + model->name + " model drew no figure for this folder; drawing the generic ones\n";
    sweep::plot_generic(dir);
  }
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
  const bool is_sweep = run.value("command", "") == "sweep";
  if (a.sweep_options() && !is_sweep)
    throw InputError("DIR", "--observable, --contour, --x, --y, --heatmap, --lines and --together apply to sweep folders only");
  // Every figure of the folder or none: they are moved into place when all are drawn.
  plot::Batch batch(caption_of(run));
  PlotOutcome outcome;
  if (is_sweep) {
    sweep::SweepPlotOptions o;
    o.observables = a.observables;
    o.contours = a.contours;
    o.x = a.x, o.y = a.y;
    o.kind = a.heatmap ? sweep::SweepPlotOptions::Kind::heatmap : a.lines ? sweep::SweepPlotOptions::Kind::lines
                                                                          : sweep::SweepPlotOptions::Kind::automatic;
    o.together = a.together;
    sweep::plot_sweep(dir, o);
  } else if (run.value("command", "") == "optimize") {
    optimize::plot_optimize(dir.string());
  } else {
    plot_model_folder(dir, run, a, outcome);
  }
  outcome.figures = batch.commit();
  if (outcome.figures.empty()) throw InputError("DIR", "nothing to draw in " + dir.string() + " (no CSV file with a numeric column)");
  return outcome;
}

}  // namespace hdat::app
