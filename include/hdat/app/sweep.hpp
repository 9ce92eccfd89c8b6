#pragma once
// `hdat sweep` as a function (the command line and hdat.sweep() in Python share it): check every
// input, run or resume the grid in DIR (DIR/points keeps each finished point), write DIR/sweep.json,
// DIR/sweep.csv and DIR/run.json, optionally draw the figures.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "hdat/sweep/comm.hpp"

namespace hdat::app {

struct SweepRequest {
  std::string model;                      ///< empty only with merge: the sweep is read from DIR/sweep.json
  nlohmann::json config = nlohmann::json::object();               ///< base parameters (as a --config file holds them)
  std::vector<std::pair<std::string, nlohmann::json>> assignments;  ///< base parameters set after config (--set)
  std::vector<std::string> grid;          ///< key=start:stop:count[:log] | key=[a,b,...]
  std::vector<std::string> observables;   ///< empty: the model's defaults
  std::string mode = "theory";            ///< theory | simulate | another command of the model
  std::filesystem::path out;              ///< the sweep folder (required)
  int threads = 0;                        ///< points at once; 0: all cores
  int point_threads = 1;                  ///< threads of each point's own computation
  std::string shard;                      ///< "i/n": only the points with index % n == i
  bool merge = false;                     ///< assemble DIR/sweep.csv from DIR/points
  bool retry_failed = false;
  bool quiet = false;                     ///< no start line, no progress
  bool plot = false;                      ///< draw the figures at the end
  std::vector<double> contours;
  bool together = false;
  bool has_base_input() const { return !config.empty() || !assignments.empty(); }
};

struct SweepOutcome {
  int exit_code = 0;          ///< 0 done; 1 merge with points missing; 130 interrupted (finished points kept)
  bool root = true;           ///< rank 0 (the one that reports)
  std::string report;         ///< what the command line prints on stdout
  std::string notes;          ///< what it prints on stderr (warnings)
  std::vector<std::filesystem::path> figures;  ///< PNG files drawn
};

/// Run (or resume, or merge) a sweep on `comm` (a plain sweep::Communicator is one process).
/// InputError naming the option or key before anything is written.
SweepOutcome run_sweep(const SweepRequest& request, sweep::Communicator& comm);

}  // namespace hdat::app
