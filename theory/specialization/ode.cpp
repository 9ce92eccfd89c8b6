#include "hdat/specialization/ode.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "hdat/core/autodiff.hpp"
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

// The local fields of one base sample (derivation.md §1), with the signal token ε = 0
// (exchangeability). Sample layout: [θ noise (F, if sampled)] then per token [λ noise (F), ζ (H_full)];
// head h reads the sample's ζ coordinate perm[h] (the head permutations of the sample set).
struct LocalFields {
  int L, F, H, H_full;
  Eigen::MatrixXd lam, zeta, chi;  // F x L, H x L, L x H

  LocalFields(int tokens, int features, int heads, int heads_in_sample)
      : L(tokens), F(features), H(heads), H_full(heads_in_sample), lam(features, tokens), zeta(heads, tokens), chi(tokens, heads) {}

  /// ζ of the tokens with the heads permuted (independent of θ).
  void load_zeta(const double* zl, const std::vector<int>& perm) {
    const int stride = F + H_full;
    for (int l = 0; l < L; ++l)
      for (int h = 0; h < H; ++h) zeta(h, l) = zl[l * stride + F + perm[static_cast<std::size_t>(h)]];
  }
  /// λ_ℓ = θ δ_ℓ0 + noise and χ_ℓ = M λ_ℓ + C ζ_ℓ.
  void compute(const double* zl, const Eigen::VectorXd& theta, const Eigen::MatrixXd& M, const Eigen::MatrixXd& C) {
    const int stride = F + H_full;
    for (int l = 0; l < L; ++l)
      for (int f = 0; f < F; ++f) lam(f, l) = zl[l * stride + f] + (l == 0 ? theta(f) : 0.0);
    chi.noalias() = lam.transpose() * M.transpose();
    chi.noalias() += zeta.transpose() * C.transpose();
  }
};

// One base sample: for every head permutation and every enumerated prior point, the quantities above.
struct FlowKernel {
  // Shared, read-only.
  const Config* s;
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
  LocalFields fields;
  Eigen::MatrixXd a, m, g, mm, N;
  Eigen::VectorXd w, err, theta;

  FlowKernel(const Config& setup, const std::vector<std::vector<int>>& p, const Eigen::MatrixXd& th, const Eigen::VectorXd& tw,
             bool from_sample, bool only_risk, const Eigen::MatrixXd& Mm, const Eigen::MatrixXd& Cm, const Attention& attention)
      : s(&setup), perms(&p), thetas(&th), theta_w(&tw), theta_from_sample(from_sample), risk_only(only_risk), M(Mm), C(Cm),
        att(attention), outputs(kernel_outputs(static_cast<int>(Mm.rows()), setup.F, only_risk)),
        fields(setup.L, setup.F, static_cast<int>(Mm.rows()), setup.H) {
    const int L = s->L, H = static_cast<int>(M.rows()), F = s->F;
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
    const double* zt = z;
    const double* zl = z + (theta_from_sample ? F : 0);
    const double Delta2 = s->noise * s->noise;
    const int n_theta = theta_from_sample ? 1 : static_cast<int>(thetas->rows());
    const double perm_w = 1.0 / static_cast<double>(perms->size());
    const Eigen::MatrixXd& lam = fields.lam;
    const Eigen::MatrixXd& chi = fields.chi;
    for (const auto& perm : *perms) {
      fields.load_zeta(zl, perm);
      for (int it = 0; it < n_theta; ++it) {
        double wt = perm_w;
        if (theta_from_sample) {
          s->prior.from_normals(zt, theta);
        } else {
          theta = thetas->row(it).transpose();
          wt *= (*theta_w)(it);
        }
        fields.compute(zl, theta, M, C);
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

OrderParameterFlow::OrderParameterFlow(const Config& setup, const FlowOptions& options)
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

Attention OrderParameterFlow::attention_at(const Config& setup, const Eigen::MatrixXd& R, const Eigen::VectorXd& b) const {
  Attention att(setup.activation, setup.aggregation, setup.L, static_cast<int>(R.rows()));
  // break_term=bias_logit (testing only): the theory forgets b in the logits, as if it were never set.
  const Eigen::VectorXd used = options_.break_term == "bias_logit" ? Eigen::VectorXd(Eigen::VectorXd::Zero(b.size())) : b;
  att.logit_offset = setup.logit_offset(R.diagonal(), used);
  return att;
}

namespace {
// The drift from the kernel's expectations (derivation.md §4, "In the code"), for any scalar type:
// doubles for the flow, dual numbers for its exact Jacobian (hdat optimize).
//   dM = −η (E[A] − κ diag(E[gs]) M)
//   dR = −η (E[B]ᵀ + E[B] − κ R ∘ (E[gs] 1ᵀ + 1 E[gs]ᵀ)) + (η²/B) E[N]   (drift | noise)
//   db = −η_b E[gs]
template <class S>
struct Drift {
  using Mat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;
  using Vec = Eigen::Matrix<S, Eigen::Dynamic, 1>;
  Mat dM, dR_drift, dR_noise;
  Vec db;
};

template <class S, class Mat, class Vec>
Drift<S> assemble_drift(const Mat& A, const Mat& B, const Mat& Nn, const Vec& gs, const Mat& M, const Mat& R, const S& eta, double kap,
                        int batch, bool keep_noise, double eta_b) {
  Drift<S> d;
  const int H = static_cast<int>(R.rows());
  d.dM = -eta * (A - kap * (gs.asDiagonal() * M));
  d.dR_drift.resize(H, H);
  for (int h = 0; h < H; ++h)
    for (int k = 0; k < H; ++k) d.dR_drift(h, k) = -eta * (B(k, h) + B(h, k) - kap * R(h, k) * (gs(k) + gs(h)));
  const S noise = keep_noise ? S(eta * eta / batch) : S(eta * 0.0);
  d.dR_noise = noise * Nn;
  d.db = -eta_b * gs;
  return d;
}
}  // namespace

FlowTerms OrderParameterFlow::terms(const Eigen::MatrixXd& M, const Eigen::MatrixXd& R, bool with_se) const {
  if (setup_.train_bias) throw std::logic_error("OrderParameterFlow::terms: the bias is trained, pass the state's b");
  return terms(M, R, setup_.bias, with_se);
}

FlowTerms OrderParameterFlow::terms(const Eigen::MatrixXd& M, const Eigen::MatrixXd& R, const Eigen::VectorXd& b, bool with_se) const {
  return terms_at(M, R, b, with_se, setup_.eta);
}

FlowTerms OrderParameterFlow::terms_at(const Eigen::MatrixXd& M, const Eigen::MatrixXd& R, const Eigen::VectorXd& b, bool with_se,
                                       double eta) const {
  const int H = setup_.H;
  FlowTerms t;
  const Eigen::MatrixXd C = psd_sqrt(R - M * M.transpose(), &t.psd_violation);
  t.psd_violation = std::min(0.0, t.psd_violation);
  FlowKernel kernel(setup_, perms_, thetas_, theta_w_, theta_from_sample_, false, M, C, attention_at(setup_, R, b));
  kernel.flip_gg = options_.break_term == "sign_gg";
  const Estimate est = expectation(*samples_, kernel, kernel.out_dim(), with_se, options_.threads);
  const StateLayout& E = kernel.outputs;
  const Eigen::MatrixXd A = E.view(est.mean, "A"), B = E.view(est.mean, "B"), Nn = E.view(est.mean, "N");
  const Eigen::VectorXd gs = E.view(est.mean, "gs");
  const double kap = setup_.kappa();
  // db_h/dt = −η_b E[∂e/∂b_h] = −η_b E[Σ_ℓ g_hℓ] (derivation.md §4: no η_b² term survives).
  const double eta_b = bias_rate();
  const Drift<double> d = assemble_drift<double>(A, B, Nn, gs, M, R, eta, kap, setup_.batch, keeps_noise(), eta_b);
  t.dM = d.dM;
  t.dR_drift = d.dR_drift;
  t.dR_noise = d.dR_noise;
  t.db = d.db;
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
    t.db_se = std::fabs(eta_b) * gsse;
    t.risk_se = E.view(est.se, "e")(0, 0);
  }
  return t;
}

DriftTerms OrderParameterFlow::terms(const Eigen::VectorXd& x, double t_now) const {
  const Eigen::MatrixXd M = layout_.view(x, "M");
  const Eigen::MatrixXd R = 0.5 * (layout_.view(x, "R") + layout_.view(x, "R").transpose());
  const FlowTerms t = terms_at(M, R, setup_.bias_in(x), true, setup_.eta_at(t_now));  // a schedule's η(t)
  const Eigen::MatrixXd zero_M = Eigen::MatrixXd::Zero(M.rows(), M.cols()), zero_R = Eigen::MatrixXd::Zero(R.rows(), R.cols());
  const Eigen::VectorXd zero_b = Eigen::VectorXd::Zero(setup_.H);
  DriftTerms out;
  out.add("eta", pack_state(setup_, t.dM, t.dR_drift, zero_b), pack_state(setup_, t.dM_se, t.dR_drift_se, zero_b))
      .add("eta2", pack_state(setup_, zero_M, t.dR_noise, zero_b), pack_state(setup_, zero_M, t.dR_noise_se, zero_b));
  if (setup_.train_bias) out.add("bias", pack_state(setup_, zero_M, zero_R, t.db), pack_state(setup_, zero_M, zero_R, t.db_se));
  return out;
}

Observables OrderParameterFlow::observe(const Eigen::VectorXd& x, double) const {
  const auto [risk, se] = this->risk(layout_.view(x, "M"), layout_.view(x, "R"), setup_.bias_in(x));
  return Observables().add("risk", risk, se);
}

bool OrderParameterFlow::keeps_noise() const { return options_.break_term != "eta2"; }

double OrderParameterFlow::bias_rate() const {
  return setup_.train_bias ? setup_.eta_bias * (options_.break_term == "bias_sign" ? -1.0 : 1.0) : 0.0;
}

void OrderParameterFlow::operator()(const ConstVecRef& x, VecRef dxdt, double t_now) const {
  const Eigen::MatrixXd M = layout_.view(x.data(), "M");
  Eigen::MatrixXd R = layout_.view(x.data(), "R");
  R = 0.5 * (R + R.transpose());
  const Eigen::VectorXd b = setup_.train_bias ? Eigen::VectorXd(layout_.view(x.data(), "b")) : setup_.bias;
  const FlowTerms t = terms_at(M, R, b, false, setup_.eta_at(t_now));
  layout_.view(dxdt.data(), "M") = t.dM;
  layout_.view(dxdt.data(), "R") = t.dR_drift + t.dR_noise;
  if (setup_.train_bias) layout_.view(dxdt.data(), "b") = t.db;
}

std::pair<double, double> OrderParameterFlow::risk(const Eigen::MatrixXd& M, const Eigen::MatrixXd& R) const {
  if (setup_.train_bias) throw std::logic_error("OrderParameterFlow::risk: the bias is trained, pass the state's b");
  return risk(M, R, setup_.bias);
}

std::pair<double, double> OrderParameterFlow::risk(const Eigen::MatrixXd& M, const Eigen::MatrixXd& R, const Eigen::VectorXd& b) const {
  std::vector<int> all(static_cast<std::size_t>(setup_.H));
  std::iota(all.begin(), all.end(), 0);
  return risk_with_heads(M, R, b, all);
}

namespace {
// The kept heads' overlaps and biases: their fields have exactly the joint law they had in the full
// model (the sample's ζ coordinates are shared).
struct KeptHeads {
  Eigen::MatrixXd M, R;
  Eigen::VectorXd b;
  KeptHeads(const Eigen::MatrixXd& Mf, const Eigen::MatrixXd& Rf, const Eigen::VectorXd& bf, const std::vector<int>& kept) {
    const int K = static_cast<int>(kept.size());
    M.resize(K, Mf.cols());
    R.resize(K, K);
    b.resize(K);
    for (int i = 0; i < K; ++i) {
      const int hi = kept[static_cast<std::size_t>(i)];
      M.row(i) = Mf.row(hi);
      b(i) = bf(hi);
      for (int j = 0; j < K; ++j) R(i, j) = Rf(hi, kept[static_cast<std::size_t>(j)]);
    }
  }
};
}  // namespace

std::pair<double, double> OrderParameterFlow::risk_with_heads(const Eigen::MatrixXd& M, const Eigen::MatrixXd& R, const Eigen::VectorXd& b,
                                                              const std::vector<int>& kept) const {
  if (kept.empty()) throw std::invalid_argument("risk_with_heads: at least one head must be kept");
  // The removed heads leave the output (and, for bayes, the normalisation; mean aggregation
  // averages over the kept heads).
  const KeptHeads k(M, R, b, kept);
  FlowKernel k2(setup_, perms_, thetas_, theta_w_, theta_from_sample_, true, k.M, psd_sqrt(k.R - k.M * k.M.transpose()),
                attention_at(setup_, k.R, k.b));
  const Estimate est = expectation(*samples_, k2, 1, true, options_.threads);
  return {est.mean(0), est.se(0)};
}

namespace {
// Per support point θ^k and head h: the head's total weight Σ_ℓ a_hℓ and its weight a_h0 on the
// signal token (outputs [total (K x H), on_signal (K x H)], column-major).
struct GatingKernel {
  const std::vector<std::vector<int>>* perms;
  const Eigen::MatrixXd* thetas;
  Eigen::MatrixXd M, C;
  Attention att;
  LocalFields fields;
  Eigen::MatrixXd a, m;
  Eigen::VectorXd w, theta;

  GatingKernel(const Config& s, const std::vector<std::vector<int>>& p, const Eigen::MatrixXd& th, const Eigen::MatrixXd& Mm,
               const Eigen::MatrixXd& Cm, const Attention& attention)
      : perms(&p), thetas(&th), M(Mm), C(Cm), att(attention), fields(s.L, s.F, s.H, s.H), a(s.L, s.H), m(s.L, s.H), w(s.L), theta(s.F) {}

  int out_dim() const { return 2 * static_cast<int>(thetas->rows() * M.rows()); }

  void operator()(const double* z, double* out) {
    const int K = static_cast<int>(thetas->rows()), H = static_cast<int>(M.rows());
    std::fill(out, out + out_dim(), 0.0);
    Eigen::Map<Eigen::MatrixXd> total(out, K, H), on_signal(out + K * H, K, H);
    const double perm_w = 1.0 / static_cast<double>(perms->size());
    for (const auto& perm : *perms) {
      fields.load_zeta(z, perm);
      for (int k = 0; k < K; ++k) {
        theta = thetas->row(k).transpose();
        fields.compute(z, theta, M, C);
        att.forward(fields.chi, a, w, m);
        total.row(k) += perm_w * a.colwise().sum();
        on_signal.row(k) += perm_w * a.row(0);
      }
    }
  }
};
}  // namespace

HeadGating OrderParameterFlow::gating(const Eigen::MatrixXd& M, const Eigen::MatrixXd& R, const Eigen::VectorXd& b) const {
  if (theta_from_sample_) throw std::logic_error("OrderParameterFlow::gating needs an enumerated prior (discrete, or signs with F <= 3)");
  const int K = static_cast<int>(thetas_.rows()), H = setup_.H;
  GatingKernel kernel(setup_, perms_, thetas_, M, psd_sqrt(R - M * M.transpose()), attention_at(setup_, R, b));
  const Estimate est = expectation(*samples_, kernel, kernel.out_dim(), true, options_.threads);
  HeadGating g;
  g.thetas = thetas_;
  g.probs = theta_w_;
  g.total = Eigen::Map<const Eigen::MatrixXd>(est.mean.data(), K, H);
  g.total_se = Eigen::Map<const Eigen::MatrixXd>(est.se.data(), K, H);
  g.on_signal = Eigen::Map<const Eigen::MatrixXd>(est.mean.data() + K * H, K, H);
  g.on_signal_se = Eigen::Map<const Eigen::MatrixXd>(est.se.data() + K * H, K, H);
  return g;
}

// ---------------------------------------------------------------------------------------------------
// Exact derivatives of the drift and the risk (hdat optimize): the same per-sample quantities on the
// same fixed sample set, carried as dual numbers along every state direction.

Eigen::MatrixXd psd_sqrt_derivative(const Eigen::MatrixXd& S, const Eigen::MatrixXd& dS) {
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(0.5 * (S + S.transpose()));
  const Eigen::VectorXd root = es.eigenvalues().cwiseMax(0.0).cwiseSqrt();
  const Eigen::MatrixXd& V = es.eigenvectors();
  Eigen::MatrixXd X = V.transpose() * (0.5 * (dS + dS.transpose())) * V;
  for (Eigen::Index i = 0; i < X.rows(); ++i)
    for (Eigen::Index j = 0; j < X.cols(); ++j) {
      const double d = root(i) + root(j);
      X(i, j) = d > 0 ? X(i, j) / d : 0.0;
    }
  return V * X * V.transpose();
}

namespace {

using DualMat = Eigen::Matrix<Dual, Eigen::Dynamic, Eigen::Dynamic>;
using DualVec = Eigen::Matrix<Dual, Eigen::Dynamic, 1>;

// The kernel's inputs as dual numbers along the n state directions (plus `extra` trailing slots):
// M, C = psd_sqrt(R − MMᵀ) and the logit offsets, each with its derivative in every direction.
struct DualInputs {
  DualMat M, C, R;
  DualVec offset, b;
};

DualInputs dual_inputs(const Config& setup, const StateLayout& layout, const Eigen::VectorXd& x, const Eigen::VectorXd& bias_used, int extra) {
  const int H = setup.H, F = setup.F, n = layout.size(), dirs = n + extra;
  const Eigen::MatrixXd M = layout.view(x, "M");
  const Eigen::MatrixXd R = 0.5 * (layout.view(x, "R") + layout.view(x, "R").transpose());
  const Eigen::MatrixXd S = R - M * M.transpose();
  const Eigen::MatrixXd C = psd_sqrt(S);
  DualInputs in;
  in.M.resize(H, F);
  in.C.resize(H, H);
  in.R.resize(H, H);
  in.b.resize(H);
  for (int h = 0; h < H; ++h) {
    for (int f = 0; f < F; ++f) in.M(h, f) = dual_constant(M(h, f), dirs);
    for (int k = 0; k < H; ++k) in.C(h, k) = dual_constant(C(h, k), dirs), in.R(h, k) = dual_constant(R(h, k), dirs);
    in.b(h) = dual_constant(bias_used(h), dirs);
  }
  const bool bias_in_state = layout.contains("b");
  for (int k = 0; k < n; ++k) {
    Eigen::VectorXd e = Eigen::VectorXd::Zero(n);
    e(k) = 1;
    const Eigen::MatrixXd dM = layout.view(e, "M");
    const Eigen::MatrixXd dR = 0.5 * (layout.view(e, "R") + layout.view(e, "R").transpose());
    for (int h = 0; h < H; ++h)
      for (int f = 0; f < F; ++f) in.M(h, f).derivatives()(k) = dM(h, f);
    for (int h = 0; h < H; ++h)
      for (int j = 0; j < H; ++j) in.R(h, j).derivatives()(k) = dR(h, j);
    if (dM.cwiseAbs().maxCoeff() > 0 || dR.cwiseAbs().maxCoeff() > 0) {
      const Eigen::MatrixXd dC = psd_sqrt_derivative(S, dR - dM * M.transpose() - M * dM.transpose());
      for (int h = 0; h < H; ++h)
        for (int j = 0; j < H; ++j) in.C(h, j).derivatives()(k) = dC(h, j);
    }
    if (bias_in_state && bias_used.size() && layout.view(e, "b").cwiseAbs().maxCoeff() > 0)
      for (int h = 0; h < H; ++h) in.b(h).derivatives()(k) = layout.view(e, "b")(h, 0);
  }
  // The logit offsets (Config::logit_offset): softmax1 b_h, bayes −R_hh/2 + b_h, softmax 0.
  in.offset.resize(H);
  for (int h = 0; h < H; ++h) {
    if (setup.activation == Activation::softmax1) in.offset(h) = in.b(h);
    else if (setup.activation == Activation::bayes) in.offset(h) = -0.5 * in.R(h, h) + in.b(h);
    else in.offset(h) = dual_constant(0.0, dirs);
  }
  return in;
}

// FlowKernel's per-sample quantities (A, B, gs, N, e; derivation.md §4) in dual numbers: each output
// is written as its value followed by its derivatives along the directions (out_dim = size × (1 + dirs)).
struct TangentKernel {
  const Config* s;
  const std::vector<std::vector<int>>* perms;
  const Eigen::MatrixXd* thetas;
  const Eigen::VectorXd* theta_w;
  bool theta_from_sample, risk_only, flip_gg;
  DualInputs in;
  Attention att;
  StateLayout outputs;
  int dirs;
  LocalFields fields;
  DualMat chi, a, m, g, mm, N, A, B, Nacc;
  DualVec w, err, gs;
  Eigen::VectorXd theta;

  TangentKernel(const Config& setup, const std::vector<std::vector<int>>& p, const Eigen::MatrixXd& th, const Eigen::VectorXd& tw,
                bool from_sample, bool only_risk, bool flip, DualInputs inputs, const Attention& attention, int directions)
      : s(&setup), perms(&p), thetas(&th), theta_w(&tw), theta_from_sample(from_sample), risk_only(only_risk), flip_gg(flip),
        in(std::move(inputs)), att(attention), outputs(kernel_outputs(setup.H, setup.F, only_risk)), dirs(directions),
        fields(setup.L, setup.F, setup.H, setup.H) {
    const int L = s->L, H = s->H, F = s->F;
    chi.resize(L, H), a.resize(L, H), m.resize(L, H), g.resize(L, H), mm.resize(H, H), N.resize(H, H);
    A.resize(H, F), B.resize(H, H), Nacc.resize(H, H), w.resize(L), err.resize(L), gs.resize(H), theta.resize(F);
  }

  int out_dim() const { return outputs.size() * (1 + dirs); }

  void put(double* out, int index, const Dual& v) const {
    double* o = out + index * (1 + dirs);
    o[0] += v.value();
    const Derivatives& d = v.derivatives();
    for (int k = 0; k < d.size(); ++k) o[1 + k] += d(k);
  }

  void operator()(const double* z, double* out) {
    const int L = s->L, H = s->H, F = s->F;
    std::fill(out, out + out_dim(), 0.0);
    const double* zt = z;
    const double* zl = z + (theta_from_sample ? F : 0);
    const double Delta2 = s->noise * s->noise;
    const int n_theta = theta_from_sample ? 1 : static_cast<int>(thetas->rows());
    const double perm_w = 1.0 / static_cast<double>(perms->size());
    const Dual zero = dual_constant(0.0, dirs);
    Dual e = zero;
    A.setConstant(zero), B.setConstant(zero), Nacc.setConstant(zero), gs.setConstant(zero);
    for (const auto& perm : *perms) {
      fields.load_zeta(zl, perm);
      for (int it = 0; it < n_theta; ++it) {
        double wt = perm_w;
        if (theta_from_sample) {
          s->prior.from_normals(zt, theta);
        } else {
          theta = thetas->row(it).transpose();
          wt *= (*theta_w)(it);
        }
        fields.compute(zl, theta, Eigen::MatrixXd::Zero(H, F), Eigen::MatrixXd::Zero(H, H));  // λ (χ below)
        const Eigen::MatrixXd& lam = fields.lam;
        const Eigen::MatrixXd& zeta = fields.zeta;
        for (int l = 0; l < L; ++l)
          for (int h = 0; h < H; ++h) {
            Dual c = zero;
            for (int f = 0; f < F; ++f) c += lam(f, l) * in.M(h, f);
            for (int j = 0; j < H; ++j) c += zeta(j, l) * in.C(h, j);
            chi(l, h) = c;
          }
        att.forward(chi, in.offset, a, w, m);
        err = -w;
        err(0) += 1.0;
        Dual a2 = zero;
        for (int l = 0; l < L; ++l) a2 += err(l) * err(l);
        e += wt * 0.5 * (Delta2 + a2);
        if (risk_only) continue;
        att.vjp(a, m, err, g);
        g = -g;
        for (int f = 0; f < F; ++f)
          for (int h = 0; h < H; ++h) {
            Dual acc = zero;
            for (int l = 0; l < L; ++l) acc += g(l, h) * lam(f, l);
            A(h, f) += wt * acc;
          }
        for (int hp = 0; hp < H; ++hp)
          for (int h = 0; h < H; ++h) {
            Dual acc = zero;
            for (int l = 0; l < L; ++l) acc += g(l, h) * chi(l, hp);
            B(h, hp) += wt * acc;
          }
        for (int h = 0; h < H; ++h) {
          Dual acc = zero;
          for (int l = 0; l < L; ++l) acc += g(l, h);
          gs(h) += wt * acc;
        }
        for (int h = 0; h < H; ++h)
          for (int k = 0; k < H; ++k) {
            Dual acc = zero;
            for (int l = 0; l < L; ++l) acc += m(l, h) * m(l, k);
            mm(h, k) = acc;
          }
        N.setConstant(zero);
        att.jacobian_gram(a, m, mm, a2 + Delta2, N);
        for (int h = 0; h < H; ++h)
          for (int k = 0; k < H; ++k) {
            Dual acc = zero;
            for (int l = 0; l < L; ++l) acc += g(l, h) * g(l, k);
            N(h, k) += (flip_gg ? -2.0 : 2.0) * acc;
          }
        Nacc += wt * N;
      }
    }
    // Write in the order of kernel_outputs: A, B, gs, N, e (column-major blocks).
    int index = 0;
    if (!risk_only) {
      for (int f = 0; f < F; ++f)
        for (int h = 0; h < H; ++h) put(out, index++, A(h, f));
      for (int k = 0; k < H; ++k)
        for (int h = 0; h < H; ++h) put(out, index++, B(h, k));
      for (int h = 0; h < H; ++h) put(out, index++, gs(h));
      for (int k = 0; k < H; ++k)
        for (int h = 0; h < H; ++h) put(out, index++, Nacc(h, k));
    }
    put(out, index, e);
  }
};

// An expectation's mean back as dual numbers (value and derivatives).
Dual dual_at(const Eigen::VectorXd& mean, int index, int dirs) {
  Dual d(mean(index * (1 + dirs)), Derivatives::Zero(dirs));
  for (int k = 0; k < dirs; ++k) d.derivatives()(k) = mean(index * (1 + dirs) + 1 + k);
  return d;
}

}  // namespace

void OrderParameterFlow::drift_derivatives(const Eigen::VectorXd& x, double eta, Eigen::VectorXd& f, Eigen::MatrixXd* f_x,
                                           Eigen::VectorXd* f_eta) const {
  const int H = setup_.H, F = setup_.F, n = layout_.size(), dirs = n + 1;  // the state, then η
  if (dirs > kMaxDirections) throw InputError("H", fmt::format("optimize differentiates at most {} directions; this state has {}", kMaxDirections, n));
  const Eigen::VectorXd bias = setup_.bias_in(x);
  const Eigen::VectorXd used = options_.break_term == "bias_logit" ? Eigen::VectorXd(Eigen::VectorXd::Zero(H)) : bias;
  DualInputs in = dual_inputs(setup_, layout_, x, used, 1);
  TangentKernel kernel(setup_, perms_, thetas_, theta_w_, theta_from_sample_, false, options_.break_term == "sign_gg", in,
                       Attention(setup_.activation, setup_.aggregation, setup_.L, H), dirs);
  const Estimate est = expectation(*samples_, kernel, kernel.out_dim(), false, options_.threads);
  // Back to dual matrices, then the drift's assembly in dual numbers with η as the last direction.
  DualMat A(H, F), B(H, H), Nn(H, H);
  DualVec gs(H), b_state(H);
  int index = 0;
  for (int j = 0; j < F; ++j)
    for (int h = 0; h < H; ++h) A(h, j) = dual_at(est.mean, index++, dirs);
  for (int k = 0; k < H; ++k)
    for (int h = 0; h < H; ++h) B(h, k) = dual_at(est.mean, index++, dirs);
  for (int h = 0; h < H; ++h) gs(h) = dual_at(est.mean, index++, dirs);
  for (int k = 0; k < H; ++k)
    for (int h = 0; h < H; ++h) Nn(h, k) = dual_at(est.mean, index++, dirs);
  const Dual eta_d = dual_variable(eta, dirs, n);
  const Drift<Dual> d = assemble_drift<Dual>(A, B, Nn, gs, in.M, in.R, eta_d, setup_.kappa(), setup_.batch, keeps_noise(), bias_rate());
  f.resize(n);
  if (f_x) f_x->setZero(n, n);
  if (f_eta) f_eta->setZero(n);
  auto write = [&](const std::string& block, int rows, int cols, auto&& value) {
    const Block& bl = layout_.block(block);
    for (int c = 0; c < cols; ++c)
      for (int r = 0; r < rows; ++r) {
        const Dual v = value(r, c);
        const int i = bl.offset + r + rows * c;
        f(i) = v.value();
        Derivatives dv = v.derivatives();
        if (dv.size() == 0) continue;
        if (f_x) f_x->row(i) = dv.head(n).transpose();
        if (f_eta) (*f_eta)(i) = dv(n);
      }
  };
  write("M", H, F, [&](int r, int c) { return Dual(d.dM(r, c)); });
  write("R", H, H, [&](int r, int c) { return Dual(d.dR_drift(r, c) + d.dR_noise(r, c)); });
  if (setup_.train_bias) write("b", H, 1, [&](int r, int) { return Dual(d.db(r)); });
}

double OrderParameterFlow::risk_gradient(const Eigen::VectorXd& x, Eigen::VectorXd* r_x) const {
  const int H = setup_.H, n = layout_.size(), dirs = n;
  const Eigen::VectorXd bias = setup_.bias_in(x);
  const Eigen::VectorXd used = options_.break_term == "bias_logit" ? Eigen::VectorXd(Eigen::VectorXd::Zero(H)) : bias;
  TangentKernel kernel(setup_, perms_, thetas_, theta_w_, theta_from_sample_, true, false, dual_inputs(setup_, layout_, x, used, 0),
                       Attention(setup_.activation, setup_.aggregation, setup_.L, H), dirs);
  const Estimate est = expectation(*samples_, kernel, kernel.out_dim(), false, options_.threads);
  const Dual e = dual_at(est.mean, 0, dirs);
  if (r_x) *r_x = e.derivatives().head(n);
  return e.value();
}

}  // namespace hdat::specialization
