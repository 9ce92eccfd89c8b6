// Cost of Bayes-optimal AMP for tied attention on one core: a run at d = 100, 200 per channel, the
// time per iteration by part, against one eigendecomposition of a d × d symmetric matrix (the RIE's
// unavoidable step) and one product X U ((n T) × d by d × d), side by side in one run.
#include <fmt/format.h>

#include <Eigen/Eigenvalues>
#include <chrono>
#include <ctime>
#include <functional>
#include <memory>

#include "hdat/tied_attention/amp.hpp"
#include "hdat/tied_attention/state_evolution.hpp"

using namespace hdat;
using namespace hdat::tied_attention;

namespace {
// CPU time of this thread: the shared 2-core machine runs other jobs, so wall time overstates the
// cost by the load; CPU time does not (the per-part split of a run is its share of the wall time).
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double time_per_call(const std::function<void()>& f, double min_s = 0.3) {
  long n = 0;
  const double t0 = cpu_seconds();
  double el = 0;
  do {
    f();
    ++n;
    el = cpu_seconds() - t0;
  } while (el < min_s);
  return el / static_cast<double>(n);
}

struct Case {
  const char* name;
  int T;
  BayesChannel channel;
  double alpha;
};

AmpData make_data(const Case& c, int d, double noise) {
  TeacherSpec ts;
  ts.d = d;
  const long n = std::lround(c.alpha * d * d);
  if (c.T == 1) return amp_data(make_sensing_data(ts, n, noise, 1, 0));
  AttentionSpec as;
  as.teacher = ts;
  as.T = c.T;
  as.noise = noise;
  as.hardmax = c.channel == BayesChannel::hardmax;
  auto eng = rng::engine(1, 0, rng::teacher);
  const Eigen::MatrixXd S0 = sample_teacher(ts, eng);
  return amp_data(make_attention_data(as, S0, n, 1, 0, rng::training_data), c.channel);
}
}  // namespace

int main() {
  Eigen::setNbThreads(1);
  const double noise = 0.1;
  const auto prior = std::make_shared<const WishartTarget>(0.5);
  fmt::print("# AMP (GAMP + RIE), Wishart kappa0 = 0.5, noise = 0.1, one core; CPU seconds (run, then per iteration)\n");
  fmt::print("{:<22} {:>4} {:>6} {:>5} {:>8} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9}\n", "case", "d", "n", "iter",
             "run s", "s/iter", "fields", "onsager", "channel", "backproj", "eig", "shrink", "1 eig s", "X*U s");
  for (const Case& c : {Case{"T=1 linear a=0.3", 1, BayesChannel::linear, 0.3},
                        Case{"T=2 softmax a=0.15", 2, BayesChannel::softmax, 0.15},
                        Case{"T=2 hardmax a=0.4", 2, BayesChannel::hardmax, 0.4}}) {
    for (int d : {100, 200}) {
      const AmpData data = make_data(c, d, noise);
      AmpOptions o;
      o.noise = noise;
      o.prior = prior;
      o.max_iter = 40;
      const double c0 = cpu_seconds();
      const AmpSummary s = Amp(o).run(data);
      const double cpu = cpu_seconds() - c0, it = std::max(1, s.steps()), share = cpu / s.wall_seconds / it;
      auto eng = rng::engine(2, 0, rng::user);
      const Eigen::MatrixXd G = gaussian_matrix(d, d, eng), R = (G + G.transpose()) / 2;
      const double eig = time_per_call([&] { const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(R); });
      RowMatrix P;
      const double xu = time_per_call([&] { P.noalias() = data.X * G; });
      fmt::print("{:<22} {:>4} {:>6} {:>5} {:>8.3f} {:>9.4f} {:>8.4f} {:>8.4f} {:>8.4f} {:>8.4f} {:>8.4f} {:>8.4f} {:>9.5f} {:>9.5f}\n",
                 c.name, d, data.n(), s.steps(), cpu, cpu / it, s.fields_seconds * share, s.onsager_seconds * share,
                 s.channel_seconds * share, s.projection_seconds * share, s.eig_seconds * share, s.shrink_seconds * share,
                 eig, xu);
      fmt::print("  {}\n", s.brief());
    }
  }
  fmt::print("\n# state evolution to its fixed point (per alpha)\n");
  for (const Case& c : {Case{"T=2 softmax a=0.15", 2, BayesChannel::softmax, 0.15},
                        Case{"T=2 hardmax a=0.4", 2, BayesChannel::hardmax, 0.4}}) {
    StateEvolutionOptions so;
    so.T = c.T;
    so.channel = c.channel;
    so.noise = noise;
    so.prior = prior;
    const StateEvolutionRun r = StateEvolution(so).run(c.alpha);
    fmt::print("{:<22} {} steps, {:.3f} s, MSE {:.6f} (se {:.1e})\n", c.name, r.steps.size() - 1, r.seconds, r.mse(), r.mse_se);
  }
}
