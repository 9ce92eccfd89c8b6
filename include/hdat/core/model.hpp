#pragma once
// The model contract: what a model declares, and from which the core derives its commands.
//
// Like an Odeint system or a tramp factor, a model states the physics and nothing else:
//   - its parameters (a ParamSet) and named order-parameter blocks (a StateLayout);
//   - its THEORY: for a dynamics model an ODE for the blocks (OdeTheory: the drift, split into named
//     terms, and observables such as the risk, with standard errors where expectations are sampled);
//     for a state-evolution model a fixed point over a control parameter α (FixedPoints::theory);
//   - its FINITE-DIMENSIONAL SYSTEM: online SGD at dimension D, gradient descent at step η
//     (FiniteSystem: advance in time, measure the same blocks and observables, one step's increment
//     for the drift check), or an estimator fitted at (α, d, seed) (FiniteEstimator: ERM, AMP).
// From that declaration the core provides `curve`, `simulate`, `validate` (trajectories or fixed
// points compared on every block with the combined standard error, the finite-size fit of the gap, the
// drift check term by term, a stated criterion, the verdict in the exit code) and the sweep
// observables, with the tables and run.json the command line writes (hdat/core/harness.hpp).
#include <Eigen/Dense>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hdat/core/control.hpp"
#include "hdat/core/finite_size_check.hpp"
#include "hdat/core/integrate.hpp"
#include "hdat/core/layout.hpp"
#include "hdat/core/observables.hpp"
#include "hdat/core/params.hpp"
#include "hdat/core/registry.hpp"
#include "hdat/core/table.hpp"
#include "hdat/core/trajectory.hpp"

namespace hdat {

/// A drift split into the named terms whose sum it is (e.g. the η-linear and the η² part of an SGD
/// drift), each a state vector in the theory's layout, with standard errors where sampled.
class DriftTerms {
 public:
  DriftTerms& add(const std::string& name, Eigen::VectorXd value, Eigen::VectorXd se = {});
  std::size_t size() const { return names_.size(); }
  const std::string& name(std::size_t k) const { return names_[k]; }
  const Eigen::VectorXd& value(std::size_t k) const { return values_[k]; }
  const Eigen::VectorXd& se(std::size_t k) const { return errors_[k]; }  ///< zeros when exact
  Eigen::VectorXd total() const;

 private:
  std::vector<std::string> names_;
  std::vector<Eigen::VectorXd> values_, errors_;
};

// ---------------------------------------------------------------------------------------------------
// Dynamics models: an ODE in time against a finite-dimensional training process.

/// A theory integrated from x0 and observed at the requested times.
struct TheoryRun {
  Trajectory trajectory;  ///< the state and the observables (with errors where sampled) at each time
  IntegrateSummary solver;
  Eigen::VectorXd initial, final;
  nlohmann::json info = nlohmann::json::object();  ///< what a theory's own run() reports (events ...)
};

/// The high-dimensional theory: a closed ODE for the order-parameter blocks.
class OdeTheory {
 public:
  virtual ~OdeTheory() = default;
  virtual const StateLayout& layout() const = 0;
  /// dx/dt at x: an Odeint system.
  virtual void operator()(const ConstVecRef& x, VecRef dxdt, double t) const = 0;
  /// The drift at state x and time t in its named terms, with standard errors (the drift check
  /// compares them one by one with the finite system's increments at that time). Default: one exact
  /// term, "drift".
  virtual DriftTerms terms(const Eigen::VectorXd& x, double t) const;
  /// The observables at state x and time t (population risk ...), with standard errors where sampled.
  virtual Observables observe(const Eigen::VectorXd& x, double t) const = 0;
  /// Integrate from x0, which lies at times.front(), through the observation times and observe (the
  /// harness calls it through theory_observed(), which puts the start first). The default drives
  /// hdat::integrate with this system; a theory with its own events (a normalisation leaving its
  /// domain, a switch of equations) overrides it and keeps the same observations.
  virtual TheoryRun run(const Eigen::VectorXd& x0, const std::vector<double>& times, const IntegrateOptions& options) const;
};

/// The finite-dimensional process the theory describes (online SGD at dimension D, gradient descent
/// at step η ...). One object is one independent run (one seed).
class FiniteSystem {
 public:
  virtual ~FiniteSystem() = default;
  /// The theory's time of the current weights (t = steps / D for online SGD, η · steps for GD).
  virtual double time() const = 0;
  /// Train until time() reaches t (whole steps).
  virtual void advance_to(double t) = 0;
  /// The theory's blocks measured on the current weights (same layout).
  virtual Eigen::VectorXd state() const = 0;
  /// The theory's observables measured on the current weights (e.g. the test risk with its error);
  /// further measured quantities may follow (they are reported, not compared).
  virtual Observables observe() = 0;
  /// One step's increment of the blocks from the current weights divided by the step's time,
  /// WITHOUT applying it, in the theory's terms: its mean over fresh samples is the drift.
  virtual DriftTerms increment() = 0;
  /// What the run reports beyond its table once it is done (events, invariants checked along the
  /// way, steps per second): simulate and validate list it per seed. Default: nothing.
  virtual nlohmann::json record() const { return nlohmann::json::object(); }
  /// The invariants the run checks along the way (conservation laws, identities of every step) that
  /// failed, in words; empty: all hold. None (the default): the system checks nothing. validate
  /// disagrees when a run's own check fails.
  virtual std::optional<std::vector<std::string>> failed_checks() const { return std::nullopt; }
};

/// Settings of the harness for one configuration, read from the model's parameters.
struct DynamicsSettings {
  /// The time of the initial state (theory and finite system alike): 0 unless the model declares
  /// another start. run.json states it.
  double t_start = 0;
  /// Where the state is reported: not empty, strictly increasing, in [t_start, t_max] (the time rule,
  /// check_times in harness.hpp). The theory integrates from t_start, a finite run starts at its own
  /// t_start; neither starts at times.front() unless it equals t_start.
  std::vector<double> times;
  /// `curve`'s observation times where the theory alone may be observed on a finer grid than a
  /// finite run reaches (gradient descent observes whole steps only); empty: `times`.
  std::vector<double> curve_times;
  IntegrateOptions integrate;             ///< theory integration
  std::string size_name = "D";            ///< what the finite size is (dimension D, step lr ...)
  double simulate_size = 1000;            ///< the size `simulate` runs
  std::vector<double> validate_sizes;     ///< the sizes `validate` runs
  double gap_exponent_expected = -0.5;    ///< gap ∝ size^p expected (D^-1/2; lr^1)
  int seeds = 8;                          ///< runs per size (replicas 0..seeds-1 of `seed`)
  std::uint64_t seed = 0;
  int theory_replicas = 1;                ///< independent theory sample sets in validate
  /// The criterion (verdict.hpp): a point agrees when |theory − simulation| ≤ c · SE + rel_tolerance ·
  /// scale(block) + abs_tolerance, SE the combined standard error, c the Student-t critical value at
  /// family-wise false-alarm rate `false_alarm` over the compared points (Bonferroni), scale the
  /// largest |value| of the block in the window; UNDECIDED where c · SE > detectable · scale; judged
  /// at every size, or only at the finest.
  double false_alarm = 0.01, detectable = 0.1, rel_tolerance = 0, abs_tolerance = 0;
  bool judge_every_size = true;
  /// No sampling error (one run per size, e.g. gradient descent): points are compared without
  /// standard errors, and validate takes one seed.
  bool deterministic = false;
  /// When set, the fitted gap exponent must be at least this steep (convergence as the size shrinks).
  double min_order = std::numeric_limits<double>::quiet_NaN();
  double t_compare = -1;                  ///< end of the comparison window (< 0: the whole run / hook)
  // Drift check.
  std::vector<double> drift_times;        ///< times along a run at which the drift is checked
  long drift_samples = 4000;              ///< fresh increments averaged per check
  /// Added to the drift check's allowance (c · SE): the round-off of a deterministic
  /// system, whose increments have no sampling error.
  double drift_abs_tolerance = 0;
  double drift_size = 1000;               ///< size of the run the drift is checked on
  bool parallel_seeds = true;             ///< run seeds in parallel threads
};

class Bound;                  // harness.hpp: a model bound to one command's parameters
struct Verdict;               // verdict.hpp
struct Ensemble;              // harness.hpp
struct TrajectoryValidation;  // harness.hpp
struct DriftValidation;       // harness.hpp

/// What a dynamics command computed, typed: the model's finish hook reads its results from here,
/// never back out of the tables the core made for the folder. One of them is set.
struct Computed {
  const TheoryRun* curve = nullptr;                  ///< curve: the theory's run, its events located
  const Ensemble* simulation = nullptr;              ///< simulate: the seeds' runs and their mean
  const TrajectoryValidation* validation = nullptr;  ///< validate mode=trajectory
  const DriftValidation* drift = nullptr;            ///< validate mode=drift
};

/// A dynamics model at one configuration: what a model writes. Its constructor parses the
/// command's parameters once into the model's typed `Config`; everything the harness builds comes
/// from it (the settings, the layout, a theory per replica integrated, a finite system per run).
/// add_dynamics_commands() (harness.hpp) derives curve, simulate and validate from it.
class Dynamics {
 public:
  virtual ~Dynamics() = default;
  /// The harness settings this configuration asks for (the harness reads them once and checks the
  /// time rule).
  virtual DynamicsSettings settings() const = 0;
  /// The named order-parameter blocks of the state (the theory's and the finite system's).
  virtual StateLayout layout() const = 0;
  /// The theory; `replica` selects an independent Monte Carlo sample set where the theory samples
  /// expectations (0: the one `curve` uses). The harness builds one per replica it integrates.
  virtual std::unique_ptr<OdeTheory> theory(int replica) const = 0;
  /// The theory's own initial state for `curve` (e.g. given overlaps, or a random initialisation at D).
  virtual Eigen::VectorXd initial_state(const OdeTheory& theory) const = 0;
  /// One run of the finite system at `size` (D, or the step lr) for replica `replica` of the seed.
  virtual std::unique_ptr<FiniteSystem> system(double size, std::uint64_t replica) const = 0;

  // Optional.
  /// The events of the dynamics (a student leaving the plateau, a head specialising ...): zero
  /// crossings of functions g(t, x) of the state. The theory's are located between steps by
  /// hdat::integrate (curve reports them in run.json `events` and the summary); a finite run's, which
  /// has no interpolant, between its observations (first_sampled_crossing).
  virtual std::vector<EventFunction> events() const { return {}; }
  /// The initial state of replica k's finite run, from its initial weights only (cheap): `curve`
  /// starts from the seeds' mean of these (the state simulate's mean starts from), or from one
  /// replica with start=replica. None: `initial_state` alone.
  virtual std::optional<Eigen::VectorXd> replica_initial_state(std::uint64_t /*replica*/) const { return std::nullopt; }
  /// One line describing the configuration, for summaries ("softmax, H=2, F=2, L=4, eta=1").
  virtual std::string describe() const { return ""; }
  /// What is the model's own in a command's output (events, Bayes risk, pruning, its own checks ...):
  /// called with what the command computed and the output the core made of it; for validate, a
  /// check of the model's own that fails is merged into `verdict`.
  virtual void finish(const Bound& /*bound*/, const Computed& /*computed*/, RunOutput& /*out*/, Verdict& /*verdict*/) const {}
  /// The theory with its controllable parameters and exact derivatives (hdat/core/control.hpp), for
  /// `hdat optimize`; null: the model offers no optimal protocols.
  /// `replica`: an independent Monte Carlo sample set, as theory(replica) (a closed form ignores it).
  virtual std::unique_ptr<ControlledTheory> controlled(int /*replica*/) const { return nullptr; }
};

/// What a dynamics model declares once, whatever the configuration: how to bind it, and the facts
/// about its keys and events that name things rather than compute them. (Keys that change no finite
/// run are marked in the model's ParamSet: ParamSet::theory_only.)
struct DynamicsModel {
  /// The model at the command's parameters (the model's Dynamics; hdat::dynamics_of<T> for a class
  /// constructed from Params).
  std::function<std::unique_ptr<const Dynamics>(const Params&)> bind;
  /// The event (one of the Dynamics' events, by name) whose first crossing is the time a run leaves
  /// its plateau; empty: none. Gives the escape times against log size, and by default ends
  /// validate's comparison window (the D = ∞ flow from averaged overlaps has no such random time).
  std::string escape_event;
  /// Keys that give the initial overlaps explicitly (Q0, R0 ...): when one is set, `curve` starts
  /// from `initial_state` whatever `start` says.
  std::vector<std::string> start_keys;
};

/// DynamicsModel::bind for a Dynamics class T constructed from the parameters.
template <class T>
std::function<std::unique_ptr<const Dynamics>(const Params&)> dynamics_of() {
  return [](const Params& p) -> std::unique_ptr<const Dynamics> { return std::make_unique<const T>(p); };
}

// ---------------------------------------------------------------------------------------------------
// State-evolution models: a fixed point over a control parameter α against finite-d estimators.

/// How a fixed-point solve ended (Ceres style).
struct FixedPointReport {
  bool converged = false;
  int iterations = 0;
  double residual = 0;
  double seconds = 0;
  std::string message;
  nlohmann::json to_json() const;
};

/// The theory's fixed point at one control value.
struct FixedPointSolution {
  bool converged = false;
  /// The observables validate compares (a fit measures the same ones), with standard errors where
  /// sampled expectations enter.
  Observables observables;
  /// The solution, a warm start for the fits' paired theories; empty where it did not converge.
  Eigen::VectorXd state;
};

/// The theory along its control parameter, typed: one solution per control value. A model keeps
/// what is its own per point (conjugates, spectra ...) in a class derived from this one, which its
/// finish hook reads back (FixedPointResults::theory_as), and writes curve.csv from it (table()).
class FixedPointRun {
 public:
  virtual ~FixedPointRun() = default;
  std::vector<double> controls;
  std::vector<FixedPointSolution> points;             ///< one per control value, in that order
  nlohmann::json solver = nlohmann::json::object();  ///< what the solver did over the curve (Ceres style)
  std::string method;                                 ///< how it was solved ("closed form", "sampled channel" ...)
  /// Points that did not converge.
  int unconverged() const;
  /// curve.csv (and validate's theory_points.csv): one row per control value, written when the folder
  /// is. Default: the control, every observable (its _se beside a sampled one) and `converged`.
  virtual Table table(const std::string& control_name) const;
};

/// Where one fit of the finite-dimensional estimator runs.
struct FitPoint {
  double control = 0;
  std::size_t control_index = 0;  ///< into the settings' controls (names the fit's data streams)
  int size = 0;                   ///< the dimension d
  std::uint64_t seed = 0;
  /// The theory's solution at `control` where it converged (a warm start for a paired theory); null
  /// otherwise.
  const Eigen::VectorXd* theory_state = nullptr;
  bool paired = false;  ///< also solve the theory at this fit's own realisation (Fit::paired)
};

/// One fit of a finite-dimensional estimator (ERM, AMP) at a FitPoint.
struct Fit {
  /// Measured: the compared observables and any others (reported as seed means, not compared).
  Observables observables;
  /// The theory at this fit's own realisation (its sampled target's spectrum ...), when the point
  /// asked for it: validate then compares the paired difference observables − paired, which the
  /// realisation's fluctuations do not enter. Empty: the comparison is with the theory's curve.
  Observables paired;
  bool paired_converged = true;
  bool failed = false;      ///< a numerical failure (the fit's numbers are not used)
  FixedPointReport report;  ///< how the fit or iteration ended
  nlohmann::json info = nlohmann::json::object();  ///< kept for the model's own analyses (finish)
};

/// Settings of the harness for one configuration, read from the model's parameters.
struct FixedPointSettings {
  std::vector<double> controls;         ///< the control values of curve, simulate and validate
  int simulate_size = 100;              ///< the d `simulate` fits at
  std::vector<int> validate_sizes;      ///< the d's of validate's 1/d extrapolation (sorted)
  std::vector<std::uint64_t> seeds;     ///< fits per (control, d)
  InverseSizeCriterion criterion;       ///< |a| <= z se(a) + rel_floor |theory| of the 1/d fit
  std::vector<std::string> compared;    ///< observables validate compares (theory table and Fit)
  std::string size_name = "d";
};

/// The fits at one (control value, size), over the seeds.
struct FitGroup {
  double control = 0;
  std::size_t control_index = 0;
  int size = 0;
  std::vector<Fit> fits;  ///< one per seed, in the settings' seed order (failed fits included)
  /// Seed means of every measured observable (se: standard error over seeds), of the paired theory
  /// and of the paired difference observable − paired (empty when unpaired).
  Observables mean, paired_mean, paired_difference;
  double iterations = 0, converged_fraction = 0, paired_converged_fraction = 0, seconds_per_run = 0;
  int failed = 0;
};

/// What the harness computed, for a model's own additions to a command's output: which command it
/// was is what it computed (curve: the theory; simulate: the fits; validate: both).
struct FixedPointResults {
  const FixedPointSettings* settings = nullptr;
  const FixedPointRun* theory = nullptr;       ///< null for simulate
  const std::vector<FitGroup>* fits = nullptr;  ///< null for curve
  bool curve() const { return theory && !fits; }
  bool simulation() const { return fits && !theory; }
  bool validation() const { return theory && fits; }
  /// The theory as the model's own run class (the one its FixedPoints::theory returned).
  template <class Run>
  const Run& theory_as() const { return dynamic_cast<const Run&>(*theory); }
};

/// A state-evolution model at one configuration (its fixed points along the control, and the fits
/// they describe): what a model writes. It is built from the model's
/// typed `Config` (parsed once from the command's parameters); everything the harness uses comes
/// from it. add_fixed_point_commands() (harness.hpp) derives curve, simulate and validate.
class FixedPoints {
 public:
  virtual ~FixedPoints() = default;
  /// The harness settings of this configuration (the control values, sizes, seeds, criterion).
  virtual FixedPointSettings settings() const = 0;
  /// The theory's fixed points at `controls`, in that order (each warm started from the previous).
  /// `error_bars`: propagate the sampling error of sampled expectations to the observables.
  virtual std::unique_ptr<const FixedPointRun> theory(const std::vector<double>& controls, bool error_bars) const = 0;
  /// One fit of the finite-dimensional estimator at `at`.
  virtual Fit fit(const FitPoint& at) const = 0;

  // Optional.
  /// Relative cost of a fit (the largest run first, for load balance); default: size^3 · control.
  virtual double cost(double control, int size) const;
  /// Columns of a fit table after (control, size) that the configuration fixes (n, training ...).
  virtual std::vector<std::pair<std::string, Cell>> point_columns(double /*control*/, int /*size*/) const { return {}; }
  /// The resolution of a quantised observable at size d (rank: 1/d; 0: continuous): the 1/d fit
  /// never trusts a standard error below resolution/√(12 · seeds).
  virtual double resolution(const std::string& /*observable*/, int /*size*/) const { return 0; }
  /// One line: the configuration.
  virtual std::string describe() const { return ""; }
  /// What is the model's own in a command's output (thresholds, spectra, histograms ...), from what
  /// the command computed.
  virtual void finish(const FixedPointResults& /*results*/, RunOutput& /*out*/) const {}
};

/// What a state-evolution model declares once, whatever the configuration.
struct FixedPointModel {
  std::string control = "alpha";  ///< the control parameter's column name
  /// The model at the command's parameters (hdat::fixed_points_of<T> for a class constructed
  /// from Params).
  std::function<std::unique_ptr<const FixedPoints>(const Params&)> bind;
  /// Prefix of the paired theory's columns in a fit table ("<prefix>_mse").
  std::string paired_prefix = "theory_paired";
  /// What the comparison is, in words, for the verdict.
  std::string comparison = "the mean difference simulation - theory; every theory point converged";
};

/// FixedPointModel::bind for a FixedPoints class T constructed from the parameters.
template <class T>
std::function<std::unique_ptr<const FixedPoints>(const Params&)> fixed_points_of() {
  return [](const Params& p) -> std::unique_ptr<const FixedPoints> { return std::make_unique<const T>(p); };
}

// ---------------------------------------------------------------------------------------------------

/// The test-only key that breaks one term of a model's theory (shared by every model): "none" and
/// the model's breakable terms.
ParamSet& declare_break_term(ParamSet& set, const std::vector<std::string>& terms);

}  // namespace hdat
