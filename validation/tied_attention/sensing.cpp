#include "hdat/tied_attention/sensing.hpp"

#include <omp.h>

#include <Eigen/Eigenvalues>
#include <boost/random/normal_distribution.hpp>
#include <chrono>
#include <cmath>

#include "hdat/tied_attention/lbfgs.hpp"
#include "hdat/core/progress.hpp"

namespace hdat::tied_attention {


SingleThreadedEigen::SingleThreadedEigen() {
  // Parallelism is over seeds and sample ratios; multithreaded GEMM inside one small training run
  // only adds barrier waits on a shared machine. Inside a parallel region Eigen is single-threaded
  // already (and the global setting must not be touched from several threads).
  if (!omp_in_parallel()) {
    saved_ = Eigen::nbThreads();
    Eigen::setNbThreads(1);
  }
}
SingleThreadedEigen::~SingleThreadedEigen() {
  if (saved_ > 0) Eigen::setNbThreads(saved_);
}

SensingData make_sensing_data(const TeacherSpec& teacher, long n, double noise, std::uint64_t seed, std::uint64_t replica) {
  auto eng_t = rng::engine(seed, replica, rng::teacher);
  return make_sensing_data(sample_teacher(teacher, eng_t), n, noise, seed, replica, rng::training_data);
}

SensingData make_sensing_data(const Eigen::MatrixXd& S0, long n, double noise, std::uint64_t seed, std::uint64_t replica,
                              std::uint64_t stream) {
  SensingData data;
  data.d = static_cast<int>(S0.rows());
  data.noise = noise;
  data.S0 = S0;
  auto eng_x = rng::engine(seed, replica, stream);
  data.X = gaussian_matrix(n, data.d, eng_x);
  data.y = sensing_apply(data, data.S0);
  if (noise > 0) {
    boost::random::normal_distribution<double> N01;
    for (Eigen::Index i = 0; i < data.y.size(); ++i) data.y(i) += std::sqrt(noise) * N01(eng_x);
  }
  return data;
}

Eigen::VectorXd sensing_apply(const SensingData& data, const Eigen::MatrixXd& S) {
  const Eigen::MatrixXd XS = data.X * S;
  Eigen::VectorXd v = XS.cwiseProduct(data.X).rowwise().sum();
  v.array() -= S.trace();
  return v / std::sqrt(static_cast<double>(data.d));
}

Eigen::MatrixXd sensing_adjoint(const SensingData& data, const Eigen::VectorXd& r) {
  const Eigen::MatrixXd RX = data.X.array().colwise() * r.array();
  Eigen::MatrixXd G = data.X.transpose() * RX;
  G.diagonal().array() -= r.sum();
  return G / std::sqrt(static_cast<double>(data.d));
}

void measure_sensing(const SensingData& data, ErmResult& r) {
  const double d = data.d;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(r.S, Eigen::EigenvaluesOnly);
  r.eigenvalues = es.eigenvalues();
  const double scale = std::max(1.0, r.eigenvalues.cwiseAbs().maxCoeff());
  r.rank = static_cast<double>((r.eigenvalues.array() > 1e-6 * scale).count()) / d;
  r.trace = r.S.trace() / d;
  r.mse = (r.S - data.S0).squaredNorm() / d;
  const Eigen::VectorXd res = data.y - sensing_apply(data, r.S);
  r.train_loss = res.squaredNorm() / static_cast<double>(data.y.size());
  r.test_error = 2 * r.mse + data.noise;
}

namespace {
// Largest eigenvalue of AᵀA (power iteration on symmetric matrices), with a 2% safety margin.
double operator_norm_sq(const SensingData& data) {
  auto eng = rng::engine(0, 0, rng::power_iteration);  // any fixed start: the norm does not depend on it
  Eigen::MatrixXd V = gaussian_matrix(data.d, data.d, eng);
  V = 0.5 * (V + V.transpose());
  V /= V.norm();
  double lam = 0;
  for (int it = 0; it < 40; ++it) {
    Eigen::MatrixXd W = sensing_adjoint(data, sensing_apply(data, V));
    const double nw = W.norm();
    if (std::fabs(nw - lam) <= 1e-4 * nw) {
      lam = nw;
      break;
    }
    lam = nw;
    V = W / nw;
  }
  return 1.02 * lam;
}

// Projection of (M − τ I) onto the PSD cone: eigenvalues soft-thresholded at τ.
}  // namespace

ErmResult train_convex(const SensingData& data, double lambda_tilde, const ErmOptions& opt) {
  const SingleThreadedEigen single_threaded;
  const auto t0 = std::chrono::steady_clock::now();
  ErmResult r;
  r.method = "convex (FISTA with restart, eigenvalue soft-thresholding)";
  const int d = data.d;
  const double L = 2 * operator_norm_sq(data);
  const double tau = d * lambda_tilde / L;
  Eigen::MatrixXd x = Eigen::MatrixXd::Zero(d, d), xprev = x, yk = x;
  double tk = 1;
  int quiet = 0;
  long it = 0;
  for (; it < opt.max_iter; ++it) {
    // Gradient of Σ (y − A S)²: −2 Aᵀ(y − A S).
    const Eigen::MatrixXd grad = -2 * sensing_adjoint(data, data.y - sensing_apply(data, yk));
    ++r.gradient_evaluations;
    xprev.swap(x);
    x = psd_soft_threshold(yk - grad / L, tau);
    const double change = (x - xprev).norm();
    const double scale = std::max(x.norm(), 1e-12);
    // Gradient-based adaptive restart (O'Donoghue & Candès 2015).
    if ((yk - x).cwiseProduct(x - xprev).sum() > 0) {
      tk = 1;
      yk = x;
    } else {
      const double tn = 0.5 * (1 + std::sqrt(1 + 4 * tk * tk));
      yk = x + ((tk - 1) / tn) * (x - xprev);
      tk = tn;
    }
    quiet = (change <= opt.tol * scale) ? quiet + 1 : 0;
    if (quiet >= 3) {
      r.converged = true;
      break;
    }
  }
  r.iterations = it + (r.converged ? 1 : 0);
  r.S = x;
  measure_sensing(data, r);
  r.objective = (r.train_loss * static_cast<double>(data.y.size()) + d * lambda_tilde * x.trace()) / (double(d) * d);
  r.message = r.converged ? "relative change below tolerance" : "iteration limit";
  r.wall_seconds = seconds_since(t0);
  return r;
}

double factorized_objective(const SensingData& data, double lambda_tilde, const Eigen::MatrixXd& W, Eigen::MatrixXd* grad) {
  const int d = data.d;
  const auto p = W.cols();
  const double c = std::sqrt(static_cast<double>(p) * d);  // S = W Wᵀ/c
  const double lam = d * lambda_tilde / c;                 // λ |W|² = d λ̃ Tr S
  const double norm = double(d) * d;
  const Eigen::MatrixXd S = W * W.transpose() / c;
  const Eigen::VectorXd res = data.y - sensing_apply(data, S);
  if (grad) {
    const Eigen::MatrixXd G = -2 * sensing_adjoint(data, res);  // ∂/∂S of the data term
    *grad = ((2.0 / c) * G * W + 2 * lam * W) / norm;
  }
  return (res.squaredNorm() + lam * W.squaredNorm()) / norm;
}

FactorizedFit fit_factorized(int d, const ErmOptions& opt,
                             const std::function<double(const Eigen::MatrixXd& W, Eigen::MatrixXd* grad)>& objective) {
  const int p = std::max(1, static_cast<int>(std::lround(opt.width * d)));
  auto eng = rng::engine(opt.init_seed, 0, rng::student_init);
  const Eigen::MatrixXd W0 = 0.5 * gaussian_matrix(d, p, eng);  // N(0, 1/4): away from the saddle at W = 0
  Eigen::VectorXd w = Eigen::Map<const Eigen::VectorXd>(W0.data(), W0.size());
  Eigen::MatrixXd gm;
  auto f = [&](const Eigen::VectorXd& x, Eigen::VectorXd& g) {
    const double v = objective(Eigen::Map<const Eigen::MatrixXd>(x.data(), d, p), &gm);
    g = Eigen::Map<const Eigen::VectorXd>(gm.data(), gm.size());
    return v;
  };
  LbfgsOptions lo;
  lo.max_iter = opt.max_iter;
  lo.rel_tol = opt.tol * 1e-3;
  lo.grad_tol = opt.tol * 1e-2;
  FactorizedFit fit;
  fit.summary = lbfgs_minimize(f, w, lo);
  const Eigen::Map<const Eigen::MatrixXd> W(w.data(), d, p);
  fit.S = W * W.transpose() / std::sqrt(static_cast<double>(p) * d);
  return fit;
}

ErmResult train_factorized(const SensingData& data, double lambda_tilde, const ErmOptions& opt) {
  const SingleThreadedEigen single_threaded;
  const auto t0 = std::chrono::steady_clock::now();
  ErmResult r;
  r.method = "factorized (L-BFGS on W, weight decay)";
  const FactorizedFit fit = fit_factorized(data.d, opt, [&](const Eigen::MatrixXd& W, Eigen::MatrixXd* grad) {
    return factorized_objective(data, lambda_tilde, W, grad);
  });
  const LbfgsSummary& s = fit.summary;
  r.S = fit.S;
  r.iterations = s.iterations;
  r.gradient_evaluations = s.evaluations;
  r.converged = s.converged;
  r.message = s.message;
  measure_sensing(data, r);
  r.objective = s.f;
  r.wall_seconds = seconds_since(t0);
  return r;
}

ErmResult train_direct(const SensingData& data, double lambda_frobenius, const ErmOptions& opt) {
  const SingleThreadedEigen single_threaded;
  const auto t0 = std::chrono::steady_clock::now();
  ErmResult r;
  r.method = "direct (Frobenius penalty, conjugate gradient)";
  const int d = data.d;
  // (AᵀA + d λ_F) S = Aᵀ y on symmetric matrices (Frobenius inner product).
  const double shift = d * lambda_frobenius;
  auto op = [&](const Eigen::MatrixXd& S) -> Eigen::MatrixXd {
    return sensing_adjoint(data, sensing_apply(data, S)) + shift * S;
  };
  Eigen::MatrixXd x = Eigen::MatrixXd::Zero(d, d);
  const Eigen::MatrixXd b = sensing_adjoint(data, data.y);
  Eigen::MatrixXd res = b, dir = res;
  double rr = res.squaredNorm();
  const double bnorm = std::sqrt(b.squaredNorm());
  long it = 0;
  for (; it < opt.max_iter; ++it) {
    if (std::sqrt(rr) <= opt.tol * bnorm) {
      r.converged = true;
      break;
    }
    const Eigen::MatrixXd Ad = op(dir);
    ++r.gradient_evaluations;
    const double a = rr / dir.cwiseProduct(Ad).sum();
    x += a * dir;
    res -= a * Ad;
    const double rn = res.squaredNorm();
    dir = res + (rn / rr) * dir;
    rr = rn;
  }
  r.iterations = it;
  r.S = 0.5 * (x + x.transpose());
  measure_sensing(data, r);
  r.objective = (r.train_loss * static_cast<double>(data.y.size()) + shift * r.S.squaredNorm()) / (double(d) * d);
  r.message = r.converged ? "residual below tolerance" : "iteration limit";
  r.wall_seconds = seconds_since(t0);
  return r;
}

Eigen::MatrixXd psd_soft_threshold(const Eigen::MatrixXd& M, double tau) {
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(0.5 * (M + M.transpose()));
  const Eigen::VectorXd l = (es.eigenvalues().array() - tau).cwiseMax(0.0);
  const Eigen::MatrixXd& U = es.eigenvectors();
  return U * l.asDiagonal() * U.transpose();
}

}  // namespace hdat::tied_attention
