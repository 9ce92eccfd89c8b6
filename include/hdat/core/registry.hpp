#pragma once
// The uniform interface of every model (one declaration serves theory and simulator):
// its parameters, a consistency check, and its commands (curve, simulate, validate, analyze ...).
// A command takes the resolved Params and returns tables and a JSON record; the command line
// writes them (curve.csv, sim.csv, run.json ...) so that sweeps and tests can call the same code
// without touching the disk.
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hdat/core/params.hpp"
#include "hdat/core/table.hpp"

namespace hdat {

struct DynamicsModel;  // model.hpp

struct RunContext {
  int threads = 0;                  ///< worker threads, 0 = all cores
  bool quiet = false;               ///< no progress lines
  std::filesystem::path out;        ///< output folder (may be empty in tests); long jobs keep finished work there
};

struct RunOutput {
  std::map<std::string, Table> tables;       ///< file name -> table, e.g. "curve.csv"
  std::map<std::string, std::string> files;  ///< other files, name -> content
  nlohmann::json info = nlohmann::json::object();  ///< merged into run.json (solver statistics, events ...)
  std::string summary;                       ///< a short human summary, printed to stdout
  int exit_code = 0;                         ///< 0 ok; 1 validation disagrees; 3 numerical failure
};

using Command = std::function<RunOutput(const Params&, RunContext&)>;

/// A small configuration on which a model's `validate` takes seconds and agrees, and the value of
/// the test-only key `break_term` that must make it disagree: the all-model test runs both.
struct ValidationSmoke {
  nlohmann::json settings = nlohmann::json::object();  ///< flat "key": value overrides
  std::string broken_term;                             ///< a value of `break_term`
  bool declared() const { return !broken_term.empty(); }
};

struct ModelEntry {
  std::string name;
  std::string summary;                       ///< one line
  std::string description;                   ///< a paragraph for `hdat list MODEL`
  ParamSet params;
  /// Cross-key consistency (shapes ...); throws InputError. A check that binds the model to check it
  /// (a dynamics model) attaches that binding (Params::attach) for the command to use.
  std::function<void(Params&)> check;
  std::map<std::string, Command> commands;   ///< "curve", "simulate", "validate", "analyze", ...
  /// Scalar observables a sweep takes by default from the output of the command its default mode runs
  /// (`curve`; `simulate` for a model without a theory).
  std::vector<std::string> default_observables;
  /// The same for the model's other commands (e.g. "simulate" -> {"final:eg"}); a sweep of a command
  /// with none asks for --observable before computing.
  std::map<std::string, std::vector<std::string>> command_observables;
  /// The columns of the tables a command writes at these parameters, where they are known before it
  /// runs: a sweep checks its observables of those tables against them before computing anything.
  /// A table left out is known only once the command ran (its observables are checked on the
  /// sweep's first finished point). Null: none known beforehand.
  std::function<std::map<std::string, std::vector<std::string>>(const std::string& command, const Params&)> columns;
  /// Figures for an output folder written by one of this model's commands (reads DIR/run.json,
  /// DIR/*.csv; writes DIR/*.png, *.svg through hdat::plot). Used by `hdat plot DIR`.
  std::function<void(const std::filesystem::path& dir)> plot;
  /// Models with a theory and a check declare their validation smoke test (tests/core/test_models.cpp).
  ValidationSmoke smoke;
  /// Per command, flat "key": value settings at which it runs in seconds: the Python suite runs every
  /// command of every model with them against the command line (tests/python/test_commands.py), so a
  /// model added to the tree brings its own.
  std::map<std::string, nlohmann::json> small;
  /// The declaration of a dynamics model (set by add_dynamics_commands): `hdat optimize` reads its
  /// controllable theory.
  std::shared_ptr<const DynamicsModel> dynamics;
};

class Registry {
 public:
  void add(ModelEntry entry);
  const ModelEntry& get(const std::string& name) const;  // InputError listing the models if unknown
  const ModelEntry* find(const std::string& name) const;
  std::vector<const ModelEntry*> all() const;

 private:
  std::vector<std::unique_ptr<ModelEntry>> entries_;
};

/// The process-wide registry, filled by register_models().
Registry& registry();

/// Register every model of the build (idempotent). Generated from the models' CMakeLists.txt
/// (hdat_register_model); defined in the library `hdat_models`.
void register_models();

/// Resolve a model's parameters and run its consistency check.
Params resolve_for(const ModelEntry& model, const nlohmann::json& config,
                   const std::vector<std::pair<std::string, nlohmann::json>>& assignments);

}  // namespace hdat
