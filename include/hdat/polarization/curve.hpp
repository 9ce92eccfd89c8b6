#pragma once
// The theory curve of a configuration: the flow (reduced where it exists, else full) integrated
// through the observation times with the normalisation's events, and the observables per time.
#include <nlohmann/json.hpp>
#include <vector>

#include "hdat/core/table.hpp"
#include "hdat/polarization/flow.hpp"
#include "hdat/polarization/instance.hpp"
#include "hdat/polarization/model.hpp"
#include "hdat/polarization/observables.hpp"
#include "hdat/polarization/reduced.hpp"

namespace hdat::polarization {

/// The flow integrated from x0 (at t = times.front()) through `times` with the normalisation's
/// events; weights that start outside the simplex (sum) are reported once at the start.
FlowResult integrate_flow(const Config& c, const FlowSystem& flow, const Eigen::VectorXd& x0, const std::vector<double>& times,
                          const IntegrateOptions& options);

/// What run.json says of a flow run: "flow" (kind, state size, equations), "solver", "events".
nlohmann::json flow_info(const Config& c, const FlowSystem& flow, const FlowResult& r);

struct CurveResult {
  std::vector<Observation> observations;  ///< at c.times (up to a failure of the integration)
  FlowResult flow;       ///< states, events, solver statistics
  nlohmann::json info;   ///< "flow", "solver", "events", "instance", "asymptotics"
  bool ok = true;        ///< false: the integration failed (non-finite, diverged, step underflow ...)
  /// curve.csv: observable_columns(c), t and every observable (no state blocks); c: the curve's own.
  Table table(const Config& c) const { return observation_table(c, observations); }
};

/// The flow from the instance's initial state through c.times (the model's own analyses).
CurveResult theory_curve(const Config& c, const Instance& in);

/// What the asymptotics are compared with: a curve's last observation.
struct LastObservation {
  double t = 0, top = 0, eps_log2t = 0, z_minus_logt = 0;
};

/// The limit of (1 − s_top) log² t for the logistic softmax flow from a(0) = 0: 2 b (T − 1)/T.
double eps_log2t_limit(const Config& c);

/// The spec's asymptotic predictions for the logistic softmax flow from a(0) = 0, compared with the
/// last row of a curve: (1 − s_top) log² t → 2 b (T − 1)/T, z − log t → log b, winner = argmax u(0).
/// Null where they do not apply (other losses, normalisations, the tied model).
nlohmann::json asymptotics(const Config& c, const Instance& in, const LastObservation& last);

}  // namespace hdat::polarization
