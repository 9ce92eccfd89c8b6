#include "hdat/tied_attention/channel.hpp"

#include <omp.h>

#include <cmath>
#include <stdexcept>

#include "hdat/core/error.hpp"

namespace hdat::tied {

namespace {
constexpr int kOut = 9;  // f, ∂_Σ f, pathwise ∂_m, Σ c_e [∇²f]_ee, test, test_clean, train, iterations, switched
constexpr long kChunk = 256;

// The β0 → ∞ limit of the softmax labels: each row one-hot at its argmax.
void one_hot_rows(TMat& Y) {
  for (Eigen::Index a = 0; a < Y.rows(); ++a) {
    Eigen::Index k = 0;
    Y.row(a).maxCoeff(&k);
    Y.row(a).setZero();
    Y(a, k) = 1;
  }
}
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
  const double a = m / std::sqrt(Q0_);
  const double b2 = q - m * m / Q0_;
  const double b = b2 > 0 ? std::sqrt(b2) : 0.0;  // q >= m²/Q0 (Cauchy–Schwarz); rounding may give −0
  // Groups: the random shifts of the Sobol set, or consecutive blocks of i.i.d. Monte Carlo samples
  // (the core's Monte Carlo set is one group; any partition of i.i.d. samples is as good).
  const int G = set_.kind() == Sampling::sobol ? set_.groups() : opt_.groups;
  const long per_group = set_.size() / G;
  const long chunks_per_group = (per_group + kChunk - 1) / kChunk;
  const long n_chunks = chunks_per_group * G;
  Eigen::MatrixXd sums = Eigen::MatrixXd::Zero(kOut, n_chunks);
  long unconverged = 0;
  const int nt = opt_.threads > 0 ? opt_.threads : omp_get_max_threads();
  const bool use_warm = opt_.warm_start && warm_valid_;
  // The prox can be non-convex only where the quadratic's curvature 1/(2Σ) does not dominate the
  // loss Hessian (|∇²ℓ_row| <= β²(1/2 + 2) per row, each entry in at most two rows).
  const bool maybe_nonconvex = channel_ == Channel::softmax && 1 / (2 * Sigma) < 5 * beta_ * beta_;
  // Σ → 0 (the trivial phase Ŝ = 0 has Σ = 0 exactly, and the iteration approaches it): the prox
  // is H* = Ω − 2Σ w⁻¹∇L(Ω) + O(Σ²), so f → L(Ω), ∂f/∂Ω → ∇L(Ω), ∇²_Ω f → ∇²L(Ω)
  // (derivation.md §8.2). Below kSigmaLimit the limit is used: its error O(Σ) is far below the
  // Monte Carlo error, while r = H* − Ω computed from a Newton solve would lose 16 + log10 Σ digits.
  constexpr double kSigmaLimit = 1e-9;
  const bool sigma_limit = Sigma < kSigmaLimit;
#pragma omp parallel num_threads(nt) reduction(+ : unconverged)
  {
    KVec omega(K), start(K), D(K), cvec(K);
    TMat Y(T, T), Y0(T, T), P(T, T), H0(T, T), Om(T, T);
    for (int e = 0; e < K; ++e) {
      D(e) = L.weight(e) / (2 * Sigma);
      cvec(e) = L.variance_factor(e);
    }
    Eigen::Matrix<double, kOut, 1> out;
#pragma omp for schedule(static)
    for (long c = 0; c < n_chunks; ++c) {
      const long g = c / chunks_per_group, j = c % chunks_per_group;
      const long begin = g * per_group + j * kChunk;
      const long end = std::min(begin + kChunk, (g + 1) * per_group);
      for (long i = begin; i < end; ++i) {
        const double* z = set_.sample(i);
        const double* u = z;
        const double* w = z + K;
        const double* xi = z + 2 * K;
        for (int e = 0; e < K; ++e) {
          const double ce = cvec(e), sc = std::sqrt(ce);
          const double h0 = std::sqrt(ce * Q0_) * u[e];
          const double z0 = h0 + (noise_ > 0 ? std::sqrt(ce * noise_ / 2) * xi[e] : 0.0);
          omega(e) = sc * (a * u[e] + b * w[e]);
          const int ra = L.row(e), rb = L.col(e);
          Y(ra, rb) = Y(rb, ra) = z0;
          H0(ra, rb) = H0(rb, ra) = h0;
        }
        Om = L.matrix(omega);
        if (channel_ == Channel::softmax && opt_.hardmax_labels) {
          one_hot_rows(Y);
          Y0 = H0;
          one_hot_rows(Y0);
          softmax_rows(Om, beta_, P);
        } else if (channel_ == Channel::softmax) {
          softmax_rows(TMat(Y), beta0_, Y);
          softmax_rows(TMat(H0), beta0_, Y0);
          softmax_rows(Om, beta_, P);
        } else {
          Y0 = H0;
          P = Om;
        }
        const double test = (Y - P).squaredNorm(), test_clean = (Y0 - P).squaredNorm();
        double* ws = warm_.data() + static_cast<std::size_t>(i) * K;
        if (sigma_limit) {
          KVec grad(K);
          KMat hess(K, K);
          const double loss = channel_loss(L, channel_, beta_, Y, omega, &grad, &hess);
          double dS = 0, dm = 0, htr = 0;
          for (int e = 0; e < K; ++e) {
            dS -= grad(e) * grad(e) / L.weight(e);
            dm += grad(e) * std::sqrt(cvec(e)) * u[e];
            htr += cvec(e) * hess(e, e);
            ws[e] = omega(e);
          }
          out << loss, dS, dm, htr, test, test_clean, loss, 0.0, 0.0;
          sums.col(c) += out;
          continue;
        }
        // Prox: warm start, else Ω; a second start from the label-matching logits where non-convex.
        if (use_warm) for (int e = 0; e < K; ++e) start(e) = ws[e];
        else start = omega;
        ProxResult pr = prox_solve(L, channel_, beta_, Sigma, omega, Y, start, opt_.prox);
        double switched = 0;
        if (maybe_nonconvex && opt_.multistart && (multistart_all_ || i % 16 == 0)) {
          KVec alt(K);
          // One-hot labels have no finite matching logits: start from a large but finite margin.
          const double floor_y = opt_.hardmax_labels ? 1e-4 : 1e-300;
          for (int e = 0; e < K; ++e) {
            const int ra = L.row(e), rb = L.col(e);
            alt(e) = 0.5 * (std::log(std::max(Y(ra, rb), floor_y)) + std::log(std::max(Y(rb, ra), floor_y))) / beta_;
          }
          // Softmax rows are shift invariant: centre the start on Ω's mean so the quadratic is small.
          alt.array() += (omega.mean() - alt.mean());
          ProxResult p2 = prox_solve(L, channel_, beta_, Sigma, omega, Y, alt, opt_.prox);
          if (p2.value < pr.value - 1e-12 * std::max(1.0, std::fabs(pr.value))) {
            pr = p2;
            switched = 1;
          }
        }
        if (!pr.converged) ++unconverged;
        for (int e = 0; e < K; ++e) ws[e] = pr.v(e);
        // Envelope derivatives.
        const KVec r = pr.v - omega;
        double dS = 0, dm = 0, htr = 0;
        Eigen::LDLT<KMat> ldlt(pr.hess);
        KMat Hinv = ldlt.solve(KMat::Identity(K, K));
        for (int e = 0; e < K; ++e) {
          const double we = L.weight(e);
          dS -= we * r(e) * r(e) / (4 * Sigma * Sigma);
          dm += -D(e) * r(e) * std::sqrt(cvec(e)) * u[e];
          htr += cvec(e) * (D(e) - D(e) * D(e) * Hinv(e, e));
        }
        out << pr.value, dS, dm, htr, test, test_clean, pr.loss, double(pr.iterations), switched;
        sums.col(c) += out;
      }
    }
  }
  warm_valid_ = true;
  // Group means (fixed order: bit-identical for any thread count), then hats per group.
  Eigen::MatrixXd gm(kOut, G);
  for (int g = 0; g < G; ++g)
    gm.col(g) = sums.middleCols(g * chunks_per_group, chunks_per_group).rowwise().sum() / static_cast<double>(per_group);
  const Eigen::VectorXd mean = gm.rowwise().mean();
  auto hats = [&](const Eigen::VectorXd& v, double& dq, double& dmM) {
    dq = 0.5 * v(3) * opt_.broken_dq_factor;
    dmM = v(2) / std::sqrt(Q0_) - (m / Q0_) * v(3);
    return Eigen::Vector3d(-4 * alpha * v(1), -2 * alpha * dmM, 4 * alpha * dq);
  };
  SampleSideResult r;
  r.M = mean(0);
  r.dM_dSigma = mean(1);
  const Eigen::Vector3d h = hats(mean, r.dM_dq, r.dM_dm);
  r.qhat = h(0);
  r.mhat = h(1);
  r.Sigmahat = h(2);
  r.test_error = mean(4);
  r.test_error_clean = mean(5);
  r.train_loss = mean(6);
  r.mean_prox_iterations = mean(7);
  r.multistart_switches = std::lround(mean(8) * static_cast<double>(set_.size()));
  if (r.multistart_switches > 0) multistart_all_ = true;
  r.unconverged = unconverged;
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
  r.se_test_error = se(4);
  r.se_test_error_clean = se(5);
  r.se_train_loss = se(6);
  return r;
}

}  // namespace hdat::tied
