// Registration of the `tied-attention` model for the command line, and its figures.
#include <filesystem>

#include "hdat/core/output.hpp"
#include "hdat/core/plot.hpp"
#include "hdat/core/registry.hpp"
#include "hdat/core/table.hpp"
#include "hdat/tied_attention/model.hpp"
#include "hdat/tied_attention/declaration.hpp"

namespace hdat {

namespace {

namespace fs = std::filesystem;
using tied_attention::plot_folder;

}  // namespace

void register_tied_attention(Registry& r) {
  ModelEntry m;
  m.name = "tied-attention";
  m.summary = "single-head tied attention S = W W^T/sqrt(pd) trained by ERM: learning curves, spectra, thresholds";
  m.description =
      "Tokens x_a ~ N(0, I_d), fields h_ab = (x_a^T S x_b - delta_ab Tr S)/sqrt(d), labels softmax(h0 + noise) "
      "(seq2lab) from a target S0; n = alpha d^2 samples; ERM with square loss and weight decay lambda|W|^2 = "
      "d lambda-tilde Tr S. Theory: state evolution with the spectral prior (free convolution of the target "
      "spectrum with a semicircle); T = 1 is matrix sensing with a closed-form fixed point. curve -> curve.csv "
      "(+ spectrum.csv with --set spectrum=ALPHA), simulate -> sim.csv, validate -> theory vs finite-d ERM with a "
      "1/d extrapolation (exit 0 agree, 1 disagree). See docs/tied-attention.md and theory/tied_attention/derivation.md.";
  m.params = tied_attention::param_set();
  m.check = tied_attention::check_params;
  m.commands["curve"] = tied_attention::curve_command;
  m.commands["simulate"] = tied_attention::simulate_command;
  m.commands["validate"] = tied_attention::validate_command;
  m.default_observables = {"test_error", "train_loss", "mse", "rank"};
  // A validate sweep's default: the worst deviation over the allowed one (ERM and AMP alike), beside
  // the verdict in its status column.
  m.command_observables["validate"] = {"worst=info:verdict.max_deviation_over_allowed"};
  m.plot = [](const fs::path& dir) { plot_folder(dir); };
  // The all-model smoke (tests/models): matrix sensing (T = 1) trained by convex ERM at one alpha, whose
  // closed-form theory is compared with the 1/d extrapolation of d = 30, 45, 60; the prior side's
  // d_delta J term x 1.25 (break_term=denoiser) moves the predicted error far outside the tolerance.
  m.smoke = {{{"T", 1},
              {"alphas", {0.2}},
              {"training", "convex"},
              {"seeds", 24},
              {"dims", {30, 45, 60}}},
             "denoiser"};
  // Seconds per command (the Python suite against the command line).
  const nlohmann::json small = {{"T", 1}, {"alphas", {0.2, 0.4}}, {"d", 20}, {"seeds", 1}, {"bayes", false}};
  nlohmann::json small_validate = small;
  small_validate.update({{"dims", {20, 30}}, {"seeds", 2}});
  m.small = {{"curve", small}, {"simulate", small}, {"validate", small_validate}};
  r.add(std::move(m));
}

}  // namespace hdat
