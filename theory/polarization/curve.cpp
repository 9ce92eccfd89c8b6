#include "hdat/polarization/curve.hpp"

#include <cmath>

#include "hdat/polarization/normalization.hpp"
#include "hdat/polarization/observables.hpp"
#include "hdat/polarization/reduced.hpp"

namespace hdat::polarization {

CurveResult theory_curve(const Config& c, const Instance& in) {
  CurveResult r;
  auto flow = make_flow(c, in);
  const auto conds = event_conditions(c, *flow);
  const IntegrateOptions opt = integrate_options(c, *flow);
  r.flow = run_flow(flow->system(), flow->initial_state(), 0.0, c.times, conds, opt);
  // Sign changes are events; weights that start outside the simplex (sum, l1 with mixed-sign logits
  // are fine, sum is not) are reported once at t = 0.
  if (c.normalization == Normalization::sum && flow->logits_offset() >= 0) {
    const Eigen::VectorXd x0 = flow->initial_state();
    const Eigen::VectorXd a0 = x0.segment(flow->logits_offset(), c.T);
    for (int i = 0; i < c.T; ++i)
      if (a0(i) / a0.sum() < 0)
        r.flow.events.insert(r.flow.events.begin(),
                             Event{"outside_simplex_at_start", i, 0.0, EventAction::report,
                                   "weight s_" + std::to_string(i) + " = a_" + std::to_string(i) + "/Σa is negative at t = 0", -1});
  }
  r.table = Table(observable_columns(c));
  for (std::size_t k = 0; k < r.flow.t.size(); ++k) r.table.add_row(observable_row(c, r.flow.t[k], flow->measure(r.flow.x[k])));
  r.ok = r.flow.summary.ok();
  r.info["flow"] = {{"kind", name(flow->kind())}, {"state_size", flow->size()},
                    {"equations", flow->kind() == FlowKind::full ? "dV/dt = -dL/dV, da/dt = -dL/da (full parameters)"
                                  : c.loss == Loss::logistic ? "du/dt = b γ s, da/dt = ρ γ Jᵀu (reduced, derivation.md §2)"
                                                             : "du/dt = s(b - u·s), dQ/dt = s wᵀ + w sᵀ, da/dt = ρ Jᵀw (reduced, §3)"}};
  r.info["solver"] = r.flow.solver_json();
  nlohmann::json ev = nlohmann::json::array();
  for (const auto& e : r.flow.events) ev.push_back(e.to_json());
  r.info["events"] = ev;
  r.info["instance"] = in.record(c);
  if (c.loss == Loss::logistic && c.normalization == Normalization::softmax && c.architecture == Architecture::value)
    r.info["asymptotics"] = asymptotics(c, in, r.table);
  return r;
}

nlohmann::json asymptotics(const Config& c, const Instance& in, const Table& table) {
  nlohmann::json j;
  if (table.empty()) return j;
  const std::size_t last = table.rows() - 1;
  Eigen::Index w = 0;
  in.u0.maxCoeff(&w);
  j["t"] = table.number(last, "t");
  j["winner_argmax_u0"] = static_cast<int>(w);
  j["top_token"] = static_cast<int>(table.number(last, "top"));
  j["eps_log2t"] = table.number(last, "eps_log2t");
  j["eps_log2t_limit"] = 2.0 * c.b() * (c.T - 1) / c.T;
  j["z_minus_logt"] = table.number(last, "z_minus_logt");
  j["z_minus_logt_limit"] = std::log(c.b());
  j["note"] = "limits of the logistic softmax flow from a(0) = 0 (derivation.md §9); approached like 1/log t";
  return j;
}

}  // namespace hdat::polarization
