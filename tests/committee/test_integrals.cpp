// The closed forms of the committee machine's Gaussian integrals (integrals.hpp) against Monte Carlo
// on random covariance matrices, with coinciding indices, for erf(u/√2) and linear g. The
// criterion (|closed form − MC| ≤ 4.5 MC standard errors) is shown to have the power to reject
// plausible mistakes: the same criterion rejects variants with a factor or a term wrong.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <boost/random/normal_distribution.hpp>
#include <boost/random/uniform_real_distribution.hpp>
#include <cmath>
#include <functional>
#include <numbers>
#include <string>
#include <vector>

#include "hdat/committee/integrals.hpp"
#include "hdat/core/random.hpp"

using namespace hdat;
using namespace hdat::committee;

namespace {

// A random covariance of dimension n with diagonal entries of order one and sizeable correlations
// (a mix of the shapes overlaps take: small, O(1), strongly correlated).
Eigen::MatrixXd random_covariance(int n, std::uint64_t replica) {
  auto eng = rng::engine(2024, replica, rng::user);
  boost::random::normal_distribution<double> normal;
  boost::random::uniform_real_distribution<double> scale(0.2, 1.6);
  Eigen::MatrixXd A(n, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) A(i, j) = normal(eng);
  Eigen::MatrixXd C = A * A.transpose() / n;
  const Eigen::VectorXd s = Eigen::VectorXd::NullaryExpr(n, [&](Eigen::Index) { return scale(eng); });
  return s.asDiagonal() * C * s.asDiagonal();
}

// One integral: its name, indices, closed form, and integrand at a sample u.
struct Case {
  std::string name;
  std::function<double(const Eigen::MatrixXd&)> closed;
  std::function<double(const Eigen::VectorXd&)> integrand;
};

std::vector<Case> cases(Activation g) {
  auto G = [g](double u) { return activation(g, u); };
  auto D = [g](double u) { return activation_derivative(g, u); };
  std::vector<Case> out;
  for (auto [a, b] : std::vector<std::pair<int, int>>{{0, 1}, {2, 3}, {0, 0}}) {
    out.push_back({fmt::format("I2({},{})", a, b), [=](const Eigen::MatrixXd& C) { return I2(g, C, a, b); },
                   [=](const Eigen::VectorXd& u) { return G(u(a)) * G(u(b)); }});
    out.push_back({fmt::format("J2({},{})", a, b), [=](const Eigen::MatrixXd& C) { return J2(g, C, a, b); },
                   [=](const Eigen::VectorXd& u) { return D(u(a)) * D(u(b)); }});
  }
  for (auto [a, b, c] : std::vector<std::tuple<int, int, int>>{{0, 1, 2}, {0, 0, 1}, {0, 1, 1}, {0, 1, 0}, {0, 0, 0}, {3, 1, 2}})
    out.push_back({fmt::format("I3({},{},{})", a, b, c), [=](const Eigen::MatrixXd& C) { return I3(g, C, a, b, c); },
                   [=](const Eigen::VectorXd& u) { return D(u(a)) * u(b) * G(u(c)); }});
  for (auto [a, b, c, d] : std::vector<std::tuple<int, int, int, int>>{
           {0, 1, 2, 3}, {0, 0, 1, 2}, {0, 1, 0, 2}, {0, 1, 2, 2}, {0, 1, 0, 1}, {0, 0, 0, 0}, {2, 3, 0, 1}})
    out.push_back({fmt::format("I4({},{},{},{})", a, b, c, d), [=](const Eigen::MatrixXd& C) { return I4(g, C, a, b, c, d); },
                   [=](const Eigen::VectorXd& u) { return D(u(a)) * D(u(b)) * G(u(c)) * G(u(d)); }});
  return out;
}

struct McResult {
  std::vector<double> mean, se;
};

// Plain Monte Carlo of every integrand on n samples u = L z, z ~ N(0, I).
McResult monte_carlo(const Eigen::MatrixXd& C, const std::vector<std::function<double(const Eigen::VectorXd&)>>& f, long n,
                     std::uint64_t replica) {
  const Eigen::MatrixXd L = C.llt().matrixL();
  auto eng = rng::engine(7, replica, rng::theory_samples);
  boost::random::normal_distribution<double> normal;
  const std::size_t m = f.size();
  std::vector<double> sum(m, 0.0), sq(m, 0.0);
  Eigen::VectorXd z(C.rows()), u(C.rows());
  for (long s = 0; s < n; ++s) {
    for (Eigen::Index i = 0; i < z.size(); ++i) z(i) = normal(eng);
    u.noalias() = L * z;
    for (std::size_t k = 0; k < m; ++k) {
      const double v = f[k](u);
      sum[k] += v;
      sq[k] += v * v;
    }
  }
  McResult r;
  for (std::size_t k = 0; k < m; ++k) {
    const double mean = sum[k] / n, var = (sq[k] / n - mean * mean) * n / (n - 1.0);
    r.mean.push_back(mean);
    r.se.push_back(std::sqrt(std::max(var, 0.0) / n));
  }
  return r;
}

constexpr long kSamples = 1'000'000;
constexpr double kZ = 4.5;

}  // namespace

TEST_CASE("closed forms of I2, J2, I3, I4 agree with Monte Carlo on random covariances (erf and linear)") {
  for (Activation g : {Activation::erf, Activation::linear}) {
    const std::vector<Case> cs = cases(g);
    std::vector<std::function<double(const Eigen::VectorXd&)>> f;
    for (const auto& c : cs) f.push_back(c.integrand);
    double worst = 0;
    for (std::uint64_t m = 0; m < 3; ++m) {
      const Eigen::MatrixXd C = random_covariance(4, m);
      const McResult mc = monte_carlo(C, f, kSamples, m);
      for (std::size_t k = 0; k < cs.size(); ++k) {
        const double closed = cs[k].closed(C);
        // A constant integrand (linear J2 = 1) has no sampling error: then the two must be equal.
        const double z = mc.se[k] > 0 ? (closed - mc.mean[k]) / mc.se[k] : (closed == doctest::Approx(mc.mean[k]) ? 0.0 : 1e300);
        CAPTURE(activation_name(g));
        CAPTURE(m);
        CAPTURE(cs[k].name);
        CAPTURE(closed);
        CAPTURE(mc.mean[k]);
        CAPTURE(mc.se[k]);
        CHECK(std::fabs(z) < kZ);
        // The check has power: the standard error is far below the integral's size.
        if (g == Activation::erf) CHECK(mc.se[k] < 2e-3);
        worst = std::max(worst, std::fabs(z));
      }
    }
    MESSAGE(fmt::format("{}: {} integrals x 3 covariances, largest |z| = {:.2f} ({} samples each)", activation_name(g), cs.size(),
                        worst, kSamples));
  }
}

TEST_CASE("the same Monte Carlo criterion rejects plausible mistakes in the erf closed forms") {
  // Variants a derivation could produce: a factor 1/π instead of 2/π in I2; det(C) instead of
  // det(I + C) in J2; I3 without its −C_ab C_ac / (1 + C_aa) term (Stein's lemma on one field
  // only); I4 as J2 · I2 of the untilted covariance.
  const Activation g = Activation::erf;
  const std::vector<Case> wrong = {
      {"I2 with 1/pi", [](const Eigen::MatrixXd& C) { return 0.5 * I2(Activation::erf, C, 0, 1); },
       [](const Eigen::VectorXd& u) { return activation(Activation::erf, u(0)) * activation(Activation::erf, u(1)); }},
      {"J2 with det C", [](const Eigen::MatrixXd& C) { return (2 / std::numbers::pi) / std::sqrt(1 + C(0, 0) * C(1, 1) - C(0, 1) * C(0, 1)); },
       [](const Eigen::VectorXd& u) { return activation_derivative(Activation::erf, u(0)) * activation_derivative(Activation::erf, u(1)); }},
      {"I3 without its second term", [](const Eigen::MatrixXd& C) { return J2(Activation::erf, C, 0, 2) * C(1, 2); },
       [](const Eigen::VectorXd& u) { return activation_derivative(Activation::erf, u(0)) * u(1) * activation(Activation::erf, u(2)); }},
      {"I4 untilted", [](const Eigen::MatrixXd& C) { return J2(Activation::erf, C, 0, 1) * I2(Activation::erf, C, 2, 3); },
       [](const Eigen::VectorXd& u) {
         return activation_derivative(Activation::erf, u(0)) * activation_derivative(Activation::erf, u(1)) *
                activation(Activation::erf, u(2)) * activation(Activation::erf, u(3));
       }},
  };
  std::vector<std::function<double(const Eigen::VectorXd&)>> f;
  for (const auto& c : wrong) f.push_back(c.integrand);
  (void)g;
  for (std::uint64_t m = 0; m < 2; ++m) {
    const Eigen::MatrixXd C = random_covariance(4, m);
    const McResult mc = monte_carlo(C, f, kSamples, 10 + m);
    for (std::size_t k = 0; k < wrong.size(); ++k) {
      const double z = (wrong[k].closed(C) - mc.mean[k]) / mc.se[k];
      CAPTURE(m);
      CAPTURE(wrong[k].name);
      CAPTURE(z);
      CHECK(std::fabs(z) > 2 * kZ);  // rejected, with a margin
    }
  }
}

TEST_CASE("the generalisation error's closed form agrees with Monte Carlo of 1/2 (y - yhat)^2") {
  for (Activation g : {Activation::erf, Activation::linear}) {
    const int K = 3, M = 2, L = K + M;
    const Eigen::MatrixXd C = random_covariance(L, 40);
    Eigen::VectorXd v(K), vstar(M);
    v << 0.8, -0.5, 1.3;
    vstar << 1.0, 0.7;
    const Eigen::VectorXd s = readout_signs(v, vstar);
    const std::function<double(const Eigen::VectorXd&)> half_sq = [&](const Eigen::VectorXd& u) {
      double delta = 0;
      for (int c = 0; c < L; ++c) delta += s(c) * activation(g, u(c));
      return 0.5 * delta * delta;
    };
    const McResult mc = monte_carlo(C, {half_sq}, kSamples, 41);
    const double closed = generalisation_error(g, C, s);
    CAPTURE(activation_name(g));
    CAPTURE(closed);
    CAPTURE(mc.mean[0]);
    CHECK(std::fabs(closed - mc.mean[0]) < kZ * mc.se[0]);
    CHECK(mc.se[0] < 0.01 * closed);
  }
}

TEST_CASE("the erf I4 closed form equals Saad-Solla's Lambda form") {
  // Written out, I4 = (4/π²) Λ4^{−1/2} asin(Λ0/√(Λ1 Λ2)) (derivation.md §3.4): an algebraic identity
  // with the tilted-covariance form used here, checked on random covariances and coinciding indices.
  for (std::uint64_t m = 0; m < 5; ++m) {
    const Eigen::MatrixXd C = random_covariance(4, 100 + m);
    for (auto [a, b, c, d] : std::vector<std::tuple<int, int, int, int>>{{0, 1, 2, 3}, {0, 0, 1, 2}, {0, 1, 1, 2}, {1, 2, 3, 3}}) {
      const double l4 = (1 + C(a, a)) * (1 + C(b, b)) - C(a, b) * C(a, b);
      const double l0 = l4 * C(c, d) - C(b, d) * C(b, c) * (1 + C(a, a)) - C(a, d) * C(a, c) * (1 + C(b, b)) +
                        C(a, b) * C(a, c) * C(b, d) + C(a, b) * C(a, d) * C(b, c);
      const double l1 = l4 * (1 + C(c, c)) - C(b, c) * C(b, c) * (1 + C(a, a)) - C(a, c) * C(a, c) * (1 + C(b, b)) +
                        2 * C(a, b) * C(a, c) * C(b, c);
      const double l2 = l4 * (1 + C(d, d)) - C(b, d) * C(b, d) * (1 + C(a, a)) - C(a, d) * C(a, d) * (1 + C(b, b)) +
                        2 * C(a, b) * C(a, d) * C(b, d);
      const double saad_solla = 4 / (std::numbers::pi * std::numbers::pi) / std::sqrt(l4) * std::asin(l0 / std::sqrt(l1 * l2));
      CHECK(I4(Activation::erf, C, a, b, c, d) == doctest::Approx(saad_solla).epsilon(1e-12));
    }
  }
}
