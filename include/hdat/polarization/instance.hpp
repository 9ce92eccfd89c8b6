#pragma once
// One problem instance: the fixed data (target β*, design X and labels y, soft target p*) and the
// initial parameters (V(0) or U(0), a(0)), drawn once from the configuration. The theory starts
// from the order parameters of exactly these initial parameters (u(0) = V(0)ᵀβ*, Q(0) = V(0)ᵀV(0)),
// the simulator from the parameters themselves, so both describe the same run.
#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include "hdat/polarization/model.hpp"

namespace hdat::polarization {

struct Instance {
  Eigen::VectorXd beta_star;  ///< target β* (logistic, square; length d)
  Eigen::MatrixXd X;          ///< regression design, n×d, condition number κ
  Eigen::VectorXd y;          ///< regression labels, length n
  Eigen::VectorXd p_star;     ///< xent soft target, length d
  Eigen::MatrixXd V0;         ///< V(0), d×T (value) or U(0), D×D (tied)
  Eigen::VectorXd a0;         ///< a(0), length T
  /// The direction b that defines the projections u = Vᵀ b and the margin z = <b, β>:
  /// β* (logistic, square), Xᵀy (regression), p* (xent).
  Eigen::VectorXd direction;
  Eigen::VectorXd u0;         ///< u(0) = V(0)ᵀ b (the given u0 for init=explicit)
  Eigen::MatrixXd Q0;         ///< Q(0) = V(0)ᵀ V(0) (the given Q0 for init=explicit)

  /// cond(X), measured: the ratio of X's extreme singular values (regression).
  double design_condition_number() const;
  /// What run.json records of the instance (seeds, u(0), a(0), |V(0)|, measured cond(X) ...).
  nlohmann::json record(const Config& c) const;
};

/// Draw (or construct, for init=explicit) the instance of a configuration.
Instance make_instance(const Config& c);

/// A regression design with condition number κ: the singular vectors of `raw` (n×d) with singular
/// values linearly spaced from 1 down to 1/κ (the authors' construction).
Eigen::MatrixXd conditioned_design(const Eigen::MatrixXd& raw, double kappa);

}  // namespace hdat::polarization
