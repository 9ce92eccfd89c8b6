// `hdat geometry`: token-selection geometry of attention maps (spec/geometry.md, docs/geometry.md).
//   hdat geometry [--model-file PATH] [--config FILE] [--set key=value]... --out DIR [--threads N] [--quiet]
//   hdat geometry --maps FILE.json [--set key=value]... --out DIR
// Without --maps and --model-file: the bundled stories260K (data/models/stories260K/, sha256-checked).
#include <fmt/format.h>

#include <iostream>

#include "commands.hpp"
#include "hdat/app/geometry.hpp"
#include "hdat/core/error.hpp"
#include "hdat/core/output.hpp"
#include "hdat/llama/checkpoint.hpp"

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
  check_output_folder(a.out);
  const Params params = app::resolve_geometry(app::config_of(a.config_file), app::assignments_of(a.sets));
  if (a.threads < 0) throw InputError("--threads", "must be >= 0 (0: all cores)");
  RunContext ctx;
  ctx.threads = a.threads;
  ctx.quiet = a.quiet;
  ctx.out = a.out;
  const app::Run run = app::run_geometry({a.model_file, a.maps}, params, ctx);
  app::write_output(a.out, run);
  fmt::print(stderr, "{}", app::geometry_figures(a.out, params));
  std::cout << app::report(run, a.out);
  return run.output.exit_code;
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
