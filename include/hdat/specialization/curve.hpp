#pragma once
// The theory's learning curve: integrate the (M, R) flow, observe the risk and the order
// parameters, detect the events users care about (plateau end, per-head specialisation), compare
// with the Bayes risk, and optionally analyse pruning of the final state.
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "hdat/core/registry.hpp"
#include "hdat/core/table.hpp"
#include "hdat/specialization/ode.hpp"

namespace hdat::specialization {

/// Times of the events along a trajectory (NaN when they did not happen).
/// A head h has specialised once its row M_h is farther than `threshold` (Euclidean) from the mean
/// row of all heads; the unspecialized plateau ends when the first head specialises.
struct Events {
  std::vector<double> head_split_time;
  double plateau_end = std::numeric_limits<double>::quiet_NaN();
  double plateau_risk = std::numeric_limits<double>::quiet_NaN();  ///< risk at the plateau end
  nlohmann::json to_json() const;
};
/// The events as functions of the state (one law for the theory and the simulations): plateau_end
/// (max_h |M_h − mean_h' M_h'| − threshold) and head_h_specialises (|M_h − mean| − threshold), each
/// crossing upwards.
std::vector<EventFunction> specialization_events(int H, int F, double threshold);
/// From sampled states (a simulation's run): crossings interpolated linearly between the
/// observations that bracket them.
Events detect_events(const hdat::Trajectory& run, int H, int F, double threshold);
/// From the events hdat::integrate located for specialization_events (the theory's).
Events located_events(const IntegrateSummary& solver, const OrderParameterFlow& flow);

struct PruneRow {
  int kept = 0;
  double risk = 0, risk_se = 0;
  std::vector<int> heads;
};
/// For every number of kept heads, the heads whose removal hurts least (exhaustive over subsets when
/// there are at most 256 of them, otherwise greedy backward elimination), with the risk.
/// b: the heads' biases (the fixed ones, or the trained state's).
std::vector<PruneRow> prune_heads(const OrderParameterFlow& flow, const Eigen::MatrixXd& M, const Eigen::MatrixXd& R,
                                  const Eigen::VectorXd& b);

/// Observation times of a run: t_points, or 0 and n_points log-spaced times in [t_max/1000, t_max].
std::vector<double> observation_times(const Params& p);
FlowOptions flow_options(const Params& p, int threads);
IntegrateOptions integrate_options(const Params& p, const StateLayout& layout);

/// Integrate from (M0, R0) (and b(0) = the setup's bias when it is trained) or from a full state x0,
/// and observe: the flow's run (t, risk with its error, M, R, b at each time) and its end.
struct FlowRun {
  hdat::Trajectory trajectory;
  IntegrateSummary solver;
  Eigen::MatrixXd M_final, R_final;
  Eigen::VectorXd b_final;  ///< the biases at the end (the fixed ones unless trained)
  double worst_psd_violation = 0;
};
FlowRun integrate_flow(const OrderParameterFlow& flow, const Eigen::MatrixXd& M0, const Eigen::MatrixXd& R0,
                       const std::vector<double>& times, const IntegrateOptions& options);
FlowRun integrate_flow(const OrderParameterFlow& flow, const Eigen::VectorXd& x0, const std::vector<double>& times,
                       const IntegrateOptions& options);


/// The most negative eigenvalue of R − M Mᵀ over a run's rows (0 when all are PSD).
double worst_psd_violation(const hdat::Trajectory& run);

/// The heads a pruning row keeps, as written ("0 2").
std::string heads_text(const PruneRow& row);

/// What specialization adds to a theory curve, typed: the Bayes risk, the events located on the
/// run, the theory's sampling, and (prune=true, the run completed) the pruning of its final state.
struct CurveResults {
  double bayes = std::numeric_limits<double>::quiet_NaN(), bayes_se = std::numeric_limits<double>::quiet_NaN();
  Events events;
  nlohmann::json theory;                       ///< samples, sampling, permutations, worst PSD violation
  std::optional<std::vector<PruneRow>> prune;  ///< every number of kept heads, the full model first
};
/// `flow` is the theory that made `run`.
CurveResults curve_results(const Params& p, const Config& s, const OrderParameterFlow& flow, const TheoryRun& run);
/// The results into `hdat curve specialization`'s output: run.json, prune.csv, summary lines.
void add_curve_results(const Config& s, const CurveResults& r, const TheoryRun& run, RunOutput& out);

}  // namespace hdat::specialization
