// Timings of the tied-attention theory and simulator (single thread unless stated).
#include <fmt/format.h>

#include <chrono>
#include <functional>
#include <memory>

#include "hdat/tied_attention/fixed_point.hpp"
#include "hdat/tied_attention/linear_t1.hpp"
#include "hdat/tied_attention/thresholds.hpp"
#include "hdat/tied_attention/attention_erm.hpp"
#include "hdat/tied_attention/sensing.hpp"

using namespace hdat::tied_attention;

namespace {
// Median-free simple timing: repeat until at least `min_s` seconds, report seconds per call.
double time_per_call(const std::function<void()>& f, double min_s = 0.5) {
  long n = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double el = 0;
  do {
    f();
    ++n;
    el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (el < min_s);
  return el / static_cast<double>(n);
}
}  // namespace

int main() {
  Eigen::setNbThreads(1);
  auto wishart = std::make_shared<const WishartTarget>(0.5);
  fmt::print("# spectral machinery (Wishart kappa0 = 0.5, delta = 1.2, t = 0.3)\n");
  {
    WishartLaw cf(0.5, 1.2);
    SubordinatedLaw sb(wishart, 1.2);
    double sink = 0;
    fmt::print("law mu_delta, closed form (quartic edges):   {:8.2f} us\n",
               1e6 * time_per_call([&] { sink += WishartLaw(0.5, 1.2 + 1e-9 * sink).support()[0].lo; }));
    fmt::print("J, dJ/dt, dJ/ddelta, rank, closed form:      {:8.2f} us\n", 1e6 * time_per_call([&] { sink += j_values(cf, 0.3).J; }));
    fmt::print("J, ... by subordination (Wishart g0):        {:8.2f} us\n", 1e6 * time_per_call([&] { sink += j_values(sb, 0.3).J; }));
    for (int d : {100, 1000}) {
      auto pl = std::make_shared<const DiscreteTarget>(power_law_eigenvalues(d, 1.0, 1.0, 1.5));
      SubordinatedLaw pls(pl, 1.2);
      fmt::print("J, ... power law gamma = 1, d = {:4d}:          {:8.2f} us ({} pieces)\n", d,
                 1e6 * time_per_call([&] { sink += j_values(pls, 0.3).J; }), pls.pieces());
    }
    if (sink == 42) fmt::print("\n");
  }
  fmt::print("\n# T = 1 fixed point (kappa0 = 0.5, Delta = 0.1)\n");
  for (double lambda : {1.0, 1e-3}) {
    LinearProblem pr;
    pr.target = wishart;
    pr.noise = 0.1;
    pr.lambda = lambda;
    std::vector<double> alphas;
    for (int i = 0; i < 50; ++i) alphas.push_back(0.02 + 0.02 * i);
    long jev = 0;
    const double t = time_per_call([&] {
      LinearT1Solver s(pr);
      s.curve(alphas);
      jev = s.summary().j_evaluations;
    });
    fmt::print("lambda = {:6g}: 50-point learning curve {:7.3f} s ({:.2f} ms per fixed point, {} J evaluations, "
               "{:.1f} us per J incl. root finding)\n", lambda, t, 1e3 * t / 50, jev, 1e6 * t / static_cast<double>(jev));
    const double t1 = time_per_call([&] { LinearT1Solver(pr).solve(0.2); });
    fmt::print("lambda = {:6g}: one fixed point from scratch (alpha = 0.2): {:.2f} ms\n", lambda, 1e3 * t1);
  }
  {
    LinearProblem pr;
    pr.target = std::make_shared<const DiscreteTarget>(power_law_eigenvalues(500, 1.0, 1.0, 1.5));
    pr.noise = 0.1;
    pr.lambda = 0.1;
    const double t = time_per_call([&] { LinearT1Solver(pr).curve({0.01, 0.02, 0.05, 0.1, 0.2}); }, 0.2);
    fmt::print("power law gamma = 1, d = 500: 5-point curve {:.3f} s\n", t);
  }
  {
    std::vector<double> alphas;
    for (int i = 0; i < 50; ++i) alphas.push_back(0.02 + 0.02 * i);
    const double t = time_per_call([&] { bayes_optimal_curve(wishart, 0.1, 1, alphas); });
    fmt::print("Bayes-optimal curve, 50 points: {:.3f} s\n", t);
  }
  fmt::print("\n# T = 1 finite-d training (alpha = 0.2, single thread)\n");
  for (int d : {50, 100, 200}) {
    TeacherSpec ts;
    ts.d = d;
    ts.kappa0 = 0.5;
    const SensingData data = make_sensing_data(ts, std::lround(0.2 * d * d), 0.1, 1);
    Eigen::MatrixXd S = data.S0;
    const double tg = time_per_call([&] { S = sensing_adjoint(data, sensing_apply(data, S)) * 1e-3 + data.S0; }, 0.3);
    const ErmResult r = train_convex(data, 1.0);
    fmt::print("d = {:3d}, n = {:6d}: gradient {:7.2f} ms ({:6.1f} /s); convex ERM {:6.2f} s, {} iterations; ", d,
               data.y.size(), 1e3 * tg, 1 / tg, r.wall_seconds, r.iterations);
    if (d <= 100) {
      ErmOptions o;
      const ErmResult f = train_factorized(data, 1.0, o);
      fmt::print("factorised L-BFGS {:6.2f} s, {} evaluations", f.wall_seconds, f.gradient_evaluations);
    }
    fmt::print("\n");
  }
  fmt::print("\n# T = 2 softmax channel (seq2lab, beta = beta0 = 1, Delta = 0, lambda = 0.1), 2 threads\n");
  for (long ns : {8192L, 16384L, 32768L}) {
    PriorSide prior;
    prior.target = wishart;
    prior.lambda = 0.1;
    SampleSideOptions so;
    so.samples = ns;
    so.threads = 2;
    auto ss = std::make_shared<SampleSide>(2, Channel::softmax, 1.0, 1.0, 1.5, 0.0, so);
    GeneralSolver g(prior, ss, 1.5);
    std::vector<double> alphas;
    for (int i = 0; i < 20; ++i) alphas.push_back(0.02 + 0.02 * i);
    const auto t0 = std::chrono::steady_clock::now();
    const auto c = g.curve(alphas);
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double worst = 0;
    for (std::size_t i = 0; i < c.size(); ++i)
      worst = std::max({worst, g.errors()[i].m / std::max(1e-12, std::fabs(c[i].m)), g.errors()[i].q / c[i].q});
    fmt::print("{:6d} RQMC points: 20-point curve {:6.2f} s ({:.2f} s per fixed point incl. error bars, {} passes, "
               "{:.2f} Newton steps per prox); largest relative s.e. of m, q: {:.2e}\n",
               ns, t, t / 20, g.summary().sample_evaluations, g.summary().mean_prox_iterations, worst);
  }
  fmt::print("\n# T = 2 attention ERM (alpha = 0.2, single thread)\n");
  for (int d : {50, 100}) {
    AttentionSpec sp;
    sp.teacher.d = d;
    sp.T = 2;
    auto eng = hdat::rng::engine(1, 0, hdat::rng::teacher);
    const Eigen::MatrixXd S0 = sample_teacher(sp.teacher, eng);
    const AttentionData tr = make_attention_data(sp, S0, std::lround(0.2 * d * d), 1, 0, hdat::rng::training_data);
    const AttentionData te = make_attention_data(sp, S0, 20000, 1, 0, hdat::rng::test_set);
    Eigen::MatrixXd G;
    const double tg = time_per_call([&] { attention_loss(tr, S0, &G); }, 0.3);
    ErmOptions o;
    o.tol = 1e-9;
    const AttentionResult rf = train_attention(tr, te, "factorized", 0.1, o);
    const AttentionResult rc = train_attention(tr, te, "convex", 0.1, o);
    fmt::print("d = {:3d}, n = {:5d}: loss+gradient {:6.2f} ms ({:6.1f} /s); factorised L-BFGS {:5.2f} s ({} evaluations), "
               "convex {:5.2f} s ({} iterations)\n", d, tr.n(), 1e3 * tg, 1 / tg, rf.wall_seconds, rf.gradient_evaluations,
               rc.wall_seconds, rc.iterations);
  }
  return 0;
}
