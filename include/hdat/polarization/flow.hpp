#pragma once
// Event-aware integration of a flow through hdat::integrate (derivation.md §8).
//
// Events are sign changes of scalar functions g(x) of the state (a weight leaving the simplex, the
// normaliser F crossing zero, a logit reaching zero in finite time). hdat::integrate locates them
// between steps to near machine precision (IntegrateOptions::events: TOMS 748 on the dense output),
// and then
//   report: recorded, the integration goes on;
//   freeze: the flow is stopped at the event, the named component set to exactly 0 (a dead
//           coordinate: relu's f' = 0 beyond it; l1's Filippov sliding solution), and restarted;
//   stop:   the flow ends at the event (a singularity such as F = 0).
// Observations are never taken across an event: a segment observes up to its ending event only.
#include <Eigen/Dense>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hdat/core/integrate.hpp"

namespace hdat::polarization {

enum class EventAction { report, freeze, stop };

struct EventCondition {
  std::string kind;  ///< e.g. "leaves_simplex", "coordinate_zero", "normaliser_zero"
  int index = -1;    ///< the token concerned (-1: none)
  EventAction action = EventAction::report;
  std::function<double(const Eigen::VectorXd&)> g;  ///< the event is a sign change of g
  int zero_component = -1;  ///< freeze: the state component set to 0
  std::string what;         ///< a sentence for the report
};

struct Event {
  std::string kind;
  int index = -1;
  double t = 0;
  EventAction action = EventAction::report;
  std::string message;
  int direction = 0;  ///< sign of dg/dt at the crossing: −1 (g fell through 0) or +1
  nlohmann::json to_json() const;
};

struct FlowResult {
  std::vector<double> t;                ///< observation times reached
  std::vector<Eigen::VectorXd> x;       ///< states there
  std::vector<Event> events;
  IntegrateSummary summary;             ///< counters summed over segments; status of the last segment
  int segments = 0;
  bool ended_by_event = false;          ///< a `stop` event ended the flow
  nlohmann::json solver_json() const;
};

/// Integrate dx/dt = f(x) from (t0, x0) through `times`, with the event conditions.
FlowResult run_flow(const OdeSystem& f, const Eigen::VectorXd& x0, double t0, const std::vector<double>& times,
                    const std::vector<EventCondition>& conditions, const IntegrateOptions& options, int max_events = 200);

}  // namespace hdat::polarization
