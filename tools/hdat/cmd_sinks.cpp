// `hdat sinks`: train and evaluate one transformer of the attention-sink experiments (the `sinks`
// model's simulate command: DIR/sinks.json, DIR/attention_maps.json, ...), or pool finished runs:
//   hdat sinks [--config FILE] [--set key=value]... --out DIR [--plot]
//   hdat sinks --collect DIR1 DIR2 ... --out DIR [--plot]      (study.csv, runs.csv, sink_share.png)
//   hdat sinks --figures-only --out DIR                          (figures of a finished run or study)
//   hdat sinks --protocol --out DIR [--grid K=[..]]... [--set k=v]... [--threads N] [--plot]
//        the paper's protocol: a resumable sweep (DIR/sweep.csv, DIR/points) of attention kinds x heads
//        {1,2,4,8} x lr {1e-2,1e-3,1e-4} x seeds 0..4 in the figure's setting, pooled into DIR/protocol.csv
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "cli_common.hpp"
#include "commands.hpp"
#include "hdat/core/error.hpp"
#include "hdat/core/exit_code.hpp"
#include "hdat/core/output.hpp"
#include "hdat/core/plot.hpp"
#include "hdat/sinks/study.hpp"
#include "hdat/core/progress.hpp"
#include "hdat/core/registry.hpp"
#include "hdat/sweep/sweep.hpp"

namespace hdat {

namespace {

struct SinksArgs {
  cli::ModelArgs model;
  std::vector<std::string> collect;
  bool plot = false;
  bool figures_only = false;
  bool protocol = false;
  std::vector<std::string> grid;
};

// The setting of the paper's figure (the authors' sweeps/induction.yaml filtered as in their
// visualizations/induction.ipynb: additive positions, aux 0.2, shifted query; their data and
// defaults otherwise: width 128, 2 layers, batch 256, 10 epochs of 100000 sequences, float32, the
// 1e-9 in the row sums) and its grid.
nlohmann::json protocol_base() {
  return {{"task", "induction"},   {"width", 128},          {"layers", 2},           {"batch", 256},
          {"positions", "add"},     {"shift_query", true},   {"aux_weight", 0.2},     {"query_last", true},
          {"batching", "epochs"},   {"epochs", 10},          {"n_train", 100000},     {"n_eval", 1000},
          {"precision", "float32"}, {"export_sequences", 0}, {"eval_every", 391}};
}

std::vector<std::string> protocol_grid(const std::vector<std::string>& user) {
  std::string kinds;
  for (const auto& k : sinks::protocol_kinds()) kinds += (kinds.empty() ? "" : ",") + k;
  std::vector<std::string> grid = {"attention=[" + kinds + "]", "heads=[1,2,4,8]", "lr=[0.01,0.001,0.0001]",
                                   "seed=[0,1,2,3,4]"};
  // A --grid for one of these keys replaces its axis; any other key adds an axis.
  for (const auto& g : user) {
    const std::string key = g.substr(0, g.find('='));
    auto it = std::find_if(grid.begin(), grid.end(), [&](const std::string& a) { return a.substr(0, a.find('=')) == key; });
    if (it != grid.end())
      *it = g;
    else
      grid.push_back(g);
  }
  return grid;
}

int protocol(const SinksArgs& a) {
  namespace fs = std::filesystem;
  const fs::path dir(a.model.out);
  const ModelEntry& model = registry().get("sinks");
  nlohmann::json config = protocol_base();
  if (!a.model.config_file.empty()) config.update(nlohmann::json::parse(read_file(a.model.config_file)));
  std::vector<std::pair<std::string, nlohmann::json>> sets;
  for (const auto& s : a.model.sets) sets.push_back(parse_assignment(s));
  const Params base = resolve_for(model, config, sets);
  const std::vector<std::string> observables = {"accuracy", "sink_heads", "sink_share", "sink_score",
                                                "above_accuracy_threshold", "steps_per_second"};
  const sweep::Plan plan = sweep::make_plan(model, "simulate", base, protocol_grid(a.grid), observables);
  write_file_atomic(dir / "sweep.json", plan.definition.to_json().dump(2) + "\n");
  std::vector<sweep::Row> rows(plan.points.size());
  sweep::RunOptions opt;
  opt.threads = a.model.threads;  // 0: all cores
  opt.quiet = a.model.quiet;
  opt.progress_label = "sinks protocol";
  auto last = std::chrono::steady_clock::now();
  opt.on_finished = [&](std::size_t, const sweep::Row&) {  // refresh sweep.csv now and then
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - last).count() < 30) return;
    last = std::chrono::steady_clock::now();
    write_file_atomic(dir / "sweep.csv", sweep::assemble(plan, rows).to_csv());
  };
  std::vector<std::size_t> all(plan.points.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  if (!a.model.quiet) fmt::print(stderr, "sinks protocol: {} runs (sweep folder {})\n", plan.points.size(), dir.string());
  const sweep::RunCounts counts = sweep::run_points(plan, dir, all, opt, rows);
  sweep::write_results(dir, plan, rows, counts, {{"kind", "sinks protocol"}, {"threads", opt.threads}});

  const Table sweep_table = sweep::assemble(plan, rows);
  const Table t = sinks::protocol_table(sweep_table, base.real("accuracy_threshold"));
  write_file_atomic(dir / "protocol.csv", t.to_csv());
  const std::size_t done = plan.points.size() - counts.pending;
  fmt::print("{} of {} runs finished ({} computed now, {} found finished, {} failed); accuracy threshold {}\n", done,
             plan.points.size(), counts.computed, counts.reused, counts.failed, base.real("accuracy_threshold"));
  fmt::print("{:<22} {:<22} {:<8} {:>5} {:>6} {:>14} {:>7}\n", "attention", "authors' code", "figure", "runs", "above",
             "share (s.e.)", "pooled");
  for (std::size_t i = 0; i < t.rows(); ++i)
    fmt::print("{:<22} {:<22} {:<8} {:>5} {:>6} {:>7.3f} ({:.3f}) {:>7.3f}\n", t.text(i, "attention"),
               t.text(i, "authors_code"), t.text(i, "figure_label") + (t.number(i, "normalised") != 0 ? "" : " w/o"),
               t.number(i, "runs"), t.number(i, "runs_above"), t.number(i, "sink_share_mean"),
               t.number(i, "sink_share_se"), t.number(i, "sink_share_pooled"));
  fmt::print("wrote {} and {}\n", (dir / "protocol.csv").string(), (dir / "sweep.csv").string());
  if (a.plot && t.rows()) {
    if (!plot::available())
      fmt::print(stderr, "hdat: gnuplot not found; no figures\n");
    else
      sinks::plot_protocol(t, dir / "protocol");
  }
  if (counts.interrupted || interrupted()) {
    fmt::print(stderr, "hdat: interrupted; finished runs are kept in {} and the same command resumes\n",
               (dir / "points").string());
    return code(ExitCode::interrupted);
  }
  return code(ExitCode::ok);
}

int collect(const SinksArgs& a) {
  std::vector<nlohmann::json> records;
  std::vector<std::string> folders;
  for (const auto& dir : a.collect) {
    const std::filesystem::path f = std::filesystem::path(dir) / "sinks.json";
    if (!std::filesystem::exists(f)) throw InputError("--collect", "no sinks.json in " + dir);
    nlohmann::json j = nlohmann::json::parse(read_file(f), nullptr, false);
    if (j.is_discarded()) throw InputError("--collect", "malformed " + f.string());
    records.push_back(std::move(j));
    folders.push_back(dir);
  }
  const Table study = sinks::study_table(records);
  const std::filesystem::path out(a.model.out);
  write_file_atomic(out / "study.csv", study.to_csv());
  write_file_atomic(out / "runs.csv", sinks::runs_table(records, folders).to_csv());
  nlohmann::json rec = provenance();
  rec["model"] = "sinks";
  rec["command"] = "collect";
  rec["inputs"] = folders;
  write_file_atomic(out / "run.json", rec.dump(2) + "\n");
  fmt::print("{:<15} {:<16} {:>5} {:>6} {:>6} {:>16} {:>16} {:>16} {:>16}\n", "task", "attention", "heads", "models",
             "above", "sink share (sd)", "sink score (sd)", "accuracy (sd)", "sparsity (sd)");
  for (std::size_t i = 0; i < study.rows(); ++i)
    fmt::print("{:<15} {:<16} {:>5} {:>6} {:>6} {:>8.3f} ({:.3f}) {:>8.3f} ({:.3f}) {:>8.3f} ({:.3f}) {:>8.3f} ({:.3f})\n",
               study.text(i, "task"), study.text(i, "attention"), study.number(i, "heads"), study.number(i, "models"),
               study.number(i, "models_above"), study.number(i, "sink_share"), study.number(i, "sink_share_sd"),
               study.number(i, "sink_score"), study.number(i, "sink_score_sd"),
               study.number(i, "accuracy"), study.number(i, "accuracy_sd"), study.number(i, "sparsity"),
               study.number(i, "sparsity_sd"));
  fmt::print("wrote {}\n", out.string());
  return code(ExitCode::ok);
}

int run_sinks(SinksArgs& a) {
  int status = code(ExitCode::ok);
  if (a.figures_only) {
    if (!std::filesystem::exists(std::filesystem::path(a.model.out) / "run.json"))
      throw InputError("--out", "no run.json in " + a.model.out + " (--figures-only draws an existing folder)");
    a.plot = true;
  } else if (a.protocol) {
    check_output_folder(a.model.out);
    if (!a.collect.empty()) throw InputError("--protocol", "runs its own sweep; it takes no --collect");
    return protocol(a);
  } else if (!a.collect.empty()) {
    if (!a.model.sets.empty() || !a.model.config_file.empty())
      throw InputError("--collect", "pools finished runs; it takes no --set or --config");
    check_output_folder(a.model.out);
    status = collect(a);
  } else {
    a.model.model = "sinks";
    status = cli::run_model_command("simulate", a.model);
  }
  if (a.plot && (status == code(ExitCode::ok) || status == code(ExitCode::interrupted))) {
    if (!plot::available()) {
      fmt::print(stderr, "hdat: gnuplot not found; no figures\n");
    } else {
      sinks::plot_sinks_folder(a.model.out);
      fmt::print("figures in {}\n", a.model.out);
    }
  }
  return status;
}

}  // namespace

ExtraCommand sinks_command(CLI::App& app) {
  static SinksArgs args;
  auto* sub = app.add_subcommand(
      "sinks", "attention sinks: train one transformer (model `sinks`, see `hdat list sinks`) -> DIR/sinks.json; "
               "or pool runs with --collect");
  sub->add_option("--config", args.model.config_file, "JSON file of parameter values");
  sub->add_option("--set", args.model.sets, "key=value (value read as JSON when it parses); repeatable")
      ->allow_extra_args(false);
  sub->add_option("--out", args.model.out, "output folder")->required();
  sub->add_option("--threads", args.model.threads,
                  "threads of the matrix products (default 1); with --protocol: runs at once (default: all cores)");
  sub->add_flag("--quiet", args.model.quiet, "no progress lines");
  sub->add_option("--collect", args.collect, "output folders of finished runs to pool into study.csv");
  sub->add_flag("--plot", args.plot, "also draw the figures (gnuplot)");
  sub->add_flag("--figures-only", args.figures_only, "only draw the figures of the existing folder --out");
  sub->add_flag("--protocol", args.protocol,
                "the paper's protocol: a resumable sweep of kinds x heads x lr x seeds in the figure's setting, pooled "
                "into DIR/protocol.csv (see docs/sinks.md)");
  sub->add_option("--grid", args.grid, "with --protocol: replace an axis (e.g. 'seed=[0]') or add one; repeatable")
      ->allow_extra_args(false);
  return {sub, [] { return run_sinks(args); }};
}

}  // namespace hdat
