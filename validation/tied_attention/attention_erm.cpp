#include "hdat/tied_attention/attention_erm.hpp"

#include <Eigen/Eigenvalues>
#include <boost/random/normal_distribution.hpp>
#include <chrono>
#include <cmath>

#include "hdat/tied_attention/lbfgs.hpp"
#include "hdat/core/progress.hpp"
#include "hdat/tied_attention/sensing.hpp"

namespace hdat::tied_attention {

namespace {


// Row softmax of one row (log-sum-exp), in place.
template <class Row>
void softmax_row(Row&& h, double beta) {
  const double mx = beta * h.maxCoeff();
  double z = 0;
  for (Eigen::Index b = 0; b < h.size(); ++b) z += (h(b) = std::exp(beta * h(b) - mx));
  h /= z;
}

// The β0 → ∞ limit of a softmax row: one-hot at the argmax, in place.
template <class Row>
void one_hot_argmax(Row&& h) {
  Eigen::Index k = 0;
  h.maxCoeff(&k);
  h.setZero();
  h(k) = 1;
}

}  // namespace

RowMatrix attention_fields(const AttentionData& data, const Eigen::MatrixXd& S) {
  const int T = data.T;
  const long n = data.n();
  const double sd = std::sqrt(static_cast<double>(data.d));
  const RowMatrix P = data.X * S;  // (nT) × d
  RowMatrix H(n * T, T);
  const double tr = S.trace();
  for (long mu = 0; mu < n; ++mu)
    for (int a = 0; a < T; ++a)
      for (int b = 0; b < T; ++b) {
        const double v = P.row(mu * T + a).dot(data.X.row(mu * T + b));
        H(mu * T + a, b) = (v - (a == b ? tr : 0.0)) / sd;
      }
  return H;
}

AttentionData make_attention_data(const AttentionSpec& spec, const Eigen::MatrixXd& S0, long n, std::uint64_t seed,
                                  std::uint64_t replica, std::uint64_t stream) {
  AttentionData data;
  data.d = spec.teacher.d;
  data.T = spec.T;
  data.beta = spec.beta;
  data.beta0 = spec.beta0;
  data.noise = spec.noise;
  data.seq2seq = spec.seq2seq;
  data.S0 = S0;
  auto eng = rng::engine(seed, replica, stream);
  data.X = gaussian_matrix(n * spec.T, spec.teacher.d, eng);
  const RowMatrix H0 = attention_fields(data, S0);
  data.Y0 = H0;
  data.Y = H0;
  boost::random::normal_distribution<double> N01;
  const int T = spec.T;
  if (spec.noise > 0)
    for (long mu = 0; mu < n; ++mu)
      for (int a = 0; a < T; ++a)
        for (int b = a; b < T; ++b) {
          const double s = a == b ? std::sqrt(spec.noise) : std::sqrt(spec.noise / 2);
          const double z = s * N01(eng);
          data.Y(mu * T + a, b) += z;
          if (b != a) data.Y(mu * T + b, a) += z;
        }
  data.hardmax = spec.hardmax;
  for (Eigen::Index r = 0; r < data.Y.rows(); ++r) {
    if (spec.hardmax) {
      one_hot_argmax(data.Y.row(r));
      one_hot_argmax(data.Y0.row(r));
    } else {
      softmax_row(data.Y.row(r), spec.beta0);
      softmax_row(data.Y0.row(r), spec.beta0);
    }
  }
  if (spec.seq2seq) {
    data.K.resize(n * T, T);
    for (long mu = 0; mu < n; ++mu)
      for (int a = 0; a < T; ++a)
        for (int b = 0; b < T; ++b) data.K(mu * T + a, b) = data.X.row(mu * T + a).dot(data.X.row(mu * T + b)) / data.d;
  }
  return data;
}

namespace {
// Σ_μ ℓ_μ, per-sample losses, and G = ∂(Σ ℓ)/∂h as an (nT) × T matrix.
double loss_and_field_gradient(const AttentionData& data, const RowMatrix& H, bool clean, RowMatrix* G,
                               Eigen::VectorXd* per_sample) {
  const int T = data.T;
  const long n = data.n();
  const RowMatrix& Yall = clean ? data.Y0 : data.Y;
  if (G) G->resize(n * T, T);
  if (per_sample) per_sample->resize(n);
  double total = 0;
  Eigen::MatrixXd P(T, T), R(T, T), dS(T, T);
  Eigen::VectorXd p(T), g(T);
  for (long mu = 0; mu < n; ++mu) {
    P = H.middleRows(mu * T, T);
    for (int a = 0; a < T; ++a) softmax_row(P.row(a), data.beta);
    R = P - Yall.middleRows(mu * T, T);
    double l;
    if (data.seq2seq) {
      const auto K = data.K.middleRows(mu * T, T);
      dS = 2 * R * K;                 // ∂/∂σ of Tr[R K Rᵀ] (K symmetric)
      l = (R * K).cwiseProduct(R).sum();
    } else {
      dS = 2 * R;
      l = R.squaredNorm();
    }
    total += l;
    if (per_sample) (*per_sample)(mu) = l;
    if (G)
      for (int a = 0; a < T; ++a) {
        // ∂/∂h_a· = β J (∂/∂σ_a·), J = diag p − p pᵀ.
        p = P.row(a).transpose();
        const double pd = p.dot(dS.row(a).transpose());
        for (int b = 0; b < T; ++b) (*G)(mu * T + a, b) = data.beta * p(b) * (dS(a, b) - pd);
      }
  }
  return total;
}
}  // namespace

double attention_loss(const AttentionData& data, const Eigen::MatrixXd& S, Eigen::MatrixXd* grad, bool clean) {
  const RowMatrix H = attention_fields(data, S);
  RowMatrix G;
  const double l = loss_and_field_gradient(data, H, clean, grad ? &G : nullptr, nullptr);
  if (grad) {
    // ∂h_ab/∂S = (x_a x_bᵀ − δ_ab I)/√d: gradient Xᵀ B/√d − (Σ_μ Σ_a G_aa)/√d I, B_{μa} = Σ_b G_ab x_b.
    const int T = data.T;
    const long n = data.n();
    RowMatrix B(n * T, data.d);
    double diag = 0;
    for (long mu = 0; mu < n; ++mu)
      for (int a = 0; a < T; ++a) {
        B.row(mu * T + a).setZero();
        for (int b = 0; b < T; ++b) B.row(mu * T + a) += G(mu * T + a, b) * data.X.row(mu * T + b);
        diag += G(mu * T + a, a);
      }
    Eigen::MatrixXd M = data.X.transpose() * B;
    M.diagonal().array() -= diag;
    M /= std::sqrt(static_cast<double>(data.d));
    *grad = 0.5 * (M + M.transpose());
  }
  return l;
}

double attention_factorized_objective(const AttentionData& data, double lambda_tilde, const Eigen::MatrixXd& W,
                                      Eigen::MatrixXd* grad) {
  const int d = data.d;
  const double c = std::sqrt(static_cast<double>(W.cols()) * d);
  const double lam = d * lambda_tilde / c;
  const double norm = double(d) * d;
  const Eigen::MatrixXd S = W * W.transpose() / c;
  Eigen::MatrixXd G;
  const double l = attention_loss(data, S, grad ? &G : nullptr);
  if (grad) *grad = ((2.0 / c) * G * W + 2 * lam * W) / norm;
  return (l + lam * W.squaredNorm()) / norm;
}


AttentionResult train_attention(const AttentionData& train, const AttentionData& test, const std::string& method,
                                double lambda, const ErmOptions& opt) {
  const SingleThreadedEigen single_threaded;
  const auto t0 = std::chrono::steady_clock::now();
  AttentionResult r;
  const int d = train.d;
  const double norm = double(d) * d;
  if (method == "convex") {
    // Proximal gradient with backtracking and monotone FISTA momentum on (Σ ℓ)/d² + λ̃ Tr S/d, S ⪰ 0.
    r.method = "convex (proximal gradient on S >= 0, backtracking, restart)";
    auto f = [&](const Eigen::MatrixXd& S, Eigen::MatrixXd* g) {
      const double v = attention_loss(train, S, g) / norm;
      if (g) *g /= norm;
      return v;
    };
    auto F = [&](const Eigen::MatrixXd& S, double fv) { return fv + lambda * S.trace() / d; };
    Eigen::MatrixXd x = Eigen::MatrixXd::Zero(d, d), xprev = x, y = x, gy;
    double step = 1.0, tk = 1;
    double fx = f(x, nullptr), Fx = F(x, fx);
    int quiet = 0;
    long it = 0;
    for (; it < opt.max_iter; ++it) {
      const double fy = f(y, &gy);
      ++r.gradient_evaluations;
      Eigen::MatrixXd xn;
      double fxn = 0;
      step *= 1.5;
      for (int ls = 0; ls < 60; ++ls) {
        xn = psd_soft_threshold(y - step * gy, step * lambda / d);
        fxn = f(xn, nullptr);
        const Eigen::MatrixXd dlt = xn - y;
        if (fxn <= fy + gy.cwiseProduct(dlt).sum() + dlt.squaredNorm() / (2 * step) + 1e-15 * std::fabs(fy)) break;
        step *= 0.5;
      }
      const double Fxn = F(xn, fxn);
      const double change = (xn - x).norm() / std::max(xn.norm(), 1e-12);
      xprev = x;
      if (Fxn > Fx) {  // monotone restart: drop the momentum, retry from x
        tk = 1;
        y = x;
        continue;
      }
      const double fchange = (Fx - Fxn) / std::max(1e-300, std::fabs(Fxn));
      x = xn;
      Fx = Fxn;
      const double tn = 0.5 * (1 + std::sqrt(1 + 4 * tk * tk));
      y = x + ((tk - 1) / tn) * (x - xprev);
      tk = tn;
      // Stop on a small step or, as for L-BFGS, a stalled objective (relative 1e-3 tol, 5 times).
      quiet = (change <= opt.tol || fchange <= 1e-3 * opt.tol) ? quiet + 1 : 0;
      if (quiet >= 5) {
        r.converged = true;
        break;
      }
    }
    r.iterations = it;
    r.S = x;
    r.objective = Fx;
    r.message = r.converged ? "relative change below tolerance" : "iteration limit";
  } else if (method == "factorized") {
    r.method = "factorized (L-BFGS on W, weight decay)";
    const FactorizedFit fit = fit_factorized(d, opt, [&](const Eigen::MatrixXd& W, Eigen::MatrixXd* grad) {
      return attention_factorized_objective(train, lambda, W, grad);
    });
    const LbfgsSummary& s = fit.summary;
    r.S = fit.S;
    r.iterations = s.iterations;
    r.gradient_evaluations = s.evaluations;
    r.converged = s.converged;
    r.message = s.message;
    r.objective = s.f;
  } else {
    r.method = "direct (symmetric S, Frobenius penalty, L-BFGS)";
    Eigen::VectorXd x = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(d) * d);
    Eigen::MatrixXd gS;
    auto fo = [&](const Eigen::VectorXd& v, Eigen::VectorXd& g) {
      const Eigen::Map<const Eigen::MatrixXd> A(v.data(), d, d);
      const Eigen::MatrixXd S = 0.5 * (A + A.transpose());
      const double l = attention_loss(train, S, &gS);
      gS += 2 * d * lambda * S;  // ∂(d λ_F Tr S²)/∂S
      g = Eigen::Map<const Eigen::VectorXd>(gS.data(), gS.size()) / norm;  // symmetric: ∂/∂A = sym(∂/∂S)
      return (l + d * lambda * S.squaredNorm()) / norm;
    };
    LbfgsOptions lo;
    lo.max_iter = opt.max_iter;
    lo.rel_tol = opt.tol * 1e-3;
    lo.grad_tol = opt.tol * 1e-2;
    const LbfgsSummary s = lbfgs_minimize(fo, x, lo);
    const Eigen::Map<const Eigen::MatrixXd> A(x.data(), d, d);
    r.S = 0.5 * (A + A.transpose());
    r.iterations = s.iterations;
    r.gradient_evaluations = s.evaluations;
    r.converged = s.converged;
    r.message = s.message;
    r.objective = s.f;
  }
  // Measurements.
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(r.S, Eigen::EigenvaluesOnly);
  r.eigenvalues = es.eigenvalues();
  const double top = std::max(1e-300, r.eigenvalues.cwiseAbs().maxCoeff());
  r.rank = static_cast<double>((r.eigenvalues.array() > 1e-4 * top).count()) / d;
  r.trace = r.S.trace() / d;
  r.mse = (r.S - train.S0).squaredNorm() / d;
  r.train_loss = attention_loss(train, r.S, nullptr) / static_cast<double>(train.n());
  {
    const RowMatrix H = attention_fields(test, r.S);
    Eigen::VectorXd ls;
    loss_and_field_gradient(test, H, false, nullptr, &ls);
    r.test_error = ls.mean();
    r.test_se = std::sqrt((ls.array() - r.test_error).square().sum() / std::max<double>(1, ls.size() - 1) / ls.size());
    r.test_error_clean = loss_and_field_gradient(test, H, true, nullptr, nullptr) / static_cast<double>(test.n());
  }
  r.wall_seconds = seconds_since(t0);
  return r;
}

}  // namespace hdat::tied_attention
