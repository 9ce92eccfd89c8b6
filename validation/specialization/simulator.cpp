#include "hdat/specialization/simulator.hpp"

#include <boost/random/uniform_01.hpp>
#include <cmath>

namespace hdat::specialization {

OnlineSGD::OnlineSGD(const Setup& setup, int D, std::uint64_t seed, std::uint64_t replica, TestOptions test)
    : s_(setup), test_(test), D_(D), sqrtD_(std::sqrt(static_cast<double>(D))), seed_(seed), replica_(replica),
      data_(rng::engine(seed, replica, rng::training_data)), att_(setup.attention()) {
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
}

OnlineSGD::Sample OnlineSGD::draw(rng::Engine& eng, RowMatrix& X) {
  const int L = s_.L, F = s_.F;
  boost::random::uniform_int_distribution<int> where(0, L - 1);
  const int eps = where(eng);
  s_.prior.sample(eng, theta_);
  double* x = X.data();
  const long n = static_cast<long>(L) * D_;
  for (long i = 0; i < n; ++i) x[i] = normal_(eng);
  signal_.noalias() = Kstar_ * theta_;
  X.row(eps) += signal_.transpose() / sqrtD_;
  return {eps, normal_(eng)};
}

double OnlineSGD::forward_backward(const RowMatrix& X, const Sample& smp) {
  const int H = s_.H;
  fields_.noalias() = X * W_;
  fields_ /= sqrtD_;
  chi_ = fields_.leftCols(H);
  z_ = fields_.col(H);
  att_.logit_offset = s_.logit_offset(W_.leftCols(H).colwise().squaredNorm().transpose() / D_);
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
  for (int b = 0; b < s_.batch; ++b) {
    const Sample smp = draw(data_, X_);
    const double err = forward_backward(X_, smp);
    // (y − ŷ) Σ_ℓ G_hℓ (x_ℓ/√D − κ k_h/D), averaged over the batch below.
    update_.noalias() += (err / sqrtD_) * (X_.transpose() * G_);
    if (kap != 0.0)
      for (int h = 0; h < H; ++h) update_.col(h) -= (err * kap * G_.col(h).sum() / D_) * W_.col(h);
  }
  update_ *= s_.eta / s_.batch;
}

void OnlineSGD::step() {
  accumulate_update();
  W_.leftCols(s_.H) += update_;
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
  double sum = 0, sq = 0;
  auto add = [&](double err) {
    const double e = 0.5 * err * err;
    sum += e;
    sq += e * e;
  };
  if (!projected) {
    RowMatrix X(s_.L, D_);
    for (long i = 0; i < n; ++i) {
      const Sample smp = draw(test, X);
      add(forward_backward(X, smp));
    }
  } else {
    // Orthonormal basis Q of span(K*, v*, k_h); a token is x = Q u + (orthogonal part), u ~ N(0, I_r),
    // and the signal token adds Qᵀ K* θ / √D to u. Fields: [χ, z] = u ᵀ Qᵀ [K, v*] / √D.
    const int F = s_.F, H = s_.H, L = s_.L;
    Eigen::MatrixXd span(D_, F + 1 + H);
    span << Kstar_, W_.col(H), W_.leftCols(H);
    const Eigen::HouseholderQR<Eigen::MatrixXd> qr(span);
    const int r = F + 1 + H;
    const Eigen::MatrixXd Q = qr.householderQ() * Eigen::MatrixXd::Identity(D_, r);
    const Eigen::MatrixXd P = Q.transpose() * W_ / sqrtD_;        // r x (H + 1)
    const Eigen::MatrixXd S = Q.transpose() * Kstar_ / sqrtD_;    // r x F
    RowMatrix U(L, r);
    Eigen::MatrixXd fields(L, H + 1), chi(L, H), a(L, H), m(L, H), G(L, H);
    Eigen::VectorXd w(L), z(L), theta(F);
    boost::random::uniform_int_distribution<int> where(0, L - 1);
    Attention att = att_;
    att.logit_offset = s_.logit_offset(W_.leftCols(H).colwise().squaredNorm().transpose() / D_);
    for (long i = 0; i < n; ++i) {
      const int eps = where(test);
      s_.prior.sample(test, theta);
      for (int l = 0; l < L; ++l)
        for (int j = 0; j < r; ++j) U(l, j) = normal_(test);
      U.row(eps) += (S * theta).transpose();
      fields.noalias() = U * P;
      chi = fields.leftCols(H);
      z = fields.col(H);
      att.forward(chi, a, w, m);
      const double y = z(eps) + s_.noise * normal_(test);
      add(y - w.dot(z));
    }
  }
  const double mean = sum / n;
  const double var = n > 1 ? std::max(0.0, (sq / n - mean * mean) * n / (n - 1.0)) : 0.0;
  return {mean, std::sqrt(var / n)};
}

Eigen::VectorXd OnlineSGD::state() const { return pack_state(s_, M(), R()); }

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
  return DriftTerms().add("eta", pack_state(s_, inc.dM, inc.dR_drift)).add("eta2", pack_state(s_, zero_M, inc.dR_noise));
}

OnlineSGD::Increment OnlineSGD::increments() {
  accumulate_update();
  const Eigen::MatrixXd& dk = update_;
  const auto K = W_.leftCols(s_.H);
  Increment inc;
  inc.dM = dk.transpose() * Kstar_;                       // D · ΔM
  inc.dR_drift = dk.transpose() * K + K.transpose() * dk;  // D · (Δkᵀk + kᵀΔk)/D
  inc.dR_noise = dk.transpose() * dk;                      // D · Δkᵀ Δk / D
  return inc;
}

}  // namespace hdat::specialization
