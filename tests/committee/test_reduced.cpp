// The exact reduced simulator (simulator.hpp, derivation.md §8): its step is the full step's Gram
// matrix algebraically; its chain has the full chain's law (two-sample tests over many seeds at
// small N, where the full engine is cheap); dropping the orthogonal part of |x|² or shifting its
// N − r degrees of freedom is detected; it runs at any N.
#include <doctest/doctest.h>

#include <cmath>
#include <type_traits>
#include <vector>

#include "common.hpp"
#include "hdat/committee/simulator.hpp"
#include "hdat/core/statistics.hpp"

using namespace hdat;
using namespace hdat::committee;

namespace {

Config noisy_setup(Activation g) {
  Config s = committee_test::setup(2, 2, g);
  s.eta = 2.0;  // a large step: the η² part, through |x|²/N, weighs in the law of Q
  s.noise = 0.5;
  s.wd = 0.1;
  return s;
}

// The states of `runs` replicas of an engine at the given times: [time × entry][replica].
template <class Engine>
std::vector<std::vector<double>> states_at(const Config& s, int N, const std::vector<double>& times, int runs, Reduction r = {},
                                           int first_replica = 0) {
  std::vector<std::vector<double>> out;
  const int n = s.layout().size();
  out.assign(times.size() * static_cast<std::size_t>(n), {});
  for (int k = 0; k < runs; ++k) {
    const auto replica = static_cast<std::uint64_t>(first_replica + k);
    Engine e = [&] {
      if constexpr (std::is_same_v<Engine, ReducedSGD>) return ReducedSGD(s, N, 7, replica, 0, r);
      else return OnlineSGD(s, N, 7, replica, 0);
    }();
    for (std::size_t it = 0; it < times.size(); ++it) {
      e.advance_to(times[it]);
      const Eigen::VectorXd x = e.state();
      for (int c = 0; c < n; ++c) out[it * n + c].push_back(x(c));
    }
  }
  return out;
}

// The smallest KS p-value over every entry of the state at every time.
double smallest_p(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
  double p = 1;
  for (std::size_t c = 0; c < a.size(); ++c) {
    if (a[c].front() == a[c].back() && b[c].front() == b[c].back()) continue;  // T: constant
    p = std::min(p, stats::ks_two_sample(a[c], b[c]).p_value);
  }
  return p;
}

}  // namespace

TEST_CASE("one reduced step is the full step's Gram matrix: W'^T W'/N = A C A + (A u a^T + a u^T A)/N + |x|^2/N a a^T/N") {
  for (Activation g : {Activation::erf, Activation::linear}) {
    Config s = noisy_setup(g);
    s.train_v = true;
    s.eta_v = 0.3;
    const int N = 40;
    OnlineSGD full(s, N, 3, 0, 0);
    auto eng = rng::engine(11, 0, rng::user);
    boost::random::normal_distribution<double> normal;
    for (int step = 0; step < 5; ++step) {
      Eigen::VectorXd x(N);
      for (int j = 0; j < N; ++j) x(j) = normal(eng);
      const double zeta = normal(eng);
      Eigen::MatrixXd C = full.gram();
      const Eigen::VectorXd v = full.second_layer();
      Eigen::VectorXd fields(s.K + s.M);
      fields << full.students().transpose() * x / std::sqrt(double(N)), full.teachers().transpose() * x / std::sqrt(double(N));
      Eigen::VectorXd first(s.K), second(s.K);
      StepRule(s).coefficients(fields.data(), zeta, v, first.data(), second.data());
      gram_step(C, fields, x.squaredNorm() / N, first, 1.0 - s.wd / N, N);
      full.step(x, zeta);
      CHECK((C - full.gram()).cwiseAbs().maxCoeff() < 1e-12);
      CHECK((v + second / N - full.second_layer()).cwiseAbs().maxCoeff() < 1e-14);
    }
  }
}

TEST_CASE("reduced and full online SGD agree in distribution (KS over 400 seeds, N = 24, every entry at t = 0.5, 1, 2)") {
  const std::vector<double> times = {0.5, 1.0, 2.0};
  for (Activation g : {Activation::erf, Activation::linear}) {
    for (TeacherKind teacher : {TeacherKind::orthonormal, TeacherKind::gaussian}) {
      CAPTURE(activation_name(g));
      CAPTURE(teacher == TeacherKind::gaussian);
      Config s = noisy_setup(g);
      if (g == Activation::linear) s.eta = 0.5;  // linear students diverge at large steps
      s.teacher = teacher;
      const int N = 24, runs = 400;
      const auto full = states_at<OnlineSGD>(s, N, times, runs);
      const auto reduced = states_at<ReducedSGD>(s, N, times, runs, {}, runs);  // other seeds: independent samples
      // 3 times × up to 7 entries: under one law, min p < 1e-4 has probability < 0.2 %.
      const double p_same = smallest_p(full, reduced);
      MESSAGE("full vs reduced: smallest KS p-value " << p_same);
      CHECK(p_same > 1e-4);
      if (g == Activation::erf && teacher == TeacherKind::orthonormal) {
        // The checks of the check: the same test sees a reduction with a term missing.
        Reduction no_orthogonal;
        no_orthogonal.orthogonal_part = false;
        const double p_no_orthogonal = smallest_p(full, states_at<ReducedSGD>(s, N, times, runs, no_orthogonal, runs));
        MESSAGE("orthogonal part dropped: " << p_no_orthogonal);
        CHECK(p_no_orthogonal < 1e-6);
        Reduction full_dof;
        full_dof.dof_shift = s.K + s.M;  // χ² with N instead of N − r degrees of freedom
        const double p_dof = smallest_p(full, states_at<ReducedSGD>(s, N, times, runs, full_dof, runs));
        MESSAGE("chi^2 with N degrees of freedom: " << p_dof);
        CHECK(p_dof < 1e-4);
      }
    }
  }
}

TEST_CASE("the reduced engine starts from the full engine's initial weights, runs at N = 10^6, and says which engine it is") {
  const Config s = noisy_setup(Activation::erf);
  OnlineSGD full(s, 200, 5, 3, 0);
  ReducedSGD reduced(s, 200, 5, 3, 0);
  CHECK((full.state() - reduced.state()).cwiseAbs().maxCoeff() == 0.0);
  CHECK(reduced.record()["engine"] == "reduced");
  CHECK(full.record()["engine"] == "full");
  ReducedSGD big(s, 1000000, 5, 0, 0);
  big.advance_to(0.05);  // 5·10^4 steps
  CHECK(big.steps() == 50000);
  CHECK(big.state().allFinite());
  // T stays the teachers' exact Gram matrix (orthonormal: I).
  const Eigen::MatrixXd C = big.gram();
  CHECK((C.bottomRightCorner(2, 2) - Eigen::Matrix2d::Identity()).cwiseAbs().maxCoeff() < 1e-12);
}
