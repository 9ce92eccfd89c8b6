#include "hdat/tied_attention/prior.hpp"

#include <algorithm>

namespace hdat::tied_attention {

JValues j_values(const SpectralLaw& law, double t, const QuadratureOptions& opt) {
  JValues r;
  r.delta = law.delta();
  r.t = t;
  // Components: (x − t)², (x − t), (x − t) H, 1 — all weighted by ρ on x > t.
  auto f = [t](double x, double H) {
    const double e = x - t;
    QVec<4> v;
    v << e * e, e, e * H, 1.0;
    return v;
  };
  QVec<4> err;
  const QVec<4> c = integrate_above<4>(law, t, f, opt, &r.stats, &err);
  r.J = c(0);
  r.dJ_dt = -2 * c(1);
  r.dJ_ddelta = 4 * r.delta * c(2);
  r.mass_above = c(3);
  r.error << err(0), 2 * err(1), 4 * r.delta * err(2), err(3);
  return r;
}

double rho_cubed(const SpectralLaw& law, const QuadratureOptions& opt, QuadratureStats* stats) {
  // ∫ ρ³ dx = ∫ ρ² · ρ dx: the generic integrand times ρ² (density from the node itself).
  double total = 0;
  for (int k = 0; k < law.pieces(); ++k) {
    auto g = [&](double theta) -> QVec<1> {
      const SpectralPoint p = law.at(k, theta);
      return QVec<1>::Constant(p.rho * p.rho * p.rho * p.jacobian);
    };
    total += integrate_gk<1>(g, 0.0, M_PI, opt, stats)(0);
  }
  return total;
}

QVec<3> law_moments(const SpectralLaw& law, const QuadratureOptions& opt) {
  const double lower = law.support().front().lo - 1.0;
  auto f = [](double x, double) {
    QVec<3> v;
    v << 1.0, x, x * x;
    return v;
  };
  return integrate_above<3>(law, lower, f, opt);
}

JValues j_values_wishart_delta0(const WishartTarget& target, double t, const QuadratureOptions& opt) {
  JValues r;
  r.delta = 0;
  r.t = t;
  // Atom (1 − κ0) at 0 contributes when t < 0; the bulk with x = lo + (hi − lo)(1 − cos θ)/2.
  const double atom = target.atom();
  if (t < 0) {
    r.J += atom * t * t;
    r.dJ_dt += -2 * atom * (-t);
    r.mass_above += atom;
  }
  const double lo = target.edge_lo(), hi = target.edge_hi();
  if (hi > t) {
    const double th0 = t > lo ? std::acos(std::clamp(1 - 2 * (t - lo) / (hi - lo), -1.0, 1.0)) : 0.0;
    auto f = [&](double theta) {
      const double x = lo + 0.5 * (hi - lo) * (1 - std::cos(theta));
      const double w = target.bulk_density(x) * 0.5 * (hi - lo) * std::sin(theta);
      const double e = x - t;
      QVec<3> v;
      v << e * e * w, e * w, w;
      return v;
    };
    const QVec<3> c = integrate_gk<3>(f, th0, M_PI, opt, &r.stats);
    r.J += c(0);
    r.dJ_dt += -2 * c(1);
    r.mass_above += c(2);
  }
  return r;
}

}  // namespace hdat::tied_attention
