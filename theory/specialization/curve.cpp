#include "hdat/specialization/curve.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <tuple>

#include "hdat/core/harness.hpp"
#include "hdat/core/progress.hpp"
#include "hdat/specialization/bayes.hpp"

namespace hdat::specialization {

nlohmann::json Events::to_json() const {
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json heads = nlohmann::json::array();
  for (double t : head_split_time) heads.push_back(num(t));
  return {{"plateau_end", num(plateau_end)},
          {"plateau_risk", num(plateau_risk)},
          {"head_specialization_time", heads},
          {"criterion", "head h specialises when |M_h - mean_h' M_h'| passes split_threshold; the plateau ends at the first one"}};
}

std::vector<EventFunction> specialization_events(int H, int F, double threshold) {
  StateLayout m;
  m.add("M", H, F);  // M leads every state of the model (Config::layout)
  // Head h's distance from the mean head: its specialisation.
  auto distance = [m](const Eigen::VectorXd& x, int h) {
    const auto M = m.view(x, "M");
    return (M.row(h) - M.colwise().mean()).norm();
  };
  std::vector<EventFunction> events;
  events.push_back({"plateau_end", [distance, H, threshold](double, const Eigen::VectorXd& x) {
                      double widest = 0;
                      for (int h = 0; h < H; ++h) widest = std::max(widest, distance(x, h));
                      return widest - threshold;
                    }, false, +1});
  for (int h = 0; h < H; ++h)
    events.push_back({fmt::format("head_{}_specialises", h), [distance, h, threshold](double, const Eigen::VectorXd& x) {
                        return distance(x, h) - threshold;
                      }, false, +1});
  return events;
}

Events detect_events(const hdat::Trajectory& run, int H, int F, double threshold) {
  Events ev;
  for (const EventFunction& e : specialization_events(H, F, threshold)) {
    const double t = sampled_event_time(e, run);
    if (e.name == "plateau_end") ev.plateau_end = t;
    else ev.head_split_time.push_back(t);
  }
  const auto risk_index = run.observable("risk");
  if (std::isfinite(ev.plateau_end) && risk_index) {
    const auto risk = [&](std::size_t r) { return run.quantity(r, *risk_index).value; };
    for (std::size_t r = 1; r < run.size(); ++r)
      if (run.t(r) >= ev.plateau_end) {
        const double u = (ev.plateau_end - run.t(r - 1)) / (run.t(r) - run.t(r - 1));
        ev.plateau_risk = risk(r - 1) + u * (risk(r) - risk(r - 1));
        break;
      }
    if (std::isnan(ev.plateau_risk)) ev.plateau_risk = risk(0);
  }
  return ev;
}

Events located_events(const IntegrateSummary& solver, const OrderParameterFlow& flow) {
  Events ev;
  if (const LocatedEvent* e = solver.first_event("plateau_end")) {
    ev.plateau_end = e->t;
    ev.plateau_risk = flow.observe(e->x, e->t)["risk"].value;
  }
  for (int h = 0; h < flow.setup().H; ++h) {
    const LocatedEvent* e = solver.first_event(fmt::format("head_{}_specialises", h));
    ev.head_split_time.push_back(e ? e->t : std::numeric_limits<double>::quiet_NaN());
  }
  return ev;
}

std::vector<PruneRow> prune_heads(const OrderParameterFlow& flow, const Eigen::MatrixXd& M, const Eigen::MatrixXd& R,
                                  const Eigen::VectorXd& b) {
  const int H = static_cast<int>(M.rows());
  std::vector<PruneRow> rows;
  if (H <= 8) {
    // Exhaustive: the best subset of every size.
    std::vector<PruneRow> best(static_cast<std::size_t>(H + 1));
    for (auto& b : best) b.risk = INFINITY;
    for (int mask = 1; mask < (1 << H); ++mask) {
      std::vector<int> kept;
      for (int h = 0; h < H; ++h)
        if (mask & (1 << h)) kept.push_back(h);
      const auto [r, se] = flow.risk_with_heads(M, R, b, kept);
      PruneRow& best_of_size = best[kept.size()];
      if (r < best_of_size.risk) best_of_size = {static_cast<int>(kept.size()), r, se, kept};
    }
    for (int k = H; k >= 1; --k) rows.push_back(best[static_cast<std::size_t>(k)]);
    return rows;
  }
  std::vector<int> kept(static_cast<std::size_t>(H));
  for (int h = 0; h < H; ++h) kept[static_cast<std::size_t>(h)] = h;
  auto [r0, se0] = flow.risk_with_heads(M, R, b, kept);
  rows.push_back({H, r0, se0, kept});
  while (kept.size() > 1) {
    PruneRow best{0, INFINITY, 0, {}};
    for (std::size_t i = 0; i < kept.size(); ++i) {
      std::vector<int> trial = kept;
      trial.erase(trial.begin() + static_cast<long>(i));
      const auto [r, se] = flow.risk_with_heads(M, R, b, trial);
      if (r < best.risk) best = {static_cast<int>(trial.size()), r, se, trial};
    }
    kept = best.heads;
    rows.push_back(best);
  }
  return rows;
}

std::vector<double> observation_times(const Params& p) { return standard_times(p); }

FlowOptions flow_options(const Params& p, int threads) {
  FlowOptions o;
  o.samples = p.integer("mc_samples");
  o.sampling = sampling_from_name(p.text("sampling"));
  o.seed = static_cast<std::uint64_t>(p.integer("seed"));
  o.threads = threads;
  o.break_term = p.text("break_term");
  return o;
}

IntegrateOptions integrate_options(const Params& p, const StateLayout& layout) {
  IntegrateOptions o;
  o.rtol = p.real("rtol");
  o.atol = p.real("atol");
  o.stepper = stepper_from_name(p.text("stepper"));
  o.divergence = 1e6;  // overlaps of unit-scale spikes: anything this large is a blow-up
  o.component_name = [layout](int k) { return layout.component_name(k); };
  return o;
}

FlowRun integrate_flow(const OrderParameterFlow& flow, const Eigen::MatrixXd& M0, const Eigen::MatrixXd& R0,
                       const std::vector<double>& times, const IntegrateOptions& options) {
  return integrate_flow(flow, pack_state(flow.setup(), M0, R0), times, options);
}

FlowRun integrate_flow(const OrderParameterFlow& flow, const Eigen::VectorXd& x0, const std::vector<double>& times,
                       const IntegrateOptions& options) {
  const StateLayout& layout = flow.layout();
  TheoryRun run = theory_observed(flow, x0, 0.0, times, options);  // x0 at t = 0, whatever the first time
  const double psd = worst_psd_violation(run.trajectory);
  return {std::move(run.trajectory), run.solver, layout.view(run.final, "M"), layout.view(run.final, "R"), flow.setup().bias_in(run.final), psd};
}

namespace {
// The most negative eigenvalue of R − M Mᵀ at state x (0 when PSD).
double psd_violation(const StateLayout& layout, const Eigen::VectorXd& x) {
  const Eigen::MatrixXd M = layout.view(x, "M"), R = layout.view(x, "R");
  double low = 0;
  psd_sqrt(R - M * M.transpose(), &low);
  return std::min(0.0, low);
}
}  // namespace

double worst_psd_violation(const hdat::Trajectory& run) {
  double worst = 0;
  for (std::size_t r = 0; r < run.size(); ++r) worst = std::min(worst, psd_violation(run.layout(), run.state(r)));
  return worst;
}

std::string heads_text(const PruneRow& row) {
  std::string heads;
  for (int h : row.heads) heads += (heads.empty() ? "" : " ") + std::to_string(h);
  return heads;
}

CurveResults curve_results(const Params& p, const Config& s, const OrderParameterFlow& flow, const TheoryRun& run) {
  CurveResults r;
  std::tie(r.bayes, r.bayes_se) = bayes_risk(s, std::max<long>(p.integer("mc_samples"), 20000), sampling_from_name(p.text("sampling")), s.seed, 0);
  r.events = located_events(run.solver, flow);  // the core located specialization_events on the dense output
  r.theory = {{"samples", flow.samples().size()},
              {"sampling", sampling_name(flow.samples().kind())},
              {"head_permutations", flow.permutations()},
              {"evaluations_per_expectation", flow.evaluations_per_expectation()},
              {"worst_psd_violation", worst_psd_violation(run.trajectory)}};
  const std::size_t n = run.trajectory.size();
  if (p.boolean("prune") && run.solver.ok() && n) {
    const Eigen::VectorXd& x = run.trajectory.state(n - 1);
    r.prune = prune_heads(flow, flow.layout().view(x, "M"), flow.layout().view(x, "R"), s.bias_in(x));
  }
  return r;
}

void add_curve_results(const Config& s, const CurveResults& r, const TheoryRun& run, RunOutput& out) {
  out.info["theory"] = r.theory;
  out.info["bayes_risk"] = r.bayes;
  out.info["bayes_risk_se"] = r.bayes_se;
  out.info["events"].update(r.events.to_json());
  out.info["seeds"] = {{"seed", s.seed}, {"streams", "initial asymmetry: (seed, 0, 6); theory samples: (seed, 0, 11); Bayes risk: (seed, 0, 12)"}};
  const std::size_t n = run.trajectory.size();
  const double final_risk = n ? run.trajectory.observed(n - 1, "risk").value : NAN;
  out.summary += fmt::format("  Bayes risk         {:.6g} ± {:.2g} (excess of the final risk {:.4g})\n", r.bayes, r.bayes_se, final_risk - r.bayes);
  if (!r.prune) return;
  Table pt({"kept_heads", "risk", "risk_se", "risk_increase", "heads"});
  nlohmann::json pj = nlohmann::json::array();
  const double full = r.prune->front().risk;
  for (const auto& row : *r.prune) {
    pt.add_row({static_cast<double>(row.kept), row.risk, row.risk_se, row.risk - full, heads_text(row)});
    pj.push_back({{"kept_heads", row.kept}, {"risk", row.risk}, {"risk_se", row.risk_se}, {"heads", row.heads}});
  }
  out.tables["prune.csv"] = pt;
  out.info["prune"] = pj;
  out.summary += "  pruning            ";
  for (const auto& row : *r.prune) out.summary += fmt::format("{} heads: {:.4f}  ", row.kept, row.risk);
  out.summary += "\n";
}

}  // namespace hdat::specialization
