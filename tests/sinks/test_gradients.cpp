// Every layer of the attention-sink transformer and every attention kind against central finite
// differences, and the whole model's gradient coordinate by coordinate.
#include <doctest/doctest.h>

#include <boost/random/normal_distribution.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <boost/random/uniform_real_distribution.hpp>
#include <cmath>
#include <functional>

#include "hdat/sinks/experiment.hpp"
#include "hdat/sinks/transformer.hpp"

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
  RowMat y(n, d), xhat(n, d);
  Eigen::VectorXd isig(n);
  auto f = [&]() {
    layer_norm_forward<double>(x, gamma, beta, 1e-5, y, xhat, isig);
    return (R.array() * y.array()).sum();
  };
  f();
  RowMat dx = RowMat::Zero(n, d);
  Eigen::VectorXd dg = Eigen::VectorXd::Zero(d), db = Eigen::VectorXd::Zero(d);
  layer_norm_backward<double>(R, xhat, isig, gamma, dx, dg, db);
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
  // With and without ε in the row sums of the f/Σf kinds (relu, square, abs only with it): a large ε
  // (0.3), so that a mistake in how it enters the derivative shows.
  for (const std::string& name : attention_names())
    for (bool causal : {true, false})
      for (double norm_eps : {0.0, 0.3}) {  // a large ε, so that a wrong ε term shows in the gradient
        CAPTURE(name);
        CAPTURE(causal);
        CAPTURE(norm_eps);
        const AttentionKind kind = parse_attention(name);
        if (norm_eps == 0.0 && row_sum_can_vanish(kind)) continue;  // relu, square, abs need ε > 0
        const HeadSpec spec{kind, causal, norm_eps};
        auto e = hdat::rng::engine(7, causal);
        const int L = 6, dh = 4;
        RowMat q = random_matrix(e, L, dh), k = random_matrix(e, L, dh), v = random_matrix(e, L, dh);
        const RowMat R = random_matrix(e, L, dh);
        RowMat S(L, L), A(L, L), O(L, dh);
        auto f = [&]() {
          attention_head_forward<double>(spec, q, k, v, S, A, O);
          return (R.array() * O.array()).sum();
        };
        f();
        int rows_above_one = 0, rows_below_one = 0;  // raw_dotproduct_norm: both branches of max(|Σ|, 1)
        for (int i = 0; i < L; ++i) {
          if (causal)
            for (int j = i + 1; j < L; ++j) CHECK(A(i, j) == 0.0);
          const int n = causal ? i + 1 : L;
          if (is_positive(kind)) {
            // Rows sum to 1 up to the ε share (normalised ReLU: a row whose visible scores are all <= 0 has
            // no weight at all).
            const double eps = spec.row_eps(), fsum = A.row(i).sum();
            const bool dead = kind == AttentionKind::relu_norm && S.row(i).head(n).maxCoeff() <= 0;
            if (is_normalised(kind) && !dead) CHECK(fsum < 1.0 + 1e-12);
            if (is_normalised(kind) && eps == 0.0) CHECK(fsum == doctest::Approx(1.0).epsilon(1e-12));
            CHECK(A.row(i).minCoeff() >= 0.0);
          } else if (is_normalised(kind)) {
            const double s = S.row(i).head(n).sum();
            (std::abs(s) > 1 ? rows_above_one : rows_below_one)++;
            CHECK(std::abs(A.row(i).sum()) <= 1.0 + 1e-12);
          }
        }
        if (kind == AttentionKind::raw_dotproduct_norm) {
          CHECK(rows_above_one > 0);
          CHECK(rows_below_one > 0);
        }
        RowMat dq(L, dh), dk(L, dh), dv(L, dh);
        attention_head_backward<double>(spec, q, k, v, S, A, R, dq, dk, dv);
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
  attention_head_forward<double>({AttentionKind::softmax, true, 1e-9}, q, k, v, S, A, O);
  CHECK(A.allFinite());
  CHECK(O.allFinite());
  CHECK(A(3, 0) == doctest::Approx(1.0));
}

namespace {

// The whole model: loss = cross-entropy of random targets with random positive row weights.
Check model_gradient_check(const TransformerConfig& config, std::uint64_t seed) {
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

TransformerConfig tiny(AttentionKind kind, Positions pos, bool causal) {
  TransformerConfig c;
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

// ---- float32 against float64 ----

namespace {

template <class T>
RowMatT<T> cast_to(const RowMat& m) {
  return m.cast<T>();
}

// max |a − b| / max |b|: the error of a float result relative to the scale of the double one.
double relative_gap(const RowMat& a, const RowMat& b) { return (a - b).cwiseAbs().maxCoeff() / b.cwiseAbs().maxCoeff(); }

}  // namespace

TEST_CASE("float32 path: every attention kind's head agrees with float64") {
  // Same inputs (rounded to float): weights, output and every gradient within a few float ulps of
  // the scale (float epsilon 6e-8; the sums here have at most 6 terms).
  for (const std::string& name : attention_names())
    for (bool causal : {true, false}) {
      CAPTURE(name);
      CAPTURE(causal);
      const HeadSpec spec{parse_attention(name), causal, 0.3};
      auto e = hdat::rng::engine(8, causal);
      const int L = 6, dh = 4;
      // Inputs exactly representable in float, so that both precisions see the same numbers.
      const RowMat q = cast_to<float>(random_matrix(e, L, dh)).cast<double>(),
                   k = cast_to<float>(random_matrix(e, L, dh)).cast<double>(),
                   v = cast_to<float>(random_matrix(e, L, dh)).cast<double>(),
                   R = cast_to<float>(random_matrix(e, L, dh)).cast<double>();
      RowMat S(L, L), A(L, L), O(L, dh), dq(L, dh), dk(L, dh), dv(L, dh);
      attention_head_forward<double>(spec, q, k, v, S, A, O);
      attention_head_backward<double>(spec, q, k, v, S, A, R, dq, dk, dv);
      RowMatT<float> qf = q.cast<float>(), kf = k.cast<float>(), vf = v.cast<float>(), Rf = R.cast<float>();
      RowMatT<float> Sf(L, L), Af(L, L), Of(L, dh), dqf(L, dh), dkf(L, dh), dvf(L, dh);
      attention_head_forward<float>(spec, qf, kf, vf, Sf, Af, Of);
      attention_head_backward<float>(spec, qf, kf, vf, Sf, Af, Rf, dqf, dkf, dvf);
      CHECK(relative_gap(Af.cast<double>(), A) < 1e-6);
      CHECK(relative_gap(Of.cast<double>(), O) < 1e-6);
      CHECK(relative_gap(dvf.cast<double>(), dv) < 1e-6);
      if (spec.kind != AttentionKind::uniform) {
        CHECK(relative_gap(dqf.cast<double>(), dq) < 1e-5);
        CHECK(relative_gap(dkf.cast<double>(), dk) < 1e-5);
      }
    }
}

TEST_CASE("float32 path: the whole model's loss and gradient agree with float64 from the same parameters") {
  for (const char* name : {"softmax", "sigmoid_unnorm", "linear_unnorm", "raw_dotproduct_norm", "elu_norm"}) {
    CAPTURE(name);
    TransformerConfig c = tiny(parse_attention(name), Positions::concat, true);
    c.width = 32;
    c.heads = 4;
    c.mlp_hidden = 64;
    c.vocab = 20;
    c.n_out = 20;
    c.max_len = 12;
    Transformer m64(c);
    Transformer32 m32(c);
    auto e1 = hdat::rng::engine(21), e2 = hdat::rng::engine(21);
    m64.initialize(e1);
    m32.initialize(e2);  // the same draws, rounded to float
    m64.theta() = m32.theta().cast<double>();  // so that both start from exactly the same numbers
    Batch batch;
    const int B = 16, L = 12;
    batch.resize(B, L);
    auto e = hdat::rng::engine(22);
    boost::random::uniform_int_distribution<int> tok(0, c.vocab - 1);
    for (int r = 0; r < B * L; ++r) {
      batch.tokens[r] = tok(e);
      batch.targets[r] = tok(e);
      batch.weights[r] = 1.0 / (B * L);
    }
    RowMat d64;
    RowMatT<float> d32;
    const double l64 = cross_entropy<double>(m64.forward(batch.tokens, B, L), batch, &d64);
    const double l32 = cross_entropy<float>(m32.forward(batch.tokens, B, L), batch, &d32);
    Eigen::VectorXd g64;
    VecT<float> g32;
    m64.backward(d64, g64);
    m32.backward(d32, g32);
    CHECK(std::abs(l32 - l64) < 1e-5 * std::abs(l64));
    // Gradient: relative to the largest component of each named block (blocks differ in scale by
    // orders of magnitude).
    double worst = 0;
    std::string where;
    for (const auto& b : m64.layout().blocks()) {
      const Eigen::VectorXd ref = g64.segment(b.offset, b.size());
      const Eigen::VectorXd got = g32.segment(b.offset, b.size()).cast<double>();
      const double gap = (got - ref).cwiseAbs().maxCoeff() / (ref.cwiseAbs().maxCoeff() + 1e-30);
      if (gap > worst) worst = gap, where = b.name;
    }
    INFO(where);
    CHECK(worst < 2e-5);  // observed ~1e-6; a tanh-approximated float GELU gives 2e-4
  }
}

TEST_CASE("float32 path: a short training run follows the float64 one") {
  // 60 AdamW steps of a small induction model from the same parameters and batches: the float run's
  // losses stay within 1e-3 (relative) of the double run's, and both end at the same accuracy.
  Config o;
  o.induction.vocab = 16;
  o.induction.n_tokens = 5;
  o.model.width = 16;
  o.model.heads = 2;
  o.model.mlp_hidden = 32;
  o.steps = 60;
  o.batch = 32;
  o.n_train = 500;
  o.n_eval = 200;
  o.eval_every = 20;
  o.export_sequences = 0;
  o.seed = 3;
  for (AttentionKind kind : {AttentionKind::softmax, AttentionKind::linear_unnorm}) {
    CAPTURE(attention_name(kind));
    o.model.attention = kind;
    o.precision = Precision::float64;
    const ExperimentResult r64 = run_experiment(o);
    o.precision = Precision::float32;
    const ExperimentResult r32 = run_experiment(o);
    REQUIRE(r64.status == "ok");
    REQUIRE(r32.status == "ok");
    REQUIRE(r64.curve.rows() == r32.curve.rows());
    for (std::size_t i = 1; i < r64.curve.rows(); ++i) {
      const double a = r64.curve.number(i, "eval_loss"), b = r32.curve.number(i, "eval_loss");
      CHECK(std::abs(a - b) < 1e-3 * a);
    }
    CHECK(std::abs(r64.accuracy - r32.accuracy) <= 0.01);
    CHECK(std::abs(r64.heads[2].sink_score - r32.heads[2].sink_score) < 1e-3);
  }
}
