#pragma once
// Shared pieces of the `hdat` command line: reading --config/--set, running a model command and
// writing its output folder.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "hdat/core/registry.hpp"

namespace hdat::cli {

/// The options every model command takes.
struct ModelArgs {
  std::string model;
  std::string config_file;
  std::vector<std::string> sets;
  std::string out;
  int threads = 0;
  bool quiet = false;
};

void add_model_options(CLI::App& sub, ModelArgs& args, bool out_required = true);

/// Parse --config and --set into resolved parameters of `model` (InputError on bad input).
Params resolve_args(const ModelEntry& model, const ModelArgs& args);

/// run.json content for a finished command.
nlohmann::json run_record(const ModelEntry& model, const std::string& command, const Params& params,
                          const RunOutput& out, double wall_seconds);

/// Write tables, files and run.json into `dir` (atomically, file by file).
void write_output(const std::filesystem::path& dir, const ModelEntry& model, const std::string& command,
                  const Params& params, const RunOutput& out, double wall_seconds);

/// Resolve, run and write one model command; returns the process exit code.
int run_model_command(const std::string& command, const ModelArgs& args);

/// Extra top-level commands that are not per-model (geometry, sinks, sweep, plot ...) register here.
using CommandInstaller = void (*)(CLI::App& app, std::function<int()>*& action);

}  // namespace hdat::cli
