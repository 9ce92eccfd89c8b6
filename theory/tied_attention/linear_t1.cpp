#include "hdat/tied_attention/linear_t1.hpp"

#include <algorithm>
#include <boost/math/tools/roots.hpp>
#include <chrono>
#include <cmath>
#include <limits>

#include "hdat/core/error.hpp"
#include "hdat/core/roots.hpp"

namespace hdat::tied_attention {


nlohmann::json FixedPointState::to_json() const {
  return {{"alpha", alpha},   {"delta", delta}, {"t", t},       {"eps", eps},         {"eta", eta},
          {"q", q},           {"m", m},         {"Sigma", Sigma}, {"qhat", qhat},     {"mhat", mhat},
          {"Sigmahat", Sigmahat}, {"mse", mse}, {"train_loss", train_loss}, {"test_error", test_error},
          {"rank", rank},     {"trace", trace}, {"objective", objective}, {"converged", converged},
          {"branches", branches}, {"residual", residual}, {"message", message}};
}

nlohmann::json LinearSummary::to_json() const {
  return {{"solver", "T=1 closed form: pseudo-arclength continuation of G(delta, t) = 0 in (log delta, log t), TOMS 748 corrector and alpha crossings"},
          {"converged", converged},
          {"J_evaluations", j_evaluations},
          {"laws_built", law_constructions},
          {"quadrature_evaluations", quadrature_evaluations},
          {"max_quadrature_rel_error", max_quadrature_error},
          {"folds", folds},
          {"delta_range", {delta_min, delta_max}},
          {"wall_seconds", wall_seconds},
          {"message", message}};
}

LinearT1Solver::LinearT1Solver(LinearProblem problem, LinearOptions options)
    : problem_(std::move(problem)), options_(options) {
  if (!problem_.target) throw InputError("target", "missing target law");
  if (!(problem_.lambda > 0)) throw InputError("lambda", "must be > 0");
  if (!(problem_.noise >= 0)) throw InputError("noise", "must be >= 0");
  Q0_ = problem_.target->second_moment();
}

std::unique_ptr<SpectralLaw> LinearT1Solver::law(double delta) {
  ++summary_.law_constructions;
  return make_law(problem_.target, delta, problem_.method);
}

JValues LinearT1Solver::jv(const SpectralLaw& mu, double t) {
  JValues j = j_values(mu, t, options_.quadrature);
  j.dJ_ddelta *= options_.broken_ddelta_factor;
  ++summary_.j_evaluations;
  summary_.quadrature_evaluations += j.stats.evaluations;
  summary_.max_quadrature_error = std::max(summary_.max_quadrature_error, j.stats.max_error);
  if (!j.stats.converged) summary_.converged = false;
  return j;
}

double LinearT1Solver::G(double delta, double t, JValues* out) {
  const auto mu = law(delta);
  const JValues j = jv(*mu, t);
  if (out) *out = j;
  const double lam = problem_.lambda, Delta = problem_.noise;
  return Q0_ + Delta / 2 - j.J + t * j.dJ_dt + 0.5 * delta * j.dJ_ddelta - delta * delta * lam / (2 * t);
}

LinearT1Solver::DeltaPoint LinearT1Solver::at_delta(double delta, double t_guess) {
  DeltaPoint p;
  p.delta = delta;
  const auto mu = law(delta);
  const double lam = problem_.lambda, Delta = problem_.noise;
  auto Gt = [&](double t) {
    const JValues j = jv(*mu, t);
    return Q0_ + Delta / 2 - j.J + t * j.dJ_dt + 0.5 * delta * j.dJ_ddelta - delta * delta * lam / (2 * t);
  };
  const double t0 = t_guess > 0 ? t_guess : std::max(1e-3, 0.5 * mu->support().back().hi);
  double lo = t0, hi = t0, glo = Gt(t0), ghi = glo;
  if (!std::isfinite(glo)) return p;
  if (glo < 0) {
    for (int k = 0; k < 200 && ghi < 0; ++k) {
      lo = hi;
      glo = ghi;
      hi *= 2;
      ghi = Gt(hi);
    }
    if (!(ghi >= 0)) return p;
  } else {
    for (int k = 0; k < 400 && glo > 0; ++k) {
      hi = lo;
      ghi = glo;
      lo *= 0.5;
      glo = Gt(lo);
    }
    if (!(glo <= 0)) return p;
  }
  p.t = (glo == 0) ? lo : (ghi == 0) ? hi : toms748_root(Gt, lo, hi, glo, ghi, options_.t_bits);
  p.j = jv(*mu, p.t);
  p.alpha = (p.j.dJ_ddelta / delta + lam / p.t) / 4;
  p.ok = std::isfinite(p.alpha);
  return p;
}

LinearT1Solver::DeltaPoint LinearT1Solver::project(double ld0, double lt0, double nd, double nt, double reach) {
  // The root of G on the line (log δ, log t) = (ld0, lt0) + s (nd, nt) nearest to s = 0, |s| <= reach.
  DeltaPoint p;
  auto g = [&](double s) { return G(std::exp(ld0 + s * nd), std::exp(lt0 + s * nt)); };
  const double g0 = g(0);
  if (!std::isfinite(g0)) return p;
  double s_root = 0;
  bool found = (g0 == 0);
  for (int k = 5; k >= 0 && !found; --k) {
    for (double sign : {1.0, -1.0}) {
      const double s = sign * reach * std::ldexp(1.0, -k);
      const double gs = g(s);
      if (std::isfinite(gs) && gs * g0 <= 0) {
        s_root = (gs == 0) ? s : (s > 0 ? toms748_root(g, 0.0, s, g0, gs, options_.t_bits) : toms748_root(g, s, 0.0, gs, g0, options_.t_bits));
        found = true;
        break;
      }
    }
  }
  if (!found) return p;
  p.delta = std::exp(ld0 + s_root * nd);
  p.t = std::exp(lt0 + s_root * nt);
  const auto mu = law(p.delta);
  p.j = jv(*mu, p.t);
  p.alpha = (p.j.dJ_ddelta / p.delta + problem_.lambda / p.t) / 4;
  p.ok = std::isfinite(p.alpha);
  return p;
}

std::vector<LinearT1Solver::DeltaPoint> LinearT1Solver::trace(double alpha_lo, double alpha_hi) {
  std::vector<DeltaPoint> pts;
  // Start at small α (large δ), where G(δ, ·) has a single root.
  double d = std::sqrt(Q0_ + problem_.noise / 2);
  DeltaPoint p0 = at_delta(d);
  for (int k = 0; k < 60 && (!p0.ok || p0.alpha > alpha_lo); ++k) p0 = at_delta(d *= 2, p0.ok ? 2 * p0.t : 0);
  if (!p0.ok) return pts;
  DeltaPoint p1 = at_delta(d / 1.05, p0.t);
  if (!p1.ok) return pts;
  pts.push_back(p0);
  pts.push_back(p1);
  double h = 0.05;
  while (pts.back().alpha < alpha_hi && pts.size() < 5000) {
    const DeltaPoint& a = pts[pts.size() - 2];
    const DeltaPoint& b = pts.back();
    double td = std::log(b.delta) - std::log(a.delta), tt = std::log(b.t) - std::log(a.t);
    const double norm = std::hypot(td, tt);
    td /= norm;
    tt /= norm;
    DeltaPoint c;
    bool accepted = false;
    while (h >= options_.min_step) {
      const double ld = std::log(b.delta) + h * td, lt = std::log(b.t) + h * tt;
      c = project(ld, lt, -tt, td, h);
      if (c.ok) {
        const double dd = std::log(c.delta) - std::log(b.delta), dt = std::log(c.t) - std::log(b.t);
        const double along = dd * td + dt * tt;
        const double off = std::hypot(std::log(c.delta) - ld, std::log(c.t) - lt);
        if (along > 0.25 * h && off < 0.5 * h) {
          accepted = true;
          if (off < 0.1 * h) h = std::min(1.5 * h, options_.max_step);
          break;
        }
      }
      h *= 0.5;
    }
    if (!accepted) {
      summary_.converged = false;
      summary_.message = "continuation stalled at delta = " + std::to_string(b.delta) + ", t = " + std::to_string(b.t);
      break;
    }
    pts.push_back(c);
    if (c.delta < 1e-12) break;
  }
  return pts;
}

FixedPointState LinearT1Solver::state(const DeltaPoint& p) const {
  FixedPointState s;
  const double lam = problem_.lambda, Delta = problem_.noise, Q0 = Q0_;
  const JValues& j = p.j;
  s.alpha = p.alpha;
  s.delta = p.delta;
  s.t = p.t;
  s.eps = p.t / lam;
  s.eta = 1.0;
  s.j = j;
  // Conjugates of the linear channel: m̂ = Σ̂ = 8α/(1 + 4Σ) = 2/ε, q̂ = δ² m̂² (derivation.md §4).
  s.mhat = 2 / s.eps;
  s.Sigmahat = s.mhat;
  s.qhat = p.delta * p.delta * s.mhat * s.mhat;
  // Prior side (derivation.md §3): q = η² J, m = η [J − (δ ∂_δJ + t ∂_tJ)/2], Σ = ∂_δJ/(2 Σ̂ δ).
  s.q = j.J;
  s.m = j.J - 0.5 * (p.delta * j.dJ_ddelta + p.t * j.dJ_dt);
  s.Sigma = j.dJ_ddelta / (2 * s.Sigmahat * p.delta);
  s.mse = Q0 - 2 * s.m + s.q;
  const double a = p.alpha, d = p.delta, e = s.eps;
  s.train_loss = d * d / (4 * a * e * e);
  s.test_error_clean = 2 * s.mse;
  s.test_error = 2 * s.mse + Delta;
  s.rank = j.mass_above;
  s.trace = -0.5 * j.dJ_dt;
  s.regulariser = lam * s.trace;
  s.objective = a * s.train_loss + s.regulariser;
  // Residuals of (A), (B) and of the channel identity MSE = 2αδ² − Δ/2 (all zero at a fixed point).
  const double rA = 4 * a * d - d / e - j.dJ_ddelta;
  const double rB = Q0 + Delta / 2 + 2 * a * d * d - d * d / e - j.J + p.t * j.dJ_dt;
  const double rC = s.mse - (2 * a * d * d - Delta / 2);
  s.residual = std::max({std::fabs(rA), std::fabs(rB), std::fabs(rC)});
  s.converged = p.ok;
  return s;
}

std::vector<FixedPointState> LinearT1Solver::curve(const std::vector<double>& alphas) {
  const auto wall0 = std::chrono::steady_clock::now();
  std::vector<FixedPointState> out(alphas.size());
  if (alphas.empty()) return out;
  for (double a : alphas)
    if (!(a > 0) || !std::isfinite(a)) throw InputError("alphas", "sample ratios must be finite and > 0");
  const double amin = *std::min_element(alphas.begin(), alphas.end());
  const double amax = *std::max_element(alphas.begin(), alphas.end());

  const std::vector<DeltaPoint> pts = trace(amin * 0.98, amax * 1.02);
  const std::size_t n = pts.size();
  summary_.curve_points += static_cast<int>(n);
  if (n >= 2) {
    summary_.delta_max = std::max(summary_.delta_max, pts.front().delta);
    summary_.delta_min = summary_.delta_min > 0 ? std::min(summary_.delta_min, pts.back().delta) : pts.back().delta;
  }
  for (std::size_t i = 1; i + 1 < n; ++i) {
    if ((pts[i].delta - pts[i - 1].delta) * (pts[i + 1].delta - pts[i].delta) < 0) ++summary_.folds;
    if ((pts[i].alpha - pts[i - 1].alpha) * (pts[i + 1].alpha - pts[i].alpha) < 0) ++summary_.alpha_turns;
  }

  for (std::size_t ia = 0; ia < alphas.size(); ++ia) {
    const double target = alphas[ia];
    std::vector<FixedPointState> sols;
    for (std::size_t i = 0; i + 1 < n; ++i) {
      const DeltaPoint& A = pts[i];
      const DeltaPoint& B = pts[i + 1];
      const double fa = A.alpha - target, fb = B.alpha - target;
      if (fa * fb > 0 || (fa == 0 && i > 0)) continue;
      DeltaPoint best = (fa == 0) ? A : B;
      if (fa != 0 && fb != 0) {
        // Along the chord A → B, projected back onto G = 0 along the chord's normal.
        const double ad = std::log(A.delta), at = std::log(A.t);
        const double cd = std::log(B.delta) - ad, ct = std::log(B.t) - at;
        const double len = std::hypot(cd, ct);
        auto f = [&](double lam) {
          DeltaPoint p = project(ad + lam * cd, at + lam * ct, -ct / len, cd / len, len);
          if (!p.ok) return std::numeric_limits<double>::quiet_NaN();
          best = p;
          return p.alpha - target;
        };
        const double lam = toms748_root(f, 0.0, 1.0, fa, fb, options_.delta_bits);
        if (!best.ok || std::fabs(best.alpha - target) > 1e-8 * target) {
          const double v = f(lam);
          (void)v;
        }
      }
      if (!best.ok) continue;
      FixedPointState s = state(best);
      s.alpha = target;  // best.alpha agrees to the root tolerance
      sols.push_back(s);
    }
    if (sols.empty()) {
      FixedPointState s;
      s.alpha = target;
      s.converged = false;
      s.message = "no fixed point found on the traced curve";
      summary_.converged = false;
      out[ia] = s;
      continue;
    }
    auto it = std::min_element(sols.begin(), sols.end(),
                               [](const FixedPointState& x, const FixedPointState& y) { return x.objective < y.objective; });
    FixedPointState chosen = *it;
    chosen.branches = static_cast<int>(sols.size());
    if (sols.size() > 1) chosen.message = std::to_string(sols.size()) + " fixed points; kept the lowest ERM objective";
    if (chosen.residual > 1e-6 * (1 + Q0_)) {
      chosen.converged = false;
      chosen.message += " residual " + std::to_string(chosen.residual);
      summary_.converged = false;
    }
    out[ia] = chosen;
  }
  summary_.wall_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return out;
}

}  // namespace hdat::tied_attention
