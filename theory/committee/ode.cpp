#include "hdat/committee/ode.hpp"

#include <omp.h>

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <vector>

#include "hdat/committee/integrals.hpp"

// glibc (≥ 2.35) ships vector variants of asin in libmvec (≤ 4 ulp; measured 2.6 ulp here against
// 0.5 ulp for the scalar asin, and 7x faster): declaring asin `simd` lets the arcsine loop of the
// η² term call them. Without libmvec the loop stays scalar.
#if defined(__x86_64__) && defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35)) && \
    !defined(HDAT_NO_LIBMVEC)
extern "C" {
#pragma omp declare simd notinbranch
double asin(double) noexcept;
}
#endif

namespace hdat::committee {

namespace {

constexpr int kMaxFields = 256;  // L = K + M; the pair kernel keeps its rows on the stack
// Pairs × L² below which the η² loop runs on one thread: about 100 µs of arcsines, so that a
// thread's share outweighs the fork/join (and, on an oversubscribed machine, the wait at the
// barrier for a descheduled thread: measured here at milliseconds per region under load 13 on 2 cores).
constexpr long kParallelWork = 1L << 17;

// The arguments of one pair's arcsines: one buffer per thread, allocated once per thread.
thread_local std::vector<double> arcsine_arguments;
// With dropout the weights s_c s_d E[μ_i μ_k μ_c μ_d] of one pair's arcsines depend on the pair.
thread_local std::vector<double> dropout_pair_weights;

// What one evaluation of the right-hand side computes from the covariance, before the learning
// rates and second-layer weights are applied (derivation.md §4). One per thread, reused.
struct Workspace {
  Eigen::MatrixXd C;      ///< L×L field covariance
  Eigen::VectorXd s;      ///< L: (−v, v*)
  Eigen::VectorXd st;     ///< L: (−r v, v*), the signs weighted by the keep-probability of a second student
  Eigen::VectorXd d;      ///< L: 1 + C_cc
  Eigen::MatrixXd J;      ///< K×L: J2(i, c)
  Eigen::MatrixXd H;      ///< K×L: s_c J2(i, c)
  Eigen::VectorXd Cs;     ///< L: C s (linear activation)
  Eigen::MatrixXd G;      ///< K×L: Σ_c' s_c' J2(i, c') C_c'b
  Eigen::MatrixXd I3sum;  ///< K×L: Σ_c s_c I3(i, b, c)
  Eigen::MatrixXd I4sum;  ///< K×K: Σ_cd s_c s_d I4(i, k, c, d)
  Eigen::MatrixXd J2ik;   ///< K×K: J2(i, k)
  Eigen::VectorXd I2sum;  ///< K: Σ_c s_c I2(i, c)
  std::vector<double> pair_weight;  ///< L(L+1)/2: s_c s_d, doubled off the diagonal, packed row by row (c ≤ d)

  void resize(int K, int L) {
    if (C.rows() == L && J.rows() == K) return;
    C.resize(L, L);
    s.resize(L);
    st.resize(L);
    d.resize(L);
    J.resize(K, L);
    H.resize(K, L);
    Cs.resize(L);
    G.resize(K, L);
    I3sum.resize(K, L);
    I4sum.resize(K, K);
    J2ik.resize(K, K);
    I2sum.resize(K);
    pair_weight.resize(static_cast<std::size_t>(L) * (L + 1) / 2);
  }
};

Workspace& workspace(int K, int L) {
  thread_local Workspace ws;
  ws.resize(K, L);
  return ws;
}

// Σ_cd s_c s_d asin(C'_cd / √((1 + C'_cc)(1 + C'_dd))) for the pair (i, k), C' the covariance
// tilted by g'(u_i) g'(u_k): C'_cd = C_cd − a_c p_d − b_c q_d with a = C_{·i}, b = C_{·k} and
// (p, q) = (I + C_{ik,ik})⁻¹ (a, b). The arguments of the upper triangle (c ≤ d) are packed into
// one array so that the arcsines run as one vector loop (libmvec where available).
double tilted_arcsine_sum(const Workspace& ws, const double* w, int i, int k) {
  const int L = static_cast<int>(ws.C.rows());
  const double* a = ws.C.col(i).data();
  const double* b = ws.C.col(k).data();
  const double di = ws.d(i), dk = ws.d(k), cik = ws.C(i, k);
  const double inv_lambda4 = 1.0 / (di * dk - cik * cik);
  double p[kMaxFields], q[kMaxFields], y[kMaxFields];
  for (int c = 0; c < L; ++c) {
    p[c] = (dk * a[c] - cik * b[c]) * inv_lambda4;
    q[c] = (di * b[c] - cik * a[c]) * inv_lambda4;
    y[c] = 1.0 / std::sqrt(ws.d(c) - a[c] * p[c] - b[c] * q[c]);  // 1/√(1 + C'_cc)
  }
  std::vector<double>& arg = arcsine_arguments;
  const std::size_t packed = ws.pair_weight.size();
  if (arg.size() < packed) arg.resize(packed);
  double* out = arg.data();
  for (int c = 0; c < L; ++c) {
    const double* Cc = ws.C.col(c).data();
    const double ac = a[c], bc = b[c], yc = y[c];
    *out++ = 1.0 - yc * yc;  // c = d: C'_cc / (1 + C'_cc)
    for (int e = c + 1; e < L; ++e) *out++ = (Cc[e] - ac * p[e] - bc * q[e]) * yc * y[e];
  }
  const double* x = arg.data();
  const long n = static_cast<long>(packed);
  double sum = 0;
#pragma omp simd reduction(+ : sum)
  for (long j = 0; j < n; ++j) sum += w[j] * std::asin(x[j]);
  return sum;
}

// The weights s_c s_d E[μ_i μ_k μ_c μ_d] (doubled off the diagonal, packed c ≤ d) of pair (i, k)
// under dropout with keep-probability r (derivation.md §9).
const double* dropout_weights(const Workspace& ws, int K, int i, int k, double r) {
  const int L = static_cast<int>(ws.s.size());
  std::vector<double>& w = dropout_pair_weights;
  if (w.size() < ws.pair_weight.size()) w.resize(ws.pair_weight.size());
  for (int c = 0, j = 0; c < L; ++c)
    for (int e = c; e < L; ++e) w[j++] = (e == c ? 1.0 : 2.0) * ws.s(c) * ws.s(e) * mask_moment(r, K, i, k, c, e);
  return w.data();
}

// Fill ws from the state: the covariance, then every integral sum the drift needs. With dropout
// (keep-probability r < 1) every sum carries the masks' moments (derivation.md §9):
//   Σ_c s_c E[μ_i μ_c] I3(i,b,c) = r [Σ_c s̃_c I3(i,b,c) − (1 − r) v_i I3(i,b,i)],  s̃ = (−r v, v*),
// the same for I2, and pair by pair s_c s_d E[μ_i μ_k μ_c μ_d] for I4.
void evaluate(const Config& st, const BlockOffsets& at, const double* x, Workspace& ws, int threads, double r) {
  const int K = st.K, M = st.M, L = K + M;
  const Eigen::Map<const Eigen::MatrixXd> Q(x + at.Q, K, K), R(x + at.R, K, M), T(x + at.T, M, M);
  ws.C.topLeftCorner(K, K) = Q;
  ws.C.topRightCorner(K, M) = R;
  ws.C.bottomLeftCorner(M, K) = R.transpose();
  ws.C.bottomRightCorner(M, M) = T;
  if (st.train_v)
    ws.s.head(K) = -Eigen::Map<const Eigen::VectorXd>(x + at.v, K);
  else
    ws.s.head(K) = -st.v0;
  ws.s.tail(M) = st.vstar;
  ws.st = ws.s;
  ws.st.head(K) *= r;
  const bool dropout = r != 1.0;

  if (st.activation == Activation::linear) {
    // I3(i, b, c) = C_bc, I4 = C_cd, I2 = C_ic, J2 = 1.
    ws.Cs.noalias() = ws.C * ws.st;
    ws.I3sum = ws.Cs.transpose().replicate(K, 1);
    ws.I2sum = ws.Cs.head(K);
    ws.J2ik.setOnes();
    if (!dropout) {
      ws.I4sum.setConstant(ws.s.dot(ws.Cs));
      return;
    }
    for (int i = 0; i < K; ++i) {
      ws.I3sum.row(i) = r * (ws.I3sum.row(i) + (1 - r) * ws.s(i) * ws.C.row(i));  // s_i = −v_i
      ws.I2sum(i) = r * (ws.I2sum(i) + (1 - r) * ws.s(i) * ws.C(i, i));
      for (int k = i; k < K; ++k) {
        double sum = 0;
        for (int c = 0; c < L; ++c)
          for (int e = 0; e < L; ++e) sum += ws.s(c) * ws.s(e) * mask_moment(r, K, i, k, c, e) * ws.C(c, e);
        ws.I4sum(i, k) = ws.I4sum(k, i) = sum;
      }
    }
    return;
  }

  ws.d = ws.C.diagonal().array() + 1.0;
  for (int c = 0; c < L; ++c)
    for (int i = 0; i < K; ++i) ws.J(i, c) = two_over_pi / std::sqrt(ws.d(i) * ws.d(c) - ws.C(i, c) * ws.C(i, c));
  // Σ_c s_c I3(i, b, c) = Σ_c s_c J2(i,c) C_bc − C_ib/(1+C_ii) Σ_c s_c J2(i,c) C_ic = G_ib − C_ib G_ii / d_i.
  ws.H = ws.J * ws.st.asDiagonal();
  ws.G.noalias() = ws.H * ws.C;
  for (int b = 0; b < L; ++b)
    for (int i = 0; i < K; ++i) ws.I3sum(i, b) = ws.G(i, b) - ws.C(i, b) * ws.G(i, i) / ws.d(i);
  for (int i = 0; i < K; ++i) {
    double sum = 0;
    for (int c = 0; c < L; ++c) sum += ws.st(c) * std::asin(ws.C(i, c) / std::sqrt(ws.d(i) * ws.d(c)));
    ws.I2sum(i) = two_over_pi * sum;
  }
  if (dropout)  // I3(i,b,i) = J2(i,i) C_ib/(1 + C_ii), I2(i,i) = (2/π) asin(C_ii/(1 + C_ii))
    for (int i = 0; i < K; ++i) {
      const double own = (1 - r) * ws.s(i);
      for (int b = 0; b < L; ++b) ws.I3sum(i, b) = r * (ws.I3sum(i, b) + own * ws.J(i, i) * ws.C(i, b) / ws.d(i));
      ws.I2sum(i) = r * (ws.I2sum(i) + own * two_over_pi * std::asin(ws.C(i, i) / ws.d(i)));
    }
  ws.J2ik = ws.J.leftCols(K);
  for (int c = 0, j = 0; c < L; ++c)
    for (int e = c; e < L; ++e) ws.pair_weight[j++] = (e == c ? 1.0 : 2.0) * ws.s(c) * ws.s(e);
  // The η² part: one pair (i ≤ k) per iteration, written by the thread that computes it. Small
  // systems stay out of OpenMP altogether (even an `if(false)` region costs a team set-up).
  const int pairs = K * (K + 1) / 2;
  auto pair_term = [&](int pair) {
    int i = 0, rest = pair;  // pair → (i, k), i ≤ k, row by row of the upper triangle
    while (rest >= K - i) rest -= K - i++;
    const int k = i + rest;
    const double* w = dropout ? dropout_weights(ws, K, i, k, r) : ws.pair_weight.data();
    const double value = ws.J(i, k) * two_over_pi * tilted_arcsine_sum(ws, w, i, k);
    ws.I4sum(i, k) = value;
    ws.I4sum(k, i) = value;
  };
  const int nt = threads > 0 ? threads : omp_get_max_threads();
  if (nt > 1 && static_cast<long>(pairs) * L * L >= kParallelWork) {
#pragma omp parallel num_threads(nt)
    {
      // Every thread of the team sizes its buffer here, whether or not the dynamic schedule hands it
      // a pair this time: later calls then allocate nothing.
      if (arcsine_arguments.size() < ws.pair_weight.size()) arcsine_arguments.resize(ws.pair_weight.size());
      if (dropout && dropout_pair_weights.size() < ws.pair_weight.size()) dropout_pair_weights.resize(ws.pair_weight.size());
#pragma omp for schedule(dynamic, 1)
      for (int pair = 0; pair < pairs; ++pair) pair_term(pair);
    }
  } else {
    for (int pair = 0; pair < pairs; ++pair) pair_term(pair);
  }
}

}  // namespace

CommitteeODE::CommitteeODE(const Config& setup, int threads) : setup_(setup), layout_(setup.layout()), threads_(threads) {
  offsets_.Q = layout_.block("Q").offset;
  offsets_.R = layout_.block("R").offset;
  offsets_.T = layout_.block("T").offset;
  offsets_.v = setup_.train_v ? layout_.block("v").offset : -1;
  setup_.validate();
  if (setup_.fields() > kMaxFields)
    throw std::invalid_argument("CommitteeODE: K + M must be at most " + std::to_string(kMaxFields));
  const auto& names = term_names();
  for (std::size_t t = 0; t < names.size(); ++t) keep_[t] = setup_.broken_term == names[t] ? 0.0 : 1.0;
}

void CommitteeODE::operator()(const ConstVecRef& x, VecRef dxdt, double t) const {
  const Config& st = setup_;
  const int K = st.K, M = st.M;
  const double eta = st.eta_at(t), r = st.keep_at(t);
  Workspace& ws = workspace(K, K + M);
  evaluate(st, offsets_, x.data(), ws, threads_, r);
  const double lin = keep_[0] * eta, sq = keep_[1] * eta * eta;
  const double label = keep_[2] * eta * eta * st.noise * st.noise, wd = keep_[3] * st.wd;
  const BlockOffsets& at = offsets_;
  const Eigen::Map<const Eigen::MatrixXd> Q(x.data() + at.Q, K, K), R(x.data() + at.R, K, M);
  const auto v = -ws.s.head(K);  // s = (−v, v*)
  Eigen::Map<Eigen::MatrixXd> dQ(dxdt.data() + at.Q, K, K), dR(dxdt.data() + at.R, K, M);
  Eigen::Map<Eigen::MatrixXd>(dxdt.data() + at.T, M, M).setZero();
  for (int n = 0; n < M; ++n)
    for (int i = 0; i < K; ++i) dR(i, n) = lin * v(i) * ws.I3sum(i, K + n) - wd * R(i, n);
  for (int k = 0; k < K; ++k)
    for (int i = 0; i <= k; ++i) {
      const double vi = v(i), vk = v(k);
      const double value = lin * (vi * ws.I3sum(i, k) + vk * ws.I3sum(k, i)) +
                           vi * vk * (sq * ws.I4sum(i, k) + label * mask_moment(r, K, i, k) * ws.J2ik(i, k)) - 2 * wd * Q(i, k);
      dQ(i, k) = value;
      dQ(k, i) = value;
    }
  if (st.train_v) Eigen::Map<Eigen::VectorXd>(dxdt.data() + at.v, K) = (keep_[4] * st.eta_v) * ws.I2sum;
}

void CommitteeODE::parts(const ConstVecRef& x, Parts& out, double t) const {
  const Config& st = setup_;
  const int K = st.K, M = st.M, n = layout_.size();
  const double eta = st.eta_at(t), r = st.keep_at(t);
  Workspace& ws = workspace(K, K + M);
  evaluate(st, offsets_, x.data(), ws, threads_, r);
  for (Eigen::VectorXd* p : {&out.eta_linear, &out.eta_squared, &out.label_noise, &out.weight_decay, &out.second_layer})
    p->setZero(n);
  const Eigen::VectorXd v = -ws.s.head(K);
  const auto Q = layout_.view(x.data(), "Q");
  const auto R = layout_.view(x.data(), "R");
  const double eta2 = eta * eta;
  {
    auto dR = layout_.view(out.eta_linear.data(), "R");
    auto dQ = layout_.view(out.eta_linear.data(), "Q");
    for (int m = 0; m < M; ++m)
      for (int i = 0; i < K; ++i) dR(i, m) = keep_[0] * eta * v(i) * ws.I3sum(i, K + m);
    for (int k = 0; k < K; ++k)
      for (int i = 0; i < K; ++i) dQ(i, k) = keep_[0] * eta * (v(i) * ws.I3sum(i, k) + v(k) * ws.I3sum(k, i));
  }
  layout_.view(out.eta_squared.data(), "Q") = (keep_[1] * eta2) * (v * v.transpose()).cwiseProduct(ws.I4sum);
  Eigen::MatrixXd masks(K, K);  // E[μ_i μ_k]
  for (int k = 0; k < K; ++k)
    for (int i = 0; i < K; ++i) masks(i, k) = mask_moment(r, K, i, k);
  layout_.view(out.label_noise.data(), "Q") =
      (keep_[2] * eta2 * st.noise * st.noise) * (v * v.transpose()).cwiseProduct(ws.J2ik).cwiseProduct(masks);
  layout_.view(out.weight_decay.data(), "R") = (-keep_[3] * st.wd) * R;
  layout_.view(out.weight_decay.data(), "Q") = (-2 * keep_[3] * st.wd) * Q;
  if (st.train_v) layout_.view(out.second_layer.data(), "v") = (keep_[4] * st.eta_v) * ws.I2sum;
}

DriftTerms CommitteeODE::terms(const Eigen::VectorXd& x, double t) const {
  Parts p;
  parts(x, p, t);  // at t: a schedule's η(t) and keep-probability r(t)
  DriftTerms terms;
  for (const std::string& name : setup_.active_terms()) {
    if (name == "eta_linear") terms.add(name, p.eta_linear);
    if (name == "eta_squared") terms.add(name, p.eta_squared);
    if (name == "label_noise") terms.add(name, p.label_noise);
    if (name == "weight_decay") terms.add(name, p.weight_decay);
    if (name == "second_layer") terms.add(name, p.second_layer);
  }
  return terms;
}

double CommitteeODE::generalisation_error(const Eigen::VectorXd& x) const {
  const Overlaps o = unpack(setup_, x);
  Eigen::MatrixXd C;
  field_covariance(o.Q, o.R, o.T, C);
  // At test time every unit is kept and the output is scaled by p_f (test_scale).
  return committee::generalisation_error(setup_.activation, C, readout_signs(setup_.test_scale * o.v, setup_.vstar));
}

Observables CommitteeODE::observe(const Eigen::VectorXd& x, double /*t*/) const {
  Observables o;
  o.add("eg", generalisation_error(x));
  return o;
}

}  // namespace hdat::committee
