#pragma once
// Schedules of controllable parameters (learning rate, dropout keep-probability ...): the value a
// parameter takes at time t, as a family u(t; θ) of a few parameters θ, and the test-time scalars
// that only the final risk reads. `hdat optimize` writes them (schedule.json), `simulate`, `validate`
// and `curve` train under them (key `schedule`), and the optimiser differentiates through θ
// (docs/optimize.md; theory/optimize/derivation.md).
//
//   piecewise_constant  n equal intervals of [0, t_final], value θ_j on interval j (right-continuous)
//   piecewise_linear    n equal intervals, θ_0 .. θ_n at the knots, linear in between
//   step_decay          θ = (start, factor): start · factor^k on the k-th of `drops` + 1 equal stages
//   cosine              θ = (start, end): end + (start − end)(1 + cos(π t / t_final))/2
//   power_law           θ = (start, exponent, scale): start · (1 + t/scale)^(−exponent)
// After t_final every schedule holds its value at t_final.
#include <Eigen/Dense>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hdat {

enum class ScheduleShape { piecewise_constant, piecewise_linear, step_decay, cosine, power_law };
std::string shape_name(ScheduleShape s);
ScheduleShape shape_from_name(const std::string& name, const std::string& key);  ///< InputError naming `key`
/// The names of θ's entries for a shape (piecewise: "u_0", "u_1", ...).
std::vector<std::string> shape_parameter_names(ScheduleShape s, int size);

/// One parameter's schedule u(t; θ).
struct ControlSchedule {
  std::string control;  ///< the model's parameter key ("eta", "dropout_keep")
  ScheduleShape shape = ScheduleShape::piecewise_constant;
  double t_final = 1;
  Eigen::VectorXd theta;
  int drops = 3;  ///< step_decay: the number of drops (at t_final k/(drops+1))

  /// Intervals of a piecewise shape (n); 0 for the smooth families.
  int intervals() const;
  /// u at time t. `where` decides which piece a breakpoint belongs to (a time inside the piece):
  /// on the segment [a, b] between breakpoints the integrator passes its midpoint, so that both ends
  /// see that segment's formula; by default u is right-continuous.
  double value(double t, double where) const;
  double value(double t) const { return value(t, t); }
  /// ∂u/∂θ at t (size θ), with the same `where`.
  void gradient(double t, double where, Eigen::Ref<Eigen::VectorXd> out) const;
  /// The times in (0, t_final) where u or its slope jumps (piece boundaries, drops).
  std::vector<double> breakpoints() const;
  /// The mean of u over [0, t_final] and its gradient in θ (Gauss–Legendre on each smooth piece:
  /// exact for the piecewise shapes and the cosine, to ~1e-14 for the power law).
  double mean(Eigen::VectorXd* gradient = nullptr) const;
  /// InputError naming `key` when θ does not fit the shape.
  void check(const std::string& key) const;
};

/// Every scheduled parameter, and the test-time scalars (e.g. committee's test_scale).
struct Schedule {
  std::vector<ControlSchedule> controls;
  std::map<std::string, double> finals;

  bool empty() const { return controls.empty() && finals.empty(); }
  const ControlSchedule* find(const std::string& control) const;
  /// The scheduled value at t, or `fallback` when the parameter is not scheduled.
  double value(const std::string& control, double t, double fallback) const;
  double final_value(const std::string& name, double fallback) const;
  /// All breakpoints of every control, sorted and unique, in (0, t_final).
  std::vector<double> breakpoints() const;

  nlohmann::json to_json() const;
  /// From the JSON that to_json() writes; InputError naming `key` on anything malformed.
  static Schedule from_json(const nlohmann::json& j, const std::string& key);
};

/// A schedule from a parameter value: a path to a schedule.json (as `hdat optimize` writes it) or
/// the JSON object itself. InputError naming `key` on an unreadable or malformed schedule.
Schedule schedule_from_value(const nlohmann::json& value, const std::string& key);

}  // namespace hdat
