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
  Reintegrator re{&f, quiet, &R.refinement_rhs_calls};
  std::vector<char> active(conds.size(), 1);
  double t_start = t0;
  Eigen::VectorXd x_start = x0;
  std::size_t next = 0;  // first time not yet observed
  bool first = true;
  auto wall_start = std::chrono::steady_clock::now();

  while (true) {
    std::vector<double> remaining(times.begin() + static_cast<std::ptrdiff_t>(next), times.end());
    if (remaining.empty()) break;
    // The pending freeze/stop event of this segment, once the monitor found one.
    struct Pending {
      Event ev;
      std::size_t cond;
      double t_prev;
      Eigen::VectorXd x_prev;
    };
    std::optional<Pending> pending;
    double t_last = t_start;
    Eigen::VectorXd x_last = x_start;
    std::vector<double> g_last(conds.size());
    for (std::size_t i = 0; i < conds.size(); ++i) g_last[i] = active[i] ? conds[i].g(x_start) : 0.0;

    IntegrateOptions opt = options;
    opt.step_monitor = [&](double t, const Eigen::VectorXd& x) -> bool {
      struct Hit {
        double tc;
        std::size_t i;
      };
      std::vector<Hit> hits;
      std::vector<double> g_now(conds.size(), 0.0);
      for (std::size_t i = 0; i < conds.size(); ++i) {
        if (!active[i]) continue;
        g_now[i] = conds[i].g(x);
        const double g0 = g_last[i], g1 = g_now[i];
        if (!(g0 != 0.0) || !std::isfinite(g0) || !std::isfinite(g1) || !(g0 * g1 <= 0.0)) continue;
        double tc = t;
        if (g1 != 0.0) {
          // Locate the crossing: g along the flow from the last accepted state, on [t_last, t].
          auto h = [&](double tt) { return conds[i].g(re.at(t_last, x_last, tt)); };
          boost::uintmax_t iters = 60;
          try {
            auto bracket = boost::math::tools::toms748_solve(h, t_last, t, g0, g1, boost::math::tools::eps_tolerance<double>(48), iters);
            tc = 0.5 * (bracket.first + bracket.second);
            // Keep the point on the far side of the crossing, so that the action sees g's new sign.
            if (h(tc) * g0 > 0) tc = bracket.second;
          } catch (const std::exception&) {
            tc = t;  // not bracketed after all (g non-monotone inside the step): the step end
          }
        }
        hits.push_back({tc, i});
      }
      std::sort(hits.begin(), hits.end(), [](const Hit& a, const Hit& b) { return a.tc < b.tc; });
      for (const Hit& hit : hits) {
        const EventCondition& c = conds[hit.i];
        Event ev{c.kind, c.index, hit.tc, c.action, c.what, g_last[hit.i] > 0 ? -1 : +1};
        if (c.action == EventAction::report) {
          if (static_cast<int>(R.events.size()) < max_events) R.events.push_back(ev);
          continue;
        }
        pending = Pending{ev, hit.i, t_last, x_last};
        return false;  // later hits in this step happen after the state changes: not events of this flow
      }
      t_last = t;
      x_last = x;
      g_last = g_now;
      return true;
    };

    std::vector<double> bt;
    std::vector<Eigen::VectorXd> bx;
    IntegrateSummary s = integrate(f, x_start, t_start, remaining, [&](double t, const Eigen::VectorXd& x) {
      bt.push_back(t);
      bx.push_back(x);
      return true;
    }, opt);
    ++R.segments;
    // Sum the counters over segments.
    if (first) {
      R.summary = s;
      first = false;
    } else {
      R.summary.rhs_calls += s.rhs_calls;
      R.summary.accepted_steps += s.accepted_steps;
      R.summary.rejected_steps += s.rejected_steps;
      R.summary.jacobian_calls += s.jacobian_calls;
      R.summary.observations += s.observations;
      R.summary.rhs_seconds += s.rhs_seconds;
      if (s.accepted_steps) {
        R.summary.smallest_step = std::min(R.summary.smallest_step, s.smallest_step);
        R.summary.largest_step = std::max(R.summary.largest_step, s.largest_step);
      }
      R.summary.status = s.status;
      R.summary.message = s.message;
      R.summary.t_reached = s.t_reached;
    }

    if (s.status == IntegrateStatus::stopped_by_event && pending) {
      const Pending& p = *pending;
      // Observations past the last accepted state were interpolated across the event: redo them.
      std::size_t keep = 0;
      while (keep < bt.size() && bt[keep] <= p.t_prev) ++keep;
      bt.resize(keep);
      bx.resize(keep);
      std::vector<double> between;
      std::size_t k = next + keep;
      while (k < times.size() && times[k] <= p.ev.t) between.push_back(times[k++]);
      Eigen::VectorXd x_event = p.x_prev;
      if (p.ev.t > p.t_prev) {
        std::vector<double> tt = between;
        if (tt.empty() || tt.back() < p.ev.t) tt.push_back(p.ev.t);
        auto s2 = integrate(f, p.x_prev, p.t_prev, tt, [&](double t, const Eigen::VectorXd& x) {
          if (t <= p.ev.t && std::find(between.begin(), between.end(), t) != between.end()) {
            bt.push_back(t);
            bx.push_back(x);
          }
          if (t == p.ev.t) x_event = x;
          return true;
        }, quiet);
        R.refinement_rhs_calls += s2.rhs_calls;
      }
      for (std::size_t j = 0; j < bt.size(); ++j) {
        R.t.push_back(bt[j]);
        R.x.push_back(bx[j]);
      }
      next += bt.size();
      R.events.push_back(p.ev);
      R.summary.t_reached = p.ev.t;
      if (p.ev.action == EventAction::stop) {
        R.ended_by_event = true;
        R.summary.status = IntegrateStatus::stopped_by_event;
        R.summary.message = fmt::format("{} at t={:.10g}", p.ev.kind, p.ev.t);
        break;
      }
      // freeze
      const EventCondition& c = conds[p.cond];
      if (c.zero_component >= 0) x_event(c.zero_component) = 0.0;
      active[p.cond] = 0;
      t_start = p.ev.t;
      x_start = x_event;
      if (R.segments > 100000) break;
      continue;
    }
    for (std::size_t j = 0; j < bt.size(); ++j) {
      R.t.push_back(bt[j]);
      R.x.push_back(bx[j]);
    }
    next += bt.size();
    break;
  }
  R.summary.t_start = t0;
  R.summary.t_requested = times.empty() ? t0 : times.back();
  R.summary.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  if (R.summary.status == IntegrateStatus::stopped_by_event && !R.ended_by_event) R.summary.status = IntegrateStatus::completed;
  return R;
}

}  // namespace hdat::polarization
