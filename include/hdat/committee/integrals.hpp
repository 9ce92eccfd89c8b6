#pragma once
// The Gaussian integrals of the soft committee machine in closed form (derivation.md §3). For a
// zero-mean Gaussian vector u with covariance C and indices a, b, c, d into it (they may coincide):
//
//   I2(a,b)     = E[g(u_a) g(u_b)]
//   J2(a,b)     = E[g'(u_a) g'(u_b)]
//   I3(a,b,c)   = E[g'(u_a) u_b g(u_c)]
//   I4(a,b,c,d) = E[g'(u_a) g'(u_b) g(u_c) g(u_d)]
//
// For g(u) = erf(u/√2) (g'(u) = √(2/π) e^{−u²/2}):
//   I2 = (2/π) asin(C_ab / √((1+C_aa)(1+C_bb)))
//   J2 = (2/π) / √Λ(a,b),           Λ(a,b) = (1+C_aa)(1+C_bb) − C_ab²
//   I3 = J2(a,c) [C_bc − C_ab C_ac / (1+C_aa)]
//   I4 = J2(a,b) · I2 under the covariance C' = C − C_{·,ab} (I + C_{ab,ab})⁻¹ C_{ab,·}
//        (the Gaussian tilted by g'(u_a) g'(u_b)); written out, Saad–Solla's
//        (4/π²) Λ4^{−1/2} asin(Λ0 / √(Λ1 Λ2)).
// For g(u) = u: I2 = C_ab, J2 = 1, I3 = C_bc, I4 = C_cd.
//
// These scalar forms are the reference against which the right-hand side (ode.cpp, which
// evaluates the same formulas in bulk) and Monte Carlo are tested.
#include <Eigen/Dense>
#include <cmath>
#include <numbers>

#include "hdat/committee/model.hpp"

namespace hdat::committee {

inline constexpr double two_over_pi = 2.0 / std::numbers::pi;

/// g(u): erf(u/√2) or u.
inline double activation(Activation g, double u) {
  return g == Activation::erf ? std::erf(u * std::numbers::sqrt2 / 2) : u;
}
/// g'(u): √(2/π) e^{−u²/2} or 1.
inline double activation_derivative(Activation g, double u) {
  constexpr double c = 0.79788456080286535588;  // √(2/π)
  return g == Activation::erf ? c * std::exp(-0.5 * u * u) : 1.0;
}

// The closed forms for any scalar type S (double; or a dual number, whose derivatives are then exact:
// hdat/core/autodiff.hpp) and any covariance indexable as C(a, b). The double functions below are
// these templates; the bulk right-hand side (ode.cpp) evaluates the same formulas and is tested
// against them.
template <class S, class Cov>
S I2_of(Activation g, const Cov& C, int a, int b) {
  using std::asin, std::sqrt;
  if (g == Activation::linear) return C(a, b);
  return two_over_pi * asin(C(a, b) / sqrt((1.0 + C(a, a)) * (1.0 + C(b, b))));
}

template <class S, class Cov>
S J2_of(Activation g, const Cov& C, int a, int b) {
  using std::sqrt;
  if (g == Activation::linear) return C(a, b) * 0.0 + 1.0;  // a constant with C's derivative slots
  return two_over_pi / sqrt((1.0 + C(a, a)) * (1.0 + C(b, b)) - C(a, b) * C(a, b));
}

template <class S, class Cov>
S I3_of(Activation g, const Cov& C, int a, int b, int c) {
  if (g == Activation::linear) return C(b, c);
  // Stein's lemma on u_b, then E[g''(u_a) g(u_c)] = 2 ∂I2/∂C_aa (derivation.md §3.3).
  const S j2 = J2_of<S>(g, C, a, c);
  return j2 * (C(b, c) - C(a, b) * C(a, c) / (1.0 + C(a, a)));
}

template <class S, class Cov>
S I4_of(Activation g, const Cov& C, int a, int b, int c, int d) {
  using std::asin, std::sqrt;
  if (g == Activation::linear) return C(c, d);
  // g'(u_a) g'(u_b) = (2/π) exp(−(u_a² + u_b²)/2) tilts the Gaussian: weight det(I + A)^{−1/2} and
  // covariance C' = C − C_{·,ab} (I + A)⁻¹ C_{ab,·}, A = C_{ab,ab} (derivation.md §3.4).
  const S daa = 1.0 + C(a, a), dbb = 1.0 + C(b, b), cab = C(a, b);
  const S lambda4 = daa * dbb - cab * cab;
  // (I + A)⁻¹ = [[dbb, −cab], [−cab, daa]] / Λ4
  auto tilted = [&](int x, int y) -> S {
    const S xa = C(x, a), xb = C(x, b), ya = C(y, a), yb = C(y, b);
    return C(x, y) - (xa * (dbb * ya - cab * yb) + xb * (daa * yb - cab * ya)) / lambda4;
  };
  const S ccd = tilted(c, d), ccc = tilted(c, c), cdd = tilted(d, d);
  return two_over_pi / sqrt(lambda4) * two_over_pi * asin(ccd / sqrt((1.0 + ccc) * (1.0 + cdd)));
}

double I2(Activation g, const Eigen::MatrixXd& C, int a, int b);
double J2(Activation g, const Eigen::MatrixXd& C, int a, int b);
double I3(Activation g, const Eigen::MatrixXd& C, int a, int b, int c);
double I4(Activation g, const Eigen::MatrixXd& C, int a, int b, int c, int d);

/// ε_g = ½ Σ_cd s_c s_d I2(c, d), s = (−v, v*): the generalisation error (noise excluded) of the
/// fields' covariance C.
double generalisation_error(Activation g, const Eigen::MatrixXd& C, const Eigen::VectorXd& s);

}  // namespace hdat::committee
