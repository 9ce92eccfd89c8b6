#pragma once
// Controllable parameters: what `hdat optimize` needs from a dynamics model's theory. A model whose
// drift depends on parameters a training protocol may vary in time (the learning rate, a dropout
// keep-probability ...) or that only the final test reads (a test-time output scale) offers a
// ControlledTheory: its drift f(x, u) and its risk r(x, u) with their EXACT derivatives (analytic or
// by forward automatic differentiation, hdat/core/autodiff.hpp), from which the optimiser's gradients
// follow by sensitivities (theory/optimize/derivation.md). Finite differences appear only in tests.
#include <Eigen/Dense>
#include <string>
#include <vector>

#include "hdat/core/layout.hpp"
#include "hdat/core/params.hpp"

namespace hdat {

/// One controllable parameter: the model's parameter key and where it acts.
struct ControlSpec {
  std::string name;         ///< the model's parameter key ("eta", "dropout_keep", "test_scale")
  bool final_only = false;  ///< a test-time scalar: it enters the risk, not the drift
  Range range;              ///< the values it may take (bounds must lie inside)
  std::string doc;          ///< one line
};

class ControlledTheory {
 public:
  virtual ~ControlledTheory() = default;
  virtual const StateLayout& layout() const = 0;
  /// The controllable parameters, in the order of the control vector u.
  virtual const std::vector<ControlSpec>& controls() const = 0;
  /// The configuration's own values of the controls (u where no schedule sets them).
  virtual Eigen::VectorXd defaults() const = 0;
  /// The drift f(x, u) and, when the pointers are given, its exact Jacobians ∂f/∂x (n × n) and ∂f/∂u
  /// (n × controls).
  virtual void drift(const Eigen::VectorXd& x, const Eigen::VectorXd& u, Eigen::VectorXd& f, Eigen::MatrixXd* f_x,
                     Eigen::MatrixXd* f_u) const = 0;
  /// The name of the risk the objectives read (the model's headline observable: "eg", "risk").
  virtual std::string risk_name() const = 0;
  /// The risk r(x, u) and, when asked, its exact gradients ∂r/∂x (n) and ∂r/∂u (controls).
  virtual double risk(const Eigen::VectorXd& x, const Eigen::VectorXd& u, Eigen::VectorXd* r_x, Eigen::VectorXd* r_u) const = 0;

  /// The index of a control in u; −1 when the model has no such control.
  int control_index(const std::string& name) const;
};

}  // namespace hdat
