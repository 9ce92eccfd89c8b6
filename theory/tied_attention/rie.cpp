#include "hdat/tied_attention/rie.hpp"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <chrono>
#include <cmath>

#include "hdat/core/error.hpp"
#include "hdat/tied_attention/spectral_law.hpp"
#include "hdat/core/progress.hpp"

namespace hdat::tied_attention {


RieDenoiser::RieDenoiser(std::shared_ptr<const TargetLaw> prior, RieOptions options)
    : prior_(std::move(prior)), opt_(options) {
  if (!prior_) throw InputError("prior", "the RIE needs a target law");
}

RieSpectrum RieDenoiser::shrink(const Eigen::VectorXd& lambda, double delta) const {
  RieSpectrum s;
  s.xi = lambda;
  s.dxi = Eigen::VectorXd::Ones(lambda.size());
  if (!(delta > 0)) return s;
  if (!std::isfinite(delta)) throw NumericalError("RIE: non-finite noise level delta");
  // The subordination form serves every μ0, and its ψ is defined on the whole real line (the
  // eigenvalues of R at finite d spill beyond the support of μ_δ).
  const SubordinatedLaw law(prior_, delta);
  const double f = opt_.shrinkage_factor;
  // ξ = x − 2f δ²H = x − 2f (x − u), u = ψ⁻¹(x);  ξ' = 1 − 2f (1 − 1/ψ').
  auto at_u = [&](double x, double u) { return x - 2 * f * (x - u); };
  const auto& S = law.support();
  const auto& U = law.u_pieces();
  for (Eigen::Index i = 0; i < lambda.size(); ++i) {
    const double x = lambda(i);
    if (!std::isfinite(x)) throw NumericalError("RIE: non-finite eigenvalue of R");
    // Finite d: eigenvalues of R outside the support of μ_δ (where the d → ∞ law puts none) would get
    // the analytic continuation, whose slope is infinite just outside every edge (ψ' → 0 there) and
    // which falls below the PSD prior's range on the left: AMP then cycles on such an outlier. They
    // get the edge values instead: constant beyond the outer edges, linear across an inner gap
    // (derivation.md §10.2; no effect on the state evolution).
    if (x < S.front().lo || x > S.back().hi) {
      const bool low = x < S.front().lo;
      s.xi(i) = low ? at_u(S.front().lo, U.front().lo) : at_u(S.back().hi, U.back().hi);
      s.dxi(i) = 0;
      continue;
    }
    const auto k = static_cast<std::size_t>(
        std::upper_bound(S.begin(), S.end(), x, [](double v, const Interval& iv) { return v < iv.lo; }) - S.begin() - 1);
    if (x > S[k].hi) {  // inner gap between pieces k and k + 1
      const double a = at_u(S[k].hi, U[k].hi), b = at_u(S[k + 1].lo, U[k + 1].lo);
      s.dxi(i) = (b - a) / (S[k + 1].lo - S[k].hi);
      s.xi(i) = a + s.dxi(i) * (x - S[k].hi);
      continue;
    }
    const double u = law.psi_inverse(x);
    s.xi(i) = at_u(x, u);
    s.dxi(i) = 1 - 2 * f * (1 - 1 / std::max(law.psi_derivative(u), 1e-300));
  }
  return s;
}

RieResult RieDenoiser::operator()(const Eigen::MatrixXd& R, double delta) const {
  RieResult r;
  auto t0 = std::chrono::steady_clock::now();
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(R);
  if (es.info() != Eigen::Success) throw NumericalError("RIE: eigendecomposition of R failed");
  r.eig_seconds = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  r.eigenvalues = es.eigenvalues();
  const RieSpectrum s = shrink(r.eigenvalues, delta);
  r.shrunk = s.xi;
  r.shrunk_slope = s.dxi;
  r.divergence = spectral_divergence(r.eigenvalues, s.xi, s.dxi);
  const Eigen::MatrixXd& U = es.eigenvectors();
  r.estimate.noalias() = (U * s.xi.asDiagonal()) * U.transpose();
  r.eigenvectors = U;
  r.shrink_seconds = seconds_since(t0);
  return r;
}

namespace {
double divided_difference(double li, double lj, double xi_i, double xi_j, double di, double dj, double scale) {
  const double gap = li - lj;
  return std::fabs(gap) > 1e-10 * scale ? (xi_i - xi_j) / gap : 0.5 * (di + dj);
}
}  // namespace

Eigen::MatrixXd divided_differences(const Eigen::VectorXd& lambda, const Eigen::VectorXd& xi, const Eigen::VectorXd& dxi) {
  const Eigen::Index n = lambda.size();
  const double scale = lambda.cwiseAbs().maxCoeff() + 1.0;
  Eigen::MatrixXd D(n, n);
  for (Eigen::Index i = 0; i < n; ++i) {
    D(i, i) = dxi(i);
    for (Eigen::Index j = i + 1; j < n; ++j)
      D(i, j) = D(j, i) = divided_difference(lambda(i), lambda(j), xi(i), xi(j), dxi(i), dxi(j), scale);
  }
  return D;
}

double spectral_divergence(const Eigen::VectorXd& lambda, const Eigen::VectorXd& xi, const Eigen::VectorXd& dxi) {
  const Eigen::Index n = lambda.size();
  double div = dxi.sum();
  const double scale = lambda.cwiseAbs().maxCoeff() + 1.0;
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index j = i + 1; j < n; ++j) div += divided_difference(lambda(i), lambda(j), xi(i), xi(j), dxi(i), dxi(j), scale);
  return div;
}

}  // namespace hdat::tied_attention
