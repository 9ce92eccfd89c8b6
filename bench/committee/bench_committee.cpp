// Speed of the committee model, side by side in one run:
//  1. a learning curve to t = 1000 at K = M = 2, 4, 8, 16 (erf, η = 0.5, from the overlaps of a
//     random initialisation at N = 500): hdat's adaptive dopri5 (error control) against fixed-step
//     Euler at dt = 0.01 (what nn2pp and the other neighbouring codes do), Euler both with hdat's
//     right-hand side and with a per-index-tuple one (each I3, I4 evaluated from its closed form on its
//     own, the neighbouring codes' algorithm, written here); time, right-hand-side calls and accuracy
//     against a tight-tolerance reference (rtol 1e-12);
//  2. the online-SGD simulator's steps per second, full engine at N = 10³, 10⁴, 10⁵ against the
//     Gaussian draw rate, and the exact reduced engine at N = 10³ ... 10⁶.
//   build/bench/committee/bench_committee [--quick] [--threads T]
#include <fmt/format.h>
#include <omp.h>

#include <boost/random/normal_distribution.hpp>
#include <chrono>
#include <cstring>
#include <limits>

#include "hdat/committee/integrals.hpp"
#include "hdat/committee/ode.hpp"
#include "hdat/committee/simulator.hpp"
#include "hdat/core/integrate.hpp"
#include "hdat/core/normal_stream.hpp"
#include "hdat/core/progress.hpp"

using namespace hdat;
using namespace hdat::committee;
using Clock = std::chrono::steady_clock;

namespace {


// The neighbouring codes' right-hand side: every I3(i, b, c) and I4(i, k, c, d) of the spec's sums
// evaluated on its own from the scalar closed forms (O(K²(K+M)²) I4 calls per evaluation, each
// building its sub-covariance), loops over all (i, k).
struct TupleRhs {
  Config s;
  StateLayout layout;
  void operator()(const Eigen::VectorXd& x, Eigen::VectorXd& dx) const {
    const int K = s.K, M = s.M;
    const Overlaps o = unpack(s, x);
    Eigen::MatrixXd C;
    field_covariance(o.Q, o.R, o.T, C);
    const Activation g = s.activation;
    const Eigen::VectorXd& v = o.v;
    const Eigen::VectorXd& vs = s.vstar;
    Overlaps d;
    d.Q.setZero(K, K);
    d.R.setZero(K, M);
    d.T.setZero(M, M);
    d.v.setZero(K);
    for (int i = 0; i < K; ++i)
      for (int n = 0; n < M; ++n) {
        double sum = 0;
        for (int m = 0; m < M; ++m) sum += vs(m) * I3(g, C, i, K + n, K + m);
        for (int j = 0; j < K; ++j) sum -= v(j) * I3(g, C, i, K + n, j);
        d.R(i, n) = s.eta * v(i) * sum;
      }
    for (int i = 0; i < K; ++i)
      for (int k = i; k < K; ++k) {
        double lin = 0, sq = 0;
        for (int m = 0; m < M; ++m) lin += v(i) * vs(m) * I3(g, C, i, k, K + m) + v(k) * vs(m) * I3(g, C, k, i, K + m);
        for (int j = 0; j < K; ++j) lin -= v(i) * v(j) * I3(g, C, i, k, j) + v(k) * v(j) * I3(g, C, k, i, j);
        for (int n = 0; n < M; ++n)
          for (int m = 0; m < M; ++m) sq += vs(n) * vs(m) * I4(g, C, i, k, K + n, K + m);
        for (int j = 0; j < K; ++j)
          for (int n = 0; n < M; ++n) sq -= 2 * v(j) * vs(n) * I4(g, C, i, k, j, K + n);
        for (int j = 0; j < K; ++j)
          for (int l = 0; l < K; ++l) sq += v(j) * v(l) * I4(g, C, i, k, j, l);
        d.Q(i, k) = d.Q(k, i) = s.eta * lin + s.eta * s.eta * v(i) * v(k) * sq;
      }
    dx = pack(s, d);
  }
};

// eg at the observation times, and the state at the end.
struct Curve {
  std::vector<double> eg;
  std::vector<Eigen::VectorXd> states;
  Eigen::VectorXd final;
  long rhs_calls = 0;
  double seconds = 0;
  bool complete = true;
};

Curve adaptive(const CommitteeODE& ode, const Eigen::VectorXd& x0, const std::vector<double>& times, double rtol, double atol) {
  IntegrateOptions o;
  o.rtol = rtol;
  o.atol = atol;
  Curve c;
  const auto t0 = Clock::now();
  const auto summary = integrate([&](const ConstVecRef& x, VecRef dx, double t) { ode(x, dx, t); }, x0, 0.0, times,
                                 [&](double, const Eigen::VectorXd& x) {
                                   c.eg.push_back(ode.generalisation_error(x));
                                   c.states.push_back(x);
                                   c.final = x;
                                   return true;
                                 },
                                 o);
  c.seconds = seconds_since(t0);
  c.rhs_calls = summary.rhs_calls;
  c.complete = summary.ok();
  return c;
}

// Explicit Euler at fixed dt; times must be multiples of dt. Stops after `max_seconds` (then the
// time is extrapolated from the steps done and the curve is incomplete).
template <class Rhs>
Curve euler(const Rhs& f, const CommitteeODE& ode, const Eigen::VectorXd& x0, const std::vector<double>& times, double dt,
            double max_seconds, double& steps_per_second) {
  Curve c;
  Eigen::VectorXd x = x0, dx(x0.size());
  long step = 0;
  const auto t0 = Clock::now();
  for (double t : times) {
    const long target = std::lround(t / dt);
    while (step < target) {
      f(x, dx);
      x += dt * dx;
      ++step;
      if ((step & 63) == 0 && seconds_since(t0) > max_seconds) {
        c.complete = false;
        break;
      }
    }
    if (!c.complete) break;
    c.eg.push_back(ode.generalisation_error(x));
    c.states.push_back(x);
  }
  c.seconds = seconds_since(t0);
  c.rhs_calls = step;
  steps_per_second = step / c.seconds;
  c.final = x;
  return c;
}

// Accuracy against the reference: the largest |eg − eg_ref| / eg_ref over the observation times
// where eg_ref > 1e-4 (below, a converged student's eg is a difference of O(1) terms), and the largest absolute
// error of any order parameter.
struct Accuracy {
  double eg = 0, state = 0;
};
Accuracy accuracy(const Curve& c, const Curve& ref) {
  Accuracy a;
  if (!c.complete) return {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN()};
  for (std::size_t k = 0; k < std::min(c.eg.size(), ref.eg.size()); ++k) {
    if (ref.eg[k] > 1e-4) a.eg = std::max(a.eg, std::fabs(c.eg[k] - ref.eg[k]) / ref.eg[k]);
    a.state = std::max(a.state, (c.states[k] - ref.states[k]).lpNorm<Eigen::Infinity>());
  }
  return a;
}

// The full engine's inputs come from rng::NormalStream (ARS + ziggurat).
double draw_rate() {
  rng::NormalStream stream(1, 0, rng::training_tokens);
  std::vector<double> v(1 << 14);
  const auto t0 = Clock::now();
  long n = 0;
  while (seconds_since(t0) < 0.5) {
    stream.fill(v.data(), v.size());
    n += static_cast<long>(v.size());
  }
  return static_cast<double>(n) / seconds_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  int threads = omp_get_max_threads();
  for (int a = 1; a < argc; ++a) {
    if (!std::strcmp(argv[a], "--quick")) quick = true;
    if (!std::strcmp(argv[a], "--threads") && a + 1 < argc) threads = std::atoi(argv[++a]);
  }
  const double t_max = 1000, dt = 0.01;
  // Observation times on the Euler grid: 60 log-spaced points from 1 to t_max, rounded to dt.
  std::vector<double> times;
  for (double t : log_spaced(1.0, t_max, 60, false)) times.push_back(std::round(t / dt) * dt);
  fmt::print("# committee learning curve to t = {} (erf, eta = 0.5, start: overlaps of a random initialisation at N = 500)\n", t_max);
  fmt::print("# threads for the right-hand side: {} (of {} cores); Euler dt = {}; errors against dopri5 at rtol 1e-12 over 60 log-spaced times: eg_err = max |eg - eg_ref|/eg_ref (where eg_ref > 1e-4), x_err = max |x - x_ref| of any order parameter\n",
             threads, omp_get_num_procs(), dt);
  fmt::print("{:>3} {:>8} {:>8} | {:>8} {:>7} {:>8} {:>8} | {:>8} {:>7} {:>8} {:>8} | {:>9} {:>8} {:>8} | {:>9} {:>9} | {:>8} {:>8}\n", "K",
             "rhs_1t", "rhs_us", "dp5_1e-8", "calls", "eg_err", "x_err", "dp5_1e-6", "calls", "eg_err", "x_err", "euler_s", "eg_err",
             "x_err", "tuple_eu", "tuple_us", "vs_euler", "vs_tuple");
  const std::vector<int> sizes = quick ? std::vector<int>{2, 4} : std::vector<int>{2, 4, 8, 16};
  for (int K : sizes) {
    Config s = Config::defaults(K, K);
    s.eta = 0.5;
    const Eigen::VectorXd x0 = OnlineSGD(s, 500, 0, 0, 0).state();
    const CommitteeODE ode(s, threads), ode1(s, 1);
    // Right-hand-side cost.
    Eigen::VectorXd dx(x0.size());
    auto rhs_time = [&](const CommitteeODE& o) {
      const auto t0 = Clock::now();
      long n = 0;
      while (seconds_since(t0) < 0.3) o(x0, dx, 0.0), ++n;
      return seconds_since(t0) / n * 1e6;
    };
    const double us1 = rhs_time(ode1), us = rhs_time(ode);
    const Curve ref = adaptive(ode, x0, times, 1e-12, 1e-14);
    const Curve a8 = adaptive(ode, x0, times, 1e-8, 1e-10);
    const Curve a6 = adaptive(ode, x0, times, 1e-6, 1e-9);
    double eps = 0;
    const Curve e = euler([&](const Eigen::VectorXd& x, Eigen::VectorXd& d) { ode(x, d, 0.0); }, ode, x0, times, dt,
                          quick ? 20.0 : 600.0, eps);
    const double euler_s = e.complete ? e.seconds : t_max / dt / eps;
    const TupleRhs tuple{s, s.layout()};
    double tps = 0;
    const Curve te = euler(tuple, ode, x0, times, dt, quick ? 5.0 : 30.0, tps);
    const double tuple_s = te.complete ? te.seconds : t_max / dt / tps;
    const Accuracy e8 = accuracy(a8, ref), e6 = accuracy(a6, ref), ee = accuracy(e, ref);
    fmt::print("{:>3} {:>8.1f} {:>8.1f} | {:>7.3f}s {:>7} {:>8.1e} {:>8.1e} | {:>7.3f}s {:>7} {:>8.1e} {:>8.1e} | {:>8.1f}{} {:>8.1e} {:>8.1e} | "
               "{:>8.1f}{} {:>9.1f} | {:>7.0f}x {:>7.0f}x\n",
               K, us1, us, a8.seconds, a8.rhs_calls, e8.eg, e8.state, a6.seconds, a6.rhs_calls, e6.eg, e6.state, euler_s,
               e.complete ? "s" : "*", ee.eg, ee.state, tuple_s, te.complete ? "s" : "*", 1e6 / tps, euler_s / a8.seconds,
               tuple_s / a8.seconds);
    std::fflush(stdout);
  }
  fmt::print("# * extrapolated from the steps done in the time allowed (the curve was not finished).\n");
  fmt::print("# rhs_1t, rhs_us: microseconds per right-hand side on 1 and on the requested threads; dp5_1e-8 / 1e-6: hdat's dopri5\n"
             "# at rtol 1e-8 (the default) / 1e-6; euler_s: Euler at dt = 0.01 with hdat's right-hand side; tuple_eu: Euler with the\n"
             "# per-tuple right-hand side (the neighbouring codes' algorithm; same equations, same accuracy as euler_s);\n"
             "# vs_euler, vs_tuple: their times over dopri5 at rtol 1e-8.\n\n");

  // Simulator.
  const double draws = draw_rate();
  fmt::print("# online SGD simulator (one thread), Gaussian draw rate {:.0f} M/s\n", draws / 1e6);
  fmt::print("{:>3} {:>8} {:>7} {:>12} {:>10} {:>16}\n", "K", "N", "engine", "steps/s", "us/step", "draw-bound steps/s");
  // Steps per second of one engine (after a warm-up), in batches of 100 for `seconds`.
  auto rate = [&](auto& engine) {
    for (int k = 0; k < 1000; ++k) engine.step();
    const auto t0 = Clock::now();
    long n = 0;
    while (seconds_since(t0) < (quick ? 0.3 : 1.0)) {
      for (int k = 0; k < 100; ++k) engine.step();
      n += 100;
    }
    return n / seconds_since(t0);
  };
  for (int K : {2, 8})
    for (int N : {1000, 10000, 100000, 1000000}) {
      const Config s = Config::defaults(K, K);
      if (N <= 100000) {  // the full engine holds N (K + M) weights and draws N normals a step
        OnlineSGD full(s, N, 0, 0, 0);
        const double sps = rate(full);
        fmt::print("{:>3} {:>8} {:>7} {:>12.0f} {:>10.2f} {:>16.0f}\n", K, N, "full", sps, 1e6 / sps, draws / (N + 1));
      }
      ReducedSGD reduced(s, N, 0, 0, 0);
      const double sps = rate(reduced);
      fmt::print("{:>3} {:>8} {:>7} {:>12.0f} {:>10.2f} {:>16}\n", K, N, "reduced", sps, 1e6 / sps, "-");
    }
  fmt::print("# reduced: the exact chain of the Gram matrix (derivation.md section 8): K + M normals, one chi^2 and one\n"
             "# (K + M)^3 Cholesky a step, whatever N; full: N normals and O(N (K + M)) products a step.\n");
  return 0;
}
