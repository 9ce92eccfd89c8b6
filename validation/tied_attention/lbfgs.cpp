#include "hdat/tied_attention/lbfgs.hpp"

#include <cmath>
#include <deque>

namespace hdat::tied_attention {

LbfgsSummary lbfgs_minimize(const Objective& f, Eigen::VectorXd& x, const LbfgsOptions& opt) {
  LbfgsSummary sum;
  const Eigen::Index n = x.size();
  Eigen::VectorXd g(n), gn(n), xn(n), dir(n);
  double fx = f(x, g);
  ++sum.evaluations;
  std::deque<Eigen::VectorXd> S, Y;
  std::deque<double> rho;
  int quiet = 0;
  for (long it = 0; it < opt.max_iter; ++it) {
    sum.iterations = it + 1;
    if (!std::isfinite(fx)) {
      sum.message = "non-finite objective";
      break;
    }
    const double gnorm = g.norm();
    if (gnorm <= opt.grad_tol * std::max(1.0, std::fabs(fx))) {
      sum.converged = true;
      sum.message = "gradient tolerance";
      break;
    }
    // Two-loop recursion.
    dir = -g;
    std::vector<double> a(S.size());
    for (std::size_t i = S.size(); i-- > 0;) {
      a[i] = rho[i] * S[i].dot(dir);
      dir -= a[i] * Y[i];
    }
    if (!S.empty()) dir *= S.back().dot(Y.back()) / Y.back().squaredNorm();
    else dir *= 1.0 / std::max(gnorm, 1e-300);  // first step of length 1 along −g
    for (std::size_t i = 0; i < S.size(); ++i) {
      const double b = rho[i] * Y[i].dot(dir);
      dir += S[i] * (a[i] - b);
    }
    double slope = g.dot(dir);
    if (!(slope < 0)) {  // not a descent direction: reset the memory
      S.clear();
      Y.clear();
      rho.clear();
      dir = -g / std::max(gnorm, 1e-300);
      slope = g.dot(dir);
    }
    double step = 1.0, fn = 0;
    bool ok = false;
    for (int ls = 0; ls < 60; ++ls) {
      xn = x + step * dir;
      fn = f(xn, gn);
      ++sum.evaluations;
      if (std::isfinite(fn) && fn <= fx + opt.armijo * step * slope) {
        ok = true;
        break;
      }
      step *= 0.5;
    }
    if (!ok) {
      sum.message = "line search failed";
      sum.converged = std::fabs(slope) <= 1e-12 * std::max(1.0, std::fabs(fx));
      break;
    }
    Eigen::VectorXd s = xn - x, y = gn - g;
    const double sy = s.dot(y);
    if (sy > 1e-12 * s.norm() * y.norm()) {
      S.push_back(std::move(s));
      Y.push_back(std::move(y));
      rho.push_back(1.0 / sy);
      if (static_cast<int>(S.size()) > opt.memory) {
        S.pop_front();
        Y.pop_front();
        rho.pop_front();
      }
    }
    const double change = std::fabs(fn - fx);
    x.swap(xn);
    g.swap(gn);
    fx = fn;
    quiet = (change <= opt.rel_tol * std::max(1.0, std::fabs(fx))) ? quiet + 1 : 0;
    if (quiet >= opt.patience) {
      sum.converged = true;
      sum.message = "objective tolerance";
      break;
    }
  }
  if (sum.message.empty()) sum.message = "iteration limit";
  sum.f = fx;
  sum.grad_norm = g.norm();
  return sum;
}

}  // namespace hdat::tied_attention
