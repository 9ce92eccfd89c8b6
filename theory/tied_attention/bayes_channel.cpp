#include "hdat/tied_attention/bayes_channel.hpp"

#include <algorithm>
#include <boost/math/quadrature/gauss_kronrod.hpp>
#include <boost/math/special_functions/owens_t.hpp>
#include <cmath>
#include <limits>
#include <memory>

#include "hdat/core/error.hpp"

namespace hdat::tied_attention {

namespace {

constexpr double kLogSqrt2Pi = 0.91893853320467274178;  // log √(2π)

double normal_cdf(double x) { return 0.5 * std::erfc(-x / M_SQRT2); }
double log_normal_pdf(double x) { return -0.5 * x * x - kLogSqrt2Pi; }

// Owen's T gives Φ2 to ~1e-16 absolute: below kSmallZ (or far in the tail, where it is not even
// tried) Φ2 comes from a one-dimensional integral in log space instead.
constexpr double kTail = -6.0, kSmallZ = 1e-8;

// Hardmax T = 2 in the coordinates of the two row margins w1 = z00 − z01, w2 = z11 − z01
// (entries e = 0, 1, 2 ↔ (0,0), (0,1), (1,1)): μ = A ω with A = [[1, −1, 0], [0, −1, 1]].
constexpr double kA[2][3] = {{1, -1, 0}, {0, -1, 1}};

}  // namespace

std::string bayes_channel_name(BayesChannel ch) {
  switch (ch) {
    case BayesChannel::linear:
      return "linear";
    case BayesChannel::softmax:
      return "softmax";
    case BayesChannel::hardmax:
      return "hardmax";
  }
  return "?";
}

void channel_observation(const SymLayout& L, BayesChannel ch, double beta0, const TMat& label, double* obs) {
  const int T = L.T(), K = L.K();
  switch (ch) {
    case BayesChannel::linear:
      for (int e = 0; e < K; ++e) obs[e] = label(L.row(e), L.col(e));
      return;
    case BayesChannel::softmax: {
      // Logits up to a constant per row: L_ab = log(y_ab)/β0 = z_ab − c_a. Symmetry of z fixes
      // c_a − c_0 = L_0a − L_a0, so z̃ = L + (L_0a − L_a0) per row equals z − c_0 11ᵀ.
      TMat Lg(T, T);
      for (int a = 0; a < T; ++a)
        for (int b = 0; b < T; ++b) {
          if (!(label(a, b) > 0))
            throw NumericalError("softmax label entry underflowed to 0 (beta0 too large for a preimage; use channel=hardmax)");
          Lg(a, b) = std::log(label(a, b)) / beta0;
        }
      for (int e = 0; e < K; ++e) {
        const int a = L.row(e), b = L.col(e);
        const double zab = Lg(a, b) + Lg(0, a) - Lg(a, 0), zba = Lg(b, a) + Lg(0, b) - Lg(b, 0);
        obs[e] = 0.5 * (zab + zba);
      }
      return;
    }
    case BayesChannel::hardmax:
      for (int e = 0; e < K; ++e) obs[e] = 0;
      for (int a = 0; a < T; ++a) {
        Eigen::Index k = 0;
        label.row(a).maxCoeff(&k);
        obs[a] = static_cast<double>(k);
      }
      return;
  }
}

double log_normal_cdf(double x) {
  if (x > -30) return std::log(normal_cdf(x));
  // Φ(x) = φ(x)/|x| (1 − 1/x² + 3/x⁴ − 15/x⁶ + ...), x → −∞.
  const double x2 = x * x;
  return log_normal_pdf(x) - std::log(-x) + std::log1p(-1 / x2 + 3 / (x2 * x2) - 15 / (x2 * x2 * x2));
}

double bivariate_normal_cdf(double h, double k, double rho) {
  if (!(std::fabs(rho) < 1)) throw NumericalError("bivariate normal: |rho| must be < 1");
  // Owen (1956): Φ2 = ½Φ(h) + ½Φ(k) − T(h, a_h) − T(k, a_k) − β, a_h = (k − ρh)/(h r̄),
  // a_k = (h − ρk)/(k r̄), β = ½ when h and k have opposite signs. At h = 0 the limit of T(h, a_h)
  // is sign(k − ρh)/4 (from h > 0), matched by taking β from the same side.
  const double rbar = std::sqrt((1 - rho) * (1 + rho));
  auto term = [&](double x, double y) {
    const double num = y - rho * x;
    if (x == 0) return num > 0 ? 0.25 : num < 0 ? -0.25 : 0.0;
    return boost::math::owens_t(x, num / (x * rbar));
  };
  if (h == 0 && k == 0) return 0.25 + std::asin(rho) / (2 * M_PI);  // Sheppard
  const bool hpos = h >= 0, kpos = k >= 0;
  const double beta = hpos != kpos ? 0.5 : 0.0;
  const double v = 0.5 * normal_cdf(h) + 0.5 * normal_cdf(k) - term(h, k) - term(k, h) - beta;
  return std::clamp(v, 0.0, std::min(normal_cdf(h), normal_cdf(k)));
}

OrthantJet orthant_jet(double a1, double a2, double rho) {
  const double rbar = std::sqrt((1 - rho) * (1 + rho));
  OrthantJet j;
  const double c1 = (a2 - rho * a1) / rbar, c2 = (a1 - rho * a2) / rbar;
  const double owen = std::min(a1, a2) >= kTail ? bivariate_normal_cdf(a1, a2, rho) : 0.0;
  if (owen >= kSmallZ) {
    j.log_Z = std::log(owen);
  } else {
    // Small Z: Z = φ(a)·∫_0^∞ exp(a t − t²/2) Φ(c(t)) dt (a the smaller argument, x = a − t),
    // c(t) = (b − ρ(a − t))/r̄; the integral is computed relative to its value at t = 0.
    const double a = std::min(a1, a2), b = std::max(a1, a2);
    const double lc0 = log_normal_cdf((b - rho * a) / rbar);
    auto f = [&](double t) {
      return std::exp(a * t - 0.5 * t * t + log_normal_cdf((b - rho * (a - t)) / rbar) - lc0);
    };
    const double I = boost::math::quadrature::gauss_kronrod<double, 31>::integrate(
        f, 0.0, std::numeric_limits<double>::infinity(), 15, 1e-12);
    j.log_Z = log_normal_pdf(a) + lc0 + std::log(I);
  }
  const double l1 = log_normal_pdf(a1) + log_normal_cdf(c1) - j.log_Z;
  const double l2 = log_normal_pdf(a2) + log_normal_cdf(c2) - j.log_Z;
  const double lp = log_normal_pdf(a1) + log_normal_pdf(c1) - std::log(rbar) - j.log_Z;  // φ2(a1, a2; ρ)/Z
  j.d1 = std::exp(l1);
  j.d2 = std::exp(l2);
  const double p = std::exp(lp);
  j.d11 = -a1 * j.d1 - rho * p;
  j.d22 = -a2 * j.d2 - rho * p;
  j.d12 = p;
  return j;
}

double bayes_output(const SymLayout& L, BayesChannel ch, const double* obs, const KVec& omega, const KMat& S, KVec& g,
                    KMat& dg) {
  const int K = L.K();
  g.resize(K);
  dg.resize(K, K);
  switch (ch) {
    case BayesChannel::linear:
    case BayesChannel::softmax: {
      const Eigen::LLT<KMat> llt(S);
      if (llt.info() != Eigen::Success) throw NumericalError("output channel: the field covariance is not positive definite");
      KMat P = llt.solve(KMat::Identity(K, K));
      KVec r(K);
      for (int e = 0; e < K; ++e) r(e) = obs[e] - omega(e);
      double logdet = 0;
      for (int e = 0; e < K; ++e) logdet += 2 * std::log(llt.matrixL()(e, e));
      double logZ = -0.5 * logdet;
      if (ch == BayesChannel::softmax) {
        // The observation fixes z up to c·1: integrate the flat direction out of the Gaussian,
        // P = S⁻¹ − S⁻¹11ᵀS⁻¹/(1ᵀS⁻¹1) (rank K − 1, annihilates 1).
        const KVec u = P.rowwise().sum();
        const double p1 = u.sum();
        P -= u * u.transpose() / p1;
        logZ -= 0.5 * std::log(p1);
      }
      g = P * r;
      dg = -P;
      return logZ - 0.5 * r.dot(g);
    }
    case BayesChannel::hardmax: {
      if (L.T() != 2) throw InputError("T", "the hardmax output function is implemented for T = 2");
      // Row 0 says sign(w1), row 1 sign(w2); Cov(w) = A S Aᵀ; Z = Φ2(σ1μ1/τ1, σ2μ2/τ2; ρ).
      const Eigen::Matrix<double, 2, 3> A = (Eigen::Matrix<double, 2, 3>() << kA[0][0], kA[0][1], kA[0][2], kA[1][0],
                                             kA[1][1], kA[1][2]).finished();
      const Eigen::Matrix2d C = A * S.topLeftCorner(3, 3) * A.transpose();
      const double sg[2] = {obs[0] == 0 ? 1.0 : -1.0, obs[1] == 1 ? 1.0 : -1.0};
      const double tau[2] = {std::sqrt(C(0, 0)), std::sqrt(C(1, 1))};
      const Eigen::Vector2d mu = A * omega.head(3);
      const double rho = sg[0] * sg[1] * C(0, 1) / (tau[0] * tau[1]);
      const OrthantJet j = orthant_jet(sg[0] * mu(0) / tau[0], sg[1] * mu(1) / tau[1], rho);
      // a = D μ, D = diag(σ_i/τ_i): ∇_ω log Z = Aᵀ D ∇_a, ∇²_ω log Z = Aᵀ D (∇²Z/Z − ∇∇ᵀ) D A.
      const Eigen::Matrix2d D = Eigen::Vector2d(sg[0] / tau[0], sg[1] / tau[1]).asDiagonal();
      const Eigen::Vector2d ga(j.d1, j.d2);
      Eigen::Matrix2d H;
      H << j.d11 - j.d1 * j.d1, j.d12 - j.d1 * j.d2, j.d12 - j.d1 * j.d2, j.d22 - j.d2 * j.d2;
      g = A.transpose() * (D * ga);
      dg = A.transpose() * (D * H * D) * A;
      return j.log_Z;
    }
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// The channel part of the state evolution.

namespace {
// ∫ f over [lo, hi] split at the given points (each piece adaptive Gauss–Kronrod).
template <class F>
double integrate_split(F&& f, std::vector<double> points, double lo, double hi, double tol) {
  points.push_back(lo);
  points.push_back(hi);
  for (double& p : points) p = std::clamp(p, lo, hi);
  std::sort(points.begin(), points.end());
  double total = 0;
  for (std::size_t i = 0; i + 1 < points.size(); ++i) {
    if (!(points[i + 1] > points[i])) continue;
    total += boost::math::quadrature::gauss_kronrod<double, 21>::integrate(f, points[i], points[i + 1], 8, tol);
  }
  return total;
}
}  // namespace

ChannelInformation::ChannelInformation(int T, BayesChannel ch, double noise, ChannelInformationOptions options)
    : T_(T), ch_(ch), noise_(noise), opt_(options) {
  if (T < 1 || T > kMaxT) throw InputError("T", "must be in [1, 8]");
  if (ch == BayesChannel::softmax && T < 2) throw InputError("channel", "softmax needs T >= 2 (T = 1 is constant)");
  if (ch == BayesChannel::hardmax && T != 2)
    throw InputError("channel", "the hardmax state evolution is implemented for T = 2");
  if (ch == BayesChannel::hardmax) {
    const int K = T * (T + 1) / 2;
    set_ = std::make_shared<const GaussianSampleSet>(opt_.samples, 2 * K, opt_.seed, opt_.sampling, 16);
  }
}

ChannelInformation::Value ChannelInformation::evaluate(double q, double v) const {
  const int K = T_ * (T_ + 1) / 2;
  const double s = v + noise_ / 2;
  Value r;
  if (!(s > 0)) {
    r.information = std::numeric_limits<double>::infinity();
    return r;
  }
  switch (ch_) {
    case BayesChannel::linear:
      r.information = K / s;
      return r;
    case BayesChannel::softmax:
      r.information = (K - 1) / s;
      return r;
    case BayesChannel::hardmax:
      break;
  }
  // Unit noise: ω = √r C^{1/2} u, z = ω + C^{1/2} w (r = q/s); the label is the rows' argmax.
  const double rq = std::max(q, 0.0) / s;
  const SymLayout L(T_);
  auto kernel = [&, Y = TMat(T_, T_), obs = std::vector<double>(static_cast<std::size_t>(K)), omega = KVec(K),
                 C = KMat(KMat::Zero(K, K)), g = KVec(K), dg = KMat(K, K)](const double* z, double* out) mutable {
    for (int e = 0; e < K; ++e) {
      const double c = L.variance_factor(e);
      C(e, e) = c;
      omega(e) = std::sqrt(c * rq) * z[e];
      Y(L.row(e), L.col(e)) = Y(L.col(e), L.row(e)) = omega(e) + std::sqrt(c) * z[K + e];
    }
    channel_observation(L, ch_, 1.0, Y, obs.data());
    bayes_output(L, ch_, obs.data(), omega, C, g, dg);
    out[0] = 0;
    for (int e = 0; e < K; ++e) out[0] -= C(e, e) * dg(e, e);
  };
  const Estimate est = expectation(*set_, kernel, 1, true, opt_.threads);
  r.information = est.mean(0) / s;
  r.se = est.se(0) / s;
  return r;
}

double ChannelInformation::hardmax2_quadrature(double r, double tol) {
  // ω ~ N(0, r C) enters through μ = A ω ~ N(0, r B), B = A C Aᵀ = [[3, 1], [1, 3]]; with unit noise
  // w | μ ~ N(μ, B). Per label σ ∈ {±1}², Z_σ = Φ2(σ1μ1/√3, σ2μ2/√3; σ1σ2/3) and
  // gᵀ C g = g_μᵀ B g_μ = d1² + d2² + (2/3) σ1σ2 d1 d2 (d = ∇_a log Z). In η with μ = √r L η
  // (L = chol B) the information lies near the lines μ1 = 0 (η1 = 0) and μ2 = 0.
  const double L11 = std::sqrt(3.0), L21 = 1 / std::sqrt(3.0), L22 = std::sqrt(8.0 / 3.0), sr = std::sqrt(r);
  auto F = [&](double mu1, double mu2) {
    double total = 0;
    for (int s1 = -1; s1 <= 1; s1 += 2)
      for (int s2 = -1; s2 <= 1; s2 += 2) {
        const OrthantJet j = orthant_jet(s1 * mu1 / L11, s2 * mu2 / L11, s1 * s2 / 3.0);
        total += std::exp(j.log_Z) * (j.d1 * j.d1 + j.d2 * j.d2 + (2.0 / 3.0) * s1 * s2 * j.d1 * j.d2);
      }
    return total;
  };
  const double w = std::min(9.0, 4.0 / sr);  // width of the informative strips in η
  auto inner = [&](double eta1) {
    const double line = -L21 * eta1 / L22;  // μ2 = 0
    auto f = [&](double eta2) {
      return std::exp(log_normal_pdf(eta2)) * F(sr * L11 * eta1, sr * (L21 * eta1 + L22 * eta2));
    };
    return integrate_split(f, {line - w, line, line + w}, -9.0, 9.0, tol);
  };
  auto outer = [&](double eta1) { return std::exp(log_normal_pdf(eta1)) * inner(eta1); };
  return integrate_split(outer, {-w, 0.0, w}, -9.0, 9.0, tol);
}

// ---------------------------------------------------------------------------------------------

SampledInformation sampled_information(int T, BayesChannel ch, double beta0, double q, double v, double noise, long samples,
                                       std::uint64_t seed, Sampling sampling) {
  const SymLayout L(T);
  const int K = L.K();
  const GaussianSampleSet set(samples, 3 * K, seed, sampling, 16);
  const double s = v + noise / 2;
  auto kernel = [&, Y = TMat(T, T), obs = std::vector<double>(static_cast<std::size_t>(K)), omega = KVec(K),
                 sv = KMat(KMat::Zero(K, K)), g = KVec(K), dg = KMat(K, K)](const double* z, double* out) mutable {
    for (int e = 0; e < K; ++e) {
      const double c = L.variance_factor(e);
      omega(e) = std::sqrt(c * q) * z[e];
      const double field = omega(e) + std::sqrt(c * v) * z[K + e] + std::sqrt(c * noise / 2) * z[2 * K + e];
      Y(L.row(e), L.col(e)) = Y(L.col(e), L.row(e)) = field;
      sv(e, e) = c * s;
    }
    // The label as the data would carry it.
    if (ch == BayesChannel::softmax) softmax_rows(TMat(Y), beta0, Y);
    channel_observation(L, ch, beta0, Y, obs.data());
    bayes_output(L, ch, obs.data(), omega, sv, g, dg);
    out[0] = out[1] = 0;
    for (int e = 0; e < K; ++e) {
      const double c = L.variance_factor(e);
      out[0] += c * g(e) * g(e);
      out[1] -= c * dg(e, e);
    }
  };
  const Estimate est = expectation(set, kernel, 2, true, 1);
  SampledInformation r;
  r.score = est.mean(0);
  r.score_se = est.se(0);
  r.curvature = est.mean(1);
  r.curvature_se = est.se(1);
  return r;
}

}  // namespace hdat::tied_attention
