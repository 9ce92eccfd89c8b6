#include "cli_common.hpp"

#include <iostream>

#include "hdat/app/run.hpp"
#include "hdat/core/output.hpp"

namespace hdat::cli {

void add_model_options(CLI::App& sub, ModelArgs& args, bool out_required) {
  sub.add_option("MODEL", args.model, "model name (see `hdat list`)")->required();
  sub.add_option("--config", args.config_file, "JSON file of parameter values");
  sub.add_option("--set", args.sets, "key=value (value read as JSON when it parses); repeatable")->allow_extra_args(false);
  auto* o = sub.add_option("--out", args.out, "output folder");
  if (out_required) o->required();
  sub.add_option("--threads", args.threads, "worker threads (default: all cores)");
  sub.add_flag("--quiet", args.quiet, "no progress lines");
  sub.add_flag("--replace", args.replace,
               "when --out holds another command's or configuration's outputs: remove hdat's files there first (otherwise refused)");
}

int run_model_command(const std::string& command, const ModelArgs& args) {
  check_output_folder(args.out);  // first: a folder that cannot be written is said before anything else
  const ModelEntry& model = registry().get(args.model);
  app::find_command(model, command);  // an unknown command is reported before the parameters
  const Params params = app::resolve_args(model, args.config_file, args.sets);
  app::prepare_output(args.out, model, command, params, args.replace);
  RunContext ctx;
  ctx.threads = args.threads;
  ctx.quiet = args.quiet;
  ctx.out = args.out;
  const app::Run run = app::run_command(model, command, params, ctx);
  app::write_output(args.out, run);
  std::cout << app::report(run, args.out);
  return run.output.exit_code;
}

}  // namespace hdat::cli
