#include "hdat/polarization/normalization.hpp"

#include <cmath>
#include <limits>

namespace hdat::polarization {

bool is_normalised(Normalization n) { return n != Normalization::sigmoid && n != Normalization::elementwise_relu; }

Invariant invariant_of(Normalization n) {
  switch (n) {
    case Normalization::softmax: return Invariant::mean_a;
    case Normalization::square:
    case Normalization::sum:
    case Normalization::l1:
    case Normalization::relu: return Invariant::norm2_a;
    default: return Invariant::none;
  }
}

double softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

double logistic(double x) {
  if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
  const double e = std::exp(x);
  return e / (1.0 + e);
}

double log_sum_exp(const ConstVec& a) {
  const double m = a.maxCoeff();
  return m + std::log((a.array() - m).exp().sum());
}

double weights(Normalization n, const ConstVec& a, Vec s) {
  const Eigen::Index T = a.size();
  switch (n) {
    case Normalization::softmax: {
      const double lse = log_sum_exp(a);
      s = (a.array() - lse).exp();
      return lse;
    }
    case Normalization::square: {
      const double F = a.squaredNorm();
      s = a.array().square() / F;
      return F;
    }
    case Normalization::sum: {
      const double F = a.sum();
      s = a / F;
      return F;
    }
    case Normalization::l1: {
      const double F = a.cwiseAbs().sum();
      s = a.cwiseAbs() / F;
      return F;
    }
    case Normalization::relu: {
      double F = 0;
      for (Eigen::Index i = 0; i < T; ++i) F += a(i) > 0 ? a(i) : 0.0;
      for (Eigen::Index i = 0; i < T; ++i) s(i) = a(i) > 0 ? a(i) / F : 0.0;
      return F;
    }
    case Normalization::sigmoid:
      for (Eigen::Index i = 0; i < T; ++i) s(i) = logistic(a(i));
      return 1.0;
    case Normalization::elementwise_relu:
      for (Eigen::Index i = 0; i < T; ++i) s(i) = a(i) > 0 ? a(i) : 0.0;
      return 1.0;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

int top_index(const ConstVec& s) {
  Eigen::Index k = 0;
  s.maxCoeff(&k);
  return static_cast<int>(k);
}

void vjp(Normalization n, const ConstVec& a, const ConstVec& s, double F, const ConstVec& g, Vec out) {
  const Eigen::Index T = a.size();
  if (!is_normalised(n)) {
    if (n == Normalization::sigmoid)
      for (Eigen::Index i = 0; i < T; ++i) out(i) = logistic(a(i)) * logistic(-a(i)) * g(i);  // σ(1−σ) without 1−σ
    else
      for (Eigen::Index i = 0; i < T; ++i) out(i) = a(i) > 0 ? g(i) : 0.0;
    return;
  }
  // g − <g, σ> = (g − c) − <g − c, σ> for any c, because Σ σ = 1; c = g at the heaviest weight
  // makes <g − c, σ> a sum of small terms when σ is nearly one-hot.
  const double c = g(top_index(s));
  const double mean = (g.array() - c).matrix().dot(s);
  switch (n) {
    case Normalization::softmax:
      for (Eigen::Index i = 0; i < T; ++i) out(i) = s(i) * ((g(i) - c) - mean);
      break;
    case Normalization::square:
      for (Eigen::Index i = 0; i < T; ++i) out(i) = 2.0 * a(i) / F * ((g(i) - c) - mean);
      break;
    case Normalization::sum:
      for (Eigen::Index i = 0; i < T; ++i) out(i) = ((g(i) - c) - mean) / F;
      break;
    case Normalization::l1:
      // f'(x) = sign(x); at a_i = 0 exactly the coordinate is dead (the Filippov sliding value 0).
      for (Eigen::Index i = 0; i < T; ++i) out(i) = (a(i) > 0 ? 1.0 : a(i) < 0 ? -1.0 : 0.0) / F * ((g(i) - c) - mean);
      break;
    case Normalization::relu:
      for (Eigen::Index i = 0; i < T; ++i) out(i) = a(i) > 0 ? ((g(i) - c) - mean) / F : 0.0;
      break;
    default: break;
  }
}

double one_minus_top(Normalization n, const ConstVec& s, int top) {
  if (!is_normalised(n)) return 1.0 - s(top);
  double rest = 0;
  for (Eigen::Index j = 0; j < s.size(); ++j)
    if (j != top) rest += s(j);
  return rest;
}

double entropy(Normalization n, const ConstVec& a, const ConstVec& s) {
  if (n == Normalization::softmax) {
    const double lse = log_sum_exp(a);
    double h = 0;
    for (Eigen::Index i = 0; i < a.size(); ++i) h -= s(i) * (a(i) - lse);
    return h;
  }
  if (s.minCoeff() < 0) return std::numeric_limits<double>::quiet_NaN();
  const double total = s.sum();
  if (!(total > 0)) return std::numeric_limits<double>::quiet_NaN();
  double h = 0;
  for (Eigen::Index i = 0; i < s.size(); ++i) {
    const double p = s(i) / total;
    if (p > 0) h -= p * std::log(p);
  }
  return h;
}

}  // namespace hdat::polarization
