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

// The per-sequence quantities whose expectations form the right-hand side, as named blocks of the
// kernel's output (derivation.md §3):
//   A_hf = Σ_ℓ g_hℓ λ_fℓ,  B_hh' = Σ_ℓ g_hℓ χ_h'ℓ,  gs_h = Σ_ℓ g_hℓ,
//   N_hh' = Σ_ℓ (|a|² + Δ²) J_{:,hℓ}·J_{:,h'ℓ} + 2 g_hℓ g_h'ℓ,  e = ½(Δ² + |a|²).
StateLayout kernel_outputs(int H, int F, bool risk_only) {
  StateLayout out;
  if (!risk_only) out.add("A", H, F).add("B", H, H).add_vector("gs", H).add("N", H, H);
  out.add("e", 1, 1);
  return out;
}

// One base sample: for every head permutation and every enumerated prior point, the quantities above.
struct FlowKernel {
  // Shared, read-only.
  const Setup* s;
  const std::vector<std::vector<int>>* perms;
  const Eigen::MatrixXd* thetas;
  const Eigen::VectorXd* theta_w;
  bool theta_from_sample;
  bool risk_only;
  bool flip_gg = false;  // testing only (break_term = sign_gg)
  Eigen::MatrixXd M, C;  // H x F, H x H
  Attention att;
  StateLayout outputs;
  // Scratch (expectation() copies the kernel once per thread).
  Eigen::MatrixXd lam, zeta, chi, a, m, g, mm, N;
  Eigen::VectorXd w, err, theta;

  FlowKernel(const Setup& setup, const std::vector<std::vector<int>>& p, const Eigen::MatrixXd& th, const Eigen::VectorXd& tw,
             bool from_sample, bool only_risk, const Eigen::MatrixXd& Mm, const Eigen::MatrixXd& Cm, const Attention& attention)
      : s(&setup), perms(&p), thetas(&th), theta_w(&tw), theta_from_sample(from_sample), risk_only(only_risk), M(Mm), C(Cm),
        att(attention), outputs(kernel_outputs(static_cast<int>(Mm.rows()), setup.F, only_risk)) {
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

  int out_dim() const { return outputs.size(); }

  void operator()(const double* z, double* out) {
    const int L = s->L, H = static_cast<int>(M.rows()), F = s->F;
    std::fill(out, out + out_dim(), 0.0);
    double& e = outputs.view(out, "e")(0, 0);
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
          s->prior.from_normals(zt, theta);
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
        e += wt * 0.5 * (Delta2 + a2);
        if (risk_only) continue;
        att.vjp(a, m, err, g);
        g = -g;  // g_hℓ = −a·J_{:,hℓ}
        auto A = outputs.view(out, "A");
        auto B = outputs.view(out, "B");
        auto gs = outputs.view(out, "gs");
        for (int f = 0; f < F; ++f)
          for (int h = 0; h < H; ++h) {
            double acc = 0;
            for (int l = 0; l < L; ++l) acc += g(l, h) * lam(f, l);
            A(h, f) += wt * acc;
          }
        for (int hp = 0; hp < H; ++hp)
          for (int h = 0; h < H; ++h) {
            double acc = 0;
            for (int l = 0; l < L; ++l) acc += g(l, h) * chi(l, hp);
            B(h, hp) += wt * acc;
          }
        for (int h = 0; h < H; ++h) gs(h, 0) += wt * g.col(h).sum();
        mm.noalias() = m.transpose() * m;
        N.setZero();
        att.jacobian_gram(a, m, mm, a2 + Delta2, N);
        N.noalias() += (flip_gg ? -2.0 : 2.0) * g.transpose() * g;
        outputs.view(out, "N") += wt * N;
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
  samples_ = std::make_shared<GaussianSampleSet>(base, dim, rng::stream_seed(options.seed, options.replica, rng::flow_samples), options.sampling, 16);
}

long OrderParameterFlow::evaluations_per_expectation() const {
  return samples_->size() * static_cast<long>(perms_.size()) * (theta_from_sample_ ? 1 : thetas_.rows());
}

FlowTerms OrderParameterFlow::terms(const Eigen::MatrixXd& M, const Eigen::MatrixXd& R, bool with_se) const {
  const int H = setup_.H;
  FlowTerms t;
  const Eigen::MatrixXd C = psd_sqrt(R - M * M.transpose(), &t.psd_violation);
  t.psd_violation = std::min(0.0, t.psd_violation);
  Attention att = setup_.attention();
  att.logit_offset = setup_.logit_offset(R.diagonal());
  FlowKernel kernel(setup_, perms_, thetas_, theta_w_, theta_from_sample_, false, M, C, att);
  kernel.flip_gg = options_.break_term == "sign_gg";
  const Estimate est = expectation(*samples_, kernel, kernel.out_dim(), with_se, options_.threads);
  const StateLayout& E = kernel.outputs;
  const Eigen::MatrixXd A = E.view(est.mean, "A"), B = E.view(est.mean, "B"), Nn = E.view(est.mean, "N");
  const Eigen::VectorXd gs = E.view(est.mean, "gs");
  const double eta = setup_.eta, kap = setup_.kappa();
  t.dM = -eta * (A - kap * (gs.asDiagonal() * M));
  t.dR_drift.resize(H, H);
  for (int h = 0; h < H; ++h)
    for (int k = 0; k < H; ++k) t.dR_drift(h, k) = -eta * (B(k, h) + B(h, k) - kap * R(h, k) * (gs(k) + gs(h)));
  t.dR_noise = (options_.break_term == "eta2" ? 0.0 : eta * eta / setup_.batch) * Nn;
  t.risk = E.view(est.mean, "e")(0, 0);
  if (with_se) {
    // Standard errors of the combined terms, from those of the expectations (the κ parts are
    // small corrections; their errors are added in quadrature as if independent).
    const Eigen::MatrixXd Ase = E.view(est.se, "A"), Bse = E.view(est.se, "B"), Nse = E.view(est.se, "N");
    const Eigen::VectorXd gsse = E.view(est.se, "gs");
    t.dM_se = (eta * (Ase.array().square() + (kap * (gsse.asDiagonal() * M)).array().square()).sqrt()).matrix();
    t.dR_drift_se.resize(H, H);
    for (int h = 0; h < H; ++h)
      for (int k = 0; k < H; ++k)
        t.dR_drift_se(h, k) = eta * std::sqrt(Bse(k, h) * Bse(k, h) + Bse(h, k) * Bse(h, k) +
                                              std::pow(kap * R(h, k), 2) * (gsse(k) * gsse(k) + gsse(h) * gsse(h)));
    t.dR_noise_se = eta * eta / setup_.batch * Nse;
    t.risk_se = E.view(est.se, "e")(0, 0);
  }
  return t;
}

DriftTerms OrderParameterFlow::terms(const Eigen::VectorXd& x) const {
  const Eigen::MatrixXd M = layout_.view(x, "M");
  const Eigen::MatrixXd R = 0.5 * (layout_.view(x, "R") + layout_.view(x, "R").transpose());
  const FlowTerms t = terms(M, R, true);
  const Eigen::MatrixXd zero_M = Eigen::MatrixXd::Zero(M.rows(), M.cols());
  return DriftTerms()
      .add("eta", pack_state(setup_, t.dM, t.dR_drift), pack_state(setup_, t.dM_se, t.dR_drift_se))
      .add("eta2", pack_state(setup_, zero_M, t.dR_noise), pack_state(setup_, zero_M, t.dR_noise_se));
}

Observables OrderParameterFlow::observe(const Eigen::VectorXd& x, double) const {
  const auto [risk, se] = this->risk(layout_.view(x, "M"), layout_.view(x, "R"));
  return Observables().add("risk", risk, se);
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
  Setup kept_setup = setup_;
  kept_setup.bias.resize(K);
  for (int i = 0; i < K; ++i) kept_setup.bias(i) = setup_.bias(kept[static_cast<std::size_t>(i)]);
  att.logit_offset = kept_setup.logit_offset(Rk.diagonal());
  FlowKernel k2(setup_, perms_, thetas_, theta_w_, theta_from_sample_, true, Mk, psd_sqrt(Rk - Mk * Mk.transpose()), att);
  const Estimate est = expectation(*samples_, k2, 1, true, options_.threads);
  return {est.mean(0), est.se(0)};
}

}  // namespace hdat::specialization
