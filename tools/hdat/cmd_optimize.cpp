// `hdat optimize MODEL --control KEY ... --out DIR`: the schedule of controllable parameters that
// minimises a risk objective through the theory (exact gradients by sensitivities, NLopt), beside
// the best constant and the usual schedules (docs/optimize.md).
#include <fmt/format.h>

#include <iostream>

#include "cli_common.hpp"
#include "commands.hpp"
#include "hdat/app/optimize.hpp"
#include "hdat/app/run.hpp"
#include "hdat/core/output.hpp"

namespace hdat {

namespace {

struct OptimizeArgs {
  cli::ModelArgs model;
  optimize::OptimizeOptions options;
  std::vector<std::string> bounds, budget, confirm_theory;
  std::string shape = "piecewise_constant", objective = "final";
  bool no_baselines = false;
};

int run_optimize_command(const OptimizeArgs& a) {
  check_output_folder(a.model.out);  // first: a folder that cannot be written is said before anything else
  const ModelEntry& model = registry().get(a.model.model);
  optimize::OptimizeOptions o = a.options;
  o.shape = shape_from_name(a.shape, "shape");
  o.objective = optimize::objective_from_name(a.objective, "objective");
  o.bounds = app::parse_bounds(a.bounds);
  o.budget = app::parse_budget(a.budget);
  o.baselines = !a.no_baselines;
  for (const auto& text : a.confirm_theory)
    if (text.find('=') == std::string::npos || text.front() == '=')
      throw InputError("confirm_theory", "--confirm-theory expects KEY=VALUE as one word (e.g. --confirm-theory mc_samples=20000), got '" + text + "'");
  for (const auto& [key, value] : app::assignments_of(a.confirm_theory)) o.confirm_theory[key] = value;
  const Params params = app::resolve_args(model, a.model.config_file, a.model.sets);
  app::prepare_output(a.model.out, model, "optimize", params, a.model.replace);
  RunContext ctx;
  ctx.threads = a.model.threads;
  ctx.quiet = a.model.quiet;
  ctx.out = a.model.out;
  const app::Run run = app::run_optimize(model, params, o, ctx);
  app::write_output(a.model.out, run);
  std::cout << app::report(run, a.model.out);
  return run.output.exit_code;
}

}  // namespace

ExtraCommand optimize_command(CLI::App& app) {
  static OptimizeArgs args;
  auto* sub = app.add_subcommand("optimize", "optimal protocol: the schedule of controllable parameters minimising the risk (theory, exact gradients)");
  cli::add_model_options(*sub, args.model);
  auto& o = args.options;
  sub->add_option("--control", o.controls, "a controllable parameter to optimise (committee: eta, dropout_keep, test_scale; specialization: eta); repeatable")
      ->allow_extra_args(false);
  sub->add_option("--intervals", o.intervals, "equal intervals of [0, t_final] (default 20)");
  sub->add_option("--shape", args.shape, "piecewise_constant | piecewise_linear");
  sub->add_option("--bounds", args.bounds, "CONTROL=LO:HI; repeatable (default: the control's range, or [0, 4 x its value])")->allow_extra_args(false);
  sub->add_option("--budget", args.budget, "CONTROL=MEAN: the schedule's mean over [0, t_final] is fixed; repeatable")->allow_extra_args(false);
  sub->add_option("--objective", args.objective, "final (risk at t_final) | average (its time average) | time_to_target");
  sub->add_option("--target", o.target, "time_to_target: the risk to reach");
  sub->add_option("--t-final", o.t_final, "the horizon (default: the model's t_max)");
  sub->add_option("--algorithm", o.algorithm, "NLopt algorithm: slsqp (default) | lbfgs | mma | ccsaq");
  sub->add_option("--max-evaluations", o.max_evaluations, "objective evaluations per optimisation (default 400)");
  sub->add_option("--ftol", o.ftol_rel, "relative tolerance on the objective (default 1e-9)");
  sub->add_option("--rtol", o.rtol, "the integrator's relative tolerance (default 1e-9)");
  sub->add_flag("--no-baselines", args.no_baselines, "only the best constant beside the optimum");
  sub->add_option("--confirm", o.confirm_size, "train the finite system at this size (N, D) under the optimum and the best constant");
  sub->add_option("--confirm-seeds", o.confirm_seeds, "seeds of each confirmation ensemble (default 16)");
  sub->add_option("--confirm-theory", args.confirm_theory,
                  "KEY=VALUE: a setting of the theory that predicts the confirmation (only keys that change no finite run, e.g. "
                  "mc_samples=20000); repeatable")
      ->allow_extra_args(false);
  sub->add_flag("--restart", o.restart, "ignore the saved state of an earlier run in --out (otherwise it resumes)");
  return {sub, [] { return run_optimize_command(args); }};
}

}  // namespace hdat
