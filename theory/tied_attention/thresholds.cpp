#include "hdat/tied_attention/thresholds.hpp"

#include <algorithm>
#include <boost/math/tools/minima.hpp>
#include <boost/math/tools/roots.hpp>
#include <cmath>

#include "hdat/core/error.hpp"
#include "hdat/tied_attention/prior.hpp"
#include "hdat/tied_attention/state_evolution.hpp"
#include "hdat/core/roots.hpp"

namespace hdat::tied_attention {


double constraint_factor(int T) {
  if (T < 1) throw InputError("T", "must be >= 1");
  return T == 1 ? 1.0 : 2.0 / (T * T + T - 2);
}

InterpolationThreshold alpha_interp(const std::shared_ptr<const TargetLaw>& target, double noise, int T, LawMethod method) {
  InterpolationThreshold r;
  if (!(noise > 0)) return r;
  const double Q0 = target->second_moment();
  auto K = [&](double delta, JValues* out = nullptr) {
    const auto mu = make_law(target, delta, method);
    const JValues j = j_values(*mu, 0.0);
    if (out) *out = j;
    return j.J - 0.5 * delta * j.dJ_ddelta - Q0 - noise / 2;
  };
  // K(0⁺) = −Δ/2 < 0; K grows linearly at large δ. First sign change on a log grid from small δ.
  const double scale = std::sqrt(Q0 + noise / 2);
  double lo = 1e-3 * scale, klo = K(lo);
  if (!(klo < 0)) {  // very large Δ relative to the grid start: walk down
    for (int k = 0; k < 40 && klo >= 0; ++k) klo = K(lo *= 0.25);
    if (!(klo < 0)) return r;
  }
  double hi = lo, khi = klo;
  for (int k = 0; k < 400 && khi < 0; ++k) {
    lo = hi;
    klo = khi;
    hi *= 1.25;
    khi = K(hi);
  }
  if (!(khi >= 0)) return r;
  r.delta_bar = toms748_root([&](double d) { return K(d); }, lo, hi, klo, khi);
  JValues j;
  K(r.delta_bar, &j);
  r.alpha = constraint_factor(T) * j.dJ_ddelta / (4 * r.delta_bar);
  r.ok = std::isfinite(r.alpha);
  return r;
}

double semicircle_tail_moment(double s, int k) {
  if (s >= 2) return 0.0;
  if (s <= -2) return k == 0 ? 1.0 : k == 1 ? -s : 1 + s * s;
  // x = 2 cos θ: ∫ (x − s)^k σ(dx) = (2/π) ∫_0^{θs} (2 cos θ − s)^k sin²θ dθ, θs = arccos(s/2).
  const double th = std::acos(s / 2), sn = std::sin(th);
  const double I0 = th / 2 - std::sin(2 * th) / 4;  // ∫ sin²
  switch (k) {
    case 0:
      return (2 / M_PI) * I0;
    case 1:
      return (2 / M_PI) * (2 * sn * sn * sn / 3 - s * I0);
    case 2:
      return (2 / M_PI) * (4 * (th / 8 - std::sin(4 * th) / 32) - 4 * s * sn * sn * sn / 3 + s * s * I0);
    default:
      throw std::invalid_argument("semicircle_tail_moment: k must be 0, 1 or 2");
  }
}

PerfectRecovery alpha_perf(double kappa0, int T) {
  PerfectRecovery r;
  const double c = constraint_factor(T);
  if (kappa0 >= 1) {
    r.alpha = c * 0.5;
    return r;
  }
  const double k = kappa0;
  auto f = [k](double s) { return k * (1 - k) * s * s / 2 + (1 - k) * (1 - k) / 2 * semicircle_tail_moment(s, 2); };
  const auto m = boost::math::tools::brent_find_minima(f, 0.0, 2.0, 52);
  r.s_star = m.first;
  r.alpha = c * (k - k * k / 2 + m.second);
  return r;
}

double alpha_interp_noiseless_limit(double kappa0, int T) {
  const double c = constraint_factor(T);
  if (kappa0 >= 1) return c * 0.5;
  return c * (kappa0 - kappa0 * kappa0 / 2 + (1 - kappa0) * (1 - kappa0) / 4);
}

double alpha_pr(double kappa0, int T) {
  const double k = std::min(kappa0, 1.0);
  return constraint_factor(T) * (k - k * k / 2);
}

double target_rank_fraction(const TargetLaw& target) {
  if (const auto* w = dynamic_cast<const WishartTarget*>(&target)) return std::min(1.0, w->kappa0());
  double zero = 0;
  const auto& s = target.values();
  const auto& w = target.weights();
  for (std::size_t i = 0; i < s.size(); ++i)
    if (std::fabs(s[i]) <= 1e-14) zero += w[i];
  return 1 - zero;
}

double rie_mmse(const std::shared_ptr<const TargetLaw>& target, double v, LawMethod method) {
  const auto mu = make_law(target, std::sqrt(v), method);
  const double r3 = rho_cubed(*mu);
  return v - (4 * M_PI * M_PI / 3) * v * v * r3;
}

namespace {

std::vector<BayesPoint> bayes_by_state_evolution(const std::shared_ptr<const TargetLaw>& target, double noise, int T,
                                                 BayesChannel channel, const std::vector<double>& alphas,
                                                 const ChannelInformationOptions& information) {
  StateEvolutionOptions o;
  o.T = T;
  o.channel = channel;
  o.noise = noise;
  o.prior = target;
  o.information = information;
  const StateEvolution se(o);
  std::vector<BayesPoint> out;
  for (double alpha : alphas) {
    const StateEvolutionRun r = se.run(alpha);
    BayesPoint b;
    b.alpha = alpha;
    b.mmse = r.mse();
    b.mmse_se = r.mse_se;
    b.v = r.steps.back().delta * r.steps.back().delta;
    b.q = se.Q0() - b.mmse;
    b.qhat = b.v > 0 ? 1 / b.v : std::numeric_limits<double>::infinity();
    b.roots = 1;
    b.ok = r.converged;
    out.push_back(b);
  }
  return out;
}

}  // namespace

std::vector<BayesPoint> bayes_optimal_curve(const std::shared_ptr<const TargetLaw>& target, double noise, int T,
                                            const std::vector<double>& alphas, LawMethod method) {
  return bayes_optimal_curve(target, noise, T, T == 1 ? BayesChannel::linear : BayesChannel::softmax, alphas, method);
}

std::vector<BayesPoint> bayes_optimal_curve(const std::shared_ptr<const TargetLaw>& target, double noise, int T,
                                            BayesChannel channel, const std::vector<double>& alphas, LawMethod method,
                                            const ChannelInformationOptions& information) {
  if (channel == BayesChannel::hardmax) return bayes_by_state_evolution(target, noise, T, channel, alphas, information);
  const double Q0 = target->second_moment();
  const int K = T * (T + 1) / 2;
  const double identifiable = channel == BayesChannel::softmax ? K - 1 : K;  // fields the labels fix
  std::vector<BayesPoint> out;
  // mmse(v) on a log grid of v, reused for every α (bracketing), then refined per root.
  // 5 points per decade are enough to bracket (each root is then refined by TOMS 748): every
  // mmse(v) costs a free convolution, which is expensive for a large discrete spectrum.
  const double vmax = 1e4 * (Q0 + 1), vmin = 1e-8 * (Q0 + 1);
  const int n = 61;
  std::vector<double> vg(n), mg(n);
  for (int i = 0; i < n; ++i) {
    vg[static_cast<std::size_t>(i)] = vmin * std::pow(vmax / vmin, static_cast<double>(i) / (n - 1));
    mg[static_cast<std::size_t>(i)] = rie_mmse(target, vg[static_cast<std::size_t>(i)], method);
  }
  for (double alpha : alphas) {
    BayesPoint b;
    b.alpha = alpha;
    const double a_eff = alpha * identifiable;
    // Fixed point in w = δ² = 1/q̂: mmse(w) + Δ/2 = 2 α_eff w. F > 0 at small w (or = 0 when Δ = 0),
    // F → Q0 − mean² + Δ/2 − 2α w < 0 at large w.
    auto F = [&](double v) { return rie_mmse(target, v, method) + noise / 2 - 2 * a_eff * v; };
    double root = 0;
    for (int i = n - 1; i > 0; --i) {
      const auto I = static_cast<std::size_t>(i);
      const double fa = mg[I - 1] + noise / 2 - 2 * a_eff * vg[I - 1];
      const double fb = mg[I] + noise / 2 - 2 * a_eff * vg[I];
      if (fa > 0 && fb <= 0) {
        if (b.roots == 0) root = toms748_root(F, vg[I - 1], vg[I], fa, fb, 32);
        ++b.roots;
      }
    }
    if (b.roots == 0) {
      // No positive root: perfect recovery (Δ = 0, α above α_PR), v → 0.
      b.v = 0;
      b.mmse = 0;
      b.q = Q0;
      b.qhat = std::numeric_limits<double>::infinity();
      b.ok = (noise == 0);
    } else {
      b.v = root;
      b.mmse = rie_mmse(target, root, method);
      b.q = Q0 - b.mmse;
      b.qhat = 1 / root;
      b.ok = true;
    }
    out.push_back(b);
  }
  return out;
}

}  // namespace hdat::tied_attention
