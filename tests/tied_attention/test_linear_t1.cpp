// The T = 1 closed-form fixed point, thresholds and the Bayes-optimal curve against the spec's
// reference numbers, fixed-point identities and known limits.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "hdat/tied_attention/linear_t1.hpp"
#include "hdat/tied_attention/thresholds.hpp"

using namespace hdat::tied_attention;

namespace {
LinearProblem wishart_problem(double k0, double noise, double lambda, LawMethod m = LawMethod::automatic) {
  LinearProblem p;
  p.target = std::make_shared<const WishartTarget>(k0);
  p.noise = noise;
  p.lambda = lambda;
  p.method = m;
  return p;
}
}  // namespace

TEST_CASE("spec reference point (Wishart kappa0 = 0.5, Delta = 0.1, lambda = 1) to the printed digits") {
  LinearT1Solver s(wishart_problem(0.5, 0.1, 1.0));
  const auto st = s.curve({0.2, 0.4});
  const FixedPointState& a = st[0];
  CHECK(a.converged);
  CHECK(std::fabs(a.mse - 0.8677) < 5e-5);
  CHECK(std::fabs(a.delta - 1.5147) < 5e-5);
  CHECK(std::fabs(a.t - 2.2030) < 5e-5);
  CHECK(std::fabs(a.train_loss * a.alpha - 0.1182) < 5e-5);  // spec: training loss per d²
  CHECK(std::fabs(a.rank - 0.2284) < 5e-5);
  const FixedPointState& b = st[1];
  CHECK(std::fabs(b.mse - 0.4178) < 5e-5);
  CHECK(std::fabs(b.rank - 0.3360) < 5e-5);
}

TEST_CASE("fixed-point identities (A), (B), MSE = 2 alpha delta^2 - Delta/2 and the envelope relations hold") {
  for (double lambda : {0.05, 1.0}) {
    LinearT1Solver s(wishart_problem(0.5, 0.1, lambda));
    for (const auto& st : s.curve({0.05, 0.25, 0.6})) {
      CAPTURE(lambda);
      CAPTURE(st.alpha);
      CHECK(st.converged);
      CHECK(st.residual < 1e-9);
      const double a = st.alpha, d = st.delta, e = st.eps;
      CHECK(4 * a * d - d / e == doctest::Approx(st.j.dJ_ddelta).epsilon(1e-9));
      CHECK(st.mse == doctest::Approx(2 * a * d * d - 0.05).epsilon(1e-9));
      // Linear channel: 1 + 4Σ = 4αε (the sample side), Σ = ∂_δJ/(2Σ̂δ) (the prior side).
      CHECK(1 + 4 * st.Sigma == doctest::Approx(4 * a * e).epsilon(1e-9));
      CHECK(st.objective == doctest::Approx(a * st.train_loss + lambda * st.trace).epsilon(1e-12));
    }
  }
}

TEST_CASE("the closed form and subordination give the same learning curve; so does a finite-d Wishart spectrum as d grows") {
  LinearT1Solver a(wishart_problem(0.5, 0.1, 0.5));
  LinearT1Solver b(wishart_problem(0.5, 0.1, 0.5, LawMethod::subordination));
  const auto ca = a.curve({0.1, 0.3}), cb = b.curve({0.1, 0.3});
  for (std::size_t i = 0; i < ca.size(); ++i) {
    CHECK(cb[i].mse == doctest::Approx(ca[i].mse).epsilon(1e-8));
    CHECK(cb[i].rank == doctest::Approx(ca[i].rank).epsilon(1e-8));
  }
}

TEST_CASE("limits: a huge penalty learns nothing (MSE = Q0, rank 0); many samples learn S0") {
  LinearT1Solver big(wishart_problem(0.5, 0.1, 1e4));
  const auto z = big.solve(0.3);
  CHECK(z.rank < 1e-12);
  CHECK(z.mse == doctest::Approx(1.5).epsilon(1e-9));
  LinearT1Solver s(wishart_problem(0.5, 0.0, 0.01));
  const auto c = s.curve({1.0, 4.0, 16.0});
  CHECK(c[0].mse > c[1].mse);
  CHECK(c[1].mse > c[2].mse);
  CHECK(c[2].mse < 0.01);
}

TEST_CASE("small lambda: the interpolation peak sits at alpha_interp; the continuation passes the folds") {
  auto target = std::make_shared<const WishartTarget>(0.5);
  LinearProblem p;
  p.target = target;
  p.noise = 0.1;
  p.lambda = 1e-3;
  LinearT1Solver s(p);
  std::vector<double> alphas;
  for (int i = 0; i < 41; ++i) alphas.push_back(0.25 + 0.005 * i);
  const auto c = s.curve(alphas);
  CHECK(s.summary().converged);
  CHECK(s.summary().folds >= 2);          // G(δ, ·) has three roots on part of the curve
  CHECK(s.summary().alpha_turns == 0);    // but α is monotone along it: one fixed point per α
  std::size_t peak = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    CHECK(c[i].converged);
    CHECK(c[i].branches == 1);
    if (c[i].mse > c[peak].mse) peak = i;
    if (i > 0) CHECK(std::fabs(c[i].mse - c[i - 1].mse) < 0.05);  // continuous: no branch jumps
  }
  const double ai = alpha_interp(target, 0.1, 1).alpha;
  CHECK(std::fabs(c[peak].alpha - ai) < 0.02);
  // Below the threshold the training loss vanishes with λ; above it, it does not.
  CHECK(c.front().train_loss < 1e-4);
  CHECK(c.back().train_loss > 1e-3);
}

TEST_CASE("thresholds: the spec's examples") {
  auto target = std::make_shared<const WishartTarget>(0.5);
  CHECK(std::fabs(alpha_perf(0.5, 1).alpha - 0.42217) < 5e-6);
  CHECK(std::fabs(alpha_interp(target, 0.1, 1).alpha - 0.34500) < 5e-6);
  CHECK(std::fabs(alpha_interp(target, 0.1, 2).alpha - 0.17250) < 5e-6);
  CHECK(alpha_pr(0.5, 1) == doctest::Approx(0.375));
  CHECK(alpha_pr(0.5, 2) == doctest::Approx(0.1875));
  CHECK(alpha_perf(0.5, 2).alpha == doctest::Approx(0.42217498 / 2).epsilon(1e-6));
  // The minimiser s* of the bracket satisfies κ0 s = (1 − κ0) ∫ (x − s)₊ σ_sc.
  const auto ap = alpha_perf(0.5, 1);
  CHECK(0.5 * ap.s_star == doctest::Approx(0.5 * semicircle_tail_moment(ap.s_star, 1)).epsilon(1e-6));
}

TEST_CASE("alpha_interp -> the PSD tangent-cone value (not alpha_perf) as Delta -> 0 (spec correction)") {
  auto target = std::make_shared<const WishartTarget>(0.5);
  const double limit = alpha_interp_noiseless_limit(0.5, 1);
  CHECK(limit == doctest::Approx(0.4375));
  double prev = 0;
  for (double noise : {1e-2, 1e-3, 1e-4, 1e-5, 1e-6}) {
    const auto a = alpha_interp(target, noise, 1);
    CAPTURE(noise);
    CHECK(a.ok);
    CHECK(a.alpha > prev);  // increases toward the limit
    CHECK(a.alpha < limit);
    prev = a.alpha;
  }
  // The approach is ~Δ^{1/3} (δ̄³ ∝ Δ): at Δ = 1e-6 within 0.003 of 0.4375 and well above α_perf.
  CHECK(limit - prev < 3e-3);
  CHECK(prev > alpha_perf(0.5, 1).alpha + 0.01);
}

TEST_CASE("Bayes-optimal: mmse limits, perfect recovery at alpha_PR, and a lower bound on the ERM error") {
  auto target = std::make_shared<const WishartTarget>(0.5);
  // mmse(v)/v → 2κ0 − κ0² as v → 0; mmse → Var = Q0 − mean² as v → ∞; 0 for a zero target.
  CHECK(rie_mmse(target, 1e-6) / 1e-6 == doctest::Approx(0.75).epsilon(1e-4));
  CHECK(rie_mmse(target, 1e4) == doctest::Approx(1.0).epsilon(1e-3));
  auto zero = std::make_shared<const DiscreteTarget>(std::vector<double>{0.0});
  CHECK(std::fabs(rie_mmse(zero, 0.7)) < 1e-10);
  const auto bo = bayes_optimal_curve(target, 0.0, 1, {0.3, 0.37, 0.38, 0.5});
  CHECK(bo[0].mmse > bo[1].mmse);
  CHECK(bo[1].mmse > 0);
  CHECK(bo[2].mmse == 0);  // α > α_PR = 0.375
  CHECK(bo[3].mmse == 0);
  // BO below ERM at every α (noisy case, T = 1).
  const std::vector<double> alphas = {0.05, 0.2, 0.4, 0.8};
  const auto bn = bayes_optimal_curve(target, 0.1, 1, alphas);
  LinearT1Solver s(wishart_problem(0.5, 0.1, 1.0));
  const auto erm = s.curve(alphas);
  for (std::size_t i = 0; i < alphas.size(); ++i) {
    CHECK(bn[i].ok);
    CHECK(bn[i].mmse < erm[i].mse);
  }
}
