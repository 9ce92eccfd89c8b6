// Identities of the building blocks: the NumPy-compatible draws, the vector-Jacobian products of every
// normalisation and the full gradient against finite differences, the exact reduction of the full
// flow to (u, a) / (u, Q, a) for any d, and the explicit initial conditions.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "helpers.hpp"
#include "hdat/core/error.hpp"
#include "hdat/polarization/full_model.hpp"
#include "hdat/polarization/instance.hpp"
#include "hdat/polarization/normalization.hpp"
#include "hdat/polarization/numpy_random.hpp"
#include "hdat/polarization/reduced.hpp"

using namespace hdat;
using namespace hdat::polarization;
using test_pol::config;

namespace {

const std::vector<std::string> kAllNorms = {"softmax", "square", "sum", "l1", "relu", "sigmoid", "elementwise_relu"};

Eigen::VectorXd random_vector(int n, std::mt19937& g, double mean = 0, double sd = 1) {
  std::normal_distribution<double> N(mean, sd);
  Eigen::VectorXd v(n);
  for (int i = 0; i < n; ++i) v(i) = N(g);
  return v;
}

}  // namespace

TEST_CASE("NumPy legacy draws: np.random.seed(s) then randn / rand give NumPy's documented numbers") {
  // np.random.seed(0); np.random.randn(4) = [1.764052345967664, 0.4001572083672233, 0.9787379841057392, 2.240893199201458]
  NumpyLegacyRandom r0(0);
  CHECK(r0.normal() == doctest::Approx(1.764052345967664).epsilon(1e-15));
  CHECK(r0.normal() == doctest::Approx(0.4001572083672233).epsilon(1e-15));
  CHECK(r0.normal() == doctest::Approx(0.9787379841057392).epsilon(1e-15));
  CHECK(r0.normal() == doctest::Approx(2.240893199201458).epsilon(1e-15));
  // np.random.seed(42); np.random.randn(3) = [0.4967141530112327, -0.13826430117118466, 0.6476885381006925]
  NumpyLegacyRandom r42(42);
  CHECK(r42.normal() == doctest::Approx(0.4967141530112327).epsilon(1e-15));
  CHECK(r42.normal() == doctest::Approx(-0.13826430117118466).epsilon(1e-15));
  CHECK(r42.normal() == doctest::Approx(0.6476885381006925).epsilon(1e-15));
  // np.random.seed(0); np.random.rand(3) = [0.5488135039273248, 0.7151893663724195, 0.6027633760716439]
  NumpyLegacyRandom u0(0);
  CHECK(u0.uniform() == doctest::Approx(0.5488135039273248).epsilon(1e-15));
  CHECK(u0.uniform() == doctest::Approx(0.7151893663724195).epsilon(1e-15));
  CHECK(u0.uniform() == doctest::Approx(0.6027633760716439).epsilon(1e-15));
}

TEST_CASE("init=numpy reproduces the spec's listed u(0) of the logistic toy (seed 123, d = T = 8)") {
  const Config c = config({{"init", "numpy"}, {"seed", 123}});
  const Instance in = make_instance(c);
  const double listed[] = {-0.2957, -0.2169, -0.0516, -0.1410, -0.1257, -0.0683, -0.0320, -0.1280};
  for (int i = 0; i < 8; ++i) CHECK(std::fabs(in.u0(i) - listed[i]) <= 5e-5);
  CHECK(in.beta_star.norm() == doctest::Approx(1.0).epsilon(1e-14));
  Eigen::Index w = 0;
  in.u0.maxCoeff(&w);
  CHECK(w == 6);
}

TEST_CASE("vector-Jacobian products of every normalisation match central finite differences") {
  std::mt19937 g(7);
  const int T = 6;
  for (const auto& nm : kAllNorms) {
    CAPTURE(nm);
    const Normalization n = config({{"normalization", nm}}).normalization;
    for (int trial = 0; trial < 4; ++trial) {
      // Away from the kinks of l1/relu (|a_i| >= 0.2); mixed signs included (sum and l1 off the simplex).
      Eigen::VectorXd a = random_vector(T, g, trial % 2 ? 0.0 : 1.0, 1.0);
      for (int i = 0; i < T; ++i)
        if (std::fabs(a(i)) < 0.2) a(i) = a(i) < 0 ? -0.2 - 0.1 * i : 0.2 + 0.1 * i;
      if (nm == "sum" && std::fabs(a.sum()) < 0.5) a(0) += 1.0;
      if (nm == "relu" && a.maxCoeff() <= 0) a(0) = 1.0;
      const Eigen::VectorXd gv = random_vector(T, g);
      Eigen::VectorXd s(T), out(T), sp(T), sm(T);
      const double F = weights(n, a, s);
      vjp(n, a, s, F, gv, out);
      for (int k = 0; k < T; ++k) {
        const double h = 1e-6 * std::max(1.0, std::fabs(a(k)));
        Eigen::VectorXd ap = a, am = a;
        ap(k) += h;
        am(k) -= h;
        weights(n, ap, sp);
        weights(n, am, sm);
        const double fd = gv.dot(sp - sm) / (2 * h);
        CHECK(out(k) == doctest::Approx(fd).epsilon(1e-7).scale(1.0));
      }
    }
  }
}

TEST_CASE("softmax weights by log-sum-exp stay exact for huge logits; entropy and 1 - s_top without cancellation") {
  Eigen::VectorXd a(3);
  a << 1000.0, 990.0, -5.0;
  Eigen::VectorXd s(3);
  weights(Normalization::softmax, a, s);
  CHECK(s.allFinite());
  CHECK(s.sum() == doctest::Approx(1.0).epsilon(1e-12));  // a_i − lse carries the ulp of 1000 (1e-13)
  CHECK(one_minus_top(Normalization::softmax, s, 0) == doctest::Approx(std::exp(-10.0) / (1 + std::exp(-10.0))).epsilon(1e-12));
  a << 50.0, 0.0, 0.0;  // 1 − s_top = 2e^{-50}/(1 + 2e^{-50}) ≈ 3.9e-22: below double resolution of 1 − s_top
  weights(Normalization::softmax, a, s);
  CHECK(one_minus_top(Normalization::softmax, s, 0) == doctest::Approx(2 * std::exp(-50.0)).epsilon(1e-12));
  CHECK(entropy(Normalization::softmax, a, s) == doctest::Approx(2 * std::exp(-50.0) * 51.0).epsilon(1e-6));
  CHECK(softplus(800.0) == doctest::Approx(800.0));
  CHECK(softplus(-800.0) == 0.0);
  CHECK(logistic(-800.0) >= 0.0);
  CHECK(logistic(-800.0) < 1e-300);
}

TEST_CASE("full gradient of L(V, a) matches finite differences for every loss, both architectures") {
  std::mt19937 g(11);
  for (const std::string loss : {"logistic", "square", "regression", "xent"})
    for (const std::string arch : {"value", "tied"})
      for (const std::string nm : {"softmax", "square", "sigmoid"}) {
        CAPTURE(loss);
        CAPTURE(arch);
        CAPTURE(nm);
        const int T = 5, d = arch == "tied" ? 5 : 3;
        std::vector<std::pair<std::string, nlohmann::json>> sets = {{"loss", loss}, {"architecture", arch}, {"normalization", nm}, {"T", T},
                                                                    {"d", d}, {"a0_std", 0.7}, {"a0_mean", 0.3}, {"seed", 5}};
        if (loss == "regression") sets.insert(sets.end(), {{"n", 4}, {"kappa", 3}});
        if (arch == "value") sets.push_back({"V0_std", 0.8});
        const Config c = config(sets);
        const Instance in = make_instance(c);
        FullModel model(c, in);
        Eigen::MatrixXd V = in.V0 + 0.3 * Eigen::MatrixXd::Random(d, T);
        Eigen::VectorXd a = in.a0;
        Eigen::MatrixXd gV(d, T);
        Eigen::VectorXd ga(T);
        Eigen::Ref<Eigen::MatrixXd> gVr(gV);
        Eigen::Ref<Eigen::VectorXd> gar(ga);
        model.evaluate(V, a, &gVr, &gar);
        const double h = 1e-6;
        for (int i = 0; i < d; ++i)
          for (int j = 0; j < T; ++j) {
            Eigen::MatrixXd Vp = V, Vm = V;
            Vp(i, j) += h;
            Vm(i, j) -= h;
            const double fd = (model.evaluate(Vp, a) - model.evaluate(Vm, a)) / (2 * h);
            CHECK(gV(i, j) == doctest::Approx(fd).epsilon(1e-6).scale(1.0));
          }
        for (int k = 0; k < T; ++k) {
          Eigen::VectorXd ap = a, am = a;
          ap(k) += h;
          am(k) -= h;
          const double fd = (model.evaluate(V, ap) - model.evaluate(V, am)) / (2 * h);
          CHECK(ga(k) == doctest::Approx(fd).epsilon(1e-6).scale(1.0));
        }
      }
}

TEST_CASE("the reduced right-hand sides are the exact projections of the full flow, any d, every normalisation") {
  for (const std::string loss : {"logistic", "square"})
    for (int d : {1, 3, 12})
      for (const auto& nm : kAllNorms) {
        CAPTURE(loss);
        CAPTURE(d);
        CAPTURE(nm);
        const int T = 5;
        const Config c = config({{"loss", loss}, {"normalization", nm}, {"T", T}, {"d", d}, {"V0_std", 0.9}, {"a0_mean", 0.8}, {"a0_std", 0.6},
                                 {"seed", 3 + d}, {"beta_norm", 1.7}});
        const Instance in = make_instance(c);
        FullFlow full(c, in);
        Eigen::VectorXd xf = full.initial_state(), dxf(xf.size());
        full.rhs(xf, dxf);
        const auto V = full.layout().view(xf, "V"), dV = full.layout().view(dxf, "V");
        auto reduced = make_flow(c, in);
        REQUIRE(reduced->kind() == FlowKind::reduced);
        Eigen::VectorXd xr = reduced->initial_state(), dxr(xr.size());
        reduced->rhs(xr, dxr);
        const StateLayout& rl = reduced->layout();
        const Eigen::VectorXd du = dV.transpose() * in.beta_star;  // du/dt = (dV/dt)ᵀβ*
        const Eigen::VectorXd da = full.layout().view(dxf, "a");
        const double scale = 1 + dxf.cwiseAbs().maxCoeff();
        CHECK((rl.view(dxr, "u") - du).cwiseAbs().maxCoeff() <= 1e-14 * scale);
        CHECK((rl.view(dxr, "a") - da).cwiseAbs().maxCoeff() <= 1e-14 * scale);
        // The state of the full flow's weights, measured by the reduced flow, is its own initial state.
        CHECK((reduced->state_of(V, full.layout().view(xf, "a")) - xr).cwiseAbs().maxCoeff() <= 1e-14 * (1 + xr.cwiseAbs().maxCoeff()));
        if (loss == "square") {
          const Eigen::MatrixXd dQ = dV.transpose() * V + V.transpose() * dV;  // d(VᵀV)/dt
          CHECK((rl.view(dxr, "Q") - dQ).cwiseAbs().maxCoeff() <= 1e-13 * scale);
        }
      }
}

TEST_CASE("logistic full flow: the part of V orthogonal to β* never moves and d|V|²/dt = 2γz") {
  const Config c = config({{"T", 6}, {"d", 9}, {"V0_std", 0.5}, {"a0_std", 0.4}, {"seed", 8}, {"beta_norm", 1.3}});
  const Instance in = make_instance(c);
  FullFlow full(c, in);
  Eigen::VectorXd x = full.initial_state(), dx(x.size());
  full.rhs(x, dx);
  const auto V = full.layout().view(x, "V"), dV = full.layout().view(dx, "V");
  const Eigen::VectorXd bh = in.beta_star.normalized();
  CHECK((dV - bh * (bh.transpose() * dV)).cwiseAbs().maxCoeff() <= 1e-16);
  const Measurement m = full.measure(x);
  const double gamma = logistic(-m.z);
  CHECK(2 * (V.cwiseProduct(dV)).sum() == doctest::Approx(2 * gamma * m.z).epsilon(1e-13));
}

TEST_CASE("explicit initial conditions: V(0) is built with V(0)ᵀβ* = u0 and V(0)ᵀV(0) = Q0; impossible Q0 is refused") {
  Eigen::VectorXd u0(4);
  u0 << 0.3, -0.2, 0.5, 0.1;
  Eigen::MatrixXd B(4, 2);
  B << 1, 0, 0.5, 1, -0.3, 0.2, 0.1, -0.7;
  const Eigen::MatrixXd Q0 = u0 * u0.transpose() / 4.0 + B * B.transpose();  // |β*| = 2: b = 4
  auto to_rows = [](const Eigen::MatrixXd& M) {
    nlohmann::json j = nlohmann::json::array();
    for (int i = 0; i < M.rows(); ++i) {
      nlohmann::json row = nlohmann::json::array();
      for (int k = 0; k < M.cols(); ++k) row.push_back(M(i, k));
      j.push_back(row);
    }
    return j;
  };
  const std::vector<double> u0v(u0.data(), u0.data() + 4);
  const Config c = config({{"loss", "square"}, {"init", "explicit"}, {"T", 4}, {"d", 3}, {"beta_norm", 2.0}, {"u0", u0v}, {"Q0", to_rows(Q0)}});
  const Instance in = make_instance(c);
  CHECK((in.V0.transpose() * in.beta_star - u0).cwiseAbs().maxCoeff() <= 1e-14);
  CHECK((in.V0.transpose() * in.V0 - Q0).cwiseAbs().maxCoeff() <= 1e-12);
  // The remainder Q0 − u0u0ᵀ/b has rank 2 > d − 1 = 1 for d = 2: no such V exists.
  const Config c2 = config({{"loss", "square"}, {"init", "explicit"}, {"T", 4}, {"d", 2}, {"beta_norm", 2.0}, {"u0", u0v}, {"Q0", to_rows(Q0)}});
  CHECK_THROWS_AS(make_instance(c2), InputError);
  // Q0 violating Cauchy–Schwarz (remainder not PSD).
  const Eigen::MatrixXd Qbad = u0 * u0.transpose() / 4.0 - 0.1 * Eigen::MatrixXd::Identity(4, 4);
  const Config c3 = config({{"loss", "square"}, {"init", "explicit"}, {"T", 4}, {"d", 8}, {"beta_norm", 2.0}, {"u0", u0v}, {"Q0", to_rows(Qbad)}});
  CHECK_THROWS_AS(make_instance(c3), InputError);
}

TEST_CASE("regression design has the requested condition number") {
  for (double kappa : {1.0, 2.5, 5.0, 100.0}) {
    const Config c = config({{"loss", "regression"}, {"kappa", kappa}, {"d", 7}, {"n", 11}, {"seed", 2}});
    const Instance in = make_instance(c);
    Eigen::JacobiSVD<Eigen::MatrixXd> svd(in.X);
    const auto& sv = svd.singularValues();
    CHECK(sv(0) == doctest::Approx(1.0).epsilon(1e-12));
    CHECK(sv(0) / sv(sv.size() - 1) == doctest::Approx(kappa).epsilon(1e-10));
  }
}
