// The exact reduced simulator (reduced.hpp): it starts where the full engine starts, and its chain
// has the full chain's law (two-sample Kolmogorov-Smirnov over many seeds at a D where the full
// engine is cheap, every activation, every prior, a batch, a trained bias); dropping the orthogonal
// Wishart part of the tokens' Gram matrix or shifting its D − r degrees of freedom is detected.
#include <doctest/doctest.h>

#include <vector>

#include "common.hpp"
#include "hdat/core/statistics.hpp"
#include "hdat/specialization/declaration.hpp"
#include "hdat/specialization/reduced.hpp"
#include "hdat/specialization/simulator.hpp"

using namespace hdat;
using namespace hdat::specialization;
using spec_test::params;

namespace {

// [time × entry][replica] of the state (and the first value overlap) of `runs` replicas.
template <class Engine>
std::vector<std::vector<double>> states_at(const Config& s, int D, const std::vector<double>& times, int runs, int first_replica,
                                           Reduction r = {}) {
  std::vector<std::vector<double>> out;
  for (int k = 0; k < runs; ++k) {
    const auto replica = static_cast<std::uint64_t>(first_replica + k);
    TestOptions test{0, true};
    Engine e = [&] {
      if constexpr (std::is_same_v<Engine, ReducedOnlineSGD>) return ReducedOnlineSGD(s, D, 9, replica, test, r);
      else return OnlineSGD(s, D, 9, replica, test);
    }();
    std::size_t c = 0;
    for (double t : times) {
      e.advance_to(t);
      const Eigen::VectorXd x = e.state();
      if (out.size() < (c + static_cast<std::size_t>(x.size()))) out.resize(c + static_cast<std::size_t>(x.size()));
      for (Eigen::Index i = 0; i < x.size(); ++i) out[c++].push_back(x(i));
    }
  }
  return out;
}

double smallest_p(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
  double p = 1;
  for (std::size_t c = 0; c < a.size(); ++c) p = std::min(p, stats::ks_two_sample(a[c], b[c]).p_value);
  return p;
}

}  // namespace

TEST_CASE("the reduced engine starts from the full engine's initial weights") {
  const Config s = Config::from(params({"H=2", "F=2", "init_std=0.3"}));
  OnlineSGD full(s, 120, 4, 2, {0, true});
  ReducedOnlineSGD reduced(s, 120, 4, 2, {0, true});
  CHECK((full.state() - reduced.state()).cwiseAbs().maxCoeff() < 1e-14);
  CHECK(reduced.record()["engine"] == "reduced");
}

TEST_CASE("reduced and full online SGD agree in distribution (KS over 1000 seeds, D = 30, every entry at two times)") {
  struct Case {
    std::vector<std::string> sets;
    bool with_checks;
  };
  const std::vector<Case> cases = {
      {{"activation=softmax", "H=2", "F=2", "L=4", "eta=2"}, true},
      {{"activation=bayes", "H=2", "F=2", "L=4", "eta=2"}, false},
      {{"activation=softmax1", "aggregation=sum", "H=2", "F=2", "L=3", "eta=2", "train_bias=true", "bias=[-0.5,-0.5]"}, false},
      {{"activation=softmax", "H=2", "F=2", "L=4", "eta=1.5", "batch=2", "prior.kind=signs", "prior.amplitudes=[1,0.5]", "noise=0.3"}, false},
      {{"activation=bayes", "H=2", "F=2", "L=3", "eta=1.5", "prior.kind=discrete", "prior.points=[[2,0],[0,1],[1,1]]"}, false},
  };
  const std::vector<double> times = {1.0, 3.0};
  const int D = 30, runs = 1000;
  for (const Case& c : cases) {
    const Config s = Config::from(params(c.sets));
    CAPTURE(c.sets.front());
    const auto full = states_at<OnlineSGD>(s, D, times, runs, 0);
    const double p_same = smallest_p(full, states_at<ReducedOnlineSGD>(s, D, times, runs, runs));
    MESSAGE(c.sets.front() << ": smallest KS p-value full vs reduced " << p_same);
    CHECK(p_same > 1e-4);  // ~20 tests: under one law, min p < 1e-4 with probability < 0.2 %
    if (!c.with_checks) continue;
    Reduction no_orthogonal;
    no_orthogonal.orthogonal_part = false;
    const double p_drop = smallest_p(full, states_at<ReducedOnlineSGD>(s, D, times, runs, runs, no_orthogonal));
    Reduction dof;
    dof.dof_shift = s.H + 1 + s.F;  // Wishart with D instead of D − r degrees of freedom
    const double p_dof = smallest_p(full, states_at<ReducedOnlineSGD>(s, D, times, runs, runs, dof));
    MESSAGE("orthogonal part dropped: " << p_drop << "; D degrees of freedom: " << p_dof);
    CHECK(p_drop < 1e-6);
    CHECK(p_dof < 1e-4);
  }
}

