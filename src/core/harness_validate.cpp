// Theory against simulation for dynamics models (harness.hpp): trajectories over sizes, and the
// drift check term by term.
#include <fmt/format.h>

#include <cmath>
#include <map>

#include "hdat/core/error.hpp"
#include "hdat/core/harness.hpp"
#include "hdat/core/progress.hpp"
#include "hdat/core/verdict.hpp"
#include "hdat/core/statistics.hpp"
#include "hdat/core/output.hpp"

namespace hdat {

namespace {


struct SizeRun {
  Ensemble ensemble;
  TheoryRun theory;  ///< from the seeds' mean start: the replicas' mean, with their standard error
  /// Per seed, the theory from that seed's own start (empty for a deterministic model): the
  /// deviations theory(x0_i) - run_i are the sign-flip test's data, and their spread over seeds
  /// the deviation's noise.
  std::vector<Trajectory> paired;
  std::size_t paired_rows = 0;  ///< the rows every seed's run and its theory reached
  double t_compare = 0;
  stats::MeanSe escape;
};

// The seed-to-seed noise of a deviation, without the spread of the initial states: the theory
// follows a run's own start, so theory(x̄0) − mean of runs fluctuates like the mean of the paired
// deviations theory(x0_i) − run_i (to O(1/size), which the allowance covers), not like the mean
// of the runs. The theory here is replica 0; its own sampling error is the replicas' spread.
void pair_theories(const Bound& bound, SizeRun& run) {
  const DynamicsSettings& s = bound.settings();
  const Ensemble& ens = run.ensemble;
  // A sampled theory (theory_replicas > 1): seed i is paired with its own sample set i, so that every
  // seed's deviation carries an independent draw of the theory's error and the sign-flip test covers it.
  const bool sampled = s.theory_replicas > 1;
  run.paired_rows = ens.runs.empty() ? 0 : ens.runs.front().size();
  for (std::size_t i = 0; i < ens.runs.size(); ++i) {
    // From the run's own state at t_start, recorded before its first step.
    run.paired.push_back(
        theory_observed(bound.theory(sampled ? static_cast<int>(i) : 0), ens.initial_states[i], s.t_start, s.times, s.integrate).trajectory);
    run.paired_rows = std::min({run.paired_rows, ens.runs[i].size(), run.paired.back().size()});  // a theory stopped early: the common rows
  }
}

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

// The verdict for the summary: the critical value, and the reasons.
std::string verdict_lines(const Verdict& verdict, const FamilyTest& family) {
  const nlohmann::json r = family.record();
  const std::string critical = r["critical_value"].is_number() ? fmt::format("{:.3g}", r["critical_value"].get<double>()) : std::string("-");
  const SignFlipOutcome* flip = family.flip();
  std::string text =
      flip ? fmt::format("  criterion: sign-flip test over {} seeds ({} patterns), false alarm {:.3g} <= {:g} over {} entries, critical "
                         "value {}, detectable {:g} x scale\n",
                         flip->seeds, flip->patterns, flip->attained_false_alarm, family.criterion().false_alarm, family.size(), critical,
                         family.criterion().detectable)
           : fmt::format("  criterion: false alarm {:g} over {} tests, critical value {}, detectable {:g} x scale\n",
                         family.criterion().false_alarm, family.tests(), critical, family.criterion().detectable);
  for (const auto& reason : verdict.reasons) text += "  " + reason + "\n";
  const char* says = verdict.kind == VerdictKind::agree      ? "theory and simulation AGREE"
                     : verdict.kind == VerdictKind::disagree ? "theory and simulation DISAGREE"
                                                             : "UNDECIDED (the data cannot decide)";
  return text + fmt::format("  verdict: {}\n", says);
}

// The finite runs' own checks (FiniteSystem::failed_checks) over every size: whether any run checks
// something, how many do, and every failure with its run.
struct RunChecks {
  int runs = 0;
  std::vector<std::string> failures;
};

FamilyCriterion trajectory_criterion(const DynamicsSettings& s) {
  FamilyCriterion c;
  c.false_alarm = s.false_alarm;
  c.detectable = s.detectable;
  c.seeds_key = "seeds";
  c.other_key = s.theory_replicas > 1 ? "theory_replicas" : "";
  return c;
}

std::string criterion_text(const DynamicsSettings& s, const FamilyTest& family) {
  std::string allowance = fmt::format("{:g} * scale(block)", s.rel_tolerance);
  if (s.abs_tolerance > 0) allowance += fmt::format(" + {:g}", s.abs_tolerance);
  std::string text = family.criterion_text(allowance);
  text += fmt::format("; at every observed time t <= t_compare, {}", s.judge_every_size ? "at every size" : "at the finest size");
  text += " (t_compare: first plateau escape among the seeds unless set)";
  if (std::isfinite(s.min_order)) text += fmt::format("; and the gap shrinks with order >= {} between successive sizes", s.min_order);
  return text;
}

}  // namespace

// The steps of validate_trajectories: simulate and integrate per size, compare point by point, then
// the finite-size trend of the gap.
namespace trajectory_steps {
namespace {

std::vector<SizeRun> run_sizes(const Bound& bound, RunContext& ctx) {
  const DynamicsSettings& s = bound.settings();
  std::vector<SizeRun> runs;
  for (double size : s.validate_sizes) {
    Ensemble ens = run_ensemble(bound, size, ctx);
    if (ens.finished == 0 || interrupted()) break;
    const Eigen::VectorXd x0 = measured_initial_state(ens, bound.layout());
    SizeRun run;
    run.theory = run_theory_replicas(bound, x0, s.times, s.theory_replicas);
    run.t_compare = comparison_end(s, ens);
    run.escape = escape_statistics(ens);
    run.ensemble = std::move(ens);
    if (!s.deterministic) pair_theories(bound, run);
    runs.push_back(std::move(run));
  }
  return runs;
}

// A compared quantity: an observable both sides report, or an entry of the state; where it is in
// the theory's and in the simulation's trajectories, and the block whose scale it is judged on.
struct Quantity {
  std::string name, block;
  std::size_t theory = 0, simulation = 0;
};

// What is compared, the same at every size.
struct Compared {
  std::vector<Quantity> quantities;  // the observables both sides have, then every block entry
  std::vector<std::string> blocks;   // in order of first appearance
  // The finite-size gap is measured on the window common to every size, so that the fitted exponent
  // compares like with like.
  double t_common = INFINITY;
};

Compared compared_quantities(const Bound& bound, const std::vector<SizeRun>& runs) {
  Compared cmp;
  if (runs.empty()) return cmp;
  const Trajectory& th = runs.front().theory.trajectory;
  const Trajectory& sim = runs.front().ensemble.mean;
  const Observables at_start = bound.theory(0).observe(runs.front().theory.initial, bound.settings().t_start);
  for (const auto& name : at_start.names()) {
    const auto k_th = th.observable(name), k_sim = sim.observable(name);
    if (k_th && k_sim) cmp.quantities.push_back({name, name, *k_th, *k_sim});  // an observable is its own block
  }
  // Every listed entry of the state, judged on the scale of the block that holds it.
  const StateLayout& layout = bound.layout();
  const std::vector<std::string> entries = layout.columns();
  const std::vector<int> listed = layout.listed();
  for (std::size_t j = 0; j < entries.size(); ++j)
    for (const Block& b : layout.blocks())
      if (listed[j] >= b.offset && listed[j] < b.offset + b.size())
        cmp.quantities.push_back({entries[j], b.name, th.entry_quantity(j), sim.entry_quantity(j)});
  for (const auto& q : cmp.quantities)
    if (std::find(cmp.blocks.begin(), cmp.blocks.end(), q.block) == cmp.blocks.end()) cmp.blocks.push_back(q.block);
  for (const auto& r : runs) cmp.t_common = std::min(cmp.t_common, r.t_compare);
  return cmp;
}

// The empty tables and the header of the summary.
void start_output(TrajectoryValidation& v, const std::string& sz, const Compared& cmp) {
  v.points = Table({sz, "t", "quantity", "theory", "simulation", "simulation_se", "theory_se", "deviation", "deviation_se", "dof",
                    "critical_value", "allowed", "agree"});
  v.escape = Table({sz, "log_" + sz, "escape_time", "escape_time_se", "seeds_escaped", "seeds"});
  std::vector<std::string> curve_cols = {sz, "t"};
  for (const auto& q : cmp.quantities) {
    curve_cols.push_back(q.name + "_theory");
    curve_cols.push_back(q.name + "_sim");
    curve_cols.push_back(q.name + "_sim_se");
  }
  v.curves = Table(curve_cols);
  v.summary = fmt::format("  {:>6} {:>6} {:>8}", sz, "seeds", "t_cmp");
  for (const auto& b : cmp.blocks) v.summary += fmt::format(" {:>10}", "gap " + b);
  v.summary += fmt::format(" {:>9} {:>8}\n", "max dev/allowed", "verdict");
}

// Per block, the largest |simulated value| in the comparison window.
std::map<std::string, double> block_scales(const SizeRun& run, std::size_t rows, const Compared& cmp) {
  const Trajectory& mean = run.ensemble.mean;
  std::map<std::string, double> scale;
  for (std::size_t r = 0; r < rows && mean.t(r) <= run.t_compare; ++r)
    for (const auto& q : cmp.quantities) scale[q.block] = std::max(scale[q.block], std::fabs(mean.quantity(r, q.simulation).value));
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

// A compared point, kept until every point is known: the criterion's critical value depends on how
// many there are.
struct PendingPoint {
  std::size_t size_index = 0;
  double theory = 0, simulation = 0, simulation_se = 0;
  bool judged = false;
  std::size_t index = 0;  // in the family, when judged
  ComparedEntry entry;
};

// Adds the size's rows to v.curves, its gaps to c, and its points to `points` (the judged ones also
// to the family).
void collect_size(const SizeRun& run, std::size_t size_index, bool judged, const Compared& cmp, const DynamicsSettings& s,
                  TrajectoryValidation& v, SizeComparison& c, std::vector<PendingPoint>& points, FamilyTest& family) {
  const Ensemble& ens = run.ensemble;
  const Trajectory& th = run.theory.trajectory;
  const std::size_t n = std::min(th.size(), ens.mean.size());
  std::map<std::string, double> scale = block_scales(run, n, cmp);
  for (std::size_t r = 0; r < n; ++r) {
    const double t = ens.mean.t(r);
    std::vector<double> crow = {ens.size, t};
    for (const auto& q : cmp.quantities) {
      const Measured sim = ens.mean.quantity(r, q.simulation);
      crow.push_back(th.quantity(r, q.theory).value);
      crow.push_back(sim.value);
      crow.push_back(sim.se);
    }
    v.curves.add_row(crow);
    if (t > run.t_compare) continue;
    for (const auto& q : cmp.quantities) {
      PendingPoint pt;
      pt.size_index = size_index;
      const Measured theory = th.quantity(r, q.theory), sim = ens.mean.quantity(r, q.simulation);
      pt.theory = theory.value;
      pt.simulation = sim.value;
      pt.simulation_se = sim.se;
      pt.judged = judged;
      ComparedEntry& e = pt.entry;
      e.deviation = pt.theory - pt.simulation;
      const bool paired = r < run.paired_rows;
      if (paired) {  // the sign-flip test's data: every seed's own deviation (with its own theory sample)
        for (std::size_t i = 0; i < run.paired.size(); ++i)
          e.units.push_back(run.paired[i].quantity(r, q.theory).value - ens.runs[i].quantity(r, q.simulation).value);
        e.unit_group = static_cast<int>(size_index);
        e.joint = fmt::format("{:.12g}|{}", t, q.name);
        e.ramp = run.t_compare > 0 ? std::clamp(t / run.t_compare, 0.0, 1.0) : 1.0;
      }
      e.se_seeds = paired ? stats::mean_se(e.units).se : sim.se;
      e.seeds = ens.finished;
      e.se_other = theory.se;  // the theory's sampling error over its replicas
      e.dof_other = s.theory_replicas > 1 ? s.theory_replicas - 1.0 : INFINITY;
      e.allowance = s.rel_tolerance * scale[q.block] + s.abs_tolerance;
      e.scale = scale[q.block];
      e.where = {{s.size_name, ens.size}, {"t", t}, {"quantity", q.name}};
      e.block = q.block;
      if (judged) pt.index = family.add(e);
      if (t <= cmp.t_common) {
        auto& g = c.gap[q.block];
        g.first += e.deviation * e.deviation;
        g.second += 1;
      }
      points.push_back(std::move(pt));
    }
  }
}

// Every point against the family's criterion: its row of v.points, and the tally of its size.
void judge_points(const std::vector<PendingPoint>& points, const FamilyTest& family, const std::vector<SizeRun>& runs,
                  TrajectoryValidation& v, std::vector<SizeComparison>& by_size) {
  const long tests = family.tests();
  for (const PendingPoint& pt : points) {
    const ComparedEntry& e = pt.entry;
    const Judgement j = pt.judged ? family.judge(pt.index) : judge(e, family.criterion(), tests);
    v.points.add_row(std::vector<Cell>{runs[pt.size_index].ensemble.size, e.where.at("t").get<double>(), e.where.at("quantity").get<std::string>(),
                                       pt.theory, pt.simulation, pt.simulation_se, e.se_other, e.deviation, j.se, j.dof, j.critical,
                                       j.allowed, j.agree ? 1.0 : 0.0});
    if (!pt.judged) continue;
    SizeComparison& c = by_size[pt.size_index];
    const double ratio = family.sign_flip() && j.se > 0 ? family.flip()->z[pt.index] / j.critical  // the test's own scale
                         : j.allowed > 0             ? std::fabs(e.deviation) / j.allowed
                                                     : (e.deviation == 0 ? 0.0 : INFINITY);
    c.worst = std::max(c.worst, ratio);
    ++c.points;
    c.agree += j.agree;
  }
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
                           {"theory_solver", run.theory.solver.to_json()},
                           {"simulation_seconds", ens.seconds},
                           {"agree", size_ok}};
  if (!ens.records.empty() && !ens.records.front().empty()) record["runs"] = ens.records;
  if (!run.theory.info.empty()) record["theory"] = run.theory.info;
  return record;
}

// One size: its rows in every table, its line of the summary, its gaps and its record. Returns
// whether it agrees (a size not judged always does).
bool add_size(const SizeRun& run, bool judged, const SizeComparison& c, const Compared& cmp, const DynamicsSettings& s,
              TrajectoryValidation& v, GapsBySize& gaps, nlohmann::json& per_size) {
  const Ensemble& ens = run.ensemble;
  v.escape.add_row({ens.size, std::log(ens.size), run.escape.mean, run.escape.se, static_cast<double>(run.escape.n),
                    static_cast<double>(ens.finished)});
  const bool size_ok = !judged || (c.points > 0 && c.agree == c.points && run.theory.solver.ok());
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
  std::map<std::string, std::vector<double>> order;  ///< per block, between successive sizes
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
      trend.order[b].push_back(order);
      if (std::isfinite(s.min_order) && g1 > 1e-9) trend.order_ok = trend.order_ok && order >= s.min_order;  // else already at round-off
    }
  }
  return trend;
}

// Slope of the mean plateau escape time against log size, over the sizes where some seed escaped.
double escape_time_slope(const std::vector<SizeRun>& runs) {
  std::vector<double> log_sizes, escapes;
  for (const SizeRun& r : runs)
    if (std::isfinite(r.escape.mean)) log_sizes.push_back(std::log(r.ensemble.size)), escapes.push_back(r.escape.mean);
  return stats::linear_slope(log_sizes, escapes);
}

}  // namespace
}  // namespace trajectory_steps

void check_validate_settings(const DynamicsSettings& s, bool drift) {
  if (!drift && s.validate_sizes.empty())
    throw InputError("dims", "validate needs at least one size (e.g. dims=[250,500]); the list is empty");
  if (!drift && !s.deterministic && s.seeds < 2)
    throw InputError("seeds", fmt::format("validate needs at least 2 seeds (the standard errors are the spread over seeds); got {}", s.seeds));
  if (!(s.false_alarm > 0 && s.false_alarm < 1)) throw InputError("false_alarm", "must lie in (0, 1)");
  if (!(s.detectable > 0)) throw InputError("detectable", "must be > 0");
}

TrajectoryValidation validate_trajectories(const Bound& bound, RunContext& ctx) {
  using namespace trajectory_steps;
  const DynamicsSettings& s = bound.settings();
  check_validate_settings(s, false);
  TrajectoryValidation v;
  const std::vector<SizeRun> runs = run_sizes(bound, ctx);
  v.complete = runs.size() == s.validate_sizes.size() && !interrupted();
  const Compared cmp = compared_quantities(bound, runs);
  const std::string& sz = s.size_name;
  start_output(v, sz, cmp);

  // Every point first, then each judged against the whole family (its size sets the critical value).
  FamilyTest family(trajectory_criterion(s));
  std::vector<SizeComparison> by_size(runs.size());
  std::vector<PendingPoint> points;
  const auto judged = [&](std::size_t k) { return s.judge_every_size || k + 1 == runs.size(); };
  for (std::size_t k = 0; k < runs.size(); ++k) collect_size(runs[k], k, judged(k), cmp, s, v, by_size[k], points, family);
  family.decide();
  judge_points(points, family, runs, v, by_size);

  GapsBySize gaps;
  nlohmann::json per_size = nlohmann::json::array();
  Verdict verdict = family.verdict();
  for (std::size_t k = 0; k < runs.size(); ++k) {
    add_size(runs[k], judged(k), by_size[k], cmp, s, v, gaps, per_size);
    const IntegrateSummary& solver = runs[k].theory.solver;
    if (judged(k) && !solver.ok()) verdict.merge(Verdict::disagree(fmt::format("the theory stopped at {} = {:g}: {}", sz, runs[k].ensemble.size, solver.message)));
    if (judged(k) && by_size[k].points == 0)
      verdict.merge(Verdict::undecided(fmt::format("nothing compared at {} = {:g} (the window ends at t = {:g})", sz, runs[k].ensemble.size, runs[k].t_compare)));
  }
  const GapTrend trend = gap_trend(cmp, gaps, s);
  RunChecks checks;
  for (const SizeRun& r : runs)
    for (std::size_t i = 0; i < r.ensemble.failed_checks.size(); ++i)
      if (const auto& failed = r.ensemble.failed_checks[i]) {
        ++checks.runs;
        for (const auto& what : *failed) checks.failures.push_back(fmt::format("{} = {:g}, run {}: {}", sz, r.ensemble.size, i, what));
      }
  if (!checks.failures.empty())
    verdict.merge(Verdict::disagree(fmt::format("{} of the finite runs' own checks fail (failed_checks)", checks.failures.size())));
  const double escape_slope = escape_time_slope(runs);
  if (!trend.order_ok) verdict.merge(Verdict::disagree(fmt::format("the gap does not shrink with order >= {}", s.min_order)));

  v.verdict = verdict;
  v.sizes = gaps.sizes;
  v.gap_rms = gaps.gaps;
  v.gap_order = trend.order;
  v.record = {{"mode", "trajectory"},
              {"verdict", verdict.name()},
              {"reasons", verdict.reasons},
              {"criterion", criterion_text(s, family)}};
  const nlohmann::json tests_record = family.record();  // kept: items() refers to it
  for (const auto& [key, value] : tests_record.items()) v.record[key] = value;
  v.record.update({{"size", sz},
                   {"per_size", per_size},
                   {"gap_exponent", trend.exponents},
                   {"gap_order", trend.orders},
                   {"gap_window", number_or_null(cmp.t_common)},
                   {"gap_exponent_expected", s.gap_exponent_expected},
                   {"escape_time_slope_vs_log_size", number_or_null(escape_slope)}});
  if (!trend.order_ok) v.record["failure"] = fmt::format("the gap does not shrink with order >= {}", s.min_order);
  if (checks.runs) v.record["failed_checks"] = checks.failures;
  v.summary += fmt::format("  gap ~ {}^p on t <= {:.3g}: p = {}; expected about {:g}\n", sz, cmp.t_common, trend.exponent_line,
                           s.gap_exponent_expected);
  if (std::isfinite(escape_slope)) v.summary += fmt::format("  plateau escape time vs log {}: slope {:.2f}\n", sz, escape_slope);
  if (checks.runs)
    v.summary += checks.failures.empty() ? fmt::format("  the finite runs' own checks: hold in all {} runs\n", checks.runs)
                                         : "  the finite runs' own checks FAIL:\n";
  for (const auto& f : checks.failures) v.summary += "    - " + f + "\n";
  v.summary += verdict_lines(verdict, family);
  return v;
}

DriftValidation validate_drift(const Bound& bound, RunContext& ctx) {
  const DynamicsSettings& s = bound.settings();
  check_validate_settings(s, true);
  const OdeTheory& theory = bound.theory(0);
  const StateLayout& layout = bound.layout();
  auto system = bound.system(s.drift_size, 0);
  DriftValidation v;
  v.rows = Table({"t", "term", "entry", "theory", "theory_se", "simulation", "simulation_se", "z", "allowed", "agree"});
  // Only the entries the output lists (i <= j of symmetric blocks).
  std::vector<int> entries;
  for (const Block& b : layout.blocks())
    for (int j = 0; j < b.cols; ++j)
      for (int i = 0; i < b.rows; ++i)
        if (!b.symmetric || i <= j) entries.push_back(b.offset + i + j * b.rows);
  FamilyCriterion criterion;
  criterion.false_alarm = s.false_alarm;
  criterion.detectable = s.detectable;
  criterion.seeds_key = "drift_samples";
  // Every (time, term, entry) first; then each judged against the whole family.
  FamilyTest family(criterion);
  struct Shown {
    double theory, simulation;
  };
  std::vector<Shown> shown;
  Progress progress("drift check", static_cast<long>(s.drift_times.size()) * s.drift_samples, !ctx.quiet);
  std::vector<ComparedEntry> pending;
  double drift_scale = 0;
  for (double t_check : s.drift_times) {
    system->advance_to(t_check);
    const Eigen::VectorXd x = system->state();
    // At the run's own time (whole steps), where its state is: a schedule's drift depends on it.
    const DriftTerms th = theory.terms(x, system->time());
    std::vector<stats::Moments> sim(th.size(), stats::Moments(layout.size()));
    for (long i = 0; i < s.drift_samples; ++i) {
      const DriftTerms inc = system->increment();
      for (std::size_t k = 0; k < th.size(); ++k) sim[k].add(inc.value(k));
      if (i % 256 == 255) progress.advance(256);
    }
    // The drift's scale: its largest term entry over the checked states (what `detectable` is
    // relative to; near a fixed point the drift itself vanishes).
    for (std::size_t k = 0; k < th.size(); ++k)
      for (int c : entries) drift_scale = std::max(drift_scale, std::fabs(th.value(k)(c)));
    for (std::size_t k = 0; k < th.size(); ++k) {
      const Eigen::VectorXd m = sim[k].mean(), e = sim[k].se();
      for (int c : entries) {
        const double tv = th.value(k)(c), tse = th.se(k)(c);
        if (tv == 0 && tse == 0 && m(c) == 0 && e(c) == 0) continue;  // a term that cannot touch this entry
        ComparedEntry entry;
        entry.deviation = tv - m(c);
        entry.se_seeds = e(c);
        entry.seeds = s.drift_samples;
        entry.se_other = tse;  // the theory's Monte Carlo error, on many samples
        entry.allowance = s.drift_abs_tolerance;
        entry.where = {{"t", system->time()}, {"term", th.name(k)}, {"entry", layout.component_name(c)}};
        entry.block = th.name(k);
        pending.push_back(std::move(entry));
        shown.push_back({tv, m(c)});
      }
    }
    v.summary += fmt::format("  t = {:<6g} checked\n", system->time());
    if (interrupted()) break;
  }
  progress.finish();
  for (ComparedEntry& e : pending) e.scale = drift_scale, family.add(std::move(e));
  double worst_z = 0;
  for (std::size_t k = 0; k < family.size(); ++k) {
    const ComparedEntry& e = family.entry(k);
    const Judgement j = family.judge(k);
    const double z = j.se > 0 ? e.deviation / j.se : (e.deviation == 0 ? 0.0 : NAN);
    if (std::isfinite(z)) worst_z = std::max(worst_z, std::fabs(z));
    v.rows.add_row(std::vector<Cell>{e.where.at("t").get<double>(), e.where.at("term").get<std::string>(), e.where.at("entry").get<std::string>(),
                                     shown[k].theory, e.se_other, shown[k].simulation, e.se_seeds, z, j.allowed, j.agree ? 1.0 : 0.0});
  }
  v.complete = !interrupted();
  v.verdict = family.verdict();
  const std::string allowance = s.drift_abs_tolerance > 0 ? fmt::format("{:g}", s.drift_abs_tolerance) : "0";
  v.record = {{"mode", "drift"},
              {s.size_name, s.drift_size},
              {"samples", s.drift_samples},
              {"verdict", v.verdict.name()},
              {"reasons", v.verdict.reasons},
              {"criterion", "theory against the mean of one-step increments / dt, for every entry of every term of the drift at every "
                            "checked time: " + criterion.text(allowance) + " (scale: the largest term entry over the checked times)"},
              {"max_abs_z", worst_z}};
  const nlohmann::json tests_record = family.record();  // kept: items() refers to it
  for (const auto& [key, value] : tests_record.items()) v.record[key] = value;
  v.summary += fmt::format("  largest |z| = {:.2f}\n", worst_z);
  v.summary += verdict_lines(v.verdict, family);
  return v;
}

}  // namespace hdat
