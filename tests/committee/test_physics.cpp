// Known physics of the soft committee machine, reproduced by the theory (Saad & Solla 1995; Goldt et
// al. 2019): the symmetric plateau is a saddle whose escape time grows like ln(1/asymmetry)/λ with λ
// the unstable eigenvalue of the linearised flow there; ε_g → 0 for K ≥ M without noise; with label
// noise an asymptotic error that grows with η (∝ η σ² at small η).
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "common.hpp"
#include "hdat/committee/ode.hpp"
#include "hdat/core/integrate.hpp"

using namespace hdat;
using namespace hdat::committee;

namespace {

IntegrateOptions tight() {
  IntegrateOptions o;
  o.rtol = 1e-10;
  o.atol = 1e-13;
  return o;
}

// K = M = 2 start: Q = q0 I, R = r0 + ε [[1, −1], [−1, 1]] (student 0 leans to teacher 0).
Eigen::VectorXd plateau_start(const Config& s, double eps) {
  Overlaps o;
  o.Q = 0.2 * Eigen::MatrixXd::Identity(2, 2);
  o.R.resize(2, 2);
  o.R << 0.01 + eps, 0.01 - eps, 0.01 - eps, 0.01 + eps;
  o.T = Eigen::MatrixXd::Identity(2, 2);
  o.v = s.v0;
  return pack(s, o);
}

// The first time R_00 − R_01 exceeds `threshold` (NaN: never before t_max).
double escape_time(const CommitteeODE& ode, const Eigen::VectorXd& x0, double t_max, double threshold = 0.3) {
  const StateLayout& l = ode.layout();
  double escape = std::numeric_limits<double>::quiet_NaN();
  IntegrateOptions o = tight();
  double t_prev = 0, d_prev = 0;
  o.step_monitor = [&](double t, const Eigen::VectorXd& x) {
    const auto R = l.view(x, "R");
    const double d = R(0, 0) - R(0, 1);
    if (d > threshold) {
      escape = t_prev + (t - t_prev) * (threshold - d_prev) / (d - d_prev);  // linear between accepted steps
      return false;
    }
    t_prev = t;
    d_prev = d;
    return true;
  };
  integrate([&](const ConstVecRef& x, VecRef dx, double t) { ode(x, dx, t); }, x0, 0.0, {t_max},
            [](double, const Eigen::VectorXd&) { return true; }, o);
  return escape;
}

// The state at t (tight tolerances).
Eigen::VectorXd evolve(const CommitteeODE& ode, const Eigen::VectorXd& x0, double t) {
  Eigen::VectorXd out = x0;
  integrate([&](const ConstVecRef& x, VecRef dx, double tt) { ode(x, dx, tt); }, x0, 0.0, {t},
            [&](double, const Eigen::VectorXd& x) {
              out = x;
              return true;
            },
            tight());
  return out;
}

// Largest real part among the eigenvalues of the flow linearised at x, in the independent
// coordinates (Q_ik, i ≤ k; R_in), by central differences.
double largest_growth_rate(const CommitteeODE& ode, const Eigen::VectorXd& x) {
  const Config& s = ode.setup();
  const StateLayout& l = ode.layout();
  std::vector<std::vector<int>> coords;  // each independent coordinate: the flat components it sets
  for (int k = 0; k < s.K; ++k)
    for (int i = 0; i <= k; ++i) coords.push_back({l.block("Q").offset + i + s.K * k, l.block("Q").offset + k + s.K * i});
  for (int n = 0; n < s.M; ++n)
    for (int i = 0; i < s.K; ++i) coords.push_back({l.block("R").offset + i + s.K * n});
  const int d = static_cast<int>(coords.size());
  Eigen::MatrixXd J(d, d);
  const double h = 1e-6;
  for (int c = 0; c < d; ++c) {
    Eigen::VectorXd up = x, down = x, fu(x.size()), fd(x.size());
    for (int j : coords[c]) up(j) += h, down(j) -= h;
    ode(up, fu, 0.0);
    ode(down, fd, 0.0);
    for (int r = 0; r < d; ++r) J(r, c) = (fu(coords[r][0]) - fd(coords[r][0])) / (2 * h);
  }
  return Eigen::EigenSolver<Eigen::MatrixXd>(J).eigenvalues().real().maxCoeff();
}

}  // namespace

TEST_CASE("the symmetric plateau is a saddle: escape time = const + ln(1/asymmetry) / lambda, lambda from the linearised flow") {
  Config s = committee_test::setup(2, 2);
  s.eta = 0.5;
  const CommitteeODE ode(s);
  // Exactly symmetric students never leave the plateau: they relax onto its fixed point.
  const Eigen::VectorXd plateau = evolve(ode, plateau_start(s, 0.0), 20000.0);
  Eigen::VectorXd drift(plateau.size());
  ode(plateau, drift, 0.0);
  CHECK(drift.lpNorm<Eigen::Infinity>() < 1e-9);
  const double eg_plateau = ode.generalisation_error(plateau);
  const auto R = ode.layout().view(plateau, "R");
  CHECK(std::fabs(R(0, 0) - R(0, 1)) < 1e-12);  // no specialisation
  CHECK(std::isnan(escape_time(ode, plateau_start(s, 0.0), 2000.0)));
  const double lambda = largest_growth_rate(ode, plateau);
  REQUIRE(lambda > 0);  // a saddle: one direction (the students' specialisation) grows
  std::vector<double> times;
  std::string line;
  for (double eps : {1e-3, 1e-4, 1e-5, 1e-6, 1e-7}) {
    times.push_back(escape_time(ode, plateau_start(s, eps), 5000.0));
    line += fmt::format("eps {:.0e}: t_escape {:.2f}; ", eps, times.back());
  }
  for (std::size_t k = 1; k < times.size(); ++k) CHECK(times[k] > times[k - 1]);
  // Each decade of asymmetry adds ln(10)/λ.
  const double per_decade = (times.back() - times[times.size() - 2]), predicted = std::log(10.0) / lambda;
  MESSAGE(fmt::format("plateau eg = {:.5f}, lambda = {:.5f}; {}per decade {:.3f} (ln 10 / lambda = {:.3f})", eg_plateau, lambda, line,
                      per_decade, predicted));
  CHECK(per_decade == doctest::Approx(predicted).epsilon(0.02));
}

TEST_CASE("without noise the error vanishes for K >= M, and not for K < M") {
  std::string line;
  for (auto [K, M] : std::vector<std::pair<int, int>>{{1, 1}, {2, 2}, {3, 2}, {1, 2}}) {
    Config s = committee_test::setup(K, M);
    s.eta = 0.5;
    const CommitteeODE ode(s);
    Overlaps o = committee_test::random_overlaps(s, 8);  // asymmetric, T != I
    const Eigen::VectorXd x = evolve(ode, pack(s, o), 3000.0);
    const double eg = ode.generalisation_error(x);
    line += fmt::format("K={} M={}: eg(3000) = {:.2e}; ", K, M, eg);
    CAPTURE(K);
    CAPTURE(M);
    if (K >= M)
      CHECK(eg < 1e-5);
    else
      CHECK(eg > 1e-2);  // a student with fewer units cannot represent the teacher
  }
  MESSAGE(line);
}

TEST_CASE("with label noise the asymptotic error grows with eta, linearly at small eta (Goldt et al. 2019)") {
  // Linear K = M = 1 has the exact value ε_g(∞) = η σ² / (2 (2 − η)) (test_theory.cpp); for erf the
  // same first-order balance of the η² σ² J2 term against the η-linear restoring drift gives
  // ε_g(∞) ∝ η σ² as η → 0.
  std::vector<double> etas = {0.05, 0.1, 0.2, 0.5, 1.0}, finals;
  std::string line;
  for (double eta : etas) {
    Config s = committee_test::setup(2, 2);
    s.eta = eta;
    s.noise = 0.5;
    const CommitteeODE ode(s);
    Overlaps o = committee_test::random_overlaps(s, 8);
    const double t_end = 3000.0 / eta;
    const Eigen::VectorXd x = evolve(ode, pack(s, o), t_end);
    Eigen::VectorXd dx(x.size());
    ode(x, dx, 0.0);
    CHECK(dx.lpNorm<Eigen::Infinity>() < 1e-9);  // converged to the noisy fixed point
    finals.push_back(ode.generalisation_error(x));
    line += fmt::format("eta {}: eg_inf = {:.5f} (eg/eta = {:.4f}); ", eta, finals.back(), finals.back() / eta);
  }
  MESSAGE(line);
  for (std::size_t k = 1; k < finals.size(); ++k) CHECK(finals[k] > finals[k - 1]);
  CHECK(finals[1] / finals[0] == doctest::Approx(2.0).epsilon(0.05));
}
