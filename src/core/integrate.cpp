#include "hdat/core/integrate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/numeric/odeint.hpp>
#include <chrono>
#include <cmath>
#include <limits>
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
  mutable Eigen::VectorXd xbuf, dbuf;

  double t_of(double s) const { return opt->log_time ? opt->time_scale * std::expm1(s) : s; }

  void eval(const double* x, double* dxdt, std::size_t n, double s) const {
    const auto start = Clock::now();
    ++*calls;
    const double t = t_of(s);
    Eigen::Map<const Eigen::VectorXd> xm(x, static_cast<Eigen::Index>(n));
    Eigen::Map<Eigen::VectorXd> dm(dxdt, static_cast<Eigen::Index>(n));
    try {
      (*f)(xm, dm, t);
    } catch (const std::exception& e) {
      throw RhsFailure{t, -1, e.what()};
    }
    if (opt->log_time) dm *= (opt->time_scale + t);  // dx/dtau = (dt/dtau) f
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
          {"largest_step", largest_step}, {"wall_seconds", wall_seconds}, {"rhs_seconds", rhs_seconds}};
}

IntegrateSummary integrate(const OdeSystem& f, const Eigen::VectorXd& x0, double t0, const std::vector<double>& times,
                           const OdeObserver& observe, const IntegrateOptions& opt) {
  const auto start = Clock::now();
  IntegrateSummary sum;
  sum.stepper = opt.stepper;
  sum.rtol = opt.rtol;
  sum.atol = opt.atol;
  sum.log_time = opt.log_time;
  sum.t_start = t0;
  sum.t_reached = t0;
  sum.t_requested = times.empty() ? t0 : times.back();
  sum.smallest_step = std::numeric_limits<double>::infinity();
  auto finish = [&]() {
    sum.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (sum.accepted_steps == 0) sum.smallest_step = 0;
    return sum;
  };
  if (!std::is_sorted(times.begin(), times.end()) || (!times.empty() && times.front() < t0))
    throw std::invalid_argument("integrate: observation times must be sorted and >= t0");
  if (opt.log_time && !(opt.time_scale > 0 && t0 > -opt.time_scale))
    throw std::invalid_argument("integrate: log time needs time_scale > 0 and t0 > -time_scale");

  const std::size_t n = static_cast<std::size_t>(x0.size());
  CountedSystem sys{&f, &opt, &sum.rhs_calls, &sum.rhs_seconds, {}, {}};
  auto s_of = [&](double t) { return opt.log_time ? std::log1p(t / opt.time_scale) : t; };
  auto t_of = [&](double s) { return sys.t_of(s); };

  Eigen::VectorXd xobs(x0.size());
  std::size_t next = 0;
  // Observe the initial state if asked.
  while (next < times.size() && times[next] == t0) {
    ++sum.observations;
    if (!observe(t0, x0)) {
      sum.status = IntegrateStatus::stopped_by_event;
      sum.message = fmt::format("stopped by the observer at t={:g}", t0);
      return finish();
    }
    ++next;
  }
  for (Eigen::Index k = 0; k < x0.size(); ++k)
    if (!std::isfinite(x0(k))) {
      sum.status = IntegrateStatus::nonfinite;
      sum.message = fmt::format("initial state is not finite in {}", name_of(opt, static_cast<int>(k)));
      return finish();
    }
  if (next == times.size()) return finish();

  const double s_end = s_of(times.back());
  double s = s_of(t0);
  State x(x0.data(), x0.data() + n), dxdt(n), xnew(n), dxnew(n);

  // Observation of every requested time in (s_old, s_new], through the interpolant `interp`.
  auto observe_through = [&](double s_new, auto&& interp) -> bool {
    while (next < times.size() && s_of(times[next]) <= s_new * (1 + 1e-15) + 1e-300) {
      const double so = std::min(s_of(times[next]), s_new);
      interp(so, xobs.data());
      ++sum.observations;
      if (!observe(times[next], xobs)) {
        sum.status = IntegrateStatus::stopped_by_event;
        sum.message = fmt::format("stopped by the observer at t={:g}", times[next]);
        return false;
      }
      ++next;
    }
    return true;
  };
  // Checks after every accepted step: finite, bounded, event monitor.
  auto check_state = [&](const State& xs, double s_new) -> bool {
    double biggest = 0;
    int where = 0;
    for (std::size_t k = 0; k < n; ++k) {
      if (!std::isfinite(xs[k])) {
        sum.status = IntegrateStatus::nonfinite;
        sum.message = fmt::format("state became non-finite in {} at t={:.6g}", name_of(opt, static_cast<int>(k)), t_of(s_new));
        return false;
      }
      if (std::fabs(xs[k]) > biggest) biggest = std::fabs(xs[k]), where = static_cast<int>(k);
    }
    if (biggest > opt.divergence) {
      sum.status = IntegrateStatus::diverged;
      sum.message = fmt::format("state diverged: |{}| = {:.3g} > {:g} at t={:.6g}", name_of(opt, where), biggest,
                                opt.divergence, t_of(s_new));
      return false;
    }
    if (opt.step_monitor) {
      Eigen::Map<const Eigen::VectorXd> xm(xs.data(), static_cast<Eigen::Index>(n));
      if (!opt.step_monitor(t_of(s_new), xm)) {
        sum.status = IntegrateStatus::stopped_by_event;
        sum.message = fmt::format("stopped by an event at t={:.6g}", t_of(s_new));
        return false;
      }
    }
    return true;
  };

  try {
    sys(x, dxdt, s);
    // Initial step (Hairer's heuristic, simplified): a small fraction of |x| / |f|.
    double dt = opt.initial_step;
    if (dt <= 0) {
      double xn = 0, fn = 0;
      for (std::size_t k = 0; k < n; ++k) xn = std::max(xn, std::fabs(x[k])), fn = std::max(fn, std::fabs(dxdt[k]));
      dt = 0.01 * std::max(xn, 1e-5) / std::max(fn, 1e-12);
      dt = std::min(dt, 0.1 * (s_end - s));
      if (opt.max_step > 0) dt = std::min(dt, opt.max_step);
    }
    const double span = s_end - s;
    dt = std::max(dt, 1e-14 * std::max(1.0, std::fabs(span)));

    auto record_step = [&](double h) {
      ++sum.accepted_steps;
      sum.smallest_step = std::min(sum.smallest_step, h);
      sum.largest_step = std::max(sum.largest_step, h);
    };
    auto underflow = [&](double h) {
      if (h < 1e-15 * std::max(1.0, std::fabs(s))) {
        sum.status = IntegrateStatus::step_underflow;
        sum.message = fmt::format("step size underflow ({:.3g}) at t={:.6g}", h, t_of(s));
        return true;
      }
      return false;
    };

    if (opt.stepper == "dopri5") {
      auto stepper = odeint::make_controlled(opt.atol, opt.rtol, opt.max_step, odeint::runge_kutta_dopri5<State>());
      while (next < times.size()) {
        if (sum.accepted_steps + sum.rejected_steps >= opt.max_steps) {
          sum.status = IntegrateStatus::max_steps;
          sum.message = fmt::format("{} steps reached at t={:.6g}", opt.max_steps, t_of(s));
          break;
        }
        if (underflow(dt)) break;
        const bool last = s + dt >= s_end;
        if (last) dt = s_end - s;  // never evaluate the system beyond the final time
        double s_old = s;
        double h = dt;
        if (stepper.try_step(sys, x, dxdt, s, xnew, dxnew, dt) == odeint::fail) {
          ++sum.rejected_steps;
          continue;
        }
        record_step(h);
        if (last) s = s_end;
        const bool fine = check_state(xnew, s);
        if (fine || sum.status == IntegrateStatus::stopped_by_event) {
          auto interp = [&](double so, double* out) {
            State tmp(n);
            stepper.stepper().calc_state(so, tmp, x, dxdt, s_old, xnew, dxnew, s);
            std::copy(tmp.begin(), tmp.end(), out);
          };
          if (!observe_through(s, interp)) {
            x.swap(xnew), dxdt.swap(dxnew);
            break;
          }
        }
        x.swap(xnew), dxdt.swap(dxnew);
        sum.t_reached = t_of(s);
        if (!fine) break;
      }
    } else if (opt.stepper == "rkf78" || opt.stepper == "cash_karp54") {
      auto run = [&](auto&& stepper) {
        while (next < times.size()) {
          if (sum.accepted_steps + sum.rejected_steps >= opt.max_steps) {
            sum.status = IntegrateStatus::max_steps;
            sum.message = fmt::format("{} steps reached at t={:.6g}", opt.max_steps, t_of(s));
            return;
          }
          if (underflow(dt)) return;
          // Without a dense output of matching order, steps land exactly on the observation times.
          const double s_target = s_of(times[next]);
          const bool hit = s + dt >= s_target;
          double dt_try = hit ? s_target - s : dt;
          double h = dt_try;
          if (stepper.try_step(sys, x, dxdt, s, xnew, dt_try) == odeint::fail) {
            ++sum.rejected_steps;
            dt = dt_try;
            continue;
          }
          if (!hit) dt = dt_try;  // keep the controller's suggestion unless the step was clipped
          record_step(h);
          if (hit) s = s_target;
          const bool fine = check_state(xnew, s);
          if (fine || sum.status == IntegrateStatus::stopped_by_event) {
            sys(xnew, dxnew, s);
            auto interp = [&](double, double* out) { std::copy(xnew.begin(), xnew.end(), out); };
            if (!observe_through(s, interp)) {
              x.swap(xnew), dxdt.swap(dxnew);
              return;
            }
          }
          x.swap(xnew), dxdt.swap(dxnew);
          sum.t_reached = t_of(s);
          if (!fine) return;
        }
      };
      if (opt.stepper == "rkf78") run(odeint::make_controlled(opt.atol, opt.rtol, opt.max_step, odeint::runge_kutta_fehlberg78<State>()));
      else run(odeint::make_controlled(opt.atol, opt.rtol, opt.max_step, odeint::runge_kutta_cash_karp54<State>()));
    } else if (opt.stepper == "rosenbrock4") {
      FdJacobian jac{&sys, &sum.jacobian_calls};
      odeint::rosenbrock4_controller<odeint::rosenbrock4<double>> stepper(opt.atol, opt.rtol, opt.max_step);
      UState ux(n), uxnew(n);
      std::copy(x.begin(), x.end(), ux.begin());
      auto sysf = [&](const UState& a, UState& b, double tt) { sys(a, b, tt); };
      auto jacf = [&](const UState& a, UMatrix& J, double tt, UState& dfdt) { jac(a, J, tt, dfdt); };
      while (next < times.size()) {
        if (sum.accepted_steps + sum.rejected_steps >= opt.max_steps) {
          sum.status = IntegrateStatus::max_steps;
          sum.message = fmt::format("{} steps reached at t={:.6g}", opt.max_steps, t_of(s));
          break;
        }
        if (underflow(dt)) break;
        const double s_target = s_of(times[next]);
        const bool hit = s + dt >= s_target;
        double dt_try = hit ? s_target - s : dt;
        double h = dt_try;
        if (stepper.try_step(std::make_pair(sysf, jacf), ux, s, uxnew, dt_try) == odeint::fail) {
          ++sum.rejected_steps;
          dt = dt_try;
          continue;
        }
        if (!hit) dt = dt_try;
        record_step(h);
        if (hit) s = s_target;
        State xs(uxnew.begin(), uxnew.end());
        const bool fine = check_state(xs, s);
        if (fine || sum.status == IntegrateStatus::stopped_by_event) {
          auto interp = [&](double, double* out) { std::copy(uxnew.begin(), uxnew.end(), out); };
          if (!observe_through(s, interp)) {
            ux.swap(uxnew);
            break;
          }
        }
        ux.swap(uxnew);
        sum.t_reached = t_of(s);
        if (!fine) break;
      }
    } else {
      throw InputError("stepper", "unknown stepper '" + opt.stepper + "'; allowed: dopri5|rkf78|cash_karp54|rosenbrock4");
    }
  } catch (const RhsFailure& e) {
    sum.status = e.component >= 0 ? IntegrateStatus::nonfinite : IntegrateStatus::failed;
    sum.message = e.component >= 0
                      ? fmt::format("{} in {} at t={:.6g}", e.what, name_of(opt, e.component), e.t)
                      : fmt::format("right-hand side failed at t={:.6g}: {}", e.t, e.what);
  }
  return finish();
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

std::vector<double> lin_spaced(double t_min, double t_max, int n) {
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(n == 1 ? t_max : (i == n - 1 ? t_max : t_min + (t_max - t_min) * i / (n - 1)));
  return out;
}

}  // namespace hdat
