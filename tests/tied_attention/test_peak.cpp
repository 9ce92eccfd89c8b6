// The softmax sample side near the interpolation peak (T = 2, κ0 = 0.5, Δ = 0.5, λ̃ = 1e-4), where Σ is
// large and the per-sample prox has two local minima for a few per cent of the samples
// (derivation.md §8.2–8.3, docs/tied-attention.md "ERM near the interpolation peak"):
//   - prox_global finds the global minimiser (against a brute-force grid over the row margins);
//   - the derivative estimators behind q̂, m̂, Σ̂ equal finite differences of the sample-side function
//     M at common random numbers (the Hessian form does not: it misses the branch jumps);
//   - the cold start at α = 0.0996 converges.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <random>

#include "hdat/tied_attention/channel.hpp"
#include "hdat/tied_attention/fixed_point.hpp"
#include "hdat/tied_attention/prox.hpp"
#include "hdat/tied_attention/target.hpp"

using namespace hdat;
using namespace hdat::tied_attention;

namespace {

// The prox's objective for T = 2 at the entries v = (H00, H01, H11).
double objective(const SymLayout& L, double Sigma, const KVec& omega, const TMat& Y, const KVec& v) {
  double f = channel_loss(L, Channel::softmax, 1.0, Y, v, nullptr, nullptr);
  for (int e = 0; e < 3; ++e) f += L.weight(e) * (v(e) - omega(e)) * (v(e) - omega(e)) / (4 * Sigma);
  return f;
}

// Brute force for T = 2: the loss depends on the row margins μ0 = H00 − H01, μ1 = H11 − H01 only; for
// fixed margins the quadratic is minimised over H01 = t in closed form,
// t* = (Ω00 − μ0 + 2 Ω01 + Ω11 − μ1)/4. A grid over (μ0, μ1), then Newton from the best grid point.
double brute_force_minimum(const SymLayout& L, double Sigma, const KVec& omega, const TMat& Y, double lo, double hi) {
  const int n = 120;
  double best = std::numeric_limits<double>::infinity();
  KVec arg(3), v(3);
  for (int i = 0; i <= n; ++i)
    for (int j = 0; j <= n; ++j) {
      const double m0 = lo + (hi - lo) * i / n, m1 = lo + (hi - lo) * j / n;
      const double t = (omega(0) - m0 + 2 * omega(1) + omega(2) - m1) / 4;
      v << t + m0, t, t + m1;
      const double f = objective(L, Sigma, omega, Y, v);
      if (f < best) best = f, arg = v;
    }
  return prox_solve(L, Channel::softmax, 1.0, Sigma, omega, Y, arg).value;
}

}  // namespace

TEST_CASE("prox near the peak (T = 2, large Sigma): prox_global = brute force over the row margins; one start alone is not") {
  const SymLayout L(2);
  std::mt19937_64 eng(31);
  std::normal_distribution<double> N01;
  const double Q0 = 1.5, noise = 0.5, q = 3.6, m = 1.9;  // the fixed point at alpha = 0.25 (curve.csv)
  int several = 0, label_start_wrong = 0, omega_start_wrong = 0, points = 0;
  for (double Sigma : {5.0, 10.0, 20.0, 40.0})
    for (int k = 0; k < 250; ++k) {
      KVec omega(3);
      TMat Z(2, 2), Y;
      const double a = m / std::sqrt(Q0), b = std::sqrt(q - m * m / Q0);
      for (int e = 0; e < 3; ++e) {
        const double c = L.variance_factor(e), u = N01(eng), w = N01(eng), xi = N01(eng);
        omega(e) = std::sqrt(c) * (a * u + b * w);
        Z(L.row(e), L.col(e)) = Z(L.col(e), L.row(e)) = std::sqrt(c * Q0) * u + std::sqrt(c * noise / 2) * xi;
      }
      softmax_rows(Z, 1.0, Y);
      const GlobalProxResult g = prox_global(L, Channel::softmax, 1.0, Sigma, omega, Y, nullptr, 1e-300);
      // Margins span Ω's and the labels' (logit y = margin of Z0 at β0 = 1), with room around them.
      const double span = 8 + std::fabs(Z(0, 0) - Z(0, 1)) + std::fabs(Z(1, 1) - Z(0, 1)) + std::fabs(omega(0) - omega(1)) +
                          std::fabs(omega(2) - omega(1));
      const double brute = brute_force_minimum(L, Sigma, omega, Y, -span, span);
      CAPTURE(Sigma);
      CAPTURE(k);
      CHECK(g.best.converged);
      CHECK(g.best.value <= brute + 1e-9 * (1 + std::fabs(brute)));
      ++points;
      several += g.distinct_minima > 1;
      // One start alone (Ω, or the label-fitting logits as a warm start left there) misses it.
      const ProxResult from_omega = prox_solve(L, Channel::softmax, 1.0, Sigma, omega, Y, omega);
      KVec label(3);
      label << Z(0, 0), Z(0, 1), Z(1, 1);
      const ProxResult from_label = prox_solve(L, Channel::softmax, 1.0, Sigma, omega, Y, label);
      omega_start_wrong += from_omega.value > g.best.value + 1e-9;
      label_start_wrong += from_label.value > g.best.value + 1e-9;
    }
  MESSAGE(several << " of " << points << " prox problems have two local minima; a start at Omega misses the global one in "
                  << omega_start_wrong << ", at the labels in " << label_start_wrong);
  // The points exercise the non-convex case, where a single start is not enough.
  CHECK(several >= 5);
  CHECK(omega_start_wrong + label_start_wrong >= 5);
}

TEST_CASE("sample side near the peak: q-hat, m-hat, Sigma-hat estimators = finite differences of M at common random numbers") {
  // T = 2, Δ = 0.5, at the order of the fixed point at α = 0.25, λ̃ = 1e-4 (Σ = 39, m = 1.90, q = 3.78).
  SampleSideOptions o;
  o.samples = 4096;
  o.threads = 1;
  SampleSide side(2, Channel::softmax, 1.0, 1.0, 1.5, 0.5, o);
  const double alpha = 0.25, Sigma = 39.0, m = 1.90, q = 3.78;
  const SampleSideResult r = side.evaluate(alpha, Sigma, m, q);
  CHECK(r.pathwise);
  CHECK(r.multiple_minima > 0);  // the point exercises the non-convex prox
  auto M = [&](double S, double mm, double qq) { return side.evaluate(alpha, S, mm, qq).M; };
  const double hS = 1e-4 * Sigma, hm = 1e-4, hq = 1e-4;
  const double fd_S = (M(Sigma + hS, m, q) - M(Sigma - hS, m, q)) / (2 * hS);
  const double fd_m = (M(Sigma, m + hm, q) - M(Sigma, m - hm, q)) / (2 * hm);
  const double fd_q = (M(Sigma, m, q + hq) - M(Sigma, m, q - hq)) / (2 * hq);
  MESSAGE("dM/dSigma " << r.dM_dSigma << " (fd " << fd_S << "), dM/dm " << r.dM_dm << " (fd " << fd_m << ", Hessian form "
                       << r.dM_dm_hessian << "), dM/dq " << r.dM_dq << " (fd " << fd_q << ", Hessian form " << r.dM_dq_hessian
                       << "); " << r.multiple_minima << " of " << side.samples() << " samples with two minima");
  CHECK(r.dM_dSigma == doctest::Approx(fd_S).epsilon(1e-4));
  CHECK(r.dM_dm == doctest::Approx(fd_m).epsilon(1e-4));
  CHECK(r.dM_dq == doctest::Approx(fd_q).epsilon(1e-4));
}
