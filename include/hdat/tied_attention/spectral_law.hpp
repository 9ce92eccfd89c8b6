#pragma once
// μ_δ = μ0 ⊞ σ_{δ²}: the free additive convolution of the target's spectral law with a semicircle of
// variance δ² (the law of S0 + δ Z, Z GOE with spectrum on [−2, 2]); derivation.md §2.
//
// Every prior-side quantity is an integral over the support of μ_δ of a function of x, the density
// ρ_δ(x) and the Hilbert transform H_δ(x) = P.V.∫ ρ_δ(y)/(x − y) dy = Re g(x − i0). A SpectralLaw
// exposes its support as pieces (intervals), each with a parametrisation θ ∈ [0, π] ↦ x chosen so
// that the integrand ρ · dx/dθ is smooth at square-root edges; integrate_above() runs the adaptive
// vector Gauss–Kronrod of quadrature.hpp on every piece above a threshold.
//
// Two implementations:
//  - WishartLaw: closed form. g solves the cubic √a v g³ − (√a z + v) g² + (z + √a − 1/√a) g − 1 = 0
//    (a = 1/κ0, v = δ²); the support edges are the real roots of its discriminant (a quartic in x);
//    on each piece x = lo + (hi − lo)(1 − cos θ)/2.
//  - SubordinatedLaw: any μ0 (TargetLaw). Biane's parametrisation of the subordination equation
//    g(z) = g0(z − v g(z)): for u ∈ R let y(u) ≥ 0 solve ∫ μ0(dx)/((u − x)² + y²) = 1/v; then
//    x = ψ(u) = u + v Re g0(u − i y) is increasing, ρ_δ(ψ(u)) = y/(π v), H_δ(ψ(u)) = Re g0(u − i y).
//    The support is ψ of U = {u : ∫ μ0(dx)/(u − x)² > 1/v}; pieces are the intervals of U, with
//    u = ua + (ub − ua)(1 − cos θ)/2. Each piece carries the μ0-mass of its u-interval, so isolated
//    target eigenvalues (outliers) show up as pieces of mass 1/d.
#include <array>
#include <cmath>
#include <memory>
#include <vector>

#include "hdat/tied_attention/quadrature.hpp"
#include "hdat/tied_attention/target.hpp"

namespace hdat::tied_attention {

/// One quadrature node of a piece: position, density, Hilbert transform and dx/dθ.
struct SpectralPoint {
  double x = 0, rho = 0, hilbert = 0, jacobian = 0;
};

class SpectralLaw {
 public:
  virtual ~SpectralLaw() = default;
  double delta() const { return delta_; }
  /// Support intervals in x, increasing.
  const std::vector<Interval>& support() const { return support_; }
  int pieces() const { return static_cast<int>(support_.size()); }
  /// μ_δ-mass of each piece (exact for SubordinatedLaw; by quadrature for WishartLaw).
  virtual std::vector<double> piece_masses() const = 0;
  /// The node at parameter θ ∈ [0, π] of piece k.
  virtual SpectralPoint at(int piece, double theta) const = 0;
  /// θ of the point x of piece k (x inside the piece).
  virtual double theta_of(int piece, double x) const = 0;
  /// ρ_δ(x) (0 outside the support).
  virtual double density(double x) const = 0;
  /// H_δ(x); WishartLaw: inside the support only (NaN outside).
  virtual double hilbert(double x) const = 0;
  /// Cumulative distribution F_δ(x) = μ_δ((−∞, x]).
  double cdf(double x, const QuadratureOptions& opt = {}) const;

 protected:
  double delta_ = 0;
  std::vector<Interval> support_;
};

/// ∫_{x > lower} f(x, H(x)) ρ(x) dx over the support, f returning QVec<K>. Stats accumulate.
template <int K, class F>
QVec<K> integrate_above(const SpectralLaw& law, double lower, F&& f, const QuadratureOptions& opt,
                        QuadratureStats* stats = nullptr, QVec<K>* err = nullptr) {
  QVec<K> total = QVec<K>::Zero(), total_err = QVec<K>::Zero();
  for (int k = 0; k < law.pieces(); ++k) {
    const Interval& iv = law.support()[static_cast<std::size_t>(k)];
    if (iv.hi <= lower) continue;
    const double th0 = iv.lo < lower ? law.theta_of(k, lower) : 0.0;
    auto integrand = [&](double theta) -> QVec<K> {
      const SpectralPoint p = law.at(k, theta);
      return f(p.x, p.hilbert) * (p.rho * p.jacobian);
    };
    QVec<K> e;
    total += integrate_gk<K>(integrand, th0, M_PI, opt, stats, &e);
    total_err += e;
  }
  if (err) *err = total_err;
  return total;
}

/// Closed form for the Wishart target (cubic for the Stieltjes transform, quartic for the edges).
class WishartLaw final : public SpectralLaw {
 public:
  WishartLaw(double kappa0, double delta);
  std::vector<double> piece_masses() const override;
  SpectralPoint at(int piece, double theta) const override;
  double theta_of(int piece, double x) const override;
  double density(double x) const override;
  double hilbert(double x) const override;

  /// g(x − i0) inside the support (the cubic's root with the largest imaginary part); returns false
  /// outside the support (three real roots).
  bool stieltjes(double x, cplx& g) const;
  /// Coefficients c0..c4 of the quartic whose real roots are the support edges (derivation.md §2.2).
  std::array<double, 5> edge_quartic() const;
  /// The real roots of the edge quartic, increasing.
  const std::vector<double>& edge_roots() const { return roots_; }

 private:
  double kappa0_, a_, sa_, v_;
  std::vector<double> roots_;
};

/// Biane/subordination form for any target law (kept alive by the shared pointer).
class SubordinatedLaw final : public SpectralLaw {
 public:
  SubordinatedLaw(std::shared_ptr<const TargetLaw> target, double delta);
  std::vector<double> piece_masses() const override { return mass_; }
  SpectralPoint at(int piece, double theta) const override;
  double theta_of(int piece, double x) const override;
  double density(double x) const override;
  double hilbert(double x) const override;

  /// The u-intervals of U (one per piece).
  const std::vector<Interval>& u_pieces() const { return upieces_; }
  /// y(u) > 0 solving ∫ μ0(dx)/((u − x)² + y²) = 1/v (u inside a piece).
  double imaginary_part(double u) const;
  /// ψ(u) = u + v Re g0(u − i y(u)) (u anywhere: on gaps y = 0).
  double psi(double u) const;
  /// u with ψ(u) = x (monotone inverse).
  double psi_inverse(double x) const;
  /// ψ'(u): |z'|²/Re z' inside a piece (z' = 1 + v g0'(u − i y)), 1 − v φ(u) on a gap. Since
  /// H_δ(ψ(u)) = (ψ(u) − u)/v, the Hilbert transform's derivative is H_δ'(x) = (1 − 1/ψ'(u))/v.
  double psi_derivative(double u) const;
  const TargetLaw& target() const { return *target_; }

 private:
  struct Node {
    double x, y, hilbert, dpsi;  // ψ(u), y(u), Re g0, ψ'(u)
  };
  Node node(double u) const;
  std::shared_ptr<const TargetLaw> target_;
  double v_;
  std::vector<Interval> upieces_;
  std::vector<double> mass_;
};

/// How to build μ_δ for a target: the closed form where one exists (Wishart), else subordination.
enum class LawMethod { automatic, closed_form, subordination };
std::unique_ptr<SpectralLaw> make_law(const std::shared_ptr<const TargetLaw>& target, double delta,
                                      LawMethod method = LawMethod::automatic);

}  // namespace hdat::tied_attention
