// The commands a dynamics model gets from its declaration (harness.hpp): each computes its result
// through the building blocks, then turns it into tables, run.json entries and a summary.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

#include "hdat/core/exit_code.hpp"
#include "hdat/core/harness.hpp"
#include "hdat/core/progress.hpp"
#include "hdat/core/output.hpp"

namespace hdat {

namespace {


// Every block of a state as JSON: matrices as lists of rows, vectors as lists.
nlohmann::json blocks_json(const StateLayout& layout, const Eigen::VectorXd& x) {
  nlohmann::json out = nlohmann::json::object();
  for (const Block& b : layout.blocks()) {
    const auto m = layout.view(x, b.name);
    nlohmann::json j = nlohmann::json::array();
    for (int i = 0; i < b.rows; ++i) {
      if (b.vector) {
        j.push_back(m(i, 0));
        continue;
      }
      nlohmann::json row = nlohmann::json::array();
      for (int k = 0; k < b.cols; ++k) row.push_back(m(i, k));
      j.push_back(row);
    }
    out[b.name] = j;
  }
  return out;
}

std::string describe(const Bound& bound) {
  const std::string d = bound.dynamics().describe();
  return d.empty() ? "" : " (" + d + ")";
}

void finish(const Bound& bound, const Computed& computed, RunOutput& out) {
  Verdict unused;
  bound.dynamics().finish(bound, computed, out, unused);
}

}  // namespace

void check_times(const std::vector<double>& times, double t_start, double t_max, const std::string& key, const std::string& what) {
  const std::string these = what.empty() ? "" : " (" + what + ")";
  if (times.empty()) throw InputError(key, "must hold at least one observation time" + these);
  for (std::size_t i = 0; i < times.size(); ++i) {
    if (!std::isfinite(times[i])) throw InputError(key, fmt::format("time {} is not finite{}", i, these));
    if (times[i] < t_start)
      throw InputError(key, fmt::format("time {:g} lies before the start t = {:g}, where the initial state is{}", times[i], t_start, these));
    if (i && !(times[i] > times[i - 1]))
      throw InputError(key, fmt::format("must be strictly increasing: {:g} follows {:g}{}", times[i], times[i - 1], these));
  }
  if (times.back() > t_max)
    throw InputError(key, fmt::format("time {:g} lies beyond t_max = {:g} (give a t_max at or past the last time, or leave t_max out: "
                                      "the run then ends at the last time){}", times.back(), t_max, these));
}

namespace {

// The settings read once for `p`, checked before any work.
DynamicsSettings checked_settings(const Dynamics& dynamics, const Params& p) {
  const DynamicsSettings s = dynamics.settings();
  const bool listed = p.has("t_points");
  const std::string key = listed ? "t_points" : "t_max";
  // An explicit t_max bounds explicit t_points; without t_points it made the grid.
  const bool bounded = listed && p.set().find("t_max") && p.given("t_max");
  const double t_max = bounded ? p.real("t_max") : std::numeric_limits<double>::infinity();
  check_times(s.curve_times.empty() ? s.times : s.curve_times, s.t_start, t_max, key);
  // The finite system's own grid (whole steps) may round the last time past t_max by part of a step.
  if (!s.curve_times.empty())
    check_times(s.times, s.t_start, std::numeric_limits<double>::infinity(), key,
                fmt::format("on the grid the finite system reaches, {} = {:g}", s.size_name, s.simulate_size));
  for (double t : s.drift_times)
    if (!(t >= s.t_start)) throw InputError("drift_times", fmt::format("time {:g} lies before the start t = {:g}", t, s.t_start));
  return s;
}

}  // namespace

Bound::Bound(const DynamicsModel& model, const Params& p) : model_(model), params_(p) {
  dynamics_ = model.bind(p);
  settings_ = checked_settings(*dynamics_, p);
  layout_ = dynamics_->layout();
  events_ = dynamics_->events();
}

const EventFunction* Bound::escape() const {
  if (model_.escape_event.empty()) return nullptr;
  for (const EventFunction& e : events_)
    if (e.name == model_.escape_event) return &e;
  return nullptr;
}

const OdeTheory& Bound::theory(int replica) const {
  const std::lock_guard<std::mutex> lock(theories_mutex_);
  auto& slot = theories_[replica];
  if (!slot) slot = dynamics_->theory(replica);
  return *slot;
}

TheoryRun theory_curve(const Bound& bound, const CurveStart& start, const std::function<void(double t)>& reached) {
  const DynamicsSettings& s = bound.settings();
  IntegrateOptions options = s.integrate;
  options.events = bound.events();
  if (reached) options.progress = reached;
  return theory_observed(bound.theory(0), start.x0, s.t_start, s.curve_times.empty() ? s.times : s.curve_times, options);
}

RunOutput curve_output(const Bound& bound, const CurveStart& start, const TheoryRun& run) {
  const DynamicsSettings& s = bound.settings();
  RunOutput out;
  out.tables["curve.csv"] = run.trajectory.table();
  out.info["t_start"] = s.t_start;
  out.info["solver"] = run.solver.to_json();
  out.info["initial"] = blocks_json(bound.layout(), run.initial);
  out.info["final"] = blocks_json(bound.layout(), run.final);
  for (const auto& [key, value] : run.info.items()) out.info[key] = value;
  out.info["start"] = start.description;
  const std::size_t n = run.trajectory.size();
  // The last time reported (the solver's own t_reached may lie past it, inside its last step).
  const double t_last = n ? run.trajectory.t(n - 1) : s.t_start;
  out.summary = fmt::format("theory{} from t = {:g} to t = {:g}\n  start from         {}\n", describe(bound), s.t_start, t_last,
                            start.description);
  if (n) {
    const Observables last = bound.theory(0).observe(run.final, t_last);
    for (std::size_t k = 0; k < last.size(); ++k) {
      const std::string& name = last.names()[k];
      out.info["final_" + name] = last.at(k).value;
      if (last.estimated(k)) out.info["final_" + name + "_se"] = last.at(k).se;
      out.summary += last.estimated(k) ? fmt::format("  final {:<12} {:.6g} ± {:.2g}\n", name, last.at(k).value, last.at(k).se)
                                       : fmt::format("  final {:<12} {:.6g}\n", name, last.at(k).value);
    }
  }
  report_theory_events(bound, run, out);
  out.summary += "  solver             " + run.solver.brief() + "\n";
  return out;
}

RunOutput dynamics_curve(const Bound& bound, RunContext& ctx) {
  const DynamicsSettings& s = bound.settings();
  const auto start = std::chrono::steady_clock::now();
  const CurveStart start_state = curve_start(bound);
  const double t_end = (s.curve_times.empty() ? s.times : s.curve_times).back();
  // The work is the integration variable reached (t, or log(1 + t / scale) in log time): the steps
  // are about even in it, so the remaining time is honest.
  const IntegrateOptions& o = s.integrate;
  auto work = [&o](double t) { return o.log_time ? std::log1p(t / o.time_scale) : t; };
  Progress progress("curve", work(t_end) - work(s.t_start), !ctx.quiet, o.log_time ? "log(1 + t)" : "t");
  const TheoryRun run = theory_curve(bound, start_state, [&](double t) {
    progress.reach(work(t) - work(s.t_start), o.log_time ? fmt::format("t = {:.4g}", t) : "");
  });
  progress.finish();

  RunOutput out = curve_output(bound, start_state, run);
  out.info["theory_seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Computed computed;
  computed.curve = &run;
  finish(bound, computed, out);
  const std::size_t n = run.trajectory.size();
  const double t_last = n ? run.trajectory.t(n - 1) : s.t_start;
  if (interrupted()) {
    out.exit_code = code(ExitCode::interrupted);
    out.summary += fmt::format("  INTERRUPTED: the {} rows up to t = {:.6g} are kept in curve.csv; a curve is not resumed: the same "
                               "command computes it again from t = {:g}\n", n, t_last, s.t_start);
  } else if (!run.solver.ok()) {
    out.exit_code = code(ExitCode::numerical_failure);
    out.summary += "  STOPPED: " + run.solver.message + fmt::format(" (the rows up to t = {:.6g} are kept)\n", t_last);
  }
  return out;
}

RunOutput dynamics_simulate(const Bound& bound, RunContext& ctx) {
  const DynamicsSettings& s = bound.settings();
  const Ensemble ens = run_ensemble(bound, s.simulate_size, ctx);

  RunOutput out;
  out.tables["sim.csv"] = ens.mean.table();
  nlohmann::json escapes = nlohmann::json::array();
  for (double e : ens.escape_times) escapes.push_back(number_or_null(e));
  out.info["t_start"] = s.t_start;
  out.info["simulation"] = {{s.size_name, s.simulate_size},
                            {"seeds_requested", ens.requested},
                            {"seeds_finished", ens.finished},
                            {"seed", s.seed},
                            {"wall_seconds", ens.seconds},
                            {"persisted_seeds", ctx.out.empty() ? "" : (ctx.out / "seeds").string()}};
  if (!bound.model().escape_event.empty()) {
    out.info["simulation"]["escape_times"] = escapes;
    out.info["simulation"]["escape_times_located"] = "linear in the event function between the two observations that bracket its crossing";
  }
  if (!ens.records.empty() && !ens.records.front().empty()) out.info["simulation"]["runs"] = ens.records;
  out.summary = fmt::format("simulation{}: {} = {:g}, {} of {} seeds, t up to {:g}, {:.2f} s\n", describe(bound), s.size_name,
                            s.simulate_size, ens.finished, ens.requested, s.times.back(), ens.seconds);
  const std::size_t n = ens.mean.size();
  const Observables theory_observables = n ? bound.theory(0).observe(measured_initial_state(ens, bound.layout()), 0.0) : Observables();
  for (const auto& name : theory_observables.names())
    if (const auto k = ens.mean.observable(name)) {
      const Measured last = ens.mean.quantity(n - 1, *k);
      out.summary += fmt::format("  final {:<12} {:.6g} ± {:.2g} (seed mean ± standard error)\n", name, last.value, last.se);
    }
  Computed computed;
  computed.simulation = &ens;
  finish(bound, computed, out);
  if (ens.finished < ens.requested) {
    out.exit_code = code(ExitCode::interrupted);
    out.summary += fmt::format("  INTERRUPTED: the {} finished seeds are kept in {} (the same command resumes with the rest)\n", ens.finished,
                               ctx.out.empty() ? std::string("memory only") : (ctx.out / "seeds").string());
  }
  return out;
}

RunOutput dynamics_validate(const Bound& bound, RunContext& ctx) {
  const DynamicsSettings& s = bound.settings();
  const Params& p = bound.params();
  RunOutput out;
  out.info["t_start"] = s.t_start;
  const bool drift = p.set().find("mode") && p.text("mode") == "drift";
  bool complete = true;
  Verdict verdict;
  // What was computed stays whole for the model's hook; the folder gets copies of its tables.
  std::optional<DriftValidation> drift_check;
  std::optional<TrajectoryValidation> trajectories;
  Computed computed;
  if (drift) {
    const DriftValidation& v = drift_check.emplace(validate_drift(bound, ctx));
    out.tables["drift.csv"] = v.rows;
    out.summary = fmt::format("drift check{}\n", describe(bound)) + v.summary;
    verdict = v.verdict, complete = v.complete, out.info["validation"] = v.record;
    computed.drift = &v;
  } else {
    const TrajectoryValidation& v = trajectories.emplace(validate_trajectories(bound, ctx));
    out.tables["validate.csv"] = v.points;
    out.tables["escape.csv"] = v.escape;
    out.tables["validate_curves.csv"] = v.curves;
    out.summary = fmt::format("validate{}: theory vs simulation\n", describe(bound)) + v.summary;
    verdict = v.verdict, complete = v.complete, out.info["validation"] = v.record;
    computed.validation = &v;
  }
  // The model may add checks of its own (identities, conservation laws), merged into the verdict.
  bound.dynamics().finish(bound, computed, out, verdict);
  out.info["validation"]["verdict"] = verdict.name();
  out.info["validation"]["reasons"] = verdict.reasons;
  out.files["validate.json"] = out.info["validation"].dump(2) + "\n";
  out.exit_code = !complete ? code(ExitCode::interrupted) : code(verdict.exit_code());
  return out;
}

namespace {

// The binding the model's check attached to these parameters (made once when they were resolved),
// or a new one where none is attached (parameters not resolved through the check, another model).
std::shared_ptr<const Bound> bound_for(const DynamicsModel& model, const Params& p) {
  if (auto b = p.binding<Bound>(); b && &b->model() == &model) return b;
  return std::make_shared<const Bound>(model, p);
}

// What curve.csv's columns will be, from the bound theory's observables at its start: a sweep checks
// its observables of curve.csv against them before computing (the other tables' columns depend on
// what a finite system or the model's hook reports, known once a point ran).
std::map<std::string, std::vector<std::string>> known_columns(const DynamicsModel& model, const std::string& command, const Params& p) {
  std::map<std::string, std::vector<std::string>> known;
  if (command != "curve") return known;
  const auto bound = bound_for(model, p);
  const OdeTheory& theory = bound->theory(0);
  const double t_start = bound->settings().t_start;
  const Observables first = theory.observe(bound->dynamics().initial_state(theory), t_start);
  known["curve.csv"] = Trajectory(bound->layout(), first).table().columns();
  return known;
}

}  // namespace

RunOutput dynamics_curve(const DynamicsModel& model, const Params& p, RunContext& ctx) { return dynamics_curve(*bound_for(model, p), ctx); }
RunOutput dynamics_simulate(const DynamicsModel& model, const Params& p, RunContext& ctx) { return dynamics_simulate(*bound_for(model, p), ctx); }
RunOutput dynamics_validate(const DynamicsModel& model, const Params& p, RunContext& ctx) { return dynamics_validate(*bound_for(model, p), ctx); }

void add_dynamics_commands(ModelEntry& entry, std::shared_ptr<const DynamicsModel> model) {
  // The settings are checked when the parameters are resolved: before any command, sweep point or
  // Python call does any work.
  // The check binds the model (parsing the parameters into its Config, reading its settings) and
  // attaches the binding: the command works from it instead of binding again.
  entry.check = [own = entry.check, model](Params& p) {
    if (own) own(p);
    p.attach(std::make_shared<const Bound>(*model, p));
  };
  entry.columns = [model](const std::string& command, const Params& p) { return known_columns(*model, command, p); };
  entry.commands["curve"] = [model](const Params& p, RunContext& ctx) { return dynamics_curve(*model, p, ctx); };
  entry.commands["simulate"] = [model](const Params& p, RunContext& ctx) { return dynamics_simulate(*model, p, ctx); };
  entry.commands["validate"] = [model](const Params& p, RunContext& ctx) { return dynamics_validate(*model, p, ctx); };
  // validate's verdict is the sweep's status column (ok, disagree, undecided); its size is this number.
  entry.command_observables.emplace("validate", std::vector<std::string>{"worst=info:validation.max_deviation_over_allowed"});
  entry.dynamics = model;
}

ParamSet& declare_standard_keys(ParamSet& set, const StandardDefaults& d) {
  const auto not_listed = [](const Params& q) { return !q.has("t_points"); };
  std::vector<std::string> starts = {"mean", "replica"};
  std::string start_doc =
      "curve: start from the seeds' mean of the finite runs' initial overlaps (what simulate's mean starts from), or from replica 0's "
      "(one draw)";
  if (d.start_draw) {
    starts.push_back("draw");
    start_doc += ", or from the theory's own draw of the initial overlaps at the size " + d.size_key;
  }
  // Keys marked theory_only choose what is computed or compared, not how a finite run goes.
  set.real("t_max", d.t_max, "final time of curve and simulation (with t_points: at or past the last time; left out, the last time)",
           Range::positive())
      .real_list("t_points", nullptr,
                 "observation times, strictly increasing, in [0, t_max] (the initial state is at t = 0 whatever the first time; "
                 "default: 0 and n_points log-spaced times up to t_max)",
                 Range::nonnegative())
      .integer("n_points", d.n_points, "number of log-spaced observation times when t_points is not given", Range::between(2, 100000))
      .when("t_points is not given", not_listed, {"t_points"})
      .real("rtol", d.rtol, "relative tolerance of the adaptive integrator", Range::positive())
      .theory_only()
      .real("atol", d.atol, "absolute tolerance of the adaptive integrator", Range::positive())
      .theory_only()
      .choice("stepper", "dopri5", stepper_names(), "Odeint stepper")
      .theory_only()
      .integer("seed", 0, "seed of every random stream", Range::at_least(0))
      .choice("start", "mean", starts, start_doc)
      .theory_only()
      .integer("seeds", d.seeds, "independent simulation runs (replicas 0..seeds-1 of the seed)", Range::between(1, 100000))
      .theory_only()
      .int_list("dims", nlohmann::json(d.dims), "validate: sizes " + d.size_key + " of the finite-size study", Range::between(2, d.max_size))
      .theory_only()
      .choice("mode", "trajectory", {"trajectory", "drift"},
              "validate: compare whole trajectories, or the one-step drift of every order parameter term by term")
      .theory_only()
      .real("false_alarm", d.false_alarm,
            "validate: the probability that a right theory is called DISAGREE, over all compared points together "
            "(Student-t critical values, Bonferroni; docs/validation.md)",
            Range::open_between(0, 1))
      .theory_only()
      .real("detectable", d.detectable,
            "validate: UNDECIDED (exit 5) unless a deviation of this fraction of the block's scale would be caught at every "
            "compared point",
            Range::positive())
      .theory_only()
      .retire("tolerance", criterion_keys_instead())
      .real("rel_tolerance", d.rel_tolerance,
            "validate: deviations below this fraction of the block's scale always pass (finite-size bias allowance)", Range::nonnegative())
      .when_in("mode", {"trajectory"})
      .theory_only()
      .real("t_compare", -1.0, "validate: compare trajectories up to this time (-1: up to the first plateau escape, or t_max)")
      .when_in("mode", {"trajectory"})
      .theory_only()
      .integer("theory_replicas", d.theory_replicas, "validate: independent theory sample sets (their spread is the theory's sampling error)",
               Range::between(1, 64))
      .when_in("mode", {"trajectory"})
      .theory_only()
      .integer("drift_samples", d.drift_samples, "validate mode=drift: one-step increments averaged per check", Range::at_least(10))
      .when_in("mode", {"drift"})
      .theory_only()
      .real_list("drift_times", nlohmann::json(d.drift_times), "validate mode=drift: times along a run at which the drift is checked",
                 Range::nonnegative())
      .when_in("mode", {"drift"})
      .theory_only();
  return set;
}

std::vector<double> standard_times(const Params& p) {
  if (p.has("t_points")) {
    const Eigen::VectorXd t = p.vector("t_points");
    return {t.data(), t.data() + t.size()};  // as given: Bound refuses an unsorted list
  }
  const double t_max = p.real("t_max");
  return log_spaced(t_max * 1e-3, t_max, static_cast<int>(p.integer("n_points")), true);
}

DynamicsSettings standard_settings(const Params& p, const StandardDefaults& d, const StateLayout& layout) {
  DynamicsSettings s;
  s.times = standard_times(p);
  s.integrate.rtol = p.real("rtol");
  s.integrate.atol = p.real("atol");
  s.integrate.stepper = stepper_from_name(p.text("stepper"));
  s.integrate.component_name = [layout](int k) { return layout.component_name(k); };
  s.size_name = d.size_key;
  s.simulate_size = static_cast<double>(p.integer(d.size_key));
  for (long v : p.int_vector("dims")) s.validate_sizes.push_back(static_cast<double>(v));
  s.seeds = static_cast<int>(p.integer("seeds"));
  s.seed = static_cast<std::uint64_t>(p.integer("seed"));
  s.theory_replicas = static_cast<int>(p.integer("theory_replicas"));
  s.false_alarm = p.real("false_alarm");
  s.detectable = p.real("detectable");
  s.rel_tolerance = p.real("rel_tolerance");
  s.t_compare = p.real("t_compare");
  const Eigen::VectorXd dt = p.vector("drift_times");
  s.drift_times.assign(dt.data(), dt.data() + dt.size());
  s.drift_samples = p.integer("drift_samples");
  s.drift_size = s.validate_sizes.empty() ? s.simulate_size : s.validate_sizes.back();
  return s;
}

}  // namespace hdat
