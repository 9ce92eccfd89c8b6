#include "hdat/app/run.hpp"

#include <fmt/format.h>

#include <chrono>

#include "hdat/core/error.hpp"
#include "hdat/core/output.hpp"
#include "hdat/core/suggest.hpp"

namespace hdat::app {

const Command& find_command(const ModelEntry& model, const std::string& command) {
  auto it = model.commands.find(command);
  if (it != model.commands.end()) return it->second;
  std::vector<std::string> have;
  for (const auto& [k, v] : model.commands) have.push_back(k);
  throw InputError("MODEL", fmt::format("model '{}' has no '{}' command{}", model.name, command, did_you_mean_among(command, have, "it has")));
}

nlohmann::json config_of(const std::string& config_file) {
  return config_file.empty() ? nlohmann::json() : read_config_file(config_file);
}

std::vector<std::pair<std::string, nlohmann::json>> assignments_of(const std::vector<std::string>& sets) {
  std::vector<std::pair<std::string, nlohmann::json>> out;
  for (const auto& s : sets) out.push_back(parse_assignment(s));
  return out;
}

Params resolve_args(const ModelEntry& model, const std::string& config_file, const std::vector<std::string>& sets) {
  return resolve_for(model, config_of(config_file), assignments_of(sets));
}

void prepare_output(const std::filesystem::path& dir, const ModelEntry& model, const std::string& command, const Params& params,
                    bool replace, const std::string& key, const std::string& replace_option) {
  check_output_folder(dir, key);
  claim_output_folder(dir, {model.name, command, params.nested()}, replace, key, replace_option);
}

Run run_command(const ModelEntry& model, const std::string& command, const Params& params, RunContext& ctx) {
  const Command& f = find_command(model, command);
  Run run{&model, command, params, {}, 0.0, {}, {}};
  const auto start = std::chrono::steady_clock::now();
  run.output = f(params, ctx);
  run.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.finished_at = now_iso8601();
  return run;
}

nlohmann::json run_record(const Run& run) {
  nlohmann::json rec = provenance();
  if (!run.command_line.empty()) rec["command_line"] = run.command_line;
  if (!run.finished_at.empty()) rec["date"] = run.finished_at;
  for (auto it = run.output.info.begin(); it != run.output.info.end(); ++it) rec[it.key()] = it.value();
  // After the model's own keys, so that none of them can replace what names the run (geometry's
  // description of its checkpoint once replaced "model", and `hdat plot` could not find the model).
  rec["model"] = run.model->name;
  rec["command"] = run.command;
  rec["config"] = run.params.nested();
  rec["wall_seconds"] = run.wall_seconds;
  rec["exit_code"] = run.output.exit_code;
  // What this run wrote (beside run.json and seeds/): --replace removes exactly these.
  nlohmann::json outputs = nlohmann::json::array();
  for (const auto& [name, table] : run.output.tables) outputs.push_back(name);
  for (const auto& [name, content] : run.output.files) outputs.push_back(name);
  rec["outputs"] = outputs;
  return rec;
}

void write_output(const std::filesystem::path& dir, const Run& run) {
  for (const auto& [name, table] : run.output.tables) write_file_atomic(dir / name, table.to_csv());
  for (const auto& [name, content] : run.output.files) write_file_atomic(dir / name, content);
  write_file_atomic(dir / "run.json", run_record(run).dump(2) + "\n");
}

std::string report(const Run& run, const std::filesystem::path& dir) {
  const std::string& s = run.output.summary;
  std::string text = s.empty() ? "" : s + (s.back() == '\n' ? "" : "\n");
  return text + fmt::format("wrote {} ({:.2f} s)\n", dir.string(), run.wall_seconds);
}

}  // namespace hdat::app
