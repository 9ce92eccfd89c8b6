// The theory's runs and the finite ensembles of the harness (harness.hpp).
#include <fmt/format.h>
#include <omp.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <cmath>
#include <functional>

#include "hdat/core/harness.hpp"
#include "hdat/core/output.hpp"
#include "hdat/core/progress.hpp"
#include "hdat/core/statistics.hpp"

namespace hdat {

namespace fs = std::filesystem;

TheoryRun theory_observed(const OdeTheory& theory, const Eigen::VectorXd& x0, double t_start, const std::vector<double>& times,
                          const IntegrateOptions& options) {
  const bool start_reported = !times.empty() && times.front() == t_start;
  std::vector<double> from_start = times;
  if (!start_reported) from_start.insert(from_start.begin(), t_start);
  TheoryRun run = theory.run(x0, from_start, options);
  // The row at t_start was only the start: the state is reported at `times`.
  if (!start_reported) run.trajectory = run.trajectory.drop_front(1);
  return run;
}

TheoryRun integrate_theory(const OdeTheory& theory, const Eigen::VectorXd& x0, const std::vector<double>& times, IntegrateOptions options) {
  const StateLayout& layout = theory.layout();
  if (!options.component_name) options.component_name = [layout](int k) { return layout.component_name(k); };
  TheoryRun out{Trajectory(layout, theory.observe(x0, times.front())), {}, x0, x0, nlohmann::json::object()};
  auto observe = [&](double t, const Eigen::VectorXd& x) {
    out.trajectory.append(t, theory.observe(x, t), x);
    out.final = x;
    return !interrupted();
  };
  auto system = [&theory](const ConstVecRef& x, VecRef dxdt, double t) { theory(x, dxdt, t); };
  out.solver = integrate(system, x0, times.front(), times, observe, options);
  return out;
}

TheoryRun run_theory_replicas(const Bound& bound, const Eigen::VectorXd& x0, const std::vector<double>& times, int replicas) {
  const DynamicsSettings& s = bound.settings();
  std::vector<Trajectory> trajectories;
  TheoryRun out;
  for (int k = 0; k < replicas; ++k) {
    TheoryRun run = theory_observed(bound.theory(k), x0, s.t_start, times, s.integrate);
    if (k == 0) out = run;
    else if (!run.solver.ok() && out.solver.ok()) out.solver = run.solver;
    trajectories.push_back(std::move(run.trajectory));
  }
  out.trajectory = Trajectory::mean_of(trajectories);  // over the rows every replica reached
  return out;
}

namespace {

std::string size_text(double size) {
  return size == std::floor(size) && std::fabs(size) < 1e15 ? fmt::format("{}", static_cast<long long>(size)) : fmt::format("{:g}", size);
}

}  // namespace

std::string simulation_hash(const Params& p, const nlohmann::json& extra) {
  nlohmann::json j = p.flat();
  // What the declaration says changes no finite run (theory-only keys, the harness's keys that choose
  // what is compared): ParamSet::theory_only.
  for (const ParamSpec& spec : p.set().specs())
    if (!spec.changes_simulation) j.erase(spec.key);
  for (const auto& [key, value] : extra.items()) j[key] = value;
  return fmt::format("{:016x}", std::hash<std::string>{}(j.dump()));
}

std::string simulation_hash(const Bound& bound, double size) { return simulation_hash(bound.params(), {{"size", size}}); }

TheoryRun OdeTheory::run(const Eigen::VectorXd& x0, const std::vector<double>& times, const IntegrateOptions& options) const {
  return integrate_theory(*this, x0, times, options);
}

namespace {

// The state as JSON numbers and back (a seed's persisted initial state).
nlohmann::json state_json(const Eigen::VectorXd& x) { return std::vector<double>(x.data(), x.data() + x.size()); }

Eigen::VectorXd state_from_json(const nlohmann::json& j) {
  const auto v = j.get<std::vector<double>>();
  return Eigen::Map<const Eigen::VectorXd>(v.data(), static_cast<Eigen::Index>(v.size()));
}

}  // namespace

namespace {

// Columns of runs that cannot be averaged together: persisted seeds from another version of the model.
void check_same_columns(const std::vector<Trajectory>& runs, const std::vector<char>& done, const fs::path& persist) {
  const Trajectory* first = nullptr;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    if (!done[k]) continue;
    if (!first) first = &runs[k];
    else if (runs[k].observables() != first->observables())
      throw std::runtime_error(fmt::format("the runs' columns differ (replica {} against the first); persisted seeds in {} were written by "
                                           "another version of the model: remove them", k, persist.string()));
  }
}

}  // namespace

Ensemble run_ensemble(const Bound& bound, double size, const RunContext& ctx) {
  const DynamicsSettings& settings = bound.settings();
  const StateLayout& layout = bound.layout();
  const auto start = std::chrono::steady_clock::now();
  const std::vector<double>& times = settings.times;
  Ensemble ens;
  ens.size = size;
  ens.requested = settings.seeds;
  const auto n_seeds = static_cast<std::size_t>(settings.seeds);
  std::vector<Trajectory> runs(n_seeds);
  std::vector<nlohmann::json> records(n_seeds, nlohmann::json::object());
  std::vector<std::optional<std::vector<std::string>>> checks(n_seeds);
  std::vector<Eigen::VectorXd> initial(n_seeds);
  std::vector<char> done(n_seeds, 0);
  const fs::path persist = ctx.out.empty() ? fs::path() : ctx.out / "seeds";
  const std::string hash = simulation_hash(bound, size);
  auto seed_file = [&](std::size_t k, const char* suffix) {
    return persist / fmt::format("{}_{}{}_seed{}_replica{}{}", hash, settings.size_name, size_text(size), settings.seed, k, suffix);
  };
  // A persisted seed: its table at the observation times with the layout's columns, its initial
  // state, its record (the hash names the configuration that wrote it).
  if (!persist.empty())
    for (std::size_t k = 0; k < n_seeds; ++k)
      if (fs::exists(seed_file(k, ".csv")) && fs::exists(seed_file(k, ".initial.json"))) {
        std::optional<Trajectory> t = Trajectory::from_table(Table::read_csv_file(seed_file(k, ".csv")), layout);
        const Eigen::VectorXd x0 = state_from_json(nlohmann::json::parse(read_file(seed_file(k, ".initial.json"))));
        if (!t || t->size() != times.size() || x0.size() != layout.size()) continue;
        runs[k] = std::move(*t), initial[k] = x0, done[k] = 1;
        if (fs::exists(seed_file(k, ".csv.json"))) records[k] = nlohmann::json::parse(read_file(seed_file(k, ".csv.json")));
        if (fs::exists(seed_file(k, ".checks.json")))
          checks[k] = nlohmann::json::parse(read_file(seed_file(k, ".checks.json"))).get<std::vector<std::string>>();
      }

  // Work in time reached summed over the seeds: a run's steps grow with t, not with the number of
  // (log-spaced) observations, so this is what makes the remaining time honest.
  const double per_seed = times.back() - times.front();
  Progress progress(fmt::format("simulate {}={}, {} seeds to t = {:g}", settings.size_name, size_text(size), settings.seeds, times.back()),
                    settings.seeds * per_seed, !ctx.quiet, "t summed over seeds");
  for (std::size_t k = 0; k < n_seeds; ++k)
    if (done[k]) progress.advance(per_seed);
  const int threads = settings.parallel_seeds ? (ctx.threads > 0 ? ctx.threads : omp_get_max_threads()) : 1;
  // A seed that throws (a model's error): no new seed starts, the running ones stop at their next
  // observation, the finished ones stay persisted, and the first exception reaches the caller (it
  // must not escape the OpenMP region: that would terminate the process).
  std::exception_ptr failure;
  std::mutex failure_mutex;
  std::atomic<bool> failed{false};
  const auto stopping = [&failed] { return interrupted() || failed.load(); };
  const auto run_seed = [&](std::size_t k) {
    auto system = bound.system(size, k);
    // The run starts at its own t_start: its initial state is recorded there, before any step,
    // whatever the observation times.
    const Eigen::VectorXd x0 = system->state();
    Trajectory t;
    bool complete = true;
    double reached = times.front();
    for (double time : times) {
      if (stopping()) {
        complete = false;
        break;
      }
      system->advance_to(time);
      const Observables observed = system->observe();
      if (t.empty()) t = Trajectory(layout, observed);
      t.append(time, observed, system->state());
      progress.advance(time - reached);
      reached = time;
    }
    if (!complete) return;
    records[k] = system->record();
    checks[k] = system->failed_checks();
    if (!persist.empty()) {
      if (!records[k].empty()) write_file_atomic(seed_file(k, ".csv.json"), records[k].dump() + "\n");
      if (checks[k]) write_file_atomic(seed_file(k, ".checks.json"), nlohmann::json(*checks[k]).dump() + "\n");
      write_file_atomic(seed_file(k, ".initial.json"), state_json(x0).dump() + "\n");
      write_file_atomic(seed_file(k, ".csv"), t.table().to_csv());  // last: its presence marks the seed finished
    }
    runs[k] = std::move(t);
    initial[k] = x0;
    done[k] = 1;
  };
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (std::size_t k = 0; k < n_seeds; ++k) {
    if (done[k] || stopping()) continue;
    try {
      run_seed(k);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      failed = true;
    }
  }
  progress.finish();
  if (failure) std::rethrow_exception(failure);
  check_same_columns(runs, done, persist);
  for (std::size_t k = 0; k < n_seeds; ++k)
    if (done[k]) {
      ens.runs.push_back(runs[k]);
      ens.records.push_back(records[k]);
      ens.failed_checks.push_back(checks[k]);
      ens.initial_states.push_back(initial[k]);
      if (!bound.model().escape_event.empty()) ens.escape_times.push_back(sampled_escape_time(bound, ens.runs.back()));
    }
  ens.finished = static_cast<int>(ens.runs.size());
  ens.mean = Trajectory::mean_of(ens.runs);
  ens.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return ens;
}

Eigen::VectorXd measured_initial_state(const Ensemble& ensemble, const StateLayout& layout) {
  Eigen::VectorXd mean = Eigen::VectorXd::Zero(layout.size());
  for (const auto& x : ensemble.initial_states) mean += x;
  return ensemble.initial_states.empty() ? mean : Eigen::VectorXd(mean / static_cast<double>(ensemble.initial_states.size()));
}

}  // namespace hdat
