// The committee ODE (ode.hpp): the bulk right-hand side against the spec's sums of the scalar closed
// forms, its known limits (linear activation, K = M = 1 erf, the perfect student), the gradient
// identity of its η-linear part, permutation symmetry, and thread independence.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cmath>
#include <numbers>
#include <numeric>

#include "common.hpp"
#include "hdat/committee/integrals.hpp"
#include "hdat/committee/ode.hpp"
#include "hdat/core/integrate.hpp"

using namespace hdat;
using namespace hdat::committee;
using committee_test::random_overlaps;

namespace {

// A configuration with every term on.
Config full_setup(int K, int M, Activation g) {
  Config s = committee_test::setup(K, M, g);
  s.eta = 0.7;
  s.eta_v = 0.3;
  s.train_v = true;
  s.noise = 0.4;
  s.wd = 0.05;
  s.vstar = Eigen::VectorXd::LinSpaced(M, 1.0, 0.6);
  s.v0 = Eigen::VectorXd::LinSpaced(K, 0.9, -0.4);
  return s;
}

Eigen::VectorXd rhs(const CommitteeODE& ode, const Eigen::VectorXd& x) {
  Eigen::VectorXd dx(x.size());
  ode(x, dx, 0.0);
  return dx;
}

// The spec's ODE written index by index with the scalar closed forms (integrals.hpp).
Eigen::VectorXd literal_rhs(const Config& s, const Overlaps& o) {
  const int K = s.K, M = s.M, L = K + M;
  Eigen::MatrixXd C;
  field_covariance(o.Q, o.R, o.T, C);
  const Activation g = s.activation;
  const Eigen::VectorXd& v = o.v;
  const Eigen::VectorXd& vs = s.vstar;
  Overlaps d;
  d.Q = Eigen::MatrixXd::Zero(K, K);
  d.R = Eigen::MatrixXd::Zero(K, M);
  d.T = Eigen::MatrixXd::Zero(M, M);
  d.v = Eigen::VectorXd::Zero(K);
  for (int i = 0; i < K; ++i)
    for (int n = 0; n < M; ++n) {
      double sum = 0;
      for (int m = 0; m < M; ++m) sum += vs(m) * I3(g, C, i, K + n, K + m);
      for (int j = 0; j < K; ++j) sum -= v(j) * I3(g, C, i, K + n, j);
      d.R(i, n) = s.eta * v(i) * sum - s.wd * o.R(i, n);
    }
  for (int i = 0; i < K; ++i)
    for (int k = 0; k < K; ++k) {
      auto lin = [&](int a, int b) {
        double sum = 0;
        for (int m = 0; m < M; ++m) sum += vs(m) * I3(g, C, a, b, K + m);
        for (int j = 0; j < K; ++j) sum -= v(j) * I3(g, C, a, b, j);
        return s.eta * v(a) * sum;
      };
      double sq = 0;
      for (int n = 0; n < M; ++n)
        for (int m = 0; m < M; ++m) sq += vs(n) * vs(m) * I4(g, C, i, k, K + n, K + m);
      for (int j = 0; j < K; ++j)
        for (int n = 0; n < M; ++n) sq -= 2 * v(j) * vs(n) * I4(g, C, i, k, j, K + n);
      for (int j = 0; j < K; ++j)
        for (int l = 0; l < K; ++l) sq += v(j) * v(l) * I4(g, C, i, k, j, l);
      sq += s.noise * s.noise * J2(g, C, i, k);
      d.Q(i, k) = lin(i, k) + lin(k, i) - 2 * s.wd * o.Q(i, k) + s.eta * s.eta * v(i) * v(k) * sq;
    }
  for (int i = 0; i < K; ++i) {
    double sum = 0;
    for (int n = 0; n < M; ++n) sum += vs(n) * I2(g, C, i, K + n);
    for (int j = 0; j < K; ++j) sum -= v(j) * I2(g, C, i, j);
    d.v(i) = s.eta_v * sum;
  }
  (void)L;
  return pack(s, d);
}

}  // namespace

TEST_CASE("the bulk right-hand side equals the spec's sums of the scalar closed forms") {
  for (Activation g : {Activation::erf, Activation::linear})
    for (auto [K, M] : std::vector<std::pair<int, int>>{{1, 1}, {2, 3}, {4, 2}, {5, 5}}) {
      const Config s = full_setup(K, M, g);
      const CommitteeODE ode(s);
      for (std::uint64_t r = 0; r < 3; ++r) {
        Overlaps o = random_overlaps(s, r);
        o.v = s.v0 + 0.1 * Eigen::VectorXd::LinSpaced(K, -1, 1);
        const Eigen::VectorXd x = pack(s, o);
        const Eigen::VectorXd fast = rhs(ode, x), slow = literal_rhs(s, o);
        CAPTURE(activation_name(g));
        CAPTURE(K);
        CAPTURE(M);
        CHECK((fast - slow).lpNorm<Eigen::Infinity>() <= 1e-13 * (1 + slow.lpNorm<Eigen::Infinity>()));
        // The named terms add up to the right-hand side.
        CHECK((ode.terms(x, 0.0).total() - fast).lpNorm<Eigen::Infinity>() <= 1e-14 * (1 + fast.lpNorm<Eigen::Infinity>()));
      }
    }
}

TEST_CASE("the right-hand side does not depend on the thread count") {
  const Config s = full_setup(16, 16, Activation::erf);  // 136 pairs x 32^2 fields: above the parallel threshold
  const Eigen::VectorXd x = pack(s, random_overlaps(s, 5));
  const Eigen::VectorXd one = rhs(CommitteeODE(s, 1), x), two = rhs(CommitteeODE(s, 2), x), four = rhs(CommitteeODE(s, 4), x);
  CHECK(one == two);
  CHECK(one == four);
}

TEST_CASE("linear activation: the ODE is the matrix algebra of a linear network") {
  // dR = η v (T v* − Rᵀ v)ᵀ − wd R, dQ = η (v uᵀ + u vᵀ) + η² (2 ε_g + σ²) v vᵀ − 2 wd Q,
  // dv = η_v u, with u = R v* − Q v and ε_g = ½ (vᵀQv − 2 vᵀRv* + v*ᵀTv*) (derivation.md §5).
  const Config s = full_setup(3, 2, Activation::linear);
  const CommitteeODE ode(s);
  Overlaps o = random_overlaps(s, 9);
  o.v << 0.5, -1.0, 0.8;
  const Eigen::VectorXd x = pack(s, o);
  const Eigen::VectorXd& v = o.v;
  const Eigen::VectorXd& vs = s.vstar;
  const Eigen::VectorXd u = o.R * vs - o.Q * v;
  const double eg = 0.5 * (v.dot(o.Q * v) - 2 * v.dot(o.R * vs) + vs.dot(o.T * vs));
  CHECK(ode.generalisation_error(x) == doctest::Approx(eg).epsilon(1e-14));
  Overlaps d;
  d.R = s.eta * v * (o.T * vs - o.R.transpose() * v).transpose() - s.wd * o.R;
  d.Q = s.eta * (v * u.transpose() + u * v.transpose()) + s.eta * s.eta * (2 * eg + s.noise * s.noise) * v * v.transpose() -
        2 * s.wd * o.Q;
  d.T = Eigen::MatrixXd::Zero(2, 2);
  d.v = s.eta_v * u;
  CHECK((rhs(ode, x) - pack(s, d)).lpNorm<Eigen::Infinity>() < 1e-13);
}

TEST_CASE("linear K = M = 1: the generalisation error relaxes exactly as eg_inf + (eg_0 - eg_inf) exp(-(2 eta - eta^2) t)") {
  // With T = v = v* = 1: d ε_g/dt = −(2η − η²) ε_g + η² σ²/2, so ε_g(∞) = η σ² / (2 (2 − η)).
  for (double eta : {0.3, 1.0, 1.7}) {
    Config s = committee_test::setup(1, 1, Activation::linear);
    s.eta = eta;
    s.noise = 0.5;
    const CommitteeODE ode(s);
    Overlaps o;
    o.Q = Eigen::MatrixXd::Constant(1, 1, 0.8);
    o.R = Eigen::MatrixXd::Constant(1, 1, 0.1);
    o.T = Eigen::MatrixXd::Identity(1, 1);
    o.v = s.v0;
    const Eigen::VectorXd x0 = pack(s, o);
    const double eg0 = ode.generalisation_error(x0), inf = eta * 0.25 / (2 * (2 - eta)), rate = 2 * eta - eta * eta;
    IntegrateOptions opt;
    opt.rtol = 1e-11;
    opt.atol = 1e-13;
    double worst = 0;
    const auto summary = integrate([&](const ConstVecRef& x, VecRef dx, double t) { ode(x, dx, t); }, x0, 0.0,
                                   {0.0, 0.5, 2.0, 5.0, 20.0, 60.0}, [&](double t, const Eigen::VectorXd& x) {
                                     const double exact = inf + (eg0 - inf) * std::exp(-rate * t);
                                     worst = std::max(worst, std::fabs(ode.generalisation_error(x) - exact) / exact);
                                     return true;
                                   },
                                   opt);
    REQUIRE(summary.ok());
    CAPTURE(eta);
    CHECK(worst < 1e-8);
  }
}

TEST_CASE("erf K = M = 1: the ODE reduces to the known two-variable equations") {
  // derivation.md §5: with T = v = v* = 1,
  //   dR/dt = (2η/π)/(1+Q) [ (1+Q−R²)/√(2(1+Q)−R²) − R/√(1+2Q) ]
  //   dQ/dt = (4η/π)/(1+Q) [ R/√(2(1+Q)−R²) − Q/√(1+2Q) ]
  //           + (4η²/π²)/√(1+2Q) [ asin((1+2Q−2R²)/(2(1+2Q)−2R²)) − 2 asin(R/√((1+3Q)(2(1+2Q)−2R²)))
  //                                + asin(Q/(1+3Q)) ] + η² σ² (2/π)/√(1+2Q)
  Config s = committee_test::setup(1, 1);
  s.eta = 0.8;
  s.noise = 0.3;
  const CommitteeODE ode(s);
  const double pi = std::numbers::pi, eta = s.eta, sig2 = s.noise * s.noise;
  for (auto [Q, R] : std::vector<std::pair<double, double>>{{0.5, 0.1}, {1.0, 0.9}, {2.0, -0.7}, {0.01, 0.0}, {1.0, 1.0}}) {
    Overlaps o;
    o.Q = Eigen::MatrixXd::Constant(1, 1, Q);
    o.R = Eigen::MatrixXd::Constant(1, 1, R);
    o.T = Eigen::MatrixXd::Identity(1, 1);
    o.v = s.v0;
    const Eigen::VectorXd dx = rhs(ode, pack(s, o));
    const double a = 2 * (1 + Q) - R * R, b = std::sqrt(1 + 2 * Q);
    const double dR = (2 * eta / pi) / (1 + Q) * ((1 + Q - R * R) / std::sqrt(a) - R / b);
    const double dQ = (4 * eta / pi) / (1 + Q) * (R / std::sqrt(a) - Q / b) +
                      (4 * eta * eta / (pi * pi)) / b *
                          (std::asin((1 + 2 * Q - 2 * R * R) / (2 * (1 + 2 * Q) - 2 * R * R)) -
                           2 * std::asin(R / std::sqrt((1 + 3 * Q) * (2 * (1 + 2 * Q) - 2 * R * R))) + std::asin(Q / (1 + 3 * Q))) +
                      eta * eta * sig2 * (2 / pi) / b;
    CAPTURE(Q);
    CAPTURE(R);
    CHECK(dx(ode.layout().block("R").offset) == doctest::Approx(dR).epsilon(1e-13));
    CHECK(dx(ode.layout().block("Q").offset) == doctest::Approx(dQ).epsilon(1e-13));
  }
}

TEST_CASE("the perfect student (Q = R = T, v = v*) has eg = 0 and is a fixed point without noise and decay") {
  for (Activation g : {Activation::erf, Activation::linear})
    for (auto [K, M] : std::vector<std::pair<int, int>>{{1, 1}, {2, 2}, {4, 4}}) {
      Config s = committee_test::setup(K, M, g);
      s.eta = 1.3;
      s.train_v = true;
      s.vstar = Eigen::VectorXd::LinSpaced(M, 1.0, 0.5);
      const Overlaps teacher = random_overlaps(s, 3);
      Overlaps o;
      o.T = teacher.T;
      o.Q = teacher.T;
      o.R = teacher.T;
      o.v = s.vstar;
      const CommitteeODE ode(s);
      const Eigen::VectorXd x = pack(s, o);
      CAPTURE(activation_name(g));
      CAPTURE(K);
      CHECK(std::fabs(ode.generalisation_error(x)) < 1e-15);
      CHECK(rhs(ode, x).lpNorm<Eigen::Infinity>() < 1e-14);
      // With label noise the η² σ² J2 term alone moves Q: the fixed point is lost.
      s.noise = 0.2;
      const Eigen::VectorXd noisy = rhs(CommitteeODE(s), x);
      CHECK(noisy.lpNorm<Eigen::Infinity>() > 1e-3);
    }
}

TEST_CASE("the eta-linear drift is gradient flow on the generalisation error") {
  // E[Δw_i] = −η ∂ε_g/∂w_i per step, hence (derivation.md §6), with G = ∂ε_g/∂Q (symmetric) and
  // H = ∂ε_g/∂R: dR = −η (2 G R + H T), dQ = −η (2 G Q + H Rᵀ) + transpose, dv = −η_v ∂ε_g/∂v.
  // ε_g is built from I2 only, the drift from I3: two independent closed forms.
  for (Activation g : {Activation::erf, Activation::linear}) {
    Config s = full_setup(3, 2, g);
    s.noise = 0;
    s.wd = 0;
    const CommitteeODE ode(s);
    Overlaps o = random_overlaps(s, 21);
    o.v << 1.1, 0.4, -0.6;
    const Eigen::VectorXd x = pack(s, o);
    const StateLayout& l = ode.layout();
    const double h = 1e-6;
    auto eg_at = [&](const Eigen::VectorXd& y) { return ode.generalisation_error(y); };
    auto derivative = [&](const std::vector<int>& components) {
      Eigen::VectorXd up = x, down = x;
      for (int c : components) up(c) += h, down(c) -= h;
      return (eg_at(up) - eg_at(down)) / (2 * h);
    };
    const int K = s.K, M = s.M;
    const int q = l.block("Q").offset, r = l.block("R").offset, vo = l.block("v").offset;
    Eigen::MatrixXd G(K, K), H(K, M);
    Eigen::VectorXd dv(K);
    for (int i = 0; i < K; ++i)
      for (int k = 0; k < K; ++k)
        G(i, k) = i == k ? derivative({q + i + K * i}) : 0.5 * derivative({q + i + K * k, q + k + K * i});
    for (int i = 0; i < K; ++i)
      for (int n = 0; n < M; ++n) H(i, n) = derivative({r + i + K * n});
    for (int i = 0; i < K; ++i) dv(i) = derivative({vo + i});
    const DriftTerms t = ode.terms(x, 0.0);
    const Eigen::VectorXd lin = t.value(0), second = t.value(2);
    REQUIRE(t.name(0) == "eta_linear");
    REQUIRE(t.name(2) == "second_layer");
    const Eigen::MatrixXd dR = -s.eta * (2 * G * o.R + H * o.T);
    const Eigen::MatrixXd half = -s.eta * (2 * G * o.Q + H * o.R.transpose());
    const Eigen::MatrixXd dQ = half + half.transpose();
    CAPTURE(activation_name(g));
    CHECK((l.view(lin, "R") - dR).lpNorm<Eigen::Infinity>() < 1e-8);
    CHECK((l.view(lin, "Q") - dQ).lpNorm<Eigen::Infinity>() < 1e-8);
    CHECK((l.view(second, "v") - (-s.eta_v * dv)).lpNorm<Eigen::Infinity>() < 1e-8);
    CHECK(l.view(lin, "R").lpNorm<Eigen::Infinity>() > 0.01);  // not a trivial zero
  }
}

TEST_CASE("relabelling students or teachers relabels the drift") {
  const Config base = full_setup(3, 3, Activation::erf);
  Overlaps o = random_overlaps(base, 31);
  o.v << 0.9, 0.2, -0.5;
  Eigen::PermutationMatrix<Eigen::Dynamic> ps(3), pt(3);
  ps.indices() << 2, 0, 1;
  pt.indices() << 1, 2, 0;
  Config permuted = base;
  permuted.vstar = pt * base.vstar;
  Overlaps p;
  p.Q = ps * o.Q * ps.transpose();
  p.R = ps * o.R * pt.transpose();
  p.T = pt * o.T * pt.transpose();
  p.v = ps * o.v;
  const Overlaps d = unpack(base, rhs(CommitteeODE(base), pack(base, o)));
  const Overlaps dp = unpack(permuted, rhs(CommitteeODE(permuted), pack(permuted, p)));
  CHECK((dp.Q - ps * d.Q * ps.transpose()).lpNorm<Eigen::Infinity>() < 1e-14);
  CHECK((dp.R - ps * d.R * pt.transpose()).lpNorm<Eigen::Infinity>() < 1e-14);
  CHECK((dp.v - ps * d.v).lpNorm<Eigen::Infinity>() < 1e-14);
}

TEST_CASE("a broken term is dropped from the drift and from terms(), nothing else changes") {
  const Config s = full_setup(2, 2, Activation::erf);
  const Eigen::VectorXd x = pack(s, random_overlaps(s, 41));
  const DriftTerms good = CommitteeODE(s).terms(x, 0.0);
  for (std::size_t k = 0; k < good.size(); ++k) {
    Config b = s;
    b.broken_term = good.name(k);
    const CommitteeODE broken(b);
    CAPTURE(b.broken_term);
    CHECK((rhs(broken, x) - (good.total() - good.value(k))).lpNorm<Eigen::Infinity>() < 1e-14);
    CHECK(good.value(k).lpNorm<Eigen::Infinity>() > 1e-3);
  }
}
