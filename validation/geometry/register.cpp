// The registry entry "geometry": `hdat list geometry` shows the analysis settings, `hdat plot DIR`
// draws the figures of an `hdat geometry` output folder. The analysis itself runs through
// `hdat geometry` (tools/hdat/cmd_geometry.cpp), which takes the model file or the maps.
#include "hdat/geometry/analysis.hpp"
#include "hdat/llama/checkpoint.hpp"

namespace hdat {

void register_geometry(Registry& registry) {
  ModelEntry e;
  e.name = "geometry";
  e.summary = "token-selection geometry of attention maps (run it with `hdat geometry`)";
  e.description =
      "Which tokens attention heads select (spec/geometry.md): geometric precision, recall and F of the top-N sets "
      "against random sets over N = 1, 2, 4, ..., Euclidean and cosine; sink geometry; Retriever/Mixer/Reset "
      "taxonomy; head sparsification. `hdat geometry --model-file PATH` samples documents from a llama2.c "
      "checkpoint (default: the bundled stories260K, data/models/stories260K/, checked against its sha256 sums); `hdat geometry --maps FILE.json` "
      "analyses maps exported from any framework. See docs/geometry.md.";
  e.params = geometry::analysis_params();
  e.commands["geometry"] = [](const Params& p, RunContext& ctx) { return geometry::analyze_model(llama::default_model_file(), p, ctx); };
  e.plot = [](const std::filesystem::path& dir) { geometry::plot_geometry(dir); };
  registry.add(std::move(e));
}

}  // namespace hdat
