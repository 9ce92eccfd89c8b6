#pragma once
// Integration of order-parameter systems through Boost.Odeint.
//
// A system is a plain callable (x, dxdt, t), as in Odeint. integrate() takes Options and returns a
// Summary (Ceres style): which stepper, how many right-hand-side calls, accepted and rejected steps,
// wall time, and how the run ended. Observations happen exactly at the requested times through the
// stepper's dense output (no step-size clipping to hit them). A non-finite or diverging state stops
// the run with a message naming the component and time; everything observed before stays valid.
// Events (zero crossings of functions g(t, x) of the solution) are located between steps by root
// finding (TOMS 748) on the stepper's interpolant, so their times do not depend on the observation
// grid; a terminal event ends the run there.
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

/// An event: a zero crossing of g(t, x) along the solution (a student leaving the plateau ...).
struct EventFunction {
  std::string name;
  std::function<double(double t, const Eigen::VectorXd& x)> g;
  bool terminal = false;  ///< the run ends at the event (status stopped_by_event)
  int direction = 0;      ///< +1: only crossings upward (g from < 0 to >= 0), -1: only downward, 0: both
  /// Whether g passes from g0 to g1 (in that order) through zero in this event's direction.
  bool crosses(double g0, double g1) const;
};

/// Where an event was located: time, state there, and the sign of the crossing (+1 upward).
struct LocatedEvent {
  std::string name;
  double t = 0;
  Eigen::VectorXd x;
  int direction = 0;
  nlohmann::json to_json() const;  ///< {name, t, direction}
};

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
  /// Located between steps to near machine precision in t on the stepper's own solution inside
  /// the step: dopri5's dense output; the others take one step of their method to the trial time.
  std::vector<EventFunction> events;
  /// Called after every accepted step with the time reached (progress reports).
  std::function<void(double t)> progress;

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
  std::vector<LocatedEvent> events;  ///< in time order; a terminal event is the last
  /// The first located event of that name; null when none.
  const LocatedEvent* first_event(const std::string& name) const;

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

/// The first crossing of an event in sampled states x[k] at times t[k] (a finite run's
/// observations, which have no interpolant): g at each sample, the crossing time interpolated
/// linearly in g between the two samples that bracket it. NaN: no crossing.
double first_sampled_crossing(const EventFunction& event, const std::vector<double>& t, const std::vector<Eigen::VectorXd>& x);

}  // namespace hdat
