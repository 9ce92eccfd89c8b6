// Every layer of the attention-sink transformer and every attention kind against central finite
// differences, and the whole model's gradient coordinate by coordinate.
#include <doctest/doctest.h>

#include <boost/random/normal_distribution.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <boost/random/uniform_real_distribution.hpp>
#include <cmath>
#include <functional>

#include "hdat/attention_sinks/experiment.hpp"
#include "hdat/attention_sinks/transformer.hpp"

using namespace hdat::sinks;

namespace {

RowMat random_matrix(hdat::rng::Engine& e, int r, int c, double scale = 1.0) {
  boost::random::normal_distribution<double> n(0.0, scale);
  RowMat m(r, c);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = n(e);
  return m;
}

// Central difference of f with respect to x (restored afterwards).
double central(const std::function<double()>& f, double& x, double h = 1e-5) {
  const double x0 = x;
  x = x0 + h;
  const double fp = f();
  x = x0 - h;
  const double fm = f();
  x = x0;
  return (fp - fm) / (2 * h);
}

// Worst violation of |analytic − numeric| <= atol + rtol·|numeric| over the given pairs; > 1 fails.
struct Check {
  double worst = 0;
  std::string where;
  void add(double analytic, double numeric, const std::string& name, double atol = 1e-8, double rtol = 1e-6) {
    const double ratio = std::abs(analytic - numeric) / (atol + rtol * std::abs(numeric));
    if (ratio > worst) {
      worst = ratio;
      where = name + " analytic " + std::to_string(analytic) + " numeric " + std::to_string(numeric);
    }
  }
};

}  // namespace

TEST_CASE("layer norm backward matches finite differences") {
  auto e = hdat::rng::engine(1);
  const int n = 4, d = 6;
  RowMat x = random_matrix(e, n, d, 2.0);
  Eigen::VectorXd gamma = random_matrix(e, d, 1).col(0), beta = random_matrix(e, d, 1).col(0);
  const RowMat R = random_matrix(e, n, d);
  RowMat y, xhat;
  Eigen::VectorXd isig;
  auto f = [&]() {
    layer_norm_forward(x, gamma, beta, 1e-5, y, xhat, isig);
    return (R.array() * y.array()).sum();
  };
  f();
  RowMat dx = RowMat::Zero(n, d);
  Eigen::VectorXd dg = Eigen::VectorXd::Zero(d), db = Eigen::VectorXd::Zero(d);
  layer_norm_backward(R, xhat, isig, gamma, dx, dg, db);
  Check c;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < d; ++j) c.add(dx(i, j), central(f, x(i, j)), "x");
  for (int j = 0; j < d; ++j) {
    c.add(dg(j), central(f, gamma(j)), "gamma");
    c.add(db(j), central(f, beta(j)), "beta");
  }
  INFO(c.where);
  CHECK(c.worst < 1.0);
  // Rows of x̂ have mean 0 and variance var/(var + ε) ≈ 1.
  CHECK(std::abs(xhat.row(0).mean()) < 1e-12);
}

TEST_CASE("GELU is x Phi(x) and its derivative matches finite differences") {
  CHECK(gelu(0.0) == 0.0);
  CHECK(gelu(1.0) == doctest::Approx(0.8413447460685429).epsilon(1e-14));  // Φ(1)
  CHECK(gelu(-1.0) == doctest::Approx(-0.15865525393145707).epsilon(1e-13));
  for (double x : {-3.0, -1.2, -0.3, 0.0, 0.4, 1.7, 4.0}) {
    double xx = x;
    const double fd = central([&] { return gelu(xx); }, xx, 1e-5);
    CHECK(gelu_derivative(x) == doctest::Approx(fd).epsilon(1e-8));
  }
}

TEST_CASE("every attention kind: head backward matches finite differences") {
  for (const std::string& name : attention_names())
    for (bool causal : {true, false}) {
      CAPTURE(name);
      CAPTURE(causal);
      const AttentionKind kind = parse_attention(name);
      auto e = hdat::rng::engine(7, causal);
      const int L = 6, dh = 4;
      RowMat q = random_matrix(e, L, dh), k = random_matrix(e, L, dh), v = random_matrix(e, L, dh);
      const RowMat R = random_matrix(e, L, dh);
      RowMat S(L, L), A(L, L), O(L, dh);
      auto f = [&]() {
        attention_head_forward(kind, causal, 1e-9, q, k, v, S, A, O);
        return (R.array() * O.array()).sum();
      };
      f();
      // Weights: zero above the diagonal when causal; rows sum to 1 for the normalised kinds.
      for (int i = 0; i < L; ++i) {
        if (causal)
          for (int j = i + 1; j < L; ++j) CHECK(A(i, j) == 0.0);
        // (normalised ReLU: a row whose visible scores are all <= 0 has no weight at all)
        const int n = causal ? i + 1 : L;
        const bool dead = kind == AttentionKind::relu_norm && S.row(i).head(n).maxCoeff() <= 0;
        if (is_normalised(kind)) CHECK(A.row(i).sum() == doctest::Approx(dead ? 0.0 : 1.0).epsilon(1e-8));
        CHECK(A.row(i).minCoeff() >= 0.0);
      }
      RowMat dq(L, dh), dk(L, dh), dv(L, dh);
      attention_head_backward(kind, causal, 1e-9, q, k, v, S, A, R, dq, dk, dv);
      Check c;
      for (int i = 0; i < L; ++i)
        for (int j = 0; j < dh; ++j) {
          c.add(dq(i, j), central(f, q(i, j)), "q");
          c.add(dk(i, j), central(f, k(i, j)), "k");
          c.add(dv(i, j), central(f, v(i, j)), "v");
        }
      INFO(c.where);
      CHECK(c.worst < 1.0);
    }
}

TEST_CASE("softmax attention is finite for huge scores (log-sum-exp)") {
  const int L = 4, dh = 2;
  RowMat q = RowMat::Constant(L, dh, 300.0), k = RowMat::Constant(L, dh, 300.0), v = RowMat::Ones(L, dh);
  k(0, 0) = 310.0;
  RowMat S(L, L), A(L, L), O(L, dh);
  attention_head_forward(AttentionKind::softmax, true, 1e-9, q, k, v, S, A, O);
  CHECK(A.allFinite());
  CHECK(O.allFinite());
  CHECK(A(3, 0) == doctest::Approx(1.0));
}

namespace {

// The whole model: loss = cross-entropy of random targets with random positive row weights.
Check model_gradient_check(const Config& config, std::uint64_t seed) {
  Transformer model(config);
  auto e = hdat::rng::engine(seed);
  model.initialize(e);
  // Move γ, β and biases away from their initial 1 / 0 so every term of the backward pass is exercised.
  boost::random::normal_distribution<double> jitter(0.0, 0.3);
  for (Eigen::Index i = 0; i < model.theta().size(); ++i) model.theta()(i) += jitter(e);
  const int B = 3, L = 5;
  Batch batch;
  batch.resize(B, L);
  boost::random::uniform_int_distribution<int> tok(0, config.vocab - 1), out(0, config.n_out - 1);
  boost::random::uniform_real_distribution<double> w(0.1, 1.0);
  for (int r = 0; r < B * L; ++r) {
    batch.tokens[r] = tok(e);
    batch.targets[r] = out(e);
    batch.weights[r] = w(e);
  }
  auto f = [&]() { return cross_entropy(model.forward(batch.tokens, B, L), batch, nullptr); };
  RowMat dlogits;
  cross_entropy(model.forward(batch.tokens, B, L), batch, &dlogits);
  Eigen::VectorXd grad;
  model.backward(dlogits, grad);
  Check c;
  for (int i = 0; i < model.n_parameters(); ++i)
    c.add(grad(i), central(f, model.theta()(i)), model.layout().component_name(i));
  return c;
}

Config tiny(AttentionKind kind, Positions pos, bool causal) {
  Config c;
  c.vocab = 7;
  c.n_out = 5;
  c.max_len = 6;
  c.width = 8;
  c.heads = 2;
  c.layers = 2;
  c.mlp_hidden = 12;
  c.positions = pos;
  c.causal = causal;
  c.attention = kind;
  return c;
}

}  // namespace

TEST_CASE("whole model: gradient of every parameter matches finite differences, every attention kind") {
  for (const std::string& name : attention_names()) {
    CAPTURE(name);
    const Check c = model_gradient_check(tiny(parse_attention(name), Positions::concat, true), 11);
    INFO(c.where);
    CHECK(c.worst < 1.0);
  }
}

TEST_CASE("whole model: added and absent positions, bidirectional attention") {
  for (auto [pos, causal] : {std::pair{Positions::add, true}, std::pair{Positions::none, false},
                             std::pair{Positions::add, false}}) {
    for (AttentionKind kind : {AttentionKind::softmax, AttentionKind::sigmoid_unnorm, AttentionKind::linear_norm}) {
      CAPTURE(attention_name(kind));
      CAPTURE(positions_name(pos));
      const Check c = model_gradient_check(tiny(kind, pos, causal), 12);
      INFO(c.where);
      CHECK(c.worst < 1.0);
    }
  }
}

TEST_CASE("the gradient check detects a wrong gradient") {
  // The same comparison as above with one coordinate of the analytic gradient off by 1e-4 relative:
  // the check must flag it (so that the tests above can fail).
  Transformer model(tiny(AttentionKind::softmax, Positions::concat, true));
  auto e = hdat::rng::engine(3);
  model.initialize(e);
  Batch batch;
  batch.resize(2, 4);
  for (int r = 0; r < 8; ++r) {
    batch.tokens[r] = r % 7;
    batch.targets[r] = (3 * r) % 5;
    batch.weights[r] = 0.5;
  }
  auto f = [&]() { return cross_entropy(model.forward(batch.tokens, 2, 4), batch, nullptr); };
  RowMat dlogits;
  cross_entropy(model.forward(batch.tokens, 2, 4), batch, &dlogits);
  Eigen::VectorXd grad;
  model.backward(dlogits, grad);
  const int i = model.layout().block("L1.Wqkv").offset + 3;
  REQUIRE(std::abs(grad(i)) > 1e-6);
  Check good, bad;
  const double fd = central(f, model.theta()(i));
  good.add(grad(i), fd, "exact");
  bad.add(grad(i) * (1 + 1e-4), fd, "perturbed");
  CHECK(good.worst < 1.0);
  CHECK(bad.worst > 1.0);
}

TEST_CASE("AdamW: the first step is lr * sign-like g / (|g| + eps) after decoupled decay") {
  AdamWOptions o;
  o.lr = 0.01;
  o.weight_decay = 0.1;
  AdamW adam(3, o);
  Eigen::VectorXd theta(3), g(3);
  theta << 1.0, -2.0, 0.5;
  g << 0.3, -1e-3, 0.0;
  Eigen::VectorXd expected(3);
  for (int i = 0; i < 3; ++i) expected(i) = theta(i) * (1 - o.lr * o.weight_decay) - o.lr * g(i) / (std::abs(g(i)) + o.eps);
  adam.step(theta, g);
  for (int i = 0; i < 3; ++i) CHECK(theta(i) == doctest::Approx(expected(i)).epsilon(1e-14));
  // Second step with the same gradient: m̂ = g, v̂ = g² again (bias correction), so the same step.
  Eigen::VectorXd before = theta;
  adam.step(theta, g);
  for (int i = 0; i < 3; ++i)
    CHECK(theta(i) == doctest::Approx(before(i) * (1 - o.lr * o.weight_decay) - o.lr * g(i) / (std::abs(g(i)) + o.eps)).epsilon(1e-12));
}
