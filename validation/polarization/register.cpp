// The `polarization` model's commands for the `hdat` program. curve, simulate and validate come from
// the core's harness (hdat/core/harness.hpp) and the model's declaration (declaration.cpp):
//   hdat curve polarization     theory: the flow (reduced in (u,a) / (u,a,Q) where it exists) -> curve.csv
//   hdat simulate polarization  gradient descent on (V, a) / (U, a) at step lr -> sim.csv
//   hdat validate polarization  flow vs GD at lr, lr/2, ...: O(η) gap that shrinks with η -> exit 0 / 1
// and the model's own analysis:
//   hdat analyze polarization   the paper's claims (key `claim`) -> claim.csv, series, claim.png
#include <fmt/format.h>

#include <cmath>

#include "hdat/core/error.hpp"
#include "hdat/core/exit_code.hpp"
#include "hdat/core/output.hpp"
#include "hdat/core/harness.hpp"
#include "hdat/core/plot.hpp"
#include "hdat/core/registry.hpp"
#include "hdat/polarization/claims.hpp"
#include "hdat/polarization/declaration.hpp"
#include "hdat/polarization/model.hpp"
#include "hdat/polarization/plot.hpp"

namespace hdat {

namespace {

using namespace hdat::polarization;

// Figures straight into the output folder (the CLI writes the same tables again with run.json).
void figures_into(const RunContext& ctx, const Config& c, RunOutput& out, const std::string& claim = "") {
  if (!c.figures || ctx.out.empty()) return;
  if (!plot::available()) {
    out.info["figures"] = "skipped: gnuplot not found";
    return;
  }
  try {
    for (const auto& [name, table] : out.tables) write_file_atomic(ctx.out / name, table.to_csv());
    std::vector<std::string> stems;
    if (!claim.empty()) {
      plot_claim(claim, ctx.out);
      stems.push_back("claim");
    } else {
      stems = plot_folder(ctx.out);
    }
    out.info["figures"] = stems;
  } catch (const std::exception& e) {
    out.info["figures"] = std::string("failed: ") + e.what();
  }
}

// Gradient descent at the smallest step a command runs must stay within reach.
void check_steps(const Config& c, double lr_smallest) {
  const double steps = c.t_max / lr_smallest;
  if (steps > 1e10) throw InputError("lr", fmt::format("t_max / lr = {:.3g} gradient steps is too many (at most 1e10); raise lr or lower t_max", steps));
}

// The smallest gradient-descent step a command runs: none (theory alone), lr, or lr / 2^halvings.
enum class SmallestStep { none, lr, halved };

// A command of the core (from the declaration), with the step check and the model's figures.
Command with_figures(Command core, SmallestStep smallest) {
  return [core = std::move(core), smallest](const Params& p, RunContext& ctx) {
    const Config c = bound_config(p);
    if (smallest != SmallestStep::none) check_steps(c, std::ldexp(c.lr, smallest == SmallestStep::halved ? -c.halvings : 0));
    RunOutput out = core(p, ctx);
    figures_into(ctx, c, out);
    return out;
  };
}

RunOutput cmd_analyze(const Params& p, RunContext& ctx) {
  const Config c = bound_config(p);
  ClaimResult r = run_claim(c.claim, p, ctx.quiet);
  RunOutput out;
  out.tables["claim.csv"] = r.checks_table();
  for (auto& [name, t] : r.series) out.tables[name] = std::move(t);
  out.info = r.info;
  out.summary = r.summary;
  out.exit_code = code(r.all_pass ? ExitCode::ok : ExitCode::disagree);
  figures_into(ctx, c, out, c.claim);
  return out;
}

}  // namespace

void register_polarization(Registry& r) {
  ModelEntry m;
  m.name = "polarization";
  m.summary = "value-softmax model β = V σ(a): gradient flow polarises the weights (exact reduced flows, normalisations, GD)";
  m.description =
      "Gradient flow of β = V σ(a) (or the tied β = U σ(U a)) on a logistic, square, regression or cross-entropy loss. "
      "`curve` integrates the exact reduced flow, closed in (u, a) for the logistic loss and in (u, Q, a) for the square loss "
      "(u = Vᵀβ*, Q = VᵀV; any d), or the full (V, a) flow otherwise, in log time to t = 1e20 and beyond, with the events of "
      "the normalisation (a weight leaving the simplex, the normaliser crossing 0, a logit reaching 0 in finite time). "
      "`simulate` runs plain gradient descent (t = lr · steps); `validate` checks that the gap between them is O(lr) and "
      "shrinks with lr, with the identities of every step and the drift check; `analyze --set claim=...` reproduces the paper's claims (order, polarization, square, regression, "
      "normalizations, tied, sign). Derivation: theory/polarization/derivation.md; usage: docs/polarization.md.";
  m.params = parameters();
  m.check = [](const Params& p) { check(p); };
  add_dynamics_commands(m, dynamics_model());
  m.commands["curve"] = with_figures(m.commands.at("curve"), SmallestStep::none);
  m.commands["simulate"] = with_figures(m.commands.at("simulate"), SmallestStep::lr);
  m.commands["validate"] = with_figures(m.commands.at("validate"), SmallestStep::halved);
  m.commands["analyze"] = cmd_analyze;
  m.smoke = {{{"t_max", 50}, {"points", 30}}, "replicator_sign"};
  m.default_observables = {"loss", "one_minus_s_top", "entropy", "top_gap", "z_minus_logt", "eps_log2t"};
  m.command_observables["simulate"] = m.default_observables;  // sim.csv has the same columns as curve.csv
  m.plot = [](const std::filesystem::path& dir) { plot_folder(dir); };
  // Seconds per command (the Python suite against the command line); curve draws the model's own figures.
  const nlohmann::json small = {{"T", 3}, {"t_max", 10}, {"points", 5}, {"figures", false}};
  nlohmann::json small_curve = small, small_validate = small;
  small_curve["figures"] = true;
  small_validate["halvings"] = 1;
  m.small = {{"curve", small_curve}, {"simulate", small}, {"validate", small_validate}, {"analyze", small}};
  r.add(std::move(m));
}

}  // namespace hdat
