#pragma once
// Helpers of the hardmax comparison with the published state evolution (arXiv:2506.01582,
// BO_ExtensiveRankAttention/SE_hardmax.py): the label probability by an independent quadrature, the
// published and hdat's output functions, the channel information and the state-evolution fixed
// point for a given score. Used by test_hardmax_published.cpp and the thorough suite.
#include <boost/math/quadrature/gauss_kronrod.hpp>
#include <cmath>
#include <vector>

#include "hdat/tied_attention/bayes_channel.hpp"
#include "hdat/tied_attention/state_evolution.hpp"

namespace hdat::tied_attention::published {

inline constexpr double kPublishedAlpha = 1.0026943806941764, kPublishedMmse = 0.3145479907003841;

inline double Phi(double x) { return 0.5 * std::erfc(-x / M_SQRT2); }
inline double phi(double x) { return std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI); }

// Entries e = 0, 1, 2 ↔ (0,0), (0,1), (1,1); fields z ~ N(ω, V diag(2, 1, 2)) (Δ = 0); the label says
// s1 = sign(z00 − z01) and s2 = sign(z11 − z01). Given z01 = ω01 + √V u the two rows are independent:
//   P(y | ω) = ∫ φ(u) Φ(s1(ω00 − ω01 − √V u)/√(2V)) Φ(s2(ω11 − ω01 − √V u)/√(2V)) du.
inline double label_probability(const double om[3], int s1, int s2, double V) {
  const double sv = std::sqrt(V), s2v = std::sqrt(2 * V);
  auto f = [&](double u) {
    return phi(u) * Phi(s1 * (om[0] - om[1] - sv * u) / s2v) * Phi(s2 * (om[2] - om[1] - sv * u) / s2v);
  };
  return boost::math::quadrature::gauss_kronrod<double, 61>::integrate(f, -14.0, 14.0, 25, 1e-15);
}

// The published state evolution's output function (SE_hardmax.py, sum_G_squared_hard), written from
// its formula: κ_i = s_i (ω_ii − ω01)/r, r = √(3V), ρ = s1 s2/3, and
//   G11 = (s1/r) φ2(κ1, κ2; ρ)/Φ2,  G22 = (s2/r) φ2/Φ2,  G12 = −((s1 + s2)/r) φ2/Φ2.
inline void published_score(const double om[3], int s1, int s2, double V, double G[3]) {
  const double r = std::sqrt(3 * V), k1 = s1 * (om[0] - om[1]) / r, k2 = s2 * (om[2] - om[1]) / r, rho = s1 * s2 / 3.0;
  const double rb2 = 1 - rho * rho;
  const double pdf = std::exp(-(k1 * k1 - 2 * rho * k1 * k2 + k2 * k2) / (2 * rb2)) / (2 * M_PI * std::sqrt(rb2));
  const double ratio = pdf / bivariate_normal_cdf(k1, k2, rho);
  G[0] = s1 / r * ratio;
  G[1] = -(s1 + s2) / r * ratio;
  G[2] = s2 / r * ratio;
}

// I(q, V) = E Σ_e c_e g_e² with ω_e ~ N(0, c_e q), z | ω ~ N(ω, c_e V) (c = 2, 1, 2), for a score
// function, over a fixed Monte Carlo set (common random numbers across calls).
template <class Score>
double information(double q, double V, const std::vector<double>& normals, Score&& score) {
  const double c[3] = {2, 1, 2};
  double acc = 0;
  const std::size_t n = normals.size() / 6;
  for (std::size_t i = 0; i < n; ++i) {
    const double* x = &normals[6 * i];
    double om[3], z[3], g[3];
    for (int e = 0; e < 3; ++e) {
      om[e] = std::sqrt(c[e] * q) * x[e];
      z[e] = om[e] + std::sqrt(c[e] * V) * x[3 + e];
    }
    score(om, z[0] > z[1] ? 1 : -1, z[2] > z[1] ? 1 : -1, V, g);
    for (int e = 0; e < 3; ++e) acc += c[e] * g[e] * g[e];
  }
  return acc / double(n);
}

// hdat's score for the same fields (bayes_output with S = V diag(2, 1, 2)).
inline void hdat_score(const double om[3], int s1, int s2, double V, double G[3]) {
  const SymLayout L(2);
  KVec omega(3), g;
  KMat S = KMat::Zero(3, 3), dg;
  for (int e = 0; e < 3; ++e) {
    omega(e) = om[e];
    S(e, e) = L.variance_factor(e) * V;
  }
  const double obs[3] = {s1 > 0 ? 0.0 : 1.0, s2 > 0 ? 1.0 : 0.0, 0.0};  // argmax column of each row
  bayes_output(L, BayesChannel::hardmax, obs, omega, S, g, dg);
  for (int e = 0; e < 3; ++e) G[e] = g(e);
}

// The fixed point of v ↦ mmse(1/(2α I(Q0 − v, v))) from the uninformed start, damped (the
// published iteration's damping 0.5), with hdat's RIE denoiser MMSE.
template <class Info>
double se_fixed_point(const StateEvolution& se, double alpha, Info&& info) {
  double v = se.Q0() - se.prior_mean() * se.prior_mean();
  for (int it = 0; it < 200; ++it) {
    const double next = se.mmse(1 / (2 * alpha * info(se.Q0() - v, v)));
    if (std::fabs(next - v) < 1e-7) return next;
    v = 0.5 * v + 0.5 * next;
  }
  return v;
}

}  // namespace hdat::tied_attention::published
