#include "hdat/attention_sinks/transformer.hpp"

#include <fmt/format.h>

#include <boost/random/normal_distribution.hpp>
#include <boost/random/uniform_real_distribution.hpp>
#include <cmath>
#include <stdexcept>

#include "hdat/core/error.hpp"

namespace hdat::sinks {

namespace {

struct KindInfo {
  AttentionKind kind;
  const char* name;
};
constexpr KindInfo kKinds[] = {
    {AttentionKind::softmax, "softmax"},         {AttentionKind::sigmoid_norm, "sigmoid_norm"},
    {AttentionKind::sigmoid_unnorm, "sigmoid_unnorm"}, {AttentionKind::linear_norm, "linear_norm"},
    {AttentionKind::linear_unnorm, "linear_unnorm"},   {AttentionKind::elu_norm, "elu_norm"},
    {AttentionKind::elu_unnorm, "elu_unnorm"},         {AttentionKind::relu_norm, "relu_norm"},
    {AttentionKind::relu_unnorm, "relu_unnorm"},       {AttentionKind::square_norm, "square_norm"},
    {AttentionKind::abs_norm, "abs_norm"},             {AttentionKind::uniform, "uniform"},
};

bool is_linear_kernel(AttentionKind k) {
  return k == AttentionKind::linear_norm || k == AttentionKind::linear_unnorm;
}

// ε in the row sum only where f can vanish on a whole row (relu, square, abs); the other f are > 0.
double row_eps(AttentionKind k, double norm_eps) {
  return (k == AttentionKind::relu_norm || k == AttentionKind::square_norm || k == AttentionKind::abs_norm) ? norm_eps
                                                                                                           : 0.0;
}

double sigmoid(double s) { return s >= 0 ? 1.0 / (1.0 + std::exp(-s)) : std::exp(s) / (1.0 + std::exp(s)); }

// The element-wise map f of a score and its derivative f'.
inline double f_of(AttentionKind k, double s) {
  switch (k) {
    case AttentionKind::sigmoid_norm:
    case AttentionKind::sigmoid_unnorm: return sigmoid(s);
    case AttentionKind::elu_norm:
    case AttentionKind::elu_unnorm: return s > 0 ? s + 1.0 : std::exp(s);
    case AttentionKind::relu_norm:
    case AttentionKind::relu_unnorm: return s > 0 ? s : 0.0;
    case AttentionKind::square_norm: return s * s;
    case AttentionKind::abs_norm: return std::abs(s);
    case AttentionKind::linear_norm:
    case AttentionKind::linear_unnorm: return s;  // the kernel φ(q)·φ(k) is already the weight
    default: return 0.0;
  }
}
inline double fprime_of(AttentionKind k, double s) {
  switch (k) {
    case AttentionKind::sigmoid_norm:
    case AttentionKind::sigmoid_unnorm: {
      const double sg = sigmoid(s);
      return sg * (1.0 - sg);
    }
    case AttentionKind::elu_norm:
    case AttentionKind::elu_unnorm: return s > 0 ? 1.0 : std::exp(s);
    case AttentionKind::relu_norm:
    case AttentionKind::relu_unnorm: return s > 0 ? 1.0 : 0.0;
    case AttentionKind::square_norm: return 2.0 * s;
    case AttentionKind::abs_norm: return s > 0 ? 1.0 : (s < 0 ? -1.0 : 0.0);
    case AttentionKind::linear_norm:
    case AttentionKind::linear_unnorm: return 1.0;
    default: return 0.0;
  }
}

// φ(x) = elu(x) + 1 (positive feature map of linear attention) and φ'(x).
inline double phi(double x) { return x > 0 ? x + 1.0 : std::exp(x); }
inline double phi_prime(double x) { return x > 0 ? 1.0 : std::exp(x); }

Eigen::Map<Eigen::MatrixXd> mat(double* base, const Block& b) { return {base + b.offset, b.rows, b.cols}; }
Eigen::Map<const Eigen::MatrixXd> mat(const double* base, const Block& b) { return {base + b.offset, b.rows, b.cols}; }
Eigen::Map<Eigen::VectorXd> vec(double* base, const Block& b) { return {base + b.offset, b.rows * b.cols}; }
Eigen::Map<const Eigen::VectorXd> vec(const double* base, const Block& b) { return {base + b.offset, b.rows * b.cols}; }

}  // namespace

AttentionKind parse_attention(const std::string& name) {
  for (const auto& k : kKinds)
    if (name == k.name) return k.kind;
  std::string all;
  for (const auto& k : kKinds) all += (all.empty() ? "" : "|") + std::string(k.name);
  throw InputError("attention", "unknown attention kind '" + name + "'; allowed: " + all);
}

std::string attention_name(AttentionKind kind) {
  for (const auto& k : kKinds)
    if (kind == k.kind) return k.name;
  return "?";
}

std::vector<std::string> attention_names() {
  std::vector<std::string> out;
  for (const auto& k : kKinds) out.emplace_back(k.name);
  return out;
}

bool is_normalised(AttentionKind k) {
  switch (k) {
    case AttentionKind::sigmoid_unnorm:
    case AttentionKind::linear_unnorm:
    case AttentionKind::elu_unnorm:
    case AttentionKind::relu_unnorm: return false;
    default: return true;
  }
}

Positions parse_positions(const std::string& name) {
  if (name == "add") return Positions::add;
  if (name == "concat") return Positions::concat;
  if (name == "none") return Positions::none;
  throw InputError("positions", "allowed: add|concat|none");
}
std::string positions_name(Positions p) {
  return p == Positions::add ? "add" : p == Positions::concat ? "concat" : "none";
}

void check_config(const Config& c) {
  if (c.width < 1 || c.heads < 1 || c.width % c.heads != 0)
    throw std::invalid_argument(fmt::format("width {} must be a positive multiple of heads {}", c.width, c.heads));
  if (c.positions == Positions::concat && c.width % 2 != 0)
    throw std::invalid_argument("concatenated positions need an even width");
  if (c.vocab < 1 || c.n_out < 1 || c.max_len < 1 || c.layers < 1 || c.mlp_hidden < 1)
    throw std::invalid_argument("vocab, n_out, max_len, layers and mlp_hidden must be positive");
}

// ---------------------------------------------------------------- layers

void layer_norm_forward(const RowMat& x, const Eigen::Ref<const Eigen::VectorXd>& gamma,
                        const Eigen::Ref<const Eigen::VectorXd>& beta, double eps, RowMat& y, RowMat& xhat,
                        Eigen::VectorXd& inv_sigma) {
  const Eigen::Index n = x.rows(), d = x.cols();
  y.resize(n, d);
  xhat.resize(n, d);
  inv_sigma.resize(n);
  for (Eigen::Index r = 0; r < n; ++r) {
    const double mu = x.row(r).mean();
    const double var = (x.row(r).array() - mu).square().mean();
    const double is = 1.0 / std::sqrt(var + eps);
    inv_sigma(r) = is;
    xhat.row(r) = (x.row(r).array() - mu) * is;
    y.row(r) = xhat.row(r).array() * gamma.transpose().array() + beta.transpose().array();
  }
}

void layer_norm_backward(const RowMat& dy, const RowMat& xhat, const Eigen::VectorXd& inv_sigma,
                         const Eigen::Ref<const Eigen::VectorXd>& gamma, RowMat& dx,
                         Eigen::Ref<Eigen::VectorXd> dgamma, Eigen::Ref<Eigen::VectorXd> dbeta) {
  const Eigen::Index n = dy.rows();
  for (Eigen::Index r = 0; r < n; ++r) {
    const Eigen::ArrayXd g = dy.row(r).transpose().array() * gamma.array();
    const Eigen::ArrayXd xh = xhat.row(r).transpose().array();
    const double mg = g.mean(), mgx = (g * xh).mean();
    dx.row(r) += (inv_sigma(r) * (g - mg - xh * mgx)).matrix().transpose();
  }
  dgamma += (dy.array() * xhat.array()).colwise().sum().transpose().matrix();
  dbeta += dy.colwise().sum().transpose();
}

double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x * M_SQRT1_2)); }
double gelu_derivative(double x) {
  return 0.5 * (1.0 + std::erf(x * M_SQRT1_2)) + x * std::exp(-0.5 * x * x) * (0.5 * M_2_SQRTPI * M_SQRT1_2);
}

void attention_head_forward(AttentionKind kind, bool causal, double norm_eps, const ConstRowBlock& q,
                            const ConstRowBlock& k, const ConstRowBlock& v, RowBlock S, RowBlock A, RowBlock O) {
  const Eigen::Index L = q.rows(), dh = q.cols();
  if (is_linear_kernel(kind)) {
    thread_local RowMat pq, pk;
    pq = q.unaryExpr([](double x) { return phi(x); });
    pk = k.unaryExpr([](double x) { return phi(x); });
    S.noalias() = pq.lazyProduct(pk.transpose());
  } else if (kind == AttentionKind::uniform) {
    S.setZero();
  } else {
    S.noalias() = q.lazyProduct(k.transpose());
    S *= 1.0 / std::sqrt(double(dh));
  }
  const double eps = row_eps(kind, norm_eps);
  for (Eigen::Index i = 0; i < L; ++i) {
    const Eigen::Index n = causal ? i + 1 : L;  // visible keys 0 .. n−1
    switch (kind) {
      case AttentionKind::softmax: {
        const double m = S.row(i).head(n).maxCoeff();
        double sum = 0;
        for (Eigen::Index j = 0; j < n; ++j) sum += (A(i, j) = std::exp(S(i, j) - m));
        A.row(i).head(n) /= sum;
        break;
      }
      case AttentionKind::uniform: A.row(i).head(n).setConstant(1.0 / double(n)); break;
      default: {
        double sum = 0;
        for (Eigen::Index j = 0; j < n; ++j) sum += (A(i, j) = f_of(kind, S(i, j)));
        if (is_normalised(kind)) A.row(i).head(n) /= (sum + eps);
      }
    }
    if (n < L) A.row(i).tail(L - n).setZero();
  }
  O.noalias() = A.lazyProduct(v);
}

void attention_head_backward(AttentionKind kind, bool causal, double norm_eps, const ConstRowBlock& q,
                             const ConstRowBlock& k, const ConstRowBlock& v, const ConstRowBlock& S,
                             const ConstRowBlock& A, const ConstRowBlock& dO, RowBlock dq, RowBlock dk,
                             RowBlock dv) {
  const Eigen::Index L = q.rows(), dh = q.cols();
  dv.noalias() = A.transpose().lazyProduct(dO);
  if (kind == AttentionKind::uniform) {  // the weights do not depend on q, k
    dq.setZero();
    dk.setZero();
    return;
  }
  thread_local RowMat dA, dS;
  dA.resize(L, L);
  dS.resize(L, L);
  dA.noalias() = dO.lazyProduct(v.transpose());
  const double eps = row_eps(kind, norm_eps);
  for (Eigen::Index i = 0; i < L; ++i) {
    const Eigen::Index n = causal ? i + 1 : L;
    if (kind == AttentionKind::softmax) {
      // Softmax Jacobian C = diag(α) − α αᵀ: dS_ij = α_ij (dA_ij − Σ_j' α_ij' dA_ij').
      const double c = A.row(i).head(n).dot(dA.row(i).head(n));
      for (Eigen::Index j = 0; j < n; ++j) dS(i, j) = A(i, j) * (dA(i, j) - c);
    } else if (is_normalised(kind)) {
      // α = f/D, D = Σ f + ε: df_ij = (dA_ij − Σ_j' α_ij' dA_ij') / D, then the chain through f.
      double D = eps;
      for (Eigen::Index j = 0; j < n; ++j) D += f_of(kind, S(i, j));
      const double c = A.row(i).head(n).dot(dA.row(i).head(n));
      for (Eigen::Index j = 0; j < n; ++j) dS(i, j) = (dA(i, j) - c) / D * fprime_of(kind, S(i, j));
    } else {
      for (Eigen::Index j = 0; j < n; ++j) dS(i, j) = dA(i, j) * fprime_of(kind, S(i, j));
    }
    if (n < L) dS.row(i).tail(L - n).setZero();
  }
  if (is_linear_kernel(kind)) {
    thread_local RowMat pq, pk;
    pq = q.unaryExpr([](double x) { return phi(x); });
    pk = k.unaryExpr([](double x) { return phi(x); });
    dq.noalias() = dS.lazyProduct(pk);
    dk.noalias() = dS.transpose().lazyProduct(pq);
    dq.array() *= q.unaryExpr([](double x) { return phi_prime(x); }).array();
    dk.array() *= k.unaryExpr([](double x) { return phi_prime(x); }).array();
  } else {
    const double scale = 1.0 / std::sqrt(double(dh));
    dq.noalias() = dS.lazyProduct(k);
    dk.noalias() = dS.transpose().lazyProduct(q);
    dq *= scale;
    dk *= scale;
  }
}

// ---------------------------------------------------------------- model

Transformer::Transformer(const Config& config) : config_(config) {
  check_config(config_);
  const int d = config_.width, m = config_.mlp_hidden;
  const int d_tok = config_.positions == Positions::concat ? d / 2 : d;
  const int d_pos = d - (config_.positions == Positions::concat ? d_tok : 0);
  layout_.add("E", d_tok, config_.vocab);  // column t = embedding of token t
  if (config_.positions != Positions::none) layout_.add("P", d_pos, config_.max_len);
  for (int l = 0; l < config_.layers; ++l) {
    const std::string p = fmt::format("L{}.", l);
    layout_.add(p + "ln1_g", d, 1).add(p + "ln1_b", d, 1);
    layout_.add(p + "Wqkv", d, 3 * d).add(p + "bqkv", 3 * d, 1);  // columns: queries | keys | values
    layout_.add(p + "Wo", d, d).add(p + "bo", d, 1);
    layout_.add(p + "ln2_g", d, 1).add(p + "ln2_b", d, 1);
    layout_.add(p + "W1", d, m).add(p + "c1", m, 1);
    layout_.add(p + "W2", m, d).add(p + "c2", d, 1);
  }
  layout_.add("lnf_g", d, 1).add("lnf_b", d, 1);
  layout_.add("Wout", d, config_.n_out).add("bout", config_.n_out, 1);

  E_ = layout_.block("E");
  if (config_.positions != Positions::none) P_ = layout_.block("P");
  for (int l = 0; l < config_.layers; ++l) {
    const std::string p = fmt::format("L{}.", l);
    auto b = [&](const char* n) { return layout_.block(p + n); };
    blocks_.push_back({b("ln1_g"), b("ln1_b"), b("Wqkv"), b("bqkv"), b("Wo"), b("bo"), b("ln2_g"), b("ln2_b"),
                       b("W1"), b("c1"), b("W2"), b("c2")});
  }
  lnf_g_ = layout_.block("lnf_g");
  lnf_b_ = layout_.block("lnf_b");
  Wout_ = layout_.block("Wout");
  bout_ = layout_.block("bout");
  theta_ = Eigen::VectorXd::Zero(layout_.size());
  cache_.resize(config_.layers);
}

void Transformer::initialize(rng::Engine& engine) {
  boost::random::normal_distribution<double> normal(0.0, 1.0);
  double* t = theta_.data();
  auto fill_normal = [&](const Block& b) {
    for (int i = 0; i < b.size(); ++i) t[b.offset + i] = normal(engine);
  };
  auto fill_uniform = [&](const Block& b, int fan_in) {
    const double bound = 1.0 / std::sqrt(double(fan_in));
    boost::random::uniform_real_distribution<double> u(-bound, bound);
    for (int i = 0; i < b.size(); ++i) t[b.offset + i] = u(engine);
  };
  const int d = config_.width;
  fill_normal(E_);
  if (config_.positions != Positions::none) fill_normal(P_);
  for (const auto& lb : blocks_) {
    vec(t, lb.ln1_g).setOnes();
    vec(t, lb.ln1_b).setZero();
    fill_uniform(lb.Wqkv, d);
    fill_uniform(lb.bqkv, d);
    fill_uniform(lb.Wo, d);
    fill_uniform(lb.bo, d);
    vec(t, lb.ln2_g).setOnes();
    vec(t, lb.ln2_b).setZero();
    fill_uniform(lb.W1, d);
    fill_uniform(lb.c1, d);
    fill_uniform(lb.W2, config_.mlp_hidden);
    fill_uniform(lb.c2, config_.mlp_hidden);
  }
  vec(t, lnf_g_).setOnes();
  vec(t, lnf_b_).setZero();
  fill_uniform(Wout_, d);
  fill_uniform(bout_, d);
}

void Transformer::resize(int B, int L) {
  if (B == B_ && L == L_) return;
  B_ = B;
  L_ = L;
  const int N = B * L, d = config_.width, m = config_.mlp_hidden, H = config_.heads;
  x_.resize(N, d);
  for (auto& c : cache_) {
    c.xhat1.resize(N, d);
    c.u.resize(N, d);
    c.qkv.resize(N, 3 * d);
    c.z.resize(N, d);
    c.xhat2.resize(N, d);
    c.m.resize(N, d);
    c.h1.resize(N, m);
    c.Phi.resize(N, m);
    c.g.resize(N, m);
    c.S.resize(std::size_t(B) * H * L, L);
    c.A.resize(std::size_t(B) * H * L, L);
  }
  dx_.resize(N, d);
  du_.resize(N, d);
  dqkv_.resize(N, 3 * d);
  dz_.resize(N, d);
  dm_.resize(N, d);
  dh_.resize(N, m);
}

const RowMat& Transformer::forward(const std::vector<int>& tokens, int B, int L) {
  if (int(tokens.size()) != B * L) throw std::invalid_argument("forward: tokens.size() != B*L");
  if (L > config_.max_len && config_.positions != Positions::none)
    throw std::invalid_argument(fmt::format("forward: length {} exceeds max_len {}", L, config_.max_len));
  for (int t : tokens)
    if (t < 0 || t >= config_.vocab) throw std::invalid_argument(fmt::format("forward: token {} out of range", t));
  resize(B, L);
  tokens_ = tokens;
  const double* t = theta_.data();
  const int d = config_.width, H = config_.heads, dh = d / H, N = B * L;
  const auto E = mat(t, E_);
  for (int r = 0; r < N; ++r) {
    const int pos = r % L;
    switch (config_.positions) {
      case Positions::add: x_.row(r) = (E.col(tokens[r]) + mat(t, P_).col(pos)).transpose(); break;
      case Positions::concat:
        x_.row(r).head(E_.rows) = E.col(tokens[r]).transpose();
        x_.row(r).tail(P_.rows) = mat(t, P_).col(pos).transpose();
        break;
      case Positions::none: x_.row(r) = E.col(tokens[r]).transpose(); break;
    }
  }
  for (int l = 0; l < config_.layers; ++l) {
    const LayerBlocks& lb = blocks_[l];
    LayerCache& c = cache_[l];
    layer_norm_forward(x_, vec(t, lb.ln1_g), vec(t, lb.ln1_b), config_.ln_eps, c.u, c.xhat1, c.isig1);
    c.qkv.noalias() = c.u * mat(t, lb.Wqkv);
    c.qkv.rowwise() += vec(t, lb.bqkv).transpose();
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h) {
        attention_head_forward(config_.attention, config_.causal, config_.norm_eps,
                               c.qkv.block(b * L, h * dh, L, dh), c.qkv.block(b * L, d + h * dh, L, dh),
                               c.qkv.block(b * L, 2 * d + h * dh, L, dh), c.S.middleRows((b * H + h) * L, L),
                               c.A.middleRows((b * H + h) * L, L), c.z.block(b * L, h * dh, L, dh));
      }
    x_.noalias() += c.z * mat(t, lb.Wo);
    x_.rowwise() += vec(t, lb.bo).transpose();
    layer_norm_forward(x_, vec(t, lb.ln2_g), vec(t, lb.ln2_b), config_.ln_eps, c.m, c.xhat2, c.isig2);
    c.h1.noalias() = c.m * mat(t, lb.W1);
    c.h1.rowwise() += vec(t, lb.c1).transpose();
    for (Eigen::Index i = 0; i < c.h1.size(); ++i) {
      const double x = c.h1.data()[i];
      const double Phi = 0.5 * (1.0 + std::erf(x * M_SQRT1_2));
      c.Phi.data()[i] = Phi;
      c.g.data()[i] = x * Phi;
    }
    x_.noalias() += c.g * mat(t, lb.W2);
    x_.rowwise() += vec(t, lb.c2).transpose();
  }
  layer_norm_forward(x_, vec(t, lnf_g_), vec(t, lnf_b_), config_.ln_eps, yf_, xhatf_, isigf_);
  logits_.noalias() = yf_ * mat(t, Wout_);
  logits_.rowwise() += vec(t, bout_).transpose();
  return logits_;
}

void Transformer::backward(const RowMat& dlogits, Eigen::VectorXd& grad) {
  const int B = B_, L = L_, N = B * L, d = config_.width, H = config_.heads, dh = d / H;
  if (dlogits.rows() != N || dlogits.cols() != config_.n_out) throw std::invalid_argument("backward: dlogits shape");
  grad.setZero(layout_.size());
  const double* t = theta_.data();
  double* g = grad.data();

  mat(g, Wout_).noalias() = yf_.transpose() * dlogits;
  vec(g, bout_) = dlogits.colwise().sum().transpose();
  du_.noalias() = dlogits * mat(t, Wout_).transpose();
  dx_.setZero();
  layer_norm_backward(du_, xhatf_, isigf_, vec(t, lnf_g_), dx_, vec(g, lnf_g_), vec(g, lnf_b_));

  for (int l = config_.layers - 1; l >= 0; --l) {
    const LayerBlocks& lb = blocks_[l];
    LayerCache& c = cache_[l];
    // MLP branch: x ← x + GELU(LN2(x) W1 + c1) W2 + c2.
    mat(g, lb.W2).noalias() = c.g.transpose() * dx_;
    vec(g, lb.c2) = dx_.colwise().sum().transpose();
    dh_.noalias() = dx_ * mat(t, lb.W2).transpose();
    for (Eigen::Index i = 0; i < dh_.size(); ++i) {
      const double x = c.h1.data()[i];
      // GELU'(x) = Φ(x) + x φ(x)
      dh_.data()[i] *= c.Phi.data()[i] + x * std::exp(-0.5 * x * x) * (0.5 * M_2_SQRTPI * M_SQRT1_2);
    }
    mat(g, lb.W1).noalias() = c.m.transpose() * dh_;
    vec(g, lb.c1) = dh_.colwise().sum().transpose();
    dm_.noalias() = dh_ * mat(t, lb.W1).transpose();
    layer_norm_backward(dm_, c.xhat2, c.isig2, vec(t, lb.ln2_g), dx_, vec(g, lb.ln2_g), vec(g, lb.ln2_b));
    // Attention branch: x ← x + Attn(LN1(x)) Wo + bo.
    mat(g, lb.Wo).noalias() = c.z.transpose() * dx_;
    vec(g, lb.bo) = dx_.colwise().sum().transpose();
    dz_.noalias() = dx_ * mat(t, lb.Wo).transpose();
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h)
        attention_head_backward(config_.attention, config_.causal, config_.norm_eps,
                                c.qkv.block(b * L, h * dh, L, dh), c.qkv.block(b * L, d + h * dh, L, dh),
                                c.qkv.block(b * L, 2 * d + h * dh, L, dh), c.S.middleRows((b * H + h) * L, L),
                                c.A.middleRows((b * H + h) * L, L), dz_.block(b * L, h * dh, L, dh),
                                dqkv_.block(b * L, h * dh, L, dh), dqkv_.block(b * L, d + h * dh, L, dh),
                                dqkv_.block(b * L, 2 * d + h * dh, L, dh));
    mat(g, lb.Wqkv).noalias() = c.u.transpose() * dqkv_;
    vec(g, lb.bqkv) = dqkv_.colwise().sum().transpose();
    du_.noalias() = dqkv_ * mat(t, lb.Wqkv).transpose();
    layer_norm_backward(du_, c.xhat1, c.isig1, vec(t, lb.ln1_g), dx_, vec(g, lb.ln1_g), vec(g, lb.ln1_b));
  }
  auto dE = mat(g, E_);
  for (int r = 0; r < N; ++r) {
    const int pos = r % L;
    switch (config_.positions) {
      case Positions::add:
        dE.col(tokens_[r]) += dx_.row(r).transpose();
        mat(g, P_).col(pos) += dx_.row(r).transpose();
        break;
      case Positions::concat:
        dE.col(tokens_[r]) += dx_.row(r).head(E_.rows).transpose();
        mat(g, P_).col(pos) += dx_.row(r).tail(P_.rows).transpose();
        break;
      case Positions::none: dE.col(tokens_[r]) += dx_.row(r).transpose(); break;
    }
  }
}

Eigen::Map<const RowMat> Transformer::attention(int l, int b, int h) const {
  const RowMat& A = cache_.at(l).A;
  return {A.data() + std::size_t((b * config_.heads + h) * L_) * L_, L_, L_};
}

ConstRowBlock Transformer::values(int l, int b, int h) const {
  const int d = config_.width, dh = d / config_.heads;
  return cache_.at(l).qkv.block(b * L_, 2 * d + h * dh, L_, dh);
}

}  // namespace hdat::sinks
