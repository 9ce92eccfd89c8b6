#include "hdat/tied_attention/state_evolution.hpp"

#include <chrono>
#include <cmath>

#include "hdat/core/error.hpp"
#include "hdat/tied_attention/prior.hpp"

namespace hdat::tied_attention {

void StateEvolutionOptions::validate() const {
  if (!prior) throw InputError("target", "the state evolution needs the target's spectral law");
  if (!(noise >= 0)) throw InputError("noise", "must be >= 0");
  if (max_iter < 1) throw InputError("amp_max_iter", "must be >= 1");
  if (!(tol > 0)) throw InputError("amp_tol", "must be > 0");
}

nlohmann::json StateEvolutionRun::summary_json() const {
  return {{"alpha", alpha},         {"iterations", steps.empty() ? 0 : static_cast<int>(steps.size()) - 1},
          {"converged", converged}, {"perfect_recovery", perfect_recovery},
          {"mse", mse()},           {"seconds", seconds},
          {"message", message}};
}

StateEvolution::StateEvolution(StateEvolutionOptions options)
    : opt_((options.validate(), std::move(options))), info_(opt_.T, opt_.channel, opt_.noise, opt_.information) {
  Q0_ = opt_.prior->second_moment();
  m0_ = opt_.prior->mean();
}

double StateEvolution::mmse(double delta2) const {
  if (!(delta2 > 0)) return 0.0;
  const auto law = make_law(opt_.prior, std::sqrt(delta2));
  const double r3 = rho_cubed(*law, opt_.quadrature);
  return delta2 - opt_.shrinkage_factor * (4 * M_PI * M_PI / 3) * delta2 * delta2 * r3;
}

double StateEvolution::step(double alpha, double v, double scale) const {
  const double I = scale * opt_.information_factor * info_(Q0_ - v, v);
  return std::isfinite(I) ? mmse(1 / (2 * alpha * I)) : 0.0;
}

double StateEvolution::fixed_point_se(double alpha, double v, const ChannelInformation::Value& info) const {
  // v* = F(v*, I): δv* = (∂F/∂ log I) (δI/I) / (1 − ∂F/∂v), derivatives by central differences
  // (common random numbers keep F smooth in v).
  const double e = 1e-3, h = 1e-4 * std::max(v, 1e-6);
  const double dF_dlogI = (step(alpha, v, 1 + e) - step(alpha, v, 1 - e)) / (2 * e);
  const double dF_dv = (step(alpha, v + h) - step(alpha, v - h)) / (2 * h);
  return std::fabs(dF_dlogI * info.se / info.information / (1 - dF_dv));
}

StateEvolutionRun StateEvolution::run(double alpha, int steps) const {
  if (!(alpha > 0)) throw InputError("alphas", "sample ratios must be > 0");
  const auto t0 = std::chrono::steady_clock::now();
  StateEvolutionRun r;
  r.alpha = alpha;
  const int n = steps >= 0 ? steps : opt_.max_iter;
  double v = Q0_ - m0_ * m0_;
  for (int t = 0;; ++t) {
    StateEvolutionStep s;
    s.t = t;
    s.v = v;
    s.q = Q0_ - v;
    if (r.converged && !r.perfect_recovery) {  // at the fixed point: the same update again
      s.information = r.steps.back().information;
      s.information_se = r.steps.back().information_se;
      s.delta = r.steps.back().delta;
    } else if (!r.perfect_recovery) {
      const auto info = info_.evaluate(s.q, v);
      s.information = opt_.information_factor * info.information;
      s.information_se = opt_.information_factor * info.se;
      s.delta = std::isfinite(s.information) ? 1 / std::sqrt(2 * alpha * s.information) : 0.0;
    }
    r.steps.push_back(s);
    if (t >= n) break;
    if (r.converged && steps < 0) break;
    // Once converged (or recovered), the trajectory stays at its fixed point.
    const double next = r.perfect_recovery ? 0.0 : r.converged ? v : mmse(s.delta * s.delta);
    if (!std::isfinite(next)) throw NumericalError("state evolution: non-finite MSE at step " + std::to_string(t + 1));
    if (!r.converged && !r.perfect_recovery) {
      if (next <= opt_.recovery_floor * Q0_) {
        r.perfect_recovery = r.converged = true;
        r.message = "perfect recovery at step " + std::to_string(t + 1);
      } else if (std::fabs(next - v) <= opt_.tol * v) {  // relative: a decay to 0 is not a fixed point
        r.converged = true;
        r.message = "converged at step " + std::to_string(t + 1);
      }
    }
    v = r.perfect_recovery ? 0.0 : next;
  }
  if (!r.converged) r.message = "not converged after " + std::to_string(n) + " steps";
  if (r.converged && !r.perfect_recovery && info_.sampled()) {
    const StateEvolutionStep& last = r.steps.back();
    r.mse_se = fixed_point_se(alpha, last.v, {last.information, last.information_se});
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace hdat::tied_attention
