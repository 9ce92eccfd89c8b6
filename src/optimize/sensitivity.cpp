#include "hdat/optimize/sensitivity.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/math/tools/roots.hpp>
#include <cmath>

#include "hdat/core/error.hpp"

namespace hdat::optimize {

std::string objective_name(Objective o) {
  switch (o) {
    case Objective::final_risk: return "final";
    case Objective::average_risk: return "average";
    case Objective::time_to_target: return "time_to_target";
  }
  return "?";
}

Objective objective_from_name(const std::string& name, const std::string& key) {
  for (Objective o : {Objective::final_risk, Objective::average_risk, Objective::time_to_target})
    if (name == objective_name(o)) return o;
  throw InputError(key, "unknown objective '" + name + "' (allowed: final|average|time_to_target)");
}

// ---------------------------------------------------------------------------------------------------
// Protocol

int Protocol::size() const {
  int n = static_cast<int>(final_values.size());
  for (const auto& s : schedules) n += static_cast<int>(s.theta.size());
  return n;
}

Eigen::VectorXd Protocol::pack() const {
  Eigen::VectorXd out(size());
  int at = 0;
  for (const auto& s : schedules) {
    out.segment(at, s.theta.size()) = s.theta;
    at += static_cast<int>(s.theta.size());
  }
  out.tail(final_values.size()) = final_values;
  return out;
}

void Protocol::unpack(const Eigen::VectorXd& theta) {
  if (theta.size() != size()) throw std::invalid_argument("Protocol::unpack: wrong size");
  int at = 0;
  for (auto& s : schedules) {
    s.theta = theta.segment(at, s.theta.size());
    at += static_cast<int>(s.theta.size());
  }
  final_values = theta.tail(final_values.size());
}

Schedule Protocol::schedule() const {
  Schedule s;
  s.controls = schedules;
  for (std::size_t k = 0; k < finals.size(); ++k) s.finals[finals[k]] = final_values(static_cast<Eigen::Index>(k));
  return s;
}

std::vector<std::string> Protocol::parameter_names() const {
  std::vector<std::string> out;
  for (const auto& s : schedules)
    for (const auto& p : shape_parameter_names(s.shape, static_cast<int>(s.theta.size()))) out.push_back(s.control + "." + p);
  for (const auto& f : finals) out.push_back(f);
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Evaluator

struct Evaluator::Segment {
  double a = 0, b = 0;
  std::vector<int> active;  ///< packed θ indices whose sensitivities S holds (columns)
  Eigen::MatrixXd Phi, S;
};

namespace {

// Where each packed parameter acts: its control's index in u.
struct Layout {
  std::vector<int> schedule_control, schedule_offset, final_control;
  int final_offset = 0;
};

Layout layout_of(const ControlledTheory& theory, const Protocol& p) {
  Layout l;
  int at = 0;
  for (const auto& s : p.schedules) {
    const int c = theory.control_index(s.control);
    if (c < 0) throw InputError("control", "the model has no controllable parameter '" + s.control + "'");
    l.schedule_control.push_back(c);
    l.schedule_offset.push_back(at);
    at += static_cast<int>(s.theta.size());
  }
  l.final_offset = at;
  for (const auto& f : p.finals) {
    const int c = theory.control_index(f);
    if (c < 0) throw InputError("control", "the model has no controllable parameter '" + f + "'");
    l.final_control.push_back(c);
  }
  return l;
}

// The θ entries of one schedule that may move u on the segment whose midpoint is `mid`.
std::vector<int> active_entries(const ControlSchedule& s, double mid) {
  const int size = static_cast<int>(s.theta.size());
  if (s.shape == ScheduleShape::piecewise_constant || s.shape == ScheduleShape::piecewise_linear) {
    const int n = s.intervals();
    const int j = std::clamp(static_cast<int>(std::floor(std::clamp(mid, 0.0, s.t_final) / s.t_final * n)), 0, n - 1);
    if (s.shape == ScheduleShape::piecewise_constant) return {j};
    return {j, j + 1};
  }
  std::vector<int> all(static_cast<std::size_t>(size));
  for (int k = 0; k < size; ++k) all[static_cast<std::size_t>(k)] = k;
  return all;
}

}  // namespace

Evaluator::Evaluator(const ControlledTheory& theory, Eigen::VectorXd x0, ObjectiveSpec objective, IntegrateOptions options)
    : theory_(theory), x0_(std::move(x0)), objective_(objective), options_(std::move(options)) {
  if (x0_.size() != theory_.layout().size()) throw std::invalid_argument("Evaluator: x0 has the wrong size");
  if (!(objective_.t_final > 0)) throw InputError("t_final", "must be positive");
}

Eigen::VectorXd Evaluator::controls_at(const Protocol& p, double t, double where) const {
  Eigen::VectorXd u = theory_.defaults();
  for (const auto& s : p.schedules) u(theory_.control_index(s.control)) = s.value(t, where);
  for (std::size_t k = 0; k < p.finals.size(); ++k) u(theory_.control_index(p.finals[k])) = p.final_values(static_cast<Eigen::Index>(k));
  return u;
}

Evaluation Evaluator::evaluate(const Protocol& protocol, bool gradient) const {
  std::vector<Segment> segments;
  Evaluation ev = forward(protocol, gradient, gradient ? &segments : nullptr);
  return ev;
}

Evaluation Evaluator::forward(const Protocol& protocol, bool gradient, std::vector<Segment>* segments) const {
  const ControlledTheory& th = theory_;
  const Layout lay = layout_of(th, protocol);
  const int n = th.layout().size(), nc = static_cast<int>(th.defaults().size());
  const bool average = objective_.kind == Objective::average_risk, to_target = objective_.kind == Objective::time_to_target;
  const int na = n + (average ? 1 : 0);
  const double T = objective_.t_final;

  // Segment edges: 0, every breakpoint of every schedule, T.
  std::vector<double> edges = {0.0};
  for (const auto& s : protocol.schedules)
    for (double b : s.breakpoints())
      if (b > 0 && b < T) edges.push_back(b);
  edges.push_back(T);
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end(), [](double a, double b) { return b - a <= 1e-12 * std::max(1.0, std::fabs(a)); }),
              edges.end());

  Evaluation ev;
  Eigen::VectorXd xa = Eigen::VectorXd::Zero(na);
  xa.head(n) = x0_;
  // Scratch of the right-hand side (no allocation per call once sized).
  Eigen::VectorXd f(n), rx(n), ru(nc), u(nc);
  Eigen::MatrixXd fx(n, n), fu(n, nc), Fx(na, na), Fu(na, nc), G, sched_grad;
  auto risk_at = [&](const Eigen::VectorXd& x, double t, double where) { return th.risk(x, controls_at(protocol, t, where), nullptr, nullptr); };

  double t_star = std::numeric_limits<double>::quiet_NaN();
  if (to_target && risk_at(x0_, 0, 0) <= objective_.target) t_star = 0;

  for (std::size_t j = 0; j + 1 < edges.size() && std::isnan(t_star); ++j) {
    const double a = edges[j], b = edges[j + 1], mid = 0.5 * (a + b);
    // The θ active on this segment (columns of S) and where each acts.
    std::vector<int> active, active_control;
    for (std::size_t k = 0; k < protocol.schedules.size(); ++k)
      for (int e : active_entries(protocol.schedules[k], mid)) {
        active.push_back(lay.schedule_offset[k] + e);
        active_control.push_back(lay.schedule_control[k]);
      }
    for (std::size_t k = 0; k < protocol.finals.size(); ++k) {
      active.push_back(lay.final_offset + static_cast<int>(k));
      active_control.push_back(lay.final_control[k]);
    }
    const int m = gradient ? static_cast<int>(active.size()) : 0;
    G.setZero(nc, m);
    auto fill_G = [&](double t) {  // G = ∂u/∂θ_active at t
      G.setZero();
      int col = 0;
      for (std::size_t k = 0; k < protocol.schedules.size(); ++k) {
        const ControlSchedule& s = protocol.schedules[k];
        sched_grad.resize(s.theta.size(), 1);
        s.gradient(t, mid, sched_grad.col(0));
        for (int e : active_entries(s, mid)) G(lay.schedule_control[k], col++) = sched_grad(e, 0);
      }
      for (std::size_t k = 0; k < protocol.finals.size(); ++k) G(lay.final_control[k], col++) = 1.0;
    };
    const int dim = na + (gradient ? na * na + na * m : 0);
    auto system = [&](const ConstVecRef& z, VecRef dz, double t) {
      u = controls_at(protocol, t, mid);
      const Eigen::VectorXd x = z.head(n);
      th.drift(x, u, f, gradient ? &fx : nullptr, gradient ? &fu : nullptr);
      dz.head(n) = f;
      double r = 0;
      if (average) {
        r = th.risk(x, u, gradient ? &rx : nullptr, gradient ? &ru : nullptr);
        dz(n) = r / T;
      }
      if (!gradient) return;
      Fx.setZero();
      Fx.topLeftCorner(n, n) = fx;
      Fu.topRows(n) = fu;
      if (average) {
        Fx.row(n).head(n) = rx.transpose() / T;
        Fu.row(n) = ru.transpose() / T;
      }
      fill_G(t);
      const Eigen::Map<const Eigen::MatrixXd> Phi(z.data() + na, na, na), S(z.data() + na + na * na, na, m);
      Eigen::Map<Eigen::MatrixXd>(dz.data() + na, na, na).noalias() = Fx * Phi;
      Eigen::Map<Eigen::MatrixXd> dS(dz.data() + na + na * na, na, m);
      dS.noalias() = Fx * S;
      dS.noalias() += Fu * G;
    };
    auto run_segment = [&](double to, bool with_monitor, double* crossed_lo, double* crossed_hi, Eigen::VectorXd* end) {
      Eigen::VectorXd z0 = Eigen::VectorXd::Zero(dim);
      z0.head(na) = xa;
      if (gradient) Eigen::Map<Eigen::MatrixXd>(z0.data() + na, na, na).setIdentity();
      IntegrateOptions o = options_;
      double t_prev = a;
      if (with_monitor)
        o.step_monitor = [&](double t, const Eigen::VectorXd& z) {
          const Eigen::VectorXd x = z.head(n);
          if (risk_at(x, t, mid) <= objective_.target) {
            *crossed_lo = t_prev;
            *crossed_hi = t;
            return false;
          }
          t_prev = t;
          return true;
        };
      Eigen::VectorXd last = z0;
      const IntegrateSummary sum = integrate(system, z0, a, {to}, [&](double, const Eigen::VectorXd& z) {
        last = z;
        return true;
      }, o);
      ev.rhs_calls += sum.rhs_calls;
      ev.steps += sum.accepted_steps;
      if (!sum.ok()) {
        ev.ok = false;
        ev.message = sum.message;
      }
      *end = last;
      return sum;
    };

    double lo = std::numeric_limits<double>::quiet_NaN(), hi = lo;
    Eigen::VectorXd z_end;
    run_segment(b, to_target, &lo, &hi, &z_end);
    if (!ev.ok) return ev;
    double seg_end = b;
    if (to_target && !std::isnan(hi)) {
      // The crossing lies in (lo, hi]: locate it on the plain flow from the segment's start (toms748
      // on r(x(t)) − target), then integrate the segment's sensitivities up to it.
      auto g = [&](double t) {
        Eigen::VectorXd last = xa;
        if (t > a) {
          auto plain = [&](const ConstVecRef& z, VecRef dz, double tt) {
            const Eigen::VectorXd uu = controls_at(protocol, tt, mid);
            Eigen::VectorXd ff(n);
            th.drift(z.head(n), uu, ff, nullptr, nullptr);
            dz.head(n) = ff;
            if (average) dz(n) = th.risk(z.head(n), uu, nullptr, nullptr) / T;
          };
          integrate(plain, xa, a, {t}, [&](double, const Eigen::VectorXd& z) {
            last = z;
            return true;
          }, options_);
        }
        return risk_at(last.head(n), t, mid) - objective_.target;
      };
      boost::uintmax_t iterations = 60;
      const auto tol = [](double x, double y) { return std::fabs(x - y) <= 1e-13 * std::max(1.0, std::fabs(x)); };
      const double glo = g(lo), ghi = g(hi);
      double root = hi;
      if (glo > 0 && ghi < 0) {
        const auto bracket = boost::math::tools::toms748_solve(g, lo, hi, glo, ghi, tol, iterations);
        root = 0.5 * (bracket.first + bracket.second);
      }
      t_star = root;
      seg_end = root;
      run_segment(root, false, &lo, &hi, &z_end);
      if (!ev.ok) return ev;
    }
    if (segments) {
      Segment seg;
      seg.a = a;
      seg.b = seg_end;
      seg.active = active;
      seg.Phi = Eigen::Map<const Eigen::MatrixXd>(z_end.data() + na, na, na);
      seg.S = Eigen::Map<const Eigen::MatrixXd>(z_end.data() + na + na * na, na, m);
      segments->push_back(std::move(seg));
    }
    xa = z_end.head(na);
  }

  // The objective at the end, ∂J/∂x there (λ) and its direct dependence on θ.
  const double t_end = std::isnan(t_star) ? T : t_star;
  const double where = segments && !segments->empty() ? 0.5 * (segments->back().a + segments->back().b) : t_end;
  const Eigen::VectorXd x_end = xa.head(n), u_end = controls_at(protocol, t_end, where);
  const double r_end = th.risk(x_end, u_end, gradient ? &rx : nullptr, gradient ? &ru : nullptr);
  ev.final_risk = r_end;
  ev.average_risk = average ? xa(n) : std::numeric_limits<double>::quiet_NaN();
  ev.time_to_target = t_star;
  Eigen::VectorXd lambda = Eigen::VectorXd::Zero(na);
  Eigen::RowVectorXd direct_u = Eigen::RowVectorXd::Zero(nc);  // ∂J/∂u at the end
  switch (objective_.kind) {
    case Objective::final_risk:
      ev.objective = r_end;
      if (gradient) lambda.head(n) = rx, direct_u = ru.transpose();
      break;
    case Objective::average_risk:
      ev.objective = xa(n);
      if (gradient) lambda(n) = 1;
      break;
    case Objective::time_to_target:
      if (!std::isnan(t_star)) {
        ev.objective = t_star;
        if (gradient && t_star > 0) {
          // r(x(t*)) = target: dt*/dθ = −(r_x dx/dθ + r_u du/dθ)/(dr/dt), dr/dt = r_x f (u's schedules do not enter r).
          th.drift(x_end, u_end, f, nullptr, nullptr);
          const double rate = rx.dot(f);
          if (rate < 0) lambda.head(n) = -rx / rate, direct_u = -ru.transpose() / rate;
        }
      } else {
        ev.objective = T + (r_end - objective_.target) / objective_.fallback_rate;
        if (gradient) lambda.head(n) = rx / objective_.fallback_rate, direct_u = ru.transpose() / objective_.fallback_rate;
      }
      break;
  }
  if (!gradient) return ev;

  ev.gradient = Eigen::VectorXd::Zero(protocol.size());
  if (!segments->empty()) {  // the direct dependence on the θ active at the end (e.g. p_f)
    const Segment& last = segments->back();
    G.setZero(nc, static_cast<Eigen::Index>(last.active.size()));
    int col = 0;
    for (std::size_t k = 0; k < protocol.schedules.size(); ++k) {
      const ControlSchedule& s = protocol.schedules[k];
      sched_grad.resize(s.theta.size(), 1);
      s.gradient(t_end, where, sched_grad.col(0));
      for (int e : active_entries(s, where)) G(lay.schedule_control[k], col++) = sched_grad(e, 0);
    }
    for (std::size_t k = 0; k < protocol.finals.size(); ++k) G(lay.final_control[k], col++) = 1.0;
    const Eigen::RowVectorXd d = direct_u * G;
    for (std::size_t c = 0; c < last.active.size(); ++c) ev.gradient(last.active[c]) += d(static_cast<Eigen::Index>(c));
  }
  for (auto it = segments->rbegin(); it != segments->rend(); ++it) {
    const Eigen::VectorXd g = it->S.transpose() * lambda;
    for (std::size_t c = 0; c < it->active.size(); ++c) ev.gradient(it->active[c]) += g(static_cast<Eigen::Index>(c));
    lambda = it->Phi.transpose() * lambda;
  }
  return ev;
}

Table Evaluator::curve(const Protocol& protocol, const std::vector<double>& times) const {
  const ControlledTheory& th = theory_;
  const int n = th.layout().size();
  std::vector<std::string> columns = {"t", th.risk_name()};
  for (const auto& s : protocol.schedules) columns.push_back(s.control);
  Table table(columns);
  const double T = objective_.t_final;
  std::vector<double> edges = {0.0};
  for (const auto& s : protocol.schedules)
    for (double b : s.breakpoints()) edges.push_back(b);
  const double t_last = times.empty() ? T : std::max(T, times.back());
  edges.push_back(t_last);
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  Eigen::VectorXd x = x0_;
  auto add_row = [&](double t, const Eigen::VectorXd& state, double where) {
    const Eigen::VectorXd u = controls_at(protocol, t, where);
    std::vector<double> row = {t, th.risk(state, u, nullptr, nullptr)};
    for (const auto& s : protocol.schedules) row.push_back(u(th.control_index(s.control)));
    table.add_row(row);
  };
  Eigen::VectorXd f(n);
  for (std::size_t j = 0; j + 1 < edges.size(); ++j) {
    const double a = edges[j], b = edges[j + 1], mid = 0.5 * (a + b);
    std::vector<double> obs;
    for (double t : times)
      if (t > a && t <= b) obs.push_back(t);
    if (obs.empty() || obs.back() < b) obs.push_back(b);
    auto system = [&](const ConstVecRef& z, VecRef dz, double t) {
      th.drift(z, controls_at(protocol, t, mid), f, nullptr, nullptr);
      dz = f;
    };
    Eigen::VectorXd last = x;
    const auto on_time = [&](double t, const Eigen::VectorXd& z) {
      last = z;
      if (std::find(times.begin(), times.end(), t) != times.end()) add_row(t, z, mid);
      return true;
    };
    if (j == 0 && !times.empty() && times.front() == a) add_row(a, x, mid);
    const IntegrateSummary s = integrate(system, x, a, obs, on_time, options_);
    if (!s.ok()) throw NumericalError("optimize: the theory failed along the protocol: " + s.message);
    x = last;
  }
  return table;
}

}  // namespace hdat::optimize
