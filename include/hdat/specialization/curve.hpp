#pragma once
// The theory's learning curve: integrate the (M, R) flow, observe the risk and the order
// parameters, detect the events users care about (plateau end, per-head specialisation), compare
// with the Bayes risk, and optionally analyse pruning of the final state.
#include <limits>
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
/// From a table with columns t, risk, M_h_f (crossing times interpolated linearly).
Events detect_events(const Table& curve, int H, int F, double threshold);

struct PruneRow {
  int kept = 0;
  double risk = 0, risk_se = 0;
  std::vector<int> heads;
};
/// For every number of kept heads, the heads whose removal hurts least (exhaustive over subsets when
/// there are at most 256 of them, otherwise greedy backward elimination), with the risk.
std::vector<PruneRow> prune_heads(const OrderParameterFlow& flow, const Eigen::MatrixXd& M, const Eigen::MatrixXd& R);

/// Observation times of a run: t_points, or 0 and n_points log-spaced times in [t_max/1000, t_max].
std::vector<double> observation_times(const Params& p);
FlowOptions flow_options(const Params& p, int threads);
IntegrateOptions integrate_options(const Params& p, const StateLayout& layout);

/// Integrate from (M0, R0) and observe; returns the curve table (t, risk, risk_se, M..., R...).
struct Trajectory {
  Table table;
  IntegrateSummary solver;
  Eigen::MatrixXd M_final, R_final;
  double worst_psd_violation = 0;
};
Trajectory integrate_flow(const OrderParameterFlow& flow, const Eigen::MatrixXd& M0, const Eigen::MatrixXd& R0,
                          const std::vector<double>& times, const IntegrateOptions& options);

/// The most negative eigenvalue of R − M Mᵀ over a curve's rows (0 when all are PSD).
double worst_psd_violation(const Table& curve, const Setup& s);

/// What `hdat curve specialization` adds to the core's curve: Bayes risk, events, theory
/// statistics, and the pruning analysis (prune=true).
void add_curve_results(const Params& p, RunOutput& out);

}  // namespace hdat::specialization
