#include "cli_common.hpp"

#include <fmt/format.h>

#include <chrono>
#include <iostream>

#include "hdat/core/error.hpp"
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
}

Params resolve_args(const ModelEntry& model, const ModelArgs& args) {
  nlohmann::json config;
  if (!args.config_file.empty()) config = read_config_file(args.config_file);
  std::vector<std::pair<std::string, nlohmann::json>> assignments;
  for (const auto& s : args.sets) assignments.push_back(parse_assignment(s));
  return resolve_for(model, config, assignments);
}

nlohmann::json run_record(const ModelEntry& model, const std::string& command, const Params& params,
                          const RunOutput& out, double wall_seconds) {
  nlohmann::json rec = provenance();
  rec["model"] = model.name;
  rec["command"] = command;
  rec["config"] = params.nested();
  rec["wall_seconds"] = wall_seconds;
  rec["exit_code"] = out.exit_code;
  for (auto it = out.info.begin(); it != out.info.end(); ++it) rec[it.key()] = it.value();
  return rec;
}

void write_output(const std::filesystem::path& dir, const ModelEntry& model, const std::string& command,
                  const Params& params, const RunOutput& out, double wall_seconds) {
  for (const auto& [name, table] : out.tables) write_file_atomic(dir / name, table.to_csv());
  for (const auto& [name, content] : out.files) write_file_atomic(dir / name, content);
  write_file_atomic(dir / "run.json", run_record(model, command, params, out, wall_seconds).dump(2) + "\n");
}

int run_model_command(const std::string& command, const ModelArgs& args) {
  const ModelEntry& model = registry().get(args.model);
  auto it = model.commands.find(command);
  if (it == model.commands.end()) {
    std::string have;
    for (const auto& [k, v] : model.commands) have += (have.empty() ? "" : ", ") + k;
    throw InputError("MODEL", fmt::format("model '{}' has no '{}' command (it has: {})", model.name, command, have));
  }
  const Params params = resolve_args(model, args);
  RunContext ctx;
  ctx.threads = args.threads;
  ctx.quiet = args.quiet;
  ctx.out = args.out;
  const auto start = std::chrono::steady_clock::now();
  RunOutput out = it->second(params, ctx);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  write_output(args.out, model, command, params, out, wall);
  if (!out.summary.empty()) std::cout << out.summary << (out.summary.back() == '\n' ? "" : "\n");
  std::cout << fmt::format("wrote {} ({:.2f} s)\n", args.out, wall);
  return out.exit_code;
}

}  // namespace hdat::cli
