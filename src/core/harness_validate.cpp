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

TrajectoryValidation validate_trajectories(const DynamicsModel& model, const Params& p, RunContext& ctx) {
  const DynamicsSettings s = model.settings(p);
  const StateLayout layout = model.theory(p, 0)->layout();
  TrajectoryValidation v;

  // Runs and theories per size.
  std::vector<SizeRun> runs;
  for (double size : s.validate_sizes) {
    Ensemble ens = run_ensemble(model, p, s, size, ctx);
    if (ens.finished == 0 || interrupted()) break;
    const Eigen::VectorXd x0 = measured_initial_state(ens, layout);
    ReplicatedTheory th = run_theory_replicas(model, p, x0, s.times, s.integrate, s.theory_replicas);
    const double t_cmp = comparison_end(s, ens);
    const stats::MeanSe esc = escape_statistics(ens);
    runs.push_back({std::move(ens), std::move(th), t_cmp, esc});
  }
  v.complete = runs.size() == s.validate_sizes.size() && !interrupted();

  // Quantities compared: the observables both sides have, then every block column.
  std::vector<std::string> observables;
  if (!runs.empty()) {
    const Observables at_start = model.theory(p, 0)->observe(runs.front().theory.run.initial, s.times.front());
    for (const auto& name : at_start.names())
      if (runs.front().ensemble.mean.has_column(name)) observables.push_back(name);
  }
  std::vector<std::string> quantities = observables;
  for (const auto& c : layout.columns()) quantities.push_back(c);
  const auto block_of = blocks_of(observables, layout);
  auto se_column = [&](const std::string& q) { return q + "_se"; };

  const std::string& sz = s.size_name;
  v.points = Table({sz, "t", "quantity", "theory", "simulation", "simulation_se", "theory_se", "deviation", "allowed", "agree"});
  v.escape = Table({sz, "log_" + sz, "escape_time", "escape_time_se", "seeds_escaped", "seeds"});
  std::vector<std::string> curve_cols = {sz, "t"};
  for (const auto& q : quantities) {
    curve_cols.push_back(q + "_theory");
    curve_cols.push_back(q + "_sim");
    curve_cols.push_back(q + "_sim_se");
  }
  v.curves = Table(curve_cols);

  // The finite-size gap is measured on the window common to every size, so that the fitted exponent
  // compares like with like.
  double t_common = INFINITY;
  for (const auto& r : runs) t_common = std::min(t_common, r.t_compare);

  std::vector<std::string> block_names;
  for (const auto& q : quantities)
    if (std::find(block_names.begin(), block_names.end(), block_of.at(q)) == block_names.end()) block_names.push_back(block_of.at(q));
  std::map<std::string, std::vector<double>> gaps;
  std::vector<double> sizes;
  nlohmann::json per_size = nlohmann::json::array();
  bool all_agree = true;
  v.summary = fmt::format("  {:>6} {:>6} {:>8}", sz, "seeds", "t_cmp");
  for (const auto& b : block_names) v.summary += fmt::format(" {:>10}", "gap " + b);
  v.summary += fmt::format(" {:>9} {:>8}\n", "max dev/allowed", "verdict");

  for (std::size_t k = 0; k < runs.size(); ++k) {
    const SizeRun& run = runs[k];
    const Ensemble& ens = run.ensemble;
    const Table& th = run.theory.run.table;
    const bool judged = s.judge_every_size || k + 1 == runs.size();
    v.escape.add_row({ens.size, std::log(ens.size), run.escape.mean, run.escape.se, static_cast<double>(run.escape.n),
                      static_cast<double>(ens.finished)});
    const std::size_t n = std::min(th.rows(), ens.mean.rows());
    std::map<std::string, double> scale;
    for (std::size_t r = 0; r < n && ens.mean.number(r, "t") <= run.t_compare; ++r)
      for (const auto& q : quantities) scale[block_of.at(q)] = std::max(scale[block_of.at(q)], std::fabs(ens.mean.number(r, q)));
    double worst = 0;
    int points = 0, agree = 0;
    std::map<std::string, std::pair<double, int>> gap;
    for (std::size_t r = 0; r < n; ++r) {
      const double t = ens.mean.number(r, "t");
      std::vector<double> crow = {ens.size, t};
      for (const auto& q : quantities) {
        crow.push_back(th.number(r, q));
        crow.push_back(ens.mean.number(r, q));
        crow.push_back(ens.mean.number(r, se_column(q)));
      }
      v.curves.add_row(crow);
      if (t > run.t_compare) continue;
      for (const auto& q : quantities) {
        const double vt = th.number(r, q), vs = ens.mean.number(r, q);
        const double se_s = ens.mean.number(r, se_column(q)), se_t = run.theory.se.number(r, q);
        const double dev = vt - vs;
        const double allowed = s.tolerance * std::hypot(se_s, se_t) + s.rel_tolerance * scale[block_of.at(q)] + s.abs_tolerance;
        const bool ok = std::fabs(dev) <= allowed;
        v.points.add_row(std::vector<Cell>{ens.size, t, q, vt, vs, se_s, se_t, dev, allowed, ok ? 1.0 : 0.0});
        if (judged) {
          worst = std::max(worst, std::fabs(dev) / allowed);
          ++points;
          agree += ok;
        }
        if (t <= t_common) {
          auto& g = gap[block_of.at(q)];
          g.first += dev * dev;
          g.second += 1;
        }
      }
    }
    auto rms = [&](const std::string& b) { return gap.count(b) ? std::sqrt(gap[b].first / gap[b].second) : NAN; };
    const bool size_ok = !judged || (points > 0 && agree == points && run.theory.run.solver.ok());
    all_agree = all_agree && size_ok;
    sizes.push_back(ens.size);
    nlohmann::json gap_json = nlohmann::json::object();
    v.summary += fmt::format("  {:>6g} {:>6} {:>8.3g}", ens.size, ens.finished, run.t_compare);
    for (const auto& b : block_names) {
      gaps[b].push_back(rms(b));
      gap_json[b] = number_or_null(rms(b));
      v.summary += fmt::format(" {:>10.2e}", rms(b));
    }
    v.summary += fmt::format(" {:>9.2f} {:>8}\n", worst, judged ? (size_ok ? "agree" : "DISAGREE") : "(not judged)");
    per_size.push_back({{sz, ens.size},
                        {"seeds", ens.finished},
                        {"t_compare", run.t_compare},
                        {"judged", judged},
                        {"points", points},
                        {"points_agreeing", agree},
                        {"max_deviation_over_allowed", worst},
                        {"gap_rms", gap_json},
                        {"escape_time_mean", number_or_null(run.escape.mean)},
                        {"escape_time_se", number_or_null(run.escape.se)},
                        {"seeds_escaped", run.escape.n},
                        {"theory_solver", run.theory.run.solver.to_json()},
                        {"simulation_seconds", ens.seconds},
                        {"agree", size_ok}});
    if (!ens.records.empty() && !ens.records.front().empty()) per_size.back()["runs"] = ens.records;
    if (!run.theory.run.info.empty()) per_size.back()["theory"] = run.theory.run.info;
  }

  // Finite-size trend of the gap, and (when asked) its order of convergence between successive sizes.
  nlohmann::json exponents = nlohmann::json::object(), orders = nlohmann::json::object();
  std::string exponent_line;
  bool order_ok = true;
  for (const auto& b : block_names) {
    const double slope = stats::loglog_slope(sizes, gaps[b]);
    exponents[b] = number_or_null(slope);
    exponent_line += fmt::format("{}{:.2f} ({})", exponent_line.empty() ? "" : ", ", slope, b);
    orders[b] = nlohmann::json::array();
    for (std::size_t k = 0; k + 1 < sizes.size(); ++k) {
      const double g0 = gaps[b][k], g1 = gaps[b][k + 1];
      const double order = std::log(g0 / g1) / std::fabs(std::log(sizes[k] / sizes[k + 1]));
      orders[b].push_back(number_or_null(order));
      if (std::isfinite(s.min_order) && g1 > 1e-9) order_ok = order_ok && order >= s.min_order;  // else already at round-off
    }
  }
  std::vector<double> log_sizes, escapes;
  for (std::size_t r = 0; r < v.escape.rows(); ++r)
    if (std::isfinite(v.escape.number(r, "escape_time")))
      log_sizes.push_back(v.escape.number(r, "log_" + sz)), escapes.push_back(v.escape.number(r, "escape_time"));
  const double escape_slope = stats::linear_slope(log_sizes, escapes);

  v.agree = all_agree && order_ok && v.complete && !runs.empty();
  v.record = {{"mode", "trajectory"},
              {"verdict", v.agree ? "agree" : "disagree"},
              {"criterion", criterion_text(s)},
              {"size", sz},
              {"per_size", per_size},
              {"gap_exponent", exponents},
              {"gap_order", orders},
              {"gap_window", number_or_null(t_common)},
              {"gap_exponent_expected", s.gap_exponent_expected},
              {"escape_time_slope_vs_log_size", number_or_null(escape_slope)}};
  if (!order_ok) v.record["failure"] = fmt::format("the gap does not shrink with order >= {}", s.min_order);
  v.summary += fmt::format("  gap ~ {}^p on t <= {:.3g}: p = {}; expected about {:g}\n", sz, t_common, exponent_line, s.gap_exponent_expected);
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
