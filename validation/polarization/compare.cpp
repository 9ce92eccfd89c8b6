#include "hdat/polarization/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace hdat::polarization {

namespace {

std::vector<double> row_block(const Table& t, std::size_t r, const std::string& prefix, int T) {
  std::vector<double> v(T);
  for (int i = 0; i < T; ++i) v[i] = t.number(r, fmt::format("{}_{}", prefix, i));
  return v;
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

double max_abs_diff(const std::vector<double>& x, const std::vector<double>& y) {
  double m = 0;
  for (std::size_t i = 0; i < x.size(); ++i) m = std::max(m, std::fabs(x[i] - y[i]));
  return m;
}

// Row of `flow` whose t equals t (relative 1e-12), or -1.
long find_row(const Table& flow, double t) {
  const std::vector<double> ts = flow.numbers("t");
  auto it = std::lower_bound(ts.begin(), ts.end(), t * (1 - 1e-12) - 1e-300);
  if (it != ts.end() && std::fabs(*it - t) <= 1e-12 * std::max(1.0, std::fabs(t))) return it - ts.begin();
  return -1;
}

}  // namespace

std::vector<double> on_step_grid(const std::vector<double>& times, double lr) {
  std::vector<double> out;
  for (long k : steps_of(times, lr)) out.push_back(static_cast<double>(k) * lr);
  return out;
}

Gap gap_between(const Config& c, const Table& gd, const Table& flow, double t_limit) {
  Gap g;
  for (std::size_t r = 0; r < gd.rows(); ++r) {
    const double t = gd.number(r, "t");
    if (t > t_limit) break;
    const long f = find_row(flow, t);
    if (f < 0) continue;
    const auto s1 = row_block(gd, r, "s", c.T), s2 = row_block(flow, f, "s", c.T);
    const auto a1 = row_block(gd, r, "a", c.T), a2 = row_block(flow, f, "a", c.T);
    const auto u1 = row_block(gd, r, "u", c.T), u2 = row_block(flow, f, "u", c.T);
    const double gs = max_abs_diff(s1, s2);
    const double ga = max_abs_diff(a1, a2) / (1 + max_abs(a2));
    const double gu = max_abs_diff(u1, u2) / (1 + max_abs(u2));
    g.s = std::max(g.s, gs);
    g.a = std::max(g.a, ga);
    g.u = std::max(g.u, gu);
    const double tot = std::max({gs, ga, gu});
    if (!(tot <= g.total)) g.total = tot, g.t_worst = t;  // NaN counts as worst
    ++g.compared;
  }
  if (g.compared == 0) g.total = g.s = g.a = g.u = std::numeric_limits<double>::quiet_NaN();
  return g;
}

Validation validate(const Config& c0, const Instance& in, bool quiet) {
  Validation v;
  Config c = c0;
  c.times = on_step_grid(c0.times, c0.lr);  // whole multiples of the largest step
  v.theory = theory_curve(c, in);
  const bool ended_early = v.theory.flow.ended_by_event;
  const double t_limit = ended_early ? v.theory.flow.summary.t_reached : std::numeric_limits<double>::infinity();
  if (!v.theory.ok) v.failures.push_back("the flow integration failed: " + v.theory.flow.summary.brief());

  v.convergence = Table({"lr", "gap", "gap_s", "gap_a", "gap_u", "t_worst", "order"});
  for (int k = 0; k <= c.halvings; ++k) {
    const double eta = c.lr / std::ldexp(1.0, k);
    GdOptions o;
    o.lr = eta;
    o.times = c.times;
    o.quiet = quiet;
    v.lrs.push_back(eta);
    v.runs.push_back(gradient_descent(c, in, o));
    v.gaps.push_back(gap_between(c, v.runs.back().table, v.theory.table, t_limit));
  }
  for (std::size_t k = 0; k + 1 < v.gaps.size(); ++k) v.orders.push_back(std::log2(v.gaps[k].total / v.gaps[k + 1].total));
  for (std::size_t k = 0; k < v.gaps.size(); ++k)
    v.convergence.add_row(std::vector<double>{v.lrs[k], v.gaps[k].total, v.gaps[k].s, v.gaps[k].a, v.gaps[k].u, v.gaps[k].t_worst,
                           k == 0 ? std::numeric_limits<double>::quiet_NaN() : v.orders[k - 1]});

  // Verdict.
  constexpr double round_off_gap = 1e-9;
  const Gap& last = v.gaps.back();
  if (!(last.total <= c.tolerance))
    v.failures.push_back(fmt::format("gap {:.3g} at the smallest step η = {:g} exceeds the tolerance {:g}", last.total, v.lrs.back(), c.tolerance));
  for (std::size_t k = 0; k < v.orders.size(); ++k)
    if (!(v.gaps[k + 1].total < round_off_gap) && !(v.orders[k] >= c.min_order))
      v.failures.push_back(fmt::format("the gap does not shrink like η: gap({:g}) = {:.3g}, gap({:g}) = {:.3g}, order {:.2f} < {:g}",
                                       v.lrs[k], v.gaps[k].total, v.lrs[k + 1], v.gaps[k + 1].total, v.orders[k], c.min_order));
  for (std::size_t k = 0; k < v.runs.size(); ++k) {
    const GdRun& r = v.runs[k];
    const auto& inv = r.invariants;
    const double steps = static_cast<double>(r.steps_done);
    double amax = 0;
    for (std::size_t i = 0; i < r.table.rows(); ++i) amax = std::max(amax, max_abs(row_block(r.table, i, "a", c.T)));
    if (!r.finite) {
      const double t_bad = r.events.empty() ? 0.0 : r.events.back().value("t", 0.0);
      if (t_bad <= t_limit) v.failures.push_back(fmt::format("gradient descent at η = {:g} became non-finite at t = {:g}", v.lrs[k], t_bad));
    }
    if (inv.contains("drift_residual_u_a") && !(inv["drift_residual_u_a"].get<double>() <= 1e-8))
      v.failures.push_back(fmt::format("drift check: the gradient-descent increment of (u, a) differs from η × the reduced right-hand side "
                                       "by {:.3g} (relative) at η = {:g}", inv["drift_residual_u_a"].get<double>(), v.lrs[k]));
    if (inv.contains("drift_residual_Q") && !(inv["drift_residual_Q"].get<double>() <= 1e-8 * (1 + amax)))
      v.failures.push_back(fmt::format("drift check: ΔQ/η − (s wᵀ + w sᵀ) − η GᵀG = {:.3g} at η = {:g}", inv["drift_residual_Q"].get<double>(), v.lrs[k]));
    const double roundoff_bound = 1e-12 + 1e-15 * steps * (1 + amax);
    if (inv.contains("mean_a_drift") && !(inv["mean_a_drift"].get<double>() <= roundoff_bound))
      v.failures.push_back(fmt::format("mean(a) drifted by {:.3g} at η = {:g} (conserved: 1ᵀC(s) = 0)", inv["mean_a_drift"].get<double>(), v.lrs[k]));
    if (inv.contains("V_minus_V0_orthogonal_to_beta")) {
      double vmax = 0;
      for (std::size_t i = 0; i < r.table.rows(); ++i) vmax = std::max(vmax, r.table.number(i, "V_norm"));
      if (!(inv["V_minus_V0_orthogonal_to_beta"].get<double>() <= 1e-12 + 1e-15 * steps * (1 + vmax)))
        v.failures.push_back(fmt::format("V − V(0) left span(β*) by {:.3g} at η = {:g}", inv["V_minus_V0_orthogonal_to_beta"].get<double>(), v.lrs[k]));
    }
    if (inv.contains("energy_identity_residual") && !(inv["energy_identity_residual"].get<double>() <= 1e-12))
      v.failures.push_back(fmt::format("|V|² identity violated by {:.3g} at η = {:g}", inv["energy_identity_residual"].get<double>(), v.lrs[k]));
  }
  v.agree = v.failures.empty();

  // Theory against gradient descent at the smallest step, per time.
  const Table& gd = v.runs.back().table;
  v.comparison = Table({"t", "s_top_flow", "s_top_gd", "loss_flow", "loss_gd", "max_abs_ds", "max_abs_da", "max_abs_du"});
  for (std::size_t r = 0; r < gd.rows(); ++r) {
    const double t = gd.number(r, "t");
    const long f = find_row(v.theory.table, t);
    if (f < 0 || t > t_limit) continue;
    const int top = static_cast<int>(v.theory.table.number(f, "top"));
    const auto s1 = row_block(gd, r, "s", c.T), s2 = row_block(v.theory.table, f, "s", c.T);
    v.comparison.add_row(std::vector<double>{t, s2[top], s1[top], v.theory.table.number(f, "loss"), gd.number(r, "loss"), max_abs_diff(s1, s2),
                          max_abs_diff(row_block(gd, r, "a", c.T), row_block(v.theory.table, f, "a", c.T)),
                          max_abs_diff(row_block(gd, r, "u", c.T), row_block(v.theory.table, f, "u", c.T))});
  }

  nlohmann::json gdj = nlohmann::json::array();
  for (std::size_t k = 0; k < v.runs.size(); ++k) {
    auto j = v.runs[k].to_json();
    j["lr"] = v.lrs[k];
    j["gap"] = v.gaps[k].total;
    gdj.push_back(j);
  }
  v.info["solver"] = v.theory.info["solver"];
  v.info["events"] = v.theory.info["events"];
  v.info["instance"] = v.theory.info["instance"];
  v.info["flow"] = v.theory.info["flow"];
  v.info["gradient_descent"] = gdj;
  v.info["verdict"] = {{"agree", v.agree},
                       {"criterion", fmt::format("gap(η_min) <= {:g}, order log2(gap(η)/gap(η/2)) >= {:g} (unless gap < 1e-9), "
                                                 "drift check and conservation laws at round-off, finite runs",
                                                 c.tolerance, c.min_order)},
                       {"gaps", [&] {
                          std::vector<double> g;
                          for (const auto& x : v.gaps) g.push_back(x.total);
                          return g;
                        }()},
                       {"orders", v.orders},
                       {"failures", v.failures}};
  if (ended_early) v.info["verdict"]["compared_until"] = t_limit;

  std::string s = fmt::format("validate polarization ({} loss, {}, {} flow): {}\n", name(c.loss), name(c.normalization),
                              name(v.theory.flow.t.empty() ? c.flow : c.flow), v.agree ? "AGREE" : "DISAGREE");
  for (std::size_t k = 0; k < v.gaps.size(); ++k)
    s += fmt::format("  η = {:<10g} gap = {:.3e} (s {:.2e}, a {:.2e}, u {:.2e}){}\n", v.lrs[k], v.gaps[k].total, v.gaps[k].s, v.gaps[k].a,
                     v.gaps[k].u, k ? fmt::format("  order {:.2f}", v.orders[k - 1]) : "");
  for (const auto& f : v.failures) s += "  - " + f + "\n";
  v.summary = s;
  return v;
}

}  // namespace hdat::polarization
