// `hdat geometry`: token-selection geometry of attention maps (spec/geometry.md, docs/geometry.md).
//   hdat geometry [--model-file PATH] [--config FILE] [--set key=value]... --out DIR [--threads N] [--quiet]
//   hdat geometry --maps FILE.json [--set key=value]... --out DIR
// Without --maps and --model-file: the bundled stories260K (data/models/stories260K/, sha256-checked).
#include <fmt/format.h>

#include <chrono>
#include <iostream>

#include "cli_common.hpp"
#include "commands.hpp"
#include "hdat/core/error.hpp"
#include "hdat/core/plot.hpp"
#include "hdat/core/registry.hpp"
#include "hdat/llama/checkpoint.hpp"
#include "hdat/geometry/analysis.hpp"

namespace hdat {

namespace {

struct GeometryArgs {
  std::string model_file, maps, config_file, out;
  std::vector<std::string> sets;
  int threads = 0;
  bool quiet = false;
};

int run_geometry(const GeometryArgs& a) {
  // Everything that can be wrong with the input is checked before anything is written.
  nlohmann::json config;
  if (!a.config_file.empty()) config = read_config_file(a.config_file);
  std::vector<std::pair<std::string, nlohmann::json>> assignments;
  for (const auto& s : a.sets) assignments.push_back(parse_assignment(s));
  const ModelEntry& entry = registry().get("geometry");
  const Params params = resolve(entry.params, config, assignments);
  if (a.threads < 0) throw InputError("--threads", "must be >= 0 (0: all cores)");
  RunContext ctx;
  ctx.threads = a.threads;
  ctx.quiet = a.quiet;
  ctx.out = a.out;
  const auto start = std::chrono::steady_clock::now();
  RunOutput out;
  if (!a.maps.empty()) {
    out = geometry::analyze_maps(geometry::read_maps(a.maps), params, ctx);
    out.info["maps_file"] = a.maps;
  } else {
    out = geometry::analyze_model(a.model_file.empty() ? llama::default_model_file() : std::filesystem::path(a.model_file), params, ctx);
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  cli::write_output(a.out, entry, "geometry", params, out, wall);
  if (params.boolean("plots")) {
    if (!plot::available()) {
      fmt::print(stderr, "hdat: gnuplot not found; no figures\n");
    } else {
      try {
        geometry::plot_geometry(a.out);
      } catch (const std::exception& e) {
        fmt::print(stderr, "hdat: figures failed: {}\n", e.what());
      }
    }
  }
  if (!out.summary.empty()) std::cout << out.summary << "\n";
  std::cout << fmt::format("wrote {} ({:.2f} s)\n", a.out, wall);
  return out.exit_code;
}

}  // namespace

ExtraCommand geometry_command(CLI::App& app) {
  static GeometryArgs args;
  auto* sub = app.add_subcommand("geometry",
                                 "token-selection geometry of attention maps: a llama2.c checkpoint (--model-file) or your own "
                                 "maps (--maps FILE.json) -> DIR/geometry.csv, heads.csv, summary.csv, run.json, figures");
  auto* model = sub->add_option("--model-file", args.model_file,
                                fmt::format("llama2.c checkpoint, vocab.txt beside it (default {})", llama::kDefaultModelFile));
  auto* maps = sub->add_option("--maps", args.maps, "attention maps in the JSON format of docs/geometry.md");
  model->excludes(maps);
  maps->excludes(model);
  sub->add_option("--config", args.config_file, "JSON file of settings (see `hdat list geometry`)");
  sub->add_option("--set", args.sets, "key=value (value read as JSON when it parses); repeatable")->allow_extra_args(false);
  sub->add_option("--out", args.out, "output folder")->required();
  sub->add_option("--threads", args.threads, "worker threads (default: all cores)");
  sub->add_flag("--quiet", args.quiet, "no progress lines");
  return {sub, [] { return run_geometry(args); }};
}

}  // namespace hdat
