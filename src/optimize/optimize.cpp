#include "hdat/optimize/optimize.hpp"
#include "hdat/core/exit_code.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <functional>
#include <nlopt.hpp>

#include "hdat/core/error.hpp"
#include "hdat/core/harness.hpp"
#include "hdat/core/output.hpp"
#include "hdat/core/progress.hpp"
#include "hdat/core/statistics.hpp"
#include "hdat/core/suggest.hpp"

namespace hdat::optimize {

namespace {
using json = nlohmann::json;
namespace fs = std::filesystem;

const std::vector<std::string>& algorithms() {
  static const std::vector<std::string> a = {"slsqp", "lbfgs", "mma", "ccsaq"};
  return a;
}

nlopt::algorithm nlopt_algorithm(const std::string& name) {
  if (name == "lbfgs") return nlopt::LD_LBFGS;
  if (name == "mma") return nlopt::LD_MMA;
  if (name == "ccsaq") return nlopt::LD_CCSAQ;
  return nlopt::LD_SLSQP;
}

std::string result_name(nlopt::result r) {
  switch (r) {
    case nlopt::SUCCESS: return "SUCCESS";
    case nlopt::STOPVAL_REACHED: return "STOPVAL_REACHED";
    case nlopt::FTOL_REACHED: return "FTOL_REACHED";
    case nlopt::XTOL_REACHED: return "XTOL_REACHED";
    case nlopt::MAXEVAL_REACHED: return "MAXEVAL_REACHED";
    case nlopt::MAXTIME_REACHED: return "MAXTIME_REACHED";
    case nlopt::ROUNDOFF_LIMITED: return "ROUNDOFF_LIMITED";
    case nlopt::FORCED_STOP: return "FORCED_STOP";
    default: return fmt::format("NLOPT_RESULT_{}", static_cast<int>(r));
  }
}

}  // namespace

json OptimizeOptions::to_json() const {
  json b = json::object(), g = json::object();
  for (const auto& [k, v] : bounds) b[k] = {v.lo, v.hi};
  for (const auto& [k, v] : budget) g[k] = v;
  return {{"controls", controls},
          {"intervals", intervals},
          {"shape", shape_name(shape)},
          {"bounds", b},
          {"budget", g},
          {"objective", objective_name(objective)},
          {"target", number_or_null(target)},
          {"t_final", number_or_null(t_final)},
          {"algorithm", algorithm},
          {"max_evaluations", max_evaluations},
          {"ftol_rel", ftol_rel},
          {"xtol_rel", xtol_rel},
          {"rtol", rtol},
          {"atol", atol},
          {"baselines", baselines},
          {"curve_points", curve_points},
          {"confirm_size", confirm_size},
          {"confirm_seeds", confirm_seeds},
          {"confirm_theory", confirm_theory}};
}

json SolverSummary::to_json() const {
  return {{"algorithm", algorithm},
          {"evaluations", evaluations},
          {"initial_objective", number_or_null(initial_objective)},
          {"final_objective", number_or_null(final_objective)},
          {"projected_gradient_norm", number_or_null(projected_gradient_norm)},
          {"termination", termination},
          {"converged", converged},
          {"seconds", seconds},
          {"cpu_seconds", cpu_seconds},
          {"message", message}};
}

std::string SolverSummary::brief() const {
  return fmt::format("{} {} after {} evaluations: {:.8g} -> {:.8g}, |projected gradient| {:.2e}, {:.2f} s ({:.2f} s CPU)", algorithm,
                     termination, evaluations, initial_objective, final_objective, projected_gradient_norm, seconds, cpu_seconds);
}

// ---------------------------------------------------------------------------------------------------
// Checking the options against the model

namespace {

Bounds default_bounds(const ControlSpec& c, double value) {
  const double lo = c.range.lo.value_or(0.0);
  if (c.range.hi) return {lo, *c.range.hi};
  return {lo, value > 0 ? 4 * value : lo + 1};
}

void check_bounds(const std::string& name, const Bounds& b, const ControlSpec& c) {
  if (!std::isfinite(b.lo) || !std::isfinite(b.hi) || !(b.lo < b.hi))
    throw InputError("bounds", fmt::format("{}: need finite lo < hi, got [{}, {}]", name, b.lo, b.hi));
  const bool lo_ok = !c.range.lo || b.lo >= *c.range.lo, hi_ok = !c.range.hi || b.hi <= *c.range.hi;
  if (!lo_ok || !hi_ok) throw InputError("bounds", fmt::format("{}: [{}, {}] leaves its range {}", name, b.lo, b.hi, c.range.describe()));
}

}  // namespace

Problem check_options(const OptimizeOptions& o, const ControlledTheory& theory, const Params& p) {
  Problem pr;
  std::string controllable;
  for (const auto& c : theory.controls()) controllable += (controllable.empty() ? "" : ", ") + c.name;
  if (o.controls.empty()) throw InputError("control", "name at least one controllable parameter (this model: " + controllable + ")");
  for (const auto& name : o.controls) {
    const int k = theory.control_index(name);
    if (k < 0) throw InputError("control", fmt::format("unknown control '{}' (this model's controllable parameters: {})", name, controllable));
    if (std::count(o.controls.begin(), o.controls.end(), name) > 1) throw InputError("control", "'" + name + "' is named twice");
    const ControlSpec& c = theory.controls()[static_cast<std::size_t>(k)];
    (c.final_only ? pr.finals : pr.scheduled).push_back(name);
    Bounds b = o.bounds.count(name) ? o.bounds.at(name) : default_bounds(c, theory.defaults()(k));
    check_bounds(name, b, c);
    pr.bounds[name] = b;
  }
  for (const auto& [name, b] : o.bounds)
    if (!pr.bounds.count(name)) throw InputError("bounds", "'" + name + "' is not among the optimised controls");
  if (o.intervals < 1 || o.intervals > 100000) throw InputError("intervals", fmt::format("must be in [1, 100000], got {}", o.intervals));
  if (o.shape != ScheduleShape::piecewise_constant && o.shape != ScheduleShape::piecewise_linear)
    throw InputError("shape", "must be piecewise_constant or piecewise_linear");
  for (const auto& [name, mean] : o.budget) {
    if (std::find(pr.scheduled.begin(), pr.scheduled.end(), name) == pr.scheduled.end())
      throw InputError("budget", "'" + name + "' is not a scheduled control being optimised");
    const Bounds& b = pr.bounds.at(name);
    if (!(mean >= b.lo && mean <= b.hi)) throw InputError("budget", fmt::format("{}: the mean {} lies outside its bounds [{}, {}]", name, mean, b.lo, b.hi));
  }
  if (!o.budget.empty() && o.algorithm != "slsqp")
    throw InputError("budget", "a budget is an equality constraint: use algorithm slsqp");
  if (std::find(algorithms().begin(), algorithms().end(), o.algorithm) == algorithms().end())
    throw InputError("algorithm", "unknown algorithm '" + o.algorithm + "' (allowed: slsqp|lbfgs|mma|ccsaq)");
  if (o.max_evaluations < 1) throw InputError("max_evaluations", "must be at least 1");
  if (!(o.rtol > 0) || !(o.atol > 0)) throw InputError("rtol", "the integrator's tolerances must be positive");
  if (o.curve_points < 2) throw InputError("curve_points", "must be at least 2");
  pr.t_final = std::isnan(o.t_final) ? p.real("t_max") : o.t_final;
  if (!(pr.t_final > 0) || !std::isfinite(pr.t_final)) throw InputError("t_final", fmt::format("must be a positive number, got {}", pr.t_final));
  if (o.objective == Objective::time_to_target) {
    if (!std::isfinite(o.target)) throw InputError("target", "the time_to_target objective needs a finite target risk");
  } else if (!std::isnan(o.target)) {
    throw InputError("target", "a target applies to the time_to_target objective only");
  }
  if (!pr.finals.empty() && pr.scheduled.empty() && o.objective == Objective::time_to_target)
    throw InputError("control", "time_to_target needs a scheduled control");
  if (o.confirm_size < 0 || (o.confirm_size > 0 && o.confirm_size < 2)) throw InputError("confirm", "the size must be at least 2");
  if (o.confirm_seeds < 2) throw InputError("confirm_seeds", "must be at least 2");
  if (o.confirm_size > 0 && o.objective != Objective::final_risk)
    throw InputError("confirm", "the confirmation compares final risks: use the final objective");
  if (p.has("schedule")) throw InputError("schedule", "optimize computes the schedule: leave `schedule` unset");
  if (!o.confirm_theory.is_object()) throw InputError("confirm_theory", "must be an object of KEY: VALUE settings");
  for (const auto& [key, value] : o.confirm_theory.items()) {
    const ParamSpec* spec = p.set().find(key);
    if (!spec) {
      std::vector<std::string> theory_keys;
      for (const ParamSpec& s : p.set().specs())
        if (!s.changes_simulation) theory_keys.push_back(s.key);
      throw InputError("confirm_theory", fmt::format("the model has no parameter '{}'{}", key,
                                                     did_you_mean_among(key, theory_keys, "the theory's own settings")));
    }
    if (spec->changes_simulation)
      throw InputError("confirm_theory", fmt::format("'{}' changes the finite runs: only the theory's own settings (e.g. mc_samples) may differ "
                                                     "from the optimised configuration", key));
  }
  pr.objective.kind = o.objective;
  pr.objective.t_final = pr.t_final;
  pr.objective.target = o.target;
  return pr;
}

// ---------------------------------------------------------------------------------------------------
// Families of protocols and their optimisation

namespace {

/// A protocol to optimise: its start θ, its box, and the budget constraints (control, mean).
struct Family {
  std::string name;
  Protocol protocol;
  Eigen::VectorXd lo, hi;
  std::vector<std::pair<int, double>> budgets;  ///< (index into protocol.schedules, mean)
};

ControlSchedule family_schedule(const std::string& family, const std::string& control, double T, const Bounds& b, double start,
                                const OptimizeOptions& o, Eigen::VectorXd& lo, Eigen::VectorXd& hi) {
  ControlSchedule s;
  s.control = control;
  s.t_final = T;
  if (family == "optimal") {
    s.shape = o.shape;
    const int size = o.intervals + (o.shape == ScheduleShape::piecewise_linear ? 1 : 0);
    s.theta = Eigen::VectorXd::Constant(size, start);
    lo = Eigen::VectorXd::Constant(size, b.lo);
    hi = Eigen::VectorXd::Constant(size, b.hi);
  } else if (family == "constant") {
    s.shape = ScheduleShape::piecewise_constant;
    s.theta = Eigen::VectorXd::Constant(1, start);
    lo = Eigen::VectorXd::Constant(1, b.lo);
    hi = Eigen::VectorXd::Constant(1, b.hi);
  } else if (family == "step_decay") {  // start · factor^k: factor 1 is the constant
    s.shape = ScheduleShape::step_decay;
    s.theta = Eigen::Vector2d(start, 1.0);
    lo = Eigen::Vector2d(b.lo, 0.01);
    hi = Eigen::Vector2d(b.hi, 1.0);
  } else if (family == "cosine") {  // start = end is the constant
    s.shape = ScheduleShape::cosine;
    s.theta = Eigen::Vector2d(start, start);
    lo = Eigen::Vector2d(b.lo, b.lo);
    hi = Eigen::Vector2d(b.hi, b.hi);
  } else {  // power_law: exponent 0 is the constant
    s.shape = ScheduleShape::power_law;
    s.theta = Eigen::Vector3d(start, 0.0, 0.1 * T);
    lo = Eigen::Vector3d(b.lo, 0.0, 1e-3 * T);
    hi = Eigen::Vector3d(b.hi, 4.0, T);
  }
  return s;
}

/// The family's protocol, started from `from` (the best constant: every family contains it).
Family make_family(const std::string& name, const Problem& pr, const OptimizeOptions& o, const Protocol& from) {
  Family f;
  f.name = name;
  std::vector<Eigen::VectorXd> los, his;
  for (std::size_t k = 0; k < pr.scheduled.size(); ++k) {
    const std::string& c = pr.scheduled[k];
    const double start = from.schedules[k].value(0.0);
    Eigen::VectorXd lo, hi;
    f.protocol.schedules.push_back(family_schedule(name, c, pr.t_final, pr.bounds.at(c), start, o, lo, hi));
    los.push_back(lo);
    his.push_back(hi);
    if (o.budget.count(c)) f.budgets.emplace_back(static_cast<int>(k), o.budget.at(c));
  }
  f.protocol.finals = pr.finals;
  f.protocol.final_values = from.final_values;
  const int n = f.protocol.size();
  f.lo.resize(n);
  f.hi.resize(n);
  int at = 0;
  for (std::size_t k = 0; k < los.size(); ++k) {
    f.lo.segment(at, los[k].size()) = los[k];
    f.hi.segment(at, his[k].size()) = his[k];
    at += static_cast<int>(los[k].size());
  }
  for (const auto& c : pr.finals) {
    f.lo(at) = pr.bounds.at(c).lo;
    f.hi(at) = pr.bounds.at(c).hi;
    ++at;
  }
  return f;
}

/// The starting protocol of the constant family: the configuration's values (or the budget), clamped.
Protocol configured_protocol(const Problem& pr, const OptimizeOptions& o, const ControlledTheory& th) {
  Protocol p;
  const Eigen::VectorXd u = th.defaults();
  for (const auto& c : pr.scheduled) {
    ControlSchedule s;
    s.control = c;
    s.t_final = pr.t_final;
    const Bounds& b = pr.bounds.at(c);
    const double v = o.budget.count(c) ? o.budget.at(c) : std::clamp(u(th.control_index(c)), b.lo, b.hi);
    s.theta = Eigen::VectorXd::Constant(1, v);
    p.schedules.push_back(s);
  }
  p.finals = pr.finals;
  p.final_values.resize(static_cast<Eigen::Index>(pr.finals.size()));
  for (std::size_t k = 0; k < pr.finals.size(); ++k) {
    const Bounds& b = pr.bounds.at(pr.finals[k]);
    p.final_values(static_cast<Eigen::Index>(k)) = std::clamp(u(th.control_index(pr.finals[k])), b.lo, b.hi);
  }
  return p;
}

/// θ of the optimal family's grid from another protocol (its value at each piece's midpoint or knot).
Eigen::VectorXd project(const Family& optimal, const Protocol& from) {
  Protocol p = optimal.protocol;
  for (std::size_t k = 0; k < p.schedules.size(); ++k) {
    ControlSchedule& s = p.schedules[k];
    const int n = s.intervals();
    const double h = s.t_final / n;
    for (Eigen::Index j = 0; j < s.theta.size(); ++j) {
      const double t = s.shape == ScheduleShape::piecewise_constant ? (j + 0.5) * h : j * h;
      s.theta(j) = from.schedules[k].value(t);
    }
  }
  p.final_values = from.final_values;
  return p.pack().cwiseMax(optimal.lo).cwiseMin(optimal.hi);
}

double projected_gradient_norm(const Family& f, const Eigen::VectorXd& x, const Eigen::VectorXd& g) {
  Eigen::VectorXd pg = g;
  std::vector<bool> free(static_cast<std::size_t>(x.size()), true);
  for (Eigen::Index k = 0; k < x.size(); ++k) {
    const double scale = 1e-9 * std::max(1.0, f.hi(k) - f.lo(k));
    if ((x(k) <= f.lo(k) + scale && g(k) > 0) || (x(k) >= f.hi(k) - scale && g(k) < 0)) {
      pg(k) = 0;
      free[static_cast<std::size_t>(k)] = false;
    }
  }
  // A budget fixes the mean of a schedule's θ: remove the gradient's component along it.
  int at = 0;
  for (std::size_t k = 0; k < f.protocol.schedules.size(); ++k) {
    const ControlSchedule& s = f.protocol.schedules[k];
    const Eigen::Index size = s.theta.size();
    for (const auto& [index, mean] : f.budgets) {
      if (index != static_cast<int>(k)) continue;
      Eigen::VectorXd a;
      s.mean(&a);
      for (Eigen::Index j = 0; j < size; ++j)
        if (!free[static_cast<std::size_t>(at + j)]) a(j) = 0;
      if (a.squaredNorm() > 0) pg.segment(at, size) -= a * (a.dot(pg.segment(at, size)) / a.squaredNorm());
    }
    at += static_cast<int>(size);
  }
  return pg.norm();
}

/// Saved progress of an optimize run (DIR/optimize_state.json): per candidate its best θ so far and
/// whether it finished; keyed by the configuration and the options, so that only the same run resumes.
class SavedState {
 public:
  SavedState(fs::path file, std::string key, bool restart) : file_(std::move(file)), key_(std::move(key)) {
    if (file_.empty() || restart || !fs::exists(file_)) return;
    const json j = json::parse(read_file(file_), nullptr, false);
    if (j.is_object() && j.value("key", "") == key_ && j.contains("candidates")) state_ = j["candidates"];
  }
  /// The saved θ of a candidate (empty when none, or of another size) and whether it finished.
  std::pair<Eigen::VectorXd, bool> get(const std::string& name, int size) const {
    if (!state_.contains(name)) return {{}, false};
    const auto& c = state_[name];
    const std::vector<double> v = c.value("theta", std::vector<double>());
    if (static_cast<int>(v.size()) != size) return {{}, false};
    return {Eigen::Map<const Eigen::VectorXd>(v.data(), size), c.value("done", false)};
  }
  void put(const std::string& name, const Eigen::VectorXd& theta, bool done, int evaluations, bool force) {
    state_[name] = {{"theta", std::vector<double>(theta.data(), theta.data() + theta.size())}, {"done", done}, {"evaluations", evaluations}};
    const auto now = std::chrono::steady_clock::now();
    if (file_.empty() || (!force && now - last_ < std::chrono::seconds(1))) return;
    last_ = now;
    write_file_atomic(file_, json{{"key", key_}, {"candidates", state_}}.dump(1) + "\n");
  }
  bool resumed(const std::string& name) const { return state_.contains(name); }

 private:
  fs::path file_;
  std::string key_;
  json state_ = json::object();
  std::chrono::steady_clock::time_point last_{};
};

struct Driver {
  const Evaluator& evaluator;
  const OptimizeOptions& options;
  const RunContext& ctx;
  SavedState& saved;
};

/// Minimise J over the family's θ with NLopt from its start (or from a saved θ).
Candidate optimise(const Driver& d, Family f) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t c0 = std::clock();
  Candidate c;
  c.name = f.name;
  c.summary.algorithm = d.options.algorithm;
  const int n = f.protocol.size();
  auto [saved_theta, done] = d.saved.get(f.name, n);
  if (saved_theta.size() == n) f.protocol.unpack(saved_theta.cwiseMax(f.lo).cwiseMin(f.hi));
  Eigen::VectorXd x0 = f.protocol.pack().cwiseMax(f.lo).cwiseMin(f.hi);
  Eigen::VectorXd best = x0;
  double best_value = std::numeric_limits<double>::infinity();
  int evaluations = 0, failures = 0;
  Progress progress("optimize " + f.name, d.options.max_evaluations, !d.ctx.quiet);
  Protocol work = f.protocol;
  std::function<double(const std::vector<double>&, std::vector<double>&)> objective = [&](const std::vector<double>& x, std::vector<double>& g) {
    if (interrupted()) throw nlopt::forced_stop();
    const Eigen::VectorXd theta = Eigen::Map<const Eigen::VectorXd>(x.data(), n);
    work.unpack(theta);
    const Evaluation ev = d.evaluator.evaluate(work, !g.empty());
    ++evaluations;
    if (evaluations == 1) c.summary.initial_objective = ev.objective;
    if (!ev.ok || !std::isfinite(ev.objective)) {  // a protocol on which the theory fails: far uphill
      ++failures;
      std::fill(g.begin(), g.end(), 0.0);
      return 1e10;
    }
    if (!g.empty()) Eigen::Map<Eigen::VectorXd>(g.data(), n) = ev.gradient;
    if (ev.objective < best_value) {
      best_value = ev.objective;
      best = theta;
      d.saved.put(f.name, best, false, evaluations, false);
    }
    progress.advance(1, fmt::format("{} {:.8g}", objective_name(d.evaluator.objective().kind), best_value));
    return ev.objective;
  };
  if (done) {  // finished in an earlier run: evaluated once, not optimised again
    std::vector<double> g(static_cast<std::size_t>(n));
    objective(std::vector<double>(x0.data(), x0.data() + n), g);
    c.summary.termination = "resumed";
    c.summary.converged = true;
  } else {
    nlopt::opt opt(nlopt_algorithm(d.options.algorithm), static_cast<unsigned>(n));
    opt.set_lower_bounds(std::vector<double>(f.lo.data(), f.lo.data() + n));
    opt.set_upper_bounds(std::vector<double>(f.hi.data(), f.hi.data() + n));
    opt.set_min_objective(
        [](const std::vector<double>& x, std::vector<double>& g, void* data) {
          return (*static_cast<decltype(objective)*>(data))(x, g);
        },
        &objective);
    // A budget: the schedule's mean is fixed (a linear or smooth equality constraint on its θ).
    struct BudgetData {
      const Protocol* protocol;
      int schedule, offset, size;
      double mean;
    };
    std::vector<BudgetData> budgets;
    for (const auto& [k, mean] : f.budgets) {
      int offset = 0;
      for (int j = 0; j < k; ++j) offset += static_cast<int>(f.protocol.schedules[static_cast<std::size_t>(j)].theta.size());
      budgets.push_back({&f.protocol, k, offset, static_cast<int>(f.protocol.schedules[static_cast<std::size_t>(k)].theta.size()), mean});
    }
    for (auto& b : budgets)
      opt.add_equality_constraint(
          [](const std::vector<double>& x, std::vector<double>& g, void* data) {
            const auto* b = static_cast<const BudgetData*>(data);
            ControlSchedule s = b->protocol->schedules[static_cast<std::size_t>(b->schedule)];
            s.theta = Eigen::Map<const Eigen::VectorXd>(x.data() + b->offset, b->size);
            Eigen::VectorXd grad;
            const double m = s.mean(g.empty() ? nullptr : &grad);
            if (!g.empty()) {
              std::fill(g.begin(), g.end(), 0.0);
              for (int j = 0; j < b->size; ++j) g[static_cast<std::size_t>(b->offset + j)] = grad(j);
            }
            return m - b->mean;
          },
          &b, 1e-10);
    opt.set_maxeval(d.options.max_evaluations);
    opt.set_ftol_rel(d.options.ftol_rel);
    opt.set_xtol_rel(d.options.xtol_rel);
    std::vector<double> x(x0.data(), x0.data() + n);
    double value = 0;
    try {
      const nlopt::result r = opt.optimize(x, value);
      c.summary.termination = result_name(r);
      c.summary.converged = r == nlopt::SUCCESS || r == nlopt::FTOL_REACHED || r == nlopt::XTOL_REACHED;
    } catch (const nlopt::forced_stop&) {
      c.summary.termination = "interrupted";
    } catch (const nlopt::roundoff_limited&) {
      c.summary.termination = "ROUNDOFF_LIMITED";
      c.summary.converged = true;
      c.summary.message = "stopped by round-off: the objective cannot be lowered further at this precision";
    } catch (const std::exception& e) {
      c.summary.termination = "failed";
      c.summary.message = e.what();
    }
  }
  progress.finish();
  // The best point seen (with budgets: NLopt's own final point, which satisfies them).
  Eigen::VectorXd final_theta = best;
  c.protocol = f.protocol;
  c.protocol.unpack(final_theta);
  c.evaluation = d.evaluator.evaluate(c.protocol, true);
  c.summary.evaluations = evaluations;
  c.summary.final_objective = c.evaluation.objective;
  c.summary.projected_gradient_norm = projected_gradient_norm(f, final_theta, c.evaluation.gradient);
  c.summary.seconds = seconds_since(t0);
  c.summary.cpu_seconds = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  if (failures) c.summary.message += fmt::format("{}{} evaluations failed in the theory (treated as 1e10)", c.summary.message.empty() ? "" : "; ", failures);
  if (c.summary.termination != "interrupted") d.saved.put(f.name, final_theta, true, evaluations, true);
  else d.saved.put(f.name, final_theta, false, evaluations, true);
  return c;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------
// The command

namespace {

std::string run_key(const Params& p, const OptimizeOptions& o, const std::string& model) {
  json j = {{"model", model}, {"config", p.nested()}, {"options", o.to_json()}};
  j["options"].erase("confirm_size");
  j["options"].erase("confirm_seeds");
  j["options"].erase("confirm_theory");
  j["options"].erase("curve_points");
  return fmt::format("{:016x}", std::hash<std::string>{}(j.dump()));
}

std::vector<double> curve_times(double T, int points, const std::vector<double>& breakpoints) {
  std::vector<double> t;
  for (int k = 0; k < points; ++k) t.push_back(T * k / (points - 1));
  for (double b : breakpoints) t.push_back(b);
  std::sort(t.begin(), t.end());
  t.erase(std::unique(t.begin(), t.end(), [](double a, double b) { return std::fabs(a - b) < 1e-12 * std::max(1.0, a); }), t.end());
  return t;
}

/// schedules.csv: t and every candidate's controls (both sides of each jump: a row at t from the
/// left and one from the right); risk_curves.csv: t and the risk under each candidate.
void add_curves(const Evaluator& ev, const std::vector<Candidate>& all, int points, RunOutput& out) {
  const double T = ev.objective().t_final;
  std::vector<double> breaks;
  for (const auto& c : all)
    for (const auto& s : c.protocol.schedules)
      for (double b : s.breakpoints()) breaks.push_back(b);
  const std::vector<double> times = curve_times(T, points, breaks);
  std::vector<std::string> cols = {"t"};
  for (const auto& c : all)
    for (const auto& s : c.protocol.schedules) cols.push_back(c.name + "_" + s.control);
  Table schedules(cols);
  for (double t : times)
    for (double side : {-1.0, 1.0}) {
      const double where = std::clamp(t + side * 1e-9 * std::max(1.0, T), 0.0, T);
      std::vector<double> row = {t};
      for (const auto& c : all)
        for (const auto& s : c.protocol.schedules) row.push_back(s.value(t, where));
      if (side < 0 && t == 0) continue;
      if (side > 0 && t == T) continue;
      schedules.add_row(row);
    }
  out.tables["schedules.csv"] = schedules;
  std::vector<std::string> rc = {"t"};
  for (const auto& c : all) rc.push_back(c.name);
  Table risks(rc);
  std::vector<std::vector<double>> columns;
  for (const auto& c : all) columns.push_back(ev.curve(c.protocol, times).numbers(ev.theory().risk_name()));
  for (std::size_t r = 0; r < times.size(); ++r) {
    std::vector<double> row = {times[r]};
    for (const auto& col : columns) row.push_back(r < col.size() ? col[r] : std::numeric_limits<double>::quiet_NaN());
    risks.add_row(row);
  }
  out.tables["risk_curves.csv"] = risks;
}

json parameters_json(const Protocol& p) {
  json j = json::object();
  const auto names = p.parameter_names();
  const Eigen::VectorXd theta = p.pack();
  for (std::size_t k = 0; k < names.size(); ++k) j[names[k]] = theta(static_cast<Eigen::Index>(k));
  return j;
}

/// baselines.csv: one row per candidate with its objective, final risk and gain of the optimum.
Table candidate_table(const std::vector<Candidate>& all, const Candidate& optimum) {
  Table t({"schedule", "objective", "final_risk", "gain_of_optimum", "relative_gain", "evaluations", "converged", "termination", "parameters"});
  for (const auto& c : all) {
    const double gain = c.evaluation.objective - optimum.evaluation.objective;
    t.add_row({c.name, c.evaluation.objective, c.evaluation.final_risk, gain, gain / std::fabs(c.evaluation.objective),
               static_cast<double>(c.summary.evaluations), c.summary.converged ? 1.0 : 0.0, c.summary.termination,
               parameters_json(c.protocol).dump()});
  }
  return t;
}

/// The finite system trained under the optimum and the best constant (harness ensembles): the
/// realised final risks and the realised gain against the predicted one. Seed k's prediction is the
/// theory's from that seed's own initial overlaps (recorded before its first step), not from the
/// optimiser's start: where the plateau's escape depends on the initial symmetry breaking (the
/// specialization model), the gain itself does, and a simulated seed can only be held to the theory
/// of the state it started from. A sampled theory predicts seed k on its own sample set k (as
/// validate pairs them), so that the theory's sampling error is in the per-seed spread and in z.
json confirm(const DynamicsModel& model, const Params& p, const OptimizeOptions& o, const Evaluator& ev, const Dynamics& predicting,
             const IntegrateOptions& io, const Candidate& optimum, const Candidate& constant, RunContext& ctx, Table& table) {
  const double T = ev.objective().t_final;
  const std::string risk = ev.theory().risk_name();
  struct Run {
    const Candidate* c;
    double mean = 0, se = 0;
    int finished = 0;
    std::vector<double> per_seed;   ///< the final risk of each finished seed, in seed order
    std::vector<double> predicted;  ///< the theory's final risk from each finished seed's initial state
  };
  std::vector<Run> runs = {{&optimum}, {&constant}};
  for (auto& r : runs) {
    const Params q = p.with({{"schedule", r.c->protocol.schedule().to_json()},
                             {"t_points", std::vector<double>{0.0, T}},
                             {"seeds", o.confirm_seeds}});
    const Ensemble e = run_ensemble(Bound(model, q), o.confirm_size, ctx);
    r.finished = e.finished;
    const auto k = e.mean.observable(risk);
    if (e.mean.empty() || !k) throw std::runtime_error("confirm: the simulation reports no " + risk);
    const Measured last = e.mean.quantity(e.mean.size() - 1, *k);
    r.mean = last.value, r.se = last.se;
    for (const Trajectory& run : e.runs) r.per_seed.push_back(run.quantity(run.size() - 1, *k).value);
    for (std::size_t k = 0; k < e.initial_states.size(); ++k) {
      const std::unique_ptr<ControlledTheory> theory = predicting.controlled(static_cast<int>(k));
      r.predicted.push_back(Evaluator(*theory, e.initial_states[k], ev.objective(), io).evaluate(r.c->protocol, false).final_risk);
    }
  }
  const auto mean_se = [](const std::vector<double>& v) { return stats::mean_se(v); };
  table = Table({"schedule", "predicted_from_seed_starts", "predicted_from_seed_starts_se", "predicted_at_optimiser_start", "simulated",
                 "simulated_se", "seeds"});
  for (const auto& r : runs) {
    const stats::MeanSe pr = mean_se(r.predicted);
    table.add_row({r.c->name, pr.mean, pr.se, r.c->evaluation.final_risk, r.mean, r.se, static_cast<double>(r.finished)});
  }
  // Both ensembles train seed k from the same initial weights and data streams: the gain's error is
  // that of the per-seed differences (common random numbers), far below the two means' combined one;
  // seed k's predicted gain is the theory's from that seed's start, so realised minus predicted is
  // compared seed by seed.
  const bool paired = runs[0].per_seed.size() == static_cast<std::size_t>(o.confirm_seeds) && runs[1].per_seed.size() == runs[0].per_seed.size();
  std::vector<double> realised, predicted, excess;
  for (std::size_t k = 0; paired && k < runs[0].per_seed.size(); ++k) {
    realised.push_back(runs[1].per_seed[k] - runs[0].per_seed[k]);
    predicted.push_back(runs[1].predicted[k] - runs[0].predicted[k]);
    excess.push_back(realised.back() - predicted.back());
  }
  const stats::MeanSe g = mean_se(realised), gp = mean_se(predicted), d = mean_se(excess);
  const double unpaired_se = std::hypot(runs[0].se, runs[1].se);
  const double gain = paired ? g.mean : runs[1].mean - runs[0].mean;
  const double gain_se = paired ? g.se : unpaired_se;
  const double predicted_gain = paired ? gp.mean : mean_se(runs[1].predicted).mean - mean_se(runs[0].predicted).mean;
  const double z_se = paired ? d.se : unpaired_se;
  return {{"size", o.confirm_size},
          {"seeds", o.confirm_seeds},
          {"predicted_gain", predicted_gain},
          {"predicted_gain_se", paired ? number_or_null(gp.se) : json(nullptr)},
          {"predicted_gain_at_optimiser_start", constant.evaluation.final_risk - optimum.evaluation.final_risk},
          {"predicting_theory", o.confirm_theory.empty() ? json("the optimised one") : o.confirm_theory},
          {"realised_gain", gain},
          {"realised_gain_se", gain_se},
          {"unpaired_se", unpaired_se},
          {"z", z_se > 0 ? (gain - predicted_gain) / z_se : 0.0},
          {"note", "seed k of both schedules starts from the same weights and draws the same data streams; seed k's predicted gain is "
                   "the theory's from that seed's own initial overlaps, on the theory's sample set k where it is sampled; z is the mean "
                   "of the per-seed (realised - predicted) gains over its standard error"}};
}

}  // namespace

RunOutput run_optimize(const DynamicsModel& model, const Params& p, const OptimizeOptions& o, RunContext& ctx) {
  const Bound bound(model, p);
  const auto theory = bound.dynamics().controlled(0);
  if (!theory) throw InputError("MODEL", "this model declares no controllable parameters (optimize: committee, specialization)");
  const Problem pr = check_options(o, *theory, p);
  // The theory that predicts the confirmation (the optimised configuration with the confirmation's
  // theory settings), bound and so checked before any work.
  const std::unique_ptr<const Bound> predicting_bound =
      o.confirm_size > 0 && !o.confirm_theory.empty() ? std::make_unique<const Bound>(model, p.with(o.confirm_theory)) : nullptr;
  const Eigen::VectorXd x0 = bound.dynamics().initial_state(bound.theory(0));
  IntegrateOptions io;
  io.rtol = o.rtol;
  io.atol = o.atol;
  ObjectiveSpec spec = pr.objective;
  if (spec.kind == Objective::time_to_target) {  // the fallback's rate: the mean rate needed from t = 0
    const double r0 = theory->risk(x0, theory->defaults(), nullptr, nullptr);
    spec.fallback_rate = std::max(std::fabs(r0 - o.target) / pr.t_final, 1e-12);
  }
  const Evaluator evaluator(*theory, x0, spec, io);
  SavedState saved(ctx.out.empty() ? fs::path() : ctx.out / "optimize_state.json", run_key(p, o, ""), o.restart);
  const Driver driver{evaluator, o, ctx, saved};
  const auto t0 = std::chrono::steady_clock::now();

  std::vector<Candidate> baselines;
  baselines.push_back(optimise(driver, make_family("constant", pr, o, configured_protocol(pr, o, *theory))));
  const Protocol best_constant = baselines.front().protocol;
  if (o.baselines && !pr.scheduled.empty())
    for (const char* name : {"step_decay", "cosine", "power_law"}) {
      if (interrupted()) break;
      baselines.push_back(optimise(driver, make_family(name, pr, o, best_constant)));
    }
  const Candidate* best = &baselines.front();
  for (const auto& c : baselines)
    if (c.evaluation.objective < best->evaluation.objective) best = &c;
  Family optimal = make_family("optimal", pr, o, best_constant);
  optimal.protocol.unpack(project(optimal, best->protocol));
  Candidate optimum = interrupted() ? Candidate{"optimal", best->protocol, best->evaluation, {}} : optimise(driver, optimal);
  if (optimum.summary.termination.empty()) optimum.summary.termination = "interrupted";

  RunOutput out;
  std::vector<Candidate> all = {optimum};
  all.insert(all.end(), baselines.begin(), baselines.end());
  out.files["schedule.json"] = optimum.protocol.schedule().to_json().dump(2) + "\n";
  for (const auto& c : baselines) out.files["schedule_" + c.name + ".json"] = c.protocol.schedule().to_json().dump(2) + "\n";
  out.tables["baselines.csv"] = candidate_table(all, optimum);
  add_curves(evaluator, all, o.curve_points, out);
  json& info = out.info["optimize"];
  info["options"] = o.to_json();
  info["t_final"] = pr.t_final;
  info["objective"] = objective_name(o.objective);
  info["risk"] = theory->risk_name();
  info["controls"] = {{"scheduled", pr.scheduled}, {"final", pr.finals}};
  info["gradient"] = "exact: segment transition matrices and sensitivities by hdat::integrate, adjoint recursion (theory/optimize/derivation.md)";
  for (const auto& c : all) {
    info["solver"][c.name] = c.summary.to_json();
    info["results"][c.name] = {{"objective", c.evaluation.objective}, {"final_risk", c.evaluation.final_risk},
                               {"time_to_target", number_or_null(c.evaluation.time_to_target)}, {"parameters", parameters_json(c.protocol)}};
  }
  info["optimisation_seconds"] = seconds_since(t0);
  const Candidate& constant = baselines.front();
  out.summary = fmt::format("optimal protocol of {} over [0, {:g}] ({} objective, risk {})\n", fmt::join(o.controls, ", "), pr.t_final,
                            objective_name(o.objective), theory->risk_name());
  for (const auto& c : all)
    out.summary += fmt::format("  {:<11} {:.8g}  (gain of the optimum {:+.3e}, {:.2f}%)  {}\n", c.name, c.evaluation.objective,
                               c.evaluation.objective - optimum.evaluation.objective,
                               100 * (c.evaluation.objective - optimum.evaluation.objective) / std::fabs(c.evaluation.objective),
                               c.summary.termination);
  out.summary += "  solver " + optimum.summary.brief() + "\n";
  const bool stopped = interrupted() || optimum.summary.termination == "interrupted";
  if (!stopped && o.confirm_size > 0) {
    Table table;
    const Dynamics& predicting = predicting_bound ? predicting_bound->dynamics() : bound.dynamics();
    info["confirm"] = confirm(model, p, o, evaluator, predicting, io, optimum, constant, ctx, table);
    out.tables["confirm.csv"] = table;
    const json& cf = info["confirm"];
    out.summary += fmt::format("  simulation at {:g}: gain of the optimum over the best constant {:.4g} ± {:.2g} (predicted from the seeds' own starts {:.4g}, z = {:.2f})\n",
                               o.confirm_size, cf["realised_gain"].get<double>(), cf["realised_gain_se"].get<double>(),
                               cf["predicted_gain"].get<double>(), cf["z"].get<double>());
  }
  if (stopped) {
    out.exit_code = code(ExitCode::interrupted);
    out.summary += "  INTERRUPTED: what finished is kept in optimize_state.json; the same command resumes\n";
  }
  return out;
}

}  // namespace hdat::optimize
