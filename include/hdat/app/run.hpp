#pragma once
// Running a model command the way the `hdat` program does, for every front end (the command line in
// tools/hdat, the Python module in python/): resolve --config / --set into Params, run the command,
// and write its output folder (the tables, the extra files, run.json). One place decides what an
// output folder holds, so `hdat curve ...` and `hdat.curve(...).save(dir)` write the same files.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "hdat/core/registry.hpp"

namespace hdat::app {

/// The command `command` of `model`; InputError (key MODEL) naming the commands it has otherwise.
const Command& find_command(const ModelEntry& model, const std::string& command);

/// --config FILE as JSON (empty name: null) and --set key=value texts as (key, value) pairs.
nlohmann::json config_of(const std::string& config_file);
std::vector<std::pair<std::string, nlohmann::json>> assignments_of(const std::vector<std::string>& sets);

/// Parameters from a --config file (empty: none) and --set key=value texts (later wins); InputError
/// naming the key on bad input.
Params resolve_args(const ModelEntry& model, const std::string& config_file, const std::vector<std::string>& sets);

/// A finished command: what it returned, with the resolved parameters and its wall time.
struct Run {
  const ModelEntry* model = nullptr;
  std::string command;
  Params params;
  RunOutput output;
  double wall_seconds = 0;
  std::string finished_at;   ///< when the command returned (run.json's date: one record per run, however often written)
  std::string command_line;  ///< run.json's command_line when not the process's (the Python call)
};

/// Before any work (InputError naming --out, or `key`): `dir` can be written (check_output_folder),
/// and holds no other command's or configuration's outputs unless `replace` (claim_output_folder).
void prepare_output(const std::filesystem::path& dir, const ModelEntry& model, const std::string& command, const Params& params,
                    bool replace, const std::string& key = "--out", const std::string& replace_option = "--replace");

/// Run `command` of `model` (timed). Exceptions of the command (InputError, NumericalError ...) pass.
Run run_command(const ModelEntry& model, const std::string& command, const Params& params, RunContext& ctx);

/// run.json of a finished command: provenance, model, command, the resolved configuration (nested),
/// wall time, exit code, and the command's own info.
nlohmann::json run_record(const Run& run);

/// Write the tables, the extra files and run.json into `dir` (atomically, file by file).
void write_output(const std::filesystem::path& dir, const Run& run);

/// What the command line prints after a run: the command's summary, then "wrote DIR (S s)".
std::string report(const Run& run, const std::filesystem::path& dir);

}  // namespace hdat::app
