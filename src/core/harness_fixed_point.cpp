// The commands a state-evolution model gets from its declaration (model.hpp, harness.hpp): the
// theory along the control parameter, fits of the finite-d estimator over (control, d, seed), and
// the 1/d extrapolation of their difference (finite_size_check.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <optional>

#include "hdat/core/constants.hpp"
#include "hdat/core/exit_code.hpp"
#include "hdat/core/error.hpp"
#include "hdat/core/harness.hpp"
#include "hdat/core/output.hpp"
#include "hdat/core/parallel_jobs.hpp"
#include "hdat/core/progress.hpp"
#include "hdat/core/statistics.hpp"

namespace hdat {

namespace fixed_point_harness {
namespace {

namespace fs = std::filesystem;

std::string describe(const FixedPoints& bound) {
  const std::string line = bound.describe();
  return line.empty() ? "" : " (" + line + ")";
}

// Seed means with standard errors of one named quantity of every fit, as `get` reads it.
template <class Get>
void add_seed_mean(Observables& to, const std::string& name, const std::vector<const Fit*>& fits, Get get) {
  std::vector<double> v;
  v.reserve(fits.size());
  for (const Fit* f : fits) v.push_back(get(*f));
  const stats::MeanSe m = stats::mean_se(v);
  to.add(name, m.mean, m.se);
}

// The seed statistics of one (control, d).
void summarise(FitGroup& g) {
  std::vector<const Fit*> ok;
  for (const Fit& f : g.fits) {
    if (f.failed)
      ++g.failed;
    else
      ok.push_back(&f);
  }
  if (ok.empty()) return;
  const Fit& first = *ok.front();
  for (const std::string& name : first.observables.names())
    add_seed_mean(g.mean, name, ok, [&](const Fit& f) { return f.observables[name].value; });
  for (const std::string& name : first.paired.names()) {
    add_seed_mean(g.paired_mean, name, ok, [&](const Fit& f) { return f.paired[name].value; });
    add_seed_mean(g.paired_difference, name, ok,
                  [&](const Fit& f) { return f.observables[name].value - f.paired[name].value; });
  }
  for (const Fit* f : ok) {
    g.iterations += f->report.iterations;
    g.converged_fraction += f->report.converged ? 1.0 : 0.0;
    g.paired_converged_fraction += f->paired_converged ? 1.0 : 0.0;
    g.seconds_per_run += f->report.seconds;
  }
  const double n = static_cast<double>(ok.size());
  g.iterations /= n;
  g.converged_fraction /= n;
  g.paired_converged_fraction /= n;
  g.seconds_per_run /= n;
}

int failed_fits(const std::vector<FitGroup>& groups) {
  int failed = 0;
  for (const FitGroup& g : groups) failed += g.failed;
  return failed;
}

// The standard error the 1/d fit uses: a quantised observable is never known better than its
// resolution allows (a uniform rounding error, step/√12, averaged over the seeds).
double fit_standard_error(const FixedPoints& bound, const std::string& observable, const FitGroup& g,
                          const stats::MeanSe& difference) {
  const double step = bound.resolution(observable, g.size);
  if (step <= 0 || difference.n <= 0) return difference.se;
  return std::max(difference.se, step / std::sqrt(12.0 * difference.n));
}

// A finished fit kept in the output folder (fits/), so that an interrupted simulate or validate
// resumes where it stopped: the fit's numbers exactly (JSON keeps 17 digits; NaN as null).
nlohmann::json number_json(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
double number_of(const nlohmann::json& j) { return j.is_null() ? kNaN : j.get<double>(); }

nlohmann::json observables_json(const Observables& o) {
  nlohmann::json a = nlohmann::json::array();
  for (std::size_t k = 0; k < o.size(); ++k)
    a.push_back({o.names()[k], number_json(o.at(k).value), number_json(o.at(k).se), static_cast<bool>(o.estimated(k))});
  return a;
}

Observables observables_of(const nlohmann::json& a) {
  Observables o;
  for (const auto& e : a) {
    if (e[3].get<bool>()) o.add(e[0].get<std::string>(), number_of(e[1]), number_of(e[2]));
    else o.add(e[0].get<std::string>(), number_of(e[1]));
  }
  return o;
}

nlohmann::json fit_json(const Fit& f) {
  return {{"observables", observables_json(f.observables)},
          {"paired", observables_json(f.paired)},
          {"paired_converged", f.paired_converged},
          {"failed", f.failed},
          {"report", {{"converged", f.report.converged}, {"iterations", f.report.iterations}, {"residual", number_json(f.report.residual)},
                      {"seconds", f.report.seconds}, {"message", f.report.message}}},
          {"info", f.info}};
}

Fit fit_of(const nlohmann::json& j) {
  Fit f;
  f.observables = observables_of(j.at("observables"));
  f.paired = observables_of(j.at("paired"));
  f.paired_converged = j.at("paired_converged").get<bool>();
  f.failed = j.at("failed").get<bool>();
  const auto& r = j.at("report");
  f.report.converged = r.at("converged").get<bool>();
  f.report.iterations = r.at("iterations").get<int>();
  f.report.residual = number_of(r.at("residual"));
  f.report.seconds = r.at("seconds").get<double>();
  f.report.message = r.at("message").get<std::string>();
  f.info = j.at("info");
  return f;
}

// Where the fits of this configuration are kept: named by every key that could change a fit (all
// but the theory-only ones), then by the fit's own place (control value, size, seed, paired).
struct FitStore {
  fs::path dir;
  std::string hash;
  FitStore(const Params& p, const RunContext& ctx) {
    if (ctx.out.empty()) return;
    dir = ctx.out / "fits";
    hash = simulation_hash(p);
  }
  fs::path file(const FitPoint& at) const {
    return dir / fmt::format("{}_control{}_size{}_seed{}{}.json", hash, at.control_index, at.size, at.seed, at.paired ? "_paired" : "");
  }
  std::optional<Fit> load(const FitPoint& at) const {
    if (dir.empty() || !fs::exists(file(at))) return std::nullopt;
    try {
      return fit_of(nlohmann::json::parse(read_file(file(at))));
    } catch (const nlohmann::json::exception&) {
      return std::nullopt;  // cut short or of another version: computed again
    }
  }
  void save(const FitPoint& at, const Fit& f) const {
    if (!dir.empty()) write_file_atomic(file(at), fit_json(f).dump() + "\n");
  }
};

}  // namespace
}  // namespace fixed_point_harness

using namespace fixed_point_harness;

std::vector<FitGroup> run_fits(const FixedPoints& bound, const Params& p, const FixedPointSettings& settings,
                               const std::vector<int>& sizes, const FixedPointRun* theory, const std::string& label,
                               const RunContext& ctx) {
  const FitStore store(p, ctx);
  struct Job {
    std::size_t group = 0, seed_index = 0;
    double cost = 0;
  };
  std::vector<FitGroup> groups;
  std::vector<Job> jobs;
  for (std::size_t ia = 0; ia < settings.controls.size(); ++ia)
    for (int d : sizes) {
      FitGroup g;
      g.control = settings.controls[ia];
      g.control_index = ia;
      g.size = d;
      g.fits.resize(settings.seeds.size());
      const double cost = bound.cost(g.control, d);
      for (std::size_t s = 0; s < settings.seeds.size(); ++s) jobs.push_back({groups.size(), s, cost});
      groups.push_back(std::move(g));
    }
  // The largest fits first: better load balance.
  std::stable_sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return a.cost > b.cost; });
  Progress progress(label, static_cast<long>(jobs.size()), !ctx.quiet);
  std::atomic<long> finished{0};
  const auto fit_at = [&](std::size_t k) {
    const Job& job = jobs[k];
    FitGroup& g = groups[job.group];
    FitPoint at;
    at.control = g.control;
    at.control_index = g.control_index;
    at.size = g.size;
    at.seed = settings.seeds[job.seed_index];
    at.paired = theory != nullptr;
    if (theory && theory->points.size() > g.control_index && theory->points[g.control_index].state.size() > 0)
      at.theory_state = &theory->points[g.control_index].state;
    if (std::optional<Fit> kept = store.load(at)) {
      g.fits[job.seed_index] = std::move(*kept);
    } else {
      g.fits[job.seed_index] = bound.fit(at);
      store.save(at, g.fits[job.seed_index]);
    }
    ++finished;
  };
  try {
    for_each_job(jobs.size(), fit_at, &progress);
  } catch (const Interrupted&) {
    throw Interrupted(store.dir.empty()
                          ? fmt::format("interrupted after {} of {} fits (no output folder: nothing kept)", finished.load(), jobs.size())
                          : fmt::format("interrupted: {} of {} fits finished and are kept in {}; the same command with the same "
                                        "--out resumes from them", finished.load(), jobs.size(), store.dir.string()));
  }
  for (FitGroup& g : groups) summarise(g);
  return groups;
}

Table fit_table(const FixedPointModel& model, const FixedPoints& bound, const FixedPointSettings& settings,
                const std::vector<FitGroup>& groups) {
  if (groups.empty()) return Table({model.control, settings.size_name});
  const FitGroup& first = groups.front();
  std::vector<std::string> cols = {model.control, settings.size_name};
  const auto fixed = [&](const FitGroup& g) { return bound.point_columns(g.control, g.size); };
  for (const auto& [name, value] : fixed(first)) cols.push_back(name);
  for (const std::string& name : first.mean.names()) {
    cols.push_back(name);
    cols.push_back(name + "_se");
  }
  for (const char* c : {"seeds", "iterations", "converged_fraction", "seconds_per_run"}) cols.emplace_back(c);
  for (const std::string& name : first.paired_mean.names())
    for (const std::string& c : {model.paired_prefix + "_" + name, "paired_" + name + "_diff", "paired_" + name + "_diff_se"})
      cols.push_back(c);
  Table t(cols);
  for (const FitGroup& g : groups) {
    std::vector<Cell> row = {g.control, double(g.size)};
    for (const auto& [name, value] : fixed(g)) row.push_back(value);
    for (const std::string& name : first.mean.names()) {
      const bool have = g.mean.has(name);
      row.push_back(have ? g.mean[name].value : kNaN);
      row.push_back(have ? g.mean[name].se : kNaN);
    }
    row.push_back(double(g.fits.size() - static_cast<std::size_t>(g.failed)));
    for (double v : {g.iterations, g.converged_fraction, g.seconds_per_run}) row.push_back(v);
    for (const std::string& name : first.paired_mean.names()) {
      const bool have = g.paired_mean.has(name);
      row.push_back(have ? g.paired_mean[name].value : kNaN);
      row.push_back(have ? g.paired_difference[name].value : kNaN);
      row.push_back(have ? g.paired_difference[name].se : kNaN);
    }
    t.add_row(row);
  }
  return t;
}

RunOutput fixed_point_curve(const FixedPointModel& model, const Params& p, RunContext& ctx) {
  use_threads(ctx.threads);
  const auto bound = model.bind(p);
  const FixedPointSettings s = bound->settings();
  const auto start = std::chrono::steady_clock::now();
  const auto run = bound->theory(s.controls, true);
  const double seconds = seconds_since(start);
  RunOutput out;
  out.tables["curve.csv"] = run->table(model.control);
  out.info["theory_method"] = run->method;
  out.info["solver"] = run->solver;
  out.info["solver"]["seconds_per_fixed_point"] = seconds / std::max<double>(1, s.controls.size());
  const int bad = run->unconverged();
  out.summary = fmt::format("theory{}: {} values of {} ({}), {:.3f} s, {} not converged", describe(*bound),
                            s.controls.size(), model.control, run->method, seconds, bad);
  if (bad) out.exit_code = code(ExitCode::numerical_failure);
  bound->finish({&s, run.get(), nullptr}, out);
  return out;
}

RunOutput fixed_point_simulate(const FixedPointModel& model, const Params& p, RunContext& ctx) {
  use_threads(ctx.threads);
  const auto bound = model.bind(p);
  const FixedPointSettings s = bound->settings();
  const std::vector<FitGroup> fits = run_fits(*bound, p, s, {s.simulate_size}, nullptr, "simulate", ctx);
  RunOutput out;
  out.tables["sim.csv"] = fit_table(model, *bound, s, fits);
  out.info["seeds"] = s.seeds;
  out.info[s.size_name] = s.simulate_size;
  const int failed = failed_fits(fits);
  out.info["failed_fits"] = failed;
  out.summary = fmt::format("simulate{}: {} = {}, {} values of {} x {} seeds, {} failed", describe(*bound), s.size_name,
                            s.simulate_size, s.controls.size(), model.control, s.seeds.size(), failed);
  if (failed) out.exit_code = code(ExitCode::numerical_failure);
  bound->finish({&s, nullptr, &fits}, out);
  return out;
}

RunOutput fixed_point_validate(const FixedPointModel& model, const Params& p, RunContext& ctx) {
  use_threads(ctx.threads);
  const auto bound = model.bind(p);
  const FixedPointSettings s = bound->settings();
  if (s.seeds.size() < 2) throw InputError("seeds", "validate needs at least 2 seeds (standard errors over seeds)");
  const auto theory = bound->theory(s.controls, true);
  const std::vector<FitGroup> fits = run_fits(*bound, p, s, s.validate_sizes, theory.get(), "validate", ctx);
  const bool paired = !fits.empty() && !fits.front().paired_mean.names().empty();

  // Per control value and observable: the mean (paired) difference simulation − theory, measured at
  // each d, extrapolated to d → ∞ must vanish.
  InverseSizeCheck check({model.control, "observable"}, s.validate_sizes, s.criterion,
                         paired ? DifferenceColumns{"paired_diff", "paired_se"} : DifferenceColumns{});
  const int failed = failed_fits(fits);
  for (std::size_t ia = 0; ia < s.controls.size(); ++ia)
    for (const std::string& name : s.compared) {
      const FixedPointSolution& point = theory->points[ia];
      const double predicted = point.observables[name].value;
      bool conditions = point.converged && failed == 0;
      std::vector<SizeMeasurement> per_size;
      for (const FitGroup& g : fits) {
        if (g.control_index != ia) continue;
        const Measured& sim = g.mean[name];
        const int n = static_cast<int>(g.fits.size()) - g.failed;
        const stats::MeanSe difference = paired ? stats::MeanSe{g.paired_difference[name].value, g.paired_difference[name].se, n}
                                                : stats::MeanSe{sim.value - predicted, sim.se, n};
        per_size.push_back({{sim.value, sim.se, n}, difference, fit_standard_error(*bound, name, g, difference)});
        conditions = conditions && (!paired || g.paired_converged_fraction == 1.0);
      }
      check.add({s.controls[ia], name}, predicted, per_size, conditions);
    }

  RunOutput out;
  out.tables["theory_points.csv"] = theory->table(model.control);
  out.tables["sim.csv"] = fit_table(model, *bound, s, fits);
  out.tables["validate.csv"] = check.table();
  const Verdict verdict = check.result();
  out.info["verdict"] = check.verdict(model.comparison);
  out.info["verdict"]["failed_fits"] = failed;
  out.info["dims"] = s.validate_sizes;
  out.info["seeds"] = s.seeds;
  out.info["theory_method"] = theory->method;
  out.info["theory_solver"] = theory->solver;
  out.exit_code = code(verdict.exit_code());
  out.summary = fmt::format("validate{}: {} of {} checks pass -> {}", describe(*bound), check.checks() - check.failures(),
                            check.checks(), verdict_word(verdict));
  for (const std::string& reason : verdict.reasons) out.summary += "\n  " + reason;
  bound->finish({&s, theory.get(), &fits}, out);
  return out;
}

void add_fixed_point_commands(ModelEntry& entry, std::shared_ptr<const FixedPointModel> model) {
  entry.commands["curve"] = [model](const Params& p, RunContext& ctx) { return fixed_point_curve(*model, p, ctx); };
  entry.commands["simulate"] = [model](const Params& p, RunContext& ctx) { return fixed_point_simulate(*model, p, ctx); };
  entry.commands["validate"] = [model](const Params& p, RunContext& ctx) { return fixed_point_validate(*model, p, ctx); };
  // validate's verdict is the sweep's status column; its size is this number.
  entry.command_observables.emplace("validate", std::vector<std::string>{"worst=info:verdict.max_deviation_over_allowed"});
}

}  // namespace hdat
