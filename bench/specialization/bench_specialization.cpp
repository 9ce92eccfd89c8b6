// Speed of the specialization model: the theory's learning curve (right-hand-side cost, calls, thread
// scaling) and the online-SGD simulator (steps per second against a roofline measured on this core).
//   build/bench/specialization/bench_specialization [--quick | --step]
// (--step: the full engine's time per step only; bench/specialization/side_by_side.sh times it beside PyTorch)
#include <fmt/format.h>
#include <omp.h>

#include <boost/random/normal_distribution.hpp>
#include <algorithm>
#include <chrono>
#include <fmt/ranges.h>
#include <cstring>

#include "hdat/core/normal_stream.hpp"
#include "hdat/core/params.hpp"
#include "hdat/core/random.hpp"
#include "hdat/specialization/curve.hpp"
#include "hdat/specialization/reduced.hpp"
#include "hdat/specialization/simulator.hpp"
#include "hdat/core/progress.hpp"

using namespace hdat;
using namespace hdat::specialization;
using Clock = std::chrono::steady_clock;

namespace {

Params params(const std::vector<std::string>& sets) {
  std::vector<std::pair<std::string, json>> a;
  for (const auto& s : sets) a.push_back(parse_assignment(s));
  Params p = resolve(parameters(), {}, a);
  check(p);
  return p;
}

// Achievable multiply-add rate of this core: an in-cache Eigen matrix product.
double fma_rate() {
  const int n = 192;
  Eigen::MatrixXd A = Eigen::MatrixXd::Random(n, n), B = Eigen::MatrixXd::Random(n, n), C(n, n);
  C.noalias() = A * B;
  const auto t0 = Clock::now();
  int reps = 0;
  while (seconds_since(t0) < 0.5) {
    C.noalias() = A * B;
    ++reps;
  }
  return static_cast<double>(reps) * n * n * n / seconds_since(t0);
}

// Gaussian draws per second into a buffer of the size of one step's tokens (L·D = 320 000 at the
// issue's configuration): Boost.Random's ziggurat on mt19937_64 (the simulator's generator before
// rng::NormalStream), and rng::NormalStream (ARS-7 + ziggurat, the full engine's tokens).
// Draws per second of fill(buffer) over half a second.
template <class Fill>
double draw_rate(Fill fill) {
  std::vector<double> v(320000);
  const auto t0 = Clock::now();
  long n = 0;
  while (seconds_since(t0) < 0.5) {
    fill(v);
    n += static_cast<long>(v.size());
  }
  return static_cast<double>(n) / seconds_since(t0);
}

double ziggurat_rate() {
  auto eng = rng::engine(1);
  boost::random::normal_distribution<double> nd;
  return draw_rate([&](std::vector<double>& v) {
    for (auto& x : v) x = nd(eng);
  });
}

double normal_stream_rate() {
  rng::NormalStream stream(1, 0, rng::training_tokens);
  return draw_rate([&](std::vector<double>& v) { stream.fill(v.data(), v.size()); });
}
}  // namespace

// --step: the full engine's time per step at the configuration (D = 10⁴, L = 32, H = 4,
// softmax), median of five rounds, as one JSON line beside torch_step.py's (side_by_side.sh).
int time_full_step() {
  const int D = 10000, L = 32, H = 4, steps = 200;
  OnlineSGD sgd(Config::from(params({fmt::format("L={}", L), fmt::format("H={}", H), "F=2", "activation=softmax"})), D, 0, 0);
  for (int i = 0; i < 10; ++i) sgd.step();
  std::vector<double> rounds;
  for (int r = 0; r < 5; ++r) {
    const auto t0 = Clock::now();
    for (int i = 0; i < steps; ++i) sgd.step();
    rounds.push_back(seconds_since(t0) / steps * 1e3);
  }
  std::vector<double> sorted = rounds;
  std::sort(sorted.begin(), sorted.end());
  fmt::print("{{\"implementation\": \"hdat full engine\", \"D\": {}, \"L\": {}, \"H\": {}, \"dtype\": \"float64\", "
             "\"ms_per_step\": {:.4f}, \"rounds_ms\": [{:.4f}], \"generator\": \"{}\", \"draws_per_s\": {:.4g}, \"fma_per_s\": {:.4g}}}\n",
             D, L, H, sorted[2], fmt::join(rounds, ", "), fmt::format("ARS+ziggurat, {} lanes", rng::NormalStream::lanes()),
             normal_stream_rate(), fma_rate());
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--step") == 0) return time_full_step();
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  fmt::print("specialization benchmarks (load average matters: other processes share the cores)\n\n");

  // 1. Theory: the default learning curve (L = 4, H = F = 2, 2e4 samples, t up to 100).
  for (int threads : {1, 2}) {
    const Params p = params({"mc_samples=20000", "t_max=100"});
    FlowOptions fo = flow_options(p, threads);
    const auto t0 = Clock::now();
    const OrderParameterFlow flow(Config::from(p), fo);
    Eigen::MatrixXd M0, R0;
    initial_overlaps(p, flow.setup(), M0, R0);
    const FlowRun tr = integrate_flow(flow, M0, R0, observation_times(p), integrate_options(p, flow.layout()));
    const double wall = seconds_since(t0);
    fmt::print("theory curve, {} thread(s): {:.3f} s total; {} rhs calls, {:.2f} ms per rhs ({} evaluations each); "
               "{} accepted / {} rejected steps; final risk {:.6f}\n",
               threads, wall, tr.solver.rhs_calls, 1e3 * tr.solver.rhs_seconds / tr.solver.rhs_calls, flow.evaluations_per_expectation(),
               tr.solver.accepted_steps, tr.solver.rejected_steps, tr.trajectory.quantity(tr.trajectory.size() - 1, *tr.trajectory.observable("risk")).value);
  }

  // 2. Simulator: steps per second against the roofline of this core.
  const double fma = fma_rate(), draws = normal_stream_rate(), ziggurat = ziggurat_rate();
  fmt::print("\nthis core: {:.2f} GFMA/s (in-cache GEMM); Gaussian draws: {:.1f} M/s rng::NormalStream (ARS + ziggurat, {}), "
             "{:.1f} M/s Boost ziggurat on mt19937_64\n",
             fma / 1e9, draws / 1e6, fmt::format("{} lanes", rng::NormalStream::lanes()), ziggurat / 1e6);
  fmt::print("{:>7} {:>4} {:>3} {:>12} {:>12} {:>10} {:>14}\n", "D", "L", "H", "steps/s", "roofline/s", "fraction", "s per unit t");
  for (int D : {1000, 10000}) {
    for (auto [L, H] : {std::pair{8, 2}, std::pair{32, 4}}) {
      const Params p = params({fmt::format("L={}", L), fmt::format("H={}", H), "F=2", "activation=softmax"});
      OnlineSGD sgd(Config::from(p), D, 0, 0);
      const long steps = quick ? 200 : (D == 1000 ? 20000 : 2000);
      const auto t0 = Clock::now();
      for (long i = 0; i < steps; ++i) sgd.step();
      const double per_step = seconds_since(t0) / static_cast<double>(steps);
      // Work per step: L·D draws; multiply-adds: fields L·D·(H+1), update D·L·H, signal D·F.
      const double fmas = static_cast<double>(L) * D * (H + 1) + static_cast<double>(D) * L * H + 2.0 * D;
      const double roof = 1.0 / (static_cast<double>(L) * D / draws + fmas / fma);
      fmt::print("{:>7} {:>4} {:>3} {:>12.0f} {:>12.0f} {:>10.2f} {:>14.3f}\n", D, L, H, 1.0 / per_step, roof, (1.0 / per_step) / roof,
                 per_step * D);
    }
  }

  // 3. The exact reduced engine (engine=reduced): the chain of the Gram matrix, cost per step
  //    independent of D; the full engine beside it at the same configuration.
  fmt::print("\nreduced engine (exact chain of the Gram matrix of keys, value, spikes) against the full one, one thread\n");
  fmt::print("{:>8} {:>4} {:>3} {:>14} {:>14} {:>10} {:>16}\n", "D", "L", "H", "full steps/s", "reduced steps/s", "ratio", "reduced s/unit t");
  for (auto [L, H] : {std::pair{8, 2}, std::pair{32, 4}})
    for (int D : {1000, 10000, 100000, 1000000}) {
      const Params p = params({fmt::format("L={}", L), fmt::format("H={}", H), "F=2", "activation=softmax"});
      const Config s = Config::from(p);
      double full_rate = std::nan("");
      if (D <= 100000) {
        OnlineSGD sgd(s, D, 0, 0);
        const long steps = quick ? 20 : std::max(20L, 20000000L / (static_cast<long>(L) * D));
        const auto t0 = Clock::now();
        for (long i = 0; i < steps; ++i) sgd.step();
        full_rate = steps / seconds_since(t0);
      }
      ReducedOnlineSGD reduced(s, D, 0, 0);
      const long steps = quick ? 2000 : 20000;
      const auto t0 = Clock::now();
      for (long i = 0; i < steps; ++i) reduced.step();
      const double rate = steps / seconds_since(t0);
      fmt::print("{:>8} {:>4} {:>3} {:>14.0f} {:>14.0f} {:>10.1f} {:>16.3f}\n", D, L, H, full_rate, rate, rate / full_rate, D / rate);
    }
  return 0;
}
