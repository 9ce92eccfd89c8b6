#pragma once
// Integration of order-parameter systems through Boost.Odeint.
//
// A system is a plain callable (x, dxdt, t), as in Odeint. integrate() takes Options and returns a
// Summary (Ceres style): which stepper, how many right-hand-side calls, accepted and rejected steps,
// wall time, and how the run ended. Observations happen exactly at the requested times through the
// stepper's dense output (no step-size clipping to hit them). A non-finite or diverging state stops
// the run with a message naming the component and time; everything observed before stays valid.
#include <Eigen/Dense>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hdat {

using ConstVecRef = Eigen::Ref<const Eigen::VectorXd>;
using VecRef = Eigen::Ref<Eigen::VectorXd>;

/// dx/dt = f(x, t): writes dxdt (already sized) from x.
using OdeSystem = std::function<void(const ConstVecRef& x, VecRef dxdt, double t)>;
/// Called at every requested time with the (interpolated) state; return false to stop the run there.
using OdeObserver = std::function<bool(double t, const Eigen::VectorXd& x)>;

/// The Odeint steppers, all with error control: dopri5 (Dormand-Prince 5(4) with dense output: observed
/// times are interpolated), rkf78 (Runge-Kutta-Fehlberg 7(8)), cash_karp54, rosenbrock4 (stiff;
/// finite-difference Jacobian). The last three land their steps exactly on the observation times.
enum class Stepper { dopri5, rkf78, cash_karp54, rosenbrock4 };
std::string stepper_name(Stepper s);
Stepper stepper_from_name(const std::string& name);  ///< InputError("stepper", ...) on an unknown name
std::vector<std::string> stepper_names();

struct IntegrateOptions {
  Stepper stepper = Stepper::dopri5;
  double rtol = 1e-8;              ///< relative tolerance of the error controller
  double atol = 1e-10;             ///< absolute tolerance of the error controller
  double initial_step = 0.0;       ///< 0: chosen from |x| / |f| at the start
  double max_step = 0.0;           ///< 0: unlimited (in the integration variable)
  long max_steps = 10'000'000;     ///< accepted + rejected steps before giving up
  bool log_time = false;           ///< integrate in tau = log(1 + t / time_scale): flows spanning decades
  double time_scale = 1.0;
  double divergence = 1e12;        ///< |x_k| above this stops the run as diverged
  /// Names a flat component for messages ("R_0_1"); defaults to "component k".
  std::function<std::string(int)> component_name;
  /// Called after every accepted step (in t); return false to stop (an event).
  std::function<bool(double t, const Eigen::VectorXd& x)> step_monitor;

  /// InputError naming the first option out of its range (tolerances > 0, max_steps > 0 ...).
  void validate() const;
};

enum class IntegrateStatus { completed, stopped_by_event, nonfinite, diverged, max_steps, step_underflow, failed };

struct IntegrateSummary {
  IntegrateStatus status = IntegrateStatus::completed;
  std::string message;  ///< empty when completed
  std::string stepper;
  double rtol = 0, atol = 0;
  bool log_time = false;
  double t_start = 0, t_requested = 0, t_reached = 0;
  long rhs_calls = 0, accepted_steps = 0, rejected_steps = 0, jacobian_calls = 0, observations = 0;
  double smallest_step = 0, largest_step = 0;  ///< in the integration variable (tau when log_time)
  double wall_seconds = 0, rhs_seconds = 0;

  bool ok() const { return status == IntegrateStatus::completed || status == IntegrateStatus::stopped_by_event; }
  std::string status_name() const;
  std::string brief() const;   ///< one line
  std::string report() const;  ///< several lines, for humans
  nlohmann::json to_json() const;
};

/// Integrate from (t0, x0) through the requested times (sorted, >= t0). The observer sees x0 when
/// times[0] == t0. Never throws for numerical trouble: the summary says what happened. Invalid
/// options throw InputError (IntegrateOptions::validate).
IntegrateSummary integrate(const OdeSystem& f, const Eigen::VectorXd& x0, double t0, const std::vector<double>& times,
                           const OdeObserver& observe, const IntegrateOptions& options = {});

/// n times from t_min to t_max, log-spaced; with_zero prepends 0.
std::vector<double> log_spaced(double t_min, double t_max, int n, bool with_zero = true);
std::vector<double> lin_spaced(double t_min, double t_max, int n);

}  // namespace hdat
