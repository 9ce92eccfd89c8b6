#include "hdat/polarization/flow.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace hdat::polarization {

namespace {

std::string action_name(EventAction a) {
  switch (a) {
    case EventAction::report: return "reported";
    case EventAction::freeze: return "frozen";
    case EventAction::stop: return "stopped";
  }
  return "?";
}

// The counters of a later segment added to the run's summary; its status is the run's.
void add_segment(IntegrateSummary& total, const IntegrateSummary& s) {
  total.rhs_calls += s.rhs_calls;
  total.accepted_steps += s.accepted_steps;
  total.rejected_steps += s.rejected_steps;
  total.jacobian_calls += s.jacobian_calls;
  total.observations += s.observations;
  total.rhs_seconds += s.rhs_seconds;
  if (s.accepted_steps) {
    total.smallest_step = std::min(total.smallest_step, s.smallest_step);
    total.largest_step = std::max(total.largest_step, s.largest_step);
  }
  total.status = s.status;
  total.message = s.message;
  total.t_reached = s.t_reached;
}

// The conditions travel through hdat::integrate as events named by this tag and their index.
const std::string kConditionTag = "condition:";
std::size_t condition_of(const LocatedEvent& e) { return std::stoul(e.name.substr(kConditionTag.size())); }

}  // namespace

nlohmann::json Event::to_json() const {
  return {{"kind", kind}, {"index", index}, {"t", t}, {"action", action_name(action)},
          {"direction", direction < 0 ? "down" : "up"}, {"message", message}};
}

nlohmann::json FlowResult::solver_json() const {
  nlohmann::json j = summary.to_json();
  j["segments"] = segments;
  j["events"] = events.size();
  return j;
}

FlowResult run_flow(const OdeSystem& f, const Eigen::VectorXd& x0, double t0, const std::vector<double>& times,
                    const std::vector<EventCondition>& conds, const IntegrateOptions& options, int max_events) {
  FlowResult R;
  std::vector<char> active(conds.size(), 1);
  double t_start = t0;
  Eigen::VectorXd x_start = x0;
  std::size_t next = 0;  // first time not yet observed
  std::vector<LocatedEvent> external;
  const auto wall_start = std::chrono::steady_clock::now();

  // One segment per event that changes the flow (freeze) or ends it (stop). hdat::integrate locates
  // the active conditions' sign changes between steps (TOMS 748 on the dense output): a report event
  // is recorded, a freeze or stop event ends the segment there, its observations made up to it.
  while (next < times.size()) {
    const std::vector<double> remaining(times.begin() + static_cast<std::ptrdiff_t>(next), times.end());
    IntegrateOptions opt = options;
    for (std::size_t i = 0; i < conds.size(); ++i)
      if (active[i])
        opt.events.push_back({kConditionTag + std::to_string(i), [&g = conds[i].g](double, const Eigen::VectorXd& x) { return g(x); },
                              conds[i].action != EventAction::report, 0});
    std::size_t observed = 0;
    const IntegrateSummary s = integrate(f, x_start, t_start, remaining, [&](double t, const Eigen::VectorXd& x) {
      R.t.push_back(t);
      R.x.push_back(x);
      ++observed;
      return true;
    }, opt);
    if (R.segments++ == 0) R.summary = s;
    else add_segment(R.summary, s);
    next += observed;

    const LocatedEvent* ending = nullptr;
    for (const LocatedEvent& e : s.events) {
      if (e.name.rfind(kConditionTag, 0) != 0) {  // the caller's own events (options.events) pass through
        external.push_back(e);
        continue;
      }
      const EventCondition& c = conds[condition_of(e)];
      const Event ev{c.kind, c.index, e.t, c.action, c.what, e.direction};
      if (c.action != EventAction::report) {
        ending = &e;
        R.events.push_back(ev);
      } else if (static_cast<int>(R.events.size()) < max_events) {
        R.events.push_back(ev);
      }
    }
    if (!ending || s.status != IntegrateStatus::stopped_by_event) break;

    const std::size_t i = condition_of(*ending);
    R.summary.t_reached = ending->t;
    if (conds[i].action == EventAction::stop) {
      R.ended_by_event = true;
      R.summary.status = IntegrateStatus::stopped_by_event;
      R.summary.message = fmt::format("{} at t={:.10g}", conds[i].kind, ending->t);
      break;
    }
    // freeze: the coordinate is set to exactly 0 and its condition retired; the flow restarts there.
    x_start = ending->x;
    if (conds[i].zero_component >= 0) x_start(conds[i].zero_component) = 0.0;
    active[i] = 0;
    t_start = ending->t;
    if (R.segments > 100000) break;
  }
  R.summary.events = std::move(external);
  R.summary.t_start = t0;
  R.summary.t_requested = times.empty() ? t0 : times.back();
  R.summary.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  if (R.summary.status == IntegrateStatus::stopped_by_event && !R.ended_by_event) R.summary.status = IntegrateStatus::completed;
  return R;
}

}  // namespace hdat::polarization
