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
//             every observed time in the comparison window with the stated criterion (verdict.hpp:
//             Student-t critical values, Bonferroni over the compared points; the seed error of a
//             deviation paired: the theory also run from each seed's own start); the gap (RMS
//             deviation per block) fitted as gap ∝ size^p; escape times against log size.
//             mode=drift: along a run, the mean of many one-step increments against the theory's
//             drift at the measured state, term by term, with z-scores.
// The building blocks are public so that a model adds what is its own (events, pruning, claims)
// without writing a harness.
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hdat/core/model.hpp"
#include "hdat/core/registry.hpp"
#include "hdat/core/table.hpp"
#include "hdat/core/verdict.hpp"

namespace hdat {

/// The time rule of every dynamics model, in one place: the initial state lies at `t_start`; the
/// observation times are where the state is reported: not empty, finite, strictly increasing, in
/// [t_start, t_max] (`t_max` an explicitly given t_max; NaN: none). InputError naming `key` (and
/// saying `what` the times are) otherwise.
void check_times(const std::vector<double>& times, double t_start, double t_max, const std::string& key, const std::string& what = "");

/// A dynamics model bound to one command's parameters: the model's Dynamics (its typed Config,
/// parsed once), its settings read once and checked before any work (the time rule: t_points, and
/// t_max when both are given; drift times at or after t_start; lists not empty), its layout and
/// events, and one theory per replica, built when first integrated and kept. Every dynamics command
/// binds once and works from here; so does the model's check (add_dynamics_commands).
class Bound {
 public:
  /// InputError naming the key when the parameters cannot give a result.
  Bound(const DynamicsModel& model, const Params& p);
  const DynamicsModel& model() const { return model_; }
  const Params& params() const { return params_; }
  const Dynamics& dynamics() const { return *dynamics_; }
  const DynamicsSettings& settings() const { return settings_; }
  const StateLayout& layout() const { return layout_; }
  const std::vector<EventFunction>& events() const { return events_; }
  /// The declared escape event (DynamicsModel::escape_event); null: none.
  const EventFunction* escape() const;
  /// The theory on sample set `replica`, built once (thread-safe).
  const OdeTheory& theory(int replica = 0) const;
  /// A new finite run (one per seed and size).
  std::unique_ptr<FiniteSystem> system(double size, std::uint64_t replica) const { return dynamics_->system(size, replica); }

 private:
  const DynamicsModel& model_;
  Params params_;
  std::unique_ptr<const Dynamics> dynamics_;
  DynamicsSettings settings_;
  StateLayout layout_;
  std::vector<EventFunction> events_;
  mutable std::mutex theories_mutex_;
  mutable std::map<int, std::unique_ptr<OdeTheory>> theories_;
};

/// The theory started from x0 at t_start and reported at `times` only (every dynamics command's
/// theory goes through here: OdeTheory::run sees the start as its first time; a row at t_start is
/// reported only when `times` holds it).
TheoryRun theory_observed(const OdeTheory& theory, const Eigen::VectorXd& x0, double t_start, const std::vector<double>& times,
                          const IntegrateOptions& options);

/// The theory integrated from x0 (at times.front()) and observed at `times` by hdat::integrate
/// (OdeTheory::run's default).
TheoryRun integrate_theory(const OdeTheory& theory, const Eigen::VectorXd& x0, const std::vector<double>& times,
                     IntegrateOptions options);

/// `replicas` theories on independent sample sets: the run's trajectory is their mean with the
/// standard error of that mean (zeros for one replica), its solver summary the first replica's
/// unless another failed.
TheoryRun run_theory_replicas(const Bound& bound, const Eigen::VectorXd& x0, const std::vector<double>& times, int replicas);

/// The finite runs of one size.
struct Ensemble {
  double size = 0;
  Trajectory mean;                   ///< the seed mean of the runs, with its standard error
  std::vector<Trajectory> runs;      ///< one per finished seed
  std::vector<double> escape_times;  ///< per finished seed (NaN: no escape), when the model declares an escape_event
  std::vector<nlohmann::json> records;  ///< per finished seed: FiniteSystem::record() (persisted with the seed)
  /// per finished seed: FiniteSystem::failed_checks() (persisted with the seed; none: the system checks nothing)
  std::vector<std::optional<std::vector<std::string>>> failed_checks;
  /// per finished seed: the state at the run's start (t_start), recorded before the first step and
  /// persisted with the seed, whether or not the observation times include t_start
  std::vector<Eigen::VectorXd> initial_states;
  int finished = 0, requested = 0;
  double seconds = 0;
};

/// A stable hash of the configuration that determines a simulation at `size` (keys of the harness
/// and the model's `keys_not_affecting_simulation` left out), naming its persisted seeds.
std::string simulation_hash(const Bound& bound, double size);
/// The same for any parameters: their keys that change a finite run (all but ParamSet::theory_only),
/// with `extra` entries added (a size ...), hashed. Names what a finished run or fit kept on disk was.
std::string simulation_hash(const Params& p, const nlohmann::json& extra = nlohmann::json::object());

/// The finite runs at `size` (the bound settings' seeds and times), persisted seeds reused.
Ensemble run_ensemble(const Bound& bound, double size, const RunContext& ctx);

/// Seed-averaged state at t_start (the theory's start in validate): the mean of initial_states.
Eigen::VectorXd measured_initial_state(const Ensemble& ensemble, const StateLayout& layout);

/// Events (model.hpp `events`). A finite run's first crossing of `event` in its observed states:
/// linear in g between the two observations that bracket it, since a simulation has no interpolant
/// between them. NaN: none.
double sampled_event_time(const EventFunction& event, const Trajectory& run);
/// The time a finite run leaves its plateau: sampled_event_time of the model's escape_event; NaN
/// when it never does or the model declares none.
double sampled_escape_time(const Bound& bound, const Trajectory& run);
/// The theory's located events into a command's output: run.json `events` {name: time of the first
/// crossing, or null}, `event_states` {name: {t, direction, the observables there}}, and a summary line
/// per event.
void report_theory_events(const Bound& bound, const TheoryRun& run, RunOutput& out);

/// Where `curve` starts: the seeds' mean of the finite runs' initial states (start=mean, the state
/// simulate's mean starts from), replica 0's (start=replica), or the model's own initial state (the
/// model gives none per replica, or the parameters give the overlaps); with a sentence saying which.
struct CurveStart {
  Eigen::VectorXd x0;
  std::string description;
};
CurveStart curve_start(const Bound& bound);

/// The theory of `curve`: integrated from `start` through the curve's observation times, the model's
/// events located between steps; `reached(t)`, when given, follows the integration. dynamics_curve
/// reports this run; a model's own analysis of its curve (specialization's activations) calls it
/// and works from the typed run.
TheoryRun theory_curve(const Bound& bound, const CurveStart& start, const std::function<void(double t)>& reached = {});
/// `curve`'s output of that run, before the model's own additions (Dynamics::finish): curve.csv, the
/// run.json entries (solver, initial and final blocks, final observables, events) and the summary.
RunOutput curve_output(const Bound& bound, const CurveStart& start, const TheoryRun& run);

/// The trajectory comparison of validate (all sizes).
struct TrajectoryValidation {
  Verdict verdict;  ///< verdict.hpp: agree, disagree or undecided, with the reasons
  bool complete = true;
  /// size, t, quantity, theory, simulation, simulation_se, theory_se, deviation, deviation_se (the
  /// criterion's SE: paired over seeds, with the theory's), dof, critical_value, allowed, agree
  Table points;
  Table curves;   ///< size, t, then q_theory, q_sim, q_sim_se for every quantity
  Table escape;   ///< size, log_size, escape_time, escape_time_se, seeds_escaped, seeds
  std::vector<double> sizes;                             ///< the sizes compared, in order
  std::map<std::string, std::vector<double>> gap_rms;    ///< per compared block: its rms gap at each size
  std::map<std::string, std::vector<double>> gap_order;  ///< per compared block: the order between successive sizes
  nlohmann::json record;
  std::string summary;
};
TrajectoryValidation validate_trajectories(const Bound& bound, RunContext& ctx);

/// The drift check of validate.
struct DriftValidation {
  Verdict verdict;
  bool complete = true;
  Table rows;  ///< t, term, entry, theory, theory_se, simulation, simulation_se, z, agree
  nlohmann::json record;
  std::string summary;
};
DriftValidation validate_drift(const Bound& bound, RunContext& ctx);

/// The commands derived from the declaration (curve, simulate, validate with mode=trajectory|drift),
/// on the bound model; the forms with Params bind first.
RunOutput dynamics_curve(const Bound& bound, RunContext& ctx);
RunOutput dynamics_simulate(const Bound& bound, RunContext& ctx);
RunOutput dynamics_validate(const Bound& bound, RunContext& ctx);
RunOutput dynamics_curve(const DynamicsModel& model, const Params& p, RunContext& ctx);
RunOutput dynamics_simulate(const DynamicsModel& model, const Params& p, RunContext& ctx);
RunOutput dynamics_validate(const DynamicsModel& model, const Params& p, RunContext& ctx);

/// Install curve, simulate and validate for `model` into the registry entry.
void add_dynamics_commands(ModelEntry& entry, std::shared_ptr<const DynamicsModel> model);

// ---------------------------------------------------------------------------------------------------
// State-evolution models (FixedPointModel):
//   curve     the theory's fixed points along the control values: curve.csv.
//   simulate  fits of the estimator at the simulate size over control values x seeds: sim.csv
//             (seed means and standard errors of every measured observable).
//   validate  the theory at the control values (theory_points.csv), fits at every validate size
//             with the theory paired to each fit's own realisation where the model offers it
//             (sim.csv), and per control value and compared observable the 1/d extrapolation of the
//             mean (paired) difference, which must vanish (validate.csv, the verdict, exit 0 or 1).

/// The fits at every (control value, size) of `sizes` over the settings' seeds, in parallel (the
/// largest first; each fit's result depends only on its point). With `theory`, each fit is warm
/// started from it and asked for its paired theory. With an output folder (ctx.out) each finished fit
/// is kept in its fits/ (named by the keys that change a fit) and taken from there when the same
/// command runs again: an interrupted command (Interrupted, saying so) resumes where it stopped.
std::vector<FitGroup> run_fits(const FixedPoints& bound, const Params& p, const FixedPointSettings& settings,
                               const std::vector<int>& sizes, const FixedPointRun* theory, const std::string& label,
                               const RunContext& ctx);
/// One row per group: control, size, the model's point columns, every observable and its _se, seeds,
/// iterations, converged_fraction, seconds_per_run, then per paired observable its paired theory,
/// paired_<name>_diff and paired_<name>_diff_se.
Table fit_table(const FixedPointModel& model, const FixedPoints& bound, const FixedPointSettings& settings,
                const std::vector<FitGroup>& groups);

RunOutput fixed_point_curve(const FixedPointModel& model, const Params& p, RunContext& ctx);
RunOutput fixed_point_simulate(const FixedPointModel& model, const Params& p, RunContext& ctx);
RunOutput fixed_point_validate(const FixedPointModel& model, const Params& p, RunContext& ctx);

/// Install curve, simulate and validate for `model` into the registry entry.
void add_fixed_point_commands(ModelEntry& entry, std::shared_ptr<const FixedPointModel> model);

// ---------------------------------------------------------------------------------------------------

/// The keys every dynamics model shares, declared once here with the model's defaults: t_max, t_points,
/// n_points (when t_points is not given), rtol, atol, stepper, seed, start, seeds, dims, mode,
/// false_alarm, detectable, rel_tolerance, t_compare and theory_replicas (mode=trajectory),
/// drift_samples and drift_times (mode=drift); the retired `tolerance` refused. Those that change no
/// finite run are marked theory_only (left out of the simulation hash). standard_settings() reads them.
struct StandardDefaults {
  double t_max = 100;
  int n_points = 60;
  int seeds = 8;
  std::vector<long> dims = {250, 500, 1000};
  double false_alarm = 0.01, detectable = 0.1, rel_tolerance = 0.02;
  long drift_samples = 4000;
  std::vector<double> drift_times = {0, 1};
  double rtol = 1e-8, atol = 1e-10;
  int theory_replicas = 1;     ///< a sampled theory's default sample sets in validate
  std::string size_key = "D";  ///< the key of the simulate size (D, N ...)
  bool start_draw = false;     ///< `start` also offers `draw` (the theory's own initial draw)
  double max_size = 1e7;       ///< the largest size a run can hold in memory (bounds dims)
};
ParamSet& declare_standard_keys(ParamSet& set, const StandardDefaults& defaults);
DynamicsSettings standard_settings(const Params& p, const StandardDefaults& defaults, const StateLayout& layout);
/// The observation times of the standard keys: t_points as given, or 0 and n_points log-spaced times
/// up to t_max (standard_settings' times; one rule for every model that declares the standard keys).
std::vector<double> standard_times(const Params& p);

}  // namespace hdat
