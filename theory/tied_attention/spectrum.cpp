#include "hdat/tied_attention/spectrum.hpp"

#include <algorithm>
#include <cmath>

namespace hdat::tied_attention {

double learned_density(const SpectralLaw& law, double t, double eta, double x) {
  if (!(x > 0)) return 0.0;
  return law.density(x / eta + t) / eta;
}

LearnedSpectrum learned_spectrum(const SpectralLaw& law, double t, double eta, double kappa, int points, double outlier_mass) {
  LearnedSpectrum s;
  s.eta = eta;
  s.t = t;
  s.delta = law.delta();
  s.kappa = kappa;
  const auto masses = law.piece_masses();
  const auto* sub = dynamic_cast<const SubordinatedLaw*>(&law);
  // A piece is an outlier when it carries one target eigenvalue: mass below outlier_mass (default:
  // 1.5 × the largest single weight of a discrete target; none for a continuous target).
  double cut = outlier_mass;
  if (cut < 0) {
    cut = 0;
    if (sub && sub->target().discrete()) {
      const auto& w = sub->target().weights();
      cut = 1.5 * *std::max_element(w.begin(), w.end());
    }
  }
  QuadratureOptions opt;
  opt.rel_tol = 1e-9;
  double above = 0;
  for (int k = 0; k < law.pieces(); ++k) {
    const Interval& iv = law.support()[static_cast<std::size_t>(k)];
    if (iv.hi <= t) continue;
    const double m = masses[static_cast<std::size_t>(k)];
    if (m < cut && sub) {
      // Outlier: its mean position and the target eigenvalue inside its u-interval.
      auto f = [&](double theta) {
        const SpectralPoint p = law.at(k, theta);
        QVec<2> v;
        v << 1.0, p.x;
        return QVec<2>(v * (p.rho * p.jacobian));
      };
      const QVec<2> r = integrate_gk<2>(f, 0.0, M_PI, opt);
      const double xbar = r(1) / r(0);
      if (xbar <= t) continue;
      Outlier o;
      o.mass = m;
      o.position = eta * (xbar - t);
      const Interval& u = sub->u_pieces()[static_cast<std::size_t>(k)];
      for (double sv : sub->target().values())
        if (sv > u.lo && sv < u.hi) o.target_eigenvalue = sv;
      if (o.target_eigenvalue != 0)
        o.spike_formula = eta * (o.target_eigenvalue + s.delta * s.delta / o.target_eigenvalue - t);
      s.outliers.push_back(o);
      above += m;
      continue;
    }
    // Bulk piece: points clustered at the edges (cosine spacing) on [max(lo, t), hi].
    const double lo = std::max(iv.lo, t), hi = iv.hi;
    for (int i = 0; i < points; ++i) {
      const double th = M_PI * (i + 0.5) / points;
      const double xx = lo + 0.5 * (hi - lo) * (1 - std::cos(th));
      const double xs = eta * (xx - t);
      const double rho = law.density(xx) / eta;
      s.x.push_back(xs);
      s.density.push_back(rho);
      // σ = (√κ λ)^{1/2}; ρ_σ(σ) = ρ_λ(λ) dλ/dσ, dλ/dσ = 2σ/√κ.
      const double sig = std::sqrt(std::sqrt(kappa) * xs);
      s.sv.push_back(sig);
      s.sv_density.push_back(rho * 2 * sig / std::sqrt(kappa));
    }
  }
  const double mass_above = 1 - law.cdf(t, opt);
  s.atom = 1 - mass_above;
  s.bulk_mass = mass_above - above;
  return s;
}

ErrorDecomposition decompose_error(const SpectralLaw& law, double t, double eta, double m_total) {
  ErrorDecomposition e;
  const auto* sub = dynamic_cast<const SubordinatedLaw*>(&law);
  if (!sub || !sub->target().discrete()) return e;
  const auto& s = sub->target().values();
  const auto& w = sub->target().weights();
  const double delta = law.delta();
  for (double x : s) e.K_delta += x > delta ? 1 : 0;
  const LearnedSpectrum ls = learned_spectrum(law, t, eta, 1.0, 4);
  double learned_q0 = 0, m_out = 0;
  for (const Outlier& o : ls.outliers) {
    if (o.target_eigenvalue == 0) continue;
    ++e.outliers;
    const double sh = o.position, st = o.target_eigenvalue;
    e.E_approx += o.mass * ((sh - st) * (sh - st) + 2 * sh * delta * delta / st);
    learned_q0 += o.mass * st * st;
    m_out += o.mass * sh * st * (1 - delta * delta / (st * st));
  }
  double q0 = 0;
  for (std::size_t i = 0; i < s.size(); ++i) q0 += w[i] * s[i] * s[i];
  e.bulk_overlap = m_total - m_out;
  e.E_under = q0 - learned_q0 - 2 * e.bulk_overlap;
  // Bulk: η² ∫ (x − t)₊² over the pieces that are not outliers.
  const auto masses = law.piece_masses();
  const double cut = 1.5 * *std::max_element(w.begin(), w.end());
  QuadratureOptions opt;
  opt.rel_tol = 1e-9;
  for (int k = 0; k < law.pieces(); ++k) {
    const Interval& iv = law.support()[static_cast<std::size_t>(k)];
    if (iv.hi <= t || masses[static_cast<std::size_t>(k)] < cut) continue;
    const double th0 = iv.lo < t ? law.theta_of(k, t) : 0.0;
    auto f = [&](double theta) {
      const SpectralPoint p = law.at(k, theta);
      return QVec<1>::Constant((p.x - t) * (p.x - t) * p.rho * p.jacobian);
    };
    e.E_over += eta * eta * integrate_gk<1>(f, th0, M_PI, opt)(0);
  }
  e.E_sum = e.E_over + e.E_under + e.E_approx;
  return e;
}

}  // namespace hdat::tied_attention
