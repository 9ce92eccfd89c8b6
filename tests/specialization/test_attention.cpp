// The attention activations against finite differences: the vector-Jacobian product and the
// Jacobian Gram contraction used by theory and simulator, for all three activations.
#include <doctest/doctest.h>

#include <boost/random/normal_distribution.hpp>

#include "hdat/core/random.hpp"
#include "hdat/specialization/attention.hpp"
#include "hdat/specialization/model.hpp"

using namespace hdat::specialization;

namespace {
// Numerical Jacobian J(l', h*L + l) = ∂w_l' / ∂χ_hl by central differences.
Eigen::MatrixXd numerical_jacobian(const Attention& att, const Eigen::MatrixXd& chi) {
  const int L = att.L, H = att.H;
  Eigen::MatrixXd J(L, L * H), a(L, H), m(L, H);
  Eigen::VectorXd wp(L), wm(L);
  for (int h = 0; h < H; ++h)
    for (int l = 0; l < L; ++l) {
      Eigen::MatrixXd c = chi;
      const double e = 1e-6;
      c(l, h) += e;
      att.forward(c, a, wp, m);
      c(l, h) -= 2 * e;
      att.forward(c, a, wm, m);
      J.col(h * L + l) = (wp - wm) / (2 * e);
    }
  return J;
}
}  // namespace

TEST_CASE("activation Jacobians agree with finite differences (softmax, softmax1, bayes; mean and sum)") {
  auto eng = hdat::rng::engine(5);
  boost::random::normal_distribution<double> nd;
  for (auto act : {Activation::softmax, Activation::softmax1, Activation::bayes})
    for (auto agg : {Aggregation::mean, Aggregation::sum}) {
      CAPTURE(activation_name(act));
      CAPTURE(static_cast<int>(agg));
      const int L = 5, H = 3;
      Attention att(act, agg, L, H);
      // A per-head offset (softmax1: the bias b_h; bayes: -R_hh/2 + b_h; softmax: none, it cancels).
      for (int h = 0; h < H; ++h) att.logit_offset(h) = act == Activation::softmax ? 0.0 : 0.8 * nd(eng);
      Eigen::MatrixXd chi(L, H), a(L, H), m(L, H), G(L, H);
      for (int i = 0; i < L * H; ++i) chi.data()[i] = 1.5 * nd(eng);
      Eigen::VectorXd w(L), r(L);
      for (int l = 0; l < L; ++l) r(l) = nd(eng);
      att.forward(chi, a, w, m);
      const Eigen::MatrixXd J = numerical_jacobian(att, chi);
      // vjp: G_hl = Σ_l' r_l' J_{l', hl}
      att.vjp(a, m, r, G);
      for (int h = 0; h < H; ++h)
        for (int l = 0; l < L; ++l) CHECK(G(l, h) == doctest::Approx(r.dot(J.col(h * L + l))).epsilon(1e-7));
      // Gram: Σ_l f J_{:,hl}·J_{:,h'l}
      Eigen::MatrixXd out = Eigen::MatrixXd::Zero(H, H), mm = m.transpose() * m;
      att.jacobian_gram(a, m, mm, 0.7, out);
      for (int h = 0; h < H; ++h)
        for (int k = 0; k < H; ++k) {
          double ref = 0;
          for (int l = 0; l < L; ++l) ref += 0.7 * J.col(h * L + l).dot(J.col(k * L + l));
          CHECK(out(h, k) == doctest::Approx(ref).epsilon(1e-6));
        }
      // Weights: softmax sums to 1 per head (mean: w sums to 1); softmax1 to less than 1; bayes to 1.
      if (act == Activation::bayes) CHECK(w.sum() == doctest::Approx(1.0));
      if (act == Activation::softmax && agg == Aggregation::mean) CHECK(w.sum() == doctest::Approx(1.0));
      if (act == Activation::softmax1) CHECK(w.sum() < (agg == Aggregation::mean ? 1.0 : H));
    }
}

TEST_CASE("softmax stays finite for huge logits (log-sum-exp)") {
  for (auto act : {Activation::softmax, Activation::softmax1, Activation::bayes}) {
    Attention att(act, Aggregation::mean, 3, 2);
    Eigen::MatrixXd chi(3, 2), a(3, 2), m(3, 2);
    chi << 800, -800, 790, 0, -5, 1e3;
    Eigen::VectorXd w(3);
    att.forward(chi, a, w, m);
    CHECK(a.allFinite());
    CHECK(w.allFinite());
  }
}

TEST_CASE("softmax1 bias: dw/db_h = sum_l J_{:,hl} = c_h (1 - A_h) a_h (finite differences); zero for softmax") {
  auto eng = hdat::rng::engine(7);
  boost::random::normal_distribution<double> nd;
  for (auto act : {Activation::softmax, Activation::softmax1, Activation::bayes}) {
    CAPTURE(activation_name(act));
    const int L = 4, H = 3;
    Attention att(act, Aggregation::sum, L, H);
    for (int h = 0; h < H; ++h) att.logit_offset(h) = 0.7 * nd(eng);
    Eigen::MatrixXd chi(L, H), a(L, H), m(L, H);
    for (int i = 0; i < L * H; ++i) chi.data()[i] = nd(eng);
    Eigen::VectorXd w(L), wp(L), wm(L);
    att.forward(chi, a, w, m);
    const Eigen::MatrixXd J = numerical_jacobian(att, chi);
    for (int h = 0; h < H; ++h) {
      Attention shifted = att;
      const double e = 1e-6;
      shifted.logit_offset(h) += e;
      shifted.forward(chi, a, wp, m);
      shifted.logit_offset(h) -= 2 * e;
      shifted.forward(chi, a, wm, m);
      const Eigen::VectorXd dw_db = (wp - wm) / (2 * e);
      Eigen::VectorXd sum_J = Eigen::VectorXd::Zero(L);
      for (int l = 0; l < L; ++l) sum_J += J.col(h * L + l);
      CHECK((dw_db - sum_J).norm() < 1e-7);
      if (act == Activation::softmax) CHECK(dw_db.norm() < 1e-8);
      if (act == Activation::softmax1) {
        att.forward(chi, a, w, m);
        const double A = a.col(h).sum();
        CHECK((dw_db - (1 - A) * a.col(h)).norm() < 1e-7);
      }
    }
  }
}

TEST_CASE("softmax1 bias limits: b -> -inf switches a head off, b -> +inf gives plain softmax") {
  auto eng = hdat::rng::engine(9);
  boost::random::normal_distribution<double> nd;
  const int L = 5, H = 2;
  Eigen::MatrixXd chi(L, H), a(L, H), m(L, H), a_soft(L, H), m_soft(L, H), G(L, H);
  for (int i = 0; i < L * H; ++i) chi.data()[i] = 1.5 * nd(eng);
  Eigen::VectorXd w(L), w_soft(L), w_one(L), r(L);
  for (int l = 0; l < L; ++l) r(l) = nd(eng);
  for (auto agg : {Aggregation::mean, Aggregation::sum}) {
    CAPTURE(static_cast<int>(agg));
    Attention soft(Activation::softmax, agg, L, H), one(Activation::softmax1, agg, L, H);
    soft.forward(chi, a_soft, w_soft, m_soft);
    // b -> +inf for both heads: softmax1 becomes softmax (to e^{-b}).
    one.logit_offset.setConstant(40.0);
    one.forward(chi, a, w, m);
    CHECK((w - w_soft).norm() < 1e-12);
    // Head 1 switched off (b_1 -> -inf), head 0 plain (b_0 -> +inf): w is head 0's softmax alone,
    // and head 1's Jacobian (hence its gradient) vanishes.
    one.logit_offset << 40.0, -800.0;
    one.forward(chi, a, w, m);
    const double c0 = agg == Aggregation::mean ? 0.5 : 1.0;
    CHECK((w - c0 * a_soft.col(0)).norm() < 1e-12);
    CHECK(a.col(1).norm() == 0.0);
    one.vjp(a, m, r, G);
    CHECK(G.col(1).norm() == 0.0);
    CHECK(G.col(0).norm() > 1e-3);
  }
}
