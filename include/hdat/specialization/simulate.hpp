#pragma once
// Ensembles of finite-D online-SGD runs: seeds in parallel (results independent of the thread
// count), observation at requested times, seed means and standard errors, each finished seed
// persisted at once so that an interrupted run loses nothing finished.
#include <filesystem>
#include <vector>

#include "hdat/core/registry.hpp"
#include "hdat/core/table.hpp"
#include "hdat/specialization/model.hpp"

namespace hdat::specialization {

struct EnsembleOptions {
  int D = 1000;
  int seeds = 8;
  std::uint64_t seed = 0;  ///< replicas are seed, with replica index 0..seeds-1
  long test_size = 10000;
  bool test_projected = true;
  int threads = 0;
  bool quiet = false;
  std::filesystem::path persist;  ///< folder for finished seeds (empty: none)
  std::string config_hash;        ///< identifies the configuration of persisted seeds
  double split_threshold = 0.1;
};

struct Ensemble {
  Table mean;                        ///< t, risk, risk_se, then each order parameter c and c_se
  std::vector<Table> runs;           ///< one per finished seed: t, risk, risk_se, M..., R..., v_h
  std::vector<double> escape_times;  ///< per finished seed (NaN: no escape)
  int finished = 0, requested = 0;
  double seconds = 0;
  long steps_per_seed = 0;
};

Ensemble simulate_ensemble(const Setup& s, const std::vector<double>& times, const EnsembleOptions& o);

/// Seed means and standard errors of per-seed tables with identical columns and times.
Table ensemble_mean(const std::vector<Table>& runs, const std::vector<std::string>& columns);

/// A stable hash of the parts of a configuration that determine simulation results.
std::string config_hash(const Params& p, int D);

/// The ensemble options the configuration asks for at dimension D (seeds, test set, threads, the
/// folder that persists finished seeds under the configuration's hash).
EnsembleOptions ensemble_options(const Params& p, int D, std::uint64_t seed, const RunContext& ctx);

/// `hdat simulate specialization`.
RunOutput simulate_command(const Params& p, RunContext& ctx);

}  // namespace hdat::specialization
