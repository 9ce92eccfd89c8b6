// The finite-N online-SGD simulator (simulator.hpp): one step against the spec's update written out
// here, the increment bookkeeping against the step it describes, the initial overlaps' law,
// reproducibility, and the exact and sampled generalisation errors against a full test set.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cmath>

#include "common.hpp"
#include "hdat/committee/integrals.hpp"
#include "hdat/committee/simulator.hpp"

using namespace hdat;
using namespace hdat::committee;

namespace {

Config full_setup(Activation g = Activation::erf) {
  Config s = committee_test::setup(3, 2, g);
  s.eta = 0.9;
  s.eta_v = 0.4;
  s.train_v = true;
  s.noise = 0.3;
  s.wd = 0.2;
  s.vstar << 1.0, 0.7;
  s.v0 << 0.8, 1.1, -0.3;
  return s;
}

Eigen::VectorXd gaussian_vector(int n, std::uint64_t replica) {
  auto eng = rng::engine(5, replica, rng::user);
  boost::random::normal_distribution<double> normal;
  return Eigen::VectorXd::NullaryExpr(n, [&](Eigen::Index) { return normal(eng); });
}

}  // namespace

TEST_CASE("one step is the spec's update: w_k <- (1 - wd/N) w_k + (eta/sqrt N) v_k g'(lambda_k) Delta x, v_k += (eta_v/N) g(lambda_k) Delta") {
  for (Activation g : {Activation::erf, Activation::linear}) {
    const Config s = full_setup(g);
    const int N = 50;
    OnlineSGD sgd(s, N, 3, 0);
    sgd.advance_to(2.0);  // somewhere along a run, v already moved
    const Eigen::MatrixXd W = sgd.students(), Ws = sgd.teachers();
    const Eigen::VectorXd v = sgd.second_layer();
    const Eigen::VectorXd x = gaussian_vector(N, 1);
    const double zeta = -0.7;
    // Written out with the activation's formula, not the simulator's helpers.
    auto gf = [&](double u) { return g == Activation::erf ? std::erf(u / std::sqrt(2.0)) : u; };
    auto gd = [&](double u) { return g == Activation::erf ? std::sqrt(2 / M_PI) * std::exp(-u * u / 2) : 1.0; };
    double y = s.noise * zeta, yhat = 0;
    for (int m = 0; m < s.M; ++m) y += s.vstar(m) * gf(Ws.col(m).dot(x) / std::sqrt(N));
    for (int k = 0; k < s.K; ++k) yhat += v(k) * gf(W.col(k).dot(x) / std::sqrt(N));
    const double delta = y - yhat;
    Eigen::MatrixXd W1 = W;
    Eigen::VectorXd v1 = v;
    for (int k = 0; k < s.K; ++k) {
      const double lambda = W.col(k).dot(x) / std::sqrt(N);
      W1.col(k) = (1 - s.wd / N) * W.col(k) + (s.eta / std::sqrt(N)) * v(k) * gd(lambda) * delta * x;
      v1(k) = v(k) + (s.eta_v / N) * gf(lambda) * delta;
    }
    sgd.step(x, zeta);
    CAPTURE(activation_name(g));
    CHECK((sgd.students() - W1).lpNorm<Eigen::Infinity>() < 1e-13);
    CHECK((sgd.second_layer() - v1).lpNorm<Eigen::Infinity>() < 1e-15);
    CHECK((sgd.teachers() - Ws).lpNorm<Eigen::Infinity>() == 0.0);
    CHECK(sgd.steps() == 2 * N + 1);
  }
}

TEST_CASE("increment() is exactly N times the change one step makes, split into its terms") {
  for (Activation g : {Activation::erf, Activation::linear}) {
    const Config s = full_setup(g);
    const int N = 80;
    OnlineSGD sgd(s, N, 4, 0);
    sgd.advance_to(1.0);
    const Eigen::VectorXd x = gaussian_vector(N, 2);
    const double zeta = 1.3;
    const DriftTerms inc = sgd.increment(x, zeta);
    REQUIRE(inc.size() == 5);
    const Eigen::VectorXd before = sgd.state();
    sgd.step(x, zeta);
    const Eigen::VectorXd change = N * (sgd.state() - before);
    CAPTURE(activation_name(g));
    CHECK((inc.total() - change).lpNorm<Eigen::Infinity>() < 1e-10 * (1 + change.lpNorm<Eigen::Infinity>()));
    for (std::size_t k = 0; k < inc.size(); ++k) CHECK(inc.value(k).lpNorm<Eigen::Infinity>() > 0);
  }
}

TEST_CASE("initial overlaps: T = I exactly (orthonormal teacher), Q = init_std^2 (I + O(1/sqrt N)), R ~ N(0, init_std^2 / N)") {
  Config s = committee_test::setup(2, 3);
  s.init_std = 0.5;
  const int N = 400, runs = 200;
  double r_sum = 0, r_sq = 0, q_sum = 0, q_sq = 0, t_sum = 0, t_sq = 0;
  int nr = 0, nq = 0, nt = 0;
  for (int k = 0; k < runs; ++k) {
    const Overlaps o = unpack(s, OnlineSGD(s, N, 11, static_cast<std::uint64_t>(k), 0).state());
    CHECK((o.T - Eigen::MatrixXd::Identity(3, 3)).lpNorm<Eigen::Infinity>() < 1e-12);
    for (int i = 0; i < o.R.size(); ++i) r_sum += o.R.data()[i], r_sq += o.R.data()[i] * o.R.data()[i], ++nr;
    for (int i = 0; i < 2; ++i) q_sum += o.Q(i, i), q_sq += o.Q(i, i) * o.Q(i, i), ++nq;
  }
  // Gaussian teacher: T_mm = |w*_m|²/N, mean 1, variance 2/N.
  s.teacher = TeacherKind::gaussian;
  for (int k = 0; k < runs; ++k) {
    const Overlaps o = unpack(s, OnlineSGD(s, N, 12, static_cast<std::uint64_t>(k), 0).state());
    for (int m = 0; m < 3; ++m) t_sum += o.T(m, m), t_sq += o.T(m, m) * o.T(m, m), ++nt;
  }
  const double s2 = 0.25;
  const double r_mean = r_sum / nr, r_var = r_sq / nr - r_mean * r_mean;
  CHECK(std::fabs(r_mean) < 4 * std::sqrt(s2 / N / nr));
  CHECK(r_var == doctest::Approx(s2 / N).epsilon(0.15));
  const double q_mean = q_sum / nq, q_var = q_sq / nq - q_mean * q_mean;
  CHECK(std::fabs(q_mean - s2) < 4 * std::sqrt(2 * s2 * s2 / N / nq));
  CHECK(q_var == doctest::Approx(2 * s2 * s2 / N).epsilon(0.25));
  const double t_mean = t_sum / nt, t_var = t_sq / nt - t_mean * t_mean;
  CHECK(std::fabs(t_mean - 1) < 4 * std::sqrt(2.0 / N / nt));
  CHECK(t_var == doctest::Approx(2.0 / N).epsilon(0.2));
}

TEST_CASE("runs are reproducible per (seed, replica) and independent across replicas") {
  const Config s = full_setup();
  OnlineSGD a(s, 100, 9, 0), b(s, 100, 9, 0), c(s, 100, 9, 1);
  a.advance_to(3.0);
  b.advance_to(3.0);
  c.advance_to(3.0);
  CHECK(a.state() == b.state());
  CHECK((a.state() - c.state()).lpNorm<Eigen::Infinity>() > 1e-3);
  // Drift samples come from their own stream: drawing them does not change the training run.
  OnlineSGD d(s, 100, 9, 0);
  d.advance_to(1.0);
  for (int k = 0; k < 10; ++k) d.increment();
  d.advance_to(3.0);
  CHECK(d.state() == a.state());
}

TEST_CASE("eg (closed form of the measured overlaps) and eg_test agree with a full N-dimensional test set") {
  for (Activation g : {Activation::erf, Activation::linear}) {
    const Config s = full_setup(g);
    const int N = 200;
    OnlineSGD sgd(s, N, 21, 0, 20000);
    for (double t : {0.0, 4.0}) {
      sgd.advance_to(t);
      const Observables o = sgd.observe();
      // A full test set: fresh N-dimensional inputs through the actual weights.
      const Eigen::MatrixXd W = sgd.students(), Ws = sgd.teachers();
      auto eng = rng::engine(99, 0, rng::user);
      boost::random::normal_distribution<double> normal;
      const long n = 20000;
      double sum = 0, sq = 0;
      Eigen::VectorXd x(N);
      for (long i = 0; i < n; ++i) {
        for (int j = 0; j < N; ++j) x(j) = normal(eng);
        double delta = 0;
        for (int m = 0; m < s.M; ++m) delta += s.vstar(m) * activation(g, Ws.col(m).dot(x) / std::sqrt(N));
        for (int k = 0; k < s.K; ++k) delta -= sgd.second_layer()(k) * activation(g, W.col(k).dot(x) / std::sqrt(N));
        sum += 0.5 * delta * delta;
        sq += 0.25 * delta * delta * delta * delta;
      }
      const double full = sum / n, full_se = std::sqrt((sq / n - full * full) / n);
      CAPTURE(activation_name(g));
      CAPTURE(t);
      CAPTURE(o["eg"].value);
      CAPTURE(full);
      CHECK(std::fabs(o["eg"].value - full) < 4.5 * full_se);
      CHECK(std::fabs(o["eg_test"].value - full) < 4.5 * std::hypot(full_se, o["eg_test"].se));
      CHECK(full_se < 0.03 * full);
    }
  }
}
