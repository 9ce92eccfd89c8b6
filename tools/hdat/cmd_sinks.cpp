// `hdat sinks`: train and evaluate one transformer of the attention-sink experiments (the `sinks`
// model's simulate command: DIR/sinks.json, DIR/attention_maps.json, ...), or pool finished runs:
//   hdat sinks [--config FILE] [--set key=value]... --out DIR [--plot]
//   hdat sinks --collect DIR1 DIR2 ... --out DIR [--plot]      (study.csv, runs.csv, sink_share.png)
//   hdat sinks --figures-only --out DIR                          (figures of a finished run or study)
#include <fmt/format.h>

#include <iostream>

#include "cli_common.hpp"
#include "commands.hpp"
#include "hdat/core/error.hpp"
#include "hdat/core/output.hpp"
#include "hdat/core/plot.hpp"
#include "hdat/attention_sinks/study.hpp"

namespace hdat {

namespace {

struct SinksArgs {
  cli::ModelArgs model;
  std::vector<std::string> collect;
  bool plot = false;
  bool figures_only = false;
};

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
  return 0;
}

int run_sinks(SinksArgs& a) {
  int code = 0;
  if (a.figures_only) {
    if (!std::filesystem::exists(std::filesystem::path(a.model.out) / "run.json"))
      throw InputError("--out", "no run.json in " + a.model.out + " (--figures-only draws an existing folder)");
    a.plot = true;
  } else if (!a.collect.empty()) {
    if (!a.model.sets.empty() || !a.model.config_file.empty())
      throw InputError("--collect", "pools finished runs; it takes no --set or --config");
    code = collect(a);
  } else {
    a.model.model = "sinks";
    code = cli::run_model_command("simulate", a.model);
  }
  if (a.plot && (code == 0 || code == 130)) {
    if (!plot::available()) {
      fmt::print(stderr, "hdat: gnuplot not found; no figures\n");
    } else {
      sinks::plot_sinks_folder(a.model.out);
      fmt::print("figures in {}\n", a.model.out);
    }
  }
  return code;
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
  sub->add_option("--threads", args.model.threads, "threads of the matrix products (default 1)");
  sub->add_flag("--quiet", args.model.quiet, "no progress lines");
  sub->add_option("--collect", args.collect, "output folders of finished runs to pool into study.csv");
  sub->add_flag("--plot", args.plot, "also draw the figures (gnuplot)");
  sub->add_flag("--figures-only", args.figures_only, "only draw the figures of the existing folder --out");
  return {sub, [] { return run_sinks(args); }};
}

}  // namespace hdat
