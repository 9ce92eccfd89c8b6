#pragma once
// Seed statistics and the fits of finite-size trends, in one place: the mean and its standard error
// over independent runs, running moments of vectors (drift checks), power-law and 1/d fits.
#include <Eigen/Dense>
#include <vector>

namespace hdat::stats {

/// Mean of independent values and the standard error of that mean (sample standard deviation over
/// √n; 0 for a single value).
struct MeanSe {
  double mean = 0, se = 0;
  int n = 0;
};
MeanSe mean_se(const std::vector<double>& values);

/// Running sums of vectors for their mean and its standard error (e.g. one-step increments).
class Moments {
 public:
  explicit Moments(Eigen::Index size = 0) : sum_(Eigen::VectorXd::Zero(size)), squares_(Eigen::VectorXd::Zero(size)) {}
  void add(const Eigen::VectorXd& x);
  long count() const { return n_; }
  Eigen::VectorXd mean() const;
  Eigen::VectorXd se() const;  ///< of the mean

 private:
  Eigen::VectorXd sum_, squares_;
  long n_ = 0;
};

/// Least-squares slope p of log y = c + p log x over the points with x, y > 0 (NaN with fewer than 2).
double loglog_slope(const std::vector<double>& x, const std::vector<double>& y);
/// Least-squares slope of y against x (NaN with fewer than 2 points).
double linear_slope(const std::vector<double>& x, const std::vector<double>& y);

/// Weighted least squares y = a + b/d (weights 1/se²), the d → ∞ extrapolation of finite-size values;
/// se(a) inflated by √(χ²/dof) when dof ≥ 1 and χ²/dof > 1. With one d: a = y.
struct InverseSizeFit {
  double a = 0, a_se = 0, b = 0, chi2_dof = 0;
  int points = 0;
};
InverseSizeFit extrapolate_inverse_size(const std::vector<double>& d, const std::vector<double>& y, const std::vector<double>& se);

/// Two-sample Kolmogorov–Smirnov test: D = sup |F_a − F_b| of the empirical distributions, and its
/// asymptotic p-value Q_KS(λ), λ = (√n_e + 0.12 + 0.11/√n_e) D, n_e = n_a n_b/(n_a + n_b) (Stephens'
/// correction; accurate for n_e ≳ 4). Whether two samples may come from one law (e.g. two engines).
struct KolmogorovSmirnov {
  double statistic = 0, p_value = 1;
};
KolmogorovSmirnov ks_two_sample(std::vector<double> a, std::vector<double> b);

}  // namespace hdat::stats
