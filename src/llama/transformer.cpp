#include "hdat/llama/transformer.hpp"

#include <fmt/format.h>

#include <cmath>

#include "hdat/core/error.hpp"

namespace hdat::llama {

namespace {

// x / sqrt(mean(x²) + ε) ⊙ w, column by column.
template <class M, class V>
M rmsnorm(const M& x, const V& w) {
  using S = typename M::Scalar;
  M out(x.rows(), x.cols());
  for (Eigen::Index c = 0; c < x.cols(); ++c) {
    const S ms = x.col(c).squaredNorm() / static_cast<S>(x.rows());
    const S inv = S(1) / std::sqrt(ms + static_cast<S>(kRmsEpsilon));
    out.col(c) = (x.col(c) * inv).cwiseProduct(w);
  }
  return out;
}

template <class M>
M silu(const M& x) {
  using S = typename M::Scalar;
  return x.unaryExpr([](S z) { return z / (S(1) + std::exp(-z)); });
}

// Causal softmax of one score column over sources 0..t, by log-sum-exp (max subtracted), in place;
// entries below t are set to 0.
template <class Col>
void causal_softmax(Col&& s, Eigen::Index t) {
  using S = typename std::decay_t<Col>::Scalar;
  auto head = s.head(t + 1).array();
  const S mx = head.maxCoeff();
  head = (head - mx).exp();  // vectorised exp
  head /= head.sum();
  s.tail(s.size() - t - 1).setZero();
}

template <class Scalar>
Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic> cast(const Eigen::MatrixXd& m) {
  return m.cast<Scalar>();
}

}  // namespace

template <class Scalar>
Transformer<Scalar>::Transformer(const Checkpoint& ck, ForwardOptions options) : config_(ck.config), options_(options) {
  embedding_ = cast<Scalar>(ck.token_embedding);
  classifier_ = cast<Scalar>(ck.classifier);
  rms_final_ = ck.rms_final.cast<Scalar>();
  for (const auto& l : ck.layers) {
    Layer o;
    o.rms_att = l.rms_att.cast<Scalar>();
    o.rms_ffn = l.rms_ffn.cast<Scalar>();
    o.wq = cast<Scalar>(l.wq);
    o.wk = cast<Scalar>(l.wk);
    o.wv = cast<Scalar>(l.wv);
    o.wo = cast<Scalar>(l.wo);
    o.w1 = cast<Scalar>(l.w1);
    o.w2 = cast<Scalar>(l.w2);
    o.w3 = cast<Scalar>(l.w3);
    layers_.push_back(std::move(o));
  }
  const int half = config_.head_size() / 2;
  if (options_.rope_table == ForwardOptions::RopeTable::file) {
    cos_ = cast<Scalar>(ck.rope_cos);
    sin_ = cast<Scalar>(ck.rope_sin);
  } else {
    cos_.resize(config_.seq_len, half);
    sin_.resize(config_.seq_len, half);
    for (int p = 0; p < config_.seq_len; ++p)
      for (int i = 0; i < half; ++i) {
        const double theta = std::pow(10000.0, -2.0 * i / config_.head_size());
        cos_(p, i) = static_cast<Scalar>(std::cos(p * theta));
        sin_(p, i) = static_cast<Scalar>(std::sin(p * theta));
      }
  }
}

template <class Scalar>
int Transformer<Scalar>::kv_head(int h) const {
  return options_.kv_mapping == ForwardOptions::KvMapping::grouped ? config_.kv_head(h) : h % config_.n_kv_heads;
}

template <class Scalar>
void Transformer<Scalar>::rope(Eigen::Ref<Matrix> x, int n_heads_in_x, int first_position) const {
  const int hs = config_.head_size(), half = hs / 2;
  const bool adjacent = options_.rope_pairing == ForwardOptions::RopePairing::adjacent;
  for (Eigen::Index c = 0; c < x.cols(); ++c) {
    const int p = first_position + static_cast<int>(c);
    for (int h = 0; h < n_heads_in_x; ++h)
      for (int i = 0; i < half; ++i) {
        const int a = h * hs + (adjacent ? 2 * i : i);
        const int b = h * hs + (adjacent ? 2 * i + 1 : i + half);
        const Scalar x0 = x(a, c), x1 = x(b, c), co = cos_(p, i), si = sin_(p, i);
        x(a, c) = x0 * co - x1 * si;
        x(b, c) = x0 * si + x1 * co;
      }
  }
}

template <class Scalar>
void Transformer<Scalar>::check_tokens(std::span<const int> tokens) const {
  if (tokens.empty()) throw InputError("tokens", "the sequence is empty");
  if (static_cast<int>(tokens.size()) > config_.seq_len)
    throw InputError("tokens", fmt::format("{} tokens exceed the model's context of {}", tokens.size(), config_.seq_len));
  for (int t : tokens)
    if (t < 0 || t >= config_.vocab_size) throw InputError("tokens", fmt::format("token id {} is outside 0..{}", t, config_.vocab_size - 1));
}

template <class Scalar>
Eigen::MatrixXd Transformer<Scalar>::forward(std::span<const int> tokens, Capture* capture, const HeadGates* gates) const {
  check_tokens(tokens);
  const int T = static_cast<int>(tokens.size()), hs = config_.head_size(), H = config_.n_heads;
  if (gates && (gates->rows() != config_.n_layers || gates->cols() != H))
    throw InputError("gates", fmt::format("must be {} × {} (layers × heads)", config_.n_layers, H));
  const Scalar scale = Scalar(1) / std::sqrt(static_cast<Scalar>(hs));
  Matrix x(config_.dim, T);
  for (int t = 0; t < T; ++t) x.col(t) = embedding_.row(tokens[t]).transpose();
  if (capture) {
    capture->layers.assign(config_.n_layers, {});
    capture->kv_head.resize(H);
    for (int h = 0; h < H; ++h) capture->kv_head[h] = kv_head(h);
  }
  Matrix scores(T, T), out(config_.dim, T);
  for (int l = 0; l < config_.n_layers; ++l) {
    const Layer& w = layers_[l];
    const Matrix hn = rmsnorm(x, w.rms_att);
    Matrix q = w.wq * hn, k = w.wk * hn;
    const Matrix v = w.wv * hn;
    rope(q, H, 0);
    rope(k, config_.n_kv_heads, 0);
    LayerCapture* lc = capture ? &capture->layers[l] : nullptr;
    if (lc) {
      lc->alpha.resize(H);
      lc->values.resize(config_.n_kv_heads);
      for (int g = 0; g < config_.n_kv_heads; ++g) lc->values[g] = v.middleRows(g * hs, hs).template cast<double>();
      lc->head_write_norm.resize(H, T);
    }
    for (int h = 0; h < H; ++h) {
      const int g = kv_head(h);
      scores.noalias() = (k.middleRows(g * hs, hs).transpose() * q.middleRows(h * hs, hs)) * scale;  // S(i, t) = k_i·q_t/√hs
      for (int t = 0; t < T; ++t) causal_softmax(scores.col(t), t);
      out.middleRows(h * hs, hs).noalias() = v.middleRows(g * hs, hs) * scores;
      if (gates) out.middleRows(h * hs, hs) *= static_cast<Scalar>((*gates)(l, h));
      if (lc) {
        lc->alpha[h] = scores.template cast<double>();
        lc->head_write_norm.row(h) =
            (w.wo.middleCols(h * hs, hs) * out.middleRows(h * hs, hs)).colwise().norm().template cast<double>();
      }
    }
    x.noalias() += w.wo * out;
    const Matrix hf = rmsnorm(x, w.rms_ffn);
    const Matrix gate = w.w1 * hf, up = w.w3 * hf;
    x.noalias() += w.w2 * silu(gate).cwiseProduct(up);
  }
  const Matrix hn = rmsnorm(x, rms_final_);
  return (classifier_ * hn).template cast<double>();
}

template <class Scalar>
Transformer<Scalar>::Session::Session(const Transformer& model) : m_(model) {
  for (int l = 0; l < m_.config_.n_layers; ++l) {
    k_cache_.push_back(Matrix::Zero(m_.config_.kv_dim(), m_.config_.seq_len));
    v_cache_.push_back(Matrix::Zero(m_.config_.kv_dim(), m_.config_.seq_len));
  }
}

template <class Scalar>
Eigen::VectorXd Transformer<Scalar>::Session::step(int token) {
  const Config& c = m_.config_;
  if (pos_ >= c.seq_len) throw InputError("tokens", fmt::format("the model's context of {} is full", c.seq_len));
  if (token < 0 || token >= c.vocab_size) throw InputError("tokens", fmt::format("token id {} is outside 0..{}", token, c.vocab_size - 1));
  const int hs = c.head_size(), p = pos_;
  const Scalar scale = Scalar(1) / std::sqrt(static_cast<Scalar>(hs));
  Matrix x = m_.embedding_.row(token).transpose();
  Matrix out(c.dim, 1);
  Vector s(p + 1);
  for (int l = 0; l < c.n_layers; ++l) {
    const Layer& w = m_.layers_[l];
    const Matrix hn = rmsnorm(x, w.rms_att);
    Matrix q = w.wq * hn, k = w.wk * hn;
    m_.rope(q, c.n_heads, p);
    m_.rope(k, c.n_kv_heads, p);
    k_cache_[l].col(p) = k.col(0);
    v_cache_[l].col(p) = (w.wv * hn).col(0);
    for (int h = 0; h < c.n_heads; ++h) {
      const int g = m_.kv_head(h);
      s.noalias() = (k_cache_[l].block(g * hs, 0, hs, p + 1).transpose() * q.col(0).segment(h * hs, hs)) * scale;
      causal_softmax(s, p);
      out.col(0).segment(h * hs, hs).noalias() = v_cache_[l].block(g * hs, 0, hs, p + 1) * s;
    }
    x.noalias() += w.wo * out;
    const Matrix hf = rmsnorm(x, w.rms_ffn);
    const Matrix gate = w.w1 * hf, up = w.w3 * hf;
    x.noalias() += w.w2 * silu(gate).cwiseProduct(up);
  }
  ++pos_;
  const Matrix hn = rmsnorm(x, m_.rms_final_);
  return (m_.classifier_ * hn).col(0).template cast<double>();
}

template class Transformer<double>;
template class Transformer<float>;

Eigen::VectorXd log_softmax(const Eigen::Ref<const Eigen::VectorXd>& logits) {
  const double mx = logits.maxCoeff();
  const double lse = mx + std::log((logits.array() - mx).exp().sum());
  return logits.array() - lse;
}

Eigen::VectorXd token_nll(const Eigen::Ref<const Eigen::MatrixXd>& logits, std::span<const int> tokens) {
  const Eigen::Index T = static_cast<Eigen::Index>(tokens.size());
  if (logits.cols() != T) throw InputError("tokens", fmt::format("{} tokens but {} logit columns", T, logits.cols()));
  Eigen::VectorXd nll(std::max<Eigen::Index>(T - 1, 0));
  for (Eigen::Index t = 0; t + 1 < T; ++t) {
    const auto col = logits.col(t);
    const double mx = col.maxCoeff();
    const double lse = mx + std::log((col.array() - mx).exp().sum());
    nll(t) = lse - col(tokens[t + 1]);
  }
  return nll;
}

double mean_nll(const Eigen::Ref<const Eigen::MatrixXd>& logits, std::span<const int> tokens) {
  if (tokens.size() < 2) throw InputError("tokens", "the NLL needs at least two tokens");
  return token_nll(logits, tokens).mean();
}

}  // namespace hdat::llama
