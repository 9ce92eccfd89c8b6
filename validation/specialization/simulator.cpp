#include "hdat/specialization/simulator.hpp"

#include <boost/random/uniform_01.hpp>
#include <algorithm>
#include <cmath>

#include "hdat/core/skinny_products.hpp"

namespace hdat::specialization {

namespace {
// The mean of ½ err² over test sequences and its standard error.
struct RiskAccumulator {
  double sum = 0, sq = 0;
  long n = 0;
  void add(double err) {
    const double e = 0.5 * err * err;
    sum += e, sq += e * e, ++n;
  }
  std::pair<double, double> result() const {
    const double mean = sum / n;
    const double var = n > 1 ? std::max(0.0, (sq / n - mean * mean) * n / (n - 1.0)) : 0.0;
    return {mean, std::sqrt(var / n)};
  }
};
}  // namespace

OnlineSGD::OnlineSGD(const Config& setup, int D, std::uint64_t seed, std::uint64_t replica, TestOptions test)
    : s_(setup), test_(test), D_(D), sqrtD_(std::sqrt(static_cast<double>(D))), seed_(seed), replica_(replica),
      b_(setup.bias), data_(rng::engine(seed, replica, rng::training_data)),
      tokens_(seed, replica, rng::training_tokens), att_(setup.attention()) {
  const int F = s_.F, H = s_.H, L = s_.L;
  if (D < F + 1) throw std::invalid_argument("OnlineSGD: D must exceed F");
  // Teacher: F + 1 Gaussian vectors, orthonormalised (QR), scaled to norm √D: spikes, then v*.
  auto teacher = rng::engine(seed, replica, rng::teacher);
  boost::random::normal_distribution<double> nd;
  Eigen::MatrixXd G(D, F + 1);
  for (int j = 0; j < F + 1; ++j)
    for (int i = 0; i < D; ++i) G(i, j) = nd(teacher);
  const Eigen::HouseholderQR<Eigen::MatrixXd> qr(G);
  const Eigen::MatrixXd Q = qr.householderQ() * Eigen::MatrixXd::Identity(D, F + 1);
  Kstar_ = Q.leftCols(F) * sqrtD_;
  W_.resize(D, H + 1);
  W_.col(H) = Q.col(F) * sqrtD_;
  // Student: k_h ~ N(0, σ0² I_D).
  auto init = rng::engine(seed, replica, rng::student_init);
  for (int h = 0; h < H; ++h)
    for (int i = 0; i < D; ++i) W_(i, h) = s_.init_std * nd(init);
  X_.resize(L, D);
  fields_.resize(L, H + 1);
  chi_.resize(L, H);
  a_.resize(L, H);
  m_.resize(L, H);
  G_.resize(L, H);
  update_.resize(D, H);
  w_.resize(L);
  z_.resize(L);
  theta_.resize(F);
  signal_.resize(D);
  bias_update_ = Eigen::VectorXd::Zero(H);
}

OnlineSGD::Sample OnlineSGD::draw(rng::Engine& eng, rng::NormalStream& tokens, RowMatrix& X) {
  const int L = s_.L;
  boost::random::uniform_int_distribution<int> where(0, L - 1);
  const int eps = where(eng);
  s_.prior.sample(eng, theta_);
  signal_.noalias() = Kstar_ * theta_;
  // Token ℓ is numbers [first + ℓD, first + (ℓ+1)D) of the stream, whatever the chunks: 32 tokens of
  // 512 coordinates (128 kB) stay in cache from their drawing to their product with the weights.
  constexpr int kChunk = 512;
  const std::uint64_t first = tokens.position();
  fields_.setZero();
  for (int d0 = 0; d0 < D_; d0 += kChunk) {
    const int n = std::min(kChunk, D_ - d0);
    for (int l = 0; l < L; ++l) tokens.fill_at(first + static_cast<std::uint64_t>(l) * D_ + d0, &X(l, d0), n);
    X.block(eps, d0, 1, n) += signal_.segment(d0, n).transpose() / sqrtD_;
    linalg::add_fields(X.middleCols(d0, n), W_.middleRows(d0, n), fields_);
  }
  tokens.seek(first + static_cast<std::uint64_t>(L) * D_);
  fields_ /= sqrtD_;
  return {eps, normal_(eng)};
}

double OnlineSGD::forward_backward(const Sample& smp) {
  const int H = s_.H;
  chi_ = fields_.leftCols(H);
  z_ = fields_.col(H);
  att_.logit_offset = s_.logit_offset(W_.leftCols(H).colwise().squaredNorm().transpose() / D_, b_);
  att_.forward(chi_, a_, w_, m_);
  const double y = z_(smp.location) + s_.noise * smp.noise;
  const double err = y - w_.dot(z_);
  att_.vjp(a_, m_, z_, G_);  // G_hℓ = ∂ŷ/∂χ_hℓ
  return err;
}

void OnlineSGD::accumulate_update() {
  const int H = s_.H;
  const double kap = s_.kappa();
  update_.setZero();
  bias_update_.setZero();
  for (int b = 0; b < s_.batch; ++b) {
    const Sample smp = draw(data_, tokens_, X_);
    const double err = forward_backward(smp);
    // (y − ŷ) Σ_ℓ G_hℓ (x_ℓ/√D − κ k_h/D), averaged over the batch below.
    weighted_G_ = (err / sqrtD_) * G_;
    linalg::add_transposed_product(X_, weighted_G_, update_);
    if (kap != 0.0)
      for (int h = 0; h < H; ++h) update_.col(h) -= (err * kap * G_.col(h).sum() / D_) * W_.col(h);
    // ∂ŷ/∂b_h = Σ_ℓ G_hℓ: the bias shifts every logit of its head.
    if (s_.train_bias) bias_update_ += err * G_.colwise().sum().transpose();
  }
  update_ *= s_.eta_at(time()) / s_.batch;
  bias_update_ *= s_.eta_bias / (static_cast<double>(D_) * s_.batch);
}

void OnlineSGD::step() {
  accumulate_update();
  W_.leftCols(s_.H) += update_;
  b_ += bias_update_;
  ++steps_;
}

void OnlineSGD::advance_to(double t) {
  const long target = std::lround(t * D_);
  while (steps_ < target) step();
}

Eigen::MatrixXd OnlineSGD::M() const { return W_.leftCols(s_.H).transpose() * Kstar_ / D_; }
Eigen::MatrixXd OnlineSGD::R() const {
  const auto K = W_.leftCols(s_.H);
  return K.transpose() * K / D_;
}
Eigen::VectorXd OnlineSGD::value_overlap() const { return W_.leftCols(s_.H).transpose() * W_.col(s_.H) / D_; }

std::pair<double, double> OnlineSGD::test_risk(long n, bool projected) {
  rng::Engine test = rng::engine(seed_, replica_, rng::test_set);
  if (!projected) {
    rng::NormalStream test_tokens(seed_, replica_, rng::test_tokens);
    RowMatrix X(s_.L, D_);
    RiskAccumulator risk;
    for (long i = 0; i < n; ++i) {
      const Sample smp = draw(test, test_tokens, X);
      risk.add(forward_backward(smp));
    }
    return risk.result();
  }
  // Orthonormal basis Q of span(K*, v*, k_h); a token is x = Q u + (orthogonal part), u ~ N(0, I_r),
  // and the signal token adds Qᵀ K* θ / √D to u. Fields: [χ, z] = u ᵀ Qᵀ [K, v*] / √D.
  const int F = s_.F, H = s_.H;
  Eigen::MatrixXd span(D_, F + 1 + H);
  span << Kstar_, W_.col(H), W_.leftCols(H);
  const Eigen::HouseholderQR<Eigen::MatrixXd> qr(span);
  const int r = F + 1 + H;
  const Eigen::MatrixXd Q = qr.householderQ() * Eigen::MatrixXd::Identity(D_, r);
  Attention att = att_;
  att.logit_offset = s_.logit_offset(W_.leftCols(H).colwise().squaredNorm().transpose() / D_, b_);
  return projected_test_risk(s_, att, Q.transpose() * W_ / sqrtD_, Q.transpose() * Kstar_ / sqrtD_, n, test);
}

std::pair<double, double> projected_test_risk(const Config& s, const Attention& att, const Eigen::MatrixXd& P, const Eigen::MatrixXd& S,
                                              long n, rng::Engine& test) {
  const int F = s.F, H = s.H, L = s.L;
  const auto r = P.rows();
  boost::random::normal_distribution<double> normal;
  OnlineSGD::RowMatrix U(L, r);
  Eigen::MatrixXd fields(L, H + 1), chi(L, H), a(L, H), m(L, H);
  Eigen::VectorXd w(L), z(L), theta(F);
  boost::random::uniform_int_distribution<int> where(0, L - 1);
  RiskAccumulator risk;
  for (long i = 0; i < n; ++i) {
    const int eps = where(test);
    s.prior.sample(test, theta);
    for (int l = 0; l < L; ++l)
      for (Eigen::Index j = 0; j < r; ++j) U(l, j) = normal(test);
    U.row(eps) += (S * theta).transpose();
    fields.noalias() = U * P;
    chi = fields.leftCols(H);
    z = fields.col(H);
    att.forward(chi, a, w, m);
    const double y = z(eps) + s.noise * normal(test);
    risk.add(y - w.dot(z));
  }
  return risk.result();
}

Eigen::MatrixXd OnlineSGD::gram() const {
  Eigen::MatrixXd all(D_, s_.H + 1 + s_.F);
  all << W_, Kstar_;
  return all.transpose() * all / static_cast<double>(D_);
}

Eigen::VectorXd OnlineSGD::state() const { return pack_state(s_, M(), R(), b_); }

Observables OnlineSGD::observe() {
  const auto [risk, se] = test_risk(test_.size, test_.projected);
  Observables o;
  o.add("risk", risk, se);
  const Eigen::VectorXd v = value_overlap();
  for (int h = 0; h < s_.H; ++h) o.add("v_" + std::to_string(h), v(h));
  return o;
}

DriftTerms OnlineSGD::increment() {
  const Increment inc = increments();
  const Eigen::MatrixXd zero_M = Eigen::MatrixXd::Zero(inc.dM.rows(), inc.dM.cols());
  const Eigen::MatrixXd zero_R = Eigen::MatrixXd::Zero(inc.dR_noise.rows(), inc.dR_noise.cols());
  const Eigen::VectorXd zero_b = Eigen::VectorXd::Zero(s_.H);
  DriftTerms out;
  out.add("eta", pack_state(s_, inc.dM, inc.dR_drift, zero_b)).add("eta2", pack_state(s_, zero_M, inc.dR_noise, zero_b));
  if (s_.train_bias) out.add("bias", pack_state(s_, zero_M, zero_R, inc.db));
  return out;
}

OnlineSGD::Increment OnlineSGD::increments() {
  accumulate_update();
  const Eigen::MatrixXd& dk = update_;
  const auto K = W_.leftCols(s_.H);
  Increment inc;
  inc.dM = dk.transpose() * Kstar_;                       // D · ΔM
  inc.dR_drift = dk.transpose() * K + K.transpose() * dk;  // D · (Δkᵀk + kᵀΔk)/D
  inc.dR_noise = dk.transpose() * dk;                      // D · Δkᵀ Δk / D
  inc.db = D_ * bias_update_;                              // D · Δb
  return inc;
}

}  // namespace hdat::specialization
