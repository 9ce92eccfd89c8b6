#pragma once
// Vector-valued, globally adaptive Gauss–Kronrod quadrature on Boost.Math's rules (G15/K31 by
// default: the integrands here are smooth after the edge substitution, so a higher order pays).
//
// Why not boost::math::quadrature::gauss_kronrod::integrate directly: the prior side needs several
// integrals of the same spectral density (J, ∂_t J, ∂_δ J, the mass above the threshold ...), and
// the density costs a cubic solve (Wishart) or a subordination solve (general spectra) per node.
// Integrating all components at the same nodes shares that cost. The rule itself (abscissae and
// weights) is Boost's.
//
// Error control: the estimate of a sub-interval is QUADPACK's (Piessens et al. 1983, qk21):
//   err = I_abs · min(1, (200 |K − G| / I_abs)^{3/2}),  I_abs = ∫|f − mean f| on the piece,
// per component (the raw |K − G| overestimates the error of K by orders of magnitude on
// smooth integrands). The whole integral is accepted when, for every component k, the summed
// estimate is below max(abs_tol, rel_tol · L1_k) (L1_k = ∫|f_k|, so a component that integrates to
// ~0 by cancellation is not over-refined).
#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <limits>
#include <boost/math/quadrature/gauss.hpp>
#include <boost/math/quadrature/gauss_kronrod.hpp>
#include <cmath>
#include <vector>

namespace hdat::tied_attention {

struct QuadratureOptions {
  double rel_tol = 1e-11;   ///< relative to ∫|f_k| per component
  double abs_tol = 1e-15;   ///< absolute floor per component
  int max_intervals = 400;  ///< sub-intervals per integral before giving up (not converged)
};

/// Accumulated over the integrals of one computation (e.g. one J evaluation).
struct QuadratureStats {
  long evaluations = 0;      ///< integrand evaluations
  long intervals = 0;        ///< sub-intervals used
  double max_error = 0;      ///< largest error estimate relative to the component's L1 norm
  bool converged = true;     ///< every integral met its tolerance
  void merge(const QuadratureStats& o) {
    evaluations += o.evaluations;
    intervals += o.intervals;
    max_error = std::max(max_error, o.max_error);
    converged = converged && o.converged;
  }
};

template <int K>
using QVec = Eigen::Matrix<double, K, 1>;

namespace detail {

template <int K>
struct GkPiece {
  double a, b;
  QVec<K> value, error, l1;
  double worst;  // largest error / tolerance over components (for picking the next bisection)
};

/// One Gauss–Kronrod application (N-point Kronrod, (N−1)/2-point Gauss) on [a, b].
template <int K, int N, class F>
GkPiece<K> gk_rule(F& f, double a, double b) {
  using Kr = boost::math::quadrature::gauss_kronrod<double, N>;
  using Ga = boost::math::quadrature::gauss<double, (N - 1) / 2>;
  constexpr unsigned gauss_order = (N - 1) / 2;
  const auto& xk = Kr::abscissa();
  const auto& wk = Kr::weights();
  const auto& wg = Ga::weights();
  const double c = 0.5 * (a + b), h = 0.5 * (b - a);
  GkPiece<K> p;
  p.a = a;
  p.b = b;
  // abscissa[0] = 0 is a Kronrod node, and a Gauss node when the Gauss order is odd; the Gauss
  // nodes are then at even indices (weight index i/2), else at odd ones (as in Boost's own driver).
  std::array<QVec<K>, N> fv;
  fv[0] = f(c);
  for (std::size_t i = 1; i < xk.size(); ++i) {
    fv[2 * i - 1] = f(c + h * xk[i]);
    fv[2 * i] = f(c - h * xk[i]);
  }
  QVec<K> kr = wk[0] * fv[0], ga = QVec<K>::Zero(), l1 = wk[0] * fv[0].cwiseAbs();
  if (gauss_order & 1) ga += wg[0] * fv[0];
  const std::size_t gauss_parity = (gauss_order & 1) ? 0 : 1;
  for (std::size_t i = 1; i < xk.size(); ++i) {
    const QVec<K>& fp = fv[2 * i - 1];
    const QVec<K>& fm = fv[2 * i];
    kr += wk[i] * (fp + fm);
    l1 += wk[i] * (fp.cwiseAbs() + fm.cwiseAbs());
    if (i % 2 == gauss_parity) ga += wg[i / 2] * (fp + fm);
  }
  // I_abs = ∫ |f − K/2| (the mean of f over [−1, 1] is K/2).
  const QVec<K> mean = 0.5 * kr;
  QVec<K> iabs = wk[0] * (fv[0] - mean).cwiseAbs();
  for (std::size_t i = 1; i < xk.size(); ++i)
    iabs += wk[i] * ((fv[2 * i - 1] - mean).cwiseAbs() + (fv[2 * i] - mean).cwiseAbs());
  const double ah = std::abs(h);
  p.value = h * kr;
  p.l1 = ah * l1;
  for (int k = 0; k < K; ++k) {
    const double raw = ah * std::abs(kr(k) - ga(k));
    const double ia = ah * iabs(k);
    double e = raw;
    if (ia > 0 && raw > 0) e = ia * std::min(1.0, std::pow(200 * raw / ia, 1.5));
    // Never below what rounding allows (QUADPACK: 50 ε L1).
    p.error(k) = std::max(e, 50 * std::numeric_limits<double>::epsilon() * p.l1(k));
  }
  p.worst = 0;
  return p;
}

}  // namespace detail

/// ∫_a^b f(x) dx for f: double -> QVec<K>. Globally adaptive: bisects the sub-interval with the
/// largest error relative to its tolerance until all components meet theirs. `err` (optional)
/// receives the per-component error estimates.
template <int K, class F, int N = 31>
QVec<K> integrate_gk(F&& f, double a, double b, const QuadratureOptions& opt, QuadratureStats* stats = nullptr,
                     QVec<K>* err = nullptr) {
  QuadratureStats st;
  std::vector<detail::GkPiece<K>> pieces;
  pieces.reserve(16);
  if (!(b > a)) {
    if (err) *err = QVec<K>::Zero();
    if (stats) stats->merge(st);
    return QVec<K>::Zero();
  }
  pieces.push_back(detail::gk_rule<K, N>(f, a, b));
  st.evaluations += N;
  QVec<K> total, total_err, total_l1;
  for (;;) {
    total.setZero();
    total_err.setZero();
    total_l1.setZero();
    for (const auto& p : pieces) {
      total += p.value;
      total_err += p.error;
      total_l1 += p.l1;
    }
    QVec<K> tol;
    for (int k = 0; k < K; ++k) tol(k) = std::max(opt.abs_tol, opt.rel_tol * total_l1(k));
    bool ok = true;
    for (int k = 0; k < K; ++k) ok = ok && total_err(k) <= tol(k);
    if (ok || static_cast<int>(pieces.size()) >= opt.max_intervals) {
      st.converged = ok;
      break;
    }
    // Bisect the piece contributing most error relative to the tolerance.
    std::size_t worst = 0;
    double worst_v = -1;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      double w = 0;
      for (int k = 0; k < K; ++k) w = std::max(w, pieces[i].error(k) / tol(k));
      if (w > worst_v) {
        worst_v = w;
        worst = i;
      }
    }
    const double lo = pieces[worst].a, hi = pieces[worst].b, mid = 0.5 * (lo + hi);
    if (!(mid > lo && mid < hi)) {  // interval exhausted in double precision
      st.converged = false;
      break;
    }
    pieces[worst] = detail::gk_rule<K, N>(f, lo, mid);
    pieces.push_back(detail::gk_rule<K, N>(f, mid, hi));
    st.evaluations += 2 * N;
  }
  st.intervals = static_cast<long>(pieces.size());
  for (int k = 0; k < K; ++k)
    st.max_error = std::max(st.max_error, total_err(k) / std::max(total_l1(k), 1e-300));
  if (err) *err = total_err;
  if (stats) stats->merge(st);
  return total;
}

}  // namespace hdat::tied_attention
