// Speed of the polarization model: log-time flows to t = 1e40 and beyond (right-hand sides, wall time),
// and gradient descent (steps per second). Median of repeated runs; Release build.
//   build-*/bench/polarization/bench_polarization [repeats]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <vector>

#include "hdat/core/params.hpp"
#include "hdat/polarization/curve.hpp"
#include "hdat/polarization/instance.hpp"
#include "hdat/polarization/model.hpp"
#include "hdat/polarization/gd.hpp"

using namespace hdat;
using namespace hdat::polarization;

namespace {

Config config(const std::vector<std::pair<std::string, nlohmann::json>>& sets) {
  static const ParamSet keys = parameters();
  Params p = resolve(keys, nullptr, sets);
  check(p);
  return Config::from(p);
}

double median_seconds(int repeats, const std::function<void()>& f) {
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void flow(const std::string& label, const Config& c, int repeats) {
  const Instance in = make_instance(c);
  CurveResult r;
  const double s = median_seconds(repeats, [&] { r = theory_curve(c, in); });
  fmt::print("  {:<52} {:>9.3f} ms  {:>8} rhs  {:>6} steps  {}\n", label, 1e3 * s, r.flow.summary.rhs_calls, r.flow.summary.accepted_steps,
             r.flow.summary.status_name());
}

void descent(const std::string& label, const Config& c, double t_end, int repeats) {
  const Instance in = make_instance(c);
  GdOptions o;
  o.lr = c.lr;
  o.times = {0.0, t_end};
  GdRun g;
  const double s = median_seconds(repeats, [&] { g = gradient_descent(c, in, o); });
  fmt::print("  {:<52} {:>9.3f} s   {:>10} steps  {:.3g} steps/s\n", label, s, g.steps_done, g.steps_done / s);
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 5;
  fmt::print("theory (dopri5, rtol 1e-10, atol 1e-12, log time; 200 observation times)\n");
  flow("logistic, softmax, T = 8, reduced (u, a), t = 1e40", config({{"init", "numpy"}, {"seed", 123}, {"t_max", 1e40}}), repeats);
  flow("logistic, softmax, T = 8, reduced (u, a), t = 1e200", config({{"init", "numpy"}, {"seed", 123}, {"t_max", 1e200}}), repeats);
  flow("logistic, softmax, T = 64, reduced (u, a), t = 1e40", config({{"T", 64}, {"d", 64}, {"t_max", 1e40}}), repeats);
  flow("logistic, softmax, T = 8, d = 8, full (V, a), t = 1e40", config({{"init", "numpy"}, {"seed", 123}, {"t_max", 1e40}, {"flow", "full"}}),
       repeats);
  flow("square, softmax, T = 8, reduced (u, Q, a), t = 1e6", config({{"loss", "square"}, {"init", "numpy"}, {"seed", 123}}), repeats);
  flow("logistic, relu (events), T = 10, t = 5e4",
       config({{"normalization", "relu"}, {"init", "numpy_target_first"}, {"seed", 42}, {"T", 10}, {"d", 10}, {"a0_mean", 1.0}, {"a0_std", 0.1},
               {"t_max", 5e4}}),
       repeats);
  flow("tied, D = 100, full (U, a), t = 500",
       config({{"architecture", "tied"}, {"T", 100}, {"d", 100}, {"a0_mean", 1.0}, {"a0_std", 0.1}, {"t_max", 500}}), std::max(1, repeats / 2));
  fmt::print("gradient descent\n");
  descent("logistic, softmax, d = T = 8, lr 0.1, 1e6 steps", config({{"init", "numpy"}, {"seed", 123}}), 1e5, repeats);
  descent("regression, d = n = T = 20, lr 1e-3, 3e5 steps",
          config({{"loss", "regression"}, {"init", "numpy"}, {"seed", 123}, {"T", 20}, {"d", 20}, {"lr", 1e-3}, {"V0_std", 1e-5}, {"a0_std", 1e-3}}),
          300, repeats);
  descent("tied, D = 100, lr 0.05, 1e4 steps", config({{"architecture", "tied"}, {"T", 100}, {"d", 100}, {"a0_mean", 1.0}, {"a0_std", 0.1}, {"lr", 0.05}}),
          500, repeats);
  return 0;
}
