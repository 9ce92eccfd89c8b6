#pragma once
// The harness: what the core derives from a dynamics model's declaration (model.hpp).
//
//   curve     the theory integrated from the model's initial state, observed at the requested
//             times: t, observables (with _se where sampled), blocks.
//   simulate  an ensemble of finite runs (seeds in parallel, results independent of the thread
//             count, each finished seed persisted at once so that an interrupted run resumes).
//   validate  mode=trajectory: for each size, the ensemble; the theory started from that size's
//             seed-averaged measured initial state (on `theory_replicas` independent sample sets, so
//             that the theory's own sampling error enters); every block and observable compared at
//             every observed time in the comparison window with the stated criterion; the gap (RMS
//             deviation per block) fitted as gap ∝ size^p; escape times against log size.
//             mode=drift: along a run, the mean of many one-step increments against the theory's
//             drift at the measured state, term by term, with z-scores.
// The building blocks are public so that a model adds what is its own (events, pruning, claims)
// without writing a harness.
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "hdat/core/model.hpp"
#include "hdat/core/registry.hpp"
#include "hdat/core/table.hpp"

namespace hdat {

/// Columns of a run's table: t, then the observables (name, and name_se where estimated) with the
/// blocks (StateLayout::columns()) where Observables::blocks_here() put them (default: last).
std::vector<std::string> run_columns(const Observables& observables, const StateLayout& layout);
/// One row of such a table.
std::vector<double> run_row(double t, const Observables& observables, const StateLayout& layout, const Eigen::VectorXd& x);

/// The theory integrated from x0 and observed at `times` by hdat::integrate (OdeTheory::run's default).
TheoryRun integrate_theory(const OdeTheory& theory, const Eigen::VectorXd& x0, const std::vector<double>& times,
                     IntegrateOptions options);

/// `replicas` theories on independent sample sets: the mean table and the standard error of that
/// mean (zeros for one replica). The solver summary is the first replica's unless another failed.
struct ReplicatedTheory {
  TheoryRun run;  ///< table = the replica mean
  Table se;       ///< same columns: the standard error of the mean over replicas
};
ReplicatedTheory run_theory_replicas(const DynamicsModel& model, const Params& p, const Eigen::VectorXd& x0,
                                     const std::vector<double>& times, const IntegrateOptions& options, int replicas);

/// The finite runs of one size.
struct Ensemble {
  double size = 0;
  Table mean;                        ///< t, then every column c of a run and c_se (seed mean, its standard error)
  std::vector<Table> runs;           ///< one per finished seed (run_columns of the system's observables)
  std::vector<double> escape_times;  ///< per finished seed (NaN: no escape), when the model declares escape_time
  std::vector<nlohmann::json> records;  ///< per finished seed: FiniteSystem::record() (persisted with the seed)
  int finished = 0, requested = 0;
  double seconds = 0;
};

/// Seed means and standard errors of per-seed tables with identical columns and times.
Table ensemble_mean(const std::vector<Table>& runs);

/// A stable hash of the configuration that determines a simulation at `size` (keys of the harness
/// and the model's `keys_not_affecting_simulation` left out), naming its persisted seeds.
std::string simulation_hash(const DynamicsModel& model, const Params& p, double size);

Ensemble run_ensemble(const DynamicsModel& model, const Params& p, const DynamicsSettings& settings, double size,
                      const RunContext& ctx);

/// Seed-averaged state of the ensemble's first row (the theory's start in validate).
Eigen::VectorXd measured_initial_state(const Ensemble& ensemble, const StateLayout& layout);

/// The trajectory comparison of validate (all sizes).
struct TrajectoryValidation {
  bool agree = false, complete = true;
  Table points;   ///< size, t, quantity, theory, simulation, simulation_se, theory_se, deviation, allowed, agree
  Table curves;   ///< size, t, then q_theory, q_sim, q_sim_se for every quantity
  Table escape;   ///< size, log_size, escape_time, escape_time_se, seeds_escaped, seeds
  nlohmann::json record;
  std::string summary;
};
TrajectoryValidation validate_trajectories(const DynamicsModel& model, const Params& p, RunContext& ctx);

/// The drift check of validate.
struct DriftValidation {
  bool agree = false, complete = true;
  Table rows;  ///< t, term, entry, theory, theory_se, simulation, simulation_se, z, agree
  nlohmann::json record;
  std::string summary;
};
DriftValidation validate_drift(const DynamicsModel& model, const Params& p, RunContext& ctx);

/// The commands derived from the declaration (curve, simulate, validate with mode=trajectory|drift).
RunOutput dynamics_curve(const DynamicsModel& model, const Params& p, RunContext& ctx);
RunOutput dynamics_simulate(const DynamicsModel& model, const Params& p, RunContext& ctx);
RunOutput dynamics_validate(const DynamicsModel& model, const Params& p, RunContext& ctx);

/// Install curve, simulate and validate for `model` into the registry entry.
void add_dynamics_commands(ModelEntry& entry, std::shared_ptr<const DynamicsModel> model);

/// The keys every dynamics model shares, with the model's defaults: t_max, n_points, t_points,
/// rtol, atol, stepper, seed, seeds, dims, theory_replicas, mode, tolerance, rel_tolerance,
/// t_compare, drift_samples, drift_times. standard_settings() reads them.
struct StandardDefaults {
  double t_max = 100;
  int n_points = 60;
  int seeds = 8;
  std::vector<long> dims = {250, 500, 1000};
  double tolerance = 4, rel_tolerance = 0.02;
  long drift_samples = 4000;
  std::vector<double> drift_times = {0, 1};
  double rtol = 1e-8, atol = 1e-10;
  std::string size_key = "D";  ///< the key of the simulate size (D, N ...)
};
ParamSet& declare_standard_keys(ParamSet& set, const StandardDefaults& defaults);
DynamicsSettings standard_settings(const Params& p, const StandardDefaults& defaults, const StateLayout& layout);

}  // namespace hdat
