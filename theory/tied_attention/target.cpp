#include "hdat/tied_attention/target.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "hdat/core/error.hpp"
#include "hdat/core/constants.hpp"

namespace hdat::tied_attention {

namespace {
}

void TargetLaw::subordination_F(double u, double Y, double& F, double& dF) const {
  // F = G/y with G(y) = Im g0(u − iy); dG/dy = −Re g0'(w); dF/dY = (dF/dy)/(2y).
  const double y = std::sqrt(Y);
  const cplx w(u, -y);
  const double G = stieltjes(w).imag();
  const double dG = -stieltjes_derivative(w).real();
  F = G / y;
  dF = (dG * y - G) / (2 * y * Y);
}

const std::vector<double>& TargetLaw::values() const {
  static const std::vector<double> none;
  return none;
}
const std::vector<double>& TargetLaw::weights() const {
  static const std::vector<double> none;
  return none;
}

// ---------------------------------------------------------------------------------------------
// Wishart: S0 = M'/√a with M' Marchenko–Pastur of ratio a = d/p0 = 1/κ0. g0 solves
//   −√a w g² + (w + √a − 1/√a) g − 1 = 0        (derivation.md §2.1)
// whose discriminant is (w − x−)(w − x+), x± = (a^{1/4} ± a^{−1/4})². Writing the square root as
// √(w − x−)·√(w − x+) (principal branches) puts the cut exactly on the bulk and makes g0 ~ 1/w.

WishartTarget::WishartTarget(double kappa0) : kappa0_(kappa0) {
  if (!(kappa0 > 0) || !std::isfinite(kappa0)) throw InputError("kappa0", "must be > 0");
  a_ = 1.0 / kappa0;
  sa_ = std::sqrt(a_);
  const double q = std::sqrt(sa_);  // a^{1/4}
  edge_lo_ = (q - 1 / q) * (q - 1 / q);
  edge_hi_ = (q + 1 / q) * (q + 1 / q);
}

cplx WishartTarget::stieltjes(cplx w) const {
  const cplx B = w + sa_ - 1 / sa_;
  const cplx s = std::sqrt(w - edge_lo_) * std::sqrt(w - edge_hi_);
  return (B - s) / (2 * sa_ * w);
}

cplx WishartTarget::stieltjes_derivative(cplx w) const {
  // Implicit differentiation of P(g, w) = −√a w g² + B g − 1: g' = −P_w/P_g.
  const cplx g = stieltjes(w);
  const cplx B = w + sa_ - 1 / sa_;
  return (sa_ * g * g - g) / (B - 2 * sa_ * w * g);
}

double WishartTarget::phi(double u) const { return -stieltjes_derivative(cplx(u, 0)).real(); }

double WishartTarget::phi_prime(double u) const {
  // g'' = −(P_gg g'² + 2 P_gw g')/P_g with P_gg = −2√a w, P_gw = 1 − 2√a g, P_ww = 0.
  const cplx w(u, 0);
  const cplx g = stieltjes(w);
  const cplx B = w + sa_ - 1 / sa_;
  const cplx Pg = B - 2 * sa_ * w * g;
  const cplx g1 = (sa_ * g * g - g) / Pg;
  const cplx g2 = -((-2.0 * sa_ * w) * g1 * g1 + 2.0 * (1.0 - 2 * sa_ * g) * g1) / Pg;
  return -g2.real();
}

std::vector<Interval> WishartTarget::gaps() const {
  if (kappa0_ < 1) return {{-kInf, 0.0}, {0.0, edge_lo_}, {edge_hi_, kInf}};
  return {{-kInf, edge_lo_}, {edge_hi_, kInf}};
}

double WishartTarget::mass_below(double u) const {
  if (u >= edge_hi_) return 1.0;
  if (kappa0_ < 1 && u > 0) return 1 - kappa0_;
  return 0.0;
}

double WishartTarget::boundary_weight_left(std::size_t gap) const {
  return (kappa0_ < 1 && gap == 1) ? 1 - kappa0_ : 0.0;
}
double WishartTarget::boundary_weight_right(std::size_t gap) const {
  return (kappa0_ < 1 && gap == 0) ? 1 - kappa0_ : 0.0;
}

double WishartTarget::mean() const { return std::sqrt(kappa0_); }
double WishartTarget::second_moment() const { return 1 + kappa0_; }
double WishartTarget::third_moment() const {
  // MP of ratio a: m3 = 1 + 3a + a², scaled by a^{-3/2}.
  return (1 + 3 * a_ + a_ * a_) / (a_ * sa_);
}

double WishartTarget::bulk_density(double x) const {
  if (!(x > edge_lo_ && x < edge_hi_)) return 0.0;
  // ρ_{S0}(x) = √a ρ_{M'}(√a x), ρ_{M'}(y) = √((y+ − y)(y − y−))/(2π a y) with y± = √a x±.
  const double y = sa_ * x, yl = sa_ * edge_lo_, yh = sa_ * edge_hi_;
  return sa_ * std::sqrt((yh - y) * (y - yl)) / (2 * M_PI * a_ * y);
}

// ---------------------------------------------------------------------------------------------

DiscreteTarget::DiscreteTarget(std::vector<double> eigenvalues, std::vector<double> weights) {
  const std::size_t n = eigenvalues.size();
  if (n == 0) throw InputError("target", "empty eigenvalue list");
  if (weights.empty()) weights.assign(n, 1.0 / static_cast<double>(n));
  if (weights.size() != n) throw InputError("target", "weights and eigenvalues differ in length");
  std::vector<std::size_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](std::size_t i, std::size_t j) { return eigenvalues[i] < eigenvalues[j]; });
  double total = 0;
  for (std::size_t i : idx) {
    if (!std::isfinite(eigenvalues[i]) || !(weights[i] >= 0)) throw InputError("target", "eigenvalues must be finite, weights >= 0");
    total += weights[i];
    // Merge values equal to within a relative 1e-13: a gap that small carries no information and
    // would make φ's minimum search ill-conditioned.
    if (!s_.empty() && std::fabs(eigenvalues[i] - s_.back()) <= 1e-13 * std::max(1.0, std::fabs(s_.back()))) {
      w_.back() += weights[i];
    } else {
      s_.push_back(eigenvalues[i]);
      w_.push_back(weights[i]);
    }
  }
  if (!(total > 0)) throw InputError("target", "weights sum to zero");
  for (double& w : w_) w /= total;
  cum_.resize(s_.size() + 1, 0.0);
  for (std::size_t k = 0; k < s_.size(); ++k) cum_[k + 1] = cum_[k] + w_[k];
  sa_ = Eigen::Map<const Eigen::ArrayXd>(s_.data(), static_cast<Eigen::Index>(s_.size()));
  wa_ = Eigen::Map<const Eigen::ArrayXd>(w_.data(), static_cast<Eigen::Index>(w_.size()));
}

void DiscreteTarget::stieltjes_both(cplx w, cplx& g, cplx& dg) const {
  // 1/(w − s) = (a − i b)/(a² + b²) with a = Re w − s, b = Im w; 1/(w − s)² = ((a² − b²) − 2iab)/(a² + b²)².
  const double b = w.imag();
  const Eigen::ArrayXd a = w.real() - sa_;
  const Eigen::ArrayXd r = 1.0 / (a.square() + b * b);
  const Eigen::ArrayXd wr = wa_ * r, wr2 = wr * r;
  g = cplx((wr * a).sum(), -b * wr.sum());
  dg = -cplx((wr2 * (a.square() - b * b)).sum(), -2 * b * (wr2 * a).sum());
}

cplx DiscreteTarget::stieltjes(cplx w) const {
  cplx g = 0;
  for (std::size_t k = 0; k < s_.size(); ++k) g += w_[k] / (w - s_[k]);
  return g;
}

cplx DiscreteTarget::stieltjes_derivative(cplx w) const {
  cplx g = 0;
  for (std::size_t k = 0; k < s_.size(); ++k) {
    const cplx r = 1.0 / (w - s_[k]);
    g -= w_[k] * r * r;
  }
  return g;
}

void DiscreteTarget::subordination_F(double u, double Y, double& F, double& dF) const {
  // Direct sums: no cancellation as Y → 0.
  const Eigen::ArrayXd r = 1.0 / ((u - sa_).square() + Y);
  const Eigen::ArrayXd wr = wa_ * r;
  F = wr.sum();
  dF = -(wr * r).sum();
}

double DiscreteTarget::phi(double u) const {
  double f = 0;
  for (std::size_t k = 0; k < s_.size(); ++k) {
    const double r = 1.0 / (u - s_[k]);
    f += w_[k] * r * r;
  }
  return f;
}

double DiscreteTarget::phi_prime(double u) const {
  double f = 0;
  for (std::size_t k = 0; k < s_.size(); ++k) {
    const double r = 1.0 / (u - s_[k]);
    f -= 2 * w_[k] * r * r * r;
  }
  return f;
}

std::vector<Interval> DiscreteTarget::gaps() const {
  std::vector<Interval> g;
  g.push_back({-kInf, s_.front()});
  for (std::size_t k = 0; k + 1 < s_.size(); ++k) g.push_back({s_[k], s_[k + 1]});
  g.push_back({s_.back(), kInf});
  return g;
}

double DiscreteTarget::mass_below(double u) const {
  const auto it = std::upper_bound(s_.begin(), s_.end(), u);
  return cum_[static_cast<std::size_t>(it - s_.begin())];
}

double DiscreteTarget::boundary_weight_left(std::size_t gap) const { return gap == 0 ? 0.0 : w_[gap - 1]; }
double DiscreteTarget::boundary_weight_right(std::size_t gap) const { return gap < s_.size() ? w_[gap] : 0.0; }

double DiscreteTarget::mean() const {
  double m = 0;
  for (std::size_t k = 0; k < s_.size(); ++k) m += w_[k] * s_[k];
  return m;
}
double DiscreteTarget::second_moment() const {
  double m = 0;
  for (std::size_t k = 0; k < s_.size(); ++k) m += w_[k] * s_[k] * s_[k];
  return m;
}
double DiscreteTarget::third_moment() const {
  double m = 0;
  for (std::size_t k = 0; k < s_.size(); ++k) m += w_[k] * s_[k] * s_[k] * s_[k];
  return m;
}

std::vector<double> power_law_eigenvalues(int d, double kappa0, double gamma, double Q0) {
  if (d < 1) throw InputError("d", "must be >= 1");
  if (!(gamma > 0.5)) throw InputError("gamma", "must be > 1/2");
  const int p0 = std::clamp(static_cast<int>(std::lround(kappa0 * d)), 1, d);
  std::vector<double> s(static_cast<std::size_t>(d), 0.0);
  double sum2 = 0;
  for (int i = 1; i <= p0; ++i) {
    s[static_cast<std::size_t>(i - 1)] = std::pow(static_cast<double>(i), -gamma);
    sum2 += std::pow(static_cast<double>(i), -2 * gamma);
  }
  const double c = std::sqrt(Q0 * d / sum2);
  for (double& x : s) x *= c;
  return s;
}

}  // namespace hdat::tied_attention
