// The `committee` model's entry in the registry: curve, simulate and validate derived by the core
// from the model's declaration (declaration.cpp).
#include "hdat/committee/declaration.hpp"
#include "hdat/committee/model.hpp"
#include "hdat/core/harness.hpp"
#include "hdat/core/registry.hpp"

namespace hdat {

void register_committee(Registry& r) {
  using namespace committee;
  ModelEntry e;
  e.name = "committee";
  e.summary = "soft committee machine (Saad-Solla): closed-form order-parameter ODE of online SGD, erf and linear";
  e.description =
      "A K-unit student y = sum_k v_k g(w_k.x/sqrt N) learns an M-unit teacher by online SGD; the overlaps Q, R, T (and v)\n"
      "follow a closed ODE with closed-form Gaussian integrals for g = erf(u/sqrt 2) and g = u\n"
      "(theory/committee/derivation.md). The N = infinity flow from exactly symmetric students never leaves the\n"
      "plateau: by default the theory starts from the overlaps of a random initialisation at dimension N, or from Q0/R0/T0.";
  e.params = parameters();
  e.check = check;
  add_dynamics_commands(e, dynamics_model());
  e.default_observables = {"final:eg", "info:events.escape_time"};
  e.command_observables["simulate"] = {"final:eg"};
  // Every term on, no exchangeable units: seconds, and a dropped eta^2 term must fail.
  e.smoke = {{{"K", 2},
              {"M", 2},
              {"eta", 1.0},
              {"train_v", true},
              {"noise", 0.3},
              {"wd", 0.01},
              {"v0", {1.0, 0.5}},
              {"vstar", {1.0, 0.5}},
              {"N", 500},
              {"dims", {500, 1000}},
              {"seeds", 8},
              {"t_max", 20.0},
              {"n_points", 12},
              {"test_size", 500}},
             "eta_squared"};
  // Seconds per command (the Python suite against the command line).
  const nlohmann::json small = {{"K", 2}, {"M", 2}, {"t_max", 5}, {"n_points", 5}};
  nlohmann::json small_sim = small;
  small_sim.update({{"N", 100}, {"seeds", 2}, {"test_size", 200}});
  nlohmann::json small_validate = small_sim;
  small_validate["dims"] = {100, 200};
  e.small = {{"curve", small}, {"simulate", small_sim}, {"validate", small_validate}};
  r.add(std::move(e));
}

}  // namespace hdat
