#include "hdat/tied_attention/spectral_law.hpp"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <boost/math/tools/roots.hpp>
#include <limits>
#include <stdexcept>

#include "hdat/core/error.hpp"
#include "hdat/core/constants.hpp"

namespace hdat::tied_attention {

namespace {


// Polynomials in x as coefficient vectors (index = power).
using Poly = std::vector<double>;
Poly mul(const Poly& p, const Poly& q) {
  Poly r(p.size() + q.size() - 1, 0.0);
  for (std::size_t i = 0; i < p.size(); ++i)
    for (std::size_t j = 0; j < q.size(); ++j) r[i + j] += p[i] * q[j];
  return r;
}
Poly add(const Poly& p, const Poly& q, double cq = 1.0) {
  Poly r(std::max(p.size(), q.size()), 0.0);
  for (std::size_t i = 0; i < p.size(); ++i) r[i] += p[i];
  for (std::size_t i = 0; i < q.size(); ++i) r[i] += cq * q[i];
  return r;
}
double eval(const Poly& p, double x) {
  double r = 0;
  for (std::size_t i = p.size(); i-- > 0;) r = r * x + p[i];
  return r;
}

// Real roots of a polynomial (degree <= 4 here) via the companion matrix, polished by Newton.
std::vector<double> real_roots(const Poly& p) {
  int n = static_cast<int>(p.size()) - 1;
  while (n > 0 && p[static_cast<std::size_t>(n)] == 0) --n;
  if (n < 1) return {};
  Eigen::MatrixXd C = Eigen::MatrixXd::Zero(n, n);
  for (int i = 1; i < n; ++i) C(i, i - 1) = 1;
  for (int i = 0; i < n; ++i) C(i, n - 1) = -p[static_cast<std::size_t>(i)] / p[static_cast<std::size_t>(n)];
  Eigen::EigenSolver<Eigen::MatrixXd> es(C, false);
  std::vector<double> roots;
  Poly dp(static_cast<std::size_t>(n));
  for (int i = 1; i <= n; ++i) dp[static_cast<std::size_t>(i - 1)] = i * p[static_cast<std::size_t>(i)];
  for (int i = 0; i < n; ++i) {
    const std::complex<double> z = es.eigenvalues()(i);
    if (std::fabs(z.imag()) > 1e-7 * (1 + std::fabs(z.real()))) continue;
    double x = z.real();
    for (int it = 0; it < 4; ++it) {  // Newton polish (simple roots: quadratic convergence)
      const double d = eval(dp, x);
      if (d == 0) break;
      const double step = eval(p, x) / d;
      x -= step;
      if (std::fabs(step) < 1e-16 * (1 + std::fabs(x))) break;
    }
    roots.push_back(x);
  }
  std::sort(roots.begin(), roots.end());
  return roots;
}

using boost::math::tools::eps_tolerance;

// Root of f on [lo, hi] with f(lo), f(hi) of opposite signs (TOMS 748).
template <class F>
double bracket_root(F f, double lo, double hi, int bits = 50) {
  std::uintmax_t it = 200;
  const auto r = boost::math::tools::toms748_solve(f, lo, hi, eps_tolerance<double>(bits), it);
  return 0.5 * (r.first + r.second);
}

}  // namespace

double SpectralLaw::cdf(double x, const QuadratureOptions& opt) const {
  if (support_.empty() || x < support_.front().lo) return 0.0;
  if (x >= support_.back().hi) return 1.0;
  const auto above = integrate_above<1>(*this, x, [](double, double) { return QVec<1>::Constant(1.0); }, opt);
  return std::clamp(1.0 - above(0), 0.0, 1.0);
}

// =============================================================================================
// WishartLaw

WishartLaw::WishartLaw(double kappa0, double delta) : kappa0_(kappa0), a_(1.0 / kappa0), sa_(std::sqrt(1.0 / kappa0)) {
  if (!(kappa0 > 0)) throw InputError("kappa0", "must be > 0");
  if (!(delta > 0) || !std::isfinite(delta)) throw NumericalError("WishartLaw: delta must be finite and > 0");
  delta_ = delta;
  v_ = delta * delta;
  const auto c = edge_quartic();
  roots_ = real_roots(Poly(c.begin(), c.end()));
  // Support: the intervals between consecutive edges where the cubic has a complex pair.
  for (std::size_t i = 0; i + 1 < roots_.size(); ++i) {
    const double mid = 0.5 * (roots_[i] + roots_[i + 1]);
    cplx g;
    if (stieltjes(mid, g)) support_.push_back({roots_[i], roots_[i + 1]});
  }
  if (support_.empty()) throw NumericalError("WishartLaw: no support interval found (kappa0 = " + std::to_string(kappa0) +
                                             ", delta = " + std::to_string(delta) + ")");
}

std::array<double, 5> WishartLaw::edge_quartic() const {
  // The cubic A g³ + B g² + C g + D with A = √a v, B = −(√a x + v), C = x + √a − 1/√a, D = −1
  // has a complex pair exactly where its discriminant
  //   Disc = 18ABCD − 4B³D + B²C² − 4AC³ − 27A²D²
  // is negative; Disc is a quartic in x (computed here by polynomial arithmetic, and compared in
  // the tests with the coefficients printed in the spec).
  const double A = sa_ * v_;
  const Poly B = {-v_, -sa_};
  const Poly C = {sa_ - 1 / sa_, 1.0};
  const double D = -1.0;
  Poly disc = mul(mul(B, C), Poly{18 * A * D});
  disc = add(disc, mul(mul(B, B), B), -4 * D);
  disc = add(disc, mul(mul(B, B), mul(C, C)));
  disc = add(disc, mul(mul(C, C), C), -4 * A);
  disc = add(disc, Poly{-27 * A * A * D * D});
  std::array<double, 5> out{};
  for (std::size_t i = 0; i < 5 && i < disc.size(); ++i) out[i] = disc[i];
  return out;
}

bool WishartLaw::stieltjes(double x, cplx& g) const {
  // g = 1/h with h³ + Bh h² + Ch h + Dh = 0 (monic and well scaled also when v → 0).
  const double c3 = sa_ * v_, c2 = -(sa_ * x + v_), c1 = x + sa_ - 1 / sa_, c0 = -1.0;
  const double Bh = c1 / c0, Ch = c2 / c0, Dh = c3 / c0;  // h³ + (c1 h² + c2 h + c3)/c0 = 0
  const double p = Ch - Bh * Bh / 3;
  const double q = 2 * Bh * Bh * Bh / 27 - Bh * Ch / 3 + Dh;
  const double disc = 0.25 * q * q + p * p * p / 27;
  if (!(disc > 0)) return false;  // three real roots: outside the support
  const double sq = std::sqrt(disc);
  // Stable Cardano: take the cube root without cancellation, get the other from u w = −p/3.
  double u, w;
  if (q >= 0) {
    w = -std::cbrt(0.5 * q + sq);
    u = (w != 0) ? -p / (3 * w) : 0.0;
  } else {
    u = std::cbrt(-0.5 * q + sq);
    w = (u != 0) ? -p / (3 * u) : 0.0;
  }
  // Complex pair y = −(u+w)/2 ± i √3/2 (u − w); Im g > 0 ⇔ Im h < 0.
  const cplx h(-0.5 * (u + w) - Bh / 3, -0.5 * std::sqrt(3.0) * std::fabs(u - w));
  g = 1.0 / h;
  // Newton polish on the original cubic.
  for (int it = 0; it < 1; ++it) {
    const cplx P = ((c3 * g + c2) * g + c1) * g + c0;
    const cplx dP = (3 * c3 * g + 2 * c2) * g + c1;
    if (std::abs(dP) == 0) break;
    const cplx step = P / dP;
    if (std::abs(step) > 0.1 * std::abs(g)) break;  // near a double root: keep Cardano's value
    g -= step;
  }
  if (g.imag() < 0) g = std::conj(g);
  return true;
}

std::vector<double> WishartLaw::piece_masses() const {
  std::vector<double> m;
  QuadratureOptions opt;
  for (int k = 0; k < pieces(); ++k) {
    auto f = [&](double theta) -> QVec<1> {
      const SpectralPoint p = at(k, theta);
      return QVec<1>::Constant(p.rho * p.jacobian);
    };
    m.push_back(integrate_gk<1>(f, 0.0, M_PI, opt)(0));
  }
  return m;
}

SpectralPoint WishartLaw::at(int piece, double theta) const {
  const Interval& iv = support_[static_cast<std::size_t>(piece)];
  const double L = iv.hi - iv.lo;
  SpectralPoint p;
  p.x = iv.lo + 0.5 * L * (1 - std::cos(theta));
  p.jacobian = 0.5 * L * std::sin(theta);
  cplx g;
  if (stieltjes(p.x, g)) {
    p.rho = g.imag() / M_PI;
    p.hilbert = g.real();
  }
  return p;
}

double WishartLaw::theta_of(int piece, double x) const {
  const Interval& iv = support_[static_cast<std::size_t>(piece)];
  const double c = 1 - 2 * (x - iv.lo) / (iv.hi - iv.lo);
  return std::acos(std::clamp(c, -1.0, 1.0));
}

double WishartLaw::density(double x) const {
  cplx g;
  return stieltjes(x, g) ? g.imag() / M_PI : 0.0;
}

double WishartLaw::hilbert(double x) const {
  cplx g;
  return stieltjes(x, g) ? g.real() : std::numeric_limits<double>::quiet_NaN();
}

// =============================================================================================
// SubordinatedLaw

SubordinatedLaw::SubordinatedLaw(std::shared_ptr<const TargetLaw> target, double delta) : target_(std::move(target)) {
  if (!(delta > 0) || !std::isfinite(delta)) throw NumericalError("SubordinatedLaw: delta must be finite and > 0");
  delta_ = delta;
  v_ = delta * delta;
  const TargetLaw& t = *target_;
  const double inv_v = 1.0 / v_;
  const auto gaps = t.gaps();
  // Excluded u-intervals: the parts of the gaps of supp μ0 where φ(u) <= 1/v.
  std::vector<Interval> excluded;
  for (std::size_t gi = 0; gi < gaps.size(); ++gi) {
    const Interval& g = gaps[gi];
    auto h = [&](double u) { return t.phi(u) - inv_v; };
    if (g.lo == -kInf) {
      // φ increases from 0 to ∞ on (−∞, r); φ(u) <= 1/(r − u)², so the root is in [r − δ, r).
      double lo = g.hi - delta_, hi = g.hi - 1e-15 * (1 + std::fabs(g.hi));
      while (h(lo) > 0) lo -= delta_;
      while (h(hi) < 0) hi = 0.5 * (hi + g.hi);
      excluded.push_back({-kInf, bracket_root(h, lo, hi)});
    } else if (g.hi == kInf) {
      double lo = g.lo + 1e-15 * (1 + std::fabs(g.lo)), hi = g.lo + delta_;
      while (h(hi) > 0) hi += delta_;
      while (h(lo) < 0) lo = 0.5 * (lo + g.lo);
      excluded.push_back({bracket_root(h, lo, hi), kInf});
    } else {
      // Finite gap: φ convex, infinite at both ends. A cheap lower bound first (atoms at the ends):
      // min_u w_l/(u−l)² + w_r/(r−u)² = (w_l^{1/3} + w_r^{1/3})³ / L².
      const double L = g.hi - g.lo;
      const double wl = t.boundary_weight_left(gi), wr = t.boundary_weight_right(gi);
      const double bound = std::pow(std::cbrt(wl) + std::cbrt(wr), 3) / (L * L);
      if (bound >= inv_v) continue;
      const double eps = 1e-13 * L;
      double lo = g.lo + eps, hi = g.hi - eps;
      auto dphi = [&](double u) { return t.phi_prime(u); };
      if (!(dphi(lo) < 0 && dphi(hi) > 0)) continue;  // cannot happen for a proper gap
      const double umin = bracket_root(dphi, lo, hi, 40);
      if (t.phi(umin) >= inv_v) continue;
      const double u1 = bracket_root(h, lo, umin);
      const double u2 = bracket_root(h, umin, hi);
      excluded.push_back({u1, u2});
    }
  }
  // U = complement of the excluded intervals; pieces in increasing order.
  for (std::size_t i = 0; i + 1 < excluded.size(); ++i) {
    const Interval piece{excluded[i].hi, excluded[i + 1].lo};
    upieces_.push_back(piece);
    mass_.push_back(t.mass_below(piece.hi) - t.mass_below(piece.lo));
    // At the ends y = 0 and ψ(u) = u + v g0(u) (real: u lies in a gap of supp μ0).
    support_.push_back({piece.lo + v_ * t.stieltjes(cplx(piece.lo, 0)).real(),
                        piece.hi + v_ * t.stieltjes(cplx(piece.hi, 0)).real()});
  }
}

double SubordinatedLaw::imaginary_part(double u) const {
  // Solve h = 1/F(Y) − v = 0 for Y = y², F(Y) = ∫ μ0(dx)/((u − x)² + Y). h increases with Y, is < 0
  // as Y → 0 for u ∈ U and >= 0 at Y = v. In s = log Y it is convex (≈ e^s/w near an atom of weight
  // w, ≈ e^s far from all): Newton from the right (s = log v) decreases monotonically to the root in a
  // few steps even when an atom is close to u; a bracket guards against rounding.
  const TargetLaw& t = *target_;
  double slo = std::log(1e-26 * v_), shi = std::log(v_);
  double F, dF;
  t.subordination_F(u, std::exp(slo), F, dF);
  if (1 / F - v_ >= 0) return std::sqrt(std::exp(slo));  // within ~1e-13 δ of an edge of U: negligible density
  double s = shi;
  for (int it = 0; it < 200; ++it) {
    const double Y = std::exp(s);
    t.subordination_F(u, Y, F, dF);
    const double h = 1 / F - v_;
    if (std::fabs(h) <= 1e-15 * v_) break;
    if (h < 0) slo = s;
    else shi = s;
    const double dh = -Y * dF / (F * F);  // dh/ds
    double sn = s - h / dh;
    const bool done = std::fabs(sn - s) <= 1e-12;  // quadratic convergence: error ~1e-24 in log Y
    if (!(sn > slo && sn < shi)) sn = done ? s : 0.5 * (slo + shi);  // out of the bracket: bisect
    s = sn;
    if (done || shi - slo <= 1e-14) break;
  }
  return std::sqrt(std::exp(s));
}

SubordinatedLaw::Node SubordinatedLaw::node(double u) const {
  const TargetLaw& t = *target_;
  const double y = imaginary_part(u);
  const cplx w(u, -y);
  cplx g, dg;
  t.stieltjes_both(w, g, dg);
  const cplx dz = 1.0 + v_ * dg;  // z'(w), z(w) = w + v g0(w)
  Node n;
  n.y = y;
  n.x = u + v_ * g.real();
  n.hilbert = g.real();
  n.dpsi = std::norm(dz) / dz.real();  // ψ'(u) = |z'|²/Re z' (z real along w(u) = u − i y(u))
  return n;
}

SpectralPoint SubordinatedLaw::at(int piece, double theta) const {
  const Interval& iv = upieces_[static_cast<std::size_t>(piece)];
  const double L = iv.hi - iv.lo;
  const double u = iv.lo + 0.5 * L * (1 - std::cos(theta));
  const Node n = node(u);
  SpectralPoint p;
  p.x = n.x;
  p.rho = n.y / (M_PI * v_);
  p.hilbert = n.hilbert;
  p.jacobian = n.dpsi * 0.5 * L * std::sin(theta);
  return p;
}

double SubordinatedLaw::psi(double u) const {
  for (const Interval& iv : upieces_)
    if (u > iv.lo && u < iv.hi) return node(u).x;
  return u + v_ * target_->stieltjes(cplx(u, 0)).real();
}

double SubordinatedLaw::psi_derivative(double u) const {
  for (const Interval& iv : upieces_)
    if (u > iv.lo && u < iv.hi) return node(u).dpsi;
  return 1 + v_ * target_->stieltjes_derivative(cplx(u, 0)).real();
}

double SubordinatedLaw::psi_inverse(double x) const {
  // ψ is an increasing homeomorphism of R. Bracket: inside a piece, on a gap between pieces, or
  // beyond the support (ψ(u) − u → 0 as |u| → ∞).
  auto f = [&](double u) { return psi(u) - x; };
  const auto& S = support_;
  for (std::size_t k = 0; k < S.size(); ++k) {
    if (x >= S[k].lo && x <= S[k].hi) {
      if (x == S[k].lo) return upieces_[k].lo;
      if (x == S[k].hi) return upieces_[k].hi;
      return bracket_root(f, upieces_[k].lo, upieces_[k].hi);
    }
    if (k + 1 < S.size() && x > S[k].hi && x < S[k + 1].lo) return bracket_root(f, upieces_[k].hi, upieces_[k + 1].lo);
  }
  if (x < S.front().lo) {
    double lo = upieces_.front().lo - delta_;
    while (f(lo) > 0) lo -= 2 * (upieces_.front().lo - lo);
    return bracket_root(f, lo, upieces_.front().lo);
  }
  double hi = upieces_.back().hi + delta_;
  while (f(hi) < 0) hi += 2 * (hi - upieces_.back().hi);
  return bracket_root(f, upieces_.back().hi, hi);
}

double SubordinatedLaw::theta_of(int piece, double x) const {
  const Interval& iv = upieces_[static_cast<std::size_t>(piece)];
  const Interval& sx = support_[static_cast<std::size_t>(piece)];
  if (x <= sx.lo) return 0.0;
  if (x >= sx.hi) return M_PI;
  auto f = [&](double u) { return node(u).x - x; };
  const double u = bracket_root(f, iv.lo, iv.hi);
  const double c = 1 - 2 * (u - iv.lo) / (iv.hi - iv.lo);
  return std::acos(std::clamp(c, -1.0, 1.0));
}

double SubordinatedLaw::density(double x) const {
  for (std::size_t k = 0; k < support_.size(); ++k)
    if (x > support_[k].lo && x < support_[k].hi) {
      const double u = psi_inverse(x);
      return imaginary_part(u) / (M_PI * v_);
    }
  return 0.0;
}

double SubordinatedLaw::hilbert(double x) const {
  const double u = psi_inverse(x);
  for (const Interval& iv : upieces_)
    if (u > iv.lo && u < iv.hi) return node(u).hilbert;
  return target_->stieltjes(cplx(u, 0)).real();
}

// =============================================================================================

std::unique_ptr<SpectralLaw> make_law(const std::shared_ptr<const TargetLaw>& target, double delta, LawMethod method) {
  const auto* w = dynamic_cast<const WishartTarget*>(target.get());
  if (method == LawMethod::closed_form && !w)
    throw InputError("law", "the closed form exists only for the Wishart target");
  if (w && method != LawMethod::subordination) return std::make_unique<WishartLaw>(w->kappa0(), delta);
  return std::make_unique<SubordinatedLaw>(target, delta);
}

}  // namespace hdat::tied_attention
