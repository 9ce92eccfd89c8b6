#include "hdat/app/geometry.hpp"

#include <chrono>

#include "hdat/core/error.hpp"
#include "hdat/core/output.hpp"
#include "hdat/core/plot.hpp"
#include "hdat/geometry/analysis.hpp"
#include "hdat/llama/checkpoint.hpp"

namespace hdat::app {

Params resolve_geometry(const nlohmann::json& config, const std::vector<std::pair<std::string, nlohmann::json>>& assignments) {
  return resolve(registry().get("geometry").params, config, assignments);
}

Run run_geometry(const GeometrySource& source, const Params& params, RunContext& ctx) {
  if (!source.model_file.empty() && !source.maps_file.empty())
    throw InputError("--maps", "analyses maps instead of a checkpoint; give --maps or --model-file, not both");
  Run run{&registry().get("geometry"), "geometry", params, {}, 0.0, {}, {}};
  const auto start = std::chrono::steady_clock::now();
  if (!source.maps_file.empty()) {
    run.output = geometry::analyze_maps(geometry::read_maps(source.maps_file), params, ctx);
    run.output.info["maps_file"] = source.maps_file;
  } else {
    run.output = geometry::analyze_model(source.model_file.empty() ? llama::default_model_file() : std::filesystem::path(source.model_file), params, ctx);
  }
  run.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.finished_at = now_iso8601();
  return run;
}

std::string geometry_figures(const std::filesystem::path& dir, const Params& params) {
  if (!params.boolean("plots")) return "";
  if (!plot::available()) return "hdat: gnuplot not found; no figures\n";
  try {
    geometry::plot_geometry(dir);
  } catch (const std::exception& e) {
    return std::string("hdat: figures failed: ") + e.what() + "\n";
  }
  return "";
}

}  // namespace hdat::app
