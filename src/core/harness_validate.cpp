// Theory against simulation for dynamics models (harness.hpp): trajectories over sizes, and the
// drift check term by term.
#include <fmt/format.h>

#include <cmath>
#include <map>

#include "hdat/core/harness.hpp"
#include "hdat/core/progress.hpp"
#include "hdat/core/statistics.hpp"
#include "hdat/core/output.hpp"

namespace hdat {

namespace {


// Quantity (observable or block column) -> the block whose scale it is judged on: an observable is
// its own block.
std::map<std::string, std::string> blocks_of(const std::vector<std::string>& observables, const StateLayout& layout) {
  std::map<std::string, std::string> out;
  for (const auto& o : observables) out[o] = o;
  const std::vector<std::string> columns = layout.columns();
  std::size_t k = 0;
  for (const Block& b : layout.blocks()) {
    const int listed = b.symmetric ? b.rows * (b.rows + 1) / 2 : b.size();
    for (int i = 0; i < listed; ++i) out[columns[k++]] = b.name;
  }
  return out;
}

struct SizeRun {
  Ensemble ensemble;
  ReplicatedTheory theory;
  double t_compare = 0;
  stats::MeanSe escape;
};

// The end of the comparison window: t_compare when set, else the first escape among the seeds, else
// the whole run.
double comparison_end(const DynamicsSettings& s, const Ensemble& e) {
  if (s.t_compare >= 0) return s.t_compare;
  double first = INFINITY;
  for (double t : e.escape_times)
    if (std::isfinite(t)) first = std::min(first, t);
  return std::isfinite(first) ? first : s.times.back();
}

stats::MeanSe escape_statistics(const Ensemble& e) {
  std::vector<double> escaped;
  for (double t : e.escape_times)
    if (std::isfinite(t)) escaped.push_back(t);
  stats::MeanSe s = stats::mean_se(escaped);
  if (escaped.empty()) s.mean = s.se = NAN;
  if (escaped.size() == 1) s.se = NAN;
  return s;
}

std::string criterion_text(const DynamicsSettings& s) {
  std::string text = fmt::format("|theory - simulation| <= {} * SE + {} * scale(block)", s.tolerance, s.rel_tolerance);
  if (s.abs_tolerance > 0) text += fmt::format(" + {}", s.abs_tolerance);
  text += fmt::format(" at every observed time t <= t_compare, {}", s.judge_every_size ? "at every size" : "at the finest size");
  text += " (t_compare: first plateau escape among the seeds unless set)";
  if (std::isfinite(s.min_order)) text += fmt::format("; and the gap shrinks with order >= {} between successive sizes", s.min_order);
  return text;
}

}  // namespace

// The steps of validate_trajectories: simulate and integrate per size, compare point by point, then
// the finite-size trend of the gap.
namespace trajectory_steps {
namespace {

std::vector<SizeRun> run_sizes(const DynamicsModel& model, const Params& p, const DynamicsSettings& s, const StateLayout& layout,
                               RunContext& ctx) {
  std::vector<SizeRun> runs;
  for (double size : s.validate_sizes) {
    Ensemble ens = run_ensemble(model, p, s, size, ctx);
    if (ens.finished == 0 || interrupted()) break;
    const Eigen::VectorXd x0 = measured_initial_state(ens, layout);
    ReplicatedTheory th = run_theory_replicas(model, p, x0, s.t_start, s.times, s.integrate, s.theory_replicas);
    const double t_cmp = comparison_end(s, ens);
    const stats::MeanSe esc = escape_statistics(ens);
    runs.push_back({std::move(ens), std::move(th), t_cmp, esc});
  }
  return runs;
}

// What is compared, the same at every size.
struct Compared {
  std::vector<std::string> quantities;          // the observables both sides have, then every block column
  std::map<std::string, std::string> block_of;  // quantity -> the block whose scale it is judged on
  std::vector<std::string> blocks;              // in order of first appearance
  // The finite-size gap is measured on the window common to every size, so that the fitted exponent
  // compares like with like.
  double t_common = INFINITY;
};

Compared compared_quantities(const DynamicsModel& model, const Params& p, const DynamicsSettings& s, const StateLayout& layout,
                             const std::vector<SizeRun>& runs) {
  std::vector<std::string> observables;
  if (!runs.empty()) {
    const Observables at_start = model.theory(p, 0)->observe(runs.front().theory.run.initial, s.t_start);
    for (const auto& name : at_start.names())
      if (runs.front().ensemble.mean.has_column(name)) observables.push_back(name);
  }
  Compared cmp;
  cmp.quantities = observables;
  for (const auto& c : layout.columns()) cmp.quantities.push_back(c);
  cmp.block_of = blocks_of(observables, layout);
  for (const auto& q : cmp.quantities)
    if (std::find(cmp.blocks.begin(), cmp.blocks.end(), cmp.block_of.at(q)) == cmp.blocks.end()) cmp.blocks.push_back(cmp.block_of.at(q));
  for (const auto& r : runs) cmp.t_common = std::min(cmp.t_common, r.t_compare);
  return cmp;
}

// The empty tables and the header of the summary.
void start_output(TrajectoryValidation& v, const std::string& sz, const Compared& cmp) {
  v.points = Table({sz, "t", "quantity", "theory", "simulation", "simulation_se", "theory_se", "deviation", "allowed", "agree"});
  v.escape = Table({sz, "log_" + sz, "escape_time", "escape_time_se", "seeds_escaped", "seeds"});
  std::vector<std::string> curve_cols = {sz, "t"};
  for (const auto& q : cmp.quantities) {
    curve_cols.push_back(q + "_theory");
    curve_cols.push_back(q + "_sim");
    curve_cols.push_back(q + "_sim_se");
  }
  v.curves = Table(curve_cols);
  v.summary = fmt::format("  {:>6} {:>6} {:>8}", sz, "seeds", "t_cmp");
  for (const auto& b : cmp.blocks) v.summary += fmt::format(" {:>10}", "gap " + b);
  v.summary += fmt::format(" {:>9} {:>8}\n", "max dev/allowed", "verdict");
}

std::string se_column(const std::string& q) { return q + "_se"; }

// Per block, the largest |simulated value| in the comparison window.
std::map<std::string, double> block_scales(const SizeRun& run, std::size_t rows, const Compared& cmp) {
  const Table& mean = run.ensemble.mean;
  std::map<std::string, double> scale;
  for (std::size_t r = 0; r < rows && mean.number(r, "t") <= run.t_compare; ++r)
    for (const auto& q : cmp.quantities) scale[cmp.block_of.at(q)] = std::max(scale[cmp.block_of.at(q)], std::fabs(mean.number(r, q)));
  return scale;
}

// One size against its theory, point by point.
struct SizeComparison {
  double worst = 0;  // largest |deviation| / allowed among the judged points
  int points = 0, agree = 0;
  std::map<std::string, std::pair<double, int>> gap;  // block -> (sum of deviation², points) on t <= t_common
  double rms_gap(const std::string& b) const {
    const auto g = gap.find(b);
    return g != gap.end() ? std::sqrt(g->second.first / g->second.second) : NAN;
  }
};

// Adds the size's rows to v.curves and v.points.
SizeComparison compare_size(const SizeRun& run, bool judged, const Compared& cmp, const DynamicsSettings& s, TrajectoryValidation& v) {
  const Ensemble& ens = run.ensemble;
  const Table& th = run.theory.run.table;
  const std::size_t n = std::min(th.rows(), ens.mean.rows());
  std::map<std::string, double> scale = block_scales(run, n, cmp);
  SizeComparison c;
  for (std::size_t r = 0; r < n; ++r) {
    const double t = ens.mean.number(r, "t");
    std::vector<double> crow = {ens.size, t};
    for (const auto& q : cmp.quantities) {
      crow.push_back(th.number(r, q));
      crow.push_back(ens.mean.number(r, q));
      crow.push_back(ens.mean.number(r, se_column(q)));
    }
    v.curves.add_row(crow);
    if (t > run.t_compare) continue;
    for (const auto& q : cmp.quantities) {
      const double vt = th.number(r, q), vs = ens.mean.number(r, q);
      const double se_s = ens.mean.number(r, se_column(q)), se_t = run.theory.se.number(r, q);
      const double dev = vt - vs;
      const double allowed = s.tolerance * std::hypot(se_s, se_t) + s.rel_tolerance * scale[cmp.block_of.at(q)] + s.abs_tolerance;
      const bool ok = std::fabs(dev) <= allowed;
      v.points.add_row(std::vector<Cell>{ens.size, t, q, vt, vs, se_s, se_t, dev, allowed, ok ? 1.0 : 0.0});
      if (judged) {
        c.worst = std::max(c.worst, std::fabs(dev) / allowed);
        ++c.points;
        c.agree += ok;
      }
      if (t <= cmp.t_common) {
        auto& g = c.gap[cmp.block_of.at(q)];
        g.first += dev * dev;
        g.second += 1;
      }
    }
  }
  return c;
}

// The rms gap of every block at every size, in size order.
struct GapsBySize {
  std::vector<double> sizes;
  std::map<std::string, std::vector<double>> gaps;
};

nlohmann::json size_record(const SizeRun& run, bool judged, const SizeComparison& c, nlohmann::json gap_rms, bool size_ok,
                           const std::string& sz) {
  const Ensemble& ens = run.ensemble;
  nlohmann::json record = {{sz, ens.size},
                           {"seeds", ens.finished},
                           {"t_compare", run.t_compare},
                           {"judged", judged},
                           {"points", c.points},
                           {"points_agreeing", c.agree},
                           {"max_deviation_over_allowed", c.worst},
                           {"gap_rms", std::move(gap_rms)},
                           {"escape_time_mean", number_or_null(run.escape.mean)},
                           {"escape_time_se", number_or_null(run.escape.se)},
                           {"seeds_escaped", run.escape.n},
                           {"theory_solver", run.theory.run.solver.to_json()},
                           {"simulation_seconds", ens.seconds},
                           {"agree", size_ok}};
  if (!ens.records.empty() && !ens.records.front().empty()) record["runs"] = ens.records;
  if (!run.theory.run.info.empty()) record["theory"] = run.theory.run.info;
  return record;
}

// One size: its rows in every table, its line of the summary, its gaps and its record. Returns
// whether it agrees (a size not judged always does).
bool add_size(const SizeRun& run, bool judged, const Compared& cmp, const DynamicsSettings& s, TrajectoryValidation& v,
              GapsBySize& gaps, nlohmann::json& per_size) {
  const Ensemble& ens = run.ensemble;
  v.escape.add_row({ens.size, std::log(ens.size), run.escape.mean, run.escape.se, static_cast<double>(run.escape.n),
                    static_cast<double>(ens.finished)});
  const SizeComparison c = compare_size(run, judged, cmp, s, v);
  const bool size_ok = !judged || (c.points > 0 && c.agree == c.points && run.theory.run.solver.ok());
  gaps.sizes.push_back(ens.size);
  nlohmann::json gap_json = nlohmann::json::object();
  v.summary += fmt::format("  {:>6g} {:>6} {:>8.3g}", ens.size, ens.finished, run.t_compare);
  for (const auto& b : cmp.blocks) {
    gaps.gaps[b].push_back(c.rms_gap(b));
    gap_json[b] = number_or_null(c.rms_gap(b));
    v.summary += fmt::format(" {:>10.2e}", c.rms_gap(b));
  }
  v.summary += fmt::format(" {:>9.2f} {:>8}\n", c.worst, judged ? (size_ok ? "agree" : "DISAGREE") : "(not judged)");
  per_size.push_back(size_record(run, judged, c, std::move(gap_json), size_ok, s.size_name));
  return size_ok;
}

// Finite-size trend of the gap, and (when asked) its order of convergence between successive sizes.
struct GapTrend {
  nlohmann::json exponents = nlohmann::json::object(), orders = nlohmann::json::object();
  std::string exponent_line;
  bool order_ok = true;
};

GapTrend gap_trend(const Compared& cmp, GapsBySize& by_size, const DynamicsSettings& s) {
  GapTrend trend;
  const std::vector<double>& sizes = by_size.sizes;
  for (const auto& b : cmp.blocks) {
    const std::vector<double>& gaps = by_size.gaps[b];
    const double slope = stats::loglog_slope(sizes, gaps);
    trend.exponents[b] = number_or_null(slope);
    trend.exponent_line += fmt::format("{}{:.2f} ({})", trend.exponent_line.empty() ? "" : ", ", slope, b);
    trend.orders[b] = nlohmann::json::array();
    for (std::size_t k = 0; k + 1 < sizes.size(); ++k) {
      const double g0 = gaps[k], g1 = gaps[k + 1];
      const double order = std::log(g0 / g1) / std::fabs(std::log(sizes[k] / sizes[k + 1]));
      trend.orders[b].push_back(number_or_null(order));
      if (std::isfinite(s.min_order) && g1 > 1e-9) trend.order_ok = trend.order_ok && order >= s.min_order;  // else already at round-off
    }
  }
  return trend;
}

// Slope of the mean plateau escape time against log size, over the sizes where some seed escaped.
double escape_time_slope(const Table& escape, const std::string& sz) {
  std::vector<double> log_sizes, escapes;
  for (std::size_t r = 0; r < escape.rows(); ++r)
    if (std::isfinite(escape.number(r, "escape_time")))
      log_sizes.push_back(escape.number(r, "log_" + sz)), escapes.push_back(escape.number(r, "escape_time"));
  return stats::linear_slope(log_sizes, escapes);
}

}  // namespace
}  // namespace trajectory_steps

TrajectoryValidation validate_trajectories(const DynamicsModel& model, const Params& p, RunContext& ctx) {
  using namespace trajectory_steps;
  const DynamicsSettings s = model.settings(p);
  const StateLayout layout = model.theory(p, 0)->layout();
  TrajectoryValidation v;
  const std::vector<SizeRun> runs = run_sizes(model, p, s, layout, ctx);
  v.complete = runs.size() == s.validate_sizes.size() && !interrupted();
  const Compared cmp = compared_quantities(model, p, s, layout, runs);
  const std::string& sz = s.size_name;
  start_output(v, sz, cmp);

  GapsBySize gaps;
  nlohmann::json per_size = nlohmann::json::array();
  bool all_agree = true;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const bool judged = s.judge_every_size || k + 1 == runs.size();
    const bool size_ok = add_size(runs[k], judged, cmp, s, v, gaps, per_size);
    all_agree = all_agree && size_ok;
  }
  const GapTrend trend = gap_trend(cmp, gaps, s);
  const double escape_slope = escape_time_slope(v.escape, sz);

  v.agree = all_agree && trend.order_ok && v.complete && !runs.empty();
  v.record = {{"mode", "trajectory"},
              {"verdict", v.agree ? "agree" : "disagree"},
              {"criterion", criterion_text(s)},
              {"size", sz},
              {"per_size", per_size},
              {"gap_exponent", trend.exponents},
              {"gap_order", trend.orders},
              {"gap_window", number_or_null(cmp.t_common)},
              {"gap_exponent_expected", s.gap_exponent_expected},
              {"escape_time_slope_vs_log_size", number_or_null(escape_slope)}};
  if (!trend.order_ok) v.record["failure"] = fmt::format("the gap does not shrink with order >= {}", s.min_order);
  v.summary += fmt::format("  gap ~ {}^p on t <= {:.3g}: p = {}; expected about {:g}\n", sz, cmp.t_common, trend.exponent_line,
                           s.gap_exponent_expected);
  if (std::isfinite(escape_slope)) v.summary += fmt::format("  plateau escape time vs log {}: slope {:.2f}\n", sz, escape_slope);
  v.summary += fmt::format("  verdict: {}\n", v.agree ? "theory and simulation AGREE" : "theory and simulation DISAGREE");
  return v;
}

DriftValidation validate_drift(const DynamicsModel& model, const Params& p, RunContext& ctx) {
  const DynamicsSettings s = model.settings(p);
  auto theory = model.theory(p, 0);
  const StateLayout& layout = theory->layout();
  auto system = model.system(p, s.drift_size, 0);
  DriftValidation v;
  v.rows = Table({"t", "term", "entry", "theory", "theory_se", "simulation", "simulation_se", "z", "agree"});
  // Only the entries the output lists (i <= j of symmetric blocks).
  std::vector<int> entries;
  for (const Block& b : layout.blocks())
    for (int j = 0; j < b.cols; ++j)
      for (int i = 0; i < b.rows; ++i)
        if (!b.symmetric || i <= j) entries.push_back(b.offset + i + j * b.rows);
  bool all_ok = true;
  double worst = 0, worst_ratio = 0;
  Progress progress("drift check", static_cast<long>(s.drift_times.size()) * s.drift_samples, !ctx.quiet);
  for (double t_check : s.drift_times) {
    system->advance_to(t_check);
    const Eigen::VectorXd x = system->state();
    const DriftTerms th = theory->terms(x);
    std::vector<stats::Moments> sim(th.size(), stats::Moments(layout.size()));
    for (long i = 0; i < s.drift_samples; ++i) {
      const DriftTerms inc = system->increment();
      for (std::size_t k = 0; k < th.size(); ++k) sim[k].add(inc.value(k));
      if (i % 256 == 255) progress.advance(256);
    }
    for (std::size_t k = 0; k < th.size(); ++k) {
      const Eigen::VectorXd m = sim[k].mean(), e = sim[k].se();
      for (int c : entries) {
        const double tv = th.value(k)(c), tse = th.se(k)(c);
        if (tv == 0 && tse == 0 && m(c) == 0 && e(c) == 0) continue;  // a term that cannot touch this entry
        const double se = std::hypot(tse, e(c));
        const double z = se > 0 ? (tv - m(c)) / se : (tv == m(c) ? 0.0 : NAN);
        const double allowed = s.tolerance * se + s.drift_abs_tolerance;
        const bool ok = std::fabs(tv - m(c)) <= allowed;
        all_ok = all_ok && ok;
        if (std::isfinite(z)) worst = std::max(worst, std::fabs(z));
        worst_ratio = std::max(worst_ratio, std::fabs(tv - m(c)) / allowed);
        v.rows.add_row(std::vector<Cell>{system->time(), th.name(k), layout.component_name(c), tv, tse, m(c), e(c), z, ok ? 1.0 : 0.0});
      }
    }
    v.summary += fmt::format("  t = {:<6g} largest |z| so far {:.2f}\n", system->time(), worst);
    if (interrupted()) break;
  }
  progress.finish();
  v.complete = !interrupted();
  v.agree = all_ok && v.complete;
  v.record = {{"mode", "drift"},
              {s.size_name, s.drift_size},
              {"samples", s.drift_samples},
              {"verdict", v.agree ? "agree" : "disagree"},
              {"criterion", fmt::format("|theory - mean of one-step increments / dt| <= {} combined standard errors{}, for every "
                                        "entry of every term of the drift",
                                        s.tolerance, s.drift_abs_tolerance > 0 ? fmt::format(" + {:g}", s.drift_abs_tolerance) : "")},
              {"max_abs_z", worst},
              {"max_deviation_over_allowed", number_or_null(worst_ratio)}};
  if (s.drift_abs_tolerance > 0) v.summary += fmt::format("  largest |theory - increment| / allowed = {:.3g}\n", worst_ratio);
  v.summary += fmt::format("  largest |z| = {:.2f} (allowed {}): {}\n", worst, s.tolerance, v.agree ? "drift AGREES term by term" : "drift DISAGREES");
  return v;
}

}  // namespace hdat
