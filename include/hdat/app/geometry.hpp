#pragma once
// `hdat geometry` as a function (the command line and hdat.geometry() in Python share it): the
// analysis of a llama2.c checkpoint's attention maps, or of maps given in a JSON file.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "hdat/app/run.hpp"

namespace hdat::app {

struct GeometrySource {
  std::string model_file;  ///< a llama2.c checkpoint (vocab.txt beside it); empty: the bundled model, llama::default_model_file() (sha256-checked)
  std::string maps_file;   ///< attention maps in the JSON format of docs/geometry.md (instead of a checkpoint)
};

/// The analysis settings (keys of the registry entry "geometry", see `hdat list geometry`).
Params resolve_geometry(const nlohmann::json& config, const std::vector<std::pair<std::string, nlohmann::json>>& assignments);

/// The geometry analysis with resolved settings (the registry entry "geometry"'s keys); the Run's
/// command is "geometry". InputError when both sources are given.
Run run_geometry(const GeometrySource& source, const Params& params, RunContext& ctx);

/// The figures of a written geometry folder when the key `plots` is set; returns a note for stderr
/// ("" when they were drawn or not asked for).
std::string geometry_figures(const std::filesystem::path& dir, const Params& params);

}  // namespace hdat::app
