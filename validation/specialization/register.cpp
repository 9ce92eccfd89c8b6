// The `specialization` model's entry in the registry: curve, simulate and validate derived by the
// core from the model's declaration (declaration.cpp), and the model's own analysis.
#include "hdat/core/harness.hpp"
#include "hdat/core/registry.hpp"
#include "hdat/specialization/analyze.hpp"
#include "hdat/specialization/declaration.hpp"
#include "hdat/specialization/model.hpp"

namespace hdat {
namespace specialization {
void plot_specialization(const std::filesystem::path& dir);  // figures.cpp
}

void register_specialization(Registry& r) {
  using namespace specialization;
  ModelEntry e;
  e.name = "specialization";
  e.summary = "multi-head softmax attention on the single-location model: order-parameter ODE of online SGD";
  e.description =
      "Heads k_h learn spikes k*_f by online SGD; the overlaps M = K*^T k / D (H x F) and R = k^T k / D (H x H)\n"
      "follow a closed ODE as D -> infinity (theory/specialization/derivation.md). Activations: softmax,\n"
      "softmax1 (extra zero logit; a per-head bias b_h of the logits, fixed or trained, gates a head per sequence),\n"
      "bayes (one normalisation over heads x tokens with norm offset).\n"
      "The D = infinity flow from exactly equal heads never specialises: by default the theory starts from\n"
      "the overlaps of a random initialisation at dimension D (asymmetry=1), or from M0/R0.";
  e.params = parameters();
  e.check = check;
  add_dynamics_commands(e, dynamics_model());
  e.commands["analyze"] = analyze_command;
  e.plot = plot_specialization;
  e.default_observables = {"final:risk", "info:events.plateau_end", "info:bayes_risk"};
  e.command_observables["simulate"] = {"final:risk"};
  e.smoke = {{{"D", 400},
              {"dims", {300, 600}},
              {"seeds", 32},
              {"t_max", 3.0},
              {"n_points", 8},
              {"mc_samples", 6000},
              {"test_size", 2000},
              {"theory_replicas", 2}},
             "eta2"};
  // Seconds per command (the Python suite against the command line).
  const nlohmann::json small = {{"mc_samples", 512}, {"t_max", 5}, {"n_points", 5}};
  nlohmann::json small_curve = small, small_sim = small, small_validate, small_analyze = small;
  small_curve["prior.scale"] = 1.5;
  small_sim.update({{"D", 100}, {"seeds", 2}, {"test_size", 200}});
  small_validate = small_sim;
  small_validate.update({{"dims", {100, 200}}, {"theory_replicas", 2}});
  small_analyze.update({{"dims", {100}}, {"seeds", 2}, {"compare", false}, {"stages", false}, {"t_relax", 20}});
  e.small = {{"curve", small_curve}, {"simulate", small_sim}, {"validate", small_validate}, {"analyze", small_analyze}};
  r.add(std::move(e));
}

}  // namespace hdat
