#include "hdat/core/fixed_point.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <deque>
#include <stdexcept>

#include "hdat/core/error.hpp"
#include "hdat/core/progress.hpp"

namespace hdat {

FixedPointMethod fixed_point_method_from_name(const std::string& name) {
  if (name == "damped") return FixedPointMethod::damped;
  if (name == "anderson") return FixedPointMethod::anderson;
  if (name == "newton") return FixedPointMethod::newton;
  throw std::invalid_argument("fixed-point method '" + name + "' unknown; allowed: damped|anderson|newton");
}

std::string fixed_point_method_name(FixedPointMethod method) {
  switch (method) {
    case FixedPointMethod::damped: return "damped";
    case FixedPointMethod::anderson: return "anderson";
    case FixedPointMethod::newton: return "newton";
  }
  return "?";
}

void FixedPointOptions::validate() const {
  auto refuse = [](const char* option, const char* allowed) {
    throw std::invalid_argument(fmt::format("FixedPointOptions.{} must be {}", option, allowed));
  };
  if (!(damping > 0 && damping <= 1)) refuse("damping", "in (0, 1]");
  if (method == FixedPointMethod::anderson && anderson_memory < 1) refuse("anderson_memory", ">= 1");
  if (!(tolerance > 0) || !std::isfinite(tolerance)) refuse("tolerance", "> 0 and finite");
  if (max_iterations < 1) refuse("max_iterations", ">= 1");
  if (!(jacobian_step > 0 && jacobian_step < 1)) refuse("jacobian_step", "in (0, 1)");
  if (line_search_halvings < 0) refuse("line_search_halvings", ">= 0");
}

nlohmann::json FixedPointSummary::to_json() const {
  return {{"method", method},   {"converged", converged},          {"iterations", iterations},
          {"evaluations", evaluations}, {"residual", residual},    {"residual_history", residual_history},
          {"seconds", seconds}, {"message", message}};
}

std::string FixedPointSummary::brief() const {
  return fmt::format("{} after {} {} iterations (residual {:.2e}, {} evaluations, {:.2f} s){}", converged ? "converged" : "NOT converged",
                     iterations, method, residual, evaluations, seconds, message.empty() ? "" : ": " + message);
}

namespace {

// The residual F and the map value g = x + F at one point, in whichever form the problem is given
// (each computed from the other only where the method needs it, so the given form is never rounded).
struct Problem {
  const VectorFunction& function;
  bool is_map;  // function = g (x = g(x)) or f (f(x) = 0)
  FixedPointSummary& summary;
  Eigen::VectorXd residual(const Eigen::VectorXd& x) const {
    ++summary.evaluations;
    return is_map ? Eigen::VectorXd(function(x) - x) : function(x);
  }
};

double size_of(const Eigen::VectorXd& residual, const Eigen::VectorXd& x, bool relative) {
  const double r = residual.cwiseAbs().maxCoeff();
  return relative ? r / std::max(1.0, x.cwiseAbs().maxCoeff()) : r;
}

// Damped iteration, with Anderson mixing of the last m steps when asked.
Eigen::VectorXd iterate(const Problem& problem, Eigen::VectorXd x, const FixedPointOptions& o, const Admissibility& admissible) {
  FixedPointSummary& s = problem.summary;
  const double theta = o.damping;
  const bool mixing = o.method == FixedPointMethod::anderson;
  std::deque<Eigen::VectorXd> dX, dF;
  Eigen::VectorXd x_prev, f_prev;
  bool have_prev = false;
  auto ok = [&](const Eigen::VectorXd& y) { return !admissible || admissible(y); };
  for (s.iterations = 0; s.iterations < o.max_iterations; ++s.iterations) {
    Eigen::VectorXd g, f;
    if (problem.is_map) {
      ++s.evaluations;
      g = problem.function(x);
      f = g - x;
    } else {
      f = problem.residual(x);
    }
    s.residual = size_of(f, x, o.relative);
    s.residual_history.push_back(s.residual);
    if (!std::isfinite(s.residual)) throw NumericalError("fixed point: non-finite residual at iteration " + std::to_string(s.iterations));
    if (s.residual <= o.tolerance) {
      s.converged = true;
      return problem.is_map ? g : x;  // a map's last value is consistent with the state it last saw
    }
    if (mixing && have_prev) {
      dX.push_back(x - x_prev);
      dF.push_back(f - f_prev);
      if (static_cast<int>(dX.size()) > o.anderson_memory) dX.pop_front(), dF.pop_front();
    }
    x_prev = x;
    f_prev = f;
    have_prev = true;
    Eigen::VectorXd next = x + theta * f;
    if (!dF.empty()) {
      // Anderson: the combination of the last steps that minimises the mixed residual.
      const auto m = static_cast<Eigen::Index>(dF.size());
      Eigen::MatrixXd Fm(x.size(), m), Xm(x.size(), m);
      for (Eigen::Index c = 0; c < m; ++c) Fm.col(c) = dF[static_cast<std::size_t>(c)], Xm.col(c) = dX[static_cast<std::size_t>(c)];
      const Eigen::VectorXd gamma = Fm.completeOrthogonalDecomposition().solve(f);
      const Eigen::VectorXd mixed = x - Xm * gamma + theta * (f - Fm * gamma);
      if (ok(mixed) && gamma.cwiseAbs().maxCoeff() < 1e3) next = mixed;
      else dX.clear(), dF.clear();
    }
    if (!ok(next)) next = x + theta * f;  // a convex combination of admissible points
    x = next;
  }
  s.message = fmt::format("no convergence in {} iterations (residual {:.3e})", o.max_iterations, s.residual);
  return x;
}

// Newton with a backtracking line search on max|F|.
Eigen::VectorXd newton(const Problem& problem, Eigen::VectorXd x, const FixedPointOptions& o, const Admissibility& admissible) {
  FixedPointSummary& s = problem.summary;
  const VectorFunction F = [&](const Eigen::VectorXd& y) { return problem.residual(y); };
  Eigen::VectorXd fx = F(x);
  s.residual = size_of(fx, x, o.relative);
  s.residual_history.push_back(s.residual);
  for (s.iterations = 0; s.iterations < o.max_iterations; ++s.iterations) {
    if (!std::isfinite(s.residual)) throw NumericalError("fixed point: non-finite residual at iteration " + std::to_string(s.iterations));
    if (s.residual <= o.tolerance) {
      s.converged = true;
      return x;
    }
    const Eigen::VectorXd dx = central_difference_jacobian(F, x, o.jacobian_step).colPivHouseholderQr().solve(fx);
    double step = 1.0;
    bool improved = false;
    for (int halving = 0; halving <= o.line_search_halvings; ++halving, step *= 0.5) {
      const Eigen::VectorXd xn = x - step * dx;
      if (admissible && !admissible(xn)) continue;
      const Eigen::VectorXd fn = F(xn);
      if (fn.allFinite() && fn.cwiseAbs().maxCoeff() < fx.cwiseAbs().maxCoeff()) {
        x = xn, fx = fn, improved = true;
        break;
      }
    }
    s.residual = size_of(fx, x, o.relative);
    s.residual_history.push_back(s.residual);
    if (!improved) {
      s.message = "the line search did not reduce the residual";
      ++s.iterations;
      return x;
    }
  }
  s.converged = s.residual <= o.tolerance;
  if (!s.converged) s.message = fmt::format("no convergence in {} iterations (residual {:.3e})", o.max_iterations, s.residual);
  return x;
}

Eigen::VectorXd solve(const VectorFunction& function, bool is_map, Eigen::VectorXd x0, const FixedPointOptions& options,
                      FixedPointSummary& summary, const Admissibility& admissible) {
  options.validate();
  const auto t0 = std::chrono::steady_clock::now();
  summary = FixedPointSummary{};
  summary.method = fixed_point_method_name(options.method);
  const Problem problem{function, is_map, summary};
  Eigen::VectorXd x = options.method == FixedPointMethod::newton ? newton(problem, std::move(x0), options, admissible)
                                                                 : iterate(problem, std::move(x0), options, admissible);
  summary.seconds = seconds_since(t0);
  return x;
}

}  // namespace

Eigen::MatrixXd central_difference_jacobian(const VectorFunction& f, const Eigen::VectorXd& x, double step) {
  const Eigen::Index n = x.size();
  Eigen::MatrixXd J;
  for (Eigen::Index k = 0; k < n; ++k) {
    const double h = step * std::max(1.0, std::fabs(x(k)));
    Eigen::VectorXd xp = x, xm = x;
    xp(k) += h, xm(k) -= h;
    const Eigen::VectorXd column = (f(xp) - f(xm)) / (2 * h);
    if (k == 0) J.resize(column.size(), n);
    J.col(k) = column;
  }
  return J;
}

Eigen::VectorXd solve_fixed_point(const VectorFunction& map, Eigen::VectorXd x0, const FixedPointOptions& options,
                                  FixedPointSummary& summary, const Admissibility& admissible) {
  return solve(map, true, std::move(x0), options, summary, admissible);
}

Eigen::VectorXd solve_stationary_point(const VectorFunction& flow, Eigen::VectorXd x0, const FixedPointOptions& options,
                                       FixedPointSummary& summary, const Admissibility& admissible) {
  return solve(flow, false, std::move(x0), options, summary, admissible);
}

}  // namespace hdat
