// The spectral machinery of the tied-attention prior side: free convolution with a semicircle in
// closed form (Wishart cubic + quartic edges) and by subordination (Biane), J and its derivatives.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "hdat/tied_attention/prior.hpp"
#include "hdat/tied_attention/spectrum.hpp"
#include "hdat/tied_attention/thresholds.hpp"

using namespace hdat::tied_attention;

TEST_CASE("vector Gauss-Kronrod integrates known integrals to the requested accuracy") {
  QuadratureOptions o;
  o.rel_tol = 1e-12;
  QuadratureStats st;
  auto f = [](double x) {
    QVec<3> v;
    v << std::exp(x), std::sin(x) * std::sin(x), 1 / (1 + x * x);
    return v;
  };
  QVec<3> err;
  const QVec<3> r = integrate_gk<3>(f, 0.0, 3.0, o, &st, &err);
  CHECK(r(0) == doctest::Approx(std::exp(3.0) - 1).epsilon(1e-13));
  CHECK(r(1) == doctest::Approx(1.5 - std::sin(6.0) / 4).epsilon(1e-13));
  CHECK(r(2) == doctest::Approx(std::atan(3.0)).epsilon(1e-13));
  CHECK(st.converged);
  // Square-root endpoint singularity: ∫_0^1 √x dx = 2/3 (needs subdivision, still converges).
  auto g = [](double x) { return QVec<1>::Constant(std::sqrt(x)); };
  QuadratureStats sg;
  CHECK(integrate_gk<1>(g, 0.0, 1.0, o, &sg)(0) == doctest::Approx(2.0 / 3).epsilon(1e-10));
  CHECK(sg.converged);
}

TEST_CASE("Wishart target: the Stieltjes transform agrees with direct quadrature of atom + MP bulk") {
  for (double k0 : {0.3, 0.5, 2.0}) {
    CAPTURE(k0);
    WishartTarget t(k0);
    CHECK(t.second_moment() == doctest::Approx(1 + k0));
    for (cplx w : {cplx(0.7, -0.4), cplx(-1.0, -0.01), cplx(3.0, -2.0)}) {
      const double lo = t.edge_lo(), hi = t.edge_hi();
      auto f = [&](double th) {
        const double x = lo + 0.5 * (hi - lo) * (1 - std::cos(th));
        const double wgt = t.bulk_density(x) * 0.5 * (hi - lo) * std::sin(th);
        const cplx g = wgt / (w - x);
        QVec<3> v;
        v << g.real(), g.imag(), wgt;
        return v;
      };
      QuadratureOptions o;
      o.rel_tol = 1e-12;
      const QVec<3> r = integrate_gk<3>(f, 0.0, M_PI, o);
      const cplx direct = cplx(r(0), r(1)) + t.atom() / w;
      CHECK(r(2) + t.atom() == doctest::Approx(1.0).epsilon(1e-10));
      CHECK(std::abs(t.stieltjes(w) - direct) < 1e-9);
      CHECK(t.stieltjes(w).imag() > 0);
    }
  }
}

TEST_CASE("moments of mu_delta: mass 1, mean sqrt(kappa0), second moment 1 + kappa0 + delta^2 (one and two intervals)") {
  for (double k0 : {0.5, 0.2, 2.0}) {
    auto tgt = std::make_shared<const WishartTarget>(k0);
    for (double delta : {0.05, 0.3, 1.0, 2.5}) {
      CAPTURE(k0);
      CAPTURE(delta);
      WishartLaw cf(k0, delta);
      SubordinatedLaw sb(tgt, delta);
      if (k0 < 1 && delta <= 0.05) CHECK(cf.pieces() == 2);  // the atom at 0 spread into its own interval
      if (delta >= 1.0) CHECK(cf.pieces() == 1);
      CHECK(sb.pieces() == cf.pieces());
      for (const SpectralLaw* law : {static_cast<const SpectralLaw*>(&cf), static_cast<const SpectralLaw*>(&sb)}) {
        const QVec<3> m = law_moments(*law);
        CHECK(m(0) == doctest::Approx(1.0).epsilon(1e-10));
        CHECK(m(1) == doctest::Approx(std::sqrt(k0)).epsilon(1e-10));
        CHECK(m(2) == doctest::Approx(1 + k0 + delta * delta).epsilon(1e-10));
      }
      // Pieces carry the μ0 mass of their u-interval (atom 1 − κ0, bulk κ0).
      if (sb.pieces() == 2) {
        CHECK(sb.piece_masses()[0] == doctest::Approx(1 - k0).epsilon(1e-12));
        CHECK(cf.piece_masses()[0] == doctest::Approx(1 - k0).epsilon(1e-9));
      }
    }
  }
}

TEST_CASE("the edge quartic equals the spec's printed coefficients and its roots are the support edges") {
  for (double k0 : {0.5, 0.25, 3.0}) {
    for (double v : {0.01, 0.5, 2.0}) {
      CAPTURE(k0);
      CAPTURE(v);
      const double a = 1 / k0, sa = std::sqrt(a);
      // Transcribed from the spec (independent of the polynomial arithmetic in WishartLaw).
      const double c4 = a;
      const double c3 = -2 * sa - 2 * a * sa - 2 * sa * v;
      const double c2 = 1 - 2 * a + a * a + 8 * v - 2 * a * v + v * v;
      const double c1 = -10 * v / sa + 2 * sa * v + 8 * a * sa * v - 2 * v * v / sa + 8 * sa * v * v;
      const double c0 = -12 * v + 4 * v / a + 12 * a * v - 4 * a * a * v - 20 * v * v + v * v / a - 8 * a * v * v - 4 * v * v * v;
      WishartLaw law(k0, std::sqrt(v));
      const auto q = law.edge_quartic();
      const double spec[5] = {c0, c1, c2, c3, c4};
      for (int i = 0; i < 5; ++i) CHECK(q[static_cast<std::size_t>(i)] == doctest::Approx(spec[i]).epsilon(1e-12).scale(1.0));
      // The density vanishes at the edges and is positive just inside.
      for (const auto& iv : law.support()) {
        const double h = 1e-6 * (iv.hi - iv.lo);
        CHECK(law.density(iv.lo - h) == 0.0);
        CHECK(law.density(iv.hi + h) == 0.0);
        CHECK(law.density(iv.lo + h) > 0.0);
        CHECK(law.density(iv.hi - h) > 0.0);
      }
    }
  }
}

TEST_CASE("subordination reproduces the closed form: edges, density, Hilbert transform, CDF and J") {
  auto tgt = std::make_shared<const WishartTarget>(0.5);
  for (double delta : {0.08, 0.7, 1.5147}) {
    CAPTURE(delta);
    WishartLaw cf(0.5, delta);
    SubordinatedLaw sb(tgt, delta);
    REQUIRE(cf.pieces() == sb.pieces());
    for (int k = 0; k < cf.pieces(); ++k) {
      CHECK(sb.support()[k].lo == doctest::Approx(cf.support()[k].lo).epsilon(1e-10));
      CHECK(sb.support()[k].hi == doctest::Approx(cf.support()[k].hi).epsilon(1e-10));
      for (double f : {0.1, 0.37, 0.8}) {
        const double x = cf.support()[k].lo + f * (cf.support()[k].hi - cf.support()[k].lo);
        CHECK(sb.density(x) == doctest::Approx(cf.density(x)).epsilon(1e-9));
        CHECK(sb.hilbert(x) == doctest::Approx(cf.hilbert(x)).epsilon(1e-9));
        CHECK(sb.cdf(x) == doctest::Approx(cf.cdf(x)).epsilon(1e-9));
      }
    }
    for (double t : {0.0, 0.4, 2.2}) {
      const JValues a = j_values(cf, t), b = j_values(sb, t);
      CHECK(b.J == doctest::Approx(a.J).epsilon(1e-10));
      CHECK(b.dJ_dt == doctest::Approx(a.dJ_dt).epsilon(1e-10));
      CHECK(b.dJ_ddelta == doctest::Approx(a.dJ_ddelta).epsilon(1e-9));
      CHECK(b.mass_above == doctest::Approx(a.mass_above).epsilon(1e-10));
      CHECK(a.stats.converged);
      CHECK(a.stats.max_error < 1e-9);
    }
  }
}

TEST_CASE("pure semicircle (mu0 = delta_0): rho = sqrt(4v - x^2)/(2 pi v), H = x/(2v), J(delta, 0) = delta^2/2") {
  auto zero = std::make_shared<const DiscreteTarget>(std::vector<double>{0.0});
  const double delta = 0.8, v = delta * delta;
  SubordinatedLaw law(zero, delta);
  REQUIRE(law.pieces() == 1);
  CHECK(law.support()[0].lo == doctest::Approx(-2 * delta).epsilon(1e-12));
  CHECK(law.support()[0].hi == doctest::Approx(2 * delta).epsilon(1e-12));
  for (double x : {-1.2, 0.1, 1.5}) {
    CHECK(law.density(x) == doctest::Approx(std::sqrt(4 * v - x * x) / (2 * M_PI * v)).epsilon(1e-10));
    CHECK(law.hilbert(x) == doctest::Approx(x / (2 * v)).epsilon(1e-10));
  }
  // Outside: g(x) = (x − √(x² − 4v))/(2v).
  CHECK(law.hilbert(2.0) == doctest::Approx((2.0 - std::sqrt(4.0 - 4 * v)) / (2 * v)).epsilon(1e-10));
  const JValues j = j_values(law, 0.0);
  CHECK(j.J == doctest::Approx(v / 2).epsilon(1e-11));
  CHECK(j.dJ_ddelta == doctest::Approx(delta).epsilon(1e-10));  // d(δ²/2)/dδ
  CHECK(j.mass_above == doctest::Approx(0.5).epsilon(1e-12));
  // And the tail moments of the semicircle on [−2, 2] in closed form.
  for (double s : {-1.0, 0.0, 0.7}) {
    SubordinatedLaw unit(zero, 1.0);
    const JValues js = j_values(unit, s);
    CHECK(js.J == doctest::Approx(semicircle_tail_moment(s, 2)).epsilon(1e-11));
    CHECK(-0.5 * js.dJ_dt == doctest::Approx(semicircle_tail_moment(s, 1)).epsilon(1e-11));
    CHECK(js.mass_above == doctest::Approx(semicircle_tail_moment(s, 0)).epsilon(1e-11));
  }
}

TEST_CASE("derivatives of J against central finite differences") {
  auto tgt = std::make_shared<const WishartTarget>(0.5);
  const auto pl = std::make_shared<const DiscreteTarget>(power_law_eigenvalues(40, 1.0, 1.2, 1.5));
  for (auto target : {std::static_pointer_cast<const TargetLaw>(tgt), std::static_pointer_cast<const TargetLaw>(pl)}) {
    for (double delta : {0.3, 1.1}) {
      for (double t : {0.05, 0.9}) {
        CAPTURE(target->name());
        CAPTURE(delta);
        CAPTURE(t);
        const double h = 1e-4;
        auto J = [&](double dl, double tt) { return j_values(*make_law(target, dl), tt).J; };
        const JValues j = j_values(*make_law(target, delta), t);
        const double fd_t = (J(delta, t + h) - J(delta, t - h)) / (2 * h);
        const double fd_d = (J(delta + h, t) - J(delta - h, t)) / (2 * h);
        CHECK(j.dJ_dt == doctest::Approx(fd_t).epsilon(1e-6));
        CHECK(j.dJ_ddelta == doctest::Approx(fd_d).epsilon(1e-6));
        // ∂²_t J = 2 (1 − F_δ(t)).
        const double fd_tt = (J(delta, t + h) - 2 * j.J + J(delta, t - h)) / (h * h);
        CHECK(2 * j.mass_above == doctest::Approx(fd_tt).epsilon(1e-4));
      }
    }
  }
}

TEST_CASE("discrete target: an isolated eigenvalue gives a piece of its mass at the spike position s + delta^2/s") {
  // 199 zero eigenvalues and one s = 3: μ0 = (199/200) δ_0 + (1/200) δ_3.
  std::vector<double> ev(200, 0.0);
  ev[0] = 3.0;
  auto tgt = std::make_shared<const DiscreteTarget>(ev);
  const double delta = 0.6;
  SubordinatedLaw law(tgt, delta);
  REQUIRE(law.pieces() == 2);
  CHECK(law.piece_masses()[1] == doctest::Approx(1.0 / 200).epsilon(1e-12));
  const LearnedSpectrum ls = learned_spectrum(law, 0.0, 1.0, 1.0);
  REQUIRE(ls.outliers.size() == 1);
  // The bulk is a semicircle of variance δ²(199/200): the spike formula holds to O(1/d).
  CHECK(ls.outliers[0].target_eigenvalue == 3.0);
  CHECK(ls.outliers[0].position == doctest::Approx(3.0 + delta * delta / 3.0).epsilon(2e-3));
  const QVec<3> m = law_moments(law);
  CHECK(m(0) == doctest::Approx(1.0).epsilon(1e-10));
  CHECK(m(1) == doctest::Approx(3.0 / 200).epsilon(1e-9));
  CHECK(m(2) == doctest::Approx(9.0 / 200 + delta * delta).epsilon(1e-9));
}

TEST_CASE("learned spectrum: atom + bulk (+ outliers) carry unit mass; W singular values transform consistently") {
  WishartLaw law(0.5, 1.2);
  const double t = 0.9, eta = 0.7, kappa = 2.0;
  const LearnedSpectrum ls = learned_spectrum(law, t, eta, kappa, 400);
  CHECK(ls.atom == doctest::Approx(law.cdf(t)).epsilon(1e-10));
  // Bulk density integrates (trapezoid on the cosine grid) to the mass above t.
  double mass = 0, mass_sv = 0;
  for (std::size_t i = 1; i < ls.x.size(); ++i) {
    mass += 0.5 * (ls.density[i] + ls.density[i - 1]) * (ls.x[i] - ls.x[i - 1]);
    mass_sv += 0.5 * (ls.sv_density[i] + ls.sv_density[i - 1]) * (ls.sv[i] - ls.sv[i - 1]);
  }
  CHECK(mass == doctest::Approx(1 - ls.atom).epsilon(2e-3));
  CHECK(mass_sv == doctest::Approx(1 - ls.atom).epsilon(2e-3));
  CHECK(ls.bulk_mass + ls.atom == doctest::Approx(1.0).epsilon(1e-12));
}
