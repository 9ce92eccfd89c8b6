// The softmax channel (T >= 2): the per-sample proximal problem, the envelope-theorem derivatives,
// the general fixed point (its T = 1 linear reduction, the spec's T = 2 reference point, Monte Carlo
// errors) and the finite-d attention ERM against the theory.
#include <doctest/doctest.h>

#include <boost/math/quadrature/gauss_kronrod.hpp>
#include <cmath>
#include <memory>

#include "hdat/tied_attention/fixed_point.hpp"
#include "hdat/tied_attention/linear_t1.hpp"
#include "hdat/tied_attention/model.hpp"
#include "hdat/tied_attention/attention_erm.hpp"
#include "hdat/tied_attention/declaration.hpp"

using namespace hdat;
using namespace hdat::tied_attention;

namespace {
struct Case {
  SymLayout L;
  KVec v, omega;
  TMat Y;
};
Case random_case(int T, std::uint64_t seed, double scale = 1.5) {
  auto eng = rng::engine(seed);
  Case c{SymLayout(T), KVec(), KVec(), TMat()};
  const int K = c.L.K();
  const Eigen::MatrixXd z = gaussian_matrix(3 * K, 1, eng);
  c.v = scale * z.col(0).head(K);
  c.omega = scale * z.col(0).segment(K, K);
  TMat Z(T, T);
  for (int e = 0; e < K; ++e) Z(c.L.row(e), c.L.col(e)) = Z(c.L.col(e), c.L.row(e)) = z(2 * K + e, 0);
  softmax_rows(Z, 1.0, c.Y);
  return c;
}
}  // namespace

TEST_CASE("softmax loss: gradient and Hessian against finite differences (T = 2, 3)") {
  for (int T : {2, 3}) {
    for (std::uint64_t s = 1; s <= 5; ++s) {
      Case c = random_case(T, s);
      KVec g;
      KMat H;
      const double beta = 1.3;
      channel_loss(c.L, Channel::softmax, beta, c.Y, c.v, &g, &H);
      CHECK((H - H.transpose()).cwiseAbs().maxCoeff() < 1e-14);
      const double h = 1e-6;
      for (int e = 0; e < c.L.K(); ++e) {
        KVec vp = c.v, vm = c.v, gp, gm;
        vp(e) += h;
        vm(e) -= h;
        const double fp = channel_loss(c.L, Channel::softmax, beta, c.Y, vp, &gp, nullptr);
        const double fm = channel_loss(c.L, Channel::softmax, beta, c.Y, vm, &gm, nullptr);
        CHECK(g(e) == doctest::Approx((fp - fm) / (2 * h)).epsilon(1e-6).scale(1.0));
        for (int f = 0; f < c.L.K(); ++f) CHECK(H(f, e) == doctest::Approx((gp(f) - gm(f)) / (2 * h)).epsilon(1e-6).scale(1.0));
      }
    }
  }
}

TEST_CASE("prox: the solution satisfies its optimality condition; envelope derivatives match finite differences") {
  for (int T : {2, 3}) {
    for (std::uint64_t s = 1; s <= 20; ++s) {
      Case c = random_case(T, 100 + s);
      const double Sigma = 0.05 + 0.2 * s;  // up to 4: the non-convex regime is included
      const ProxResult r = prox_solve(c.L, Channel::softmax, 1.0, Sigma, c.omega, c.Y, c.omega);
      CAPTURE(T);
      CAPTURE(Sigma);
      CHECK(r.converged);
      KVec g;
      channel_loss(c.L, Channel::softmax, 1.0, c.Y, r.v, &g, nullptr);
      for (int e = 0; e < c.L.K(); ++e) g(e) += c.L.weight(e) / (2 * Sigma) * (r.v(e) - c.omega(e));
      CHECK(g.cwiseAbs().maxCoeff() < 1e-8);
      if (s % 5 != 0) continue;
      // Envelope theorem: ∂f/∂Ω_e = −w_e (H*_e − Ω_e)/(2Σ), ∂f/∂Σ = −Σ w_e (H*_e − Ω_e)²/(4Σ²).
      const double h = 1e-5;
      auto value = [&](const KVec& om, double Sg) {
        return prox_solve(c.L, Channel::softmax, 1.0, Sg, om, c.Y, r.v).value;
      };
      double dS = 0;
      for (int e = 0; e < c.L.K(); ++e) dS -= c.L.weight(e) * std::pow(r.v(e) - c.omega(e), 2) / (4 * Sigma * Sigma);
      CHECK(dS == doctest::Approx((value(c.omega, Sigma + h) - value(c.omega, Sigma - h)) / (2 * h)).epsilon(1e-5));
      // Envelope Hessian D − D H⁻¹ D against differences of the envelope gradient.
      KMat Hinv = r.hess.inverse();
      for (int e = 0; e < c.L.K(); ++e) {
        KVec op = c.omega, om = c.omega;
        op(e) += h;
        om(e) -= h;
        const double fd = (value(op, Sigma) - value(om, Sigma)) / (2 * h);
        const double De = c.L.weight(e) / (2 * Sigma);
        CHECK(-De * (r.v(e) - c.omega(e)) == doctest::Approx(fd).epsilon(1e-5).scale(1.0));
        const ProxResult rp = prox_solve(c.L, Channel::softmax, 1.0, Sigma, op, c.Y, r.v);
        const ProxResult rm = prox_solve(c.L, Channel::softmax, 1.0, Sigma, om, c.Y, r.v);
        const double gp = -De * (rp.v(e) - op(e)), gm = -De * (rm.v(e) - om(e));
        CHECK(De - De * De * Hinv(e, e) == doctest::Approx((gp - gm) / (2 * h)).epsilon(1e-4).scale(1.0));
      }
    }
  }
}

TEST_CASE("general solver, T = 1 linear channel: reduces to the closed form within its Monte Carlo error") {
  auto target = std::make_shared<const WishartTarget>(0.5);
  LinearProblem lp;
  lp.target = target;
  lp.noise = 0.1;
  lp.lambda = 1.0;
  const FixedPointState exact = LinearT1Solver(lp).solve(0.2);
  PriorSide prior;
  prior.target = target;
  prior.lambda = 1.0;
  // Exact (closed-form expectations): the general solver reproduces the closed form to its tolerance.
  {
    auto exact_side = std::make_shared<SampleSide>(1, Channel::linear, 1.0, 1.0, 1.5, 0.1);
    GeneralSolverOptions fo;
    fo.fixed_point.tolerance = 1e-11;
    GeneralSolver ge(prior, exact_side, 1.5, fo);
    const FixedPointState se = ge.solve(0.2, ge.initial_guess(0.2));
    CHECK(se.converged);
    CHECK(se.mse == doctest::Approx(exact.mse).epsilon(1e-8));
    CHECK(se.delta == doctest::Approx(exact.delta).epsilon(1e-8));
    CHECK(se.t == doctest::Approx(exact.t).epsilon(1e-8));
    CHECK(se.train_loss == doctest::Approx(exact.train_loss).epsilon(1e-8));
    CHECK(se.rank == doctest::Approx(exact.rank).epsilon(1e-8));
  }
  // Sampled: the Monte Carlo machinery (prox, envelope derivatives) within its error bars.
  SampleSideOptions so;
  so.samples = 8192;
  so.exact_linear = false;
  auto ss = std::make_shared<SampleSide>(1, Channel::linear, 1.0, 1.0, 1.5, 0.1, so);
  GeneralSolver g(prior, ss, 1.5);
  const FixedPointState st = g.solve(0.2, g.initial_guess(0.2));
  const FixedPointErrors& e = g.errors().front();
  CHECK(st.converged);
  CHECK(e.mse > 0);
  CHECK(std::fabs(st.mse - exact.mse) < 4 * e.mse + 1e-6);
  CHECK(std::fabs(st.train_loss - exact.train_loss) < 4 * e.train_loss + 1e-6);
  CHECK(st.eta == doctest::Approx(1.0).epsilon(1e-2));  // the linear channel has η = 1 (up to MC error)
  CHECK(st.rank == doctest::Approx(exact.rank).epsilon(2e-3));
  // T tokens with a linear readout are T = 1 at α T(T+1)/2 (derivation.md §4).
  auto ss2 = std::make_shared<SampleSide>(2, Channel::linear, 1.0, 1.0, 1.5, 0.1, so);
  GeneralSolver g2(prior, ss2, 1.5);
  const FixedPointState st2 = g2.solve(0.2 / 3, g2.initial_guess(0.2 / 3));
  CHECK(std::fabs(st2.mse - exact.mse) < 4 * g2.errors().front().mse + 1e-6);
  CHECK(st2.train_loss == doctest::Approx(3 * exact.train_loss).epsilon(5e-3));
}

TEST_CASE("spec's T = 2 reference point (seq2lab, beta = beta0 = 1, Delta = 0, kappa0 = 0.5, alpha = 0.1, lambda = 0.1)") {
  auto target = std::make_shared<const WishartTarget>(0.5);
  PriorSide prior;
  prior.target = target;
  prior.lambda = 0.1;
  SampleSideOptions so;
  so.samples = 1 << 15;
  auto ss = std::make_shared<SampleSide>(2, Channel::softmax, 1.0, 1.0, 1.5, 0.0, so);
  GeneralSolver g(prior, ss, 1.5);
  const FixedPointState st = g.solve(0.1, g.initial_guess(0.1));
  CHECK(st.converged);
  // The spec's fixed point used 8·10⁴ Monte Carlo samples and states ≈2% noise; hdat's RQMC value
  // with 2.6·10⁵ points is 0.26589 ± 0.00006 (test), 0.09158 (train), 1.0511 (MSE).
  CHECK(std::fabs(st.test_error - 0.2647) < 0.0053);
  CHECK(std::fabs(st.test_error - 0.26589) < 5 * g.errors().front().test_error + 1e-4);
  CHECK(std::fabs(st.train_loss - 0.0914) < 0.0005);
  CHECK(std::fabs(st.mse - 1.050) < 0.003);
  CHECK(std::fabs(st.rank - 0.226) < 0.001);
  CHECK(std::fabs(st.trace - 0.1453) < 0.0005);
  CHECK(std::fabs(st.eta - 0.59) < 0.02);  // spec: η ≈ 0.59
}

TEST_CASE("trivial phase (strong penalty): the sample side's Sigma -> 0 limit, S = 0 exactly, uniform-attention error") {
  // The Σ → 0 limit (derivation.md §8.3a) against the Newton prox at a small Σ on the same samples.
  SampleSideOptions so;
  so.samples = 1 << 12;
  for (int T : {2, 3}) {
    CAPTURE(T);
    SampleSide at_limit(T, Channel::softmax, 1.0, 1.0, 1.5, 0.1, so), newton(T, Channel::softmax, 1.0, 1.0, 1.5, 0.1, so);
    const SampleSideResult a = at_limit.evaluate(0.2, 0.0, 0.3, 0.2), b = newton.evaluate(0.2, 1e-7, 0.3, 0.2);
    CHECK(a.qhat == doctest::Approx(b.qhat).epsilon(1e-5));
    CHECK(a.mhat == doctest::Approx(b.mhat).epsilon(1e-5));
    CHECK(a.Sigmahat == doctest::Approx(b.Sigmahat).epsilon(1e-5));
    CHECK(a.train_loss == doctest::Approx(b.train_loss).epsilon(1e-5));
  }
  // λ̃ = 1 at α = 0.1 (T = 2, Δ = 0, κ0 = 0.5): the threshold lies above the support, Ŝ = 0.
  auto target = std::make_shared<const WishartTarget>(0.5);
  PriorSide prior;
  prior.target = target;
  prior.lambda = 1.0;
  so.samples = 1 << 14;
  auto ss = std::make_shared<SampleSide>(2, Channel::softmax, 1.0, 1.0, 1.5, 0.0, so);
  GeneralSolver g(prior, ss, 1.5);
  const FixedPointState st = g.solve(0.1, g.initial_guess(0.1));
  REQUIRE(st.converged);
  CHECK(st.Sigma == 0.0);
  CHECK(st.m == 0.0);
  CHECK(st.q == 0.0);
  CHECK(st.rank == 0.0);
  CHECK(st.mse == doctest::Approx(1.5));
  // Uniform attention against labels σ(h0) per row: Σ_ab (y_ab − ½)² = 4 (σ(z) − ½)², z = h0_aa − h0_ab
  // of variance (2 + 1) Q0 — an independent one-dimensional quadrature.
  const double sd = std::sqrt(3 * 1.5);
  const double exact = boost::math::quadrature::gauss_kronrod<double, 61>::integrate(
      [&](double z) {
        const double y = 1 / (1 + std::exp(-sd * z)) - 0.5;
        return 4 * y * y * std::exp(-z * z / 2) / std::sqrt(2 * M_PI);
      },
      -12.0, 12.0, 10, 1e-12);
  CHECK(std::fabs(st.test_error - exact) < 4 * g.errors().front().test_error + 1e-4);
  CHECK(std::fabs(st.train_loss - exact) < 4 * g.errors().front().train_loss + 1e-4);
  // Finite-d convex ERM there: S = 0 too, and validate agrees (extrapolated in 1/d: at d = 30 the
  // teacher field is still visibly non-Gaussian, test error 0.018 below the Gaussian theory).
  RunContext ctx;
  ctx.quiet = true;
  const json base = {{"T", 2}, {"noise", 0.0}, {"lambda", 1.0}, {"alphas", json::array({0.1})}, {"training", "convex"},
                     {"seeds", 40}, {"dims", json::array({30, 45})}, {"mc_samples", 4096}, {"test_samples", 4000}};  // 40: the verdict asks for 35 to resolve train_loss
  CHECK(validate_command(resolve(param_set(), base, {}), ctx).exit_code == 0);
}

TEST_CASE("the Monte Carlo error of the order parameters is reported and shrinks as 1/sqrt(samples)") {
  auto target = std::make_shared<const WishartTarget>(0.5);
  PriorSide prior;
  prior.target = target;
  prior.lambda = 0.1;
  double se_small = 0, se_large = 0;
  std::vector<double> m_small;
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    for (long n : {2048L, 8192L}) {
      if (n == 8192 && seed > 1) continue;
      SampleSideOptions so;
      so.samples = n;
      so.seed = seed;
      so.sampling = Sampling::monte_carlo;
      auto ss = std::make_shared<SampleSide>(2, Channel::softmax, 1.0, 1.0, 1.5, 0.0, so);
      GeneralSolver g(prior, ss, 1.5);
      const FixedPointState st = g.solve(0.1, g.initial_guess(0.1));
      REQUIRE(st.converged);
      if (n == 2048) {
        m_small.push_back(st.m);
        se_small += g.errors().front().m / 6;
      } else {
        se_large = g.errors().front().m;
      }
    }
  }
  // Four times the samples: half the error (within the scatter of the estimate itself).
  CHECK(se_small / se_large > 1.5);
  CHECK(se_small / se_large < 2.7);
  // The reported error matches the spread of independent sample sets.
  double mu = 0, var = 0;
  for (double v : m_small) mu += v / 6;
  for (double v : m_small) var += (v - mu) * (v - mu) / 5;
  CHECK(std::sqrt(var) / se_small > 0.4);
  CHECK(std::sqrt(var) / se_small < 2.5);
}

TEST_CASE("attention ERM: gradients in S and W against finite differences (seq2lab and seq2seq)") {
  for (bool s2s : {false, true}) {
    AttentionSpec sp;
    sp.teacher.d = 9;
    sp.T = 3;
    sp.noise = 0.2;
    sp.beta = 1.3;
    sp.seq2seq = s2s;
    auto eng = rng::engine(3);
    const Eigen::MatrixXd S0 = sample_teacher(sp.teacher, eng);
    const AttentionData data = make_attention_data(sp, S0, 20, 4, 0, rng::training_data);
    Eigen::MatrixXd S = gaussian_matrix(9, 9, eng);
    S = 0.5 * (S + S.transpose());
    Eigen::MatrixXd G;
    attention_loss(data, S, &G);
    const double h = 1e-6;
    for (int i = 0; i < 9; i += 4)
      for (int j = i; j < 9; j += 3) {
        Eigen::MatrixXd E = Eigen::MatrixXd::Zero(9, 9);
        E(i, j) = E(j, i) = 1;
        const double fd = (attention_loss(data, S + h * E, nullptr) - attention_loss(data, S - h * E, nullptr)) / (2 * h);
        CHECK((G.cwiseProduct(E)).sum() == doctest::Approx(fd).epsilon(1e-6));
      }
    const Eigen::MatrixXd W = gaussian_matrix(9, 4, eng);
    Eigen::MatrixXd gW;
    attention_factorized_objective(data, 0.3, W, &gW);
    for (int i = 0; i < 9; i += 2) {
      Eigen::MatrixXd Wp = W, Wm = W;
      Wp(i, 1) += h;
      Wm(i, 1) -= h;
      const double fd = (attention_factorized_objective(data, 0.3, Wp, nullptr) - attention_factorized_objective(data, 0.3, Wm, nullptr)) / (2 * h);
      CHECK(gW(i, 1) == doctest::Approx(fd).epsilon(1e-6));
    }
  }
}

TEST_CASE("T = 2 attention ERM agrees with the theory within its error bars; a wrong sample-side term makes it fail") {
  RunContext ctx;
  ctx.quiet = true;
  const json base = {{"T", 2},          {"noise", 0.0},      {"lambda", 0.1},         {"alphas", json::array({0.1})},
                     {"training", "convex"}, {"seeds", 6},   {"dims", json::array({30, 45})},
                     {"mc_samples", 4096}, {"test_samples", 4000},
                     // The d -> infinity intercept from d = 30, 45 with 6 seeds resolves about 0.46 of the
                     // scale (70 seeds for 0.1: a minute); the subject here is the wrong term's DISAGREE.
                     {"detectable", 0.5}};
  const Params p = resolve(param_set(), base, {});
  const RunOutput good = validate_command(p, ctx);
  CHECK(good.exit_code == 0);
  const RunOutput bad = validate_command(p.with({{"break_term", "channel"}}), ctx);
  CHECK(bad.exit_code == 1);
}

TEST_CASE("direct training (Frobenius prior), T = 1: the general solver equals the closed-form ridge fixed point") {
  // Linear channel: m̂ = Σ̂ = 8α/(1 + 4Σ), q̂ = 16α(2 MSE + Δ)/(1 + 4Σ)²; Frobenius prior: Σ = 1/(Σ̂ + 4λ),
  // η = m̂ Σ, m = η Q0, q = η² Q0 + q̂ Σ². Hence 16λΣ² + (8α + 4λ − 4)Σ − 1 = 0 and
  // MSE = [Q0 (1 − η)² + c Δ]/(1 − 2c), c = 16 α Σ²/(1 + 4Σ)² (derivation.md §8.4).
  auto target = std::make_shared<const WishartTarget>(0.5);
  const double Q0 = 1.5, noise = 0.1;
  for (double lambda : {0.05, 0.5}) {
    for (double alpha : {0.1, 0.4}) {
      const double b = 8 * alpha + 4 * lambda - 4;
      const double Sigma = (-b + std::sqrt(b * b + 64 * lambda)) / (32 * lambda);
      const double eta = 8 * alpha / (1 + 4 * Sigma) * Sigma;
      const double c = 16 * alpha * Sigma * Sigma / ((1 + 4 * Sigma) * (1 + 4 * Sigma));
      const double mse = (Q0 * (1 - eta) * (1 - eta) + c * noise) / (1 - 2 * c);
      PriorSide prior;
      prior.target = target;
      prior.kind = PriorKind::frobenius;
      prior.lambda = lambda;
      GeneralSolverOptions fo;
      fo.fixed_point.tolerance = 1e-12;
      GeneralSolver g(prior, std::make_shared<SampleSide>(1, Channel::linear, 1.0, 1.0, Q0, noise), Q0, fo);
      const FixedPointState st = g.solve(alpha, g.initial_guess(alpha));
      CAPTURE(lambda);
      CAPTURE(alpha);
      CHECK(st.converged);
      CHECK(st.Sigma == doctest::Approx(Sigma).epsilon(1e-9));
      CHECK(st.eta == doctest::Approx(eta).epsilon(1e-9));
      CHECK(st.mse == doctest::Approx(mse).epsilon(1e-9));
    }
  }
}

TEST_CASE("power-law target: outliers emerge one by one as alpha grows; the error decomposition tracks the MSE") {
  RunContext ctx;
  ctx.quiet = true;
  const json cfg = {{"T", 1},          {"target", "powerlaw"}, {"gamma", 1.0},  {"kappa0", 1.0}, {"d", 300},
                    {"noise", 1.0},    {"lambda", 0.01},       {"bayes", false}, {"alphas", "log:0.01:0.1:8"}};
  const RunOutput out = curve_command(resolve(param_set(), cfg, {}), ctx);
  REQUIRE(out.tables.count("decomposition.csv") == 1);
  const Table& t = out.tables.at("decomposition.csv");
  const auto outl = t.numbers("outliers"), mse = t.numbers("mse"), sum = t.numbers("E_sum");
  for (std::size_t i = 1; i < outl.size(); ++i) {
    CHECK(outl[i] >= outl[i - 1]);       // monotone
    CHECK(outl[i] - outl[i - 1] <= 3);   // one (or a few) at a time on this grid
  }
  CHECK(outl.back() > outl.front());
  // Closure: exact but for the spike-formula overlaps of the outliers.
  for (std::size_t i = 0; i < mse.size(); ++i) CHECK(std::fabs(sum[i] / mse[i] - 1) < 0.03);
  CHECK(out.info["scaling"]["f_gamma"].get<double>() == doctest::Approx(0.5));
}
