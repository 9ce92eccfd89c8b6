// `hdat plot DIR`: figures (PNG, SVG and the gnuplot script) of any output folder.
//   a sweep folder        heat maps (two swept numbers; --contour levels) or line plots (one axis)
//   a model's folder      the model's own figures (ModelEntry::plot), else the generic ones
//   any other folder      every numeric column of each CSV against its first column
#include <fmt/format.h>

#include <filesystem>

#include "commands.hpp"
#include "hdat/app/plot.hpp"
#include "hdat/core/exit_code.hpp"

namespace hdat {

namespace {

struct PlotArgs {
  std::string dir;
  app::PlotRequest request;
};

int run_plot(const PlotArgs& a) {
  const app::PlotOutcome outcome = app::plot_folder(a.dir, a.request);
  fmt::print(stderr, "{}", outcome.notes);
  for (const auto& w : outcome.figures) {
    const std::filesystem::path svg = std::filesystem::path(w).replace_extension(".svg");
    fmt::print("figure {}{}\n", w.string(), std::filesystem::exists(svg) ? " (.svg)" : "");
  }
  return code(ExitCode::ok);
}

}  // namespace

ExtraCommand plot_command(CLI::App& app) {
  static PlotArgs args;
  auto* sub = app.add_subcommand("plot", "figures (PNG and SVG, via gnuplot) of an output folder: curves, validations, sweeps");
  sub->add_option("DIR", args.dir, "output folder of hdat curve | simulate | validate | analyze | sweep ...")->required();
  sub->add_option("--observable", args.request.observables, "sweep: the sweep.csv columns to draw (default: all)")->allow_extra_args(false);
  sub->add_option("--contour", args.request.contours, "sweep heat maps: contour levels; repeatable")->allow_extra_args(false);
  sub->add_option("--x", args.request.x, "sweep: the swept key on the x axis");
  sub->add_option("--y", args.request.y, "sweep: the swept key on the y axis of a heat map");
  sub->add_flag("--heatmap", args.request.heatmap, "sweep: heat maps (two swept numbers)");
  sub->add_flag("--lines", args.request.lines, "sweep: line plots against --x, one line per value of the other swept keys");
  sub->add_flag("--together", args.request.together, "sweep line plots: every observable in one panel");
  sub->add_flag("--generic", args.request.generic, "the generic figures even when the model has its own");
  return {sub, [] { return run_plot(args); }};
}

}  // namespace hdat
