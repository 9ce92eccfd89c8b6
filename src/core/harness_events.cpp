// Events of dynamics models (model.hpp `events`) in the commands' outputs, and where `curve` starts.
#include <fmt/format.h>

#include <cmath>

#include "hdat/core/harness.hpp"
#include "hdat/core/output.hpp"

namespace hdat {

double sampled_event_time(const EventFunction& event, const Trajectory& run) {
  std::vector<Eigen::VectorXd> x;
  for (std::size_t r = 0; r < run.size(); ++r) x.push_back(run.state(r));
  return first_sampled_crossing(event, run.times(), x);
}

double sampled_escape_time(const Bound& bound, const Trajectory& run) {
  const EventFunction* escape = bound.escape();
  return escape ? sampled_event_time(*escape, run) : NAN;
}

void report_theory_events(const Bound& bound, const TheoryRun& run, RunOutput& out) {
  if (bound.events().empty()) return;
  const OdeTheory& theory = bound.theory(0);
  nlohmann::json& times = out.info["events"];
  nlohmann::json& states = out.info["event_states"];
  for (const EventFunction& declared : bound.events()) {
    const LocatedEvent* e = run.solver.first_event(declared.name);
    times[declared.name] = e ? nlohmann::json(e->t) : nlohmann::json(nullptr);
    if (!e) {
      out.summary += fmt::format("  event {:<20} not within the run (t <= {:g})\n", declared.name, run.solver.t_reached);
      continue;
    }
    nlohmann::json at = {{"t", e->t}, {"direction", e->direction}};
    std::string there;
    const Observables obs = theory.observe(e->x, e->t);
    for (std::size_t k = 0; k < obs.size(); ++k) {
      at[obs.names()[k]] = obs.at(k).value;
      if (obs.estimated(k)) at[obs.names()[k] + "_se"] = obs.at(k).se;
      there += fmt::format("{}{} {:.6g}", there.empty() ? "" : ", ", obs.names()[k], obs.at(k).value);
    }
    states[declared.name] = at;
    out.summary += fmt::format("  event {:<20} t = {:.8g} ({})\n", declared.name, e->t, there);
  }
  times["location"] = "zero crossings of the event functions, located between steps on the integrator's dense output (TOMS 748)";
}

CurveStart curve_start(const Bound& bound) {
  const Params& p = bound.params();
  const Dynamics& model = bound.dynamics();
  const DynamicsSettings& settings = bound.settings();
  bool given = false;
  for (const auto& k : bound.model().start_keys) given = given || p.has(k);
  const std::string start = p.set().find("start") ? p.text("start") : "mean";
  if (given) return {model.initial_state(bound.theory(0)), "the given initial overlaps"};
  std::optional<Eigen::VectorXd> first = (start == "mean" || start == "replica") ? model.replica_initial_state(0) : std::nullopt;
  if (!first) return {model.initial_state(bound.theory(0)), fmt::format("the model's own initial state (start={})", start)};
  if (start == "replica") return {*first, fmt::format("replica 0's initial overlaps (seed {}; start=replica)", settings.seed)};
  Eigen::VectorXd mean = *first;
  for (int k = 1; k < settings.seeds; ++k) mean += *model.replica_initial_state(static_cast<std::uint64_t>(k));
  mean /= settings.seeds;
  return {mean, fmt::format("the mean initial overlaps of the {} seeds' replicas (seed {}), as simulate's mean; start=replica: one draw",
                            settings.seeds, settings.seed)};
}

}  // namespace hdat
