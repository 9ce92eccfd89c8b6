#include "hdat/core/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hdat::stats {

MeanSe mean_se(const std::vector<double>& values) {
  MeanSe s;
  s.n = static_cast<int>(values.size());
  if (values.empty()) return s;
  for (double x : values) s.mean += x;
  s.mean /= s.n;
  if (s.n > 1) {
    double ss = 0;
    for (double x : values) ss += (x - s.mean) * (x - s.mean);
    s.se = std::sqrt(ss / (s.n - 1) / s.n);
  }
  return s;
}

void Moments::add(const Eigen::VectorXd& x) {
  if (sum_.size() == 0 && n_ == 0) sum_ = squares_ = Eigen::VectorXd::Zero(x.size());
  sum_ += x;
  squares_ += x.cwiseProduct(x);
  ++n_;
}

Eigen::VectorXd Moments::mean() const { return n_ ? Eigen::VectorXd(sum_ / static_cast<double>(n_)) : sum_; }

Eigen::VectorXd Moments::se() const {
  if (n_ < 2) return Eigen::VectorXd::Zero(sum_.size());
  const double n = static_cast<double>(n_);
  const Eigen::VectorXd m = sum_ / n;
  const Eigen::VectorXd var = ((squares_ / n) - m.cwiseProduct(m)).cwiseMax(0.0) * (n / (n - 1.0));
  return (var / n).cwiseSqrt();
}

double linear_slope(const std::vector<double>& x, const std::vector<double>& y) {
  const std::size_t n = std::min(x.size(), y.size());
  if (n < 2) return std::numeric_limits<double>::quiet_NaN();
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < n; ++i) mx += x[i] / n, my += y[i] / n;
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < n; ++i) sxy += (x[i] - mx) * (y[i] - my), sxx += (x[i] - mx) * (x[i] - mx);
  return sxy / sxx;
}

double loglog_slope(const std::vector<double>& x, const std::vector<double>& y) {
  std::vector<double> lx, ly;
  for (std::size_t i = 0; i < std::min(x.size(), y.size()); ++i)
    if (x[i] > 0 && y[i] > 0) lx.push_back(std::log(x[i])), ly.push_back(std::log(y[i]));
  return linear_slope(lx, ly);
}

InverseSizeFit extrapolate_inverse_size(const std::vector<double>& d, const std::vector<double>& y, const std::vector<double>& se) {
  InverseSizeFit e;
  e.points = static_cast<int>(d.size());
  if (d.size() == 1) {
    e.a = y[0];
    e.a_se = se[0];
    return e;
  }
  // Minimise Σ w (y − a − b/d)², w = 1/se² (a floor keeps exact points from dividing by zero).
  auto sigma = [&](std::size_t i) { return std::max(se[i], 1e-12 * (1 + std::fabs(y[i]))); };
  double S = 0, Sx = 0, Sxx = 0, Sy = 0, Sxy = 0;
  for (std::size_t i = 0; i < d.size(); ++i) {
    const double w = 1 / (sigma(i) * sigma(i)), x = 1 / d[i];
    S += w, Sx += w * x, Sxx += w * x * x, Sy += w * y[i], Sxy += w * x * y[i];
  }
  const double det = S * Sxx - Sx * Sx;
  e.a = (Sxx * Sy - Sx * Sxy) / det;
  e.b = (S * Sxy - Sx * Sy) / det;
  e.a_se = std::sqrt(Sxx / det);
  const int dof = static_cast<int>(d.size()) - 2;
  if (dof >= 1) {
    double chi2 = 0;
    for (std::size_t i = 0; i < d.size(); ++i) {
      const double r = (y[i] - e.a - e.b / d[i]) / sigma(i);
      chi2 += r * r;
    }
    e.chi2_dof = chi2 / dof;
    if (e.chi2_dof > 1) e.a_se *= std::sqrt(e.chi2_dof);
  }
  return e;
}

KolmogorovSmirnov ks_two_sample(std::vector<double> a, std::vector<double> b) {
  KolmogorovSmirnov r;
  if (a.empty() || b.empty()) return r;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const double x = std::min(a[i], b[j]);
    while (i < a.size() && a[i] <= x) ++i;  // ties step both distributions at once
    while (j < b.size() && b[j] <= x) ++j;
    r.statistic = std::max(r.statistic, std::fabs(static_cast<double>(i) / na - static_cast<double>(j) / nb));
  }
  const double ne = std::sqrt(na * nb / (na + nb));
  const double lambda = (ne + 0.12 + 0.11 / ne) * r.statistic;
  // Q_KS(λ) = 2 Σ_{k≥1} (−1)^{k−1} exp(−2 k² λ²).
  double q = 0;
  for (int k = 1; k <= 100; ++k) {
    const double term = std::exp(-2.0 * k * k * lambda * lambda);
    q += (k % 2 ? 2.0 : -2.0) * term;
    if (term < 1e-16) break;
  }
  r.p_value = lambda < 0.2 ? 1.0 : std::clamp(q, 0.0, 1.0);  // the series converges slowly near 0, where Q = 1
  return r;
}

}  // namespace hdat::stats
