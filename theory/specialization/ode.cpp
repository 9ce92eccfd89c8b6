#include "hdat/specialization/ode.hpp"

#include <algorithm>
#include <numeric>

#include "hdat/core/error.hpp"
#include "hdat/core/random.hpp"

namespace hdat::specialization {

Eigen::MatrixXd psd_sqrt(const Eigen::MatrixXd& S, double* lowest) {
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(0.5 * (S + S.transpose()));
  if (lowest) *lowest = es.eigenvalues().minCoeff();
  const Eigen::VectorXd root = es.eigenvalues().cwiseMax(0.0).cwiseSqrt();
  return es.eigenvectors() * root.asDiagonal() * es.eigenvectors().transpose();
}

namespace {

// One base sample: for every head permutation and every enumerated prior point, the per-sequence
// quantities whose expectations form the right-hand side. Layout of `out`:
//   [ A (H x F) | B (H x H) | gs (H) | N (H x H) | e ]   (column-major blocks)
// A_hf = Σ_ℓ g_hℓ λ_fℓ,  B_hh' = Σ_ℓ g_hℓ χ_h'ℓ,  gs_h = Σ_ℓ g_hℓ,
// N_hh' = Σ_ℓ (|a|² + Δ²) J_{:,hℓ}·J_{:,h'ℓ} + 2 g_hℓ g_h'ℓ,  e = ½(Δ² + |a|²).
struct FlowKernel {
  // Shared, read-only.
  const Setup* s;
  const std::vector<std::vector<int>>* perms;
  const Eigen::MatrixXd* thetas;
  const Eigen::VectorXd* theta_w;
  bool theta_from_sample;
  bool risk_only;
  bool flip_gg = false;  // testing only (broken_term = sign_gg)
  Eigen::MatrixXd M, C;  // H x F, H x H
  Attention att;
  // Scratch (one copy per thread).
  Eigen::MatrixXd lam, zeta, chi, a, m, g, mm, N;
  Eigen::VectorXd w, err, theta;

  FlowKernel(const Setup& setup, const std::vector<std::vector<int>>& p, const Eigen::MatrixXd& th, const Eigen::VectorXd& tw,
             bool from_sample, bool only_risk, const Eigen::MatrixXd& Mm, const Eigen::MatrixXd& Cm, const Attention& attention)
      : s(&setup), perms(&p), thetas(&th), theta_w(&tw), theta_from_sample(from_sample), risk_only(only_risk), M(Mm), C(Cm),
        att(attention) {
    const int L = s->L, H = static_cast<int>(M.rows()), F = s->F;
    lam.resize(F, L);
    zeta.resize(H, L);
    chi.resize(L, H);
    a.resize(L, H);
    m.resize(L, H);
    g.resize(L, H);
    mm.resize(H, H);
    N.resize(H, H);
    w.resize(L);
    err.resize(L);
    theta.resize(F);
  }

  int out_dim() const {
    const int H = static_cast<int>(M.rows()), F = s->F;
    return risk_only ? 1 : H * F + 2 * H * H + H + 1;
  }

  void operator()(const double* z, double* out) const {
    FlowKernel& k = const_cast<FlowKernel&>(*this);  // scratch only; each thread owns its copy
    k.eval(z, out);
  }

  void eval(const double* z, double* out) {
    const int L = s->L, H = static_cast<int>(M.rows()), F = s->F;
    const int dim = out_dim();
    std::fill(out, out + dim, 0.0);
    // Sample layout: [θ noise (F, if sampled)] then per token [λ noise (F), ζ (H_full)].
    const int H_full = s->H;
    const double* zt = z;
    const double* zl = z + (theta_from_sample ? F : 0);
    const int stride = F + H_full;
    const double Delta2 = s->noise * s->noise;
    const int n_theta = theta_from_sample ? 1 : static_cast<int>(thetas->rows());
    const double perm_w = 1.0 / static_cast<double>(perms->size());
    for (const auto& perm : *perms) {
      // ζ with heads permuted: head h reads the sample's coordinate perm[h].
      for (int l = 0; l < L; ++l) {
        for (int h = 0; h < H; ++h) zeta(h, l) = zl[l * stride + F + perm[static_cast<std::size_t>(h)]];
      }
      for (int it = 0; it < n_theta; ++it) {
        double wt = perm_w;
        if (theta_from_sample) {
          if (s->prior.kind == Prior::Kind::gaussian)
            for (int f = 0; f < F; ++f) theta(f) = s->prior.mean(f) + s->prior.std(f) * zt[f];
          else
            for (int f = 0; f < F; ++f) theta(f) = zt[f] >= 0 ? s->prior.amplitudes(f) : -s->prior.amplitudes(f);
        } else {
          theta = thetas->row(it).transpose();
          wt *= (*theta_w)(it);
        }
        // λ_ℓ = θ δ_ℓε + noise, with the signal token ε = 0 (exchangeability).
        for (int l = 0; l < L; ++l)
          for (int f = 0; f < F; ++f) lam(f, l) = zl[l * stride + f] + (l == 0 ? theta(f) : 0.0);
        chi.noalias() = lam.transpose() * M.transpose();
        chi.noalias() += zeta.transpose() * C.transpose();
        att.forward(chi, a, w, m);
        err = -w;
        err(0) += 1.0;
        const double a2 = err.squaredNorm();
        out[dim - 1] += wt * 0.5 * (Delta2 + a2);
        if (risk_only) continue;
        att.vjp(a, m, err, g);
        g = -g;  // g_hℓ = −a·J_{:,hℓ}
        double* A = out;
        double* B = out + H * F;
        double* gs = B + H * H;
        double* Nn = gs + H;
        // A_hf = Σ_ℓ g_ℓh λ_fℓ  (H x F, column-major: index h + H f)
        for (int f = 0; f < F; ++f)
          for (int h = 0; h < H; ++h) {
            double acc = 0;
            for (int l = 0; l < L; ++l) acc += g(l, h) * lam(f, l);
            A[h + H * f] += wt * acc;
          }
        for (int hp = 0; hp < H; ++hp)
          for (int h = 0; h < H; ++h) {
            double acc = 0;
            for (int l = 0; l < L; ++l) acc += g(l, h) * chi(l, hp);
            B[h + H * hp] += wt * acc;
          }
        for (int h = 0; h < H; ++h) gs[h] += wt * g.col(h).sum();
        mm.noalias() = m.transpose() * m;
        N.setZero();
        att.jacobian_gram(a, m, mm, a2 + Delta2, N);
        N.noalias() += (flip_gg ? -2.0 : 2.0) * g.transpose() * g;
        for (int hp = 0; hp < H; ++hp)
          for (int h = 0; h < H; ++h) Nn[h + H * hp] += wt * N(h, hp);
      }
    }
  }
};

std::vector<std::vector<int>> head_permutations(int H, bool symmetrize) {
  std::vector<int> p(static_cast<std::size_t>(H));
  std::iota(p.begin(), p.end(), 0);
  std::vector<std::vector<int>> out;
  long fact = 1;
  for (int i = 2; i <= H; ++i) fact *= i;
  if (!symmetrize || fact > 120) return {p};
  do out.push_back(p);
  while (std::next_permutation(p.begin(), p.end()));
  return out;
}

}  // namespace

OrderParameterFlow::OrderParameterFlow(const Setup& setup, const FlowOptions& options)
    : setup_(setup), options_(options), layout_(setup.layout()) {
  perms_ = head_permutations(setup.H, options.symmetrize_heads);
  const int F = setup.F;
  switch (setup.prior.kind) {
    case Prior::Kind::gaussian: theta_from_sample_ = true; break;
    case Prior::Kind::discrete:
      thetas_ = setup.prior.points;
      theta_w_ = setup.prior.probs;
      break;
    case Prior::Kind::signs:
      if (F <= 3) {  // enumerate the 2^F sign patterns exactly
        const int K = 1 << F;
        thetas_.resize(K, F);
        theta_w_ = Eigen::VectorXd::Constant(K, 1.0 / K);
        for (int k = 0; k < K; ++k)
          for (int f = 0; f < F; ++f) thetas_(k, f) = ((k >> f) & 1) ? setup.prior.amplitudes(f) : -setup.prior.amplitudes(f);
      } else {
        theta_from_sample_ = true;
      }
      break;
  }
  const int dim = (theta_from_sample_ ? F : 0) + setup.L * (F + setup.H);
  const long base = std::max<long>(64, options.samples / static_cast<long>(perms_.size()));
  samples_ = std::make_shared<GaussianSampleSet>(base, dim, rng::stream_seed(options.seed, 0, 11), options.sampling, 16);
}

long OrderParameterFlow::evaluations_per_expectation() const {
  return samples_->size() * static_cast<long>(perms_.size()) * (theta_from_sample_ ? 1 : thetas_.rows());
}

FlowTerms OrderParameterFlow::terms(const Eigen::MatrixXd& M, const Eigen::MatrixXd& R, bool with_se) const {
  const int H = setup_.H, F = setup_.F;
  FlowTerms t;
  const Eigen::MatrixXd C = psd_sqrt(R - M * M.transpose(), &t.psd_violation);
  t.psd_violation = std::min(0.0, t.psd_violation);
  Attention att = setup_.attention();
  if (setup_.activation == Activation::bayes) att.logit_offset = -0.5 * R.diagonal() + setup_.bias;
  FlowKernel kernel(setup_, perms_, thetas_, theta_w_, theta_from_sample_, false, M, C, att);
  kernel.flip_gg = options_.broken_term == "sign_gg";
  const int dim = kernel.out_dim();
  const Estimate est = expectation(*samples_, kernel, dim, with_se, options_.threads);
  auto block = [&](const Eigen::VectorXd& v, int offset, int rows, int cols) {
    return Eigen::Map<const Eigen::MatrixXd>(v.data() + offset, rows, cols).eval();
  };
  const Eigen::MatrixXd A = block(est.mean, 0, H, F), B = block(est.mean, H * F, H, H);
  const Eigen::VectorXd gs = block(est.mean, H * F + H * H, H, 1);
  const Eigen::MatrixXd Nn = block(est.mean, H * F + H * H + H, H, H);
  const double eta = setup_.eta, kap = setup_.kappa();
  t.dM = -eta * (A - kap * (gs.asDiagonal() * M));
  t.dR_drift.resize(H, H);
  for (int h = 0; h < H; ++h)
    for (int k = 0; k < H; ++k) t.dR_drift(h, k) = -eta * (B(k, h) + B(h, k) - kap * R(h, k) * (gs(k) + gs(h)));
  t.dR_noise = (options_.broken_term == "eta2" ? 0.0 : eta * eta / setup_.batch) * Nn;
  t.risk = est.mean(dim - 1);
  if (with_se) {
    // Standard errors of the combined terms, from those of the expectations (the κ parts are
    // small corrections; their errors are added in quadrature as if independent).
    const Eigen::MatrixXd Ase = block(est.se, 0, H, F), Bse = block(est.se, H * F, H, H);
    const Eigen::VectorXd gsse = block(est.se, H * F + H * H, H, 1);
    const Eigen::MatrixXd Nse = block(est.se, H * F + H * H + H, H, H);
    t.dM_se = (eta * (Ase.array().square() + (kap * (gsse.asDiagonal() * M)).array().square()).sqrt()).matrix();
    t.dR_drift_se.resize(H, H);
    for (int h = 0; h < H; ++h)
      for (int k = 0; k < H; ++k)
        t.dR_drift_se(h, k) = eta * std::sqrt(Bse(k, h) * Bse(k, h) + Bse(h, k) * Bse(h, k) +
                                              std::pow(kap * R(h, k), 2) * (gsse(k) * gsse(k) + gsse(h) * gsse(h)));
    t.dR_noise_se = eta * eta / setup_.batch * Nse;
    t.risk_se = est.se(dim - 1);
  }
  return t;
}

void OrderParameterFlow::operator()(const ConstVecRef& x, VecRef dxdt, double) const {
  const Eigen::MatrixXd M = layout_.view(x.data(), "M");
  Eigen::MatrixXd R = layout_.view(x.data(), "R");
  R = 0.5 * (R + R.transpose());
  const FlowTerms t = terms(M, R, false);
  layout_.view(dxdt.data(), "M") = t.dM;
  layout_.view(dxdt.data(), "R") = t.dR_drift + t.dR_noise;
}

std::pair<double, double> OrderParameterFlow::risk(const Eigen::MatrixXd& M, const Eigen::MatrixXd& R) const {
  std::vector<int> all(static_cast<std::size_t>(setup_.H));
  std::iota(all.begin(), all.end(), 0);
  return risk_with_heads(M, R, all);
}

std::pair<double, double> OrderParameterFlow::risk_with_heads(const Eigen::MatrixXd& M, const Eigen::MatrixXd& R,
                                                              const std::vector<int>& kept) const {
  if (kept.empty()) throw std::invalid_argument("risk_with_heads: at least one head must be kept");
  const int K = static_cast<int>(kept.size());
  // The full field covariance, then the kept heads' sub-blocks: the fields of the kept heads have
  // exactly the joint law they had in the full model (the sample's ζ coordinates are shared).
  Eigen::MatrixXd Mk(K, setup_.F), Rk(K, K);
  for (int i = 0; i < K; ++i) {
    Mk.row(i) = M.row(kept[static_cast<std::size_t>(i)]);
    for (int j = 0; j < K; ++j) Rk(i, j) = R(kept[static_cast<std::size_t>(i)], kept[static_cast<std::size_t>(j)]);
  }
  // The kept heads' fields (Mk λ + Ck ζ, Ck Ckᵀ = Rk − Mk Mkᵀ) have the joint law they had in the
  // full model; the removed heads leave the output (and, for bayes, the normalisation).
  Attention att(setup_.activation, setup_.aggregation, setup_.L, K);
  if (setup_.activation == Activation::bayes) {
    att.logit_offset.resize(K);
    for (int i = 0; i < K; ++i) att.logit_offset(i) = -0.5 * Rk(i, i) + setup_.bias(kept[static_cast<std::size_t>(i)]);
  }
  FlowKernel k2(setup_, perms_, thetas_, theta_w_, theta_from_sample_, true, Mk, psd_sqrt(Rk - Mk * Mk.transpose()), att);
  const Estimate est = expectation(*samples_, k2, 1, true, options_.threads);
  return {est.mean(0), est.se(0)};
}

}  // namespace hdat::specialization
