#pragma once
// The target's spectral law μ0 (eigenvalue distribution of S0), as the prior side needs it:
// its Stieltjes transform g0(w) = ∫ μ0(dx)/(w − x) off the real axis, the gaps of its support, and
// φ(u) = ∫ μ0(dx)/(u − x)² on those gaps (derivation.md §2, Biane's description of μ0 ⊞ σ_v).
//
// Two families:
//  - Wishart: S0 = W0 W0ᵀ/√(p0 d), law √κ0·MP (atom 1 − κ0 at 0 when κ0 < 1), g0 from a quadratic;
//  - Discrete: a finite list of eigenvalues with weights (a finite-d spectrum, e.g. the power law
//    s_i ∝ i^(−γ) as a deterministic equivalent, or the exact spectrum of a sampled S0).
#include <Eigen/Dense>
#include <complex>
#include <memory>
#include <string>
#include <vector>

namespace hdat::tied_attention {

using cplx = std::complex<double>;

struct Interval {
  double lo = 0, hi = 0;
  double length() const { return hi - lo; }
};

class TargetLaw {
 public:
  virtual ~TargetLaw() = default;
  virtual std::string name() const = 0;
  /// g0(w) = ∫ μ0(dx)/(w − x). For Im w < 0, Im g0 > 0. On a gap of the support (real w) it is real.
  virtual cplx stieltjes(cplx w) const = 0;
  virtual cplx stieltjes_derivative(cplx w) const = 0;
  /// Both at once (one pass over a discrete spectrum).
  virtual void stieltjes_both(cplx w, cplx& g, cplx& dg) const {
    g = stieltjes(w);
    dg = stieltjes_derivative(w);
  }
  /// F(Y) = ∫ μ0(dx)/((u − x)² + Y) = Im g0(u − i√Y)/√Y (Y > 0) and dF/dY: Biane's equation for the
  /// imaginary part of the subordination function is F(y²) = 1/v. Default: from g0 and g0'.
  virtual void subordination_F(double u, double Y, double& F, double& dF) const;
  /// φ(u) = ∫ μ0(dx)/(u − x)² = −g0'(u) and φ'(u), for u in a gap of the support.
  virtual double phi(double u) const = 0;
  virtual double phi_prime(double u) const = 0;
  /// Open gaps of R \ supp μ0 in increasing order; the first has lo = −∞, the last hi = +∞.
  virtual std::vector<Interval> gaps() const = 0;
  /// μ0((−∞, u]) for u in a gap.
  virtual double mass_below(double u) const = 0;
  /// Mass of the atom (if any) or piece of support at the boundary of gaps: used for the lower bound
  /// of φ on a gap: φ(u) ≥ w_l/(u − l)² + w_r/(r − u)². 0 when the boundary is a continuous edge.
  virtual double boundary_weight_left(std::size_t gap) const = 0;   ///< atom at gaps()[gap].lo
  virtual double boundary_weight_right(std::size_t gap) const = 0;  ///< atom at gaps()[gap].hi
  virtual double mean() const = 0;           ///< ∫ x μ0(dx) = Tr S0 / d
  virtual double second_moment() const = 0;  ///< Q0 = ∫ x² μ0(dx) = Tr S0² / d
  virtual double third_moment() const = 0;
  /// Eigenvalues with weights when the law is discrete (outliers are identified with them).
  virtual bool discrete() const { return false; }
  virtual const std::vector<double>& values() const;
  virtual const std::vector<double>& weights() const;
};

/// √κ0 · Marchenko–Pastur: the law of W0 W0ᵀ/√(p0 d) with p0/d → κ0.
class WishartTarget final : public TargetLaw {
 public:
  explicit WishartTarget(double kappa0);
  std::string name() const override { return "wishart"; }
  cplx stieltjes(cplx w) const override;
  cplx stieltjes_derivative(cplx w) const override;
  double phi(double u) const override;
  double phi_prime(double u) const override;
  std::vector<Interval> gaps() const override;
  double mass_below(double u) const override;
  double boundary_weight_left(std::size_t gap) const override;
  double boundary_weight_right(std::size_t gap) const override;
  double mean() const override;
  double second_moment() const override;
  double third_moment() const override;

  double kappa0() const { return kappa0_; }
  double a() const { return a_; }                    ///< 1/κ0
  double edge_lo() const { return edge_lo_; }        ///< bulk edges (a^{1/4} ∓ a^{-1/4})²
  double edge_hi() const { return edge_hi_; }
  double atom() const { return kappa0_ < 1 ? 1 - kappa0_ : 0.0; }  ///< mass at 0
  /// Density of the bulk (x in (edge_lo, edge_hi)), for tests and the δ = 0 spectrum.
  double bulk_density(double x) const;

 private:
  double kappa0_, a_, sa_, edge_lo_, edge_hi_;
};

/// A finite list of eigenvalues (equal values merged, weights summing to one).
class DiscreteTarget final : public TargetLaw {
 public:
  DiscreteTarget(std::vector<double> eigenvalues, std::vector<double> weights = {});
  std::string name() const override { return "discrete"; }
  cplx stieltjes(cplx w) const override;
  cplx stieltjes_derivative(cplx w) const override;
  void stieltjes_both(cplx w, cplx& g, cplx& dg) const override;
  void subordination_F(double u, double Y, double& F, double& dF) const override;
  double phi(double u) const override;
  double phi_prime(double u) const override;
  std::vector<Interval> gaps() const override;
  double mass_below(double u) const override;
  double boundary_weight_left(std::size_t gap) const override;
  double boundary_weight_right(std::size_t gap) const override;
  double mean() const override;
  double second_moment() const override;
  double third_moment() const override;
  bool discrete() const override { return true; }
  const std::vector<double>& values() const override { return s_; }
  const std::vector<double>& weights() const override { return w_; }

 private:
  std::vector<double> s_, w_;  // sorted distinct values, weights
  std::vector<double> cum_;    // cum_[k] = Σ_{j<k} w_j
  Eigen::ArrayXd sa_, wa_;     // the same as arrays: the sums over the spectrum vectorise
};

/// Power-law spectrum at finite d: s_i = c i^(−γ) for i = 1..p0 (p0 = round(κ0 d)), zeros for the
/// other d − p0 directions, c fixed by Tr S0²/d = Q0.
std::vector<double> power_law_eigenvalues(int d, double kappa0, double gamma, double Q0);

}  // namespace hdat::tied_attention
