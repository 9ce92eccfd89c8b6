#include "hdat/committee/simulator.hpp"

#include <cmath>
#include <stdexcept>

#include "hdat/committee/integrals.hpp"
#include "hdat/core/gram.hpp"

namespace hdat::committee {

StepRule::Error StepRule::coefficients(const double* u, double zeta, const Eigen::VectorXd& v, const StepControls& c, double* first,
                                       double* second) const {
  const int K = s_.K, M = s_.M;
  const Activation g = s_.activation;
  double clean = 0;
  for (int m = 0; m < M; ++m) clean += s_.vstar(m) * activation(g, u[K + m]);
  for (int k = 0; k < K; ++k)
    if (!c.kept || c.kept[k]) clean -= v(k) * activation(g, u[k]);
  const double delta = clean + s_.noise * zeta;
  for (int k = 0; k < K; ++k) first[k] = (!c.kept || c.kept[k]) ? c.eta * v(k) * activation_derivative(g, u[k]) * delta : 0.0;
  if (second)
    for (int k = 0; k < K; ++k) second[k] = (!c.kept || c.kept[k]) ? s_.eta_v * activation(g, u[k]) * delta : 0.0;
  return {clean, delta};
}

OnlineSGD::OnlineSGD(const Config& setup, int N, std::uint64_t seed, std::uint64_t replica, long test_size)
    : s_(setup), N_(N), sqrtN_(std::sqrt(static_cast<double>(N))), seed_(seed), replica_(replica), test_size_(test_size),
      rule_(setup),
      data_{rng::NormalStream(seed, replica, rng::training_tokens), rng::engine(seed, replica, rng::training_data)},
      drift_{rng::NormalStream(seed, replica, rng::drift_tokens), rng::engine(seed, replica, rng::drift_check)} {
  s_.N = N;
  s_.validate();
  const int K = s_.K, M = s_.M;
  if (s_.teacher == TeacherKind::orthonormal && N < M)
    throw std::invalid_argument("OnlineSGD: an orthonormal teacher needs N >= M");
  W_.resize(N, K + M);
  boost::random::normal_distribution<double> normal;
  auto teacher = rng::engine(seed, replica, rng::teacher);
  for (int m = 0; m < M; ++m)
    for (int j = 0; j < N; ++j) W_(j, K + m) = normal(teacher);
  if (s_.teacher == TeacherKind::orthonormal) {
    // Orthonormalise (Householder QR) and scale to |w*_m|² = N: T = I exactly.
    const Eigen::HouseholderQR<Eigen::MatrixXd> qr(W_.rightCols(M));
    W_.rightCols(M) = (qr.householderQ() * Eigen::MatrixXd::Identity(N, M)) * sqrtN_;
  }
  auto init = rng::engine(seed, replica, rng::student_init);
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < N; ++j) W_(j, k) = s_.init_std * normal(init);
  v_ = s_.v0;
  x_.resize(N);
  u_.resize(K + M);
  first_.resize(K);
  second_.resize(K);
}

void OnlineSGD::fields(const Eigen::VectorXd& x) {
  u_.noalias() = W_.transpose() * x;
  u_ /= sqrtN_;
}

void OnlineSGD::draw_sample(SampleStreams& streams) {
  streams.inputs.fill(x_.data(), static_cast<std::size_t>(N_));
  zeta_ = normal_(streams.noise);
  controls_ = rule_.controls_at(time(), streams.noise, mask_);
  fields(x_);
}

void OnlineSGD::apply_step(const Eigen::VectorXd& x) {
  const int K = s_.K;
  rule_.coefficients(u_.data(), zeta_, v_, controls_, first_.data(), s_.train_v ? second_.data() : nullptr);
  auto students = W_.leftCols(K);
  if (s_.wd != 0) students *= 1.0 - s_.wd / N_;
  first_ /= sqrtN_;
  students.noalias() += x * first_.transpose();
  if (s_.train_v) v_ += second_ / N_;
  ++steps_;
}

void OnlineSGD::step() {
  draw_sample(data_);
  apply_step(x_);
}

void OnlineSGD::step(const Eigen::VectorXd& x, double zeta) {
  if (x.size() != N_) throw std::invalid_argument("OnlineSGD::step: x must have N entries");
  zeta_ = zeta;
  controls_ = StepControls{s_.eta_at(time()), nullptr};
  fields(x);
  apply_step(x);
}

void OnlineSGD::advance_to(double t) {
  const long target = std::lround(t * N_);
  while (steps_ < target) step();
}

namespace {
// The theory's blocks of weights with Gram matrix C (students first) and second layer v.
Eigen::VectorXd blocks_of_gram(const Config& s, const Eigen::MatrixXd& C, const Eigen::VectorXd& v) {
  Overlaps o;
  o.Q = C.topLeftCorner(s.K, s.K);
  o.R = C.topRightCorner(s.K, s.M);
  o.T = C.bottomRightCorner(s.M, s.M);
  o.v = v;
  return pack(s, o);
}
}  // namespace

Eigen::VectorXd OnlineSGD::state() const { return blocks_of_gram(s_, gram(), v_); }

Observables observe_gram(const Config& setup, const Eigen::MatrixXd& C, const Eigen::VectorXd& v, std::uint64_t seed, std::uint64_t replica,
                         long test_size) {
  const int L = setup.K + setup.M;
  // At test time every unit is kept and the output is scaled by p_f (test_scale).
  const Eigen::VectorXd s = readout_signs(setup.test_scale * v, setup.vstar);
  Observables o;
  o.add("eg", generalisation_error(setup.activation, C, s));
  if (test_size > 0) {
    // The fields of a fresh input are exactly N(0, C): drawing them from C's square root has the law
    // of a full test set of N-dimensional inputs at L draws per input instead of N.
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(C);
    const Eigen::MatrixXd root = es.eigenvectors() * es.eigenvalues().cwiseMax(0.0).cwiseSqrt().asDiagonal();
    auto test = rng::engine(seed, replica, rng::test_set);
    boost::random::normal_distribution<double> normal;
    Eigen::VectorXd z(L), u(L);
    double sum = 0, sq = 0;
    for (long n = 0; n < test_size; ++n) {
      for (int c = 0; c < L; ++c) z(c) = normal(test);
      u.noalias() = root * z;
      double clean = 0;
      for (int c = 0; c < L; ++c) clean += s(c) * activation(setup.activation, u(c));
      const double e = 0.5 * clean * clean;
      sum += e;
      sq += e * e;
    }
    const double mean = sum / test_size;
    const double var = test_size > 1 ? std::max(0.0, (sq / test_size - mean * mean) * test_size / (test_size - 1.0)) : 0.0;
    o.add("eg_test", mean, std::sqrt(var / test_size));
  }
  return o;
}

Observables OnlineSGD::observe() { return observe_gram(s_, gram(), v_, seed_, replica_, test_size_); }

DriftTerms StepRule::increment(const Eigen::MatrixXd& G, const Eigen::VectorXd& v, const Eigen::VectorXd& u, double x2, double zeta,
                               int N, const StepControls& c) const {
  // w'_k = α w_k + a_k x/√N with α = 1 − wd/N, a_k = η v_k g'(λ_k) Δ, so exactly
  //   N ΔR_kn = −wd R_kn + a_k ν_n
  //   N ΔQ_ik = N(α² − 1) Q_ik + α (a_i λ_k + a_k λ_i) + a_i a_k |x|²/N,
  // and a_i a_k = η² v_i v_k g'_i g'_k (Δ0² + 2σζΔ0 + σ²ζ²): the last piece is the label noise.
  const int K = s_.K, M = s_.M;
  const Activation g = s_.activation;
  Eigen::VectorXd a(K), b(K);
  const StepRule::Error err = coefficients(u.data(), zeta, v, c, a.data(), b.data());
  const double alpha = 1.0 - s_.wd / N;
  const StateLayout layout = s_.layout();
  const int n = layout.size();
  Eigen::VectorXd lin = Eigen::VectorXd::Zero(n), sq = Eigen::VectorXd::Zero(n), label = Eigen::VectorXd::Zero(n),
                  decay = Eigen::VectorXd::Zero(n), second = Eigen::VectorXd::Zero(n);
  const auto lambda = u.head(K), nu = u.tail(M);
  layout.view(lin, "R") = a * nu.transpose();
  layout.view(lin, "Q") = alpha * (a * lambda.transpose() + lambda * a.transpose());
  Eigen::VectorXd gp(K);
  for (int k = 0; k < K; ++k) gp(k) = (!c.kept || c.kept[k]) ? c.eta * v(k) * activation_derivative(g, u(k)) : 0.0;
  const double noise = s_.noise * zeta;
  layout.view(sq, "Q") = (x2 * (err.clean * err.clean + 2 * noise * err.clean)) * gp * gp.transpose();
  layout.view(label, "Q") = (x2 * noise * noise) * gp * gp.transpose();
  layout.view(decay, "R") = -s_.wd * G.topRightCorner(K, M);
  layout.view(decay, "Q") = (N * (alpha * alpha - 1.0)) * G.topLeftCorner(K, K);
  if (s_.train_v) layout.view(second, "v") = b;
  DriftTerms terms;
  for (const std::string& name : s_.active_terms()) {
    if (name == "eta_linear") terms.add(name, lin);
    if (name == "eta_squared") terms.add(name, sq);
    if (name == "label_noise") terms.add(name, label);
    if (name == "weight_decay") terms.add(name, decay);
    if (name == "second_layer") terms.add(name, second);
  }
  return terms;
}

DriftTerms OnlineSGD::increment() {
  draw_sample(drift_);
  return rule_.increment(gram(), v_, u_, x_.squaredNorm() / N_, zeta_, N_, controls_);
}

DriftTerms OnlineSGD::increment(const Eigen::VectorXd& x, double zeta) const {
  const Eigen::VectorXd u = W_.transpose() * x / sqrtN_;
  return rule_.increment(gram(), v_, u, x.squaredNorm() / N_, zeta, N_);
}

// ---------------------------------------------------------------------------------------------------
// The exact reduced chain (derivation.md §8).

void gram_step(Eigen::MatrixXd& C, const Eigen::VectorXd& u, double x2, const Eigen::VectorXd& first, double alpha, int N) {
  const Eigen::Index K = first.size(), p = C.rows();
  Eigen::VectorXd Au = u, a = Eigen::VectorXd::Zero(p);
  Au.head(K) *= alpha;
  a.head(K) = first;
  C.topRows(K) *= alpha;  // A C A
  C.leftCols(K) *= alpha;
  C.noalias() += (Au * a.transpose() + a * Au.transpose() + x2 * a * a.transpose()) / static_cast<double>(N);
}

ReducedSGD::ReducedSGD(const Config& setup, int N, std::uint64_t seed, std::uint64_t replica, long test_size, Reduction reduction)
    : ReducedSGD(setup, N, OnlineSGD(setup, N, seed, replica, 0).gram(), setup.v0, seed, replica, test_size, reduction) {}

ReducedSGD::ReducedSGD(const Config& setup, int N, const Eigen::MatrixXd& C, const Eigen::VectorXd& v, std::uint64_t seed,
                       std::uint64_t replica, long test_size, Reduction reduction)
    : s_(setup), N_(N), seed_(seed), replica_(replica), test_size_(test_size), reduction_(reduction), rule_(setup), C_(C), v_(v),
      data_(rng::engine(seed, replica, rng::training_data)), drift_(rng::engine(seed, replica, rng::drift_check)) {
  s_.N = N;
  s_.validate();
  const int p = s_.fields();
  if (C_.rows() != p || C_.cols() != p) throw std::invalid_argument("ReducedSGD: C must be (K + M) x (K + M)");
  if (v_.size() != s_.K) throw std::invalid_argument("ReducedSGD: v must have K entries");
  z_.resize(p);
  u_.resize(p);
  first_.resize(s_.K);
  second_.resize(s_.K);
}

void ReducedSGD::draw_sample(rng::Engine& engine) {
  const int p = s_.fields();
  for (int c = 0; c < p; ++c) z_(c) = normal_(engine);
  // u = B z with B Bᵀ = C (hdat::gram_root, rank r); then |Px|² = uᵀC⁺u = |z_r|².
  const GramRoot g = gram_root(C_);
  const int r = g.rank;
  root_ = g.root;
  u_.noalias() = root_ * z_.head(r);
  double x2 = z_.head(r).squaredNorm();
  // The part of x orthogonal to span W: |x_⊥|² ~ χ² with N − r degrees of freedom, independent of u.
  const int dof = N_ - r + reduction_.dof_shift;
  if (reduction_.orthogonal_part) x2 += orthogonal_gram(engine, 1, dof)(0, 0);
  x2_ = x2 / N_;
  zeta_ = normal_(engine);
  controls_ = rule_.controls_at(time(), engine, mask_);
}

void ReducedSGD::step() {
  draw_sample(data_);
  rule_.coefficients(u_.data(), zeta_, v_, controls_, first_.data(), s_.train_v ? second_.data() : nullptr);
  gram_step(C_, u_, x2_, first_, 1.0 - s_.wd / N_, N_);
  if (s_.train_v) v_ += second_ / N_;
  ++steps_;
}

void ReducedSGD::advance_to(double t) {
  const long target = std::lround(t * N_);
  while (steps_ < target) step();
}

Eigen::VectorXd ReducedSGD::state() const { return blocks_of_gram(s_, C_, v_); }

DriftTerms ReducedSGD::increment() {
  draw_sample(drift_);
  return rule_.increment(C_, v_, u_, x2_, zeta_, N_, controls_);
}

}  // namespace hdat::committee
