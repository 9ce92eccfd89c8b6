#include "hdat/polarization/flow.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/math/tools/roots.hpp>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

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

// State at time t of the flow started at (t0, x0): one short integration without events.
struct Reintegrator {
  const OdeSystem* f;
  IntegrateOptions opt;
  long* rhs_calls;
  Eigen::VectorXd at(double t0, const Eigen::VectorXd& x0, double t) const {
    if (t <= t0) return x0;
    Eigen::VectorXd out = x0;
    auto s = integrate(*f, x0, t0, {t}, [&](double, const Eigen::VectorXd& x) {
      out = x;
      return true;
    }, opt);
    *rhs_calls += s.rhs_calls;
    if (!s.ok()) out.setConstant(std::numeric_limits<double>::quiet_NaN());
    return out;
  }
};

// A freeze or stop event found in a step: the segment ends at the last accepted state before it.
struct Pending {
  Event event;
  std::size_t condition;
  double t_prev;
  Eigen::VectorXd x_prev;
};

// The time of a sign change of g on [t0, t1] along the flow from (t0, x0), with g(t0) = g0, g(t1) = g1.
double locate_crossing(const EventCondition& c, const Reintegrator& re, double t0, const Eigen::VectorXd& x0, double t1, double g0,
                       double g1) {
  if (g1 == 0.0) return t1;
  auto h = [&](double t) { return c.g(re.at(t0, x0, t)); };
  boost::uintmax_t iterations = 60;
  try {
    const auto bracket = boost::math::tools::toms748_solve(h, t0, t1, g0, g1, boost::math::tools::eps_tolerance<double>(48), iterations);
    const double tc = 0.5 * (bracket.first + bracket.second);
    // Keep the point on the far side of the crossing, so that the action sees g's new sign.
    return h(tc) * g0 > 0 ? bracket.second : tc;
  } catch (const std::exception&) {
    return t1;  // not bracketed after all (g non-monotone inside the step): the step end
  }
}

// The step monitor of one segment: after every accepted step it looks for sign changes of the active
// conditions, records `report` events and ends the segment at the first freeze or stop event.
class EventMonitor {
 public:
  EventMonitor(const std::vector<EventCondition>& conditions, const std::vector<char>& active, const Reintegrator& re, double t0,
               const Eigen::VectorXd& x0, std::vector<Event>& events, int max_events)
      : conditions_(conditions), active_(active), re_(re), events_(events), max_events_(max_events), t_last_(t0), x_last_(x0),
        g_last_(conditions.size(), 0.0) {
    for (std::size_t i = 0; i < conditions_.size(); ++i)
      if (active_[i]) g_last_[i] = conditions_[i].g(x0);
  }

  bool operator()(double t, const Eigen::VectorXd& x) {
    struct Hit {
      double t;
      std::size_t condition;
    };
    std::vector<Hit> hits;
    std::vector<double> g_now(conditions_.size(), 0.0);
    for (std::size_t i = 0; i < conditions_.size(); ++i) {
      if (!active_[i]) continue;
      g_now[i] = conditions_[i].g(x);
      const double g0 = g_last_[i], g1 = g_now[i];
      if (!(g0 != 0.0) || !std::isfinite(g0) || !std::isfinite(g1) || !(g0 * g1 <= 0.0)) continue;
      hits.push_back({locate_crossing(conditions_[i], re_, t_last_, x_last_, t, g0, g1), i});
    }
    std::sort(hits.begin(), hits.end(), [](const Hit& a, const Hit& b) { return a.t < b.t; });
    for (const Hit& hit : hits) {
      const EventCondition& c = conditions_[hit.condition];
      Event ev{c.kind, c.index, hit.t, c.action, c.what, g_last_[hit.condition] > 0 ? -1 : +1};
      if (c.action == EventAction::report) {
        if (static_cast<int>(events_.size()) < max_events_) events_.push_back(ev);
        continue;
      }
      pending = Pending{ev, hit.condition, t_last_, x_last_};
      return false;  // later hits in this step happen after the state changes: not events of this flow
    }
    t_last_ = t;
    x_last_ = x;
    g_last_ = g_now;
    return true;
  }

  std::optional<Pending> pending;

 private:
  const std::vector<EventCondition>& conditions_;
  const std::vector<char>& active_;
  const Reintegrator& re_;
  std::vector<Event>& events_;
  int max_events_;
  double t_last_;
  Eigen::VectorXd x_last_;
  std::vector<double> g_last_;
};

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

// A segment stopped by an event: the observations after the last accepted state were interpolated
// across the event, so they are dropped and the requested times up to the event recomputed from that
// state. Returns the state at the event.
Eigen::VectorXd observe_until_event(const OdeSystem& f, const Pending& p, const std::vector<double>& times, std::size_t next,
                                    const IntegrateOptions& quiet, std::vector<double>& bt, std::vector<Eigen::VectorXd>& bx,
                                    long& rhs_calls) {
  std::size_t keep = 0;
  while (keep < bt.size() && bt[keep] <= p.t_prev) ++keep;
  bt.resize(keep);
  bx.resize(keep);
  std::vector<double> between;
  for (std::size_t k = next + keep; k < times.size() && times[k] <= p.event.t; ++k) between.push_back(times[k]);
  Eigen::VectorXd x_event = p.x_prev;
  if (p.event.t > p.t_prev) {
    std::vector<double> tt = between;
    if (tt.empty() || tt.back() < p.event.t) tt.push_back(p.event.t);
    const auto s = integrate(f, p.x_prev, p.t_prev, tt, [&](double t, const Eigen::VectorXd& x) {
      if (t <= p.event.t && std::find(between.begin(), between.end(), t) != between.end()) {
        bt.push_back(t);
        bx.push_back(x);
      }
      if (t == p.event.t) x_event = x;
      return true;
    }, quiet);
    rhs_calls += s.rhs_calls;
  }
  return x_event;
}

}  // namespace

nlohmann::json Event::to_json() const {
  return {{"kind", kind}, {"index", index}, {"t", t}, {"action", action_name(action)},
          {"direction", direction < 0 ? "down" : "up"}, {"message", message}};
}

nlohmann::json FlowResult::solver_json() const {
  nlohmann::json j = summary.to_json();
  j["segments"] = segments;
  j["event_location_rhs_calls"] = refinement_rhs_calls;
  j["events"] = events.size();
  return j;
}

FlowResult run_flow(const OdeSystem& f, const Eigen::VectorXd& x0, double t0, const std::vector<double>& times,
                    const std::vector<EventCondition>& conds, const IntegrateOptions& options, int max_events) {
  FlowResult R;
  IntegrateOptions quiet = options;
  quiet.step_monitor = nullptr;
  const Reintegrator re{&f, quiet, &R.refinement_rhs_calls};
  std::vector<char> active(conds.size(), 1);
  double t_start = t0;
  Eigen::VectorXd x_start = x0;
  std::size_t next = 0;  // first time not yet observed
  const auto wall_start = std::chrono::steady_clock::now();

  // One segment per event that changes the flow (freeze) or ends it (stop).
  while (next < times.size()) {
    const std::vector<double> remaining(times.begin() + static_cast<std::ptrdiff_t>(next), times.end());
    EventMonitor monitor(conds, active, re, t_start, x_start, R.events, max_events);
    IntegrateOptions opt = options;
    opt.step_monitor = [&monitor](double t, const Eigen::VectorXd& x) { return monitor(t, x); };
    std::vector<double> bt;
    std::vector<Eigen::VectorXd> bx;
    const IntegrateSummary s = integrate(f, x_start, t_start, remaining, [&](double t, const Eigen::VectorXd& x) {
      bt.push_back(t);
      bx.push_back(x);
      return true;
    }, opt);
    if (R.segments++ == 0) R.summary = s;
    else add_segment(R.summary, s);

    const bool event = s.status == IntegrateStatus::stopped_by_event && monitor.pending;
    Eigen::VectorXd x_event;
    if (event) x_event = observe_until_event(f, *monitor.pending, times, next, quiet, bt, bx, R.refinement_rhs_calls);
    R.t.insert(R.t.end(), bt.begin(), bt.end());
    R.x.insert(R.x.end(), bx.begin(), bx.end());
    next += bt.size();
    if (!event) break;

    const Pending& p = *monitor.pending;
    R.events.push_back(p.event);
    R.summary.t_reached = p.event.t;
    if (p.event.action == EventAction::stop) {
      R.ended_by_event = true;
      R.summary.status = IntegrateStatus::stopped_by_event;
      R.summary.message = fmt::format("{} at t={:.10g}", p.event.kind, p.event.t);
      break;
    }
    // freeze: the coordinate is set to exactly 0 and its condition retired; the flow restarts there.
    const EventCondition& c = conds[p.condition];
    if (c.zero_component >= 0) x_event(c.zero_component) = 0.0;
    active[p.condition] = 0;
    t_start = p.event.t;
    x_start = x_event;
    if (R.segments > 100000) break;
  }
  R.summary.t_start = t0;
  R.summary.t_requested = times.empty() ? t0 : times.back();
  R.summary.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  if (R.summary.status == IntegrateStatus::stopped_by_event && !R.ended_by_event) R.summary.status = IntegrateStatus::completed;
  return R;
}

}  // namespace hdat::polarization
