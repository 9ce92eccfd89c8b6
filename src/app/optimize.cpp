#include "hdat/app/optimize.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>

#include "hdat/core/error.hpp"
#include "hdat/core/model.hpp"
#include "hdat/core/output.hpp"

namespace hdat::app {

namespace {
std::pair<std::string, std::string> split_assignment(const std::string& text, const std::string& key, const std::string& form) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw InputError(key, fmt::format("'{}' is not of the form {}", text, form));
  return {text.substr(0, eq), text.substr(eq + 1)};
}

double number(const std::string& text, const std::string& key, const std::string& whole) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0') throw InputError(key, fmt::format("'{}': '{}' is not a number", whole, text));
  return v;
}
}  // namespace

std::map<std::string, optimize::Bounds> parse_bounds(const std::vector<std::string>& texts) {
  std::map<std::string, optimize::Bounds> out;
  for (const auto& t : texts) {
    const auto [name, range] = split_assignment(t, "bounds", "CONTROL=LO:HI");
    const auto colon = range.find(':');
    if (colon == std::string::npos) throw InputError("bounds", fmt::format("'{}' is not of the form CONTROL=LO:HI", t));
    if (out.count(name)) throw InputError("bounds", "'" + name + "' has bounds twice");
    out[name] = {number(range.substr(0, colon), "bounds", t), number(range.substr(colon + 1), "bounds", t)};
  }
  return out;
}

std::map<std::string, double> parse_budget(const std::vector<std::string>& texts) {
  std::map<std::string, double> out;
  for (const auto& t : texts) {
    const auto [name, value] = split_assignment(t, "budget", "CONTROL=MEAN");
    if (out.count(name)) throw InputError("budget", "'" + name + "' has a budget twice");
    out[name] = number(value, "budget", t);
  }
  return out;
}

Run run_optimize(const ModelEntry& model, const Params& params, const optimize::OptimizeOptions& options, RunContext& ctx) {
  if (!model.dynamics)
    throw InputError("MODEL", fmt::format("model '{}' declares no controllable parameters (optimize: committee, specialization)", model.name));
  Run run{&model, "optimize", params, {}, 0.0, {}, {}};
  const auto start = std::chrono::steady_clock::now();
  run.output = optimize::run_optimize(*model.dynamics, params, options, ctx);
  run.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.finished_at = now_iso8601();
  return run;
}

}  // namespace hdat::app
