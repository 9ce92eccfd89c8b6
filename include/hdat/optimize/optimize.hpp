#pragma once
// `hdat optimize MODEL`: the training protocol that minimises a risk objective, computed from the
// model's theory (its ControlledTheory, hdat/core/control.hpp) with exact gradients by sensitivities
// (sensitivity.hpp) and NLopt's gradient-based optimisers with bounds, beside the usual schedules
// (best constant, step decay, cosine, power law), each optimised over its own few parameters, and
// optionally confirmed by the finite system trained under the optimum and the best constant.
//
// OptimizeOptions in (validated: InputError naming the option, before any work), a RunOutput out
// (schedule.json, schedules.csv, risk_curves.csv, baselines.csv, run.json with a Ceres-style summary
// per optimisation). Long runs show progress; an interrupted run keeps what finished in
// DIR/optimize_state.json and the same command resumes from it (restart: start afresh).
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hdat/core/model.hpp"
#include "hdat/core/registry.hpp"
#include "hdat/optimize/sensitivity.hpp"

namespace hdat::optimize {

struct Bounds {
  double lo = 0, hi = 0;
};

struct OptimizeOptions {
  std::vector<std::string> controls;  ///< the model's controllable parameters to optimise
  int intervals = 20;                 ///< equal intervals of [0, t_final]
  ScheduleShape shape = ScheduleShape::piecewise_constant;  ///< piecewise_constant | piecewise_linear
  std::map<std::string, Bounds> bounds;  ///< per control (default: its range, or [0, 4 × its value])
  std::map<std::string, double> budget;  ///< per scheduled control: its mean over [0, t_final], fixed
  Objective objective = Objective::final_risk;
  double target = std::numeric_limits<double>::quiet_NaN();  ///< time_to_target: the risk to reach
  double t_final = std::numeric_limits<double>::quiet_NaN();  ///< the horizon (NaN: the model's t_max)
  std::string algorithm = "slsqp";  ///< NLopt: slsqp | lbfgs | mma | ccsaq
  int max_evaluations = 400;
  double ftol_rel = 1e-9, xtol_rel = 1e-7;
  double rtol = 1e-9, atol = 1e-12;  ///< the integrator's tolerances for objective and gradient
  bool baselines = true;             ///< also optimise the usual schedules
  int curve_points = 241;            ///< observation times of the risk curves
  double confirm_size = 0;           ///< > 0: train the finite system at this size under the optimum and the best constant
  int confirm_seeds = 16;
  /// Settings of the theory that predicts the confirmation, over the configuration's: only keys that
  /// change no finite run (e.g. mc_samples=20000: the optimisation may run on a cheaper sampled flow
  /// than the prediction it is held to).
  nlohmann::json confirm_theory = nlohmann::json::object();
  bool restart = false;              ///< ignore a saved state in the output folder

  nlohmann::json to_json() const;
};

/// How one optimisation ended (Ceres style).
struct SolverSummary {
  std::string algorithm;
  int evaluations = 0;
  double initial_objective = 0, final_objective = 0;
  double projected_gradient_norm = 0;  ///< of the final point: zero at a bound's outward components, budget direction removed
  std::string termination;             ///< NLopt's result ("FTOL_REACHED" ...), "resumed", "interrupted", "failed"
  bool converged = false;
  double seconds = 0;      ///< wall time
  double cpu_seconds = 0;  ///< processor time of the process meanwhile (all threads): the figure a loaded machine does not change
  std::string message;
  nlohmann::json to_json() const;
  std::string brief() const;
};

/// One optimised protocol (the optimum or a baseline family).
struct Candidate {
  std::string name;  ///< "optimal", "constant", "step_decay", "cosine", "power_law"
  Protocol protocol;
  Evaluation evaluation;
  SolverSummary summary;
};

/// Resolved settings of an optimisation: the options checked against the model.
struct Problem {
  std::vector<std::string> scheduled, finals;  ///< the controls, split by kind
  std::map<std::string, Bounds> bounds;        ///< for every optimised control
  double t_final = 1;
  ObjectiveSpec objective;
};

/// The options checked against the model's ControlledTheory and parameters: InputError naming the
/// option (control, intervals, shape, bounds, budget, objective, target, t_final, algorithm ...).
Problem check_options(const OptimizeOptions& o, const ControlledTheory& theory, const Params& p);

/// `hdat optimize`: the whole run (baselines, optimum, curves, confirmation) for a resolved model.
RunOutput run_optimize(const DynamicsModel& model, const Params& p, const OptimizeOptions& o, RunContext& ctx);

/// Figures of an optimize folder: the schedules and the risk curves under each (hdat plot DIR).
std::vector<std::string> plot_optimize(const std::string& dir);

}  // namespace hdat::optimize
