#pragma once
// The `hdat geometry` analysis (spec: ../shared/spec/geometry.md): token-selection geometry,
// sink geometry and head taxonomy of attention maps, either of a pretrained llama2.c checkpoint
// (documents sampled from the model itself) or of maps a user brings in the JSON format
// (include/hdat/geometry/maps.hpp); head sparsification on the checkpoint.
//
// Averaging order (spec): random repeats -> maps (layers, heads, queries of a group) within a
// document -> documents; uncertainty by a bootstrap over documents.
#include <filesystem>
#include <vector>

#include "hdat/core/params.hpp"
#include "hdat/core/registry.hpp"
#include "hdat/geometry/maps.hpp"

namespace hdat::geometry {

/// Every analysis setting (`hdat list geometry`, `--set key=value`).
const ParamSet& analysis_params();

/// The whole analysis on a llama2.c checkpoint (vocab.txt beside it). Tables: geometry.csv,
/// summary.csv, sink_effect.csv, heads.csv, taxonomy.csv, attention_mass.csv, sparsify.csv,
/// single_heads.csv; files: documents.txt (and maps.json with export_maps > 0); info for run.json.
RunOutput analyze_model(const std::filesystem::path& model_file, const Params& params, RunContext& ctx);

/// The analysis of user-supplied maps (no sampling, no sparsification).
RunOutput analyze_maps(const std::vector<AttentionMap>& maps, const Params& params, RunContext& ctx);

/// Figures for an output folder of `hdat geometry` (reads the CSV files, writes PNG + SVG + .gp).
void plot_geometry(const std::filesystem::path& dir);

}  // namespace hdat::geometry

namespace hdat {
/// The registry entry "geometry": its parameters (for `hdat list geometry`) and figures (`hdat plot`).
void register_geometry(Registry& registry);
}  // namespace hdat
