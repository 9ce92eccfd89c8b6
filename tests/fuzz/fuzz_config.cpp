// Fuzz target: a model's configuration as the command line reads it, `--config FILE.json` and
// `--set key=value`, resolved against the model's declared parameters (hdat::resolve_for).
// Input: byte 0 picks the model; the bytes up to the first NUL are the config file; every line after
// it is one --set assignment. Every rejection must be an InputError (exit code 2 on the command line);
// anything else escaping, or a crash, is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.hpp"
#include "hdat/core/error.hpp"
#include "hdat/core/params.hpp"
#include "hdat/core/registry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<const hdat::ModelEntry*> models = [] {
    hdat::register_models();
    return hdat::registry().all();
  }();
  if (size < 1) return 0;
  const hdat::ModelEntry& model = *models[data[0] % models.size()];
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::size_t nul = rest.find('\0');
  const std::string_view config_text = rest.substr(0, nul);
  static const hdat_fuzz::ScratchFile config_file("config.json");
  try {
    nlohmann::json config;
    if (!config_text.empty()) {
      config_file.write(config_text);
      config = hdat::read_config_file(config_file.path());
    }
    std::vector<std::pair<std::string, nlohmann::json>> assignments;
    if (nul != std::string_view::npos)
      for (const std::string& line : hdat_fuzz::lines(rest.substr(nul + 1))) assignments.push_back(hdat::parse_assignment(line));
    const hdat::Params params = hdat::resolve_for(model, config, assignments);
    // A resolved configuration answers every typed read of its keys.
    hdat_fuzz::read_every_key(params);
  } catch (const hdat::InputError&) {
    // a clear rejection: exit code 2
  }
  return 0;
}
