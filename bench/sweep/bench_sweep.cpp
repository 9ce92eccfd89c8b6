// Points per second of a theory sweep of the specialization model's final risk, for 1, 2, 4, ...
// threads up to the machine's cores (each thread count starts from an empty folder, so every point is
// computed). The sweep is checked to give the same table for every thread count. "CPU s per point"
// staying flat while threads grow means the sweep adds no contention; "cores obtained" (CPU / wall)
// says whether the machine actually gave the threads their cores (on a shared machine it may not).
//   bench_sweep [--quick] [--max-threads N]
//   --quick: mc_samples=4000 (a point takes ~0.2 s instead of ~1 s)
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>
#include <sys/resource.h>
#include <unistd.h>

#include "hdat/core/registry.hpp"
#include "hdat/sweep/sweep.hpp"

namespace hdat {
void register_specialization(Registry& r);
}

namespace {
// CPU seconds of this process (all threads): cores actually obtained = CPU / wall. On a shared
// machine a second thread may get no second core; this column says so.
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}
}  // namespace

using namespace hdat;

int main(int argc, char** argv) {
  bool quick = false;
  int max_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) quick = true;
    else if (!std::strcmp(argv[i], "--max-threads") && i + 1 < argc) max_threads = std::atoi(argv[++i]);
  }
  register_specialization(registry());
  const ModelEntry& m = registry().get("specialization");
  std::vector<std::pair<std::string, nlohmann::json>> settings;
  if (quick) settings.push_back({"mc_samples", 4000});
  const Params base = resolve_for(m, nullptr, settings);
  // 24 points: the headline figure's grid (final risk of the three activations against the signal amplitude).
  const sweep::Plan plan = sweep::make_plan(m, "curve", base, {"activation=[softmax,softmax1,bayes]", "prior.scale=0.25:2:8"}, {"final:risk"});
  const auto root = std::filesystem::temp_directory_path() / fmt::format("hdat-bench-sweep-{}", ::getpid());
  fmt::print("theory sweep of the specialization final risk: {} points (activation x prior.scale), mc_samples={}, t_max={}, "
             "n_points={}\n", plan.points.size(), base.integer("mc_samples"), base.real("t_max"), base.integer("n_points"));
  fmt::print("{:>8} {:>10} {:>10} {:>9} {:>11} {:>16} {:>15}\n", "threads", "wall [s]", "points/s", "speed-up", "efficiency",
             "CPU s per point", "cores obtained");
  double rate1 = 0;
  std::string reference;
  for (int t = 1; t <= max_threads; t *= 2) {
    const auto dir = root / std::to_string(t);
    std::filesystem::remove_all(dir);
    std::vector<sweep::Row> rows;
    sweep::RunOptions o;
    o.threads = t;
    o.quiet = true;
    const double cpu0 = cpu_seconds();
    const auto counts = sweep::run_points(plan, dir, sweep::shard_indices(plan.points.size(), 0, 1), o, rows);
    const double rate = static_cast<double>(counts.computed) / counts.wall_seconds;
    if (t == 1) rate1 = rate;
    const double cpu = cpu_seconds() - cpu0;
    fmt::print("{:>8} {:>10.2f} {:>10.3f} {:>9.2f} {:>11.2f} {:>16.3f} {:>15.2f}\n", t, counts.wall_seconds, rate, rate / rate1,
               rate / rate1 / t, cpu / static_cast<double>(counts.computed), cpu / counts.wall_seconds);
    std::string table;
    for (const auto& r : rows) table += fmt::format("{} {}\n", r.status, r.values.at(0));
    if (reference.empty()) reference = table;
    else if (table != reference) fmt::print("  the table differs from the 1-thread one!\n");
    if (t < max_threads && t * 2 > max_threads) t = max_threads / 2;  // end at max_threads exactly
  }
  std::filesystem::remove_all(root);
  return 0;
}
