#include "hdat/tied_attention/prox.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hdat::tied_attention {

SymLayout::SymLayout(int T) : T_(T), K_(T * (T + 1) / 2), idx_(T, T) {
  int e = 0;
  for (int a = 0; a < T; ++a)
    for (int b = a; b < T; ++b) {
      idx_(a, b) = idx_(b, a) = e++;
      ra_.push_back(a);
      rb_.push_back(b);
    }
}

TMat SymLayout::matrix(const KVec& v) const {
  TMat H(T_, T_);
  for (int a = 0; a < T_; ++a)
    for (int b = 0; b < T_; ++b) H(a, b) = v(idx_(a, b));
  return H;
}

void softmax_rows(const TMat& H, double beta, TMat& P) {
  P.resize(H.rows(), H.cols());
  for (Eigen::Index a = 0; a < H.rows(); ++a) {
    const double mx = beta * H.row(a).maxCoeff();
    double z = 0;
    for (Eigen::Index b = 0; b < H.cols(); ++b) z += (P(a, b) = std::exp(beta * H(a, b) - mx));
    P.row(a) /= z;
  }
}

double channel_loss(const SymLayout& L, Channel ch, double beta, const TMat& Y, const KVec& v, KVec* grad, KMat* hess) {
  const int T = L.T(), K = L.K();
  if (grad) grad->setZero(K);
  if (hess) hess->setZero(K, K);
  if (ch == Channel::linear) {
    double loss = 0;
    for (int e = 0; e < K; ++e) {
      const double r = v(e) - Y(L.row(e), L.col(e));
      loss += L.weight(e) * r * r;
      if (grad) (*grad)(e) = 2 * L.weight(e) * r;
      if (hess) (*hess)(e, e) = 2 * L.weight(e);
    }
    return loss;
  }
  // Softmax: row a has logits h = H_a·, p = σ(βh), r = p − y_a, J = diag p − p pᵀ.
  //   ℓ_a = |r|², ∇ℓ_a = 2β J r,
  //   ∇²ℓ_a = 2β² [J J + J diag(r) − (J r) pᵀ − (r·p) J]   (symmetric; derivation.md §8.1)
  const TMat H = L.matrix(v);
  TMat P;
  softmax_rows(H, beta, P);
  double loss = 0;
  TVec p(T), r(T), Jr(T), g(T);
  TMat J(T, T), Hs(T, T);
  for (int a = 0; a < T; ++a) {
    p = P.row(a).transpose();
    r = p - Y.row(a).transpose();
    loss += r.squaredNorm();
    if (!grad && !hess) continue;
    J = -p * p.transpose();
    J.diagonal() += p;
    Jr = J * r;
    g = 2 * beta * Jr;
    if (hess) {
      Hs = J * J + J * r.asDiagonal();
      Hs -= Jr * p.transpose();
      Hs -= r.dot(p) * J;
      Hs *= 2 * beta * beta;
      Hs = 0.5 * (Hs + Hs.transpose());  // exact symmetry (equal up to rounding)
    }
    for (int i = 0; i < T; ++i) {
      const int ei = L.index(a, i);
      if (grad) (*grad)(ei) += g(i);
      if (hess)
        for (int j = 0; j < T; ++j) (*hess)(ei, L.index(a, j)) += Hs(i, j);
    }
  }
  return loss;
}

ProxResult prox_solve(const SymLayout& L, Channel ch, double beta, double Sigma, const KVec& omega, const TMat& Y,
                      const KVec& start, const ProxOptions& opt) {
  const int K = L.K();
  KVec D(K);  // curvature of the quadratic term: w_e/(2Σ)
  for (int e = 0; e < K; ++e) D(e) = L.weight(e) / (2 * Sigma);
  auto objective = [&](const KVec& v, KVec* g, KMat* h, double* loss) {
    const double l = channel_loss(L, ch, beta, Y, v, g, h);
    const KVec dv = v - omega;
    if (g) *g += D.cwiseProduct(dv);
    if (h) h->diagonal() += D;
    if (loss) *loss = l;
    return 0.5 * D.dot(dv.cwiseProduct(dv)) + l;
  };
  ProxResult r;
  r.v = start;
  KVec g(K), step(K), vn(K);
  double loss = 0;
  double f = objective(r.v, &g, &r.hess, &loss);
  const double gscale = std::max(1.0, (D.cwiseProduct(r.v - omega)).cwiseAbs().maxCoeff());
  for (int it = 0; it < opt.max_iter; ++it) {
    r.iterations = it;
    if (g.cwiseAbs().maxCoeff() <= opt.grad_tol * gscale) {
      r.converged = true;
      break;
    }
    // Newton step; shift the Hessian when it is not positive definite (non-convex region).
    Eigen::LLT<KMat> llt(r.hess);
    double shift = 0;
    while (llt.info() != Eigen::Success) {
      shift = shift == 0 ? 1e-3 * D.maxCoeff() : 4 * shift;
      KMat Hm = r.hess;
      Hm.diagonal().array() += shift;
      llt.compute(Hm);
    }
    step = -llt.solve(g);
    const double slope = g.dot(step);
    double t = 1.0, fn = f;
    bool ok = false;
    // In the quadratic regime the predicted decrease −slope/2 is below the rounding of f: take the
    // full Newton step (Armijo cannot resolve it).
    if (shift == 0 && -slope <= 1e-13 * (1 + std::fabs(f))) {
      vn = r.v + step;
      ok = true;
    }
    for (int ls = 0; ls < 40 && !ok; ++ls) {
      vn = r.v + t * step;
      fn = objective(vn, nullptr, nullptr, nullptr);
      if (fn <= f + 1e-4 * t * slope) {
        ok = true;
        break;
      }
      t *= 0.5;
    }
    if (!ok) {  // no decrease possible at double precision: we are at the minimum
      r.converged = g.cwiseAbs().maxCoeff() <= 1e-7 * gscale;
      break;
    }
    r.v = vn;
    f = objective(r.v, &g, &r.hess, &loss);
    // A full Newton step this small means quadratic convergence reached the rounding floor.
    if (t == 1.0 && step.cwiseAbs().maxCoeff() <= 1e-12 * (1 + r.v.cwiseAbs().maxCoeff())) {
      r.iterations = it + 1;
      r.converged = g.cwiseAbs().maxCoeff() <= 1e-7 * gscale;
      break;
    }
  }
  if (!r.converged && g.cwiseAbs().maxCoeff() <= opt.grad_tol * gscale) r.converged = true;
  r.value = f;
  r.loss = loss;
  return r;
}

namespace {

// Row a's diagonal logit at which σ_β(H_a·)_a = y_aa with the row's other entries fixed:
// H_aa = [logit(y_aa) + log Σ_{b≠a} exp(β H_ab)]/β (log-sum-exp; the logit from y_aa and its
// complement Σ_{b≠a} y_ab, so that y_aa near 1 keeps its digits).
double matched_diagonal(const SymLayout& L, double beta, const KVec& H, const TMat& Y, int a, double floor) {
  const int T = L.T();
  double mx = -std::numeric_limits<double>::infinity(), rest = 0;
  for (int b = 0; b < T; ++b)
    if (b != a) {
      mx = std::max(mx, beta * H(L.index(a, b)));
      rest += Y(a, b);
    }
  double lse = 0;
  for (int b = 0; b < T; ++b)
    if (b != a) lse += std::exp(beta * H(L.index(a, b)) - mx);
  const double y = std::clamp(Y(a, a), floor, 1 - floor), c = std::clamp(rest, floor, 1 - floor);
  return (std::log(y) - std::log(c) + mx + std::log(lse)) / beta;
}

}  // namespace

GlobalProxResult prox_global(const SymLayout& L, Channel ch, double beta, double Sigma, const KVec& omega, const TMat& Y,
                             const KVec* warm, double label_floor, const ProxOptions& opt) {
  const int T = L.T(), K = L.K();
  std::vector<KVec> starts;
  if (warm) starts.push_back(*warm);
  // Ω with the rows of the subset (bit mask) moved to their label-fitting diagonal logits.
  auto branch = [&](unsigned mask) {
    KVec v = omega;
    for (int a = 0; a < T; ++a)
      if (mask & (1u << a)) v(L.index(a, a)) = matched_diagonal(L, beta, omega, Y, a, label_floor);
    return v;
  };
  const unsigned all = (1u << T) - 1;
  if (T <= 3) {
    for (unsigned mask = 0; mask <= all; ++mask) starts.push_back(branch(mask));
  } else {
    starts.push_back(branch(0));
    for (int a = 0; a < T; ++a) starts.push_back(branch(1u << a));
    starts.push_back(branch(all));
    // The symmetrised label logits (log y)/β, centred on Ω (softmax is shift invariant per row).
    KVec alt(K);
    for (int e = 0; e < K; ++e) {
      const int ra = L.row(e), rb = L.col(e);
      alt(e) = 0.5 * (std::log(std::max(Y(ra, rb), label_floor)) + std::log(std::max(Y(rb, ra), label_floor))) / beta;
    }
    alt.array() += omega.mean() - alt.mean();
    starts.push_back(alt);
  }
  GlobalProxResult g;
  std::vector<KVec> minima;
  for (std::size_t k = 0; k < starts.size(); ++k) {
    ProxResult r = prox_solve(L, ch, beta, Sigma, omega, Y, starts[k], opt);
    ++g.starts;
    if (r.converged) {
      const double scale = 1 + r.v.cwiseAbs().maxCoeff();
      const bool seen = std::any_of(minima.begin(), minima.end(),
                                    [&](const KVec& v) { return (v - r.v).cwiseAbs().maxCoeff() <= 1e-6 * scale; });
      if (!seen) minima.push_back(r.v);
    }
    // A converged minimum beats an unconverged one; otherwise the lower value (ties: the earlier start).
    const bool better = k == 0 || (r.converged && !g.best.converged) ||
                        (r.converged == g.best.converged &&
                         r.value < g.best.value - 1e-12 * std::max(1.0, std::fabs(g.best.value)));
    if (better) {
      g.best = std::move(r);
      g.winner = static_cast<int>(k);
    }
  }
  g.distinct_minima = static_cast<int>(minima.size());
  return g;
}

}  // namespace hdat::tied_attention
