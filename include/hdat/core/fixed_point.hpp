#pragma once
// One solver for the fixed points of the theories: x = g(x) for a map (a state evolution, saddle-point
// equations) or f(x) = 0 for a flow (a plateau of an order-parameter ODE), with one Options in and one
// Summary out (Ceres style). Three methods on the residual F = g(x) − x (a map) or F = f(x) (a flow):
//   damped    x ← x + θ F(x)                                   (robust, linear convergence)
//   anderson  Anderson mixing of the last m residuals, falling back to the damped step where the
//             mixed point is inadmissible or the mixing coefficients explode
//   newton    x ← x − s J⁻¹F(x), J by central differences, s halved until max|F| decreases
// A state the model cannot take (a negative variance ...) is refused through `admissible`: the damped
// step from an admissible point stays admissible when the map's image is (a convex combination).
#include <Eigen/Dense>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hdat {

enum class FixedPointMethod { damped, anderson, newton };
FixedPointMethod fixed_point_method_from_name(const std::string& name);  ///< damped | anderson | newton
std::string fixed_point_method_name(FixedPointMethod method);

struct FixedPointOptions {
  FixedPointMethod method = FixedPointMethod::anderson;
  double damping = 0.5;        ///< θ in (0, 1] of the damped step (also Anderson's mixing)
  int anderson_memory = 4;     ///< residuals Anderson mixes (≥ 1)
  /// Converged when max|F| ≤ tolerance, relative to max(1, max|x|) when `relative`.
  double tolerance = 1e-7;
  bool relative = true;
  int max_iterations = 400;
  double jacobian_step = 1e-5; ///< newton: central-difference step, times max(1, |x_k|)
  int line_search_halvings = 30;
  /// std::invalid_argument naming the option and what is allowed (a model maps its own keys onto
  /// these and reports its key).
  void validate() const;
};

/// How a solve ended.
struct FixedPointSummary {
  std::string method;
  bool converged = false;
  int iterations = 0;
  long evaluations = 0;               ///< of the map or the flow (Jacobian columns included)
  double residual = 0;                ///< max|F| at the result (relative when the options say so)
  std::vector<double> residual_history;
  double seconds = 0;
  std::string message;                ///< why it stopped, when not converged
  nlohmann::json to_json() const;
  std::string brief() const;          ///< one line for a log
};

using VectorFunction = std::function<Eigen::VectorXd(const Eigen::VectorXd&)>;
using Admissibility = std::function<bool(const Eigen::VectorXd&)>;

/// ∂f/∂x by central differences, step h_k = step · max(1, |x_k|) (error O(h²)).
Eigen::MatrixXd central_difference_jacobian(const VectorFunction& f, const Eigen::VectorXd& x, double step);

/// x = g(x) from x0. Returns g at the last iterate when converged (consistent with the state the map
/// last saw), else the last iterate. Throws NumericalError when the residual becomes non-finite.
Eigen::VectorXd solve_fixed_point(const VectorFunction& map, Eigen::VectorXd x0, const FixedPointOptions& options,
                                  FixedPointSummary& summary, const Admissibility& admissible = {});

/// f(x) = 0 from x0 (a stationary point of dx/dt = f(x)). Returns the last iterate.
Eigen::VectorXd solve_stationary_point(const VectorFunction& flow, Eigen::VectorXd x0, const FixedPointOptions& options,
                                       FixedPointSummary& summary, const Admissibility& admissible = {});

}  // namespace hdat
