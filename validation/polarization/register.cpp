// The `polarization` model's commands for the `hdat` program:
//   hdat curve polarization     theory: the flow (reduced in (u,a) / (u,Q,a) where it exists) -> curve.csv
//   hdat simulate polarization  gradient descent on (V, a) / (U, a) at step lr -> sim.csv
//   hdat validate polarization  flow vs GD at lr, lr/2, ...: O(η) gap that shrinks with η -> exit 0 / 1
//   hdat analyze polarization   the paper's claims (key `claim`) -> claim.csv, series, claim.png
#include <fmt/format.h>

#include <cmath>

#include "hdat/core/error.hpp"
#include "hdat/core/output.hpp"
#include "hdat/core/plot.hpp"
#include "hdat/core/registry.hpp"
#include "hdat/polarization/curve.hpp"
#include "hdat/polarization/instance.hpp"
#include "hdat/polarization/model.hpp"
#include "hdat/polarization/claims.hpp"
#include "hdat/polarization/compare.hpp"
#include "hdat/polarization/gd.hpp"
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

void check_steps(const Config& c, double lr_smallest) {
  const double steps = c.t_max / lr_smallest;
  if (steps > 1e10) throw InputError("lr", fmt::format("t_max / lr = {:.3g} gradient steps is too many (at most 1e10); raise lr or lower t_max", steps));
}

std::string curve_summary(const Config& c, const CurveResult& r) {
  std::string s = fmt::format("curve polarization: {} loss, {}, {} flow ({} variables) to t = {:g}\n  {}\n", name(c.loss), name(c.normalization),
                              r.info["flow"]["kind"].get<std::string>(), r.info["flow"]["state_size"].get<int>(), c.t_max,
                              r.flow.summary.brief());
  if (!r.table.empty()) {
    const std::size_t L = r.table.rows() - 1;
    s += fmt::format("  at t = {:g}: top token {}, s_top = {:.10g}, 1 − s_top = {:.4g}, loss = {:.4g}, z − log t = {:.4g}\n", r.table.number(L, "t"),
                     static_cast<int>(r.table.number(L, "top")), 1 - r.table.number(L, "one_minus_s_top"), r.table.number(L, "one_minus_s_top"),
                     r.table.number(L, "loss"), r.table.number(L, "z_minus_logt"));
  }
  for (const auto& e : r.flow.events) s += fmt::format("  event at t = {:.10g}: {} ({})\n", e.t, e.message, e.to_json()["action"].get<std::string>());
  return s;
}

RunOutput cmd_curve(const Params& p, RunContext& ctx) {
  const Config c = Config::from(p);
  const Instance in = make_instance(c);
  CurveResult r = theory_curve(c, in);
  RunOutput out;
  out.tables["curve.csv"] = r.table;
  out.info = r.info;
  out.summary = curve_summary(c, r);
  if (!r.ok) {
    out.exit_code = 3;
    out.summary += "  numerical failure: " + r.flow.summary.message + " (rows before it are kept)\n";
  }
  figures_into(ctx, c, out);
  return out;
}

RunOutput cmd_simulate(const Params& p, RunContext& ctx) {
  const Config c = Config::from(p);
  check_steps(c, c.lr);
  const Instance in = make_instance(c);
  GdOptions o;
  o.lr = c.lr;
  o.times = c.times;
  o.quiet = ctx.quiet;
  GdRun run = gradient_descent(c, in, o);
  RunOutput out;
  out.tables["sim.csv"] = run.table;
  out.info["simulation"] = run.to_json();
  out.info["simulation"]["lr"] = c.lr;
  out.info["events"] = run.events;
  out.info["instance"] = in.record(c);
  out.summary = fmt::format("simulate polarization: gradient descent, {} loss, {}, lr = {:g}: {} steps in {:.3f} s ({:.3g} steps/s)\n", name(c.loss),
                            name(c.normalization), c.lr, run.steps_done, run.wall_seconds, run.steps_done / std::max(run.wall_seconds, 1e-12));
  if (!run.table.empty()) {
    const std::size_t L = run.table.rows() - 1;
    out.summary += fmt::format("  at t = {:g}: top token {}, s_top = {:.10g}, loss = {:.4g}\n", run.table.number(L, "t"),
                               static_cast<int>(run.table.number(L, "top")), 1 - run.table.number(L, "one_minus_s_top"), run.table.number(L, "loss"));
  }
  out.summary += "  invariants: " + run.invariants.dump() + "\n";
  if (run.interrupted) out.exit_code = 130;
  if (!run.finite) {
    out.exit_code = 3;
    out.summary += "  numerical failure: the state became non-finite (rows before it are kept)\n";
  }
  figures_into(ctx, c, out);
  return out;
}

RunOutput cmd_validate(const Params& p, RunContext& ctx) {
  const Config c = Config::from(p);
  check_steps(c, c.lr / std::ldexp(1.0, c.halvings));
  const Instance in = make_instance(c);
  Validation v = validate(c, in, ctx.quiet);
  RunOutput out;
  out.tables["curve.csv"] = v.theory.table;
  out.tables["sim.csv"] = v.runs.front().table;
  out.tables["convergence.csv"] = v.convergence;
  out.tables["validate.csv"] = v.comparison;
  out.info = v.info;
  out.summary = v.summary;
  out.exit_code = v.agree ? 0 : (v.theory.ok ? 1 : 3);
  for (const auto& r : v.runs)
    if (r.interrupted) out.exit_code = 130;
  figures_into(ctx, c, out);
  return out;
}

RunOutput cmd_analyze(const Params& p, RunContext& ctx) {
  const Config c = Config::from(p);
  ClaimResult r = run_claim(c.claim, p, ctx.quiet);
  RunOutput out;
  out.tables["claim.csv"] = r.checks;
  for (auto& [name, t] : r.series) out.tables[name] = std::move(t);
  out.info = r.info;
  out.summary = r.summary;
  out.exit_code = r.all_pass ? 0 : 1;
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
      "shrinks with lr; `analyze --set claim=...` reproduces the paper's claims (order, polarization, square, regression, "
      "normalizations, tied, sign). Derivation: theory/polarization/derivation.md; usage: docs/polarization.md.";
  m.params = parameters();
  m.check = [](const Params& p) { check(p); };
  m.commands["curve"] = cmd_curve;
  m.commands["simulate"] = cmd_simulate;
  m.commands["validate"] = cmd_validate;
  m.commands["analyze"] = cmd_analyze;
  m.default_observables = {"loss", "one_minus_s_top", "entropy", "top_gap", "z_minus_logt", "eps_log2t"};
  m.plot = [](const std::filesystem::path& dir) { plot_folder(dir); };
  r.add(std::move(m));
}

}  // namespace hdat
