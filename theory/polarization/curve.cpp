#include "hdat/polarization/curve.hpp"

#include <cmath>

#include "hdat/polarization/normalization.hpp"
#include "hdat/polarization/observables.hpp"

namespace hdat::polarization {

FlowResult integrate_flow(const Config& c, const FlowSystem& flow, const Eigen::VectorXd& x0, const std::vector<double>& times,
                          const IntegrateOptions& options) {
  FlowResult r = run_flow(flow.system(), x0, times.front(), times, event_conditions(c, flow), options);
  // Sign changes are events; weights that start outside the simplex (sum with mixed-sign logits) are
  // reported once at the start.
  if (c.normalization == Normalization::sum && flow.logits_offset() >= 0) {
    const Eigen::VectorXd a0 = x0.segment(flow.logits_offset(), c.T);
    for (int i = 0; i < c.T; ++i)
      if (a0(i) / a0.sum() < 0)
        r.events.insert(r.events.begin(), Event{"outside_simplex_at_start", i, times.front(), EventAction::report,
                                                "weight s_" + std::to_string(i) + " = a_" + std::to_string(i) + "/Σa is negative at t = 0", -1});
  }
  return r;
}

nlohmann::json flow_info(const Config& c, const FlowSystem& flow, const FlowResult& r) {
  nlohmann::json events = nlohmann::json::array();
  for (const auto& e : r.events) events.push_back(e.to_json());
  const char* equations = flow.kind() == FlowKind::full ? "dV/dt = -dL/dV, da/dt = -dL/da (full parameters)"
                          : c.loss == Loss::logistic    ? "du/dt = b γ s, da/dt = ρ γ Jᵀu (reduced, derivation.md §2)"
                                                        : "du/dt = s(b - u·s), dQ/dt = s wᵀ + w sᵀ, da/dt = ρ Jᵀw (reduced, §3)";
  return {{"flow", {{"kind", name(flow.kind())}, {"state_size", flow.size()}, {"equations", equations}}},
          {"solver", r.solver_json()},
          {"events", events}};
}

CurveResult theory_curve(const Config& c, const Instance& in) {
  CurveResult r;
  const auto flow = make_flow(c, in);
  // The flow starts at t = 0 whatever the first observation time (the time rule of hdat/core/harness.hpp).
  const bool start_reported = c.times.front() == 0.0;
  std::vector<double> times = c.times;
  if (!start_reported) times.insert(times.begin(), 0.0);
  r.flow = integrate_flow(c, *flow, flow->initial_state(), times, integrate_options(c, *flow));
  for (std::size_t k = start_reported ? 0 : 1; k < r.flow.t.size(); ++k)
    r.observations.push_back(observation(c, r.flow.t[k], flow->measure(r.flow.x[k])));
  r.ok = r.flow.summary.ok();
  r.info = flow_info(c, *flow, r.flow);
  r.info["instance"] = in.record(c);
  if (!r.observations.empty()) {
    const Observation& end = r.observations.back();
    const nlohmann::json limits = asymptotics(c, in, {end.t, static_cast<double>(end.top), end.eps_log2t(), end.z_minus_logt()});
    if (!limits.is_null()) r.info["asymptotics"] = limits;
  }
  return r;
}

double eps_log2t_limit(const Config& c) { return 2.0 * c.b() * (c.T - 1) / c.T; }

nlohmann::json asymptotics(const Config& c, const Instance& in, const LastObservation& last) {
  if (!(c.loss == Loss::logistic && c.normalization == Normalization::softmax && c.architecture == Architecture::value)) return nullptr;
  nlohmann::json j;
  Eigen::Index w = 0;
  in.u0.maxCoeff(&w);
  j["t"] = last.t;
  j["winner_argmax_u0"] = static_cast<int>(w);
  j["top_token"] = static_cast<int>(last.top);
  j["eps_log2t"] = last.eps_log2t;
  j["eps_log2t_limit"] = eps_log2t_limit(c);
  j["z_minus_logt"] = last.z_minus_logt;
  j["z_minus_logt_limit"] = std::log(c.b());
  j["note"] = "limits of the logistic softmax flow from a(0) = 0 (derivation.md §9); approached like 1/log t";
  return j;
}

}  // namespace hdat::polarization
