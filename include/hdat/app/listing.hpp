#pragma once
// What `hdat list` and `hdat list MODEL` show, as text and as data (the Python module's
// hdat.models() and hdat.parameters(model) are the same listing).
#include <nlohmann/json.hpp>
#include <string>

#include "hdat/core/registry.hpp"

namespace hdat::app {

/// `hdat list`: every model with its one-line summary and commands.
std::string models_text();
/// `hdat list MODEL`: the model's summary, description and every key (default, meaning, type, range,
/// and the condition under which it applies).
std::string parameters_text(const ModelEntry& model);

/// One object per model: name, summary, description, commands.
nlohmann::json models_table();
/// One object per key, in declaration order: key, type, default, range (as `hdat list` says it, "" when
/// unbounded), low, high, low_open, high_open (null when unbounded), choices, doc, condition ("" when
/// it always applies).
nlohmann::json parameters_table(const ModelEntry& model);

/// A key's default as `hdat list` prints it: its JSON, or "(unset)".
std::string default_text(const ParamSpec& spec);

}  // namespace hdat::app
