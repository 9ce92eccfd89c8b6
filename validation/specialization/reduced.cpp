#include "hdat/specialization/reduced.hpp"

#include "hdat/core/gram.hpp"

#include <boost/random/uniform_int_distribution.hpp>
#include <cmath>

namespace hdat::specialization {

ReducedOnlineSGD::ReducedOnlineSGD(const Config& setup, int D, std::uint64_t seed, std::uint64_t replica, TestOptions test,
                                   Reduction reduction)
    : s_(setup), test_(test), reduction_(reduction), D_(D), seed_(seed), replica_(replica), b_(setup.bias),
      data_(rng::engine(seed, replica, rng::training_data)), drift_(rng::engine(seed, replica, rng::drift_check)),
      att_(setup.attention()) {
  C_ = OnlineSGD(setup, D, seed, replica, test).gram();
}

ReducedOnlineSGD::Step ReducedOnlineSGD::draw_step(rng::Engine& engine) {
  const int H = s_.H, F = s_.F, L = s_.L, batch = s_.batch, n = L * batch;
  const int p = static_cast<int>(C_.rows());
  const GramRoot g = gram_root(C_);
  const int r = g.rank;
  root_ = g.root;
  att_.logit_offset = s_.logit_offset(C_.diagonal().head(H), b_);
  // The spikes' coordinates in the orthonormal basis of span W: the signal token adds them times θ.
  const Eigen::MatrixXd spikes = root_.bottomRows(F).transpose();  // r × F
  boost::random::uniform_int_distribution<int> where(0, L - 1);
  Eigen::MatrixXd Y(n, r), U(n, p), chi(L, H), a(L, H), m(L, H), G(L, H);
  Eigen::VectorXd w(L), z(L), theta(F);
  const double eta = s_.eta_at(time());
  Step st;
  st.c.resize(H, n);
  st.db = Eigen::VectorXd::Zero(H);
  for (int b = 0; b < batch; ++b) {
    const int eps = where(engine);
    s_.prior.sample(engine, theta);
    for (int l = 0; l < L; ++l)
      for (int j = 0; j < r; ++j) Y(b * L + l, j) = normal_(engine);
    Y.row(b * L + eps) += (spikes * theta).transpose();
    const double xi = normal_(engine);
    U.middleRows(b * L, L).noalias() = Y.middleRows(b * L, L) * root_.transpose();
    chi = U.block(b * L, 0, L, H);
    z = U.block(b * L, H, L, 1);
    att_.forward(chi, a, w, m);
    const double err = z(eps) + s_.noise * xi - w.dot(z);
    att_.vjp(a, m, z, G);  // G_hℓ = ∂ŷ/∂χ_hℓ
    st.c.middleCols(b * L, L) = (eta / batch * err) * G.transpose();
    if (s_.train_bias) st.db += err * G.colwise().sum().transpose();
  }
  st.db *= s_.eta_bias / (static_cast<double>(D_) * batch);
  st.alpha = Eigen::VectorXd::Ones(H) - (s_.kappa() / D_) * st.c.rowwise().sum();
  st.T = st.c * U / static_cast<double>(D_);
  // x·x'/D: the projections' inner products plus the orthogonal parts' Wishart Gram matrix.
  Eigen::MatrixXd tokens = Y * Y.transpose();
  if (reduction_.orthogonal_part) tokens += orthogonal_gram(engine, n, D_ - r + reduction_.dof_shift);
  st.cGc = st.c * (tokens / static_cast<double>(D_)) * st.c.transpose();
  return st;
}

void ReducedOnlineSGD::step() {
  const Step st = draw_step(data_);
  const int H = s_.H;
  const auto p = C_.rows();
  // C' = A C A + S A + (S A)ᵀ + embed(c G cᵀ/D): A = diag(α, 1), S = T in the keys' rows.
  for (int h = 0; h < H; ++h) C_.row(h) *= st.alpha(h), C_.col(h) *= st.alpha(h);
  Eigen::MatrixXd SA = Eigen::MatrixXd::Zero(p, p);
  SA.topRows(H) = st.T;
  for (int h = 0; h < H; ++h) SA.col(h) *= st.alpha(h);
  C_ += SA + SA.transpose();
  C_.topLeftCorner(H, H) += st.cGc / static_cast<double>(D_);
  b_ += st.db;
  ++steps_;
}

void ReducedOnlineSGD::advance_to(double t) {
  const long target = std::lround(t * D_);
  while (steps_ < target) step();
}

Eigen::VectorXd ReducedOnlineSGD::state() const {
  const int H = s_.H, F = s_.F;
  return pack_state(s_, C_.block(0, H + 1, H, F), C_.topLeftCorner(H, H), b_);
}

Observables ReducedOnlineSGD::observe() {
  const int H = s_.H, F = s_.F;
  root_ = gram_root(C_).root;
  Attention att = att_;
  att.logit_offset = s_.logit_offset(C_.diagonal().head(H), b_);
  rng::Engine test = rng::engine(seed_, replica_, rng::test_set);
  const auto [risk, se] = projected_test_risk(s_, att, root_.topRows(H + 1).transpose(), root_.bottomRows(F).transpose(), test_.size, test);
  Observables o;
  o.add("risk", risk, se);
  for (int h = 0; h < H; ++h) o.add("v_" + std::to_string(h), C_(h, H));
  return o;
}

DriftTerms ReducedOnlineSGD::increment() {
  const Step st = draw_step(drift_);
  const int H = s_.H, F = s_.F;
  const double D = D_;
  const Eigen::VectorXd am = st.alpha - Eigen::VectorXd::Ones(H);
  const Eigen::MatrixXd R = C_.topLeftCorner(H, H), M = C_.block(0, H + 1, H, F), Tk = st.T.leftCols(H);
  // D·ΔM, D·(Δkᵀk + kᵀΔk)/D, D·ΔkᵀΔk/D with Δk_h = (α_h − 1) k_h + Σ_ℓ c_hℓ x_ℓ/√D.
  const Eigen::MatrixXd dM = D * (am.asDiagonal() * M + st.T.middleCols(H + 1, F));
  const Eigen::MatrixXd half = D * (am.asDiagonal() * R + Tk);
  const Eigen::MatrixXd dR_drift = half + half.transpose();
  const Eigen::MatrixXd dR_noise =
      D * (am * am.transpose()).cwiseProduct(R) + D * (am.asDiagonal() * Tk.transpose() + Tk * am.asDiagonal()) + st.cGc;
  const Eigen::MatrixXd zero_M = Eigen::MatrixXd::Zero(H, F), zero_R = Eigen::MatrixXd::Zero(H, H);
  const Eigen::VectorXd zero_b = Eigen::VectorXd::Zero(H);
  DriftTerms out;
  out.add("eta", pack_state(s_, dM, dR_drift, zero_b)).add("eta2", pack_state(s_, zero_M, dR_noise, zero_b));
  if (s_.train_bias) out.add("bias", pack_state(s_, zero_M, zero_R, D * st.db));
  return out;
}

}  // namespace hdat::specialization
