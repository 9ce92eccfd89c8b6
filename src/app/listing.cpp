#include "hdat/app/listing.hpp"

#include <fmt/format.h>

namespace hdat::app {

using json = nlohmann::json;

namespace {

std::string commands_of(const ModelEntry& m) {
  std::string cmds;
  for (const auto& [k, v] : m.commands) cmds += (cmds.empty() ? "" : ", ") + k;
  return cmds;
}

json bound(const std::optional<double>& b) { return b ? json(*b) : json(); }

}  // namespace

std::string default_text(const ParamSpec& s) {
  if (s.default_value.is_null()) return "(unset)";
  return s.default_value.dump();
}

std::string models_text() {
  std::string out = "models:\n";
  for (const auto* m : registry().all()) out += fmt::format("  {:<16} {}\n  {:<16} commands: {}\n", m->name, m->summary, "", commands_of(*m));
  out += "\n`hdat list MODEL` shows a model's parameters.\n";
  return out;
}

std::string parameters_text(const ModelEntry& m) {
  std::string out = fmt::format("{}: {}\n", m.name, m.summary);
  if (!m.description.empty()) out += fmt::format("\n{}\n", m.description);
  out += "\nparameters (--set key=value, or keys of a --config JSON file):\n";
  for (const auto& s : m.params.specs()) {
    std::string range;
    if (s.range.lo || s.range.hi) range = ", " + s.range.describe();
    const std::string applies = s.condition.empty() ? "" : "; only when " + s.condition;
    out += fmt::format("  {:<22} {:<24} {}\n  {:<22} ({}{}{})\n", s.key, default_text(s), s.doc, "", s.kind_name(), range, applies);
  }
  return out;
}

json models_table() {
  json out = json::array();
  for (const auto* m : registry().all()) {
    json commands = json::array();
    for (const auto& [k, v] : m->commands) commands.push_back(k);
    json small = json::object();
    for (const auto& [command, settings] : m->small) small[command] = settings;
    out.push_back({{"name", m->name}, {"summary", m->summary}, {"description", m->description}, {"commands", commands}, {"small", small}});
  }
  return out;
}

json parameters_table(const ModelEntry& m) {
  json out = json::array();
  for (const auto& s : m.params.specs()) {
    const bool bounded = s.range.lo || s.range.hi;
    out.push_back({{"key", s.key},
                   {"type", s.kind_name()},
                   {"default", s.default_value},
                   {"range", bounded ? s.range.describe() : ""},
                   {"low", bound(s.range.lo)},
                   {"high", bound(s.range.hi)},
                   {"low_open", s.range.lo ? json(s.range.lo_open) : json()},
                   {"high_open", s.range.hi ? json(s.range.hi_open) : json()},
                   {"choices", s.choices},
                   {"doc", s.doc},
                   {"condition", s.condition}});
  }
  return out;
}

}  // namespace hdat::app
