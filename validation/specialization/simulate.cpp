#include "hdat/specialization/simulate.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <chrono>
#include <cmath>
#include <functional>

#include "hdat/core/output.hpp"
#include "hdat/core/progress.hpp"
#include "hdat/specialization/curve.hpp"
#include "hdat/specialization/simulator.hpp"

namespace hdat::specialization {

namespace fs = std::filesystem;

std::string config_hash(const Params& p, int D) {
  // Keys that do not change a simulation's trajectory are left out, so that validate and simulate
  // share finished seeds.
  nlohmann::json j = p.flat();
  for (const char* k : {"dims", "mode", "tolerance", "rel_tolerance", "t_compare", "drift_samples", "drift_times", "mc_samples", "theory_replicas", "t_relax", "compare", "stages",
                        "sampling", "rtol", "atol", "stepper", "prune", "split_threshold", "broken_term", "seeds", "M0", "R0",
                        "asymmetry"})
    j.erase(k);
  j["D"] = D;
  const std::size_t h = std::hash<std::string>{}(j.dump());
  return fmt::format("{:016x}", h);
}

Table ensemble_mean(const std::vector<Table>& runs, const std::vector<std::string>& columns) {
  std::vector<std::string> out_cols = {"t", "risk", "risk_se"};
  for (const auto& c : columns) {
    out_cols.push_back(c);
    out_cols.push_back(c + "_se");
  }
  Table mean(out_cols);
  if (runs.empty()) return mean;
  const std::size_t rows = runs.front().rows();
  const double n = static_cast<double>(runs.size());
  auto stats = [&](std::size_t r, const std::string& c) {
    double s = 0, sq = 0;
    for (const auto& run : runs) {
      const double v = run.number(r, c);
      s += v;
      sq += v * v;
    }
    const double m = s / n;
    const double var = runs.size() > 1 ? std::max(0.0, (sq / n - m * m) * n / (n - 1)) : 0.0;
    return std::pair<double, double>{m, std::sqrt(var / n)};
  };
  for (std::size_t r = 0; r < rows; ++r) {
    std::vector<double> row = {runs.front().number(r, "t")};
    const auto [rm, rse] = stats(r, "risk");
    row.push_back(rm);
    row.push_back(rse);
    for (const auto& c : columns) {
      const auto [m, se] = stats(r, c);
      row.push_back(m);
      row.push_back(se);
    }
    mean.add_row(row);
  }
  return mean;
}

Ensemble simulate_ensemble(const Setup& s, const std::vector<double>& times, const EnsembleOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  const StateLayout layout = s.layout();
  std::vector<std::string> cols = {"t", "risk", "risk_se"};
  for (const auto& c : layout.columns()) cols.push_back(c);
  for (int h = 0; h < s.H; ++h) cols.push_back(fmt::format("v_{}", h));

  Ensemble ens;
  ens.requested = o.seeds;
  std::vector<Table> runs(static_cast<std::size_t>(o.seeds));
  std::vector<char> done(static_cast<std::size_t>(o.seeds), 0);
  auto seed_file = [&](int k) { return o.persist / fmt::format("{}_D{}_seed{}.csv", o.config_hash, o.D, o.seed + k); };
  // Seeds finished by an earlier (interrupted) run of the same configuration are reused.
  if (!o.persist.empty())
    for (int k = 0; k < o.seeds; ++k)
      if (fs::exists(seed_file(k))) {
        Table t = Table::read_csv_file(seed_file(k));
        if (t.rows() == times.size() && t.columns() == cols) runs[static_cast<std::size_t>(k)] = std::move(t), done[static_cast<std::size_t>(k)] = 1;
      }

  Progress progress(fmt::format("simulate D={}", o.D), static_cast<long>(o.seeds) * static_cast<long>(times.size()), !o.quiet);
  for (int k = 0; k < o.seeds; ++k)
    if (done[static_cast<std::size_t>(k)]) progress.advance(static_cast<long>(times.size()));
  const int threads = o.threads > 0 ? o.threads : omp_get_max_threads();
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int k = 0; k < o.seeds; ++k) {
    if (done[static_cast<std::size_t>(k)] || interrupted()) continue;
    OnlineSGD sgd(s, o.D, o.seed + static_cast<std::uint64_t>(k), 0);
    Table t(cols);
    bool complete = true;
    for (double time : times) {
      if (interrupted()) {
        complete = false;
        break;
      }
      sgd.advance_to(time);
      const auto [risk, se] = sgd.test_risk(o.test_size, o.test_projected);
      std::vector<double> row = {time, risk, se};
      Eigen::VectorXd x = pack_state(s, sgd.M(), sgd.R());
      for (double v : layout.values(x)) row.push_back(v);
      const Eigen::VectorXd vo = sgd.value_overlap();
      for (int h = 0; h < s.H; ++h) row.push_back(vo(h));
      t.add_row(row);
      progress.advance(1);
    }
    if (!complete) continue;
    if (!o.persist.empty()) write_file_atomic(seed_file(k), t.to_csv());
    runs[static_cast<std::size_t>(k)] = std::move(t);
    done[static_cast<std::size_t>(k)] = 1;
  }
  progress.finish();
  for (int k = 0; k < o.seeds; ++k)
    if (done[static_cast<std::size_t>(k)]) {
      ens.runs.push_back(runs[static_cast<std::size_t>(k)]);
      ens.escape_times.push_back(detect_events(ens.runs.back(), s.H, s.F, o.split_threshold).plateau_end);
    }
  ens.finished = static_cast<int>(ens.runs.size());
  ens.mean = ensemble_mean(ens.runs, layout.columns());
  ens.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ens.steps_per_seed = std::lround(times.back() * o.D);
  return ens;
}

EnsembleOptions ensemble_options(const Params& p, int D, std::uint64_t seed, const RunContext& ctx) {
  EnsembleOptions o;
  o.D = D;
  o.seeds = static_cast<int>(p.integer("seeds"));
  o.seed = seed;
  o.test_size = p.integer("test_size");
  o.test_projected = p.text("test_mode") == "projected";
  o.threads = ctx.threads;
  o.quiet = ctx.quiet;
  o.split_threshold = p.real("split_threshold");
  if (!ctx.out.empty()) o.persist = ctx.out / "seeds";
  o.config_hash = config_hash(p, D);
  return o;
}

RunOutput simulate_command(const Params& p, RunContext& ctx) {
  const Setup s = setup_from(p);
  const std::vector<double> times = observation_times(p);
  const EnsembleOptions o = ensemble_options(p, s.D, s.seed, ctx);
  const Ensemble ens = simulate_ensemble(s, times, o);

  RunOutput out;
  out.tables["sim.csv"] = ens.mean;
  nlohmann::json esc = nlohmann::json::array();
  for (double e : ens.escape_times) esc.push_back(std::isfinite(e) ? nlohmann::json(e) : nlohmann::json(nullptr));
  out.info["simulation"] = {{"D", s.D},
                            {"seeds_requested", ens.requested},
                            {"seeds_finished", ens.finished},
                            {"seed_replicas", fmt::format("seeds {}..{}: teacher (seed+k, 0, 2), init (seed+k, 0, 3), data (seed+k, 0, 4), test set (seed+k, 0, 5)",
                                                          s.seed, s.seed + static_cast<std::uint64_t>(o.seeds) - 1)},
                            {"test_size", o.test_size},
                            {"steps_per_seed", ens.steps_per_seed},
                            {"wall_seconds", ens.seconds},
                            {"escape_times", esc},
                            {"persisted_seeds", o.persist.empty() ? "" : o.persist.string()}};
  const std::size_t n = ens.mean.rows();
  std::string summary = fmt::format("specialization simulation: D={}, {} of {} seeds, t up to {:g}, {:.2f} s\n", s.D, ens.finished,
                                    ens.requested, times.back(), ens.seconds);
  if (n) summary += fmt::format("  final risk  {:.5f} ± {:.5f} (seed mean ± standard error)\n", ens.mean.number(n - 1, "risk"),
                                ens.mean.number(n - 1, "risk_se"));
  if (ens.finished < ens.requested) {
    out.exit_code = 130;
    summary += "  INTERRUPTED: the finished seeds are kept (rerun the same command to complete the rest)\n";
  }
  out.summary = summary;
  return out;
}

}  // namespace hdat::specialization
