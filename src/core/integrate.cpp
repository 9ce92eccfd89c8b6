#include "hdat/core/integrate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/math/tools/roots.hpp>
#include <boost/numeric/odeint.hpp>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>

#include "hdat/core/error.hpp"

namespace hdat {
namespace odeint = boost::numeric::odeint;
namespace {

using Clock = std::chrono::steady_clock;
using State = std::vector<double>;
using UState = boost::numeric::ublas::vector<double>;
using UMatrix = boost::numeric::ublas::matrix<double>;

// Thrown from inside a right-hand side evaluation to abort the stepper cleanly.
struct RhsFailure {
  double t;
  int component;  // -1: the system threw
  std::string what;
};

// Wraps the user's system: counts and times calls, maps log time, and checks the output is finite.
struct CountedSystem {
  const OdeSystem* f;
  const IntegrateOptions* opt;
  long* calls;
  double* seconds;
  // The state and its derivative in Eigen's aligned storage: an Eigen reduction (a sum, a norm)
  // starts its packets at the first aligned element, so over the steppers' std::vector (aligned to
  // 16 bytes by the heap, not to the packet) its last bits would depend on where the heap put the
  // state, and a run's numbers on unrelated allocations (e.g. the length of the --out path).
  mutable Eigen::VectorXd xbuf, dbuf;

  double t_of(double s) const { return opt->log_time ? opt->time_scale * std::expm1(s) : s; }

  void eval(const double* x, double* dxdt, std::size_t n, double s) const {
    const auto start = Clock::now();
    ++*calls;
    const double t = t_of(s);
    xbuf = Eigen::Map<const Eigen::VectorXd>(x, static_cast<Eigen::Index>(n));
    dbuf.setZero(static_cast<Eigen::Index>(n));
    try {
      (*f)(xbuf, dbuf, t);
    } catch (const ModelFailure&) {
      throw;  // the model's own error: not a stopped run but the caller's exception
    } catch (const std::exception& e) {
      throw RhsFailure{t, -1, e.what()};
    }
    if (opt->log_time) dbuf *= (opt->time_scale + t);  // dx/dtau = (dt/dtau) f
    Eigen::Map<Eigen::VectorXd>(dxdt, static_cast<Eigen::Index>(n)) = dbuf;
    for (std::size_t k = 0; k < n; ++k)
      if (!std::isfinite(dxdt[k])) throw RhsFailure{t, static_cast<int>(k), "non-finite right-hand side"};
    *seconds += std::chrono::duration<double>(Clock::now() - start).count();
  }
  void operator()(const State& x, State& dxdt, double s) const { eval(x.data(), dxdt.data(), x.size(), s); }
  void operator()(const UState& x, UState& dxdt, double s) const { eval(&x[0], &dxdt[0], x.size(), s); }
};

// Finite-difference Jacobian for the stiff stepper (no analytic Jacobian is asked of the user).
struct FdJacobian {
  const CountedSystem* sys;
  long* jac_calls;
  void operator()(const UState& x, UMatrix& J, double s, UState& dfdt) const {
    ++*jac_calls;
    const std::size_t n = x.size();
    UState f0(n), f1(n), xp = x;
    (*sys)(x, f0, s);
    for (std::size_t j = 0; j < n; ++j) {
      const double h = 1e-7 * std::max(1.0, std::fabs(x[j]));
      xp[j] = x[j] + h;
      (*sys)(xp, f1, s);
      for (std::size_t i = 0; i < n; ++i) J(i, j) = (f1[i] - f0[i]) / h;
      xp[j] = x[j];
    }
    const double hs = 1e-7 * std::max(1.0, std::fabs(s));
    (*sys)(x, f1, s + hs);
    for (std::size_t i = 0; i < n; ++i) dfdt[i] = (f1[i] - f0[i]) / hs;
  }
};

nlohmann::json events_json(const std::vector<LocatedEvent>& events) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : events) out.push_back(e.to_json());
  return out;
}

std::string name_of(const IntegrateOptions& o, int k) {
  return o.component_name ? o.component_name(k) : fmt::format("component {}", k);
}

}  // namespace

std::string IntegrateSummary::status_name() const {
  switch (status) {
    case IntegrateStatus::completed: return "completed";
    case IntegrateStatus::stopped_by_event: return "stopped_by_event";
    case IntegrateStatus::nonfinite: return "nonfinite";
    case IntegrateStatus::diverged: return "diverged";
    case IntegrateStatus::max_steps: return "max_steps";
    case IntegrateStatus::step_underflow: return "step_underflow";
    case IntegrateStatus::failed: return "failed";
  }
  return "?";
}

std::string IntegrateSummary::brief() const {
  return fmt::format("{} {} to t={:.6g}: {} rhs calls, {} accepted / {} rejected steps, {:.3f} s{}", stepper,
                     status_name(), t_reached, rhs_calls, accepted_steps, rejected_steps, wall_seconds,
                     message.empty() ? "" : " (" + message + ")");
}

std::string IntegrateSummary::report() const {
  std::string s;
  s += fmt::format("  stepper            {} (rtol {:g}, atol {:g}{})\n", stepper, rtol, atol, log_time ? ", log time" : "");
  s += fmt::format("  status             {}{}\n", status_name(), message.empty() ? "" : ": " + message);
  s += fmt::format("  time               {:g} -> {:g} (requested {:g})\n", t_start, t_reached, t_requested);
  s += fmt::format("  steps              {} accepted, {} rejected (step {:.3g} .. {:.3g})\n", accepted_steps, rejected_steps,
                   smallest_step, largest_step);
  s += fmt::format("  rhs calls          {}{}\n", rhs_calls, jacobian_calls ? fmt::format(" ({} Jacobians)", jacobian_calls) : "");
  s += fmt::format("  wall time          {:.4f} s ({:.4f} s in the right-hand side)\n", wall_seconds, rhs_seconds);
  return s;
}

nlohmann::json IntegrateSummary::to_json() const {
  return {{"status", status_name()},      {"message", message},           {"stepper", stepper},
          {"rtol", rtol},                 {"atol", atol},                 {"log_time", log_time},
          {"t_start", t_start},           {"t_requested", t_requested},   {"t_reached", t_reached},
          {"rhs_calls", rhs_calls},       {"accepted_steps", accepted_steps}, {"rejected_steps", rejected_steps},
          {"jacobian_calls", jacobian_calls}, {"observations", observations}, {"smallest_step", smallest_step},
          {"largest_step", largest_step}, {"wall_seconds", wall_seconds}, {"rhs_seconds", rhs_seconds},
          {"events", events_json(events)}};
}

bool EventFunction::crosses(double g0, double g1) const {
  const bool up = g0 < 0 && g1 >= 0, down = g0 > 0 && g1 <= 0;
  return direction > 0 ? up : (direction < 0 ? down : up || down);
}

nlohmann::json LocatedEvent::to_json() const { return {{"name", name}, {"t", t}, {"direction", direction}}; }

const LocatedEvent* IntegrateSummary::first_event(const std::string& name) const {
  for (const auto& e : events)
    if (e.name == name) return &e;
  return nullptr;
}

std::string stepper_name(Stepper s) {
  switch (s) {
    case Stepper::dopri5: return "dopri5";
    case Stepper::rkf78: return "rkf78";
    case Stepper::cash_karp54: return "cash_karp54";
    case Stepper::rosenbrock4: return "rosenbrock4";
  }
  return "?";
}

std::vector<std::string> stepper_names() { return {"dopri5", "rkf78", "cash_karp54", "rosenbrock4"}; }

Stepper stepper_from_name(const std::string& name) {
  for (Stepper s : {Stepper::dopri5, Stepper::rkf78, Stepper::cash_karp54, Stepper::rosenbrock4})
    if (stepper_name(s) == name) return s;
  throw InputError("stepper", "unknown stepper '" + name + "'; allowed: dopri5|rkf78|cash_karp54|rosenbrock4");
}

void IntegrateOptions::validate() const {
  auto require = [](bool ok, const char* key, const std::string& what) {
    if (!ok) throw InputError(key, what);
  };
  require(rtol > 0 && std::isfinite(rtol), "rtol", fmt::format("must be > 0 (got {:g})", rtol));
  require(atol > 0 && std::isfinite(atol), "atol", fmt::format("must be > 0 (got {:g})", atol));
  require(initial_step >= 0, "initial_step", fmt::format("must be >= 0, 0 choosing it automatically (got {:g})", initial_step));
  require(max_step >= 0, "max_step", fmt::format("must be >= 0, 0 for unlimited (got {:g})", max_step));
  require(max_steps > 0, "max_steps", fmt::format("must be > 0 (got {})", max_steps));
  require(time_scale > 0, "time_scale", fmt::format("must be > 0 (got {:g})", time_scale));
  require(divergence > 0, "divergence", fmt::format("must be > 0 (got {:g})", divergence));
}

namespace {

// One error-controlled step attempt of each Odeint stepper behind one interface, so that a single
// loop drives them all. A dense stepper interpolates inside a step; the others land on the
// observation times.
class StepAttempt {
 public:
  virtual ~StepAttempt() = default;
  virtual bool dense() const = 0;
  /// Try a step dt from (x, dxdt) at s. On success: xnew, dxnew, s += dt; dt is the controller's
  /// next suggestion either way.
  virtual bool try_step(const State& x, const State& dxdt, double& s, State& xnew, State& dxnew, double& dt) = 0;
  /// The state at so inside the last step [s_old, s_new]: a dense stepper's interpolant; the others
  /// take one step of their own method from s_old to so (as accurate as the step they took).
  virtual void interpolate(double so, const State& x, const State& dxdt, double s_old, const State& xnew, const State& dxnew,
                           double s_new, State& out) = 0;
};

class Dopri5Attempt : public StepAttempt {
 public:
  Dopri5Attempt(const CountedSystem& sys, const IntegrateOptions& o)
      : sys_(sys), stepper_(odeint::make_controlled(o.atol, o.rtol, o.max_step, odeint::runge_kutta_dopri5<State>())) {}
  bool dense() const override { return true; }
  bool try_step(const State& x, const State& dxdt, double& s, State& xnew, State& dxnew, double& dt) override {
    return stepper_.try_step(sys_, x, dxdt, s, xnew, dxnew, dt) == odeint::success;
  }
  void interpolate(double so, const State& x, const State& dxdt, double s_old, const State& xnew, const State& dxnew, double s_new,
                   State& out) override {
    stepper_.stepper().calc_state(so, out, x, dxdt, s_old, xnew, dxnew, s_new);
  }

 private:
  const CountedSystem& sys_;
  decltype(odeint::make_controlled(0.0, 0.0, 0.0, odeint::runge_kutta_dopri5<State>())) stepper_;
};

template <class Controlled>
class ExplicitAttempt : public StepAttempt {
 public:
  ExplicitAttempt(const CountedSystem& sys, Controlled stepper) : sys_(sys), stepper_(std::move(stepper)) {}
  bool dense() const override { return false; }
  bool try_step(const State& x, const State& dxdt, double& s, State& xnew, State& dxnew, double& dt) override {
    if (stepper_.try_step(sys_, x, dxdt, s, xnew, dt) != odeint::success) return false;
    sys_(xnew, dxnew, s);  // the next step starts from f(xnew)
    return true;
  }
  void interpolate(double so, const State& x, const State& dxdt, double s_old, const State&, const State&, double, State& out) override {
    stepper_.stepper().do_step(sys_, x, dxdt, s_old, out, so - s_old);
  }

 private:
  const CountedSystem& sys_;
  Controlled stepper_;
};
template <class Controlled>
std::unique_ptr<StepAttempt> explicit_attempt(const CountedSystem& sys, Controlled stepper) {
  return std::make_unique<ExplicitAttempt<Controlled>>(sys, std::move(stepper));
}

class Rosenbrock4Attempt : public StepAttempt {
 public:
  Rosenbrock4Attempt(const CountedSystem& sys, const IntegrateOptions& o, long* jacobian_calls)
      : sys_(sys), jacobian_{&sys, jacobian_calls}, stepper_(o.atol, o.rtol, o.max_step) {}
  bool dense() const override { return false; }
  bool try_step(const State& x, const State&, double& s, State& xnew, State&, double& dt) override {
    UState ux(x.size()), uxnew(x.size());
    std::copy(x.begin(), x.end(), ux.begin());
    auto f = [this](const UState& a, UState& b, double t) { sys_(a, b, t); };
    auto jac = [this](const UState& a, UMatrix& J, double t, UState& dfdt) { jacobian_(a, J, t, dfdt); };
    if (stepper_.try_step(std::make_pair(f, jac), ux, s, uxnew, dt) != odeint::success) return false;
    std::copy(uxnew.begin(), uxnew.end(), xnew.begin());
    return true;
  }
  void interpolate(double so, const State& x, const State&, double s_old, const State&, const State&, double, State& out) override {
    UState ux(x.size()), uout(x.size());
    std::copy(x.begin(), x.end(), ux.begin());
    auto f = [this](const UState& a, UState& b, double t) { sys_(a, b, t); };
    auto jac = [this](const UState& a, UMatrix& J, double t, UState& dfdt) { jacobian_(a, J, t, dfdt); };
    stepper_.stepper().do_step(std::make_pair(f, jac), ux, s_old, uout, so - s_old);
    std::copy(uout.begin(), uout.end(), out.begin());
  }

 private:
  const CountedSystem& sys_;
  FdJacobian jacobian_;
  odeint::rosenbrock4_controller<odeint::rosenbrock4<double>> stepper_;
};

std::unique_ptr<StepAttempt> make_attempt(const CountedSystem& sys, const IntegrateOptions& o, long* jacobian_calls) {
  switch (o.stepper) {
    case Stepper::dopri5: return std::make_unique<Dopri5Attempt>(sys, o);
    case Stepper::rkf78:
      return explicit_attempt(sys, odeint::make_controlled(o.atol, o.rtol, o.max_step, odeint::runge_kutta_fehlberg78<State>()));
    case Stepper::cash_karp54:
      return explicit_attempt(sys, odeint::make_controlled(o.atol, o.rtol, o.max_step, odeint::runge_kutta_cash_karp54<State>()));
    case Stepper::rosenbrock4: return std::make_unique<Rosenbrock4Attempt>(sys, o, jacobian_calls);
  }
  throw std::logic_error("unknown stepper");
}

}  // namespace

namespace integrate_steps {
namespace {

IntegrateSummary started_summary(const IntegrateOptions& opt, double t0, const std::vector<double>& times) {
  IntegrateSummary sum;
  sum.stepper = stepper_name(opt.stepper);
  sum.rtol = opt.rtol;
  sum.atol = opt.atol;
  sum.log_time = opt.log_time;
  sum.t_start = t0;
  sum.t_reached = t0;
  sum.t_requested = times.empty() ? t0 : times.back();
  sum.smallest_step = std::numeric_limits<double>::infinity();
  return sum;
}

void stop(IntegrateSummary& sum, IntegrateStatus status, std::string message) {
  sum.status = status;
  sum.message = std::move(message);
}

// One integration from (t0, x0) through the observation times: the state, the step in the
// integration variable s (log time or t), and the next time to observe. Results go to `sum`.
class Run {
 public:
  Run(const OdeSystem& f, const Eigen::VectorXd& x0, double t0, const std::vector<double>& times, const OdeObserver& observe,
      const IntegrateOptions& opt, IntegrateSummary& sum)
      : times_(times), observe_(observe), opt_(opt), sum_(sum), sys_{&f, &opt, &sum.rhs_calls, &sum.rhs_seconds, {}, {}},
        n_(static_cast<std::size_t>(x0.size())), x0_(x0), t0_(t0), xobs_(x0.size()), s_end_(times.empty() ? 0 : s_of(times.back())),
        s_(s_of(t0)), x_(x0.data(), x0.data() + n_), dxdt_(n_), xnew_(n_), dxnew_(n_), xinterp_(n_), xevent_(x0.size()) {
    for (const EventFunction& e : opt_.events) g_last_.push_back(e.g(t0, x0));
  }

  /// Observes the requested times equal to t0 and checks x0. False: nothing is left to integrate.
  bool observe_start() {
    while (next_ < times_.size() && times_[next_] == t0_) {
      ++sum_.observations;
      if (!observe_(t0_, x0_)) {
        stop(sum_, IntegrateStatus::stopped_by_event, fmt::format("stopped by the observer at t={:g}", t0_));
        return false;
      }
      ++next_;
    }
    for (Eigen::Index k = 0; k < x0_.size(); ++k)
      if (!std::isfinite(x0_(k))) {
        stop(sum_, IntegrateStatus::nonfinite, fmt::format("initial state is not finite in {}", name_of(opt_, static_cast<int>(k))));
        return false;
      }
    return next_ < times_.size();
  }

  /// The one stepping loop: attempt, reject or accept, check, observe; until the last time or a stop.
  void step_to_end() {
    try {
      sys_(x_, dxdt_, s_);
      double dt = initial_step();
      const std::unique_ptr<StepAttempt> attempt = make_attempt(sys_, opt_, &sum_.jacobian_calls);
      while (next_ < times_.size())
        if (out_of_steps(dt) || !attempt_step(*attempt, dt)) break;
    } catch (const RhsFailure& e) {
      if (e.component >= 0) stop(sum_, IntegrateStatus::nonfinite, fmt::format("{} in {} at t={:.6g}", e.what, name_of(opt_, e.component), e.t));
      else stop(sum_, IntegrateStatus::failed, fmt::format("right-hand side failed at t={:.6g}: {}", e.t, e.what));
    }
  }

 private:
  double s_of(double t) const { return opt_.log_time ? std::log1p(t / opt_.time_scale) : t; }
  double t_of(double s) const { return sys_.t_of(s); }

  // Hairer's heuristic, simplified: a small fraction of |x| / |f| (dxdt already holds f(x0)).
  double initial_step() const {
    double dt = opt_.initial_step;
    if (dt <= 0) {
      double xn = 0, fn = 0;
      for (std::size_t k = 0; k < n_; ++k) xn = std::max(xn, std::fabs(x_[k])), fn = std::max(fn, std::fabs(dxdt_[k]));
      dt = 0.01 * std::max(xn, 1e-5) / std::max(fn, 1e-12);
      dt = std::min(dt, 0.1 * (s_end_ - s_));
      if (opt_.max_step > 0) dt = std::min(dt, opt_.max_step);
    }
    return std::max(dt, 1e-14 * std::max(1.0, std::fabs(s_end_ - s_)));
  }

  // The budget of steps and the smallest step the controller may take.
  bool out_of_steps(double dt) {
    if (sum_.accepted_steps + sum_.rejected_steps >= opt_.max_steps) {
      stop(sum_, IntegrateStatus::max_steps, fmt::format("{} steps reached at t={:.6g}", opt_.max_steps, t_of(s_)));
      return true;
    }
    if (dt < 1e-15 * std::max(1.0, std::fabs(s_))) {
      stop(sum_, IntegrateStatus::step_underflow, fmt::format("step size underflow ({:.3g}) at t={:.6g}", dt, t_of(s_)));
      return true;
    }
    return false;
  }

  // One step attempt of dt (the controller's next suggestion on return). A rejected step only changes
  // dt; an accepted one is checked, observed and taken. False: stop here.
  bool attempt_step(StepAttempt& attempt, double& dt) {
    // A dense stepper only stops at the end (it never evaluates the system beyond it); the others
    // at the next observation time.
    const double s_target = attempt.dense() ? s_end_ : s_of(times_[next_]);
    const bool hit = s_ + dt >= s_target;
    double dt_try = hit ? s_target - s_ : dt;
    const double h = dt_try, s_old = s_;
    if (!attempt.try_step(x_, dxdt_, s_, xnew_, dxnew_, dt_try)) {
      ++sum_.rejected_steps;
      dt = dt_try;
      return true;
    }
    if (!hit || attempt.dense()) dt = dt_try;  // keep the controller's suggestion unless the step was clipped
    ++sum_.accepted_steps;
    sum_.smallest_step = std::min(sum_.smallest_step, h);
    sum_.largest_step = std::max(sum_.largest_step, h);
    if (hit) s_ = s_target;
    const bool fine = check_state(xnew_, s_);
    // A terminal event ends the step (and the run) where it was located.
    double s_end = s_;
    const bool terminal = fine && locate_events(attempt, s_old, s_, s_end);
    // An event still observes the times the step passed.
    const bool go_on = (fine || sum_.status == IntegrateStatus::stopped_by_event) && observe_through(attempt, s_old, s_end);
    x_.swap(xnew_), dxdt_.swap(dxnew_);
    sum_.t_reached = t_of(s_end);
    if (terminal && go_on)
      stop(sum_, IntegrateStatus::stopped_by_event, fmt::format("terminal event {} at t={:.10g}", sum_.events.back().name, sum_.t_reached));
    if (opt_.progress) opt_.progress(sum_.t_reached);
    return fine && go_on && !terminal;
  }

  // The events whose g changed sign over the accepted step [s_old, s_new] (x_ -> xnew_), located by
  // TOMS 748 on the step's interpolant and recorded in time order. True when a terminal one ends
  // the run; s_stop is then its location.
  bool locate_events(StepAttempt& attempt, double s_old, double s_new, double& s_stop) {
    if (opt_.events.empty()) return false;
    std::vector<std::pair<double, std::size_t>> found;  // (s, event)
    std::vector<double> g_new(opt_.events.size());
    std::vector<int> direction(opt_.events.size(), 0);
    for (std::size_t k = 0; k < opt_.events.size(); ++k) {
      const EventFunction& e = opt_.events[k];
      g_new[k] = e.g(t_of(s_new), as_vector(xnew_));
      if (std::isfinite(g_last_[k]) && std::isfinite(g_new[k]) && e.crosses(g_last_[k], g_new[k])) {
        found.emplace_back(root_of(attempt, e, s_old, s_new, g_last_[k], g_new[k]), k);
        direction[k] = g_new[k] > g_last_[k] ? +1 : -1;
      }
    }
    std::sort(found.begin(), found.end());
    g_last_ = std::move(g_new);
    for (const auto& [s, k] : found) {
      const EventFunction& e = opt_.events[k];
      interpolate_at(attempt, s, s_old, s_new);
      sum_.events.push_back({e.name, t_of(s), as_vector(xinterp_), direction[k]});
      if (e.terminal) {
        s_stop = s;
        return true;
      }
    }
    return false;
  }

  // The zero of g along the step's interpolant, bracketed by g0 at s_old and g1 at s_new.
  double root_of(StepAttempt& attempt, const EventFunction& e, double s_old, double s_new, double g0, double g1) {
    if (g1 == 0) return s_new;
    auto g = [&](double s) {
      interpolate_at(attempt, s, s_old, s_new);
      return e.g(t_of(s), as_vector(xinterp_));
    };
    boost::uintmax_t iterations = 200;
    const auto bracket = boost::math::tools::toms748_solve(g, s_old, s_new, g0, g1, boost::math::tools::eps_tolerance<double>(50), iterations);
    return 0.5 * (bracket.first + bracket.second);
  }

  // The state at s inside the step into xinterp_ (StepAttempt::interpolate).
  void interpolate_at(StepAttempt& attempt, double s, double s_old, double s_new) {
    if (s == s_old) xinterp_ = x_;
    else if (s == s_new) xinterp_ = xnew_;
    else attempt.interpolate(s, x_, dxdt_, s_old, xnew_, dxnew_, s_new, xinterp_);
  }

  const Eigen::VectorXd& as_vector(const State& x) {
    std::copy(x.begin(), x.end(), xevent_.data());
    return xevent_;
  }

  // Observation of every requested time in (s_old, s_new]: interpolated by a dense stepper, else the
  // step landed on it.
  bool observe_through(StepAttempt& attempt, double s_old, double s_new) {
    while (next_ < times_.size() && s_of(times_[next_]) <= s_new * (1 + 1e-15) + 1e-300) {
      if (attempt.dense()) {
        const double so = std::min(s_of(times_[next_]), s_new);
        attempt.interpolate(so, x_, dxdt_, s_old, xnew_, dxnew_, s_new, xinterp_);
      } else {
        xinterp_ = xnew_;
      }
      std::copy(xinterp_.begin(), xinterp_.end(), xobs_.data());
      ++sum_.observations;
      if (!observe_(times_[next_], xobs_)) {
        stop(sum_, IntegrateStatus::stopped_by_event, fmt::format("stopped by the observer at t={:g}", times_[next_]));
        return false;
      }
      ++next_;
    }
    return true;
  }

  // Checks after every accepted step: finite, bounded, event monitor.
  bool check_state(const State& xs, double s_new) {
    double biggest = 0;
    int where = 0;
    for (std::size_t k = 0; k < n_; ++k) {
      if (!std::isfinite(xs[k])) {
        stop(sum_, IntegrateStatus::nonfinite,
             fmt::format("state became non-finite in {} at t={:.6g}", name_of(opt_, static_cast<int>(k)), t_of(s_new)));
        return false;
      }
      if (std::fabs(xs[k]) > biggest) biggest = std::fabs(xs[k]), where = static_cast<int>(k);
    }
    if (biggest > opt_.divergence) {
      stop(sum_, IntegrateStatus::diverged,
           fmt::format("state diverged: |{}| = {:.3g} > {:g} at t={:.6g}", name_of(opt_, where), biggest, opt_.divergence, t_of(s_new)));
      return false;
    }
    if (opt_.step_monitor) {
      if (!opt_.step_monitor(t_of(s_new), as_vector(xs))) {
        stop(sum_, IntegrateStatus::stopped_by_event, fmt::format("stopped by an event at t={:.6g}", t_of(s_new)));
        return false;
      }
    }
    return true;
  }

  const std::vector<double>& times_;
  const OdeObserver& observe_;
  const IntegrateOptions& opt_;
  IntegrateSummary& sum_;
  CountedSystem sys_;
  const std::size_t n_;
  const Eigen::VectorXd& x0_;
  const double t0_;
  Eigen::VectorXd xobs_;
  std::size_t next_ = 0;  // the first requested time not yet observed
  const double s_end_;
  double s_;
  State x_, dxdt_, xnew_, dxnew_, xinterp_;
  Eigen::VectorXd xevent_;     // a State seen as a vector by an event function
  std::vector<double> g_last_;  // each event's g at the last accepted state
};

}  // namespace
}  // namespace integrate_steps

IntegrateSummary integrate(const OdeSystem& f, const Eigen::VectorXd& x0, double t0, const std::vector<double>& times,
                           const OdeObserver& observe, const IntegrateOptions& opt) {
  opt.validate();
  const auto start = Clock::now();
  IntegrateSummary sum = integrate_steps::started_summary(opt, t0, times);
  if (!std::is_sorted(times.begin(), times.end()) || (!times.empty() && times.front() < t0))
    throw std::invalid_argument("integrate: observation times must be sorted and >= t0");
  if (opt.log_time && !(t0 > -opt.time_scale))
    throw std::invalid_argument("integrate: log time needs t0 > -time_scale");

  integrate_steps::Run run(f, x0, t0, times, observe, opt, sum);
  if (run.observe_start()) run.step_to_end();
  sum.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (sum.accepted_steps == 0) sum.smallest_step = 0;
  return sum;
}

std::vector<double> log_spaced(double t_min, double t_max, int n, bool with_zero) {
  std::vector<double> out;
  if (with_zero) out.push_back(0.0);
  if (n <= 0) return out;
  if (n == 1) {
    out.push_back(t_max);
    return out;
  }
  const double a = std::log(t_min), b = std::log(t_max);
  // Rounded to 12 significant digits so that grid times print as written (0.2, not 0.19999999999999998).
  auto tidy = [](double v) { return std::stod(fmt::format("{:.12g}", v)); };
  for (int i = 0; i < n; ++i) out.push_back(i == n - 1 ? t_max : tidy(std::exp(a + (b - a) * i / (n - 1))));
  return out;
}

double first_sampled_crossing(const EventFunction& event, const std::vector<double>& t, const std::vector<Eigen::VectorXd>& x) {
  double g0 = NAN;
  for (std::size_t k = 0; k < t.size(); ++k) {
    const double g1 = event.g(t[k], x[k]);
    if (k > 0 && std::isfinite(g0) && std::isfinite(g1) && event.crosses(g0, g1)) return t[k - 1] + (t[k] - t[k - 1]) * g0 / (g0 - g1);
    g0 = g1;
  }
  return NAN;
}

std::vector<double> lin_spaced(double t_min, double t_max, int n) {
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(n == 1 ? t_max : (i == n - 1 ? t_max : t_min + (t_max - t_min) * i / (n - 1)));
  return out;
}

}  // namespace hdat
