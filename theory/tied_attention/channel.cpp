#include "hdat/tied_attention/channel.hpp"

#include <cmath>
#include <stdexcept>

#include "hdat/core/error.hpp"

namespace hdat::tied_attention {

namespace {

// What one Gaussian sample contributes to the sample side (derivation.md §8), one value per term:
// the Moreau envelope f, its Σ-derivative, the pathwise m-derivative, Σ_e c_e [∇²f]_ee, the test
// errors with and without label noise, the training loss, and statistics of the prox solve.
namespace term {
enum : int {
  envelope, d_sigma, d_m_pathwise, d_q_pathwise, hessian_trace, test, test_clean, train, prox_iterations, switched,
  several_minima, unconverged, count
};
}  // namespace term

// The β0 → ∞ limit of the softmax labels: each row one-hot at its argmax.
void one_hot_rows(TMat& Y) {
  for (Eigen::Index a = 0; a < Y.rows(); ++a) {
    Eigen::Index k = 0;
    Y.row(a).maxCoeff(&k);
    Y.row(a).setZero();
    Y(a, k) = 1;
  }
}

// The sample side's integrand at one sample z = (u, w, ξ): the labels from the teacher's fields
// h0 = √(c_e Q0) u (+ noise √(c_e Δ/2) ξ), the student's fields ω = √c_e (a u + b w), and the prox of
// the loss at ω. Copied once per thread by hdat::block_expectations (the scratch is per thread); the
// warm starts are per sample, so threads never share one.
struct ProxSampleKernel {
  const SymLayout* L = nullptr;
  Channel channel = Channel::linear;
  double beta = 0, beta0 = 0, Q0 = 0, noise = 0, Sigma = 0, a = 0, b = 0;
  const SampleSideOptions* opt = nullptr;
  bool use_warm = false, maybe_nonconvex = false, sigma_limit = false;
  double* warm = nullptr;  ///< K values per sample
  // Scratch.
  KVec omega, start, D, cvec;
  TMat Y, Y0, P, H0, Om;

  ProxSampleKernel(const SymLayout& layout, double Sigma_) : L(&layout), Sigma(Sigma_) {
    const int K = layout.K(), T = layout.T();
    omega.resize(K), start.resize(K), D.resize(K), cvec.resize(K);
    Y.resize(T, T), Y0.resize(T, T), P.resize(T, T), H0.resize(T, T), Om.resize(T, T);
    for (int e = 0; e < K; ++e) {
      D(e) = layout.weight(e) / (2 * Sigma);
      cvec(e) = layout.variance_factor(e);
    }
  }

  void operator()(long i, const double* z, double* out) {
    fields_and_labels(z);
    out[term::test] = (Y - P).squaredNorm();
    out[term::test_clean] = (Y0 - P).squaredNorm();
    double* ws = warm + static_cast<std::size_t>(i) * L->K();
    if (sigma_limit) small_sigma_terms(z, ws, out);
    else prox_terms(z, ws, out);
  }

 private:
  void fields_and_labels(const double* z) {
    const double* u = z;
    const double* w = z + L->K();
    const double* xi = z + 2 * L->K();
    for (int e = 0; e < L->K(); ++e) {
      const double ce = cvec(e), sc = std::sqrt(ce);
      const double h0 = std::sqrt(ce * Q0) * u[e];
      const double z0 = h0 + (noise > 0 ? std::sqrt(ce * noise / 2) * xi[e] : 0.0);
      omega(e) = sc * (a * u[e] + b * w[e]);
      const int ra = L->row(e), rb = L->col(e);
      Y(ra, rb) = Y(rb, ra) = z0;
      H0(ra, rb) = H0(rb, ra) = h0;
    }
    Om = L->matrix(omega);
    if (channel == Channel::softmax && opt->hardmax_labels) {
      one_hot_rows(Y);
      Y0 = H0;
      one_hot_rows(Y0);
      softmax_rows(Om, beta, P);
    } else if (channel == Channel::softmax) {
      softmax_rows(TMat(Y), beta0, Y);
      softmax_rows(TMat(H0), beta0, Y0);
      softmax_rows(Om, beta, P);
    } else {
      Y0 = H0;
      P = Om;
    }
  }

  // Σ → 0: f → L(Ω), ∂f/∂Ω → ∇L(Ω), ∇²_Ω f → ∇²L(Ω) (derivation.md §8.2).
  void small_sigma_terms(const double* u, double* ws, double* out) {
    const int K = L->K();
    KVec grad(K);
    KMat hess(K, K);
    const double loss = channel_loss(*L, channel, beta, Y, omega, &grad, &hess);
    const double* w = u + K;
    double dS = 0, dm = 0, dq = 0, htr = 0;
    for (int e = 0; e < K; ++e) {
      dS -= grad(e) * grad(e) / L->weight(e);
      dm += grad(e) * std::sqrt(cvec(e)) * u[e];
      dq += grad(e) * std::sqrt(cvec(e)) * w[e];
      htr += cvec(e) * hess(e, e);
      ws[e] = omega(e);
    }
    out[term::envelope] = loss, out[term::d_sigma] = dS, out[term::d_m_pathwise] = dm, out[term::d_q_pathwise] = dq;
    out[term::hessian_trace] = htr, out[term::train] = loss, out[term::prox_iterations] = 0, out[term::switched] = 0;
    out[term::several_minima] = 0, out[term::unconverged] = 0;
  }

  // The prox: where it may be non-convex, its global minimiser from every branch start (and the
  // warm start); elsewhere the unique minimiser from the warm start (else Ω). Then the envelope's
  // derivatives at the minimiser.
  void prox_terms(const double* u, double* ws, double* out) {
    const int K = L->K();
    if (use_warm) for (int e = 0; e < K; ++e) start(e) = ws[e];
    else start = omega;
    ProxResult pr;
    double switched_start = 0, several = 0, iterations = 0;
    if (maybe_nonconvex && opt->multistart) {
      // One-hot labels have no finite matching logits: a large but finite margin instead.
      const double floor_y = opt->hardmax_labels ? 1e-4 : 1e-300;
      GlobalProxResult g = prox_global(*L, channel, beta, Sigma, omega, Y, use_warm ? &start : nullptr, floor_y, opt->prox);
      pr = std::move(g.best);
      switched_start = g.winner > 0 ? 1 : 0;
      several = g.distinct_minima > 1 ? 1 : 0;
      iterations = double(pr.iterations);
    } else {
      pr = prox_solve(*L, channel, beta, Sigma, omega, Y, start, opt->prox);
      iterations = double(pr.iterations);
    }
    for (int e = 0; e < K; ++e) ws[e] = pr.v(e);
    const double* w = u + K;
    const KVec r = pr.v - omega;
    double dS = 0, dm = 0, dq = 0, htr = 0;
    Eigen::LDLT<KMat> ldlt(pr.hess);
    KMat Hinv = ldlt.solve(KMat::Identity(K, K));
    for (int e = 0; e < K; ++e) {
      const double we = L->weight(e), grad_e = -D(e) * r(e);  // ∂f/∂Ω_e
      dS -= we * r(e) * r(e) / (4 * Sigma * Sigma);
      dm += grad_e * std::sqrt(cvec(e)) * u[e];
      dq += grad_e * std::sqrt(cvec(e)) * w[e];
      htr += cvec(e) * (D(e) - D(e) * D(e) * Hinv(e, e));
    }
    out[term::envelope] = pr.value, out[term::d_sigma] = dS, out[term::d_m_pathwise] = dm, out[term::d_q_pathwise] = dq;
    out[term::hessian_trace] = htr, out[term::train] = pr.loss, out[term::prox_iterations] = iterations;
    out[term::switched] = switched_start, out[term::several_minima] = several;
    out[term::unconverged] = pr.converged ? 0.0 : 1.0;
  }
};

}  // namespace

SampleSide::SampleSide(int T, Channel channel, double beta, double beta0, double Q0, double noise, SampleSideOptions options)
    : layout_(T), channel_(channel), beta_(beta), beta0_(beta0), Q0_(Q0), noise_(noise), opt_(options) {
  if (T < 1 || T > kMaxT) throw InputError("T", "must be in [1, 8]");
  if (!(Q0 > 0)) throw InputError("Q0", "must be > 0");
  const int K = layout_.K();
  const int dim = (noise > 0 ? 3 : 2) * K;
  opt_.groups = std::max(2, opt_.groups);
  const long n = std::max<long>(opt_.samples / opt_.groups, 1) * opt_.groups;
  set_ = GaussianSampleSet(n, dim, opt_.seed, opt_.sampling, opt_.groups);
  warm_.assign(static_cast<std::size_t>(n) * K, 0.0);
}

SampleSideResult SampleSide::evaluate(double alpha, double Sigma, double m, double q) {
  const SymLayout& L = layout_;
  const int K = L.K(), T = L.T();
  if (!(Sigma >= 0) || !std::isfinite(Sigma)) throw NumericalError("sample side: Sigma must be >= 0 (got " + std::to_string(Sigma) + ")");
  if (channel_ == Channel::linear && opt_.exact_linear) {
    // Entry e: min_h w_e[(h − ω)²/(4Σ) + (y − h)²] = w_e (y − ω)²/(1 + 4Σ), E(y_e − ω_e)² =
    // c_e(Q0 + Δ/2 − 2m + q) and Σ_e w_e c_e = 2K (derivation.md §4): all in closed form.
    SampleSideResult r;
    const double E = Q0_ + noise_ / 2 - 2 * m + q, a4 = 1 + 4 * Sigma;
    r.M = 2 * K * E / a4;
    r.dM_dSigma = -4 * r.M / a4;
    r.dM_dm = -4.0 * K / a4;
    r.dM_dq = 2.0 * K / a4 * opt_.broken_dq_factor;
    r.qhat = -4 * alpha * r.dM_dSigma;
    r.mhat = -2 * alpha * r.dM_dm;
    r.Sigmahat = 4 * alpha * r.dM_dq;
    r.train_loss = 2 * K * E / (a4 * a4);
    r.test_error = 2 * K * E;
    r.test_error_clean = 2 * K * (Q0_ - 2 * m + q);
    return r;
  }
  ProxSampleKernel kernel(L, Sigma);
  kernel.channel = channel_, kernel.beta = beta_, kernel.beta0 = beta0_, kernel.Q0 = Q0_, kernel.noise = noise_;
  kernel.a = m / std::sqrt(Q0_);
  const double b2 = q - m * m / Q0_;
  kernel.b = b2 > 0 ? std::sqrt(b2) : 0.0;  // q >= m²/Q0 (Cauchy–Schwarz); rounding may give −0
  kernel.opt = &opt_;
  kernel.use_warm = opt_.warm_start && warm_valid_;
  // The prox can be non-convex only where the quadratic's curvature 1/(2Σ) does not dominate the
  // loss Hessian (|∇²ℓ_row| <= β²(1/2 + 2) per row, each entry in at most two rows).
  kernel.maybe_nonconvex = channel_ == Channel::softmax && 1 / (2 * Sigma) < 5 * beta_ * beta_;
  // Σ → 0 (the trivial phase Ŝ = 0 has Σ = 0 exactly, and the iteration approaches it): the prox
  // is H* = Ω − 2Σ w⁻¹∇L(Ω) + O(Σ²), so f → L(Ω), ∂f/∂Ω → ∇L(Ω), ∇²_Ω f → ∇²L(Ω)
  // (derivation.md §8.2). Below kSigmaLimit the limit is used: its error O(Σ) is far below the
  // Monte Carlo error, while r = H* − Ω computed from a Newton solve would lose 16 + log10 Σ digits.
  constexpr double kSigmaLimit = 1e-9;
  kernel.sigma_limit = Sigma < kSigmaLimit;
  kernel.warm = warm_.data();
  // Groups: the random shifts of the Sobol set, or consecutive blocks of i.i.d. Monte Carlo samples
  // (the core's Monte Carlo set is one group; any partition of i.i.d. samples is as good).
  const int G = set_.kind() == Sampling::sobol ? set_.groups() : opt_.groups;
  const Eigen::MatrixXd gm = block_expectations(set_, kernel, term::count, G, opt_.threads);
  warm_valid_ = true;
  // Hats per group (fixed order: bit-identical for any thread count). ∂_q M and ∂_m M: the pathwise
  // forms where the minimiser may jump between branches (and Ω depends on w, b > 0), else the
  // Hessian form (one more Stein step, lower variance; header and derivation.md §8.3).
  const Eigen::VectorXd mean = gm.rowwise().mean();
  const bool pathwise = kernel.maybe_nonconvex && !kernel.sigma_limit && kernel.b > 1e-6 * std::sqrt(std::max(q, 1e-300));
  auto hessian_form = [&](const Eigen::VectorXd& v, double& dq, double& dmM) {
    dq = 0.5 * v(term::hessian_trace);
    dmM = v(term::d_m_pathwise) / std::sqrt(Q0_) - (m / Q0_) * v(term::hessian_trace);
  };
  auto hats = [&](const Eigen::VectorXd& v, double& dq, double& dmM) {
    if (pathwise) {
      dq = v(term::d_q_pathwise) / (2 * kernel.b);
      dmM = v(term::d_m_pathwise) / std::sqrt(Q0_) - (m / Q0_) * 2 * dq;
    } else {
      hessian_form(v, dq, dmM);
    }
    dq *= opt_.broken_dq_factor;
    return Eigen::Vector3d(-4 * alpha * v(term::d_sigma), -2 * alpha * dmM, 4 * alpha * dq);
  };
  SampleSideResult r;
  r.pathwise = pathwise;
  hessian_form(mean, r.dM_dq_hessian, r.dM_dm_hessian);
  r.M = mean(term::envelope);
  r.dM_dSigma = mean(term::d_sigma);
  const Eigen::Vector3d h = hats(mean, r.dM_dq, r.dM_dm);
  r.qhat = h(0);
  r.mhat = h(1);
  r.Sigmahat = h(2);
  r.test_error = mean(term::test);
  r.test_error_clean = mean(term::test_clean);
  r.train_loss = mean(term::train);
  r.mean_prox_iterations = mean(term::prox_iterations);
  r.multistart_switches = std::lround(mean(term::switched) * static_cast<double>(set_.size()));
  r.multiple_minima = std::lround(mean(term::several_minima) * static_cast<double>(set_.size()));
  r.unconverged = std::lround(mean(term::unconverged) * static_cast<double>(set_.size()));
  // Standard errors from the spread of the G group estimates.
  Eigen::MatrixXd gh(3, G);
  for (int g = 0; g < G; ++g) {
    double dq, dmM;
    gh.col(g) = hats(gm.col(g), dq, dmM);
  }
  const Eigen::MatrixXd ch = gh.colwise() - gh.rowwise().mean();
  r.hat_cov = ch * ch.transpose() / (double(G) * (G - 1));
  auto se = [&](int k) {
    const Eigen::RowVectorXd d = gm.row(k).array() - mean(k);
    return std::sqrt(d.squaredNorm() / (double(G) * (G - 1)));
  };
  r.se_test_error = se(term::test);
  r.se_test_error_clean = se(term::test_clean);
  r.se_train_loss = se(term::train);
  return r;
}

}  // namespace hdat::tied_attention
