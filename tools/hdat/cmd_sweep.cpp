// `hdat sweep`: a model command over a grid of parameters (docs/sweep.md).
//   hdat sweep MODEL --grid key=start:stop:count[:log] | key=[a,b,...] ... [--set k=v]... [--config F]
//                    [--mode theory|simulate] [--observable SPEC]... [--threads N] [--point-threads K]
//                    [--shard i/n] [--retry-failed] [--plot [--contour V]... [--together]] --out DIR
//   hdat sweep [MODEL ...] --merge --out DIR        assemble sweep.csv from DIR/points (after --shard jobs)
//   mpirun -n N hdat sweep ...                      (HDAT_MPI build) ranks split the grid, rank 0 writes
#include <fmt/format.h>

#include "commands.hpp"
#include "hdat/app/run.hpp"
#include "hdat/app/sweep.hpp"
#include "hdat/sweep/comm.hpp"

namespace hdat {

namespace {

struct SweepArgs {
  app::SweepRequest request;
  std::string out, config_file;
  std::vector<std::string> sets;
};

int run_sweep(SweepArgs& a) {
  a.request.out = a.out;
  a.request.config = app::config_of(a.config_file);
  a.request.assignments = app::assignments_of(a.sets);
  auto comm = sweep::open_communicator();
  const app::SweepOutcome outcome = app::run_sweep(a.request, *comm);
  fmt::print("{}", outcome.report);
  fmt::print(stderr, "{}", outcome.notes);
  return outcome.exit_code;
}

}  // namespace

ExtraCommand sweep_command(CLI::App& app) {
  static SweepArgs args;
  auto* sub = app.add_subcommand("sweep", "phase diagrams: a model command over a grid of parameters -> DIR/sweep.csv, DIR/run.json");
  sub->add_option("MODEL", args.request.model, "model name (see `hdat list`); with --merge it may be left out");
  sub->add_option("--grid", args.request.grid, "key=start:stop:count[:log] or key=[a,b,...]; repeatable (cartesian product)")->allow_extra_args(false);
  sub->add_option("--config", args.config_file, "JSON file of the base parameter values");
  sub->add_option("--set", args.sets, "key=value of the base parameters; repeatable")->allow_extra_args(false);
  sub->add_option("--mode", args.request.mode, "theory (the model's curve command), simulate, or another command of the model")->capture_default_str();
  sub->add_option("--observable", args.request.observables,
                  "[label=]final:COL | min:COL | max:COL | argmin:COL | argmax:COL | at:X:COL | cross:COL:V | info:PATH | "
                  "table:FILE.csv:... | NAME; repeatable (default: the model's)")
      ->allow_extra_args(false);
  sub->add_option("--out", args.out, "output folder (finished points are kept in DIR/points; rerun to resume)")->required();
  sub->add_option("--threads", args.request.threads, "points computed at once (default: all cores; under MPI the cores of a node shared by its ranks)");
  sub->add_option("--point-threads", args.request.point_threads, "threads of each point's own computation (default 1)");
  sub->add_option("--shard", args.request.shard, "i/n: compute only points with index % n == i (job arrays); then --merge");
  sub->add_flag("--merge", args.request.merge, "assemble sweep.csv and run.json from DIR/points (MODEL and grid from DIR/sweep.json when left out)");
  sub->add_flag("--retry-failed", args.request.retry_failed, "recompute points whose stored status is a failure");
  sub->add_flag("--plot", args.request.plot, "draw the figures at the end (as hdat plot DIR)");
  sub->add_option("--contour", args.request.contours, "with --plot: contour levels on heat maps")->allow_extra_args(false);
  sub->add_flag("--together", args.request.together, "with --plot: line plots draw every observable in one panel");
  sub->add_flag("--quiet", args.request.quiet, "no progress line");
  return {sub, [] { return run_sweep(args); }};
}

}  // namespace hdat
