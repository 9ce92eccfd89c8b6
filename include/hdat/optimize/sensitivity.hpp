#pragma once
// The objective of a training protocol and its EXACT gradient, from a model's ControlledTheory
// (hdat/core/control.hpp), by sensitivities (theory/optimize/derivation.md):
//
//   forward   the theory integrated segment by segment between the schedules' breakpoints (where
//             a control jumps), by hdat::integrate, together with the segment's variational
//             equations: the transition matrix Φ' = f_x Φ (Φ = I at the segment's start) and the
//             sensitivities S' = f_x S + f_u ∂u/∂θ (S = 0) to the θ active on the segment;
//   backward  the adjoint recursion λ_j = Φ_jᵀ λ_{j+1} from λ_T = ∂J/∂x(T), collecting
//             dJ/dθ += S_jᵀ λ_{j+1} segment by segment.
// The time-averaged risk is a quadrature state c' = r(x, u)/T appended to x; the time to reach a
// target risk is located between steps and differentiated by the implicit function theorem.
// The cost per step is one Jacobian whatever the number of schedule values.
#include <Eigen/Dense>
#include <limits>
#include <string>
#include <vector>

#include "hdat/core/control.hpp"
#include "hdat/core/integrate.hpp"
#include "hdat/core/schedule.hpp"
#include "hdat/core/table.hpp"

namespace hdat::optimize {

enum class Objective { final_risk, average_risk, time_to_target };
std::string objective_name(Objective o);
Objective objective_from_name(const std::string& name, const std::string& key);  ///< InputError naming `key`

/// The free parameters of a protocol: the θ of each scheduled control and the values of the
/// optimised test-time scalars, packed into one vector (schedules first, in order, then finals).
struct Protocol {
  std::vector<ControlSchedule> schedules;
  std::vector<std::string> finals;
  Eigen::VectorXd final_values;

  int size() const;
  Eigen::VectorXd pack() const;
  void unpack(const Eigen::VectorXd& theta);
  /// The schedule file's form (schedule.json).
  Schedule schedule() const;
  /// Names of the packed parameters ("eta.u_3", "dropout_keep.start", "test_scale").
  std::vector<std::string> parameter_names() const;
};

struct ObjectiveSpec {
  Objective kind = Objective::final_risk;
  double t_final = 1;
  double target = std::numeric_limits<double>::quiet_NaN();  ///< time_to_target: the risk to reach
  /// time_to_target when the target is not reached by t_final: J = t_final + (r(t_final) − target)/rate,
  /// continuous where the target is first reached at t_final (set by the caller; > 0).
  double fallback_rate = 1;
};

struct Evaluation {
  bool ok = true;
  std::string message;      ///< why not ok (the integrator's message)
  double objective = 0;
  Eigen::VectorXd gradient;  ///< dJ/dθ (empty when not requested)
  double final_risk = 0;
  double average_risk = 0;   ///< only for the average objective (else NaN)
  double time_to_target = std::numeric_limits<double>::quiet_NaN();  ///< NaN: not reached by t_final
  long rhs_calls = 0, steps = 0;
};

class Evaluator {
 public:
  /// x0: the theory's initial state (t = 0).
  Evaluator(const ControlledTheory& theory, Eigen::VectorXd x0, ObjectiveSpec objective, IntegrateOptions options);
  /// J(θ) and, with `gradient`, dJ/dθ.
  Evaluation evaluate(const Protocol& protocol, bool gradient) const;
  /// The risk and the controls along the protocol at `times` (t, risk, then one column per control
  /// the protocol sets).
  Table curve(const Protocol& protocol, const std::vector<double>& times) const;
  /// The control vector u at time t (`where`: inside which segment; see ControlSchedule::value).
  Eigen::VectorXd controls_at(const Protocol& protocol, double t, double where) const;
  const ControlledTheory& theory() const { return theory_; }
  const ObjectiveSpec& objective() const { return objective_; }

 private:
  struct Segment;
  Evaluation forward(const Protocol& protocol, bool gradient, std::vector<Segment>* segments) const;
  const ControlledTheory& theory_;
  Eigen::VectorXd x0_;
  ObjectiveSpec objective_;
  IntegrateOptions options_;
};

}  // namespace hdat::optimize
