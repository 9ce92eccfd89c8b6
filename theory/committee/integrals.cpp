#include "hdat/committee/integrals.hpp"

namespace hdat::committee {

namespace {
}

double I2(Activation g, const Eigen::MatrixXd& C, int a, int b) {
  if (g == Activation::linear) return C(a, b);
  return two_over_pi * std::asin(C(a, b) / std::sqrt((1 + C(a, a)) * (1 + C(b, b))));
}

double J2(Activation g, const Eigen::MatrixXd& C, int a, int b) {
  if (g == Activation::linear) return 1.0;
  return two_over_pi / std::sqrt((1 + C(a, a)) * (1 + C(b, b)) - C(a, b) * C(a, b));
}

double I3(Activation g, const Eigen::MatrixXd& C, int a, int b, int c) {
  if (g == Activation::linear) return C(b, c);
  // Stein's lemma on u_b, then E[g''(u_a) g(u_c)] = 2 ∂I2/∂C_aa (derivation.md §3.3).
  return J2(g, C, a, c) * (C(b, c) - C(a, b) * C(a, c) / (1 + C(a, a)));
}

double I4(Activation g, const Eigen::MatrixXd& C, int a, int b, int c, int d) {
  if (g == Activation::linear) return C(c, d);
  // g'(u_a) g'(u_b) = (2/π) exp(−(u_a² + u_b²)/2) tilts the Gaussian: weight det(I + A)^{−1/2} and
  // covariance C' = C − C_{·,ab} (I + A)⁻¹ C_{ab,·}, A = C_{ab,ab} (derivation.md §3.4).
  const double daa = 1 + C(a, a), dbb = 1 + C(b, b), cab = C(a, b);
  const double lambda4 = daa * dbb - cab * cab;
  // (I + A)⁻¹ = [[dbb, −cab], [−cab, daa]] / Λ4
  auto tilted = [&](int x, int y) {
    const double xa = C(x, a), xb = C(x, b), ya = C(y, a), yb = C(y, b);
    return C(x, y) - (xa * (dbb * ya - cab * yb) + xb * (daa * yb - cab * ya)) / lambda4;
  };
  const double ccd = tilted(c, d), ccc = tilted(c, c), cdd = tilted(d, d);
  return two_over_pi / std::sqrt(lambda4) * two_over_pi * std::asin(ccd / std::sqrt((1 + ccc) * (1 + cdd)));
}

double generalisation_error(Activation g, const Eigen::MatrixXd& C, const Eigen::VectorXd& s) {
  const int L = static_cast<int>(C.rows());
  if (g == Activation::linear) return 0.5 * s.dot(C * s);
  double sum = 0;
  for (int c = 0; c < L; ++c) {
    sum += s(c) * s(c) * I2(g, C, c, c);
    for (int d = c + 1; d < L; ++d) sum += 2 * s(c) * s(d) * I2(g, C, c, d);
  }
  return 0.5 * sum;
}

}  // namespace hdat::committee
