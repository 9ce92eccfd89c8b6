#pragma once
// Linear stability of the unspecialized phase (derivation.md §9): the fixed point of the D = ∞ flow
// on the symmetric manifold (exchangeable heads), the Jacobian of the full (M, R) right-hand side
// there, its spectrum with each direction classified (symmetric or head-difference; the feature
// it points along), the Hessian of the population risk at the same point, and the predictions
// that follow: the order in which features are learned and the escape time
// t_esc(D) ≈ t_0 + log(D) / (2 λ_max).
#include <Eigen/Dense>
#include <complex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hdat/core/fixed_point.hpp"
#include "hdat/specialization/ode.hpp"

namespace hdat::specialization {

/// Coordinates of the flow with R's independent entries only: M (row-major h, f), then R_hk, h <= k,
/// then (when the bias is trained) b_h.
struct Coordinates {
  int H = 0, F = 0;
  bool bias = false;  ///< b is a coordinate (train_bias)
  static Coordinates of(const Config& s) { return {s.H, s.F, s.train_bias}; }
  int size() const { return H * F + H * (H + 1) / 2 + (bias ? H : 0); }
  Eigen::VectorXd pack(const Eigen::MatrixXd& M, const Eigen::MatrixXd& R, const Eigen::VectorXd& b = Eigen::VectorXd()) const;
  void unpack(const Eigen::VectorXd& x, Eigen::MatrixXd& M, Eigen::MatrixXd& R) const;
  /// b: the coordinates' biases, or `fixed` when b is not a coordinate.
  void unpack(const Eigen::VectorXd& x, Eigen::MatrixXd& M, Eigen::MatrixXd& R, Eigen::VectorXd& b, const Eigen::VectorXd& fixed) const;
  std::string name(int k) const;  ///< "M_h_f", "R_h_k" or "b_h"
};

/// How a plateau (a fixed point of the flow) is found: relaxation along the symmetric flow, then the
/// core's Newton solver on dx/dt = 0 (absolute residual |dx/dt|_inf).
struct PlateauOptions {
  double t_relax = 200.0;     ///< integrate the symmetric flow this long before polishing (0: start Newton at once)
  FixedPointOptions solver = [] {
    FixedPointOptions o;
    o.method = FixedPointMethod::newton;
    o.max_iterations = 50;
    o.tolerance = 1e-10;
    o.relative = false;
    o.jacobian_step = 1e-5;
    return o;
  }();
};

/// The unspecialized fixed point: M_h = m for every head, R = r_d I + r_o (11ᵀ − I), b_h = β (with a
/// trained bias; for bayes β is a gauge: a common shift of every b cancels, so it keeps its start).
struct SymmetricFixedPoint {
  Eigen::MatrixXd M, R;
  Eigen::VectorXd b;
  FixedPointSummary summary;  ///< residual: |dx/dt|_inf of the FULL flow at the result; evaluations include the relaxation's
  double relax_time = 0;
  nlohmann::json solver_json() const;  ///< the summary with relax_time
};
SymmetricFixedPoint symmetric_fixed_point(const OrderParameterFlow& flow, const PlateauOptions& options,
                                          const Eigen::MatrixXd* M_start = nullptr, const Eigen::MatrixXd* R_start = nullptr);

/// Damped Newton on the full flow from a nearby state (for later plateaus).
SymmetricFixedPoint polish_fixed_point(const OrderParameterFlow& flow, const Eigen::MatrixXd& M, const Eigen::MatrixXd& R,
                                       const Eigen::VectorXd& b, const PlateauOptions& options);

/// A mode of a linearisation, classified.
struct Mode {
  std::complex<double> eigenvalue;
  Eigen::VectorXd vector;       ///< real part, normalised, in Coordinates order
  double symmetric_share = 0;   ///< |P_sym v|² / |v|²
  std::string kind;             ///< "symmetric" | "head-difference"
  int feature = -1;             ///< the feature f its M part concentrates on (-1: none / R only)
  double feature_share = 0;     ///< share of |δM|² on that feature
};

struct Linearisation {
  Eigen::MatrixXd jacobian;       ///< ∂(dx/dt)/∂x in Coordinates
  Eigen::MatrixXd jacobian_error; ///< |J(h) − J(2h)| entrywise: the finite-difference error estimate
  std::vector<Mode> modes;        ///< sorted by real part, largest first
  Eigen::MatrixXd hessian;        ///< ∂²ℛ/∂x² in Coordinates
  std::vector<Mode> hessian_modes;///< sorted from the most negative eigenvalue
  double lambda_max = 0;          ///< largest real part among head-difference modes
};

/// The largest real part among the head-difference eigenvalues of the Jacobian at (M, R, b).
double head_difference_rate(const OrderParameterFlow& flow, const Eigen::MatrixXd& M, const Eigen::MatrixXd& R, const Eigen::VectorXd& b);

/// The Jacobian (and the risk's Hessian) at (M, R, b); b are coordinates when the bias is trained.
Linearisation linearise(const OrderParameterFlow& flow, const Eigen::MatrixXd& M, const Eigen::MatrixXd& R, const Eigen::VectorXd& b,
                        double fd_step = 1e-5);

/// Growth rate of head differences along the symmetric trajectory: λ(t) = largest real part of the
/// Jacobian's head-difference eigenvalues at the symmetric state x_sym(t) (started from M = 0,
/// R = σ0² I, b = the common initial bias), and its integral Λ(t) = ∫_0^t λ. An O(D^{-1/2}) asymmetry grows like e^{Λ(t)}
/// (adiabatically), so the escape time solves Λ(t_esc) = const + ½ log D: its local slope in log D is
/// 1/(2 λ(t_esc)), which tends to 1/(2 λ_max) only once the flow sits on the fixed point.
struct GrowthAlongPlateau {
  std::vector<double> t, lambda, Lambda;
  /// t with Λ(t) = c + ½ log D (linear interpolation; NaN beyond the grid).
  double escape_time(double D, double c) const;
  /// The constant c that best fits measured escape times (least squares in Λ): mean of Λ(t_i) − ½ log D_i.
  double fit_constant(const std::vector<double>& D, const std::vector<double>& t_escape) const;
  double Lambda_at(double t) const;
};
GrowthAlongPlateau growth_along_plateau(const OrderParameterFlow& flow, double t_max, int points);

/// Features ordered by the growth rate of their fastest head-difference mode (first learned first).
std::vector<int> predicted_order(const Linearisation& lin, int F);

}  // namespace hdat::specialization
