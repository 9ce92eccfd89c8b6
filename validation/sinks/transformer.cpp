#include "hdat/sinks/transformer.hpp"

#include <fmt/format.h>

#include <boost/random/normal_distribution.hpp>
#include <boost/random/uniform_real_distribution.hpp>
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unsupported/Eigen/SpecialFunctions>

#include "hdat/core/error.hpp"
#include "hdat/core/matrix_product.hpp"

namespace hdat::sinks {

namespace {

struct KindInfo {
  AttentionKind kind;
  const char* name;
};
// hdat's names first (attention_name returns the first match), then the authors' aliases.
constexpr KindInfo kKinds[] = {
    {AttentionKind::softmax, "softmax"},
    {AttentionKind::sigmoid_norm, "sigmoid_norm"},
    {AttentionKind::sigmoid_unnorm, "sigmoid_unnorm"},
    {AttentionKind::linear_norm, "linear_norm"},
    {AttentionKind::linear_unnorm, "linear_unnorm"},
    {AttentionKind::elu_norm, "elu_norm"},
    {AttentionKind::elu_unnorm, "elu_unnorm"},
    {AttentionKind::raw_dotproduct_norm, "raw_dotproduct_norm"},
    {AttentionKind::raw_dotproduct_unnorm, "raw_dotproduct_unnorm"},
    {AttentionKind::relu_norm, "relu_norm"},
    {AttentionKind::relu_unnorm, "relu_unnorm"},
    {AttentionKind::square_norm, "square_norm"},
    {AttentionKind::abs_norm, "abs_norm"},
    {AttentionKind::uniform, "uniform"},
    {AttentionKind::elu_norm, "coupled_linear_norm"},
    {AttentionKind::elu_unnorm, "coupled_linear_unnorm"},
};

bool is_linear_kernel(AttentionKind k) {
  return k == AttentionKind::linear_norm || k == AttentionKind::linear_unnorm;
}

double sigmoid(double s) { return s >= 0 ? 1.0 / (1.0 + std::exp(-s)) : std::exp(s) / (1.0 + std::exp(s)); }

// The element-wise map f of a score and its derivative f' (the kinds of the form f or f/Σf).
template <class T>
inline T f_of(AttentionKind k, T s) {
  switch (k) {
    case AttentionKind::sigmoid_norm:
    case AttentionKind::sigmoid_unnorm: return T(sigmoid(double(s)));
    case AttentionKind::elu_norm:
    case AttentionKind::elu_unnorm: return s > 0 ? s + T(1) : std::exp(s);
    case AttentionKind::relu_norm:
    case AttentionKind::relu_unnorm: return s > 0 ? s : T(0);
    case AttentionKind::square_norm: return s * s;
    case AttentionKind::abs_norm: return std::abs(s);
    case AttentionKind::linear_norm:
    case AttentionKind::linear_unnorm:
    case AttentionKind::raw_dotproduct_norm:
    case AttentionKind::raw_dotproduct_unnorm: return s;  // the score (or kernel φ(q)·φ(k)) is the weight
    default: return T(0);
  }
}
template <class T>
inline T fprime_of(AttentionKind k, T s) {
  switch (k) {
    case AttentionKind::sigmoid_norm:
    case AttentionKind::sigmoid_unnorm: {
      const T sg = T(sigmoid(double(s)));
      return sg * (T(1) - sg);
    }
    case AttentionKind::elu_norm:
    case AttentionKind::elu_unnorm: return s > 0 ? T(1) : std::exp(s);
    case AttentionKind::relu_norm:
    case AttentionKind::relu_unnorm: return s > 0 ? T(1) : T(0);
    case AttentionKind::square_norm: return T(2) * s;
    case AttentionKind::abs_norm: return s > 0 ? T(1) : (s < 0 ? T(-1) : T(0));
    default: return T(1);
  }
}

// φ(x) = elu(x) + 1 (positive feature map of linear attention) and φ'(x), on whole blocks.
template <class Derived>
auto phi(const Eigen::ArrayBase<Derived>& x) {
  using T = typename Derived::Scalar;
  return (x > T(0)).select(x + T(1), x.exp());
}
template <class Derived>
auto phi_prime(const Eigen::ArrayBase<Derived>& x) {
  using T = typename Derived::Scalar;
  return (x > T(0)).select(T(1), x.exp());
}

template <class T>
Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>> mat(T* base, const Block& b) {
  return {base + b.offset, b.rows, b.cols};
}
template <class T>
Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>> mat(const T* base, const Block& b) {
  return {base + b.offset, b.rows, b.cols};
}
template <class T>
Eigen::Map<VecT<T>> vec(T* base, const Block& b) {
  return {base + b.offset, b.rows * b.cols};
}
template <class T>
Eigen::Map<const VecT<T>> vec(const T* base, const Block& b) {
  return {base + b.offset, b.rows * b.cols};
}

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
    case AttentionKind::raw_dotproduct_unnorm:
    case AttentionKind::relu_unnorm: return false;
    default: return true;
  }
}

bool is_positive(AttentionKind k) {
  return k != AttentionKind::raw_dotproduct_norm && k != AttentionKind::raw_dotproduct_unnorm;
}

bool has_row_sum(AttentionKind k) {
  return is_normalised(k) && k != AttentionKind::softmax && k != AttentionKind::raw_dotproduct_norm &&
         k != AttentionKind::uniform;
}

bool row_sum_can_vanish(AttentionKind k) {
  return k == AttentionKind::relu_norm || k == AttentionKind::square_norm || k == AttentionKind::abs_norm;
}

// Every kind of the form f/Σf adds ε to the row sum, as the authors' code does (1e-9); where f > 0
// (sigmoid, elu, linear) it may be 0, where f can vanish on a whole row (relu, square, abs) it must not.
double HeadSpec::row_eps() const { return has_row_sum(kind) ? norm_eps : 0.0; }

HeadSpec head_spec(const TransformerConfig& c) { return {c.attention, c.causal, c.norm_eps}; }

Positions parse_positions(const std::string& name) {
  if (name == "add") return Positions::add;
  if (name == "concat") return Positions::concat;
  if (name == "none") return Positions::none;
  throw InputError("positions", "allowed: add|concat|none");
}
std::string positions_name(Positions p) {
  return p == Positions::add ? "add" : p == Positions::concat ? "concat" : "none";
}

void check_config(const TransformerConfig& c) {
  if (c.width < 1 || c.heads < 1 || c.width % c.heads != 0)
    throw std::invalid_argument(fmt::format("width {} must be a positive multiple of heads {}", c.width, c.heads));
  if (c.positions == Positions::concat && c.width % 2 != 0)
    throw std::invalid_argument("concatenated positions need an even width");
  if (c.vocab < 1 || c.n_out < 1 || c.max_len < 1 || c.layers < 1 || c.mlp_hidden < 1)
    throw std::invalid_argument("vocab, n_out, max_len, layers and mlp_hidden must be positive");
}

// ---------------------------------------------------------------- layers

template <class T>
void layer_norm_forward(const ConstRowBlockT<T>& x, const Eigen::Ref<const VecT<T>>& gamma,
                        const Eigen::Ref<const VecT<T>>& beta, double eps, RowBlockT<T> y, RowBlockT<T> xhat,
                        Eigen::Ref<VecT<T>> inv_sigma) {
  const Eigen::Index n = x.rows();
  const auto g = gamma.transpose().array();
  const auto b = beta.transpose().array();
  for (Eigen::Index r = 0; r < n; ++r) {
    const T mu = x.row(r).mean();
    const T var = (x.row(r).array() - mu).square().mean();
    const T is = T(1) / std::sqrt(var + T(eps));
    inv_sigma(r) = is;
    xhat.row(r) = (x.row(r).array() - mu) * is;
    y.row(r) = xhat.row(r).array() * g + b;
  }
}

template <class T>
void layer_norm_backward(const ConstRowBlockT<T>& dy, const ConstRowBlockT<T>& xhat,
                         const Eigen::Ref<const VecT<T>>& inv_sigma, const Eigen::Ref<const VecT<T>>& gamma,
                         RowBlockT<T> dx, Eigen::Ref<VecT<T>> dgamma, Eigen::Ref<VecT<T>> dbeta) {
  const Eigen::Index n = dy.rows();
  const auto gam = gamma.transpose().array();
  for (Eigen::Index r = 0; r < n; ++r) {
    const auto g = dy.row(r).array() * gam;  // an expression: no temporary per row
    const auto xh = xhat.row(r).array();
    const T mg = g.mean(), mgx = (g * xh).mean();
    dx.row(r).array() += inv_sigma(r) * (g - mg - xh * mgx);
  }
  dgamma += (dy.array() * xhat.array()).colwise().sum().transpose().matrix();
  dbeta += dy.colwise().sum().transpose();
}

double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x * M_SQRT1_2)); }
double gelu_derivative(double x) {
  return 0.5 * (1.0 + std::erf(x * M_SQRT1_2)) + x * std::exp(-0.5 * x * x) * (0.5 * M_2_SQRTPI * M_SQRT1_2);
}

template <class T>
void gelu_forward(const RowMatT<T>& h, RowMatT<T>& Phi, RowMatT<T>& g) {
  Phi.array() = T(0.5) * ((h.array() * T(M_SQRT1_2)).erf() + T(1));
  g.array() = h.array() * Phi.array();
}

template <class T>
void gelu_backward(const RowMatT<T>& h, const RowMatT<T>& Phi, RowMatT<T>& dh) {
  // GELU'(h) = Φ(h) + h φ(h), φ(h) = e^{−h²/2}/√(2π)
  const T inv_sqrt_2pi = T(0.5 * M_2_SQRTPI * M_SQRT1_2);
  dh.array() *= Phi.array() + h.array() * (h.array().square() * T(-0.5)).exp() * inv_sqrt_2pi;
}

namespace column_sum_detail {
namespace {
// out = Σ_r x(r, ·), the gradient of a bias added to every row. Row by row, so that the additions run
// along contiguous rows: Eigen's colwise().sum() of a row-major matrix took 3% of a float32 step.
template <class T>
void sum_rows_into(const ConstRowBlockT<T>& x, Eigen::Map<VecT<T>> out) {
  out.setZero();
  for (Eigen::Index r = 0; r < x.rows(); ++r) out += x.row(r).transpose();
}
}  // namespace
}  // namespace column_sum_detail
using column_sum_detail::sum_rows_into;

// The products of one head are small (L ≤ a few dozen, d_h ≤ 128): they are written as loops over
// the visible pairs j ≤ i (half of the L × L pairs when causal) of dot products and row updates on
// contiguous d_h-vectors (SIMD loops), which costs a fraction of a general product's call overhead.
namespace {

template <class T>
inline T dot(const T* a, const T* b, Eigen::Index n) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (Eigen::Index c = 0; c < n; ++c) s += a[c] * b[c];
  return s;
}

template <class T>
inline void axpy(T w, const T* x, T* y, Eigen::Index n) {  // y += w x
#pragma omp simd
  for (Eigen::Index c = 0; c < n; ++c) y[c] += w * x[c];
}

// out = Σ_j c_j x_j over n rows x_j = base + j·stride of length dh, accumulated in registers one SIMD
// width of columns at a time (an update of `out` in memory per j would chain every step through a
// store and a load of the same address).
template <class T>
inline void weighted_row_sum(const T* c, Eigen::Index n, const T* base, Eigen::Index stride, Eigen::Index dh, T* out) {
  constexpr int W = 64 / sizeof(T);  // one 512-bit register
  using Chunk = Eigen::Array<T, W, 1>;
  Eigen::Index c0 = 0;
  for (; c0 + W <= dh; c0 += W) {
    Chunk acc = Chunk::Zero();
    for (Eigen::Index j = 0; j < n; ++j) acc += c[j] * Eigen::Map<const Chunk>(base + j * stride + c0);
    Eigen::Map<Chunk>(out + c0) = acc;
  }
  for (; c0 < dh; ++c0) {
    T acc = 0;
    for (Eigen::Index j = 0; j < n; ++j) acc += c[j] * base[j * stride + c0];
    out[c0] = acc;
  }
}

// Row i of a row-major block.
template <class Block>
inline auto row_ptr(Block& b, Eigen::Index i) {
  return b.data() + i * b.outerStride();
}

}  // namespace

template <class T>
void attention_head_forward(const HeadSpec& spec, const ConstRowBlockT<T>& q, const ConstRowBlockT<T>& k,
                            const ConstRowBlockT<T>& v, RowBlockT<T> S, RowBlockT<T> A, RowBlockT<T> O) {
  const AttentionKind kind = spec.kind;
  const Eigen::Index L = q.rows(), dh = q.cols();
  auto visible = [&](Eigen::Index i) { return spec.causal ? i + 1 : L; };  // keys 0 .. n−1
  if (kind != AttentionKind::uniform) {
    // Linear kinds: the scores are the kernel φ(q_i)·φ(k_j) (no scale).
    thread_local RowMatT<T> pq, pk;
    const bool kernel = is_linear_kernel(kind);
    if (kernel) {
      pq = phi(q.array());
      pk = phi(k.array());
    }
    const T scale = kernel ? T(1) : T(1.0 / std::sqrt(double(dh)));
    for (Eigen::Index i = 0; i < L; ++i) {
      const T* qi = kernel ? pq.data() + i * dh : row_ptr(q, i);
      for (Eigen::Index j = 0; j < visible(i); ++j)
        S(i, j) = scale * dot(qi, kernel ? pk.data() + j * dh : row_ptr(k, j), dh);
    }
  }
  const T eps = T(spec.row_eps());
  for (Eigen::Index i = 0; i < L; ++i) {
    const Eigen::Index n = visible(i);
    auto a = A.row(i).head(n);
    if (kind == AttentionKind::uniform) S.row(i).head(n).setZero();
    const auto s = S.row(i).head(n);
    switch (kind) {
      case AttentionKind::softmax: {
        a.array() = (s.array() - s.maxCoeff()).exp();
        a /= a.sum();
        break;
      }
      case AttentionKind::uniform: a.setConstant(T(1) / T(n)); break;
      case AttentionKind::raw_dotproduct_norm: a = s / std::max(std::abs(s.sum()), T(1)); break;
      default: {
        for (Eigen::Index j = 0; j < n; ++j) a(j) = f_of(kind, s(j));
        if (is_normalised(kind)) a /= (a.sum() + eps);
      }
    }
    if (n < L) {
      A.row(i).tail(L - n).setZero();
      S.row(i).tail(L - n).setZero();
    }
    weighted_row_sum(row_ptr(A, i), n, v.data(), v.outerStride(), dh, row_ptr(O, i));
  }
}

template <class T>
void attention_head_backward(const HeadSpec& spec, const ConstRowBlockT<T>& q, const ConstRowBlockT<T>& k,
                             const ConstRowBlockT<T>& v, const ConstRowBlockT<T>& S, const ConstRowBlockT<T>& A,
                             const ConstRowBlockT<T>& dO, RowBlockT<T> dq, RowBlockT<T> dk, RowBlockT<T> dv) {
  const AttentionKind kind = spec.kind;
  const Eigen::Index L = q.rows(), dh = q.cols();
  auto visible = [&](Eigen::Index i) { return spec.causal ? i + 1 : L; };
  // O_i = Σ_j α_ij v_j: dv_j = Σ_i α_ij dO_i, dα_ij = dO_i · v_j.
  dv.setZero();
  for (Eigen::Index i = 0; i < L; ++i)
    for (Eigen::Index j = 0; j < visible(i); ++j) axpy(A(i, j), row_ptr(dO, i), row_ptr(dv, j), dh);
  dk.setZero();
  if (kind == AttentionKind::uniform) {  // the weights do not depend on q, k
    dq.setZero();
    return;
  }
  thread_local Eigen::Matrix<T, Eigen::Dynamic, 1> dA, dS;  // one row at a time
  dA.resize(L);
  dS.resize(L);
  const bool kernel = is_linear_kernel(kind);
  thread_local RowMatT<T> pq, pk;  // linear kinds: φ(q), φ(k) (the "queries" and "keys" of the kernel)
  if (kernel) {
    pq = phi(q.array());
    pk = phi(k.array());
  }
  const T scale = kernel ? T(1) : T(1.0 / std::sqrt(double(dh)));
  const T eps = T(spec.row_eps());
  for (Eigen::Index i = 0; i < L; ++i) {
    const Eigen::Index n = visible(i);
    for (Eigen::Index j = 0; j < n; ++j) dA(j) = dot(row_ptr(dO, i), row_ptr(v, j), dh);
    const auto a = A.row(i).head(n);
    const auto da = dA.head(n).transpose();
    const auto s = S.row(i).head(n);
    auto ds = dS.head(n).transpose();
    if (kind == AttentionKind::softmax) {
      // Softmax Jacobian C = diag(α) − α αᵀ: dS_ij = α_ij (dA_ij − Σ_j' α_ij' dA_ij').
      ds = a.cwiseProduct((da.array() - a.dot(da)).matrix());
    } else if (kind == AttentionKind::raw_dotproduct_norm) {
      // α = s/D, D = max(|Σ s|, 1): where |Σ s| > 1, ∂D/∂s_ij = sign(Σ s), so
      // dS_ij = (dA_ij − sign(Σ s) Σ_j' α_ij' dA_ij') / D; elsewhere D = 1 and dS = dA.
      const T sum = s.sum();
      if (std::abs(sum) > T(1))
        ds = (da.array() - (sum > 0 ? T(1) : T(-1)) * a.dot(da)).matrix() / std::abs(sum);
      else
        ds = da;
    } else if (is_normalised(kind)) {
      // α = f/D, D = Σ f + ε: df_ij = (dA_ij − Σ_j' α_ij' dA_ij') / D, then the chain through f.
      T D = eps;
      for (Eigen::Index j = 0; j < n; ++j) D += f_of(kind, s(j));
      const T c = a.dot(da);
      for (Eigen::Index j = 0; j < n; ++j) ds(j) = (da(j) - c) / D * fprime_of(kind, s(j));
    } else {
      for (Eigen::Index j = 0; j < n; ++j) ds(j) = da(j) * fprime_of(kind, s(j));
    }
    // S_ij = scale · q_i · k_j (or φ(q_i) · φ(k_j)): dq_i = scale Σ_j dS_ij k_j, dk_j += scale dS_ij q_i.
    ds *= scale;
    const T* qi = kernel ? pq.data() + i * dh : row_ptr(q, i);
    if (kernel)
      weighted_row_sum(dS.data(), n, pk.data(), dh, dh, row_ptr(dq, i));
    else
      weighted_row_sum(dS.data(), n, k.data(), k.outerStride(), dh, row_ptr(dq, i));
    for (Eigen::Index j = 0; j < n; ++j) axpy(dS(j), qi, row_ptr(dk, j), dh);
  }
  if (kernel) {
    dq.array() *= phi_prime(q.array());
    dk.array() *= phi_prime(k.array());
  }
}

// ---------------------------------------------------------------- model

template <class T>
BasicTransformer<T>::BasicTransformer(const TransformerConfig& config) : config_(config), head_(head_spec(config)) {
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
  theta_ = Vec::Zero(layout_.size());
  cache_.resize(config_.layers);
}

template <class T>
void BasicTransformer<T>::initialize(rng::Engine& engine) {
  boost::random::normal_distribution<double> normal(0.0, 1.0);
  T* t = theta_.data();
  auto fill_normal = [&](const Block& b) {
    for (int i = 0; i < b.size(); ++i) t[b.offset + i] = T(normal(engine));
  };
  auto fill_uniform = [&](const Block& b, int fan_in) {
    const double bound = 1.0 / std::sqrt(double(fan_in));
    boost::random::uniform_real_distribution<double> u(-bound, bound);
    for (int i = 0; i < b.size(); ++i) t[b.offset + i] = T(u(engine));
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

template <class T>
void BasicTransformer<T>::resize(int B, int L) {
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
    c.isig1.resize(N);
    c.isig2.resize(N);
  }
  logits_.resize(N, config_.n_out);
  yf_.resize(N, d);
  xhatf_.resize(N, d);
  isigf_.resize(N);
  distinct_of_row_.resize(N);
  x0_.resize(N, d);
  qkv0_.resize(N, 3 * d);
  dqkv0_.resize(N, 3 * d);
  du0_.resize(N, d);
  dx0_.resize(N, d);
  dx_.resize(N, d);
  du_.resize(N, d);
  dqkv_.resize(N, 3 * d);
  dz_.resize(N, d);
  dm_.resize(N, d);
  dh_.resize(N, m);
}

template <class T>
void BasicTransformer<T>::find_distinct_inputs(const std::vector<int>& tokens, int L) {
  slot_of_pair_.assign(std::size_t(config_.vocab) * L, -1);
  distinct_token_.clear();
  distinct_pos_.clear();
  for (std::size_t r = 0; r < tokens.size(); ++r) {
    const int pos = int(r % L);
    int& slot = slot_of_pair_[std::size_t(tokens[r]) * L + pos];
    if (slot < 0) {
      slot = int(distinct_token_.size());
      distinct_token_.push_back(tokens[r]);
      distinct_pos_.push_back(pos);
    }
    distinct_of_row_[r] = slot;
  }
  U_ = int(distinct_token_.size());
}

template <class T>
auto BasicTransformer<T>::forward(const std::vector<int>& tokens, int B, int L) -> const Mat& {
  if (int(tokens.size()) != B * L) throw std::invalid_argument("forward: tokens.size() != B*L");
  if (L > config_.max_len && config_.positions != Positions::none)
    throw std::invalid_argument(fmt::format("forward: length {} exceeds max_len {}", L, config_.max_len));
  for (int t : tokens)
    if (t < 0 || t >= config_.vocab) throw std::invalid_argument(fmt::format("forward: token {} out of range", t));
  resize(B, L);
  tokens_ = tokens;
  find_distinct_inputs(tokens, L);
  const T* t = theta_.data();
  const int d = config_.width, H = config_.heads, dh = d / H, N = B * L, U = U_;
  const auto E = mat(t, E_);
  for (int i = 0; i < U; ++i) {
    const int tok = distinct_token_[i], pos = distinct_pos_[i];
    switch (config_.positions) {
      case Positions::add: x0_.row(i) = (E.col(tok) + mat(t, P_).col(pos)).transpose(); break;
      case Positions::concat:
        x0_.row(i).head(E_.rows) = E.col(tok).transpose();
        x0_.row(i).tail(P_.rows) = mat(t, P_).col(pos).transpose();
        break;
      case Positions::none: x0_.row(i) = E.col(tok).transpose(); break;
    }
  }
  for (int r = 0; r < N; ++r) x_.row(r) = x0_.row(distinct_of_row_[r]);
  // Affine maps are written bias first, then the product added (`Y = b; Y += X W`): the product then
  // accumulates into Y instead of zeroing a fresh destination and adding the bias in another pass.
  for (int l = 0; l < config_.layers; ++l) {
    const LayerBlocks& lb = blocks_[l];
    LayerCache& c = cache_[l];
    if (l == 0) {  // on the distinct input rows, then copied to every row
      layer_norm_forward<T>(x0_.topRows(U), vec(t, lb.ln1_g), vec(t, lb.ln1_b), config_.ln_eps, c.u.topRows(U),
                            c.xhat1.topRows(U), c.isig1.head(U));
      qkv0_.topRows(U).rowwise() = vec(t, lb.bqkv).transpose();
      linalg::add_product(qkv0_.topRows(U), c.u.topRows(U), mat(t, lb.Wqkv));
      for (int r = 0; r < N; ++r) c.qkv.row(r) = qkv0_.row(distinct_of_row_[r]);
    } else {
      layer_norm_forward<T>(x_, vec(t, lb.ln1_g), vec(t, lb.ln1_b), config_.ln_eps, c.u, c.xhat1, c.isig1);
      c.qkv.rowwise() = vec(t, lb.bqkv).transpose();
      linalg::add_product(c.qkv, c.u, mat(t, lb.Wqkv));
    }
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h) {
        attention_head_forward<T>(head_, c.qkv.block(b * L, h * dh, L, dh), c.qkv.block(b * L, d + h * dh, L, dh),
                                  c.qkv.block(b * L, 2 * d + h * dh, L, dh), c.S.middleRows((b * H + h) * L, L),
                                  c.A.middleRows((b * H + h) * L, L), c.z.block(b * L, h * dh, L, dh));
      }
    x_.rowwise() += vec(t, lb.bo).transpose();
    linalg::add_product(x_, c.z, mat(t, lb.Wo));
    layer_norm_forward<T>(x_, vec(t, lb.ln2_g), vec(t, lb.ln2_b), config_.ln_eps, c.m, c.xhat2, c.isig2);
    c.h1.rowwise() = vec(t, lb.c1).transpose();
    linalg::add_product(c.h1, c.m, mat(t, lb.W1));
    gelu_forward<T>(c.h1, c.Phi, c.g);
    x_.rowwise() += vec(t, lb.c2).transpose();
    linalg::add_product(x_, c.g, mat(t, lb.W2));
  }
  layer_norm_forward<T>(x_, vec(t, lnf_g_), vec(t, lnf_b_), config_.ln_eps, yf_, xhatf_, isigf_);
  logits_.rowwise() = vec(t, bout_).transpose();
  linalg::add_product(logits_, yf_, mat(t, Wout_));
  return logits_;
}

template <class T>
void BasicTransformer<T>::backward(const Mat& dlogits, Vec& grad) {
  const int B = B_, L = L_, N = B * L, d = config_.width, H = config_.heads, dh = d / H;
  if (dlogits.rows() != N || dlogits.cols() != config_.n_out) throw std::invalid_argument("backward: dlogits shape");
  grad.setZero(layout_.size());  // every block below accumulates (+=) into its zeroed slice
  const T* t = theta_.data();
  T* g = grad.data();

  linalg::add_product(mat(g, Wout_), yf_.transpose(), dlogits);
  sum_rows_into<T>(dlogits, vec(g, bout_));
  linalg::set_product(du_, dlogits, mat(t, Wout_).transpose());
  dx_.setZero();
  layer_norm_backward<T>(du_, xhatf_, isigf_, vec(t, lnf_g_), dx_, vec(g, lnf_g_), vec(g, lnf_b_));

  for (int l = config_.layers - 1; l >= 0; --l) {
    const LayerBlocks& lb = blocks_[l];
    LayerCache& c = cache_[l];
    // MLP branch: x ← x + GELU(LN2(x) W1 + c1) W2 + c2.
    linalg::add_product(mat(g, lb.W2), c.g.transpose(), dx_);
    sum_rows_into<T>(dx_, vec(g, lb.c2));
    linalg::set_product(dh_, dx_, mat(t, lb.W2).transpose());
    gelu_backward<T>(c.h1, c.Phi, dh_);
    linalg::add_product(mat(g, lb.W1), c.m.transpose(), dh_);
    sum_rows_into<T>(dh_, vec(g, lb.c1));
    linalg::set_product(dm_, dh_, mat(t, lb.W1).transpose());
    layer_norm_backward<T>(dm_, c.xhat2, c.isig2, vec(t, lb.ln2_g), dx_, vec(g, lb.ln2_g), vec(g, lb.ln2_b));
    // Attention branch: x ← x + Attn(LN1(x)) Wo + bo.
    linalg::add_product(mat(g, lb.Wo), c.z.transpose(), dx_);
    sum_rows_into<T>(dx_, vec(g, lb.bo));
    linalg::set_product(dz_, dx_, mat(t, lb.Wo).transpose());
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h)
        attention_head_backward<T>(head_, c.qkv.block(b * L, h * dh, L, dh), c.qkv.block(b * L, d + h * dh, L, dh),
                                   c.qkv.block(b * L, 2 * d + h * dh, L, dh), c.S.middleRows((b * H + h) * L, L),
                                   c.A.middleRows((b * H + h) * L, L), dz_.block(b * L, h * dh, L, dh),
                                   dqkv_.block(b * L, h * dh, L, dh), dqkv_.block(b * L, d + h * dh, L, dh),
                                   dqkv_.block(b * L, 2 * d + h * dh, L, dh));
    if (l == 0) {
      // The first layer's LayerNorm and q, k, v act on the distinct input rows: their gradients
      // are summed over the rows that share an input, then go back through those U rows once.
      const int U = U_;
      dqkv0_.topRows(U).setZero();
      dx0_.topRows(U).setZero();
      for (int r = 0; r < N; ++r) {
        dqkv0_.row(distinct_of_row_[r]) += dqkv_.row(r);
        dx0_.row(distinct_of_row_[r]) += dx_.row(r);  // the residual path to the embeddings
      }
      linalg::add_product(mat(g, lb.Wqkv), c.u.topRows(U).transpose(), dqkv0_.topRows(U));
      sum_rows_into<T>(dqkv0_.topRows(U), vec(g, lb.bqkv));
      linalg::set_product(du0_.topRows(U), dqkv0_.topRows(U), mat(t, lb.Wqkv).transpose());
      layer_norm_backward<T>(du0_.topRows(U), c.xhat1.topRows(U), c.isig1.head(U), vec(t, lb.ln1_g), dx0_.topRows(U),
                             vec(g, lb.ln1_g), vec(g, lb.ln1_b));
    } else {
      linalg::add_product(mat(g, lb.Wqkv), c.u.transpose(), dqkv_);
      sum_rows_into<T>(dqkv_, vec(g, lb.bqkv));
      linalg::set_product(du_, dqkv_, mat(t, lb.Wqkv).transpose());
      layer_norm_backward<T>(du_, c.xhat1, c.isig1, vec(t, lb.ln1_g), dx_, vec(g, lb.ln1_g), vec(g, lb.ln1_b));
    }
  }
  embedding_backward(g);
}

// dx0_ holds the gradient of every distinct input row (token, position): to E and P.
template <class T>
void BasicTransformer<T>::embedding_backward(T* g) {
  auto dE = mat(g, E_);
  for (int i = 0; i < U_; ++i) {
    const int tok = distinct_token_[i], pos = distinct_pos_[i];
    switch (config_.positions) {
      case Positions::add:
        dE.col(tok) += dx0_.row(i).transpose();
        mat(g, P_).col(pos) += dx0_.row(i).transpose();
        break;
      case Positions::concat:
        dE.col(tok) += dx0_.row(i).head(E_.rows).transpose();
        mat(g, P_).col(pos) += dx0_.row(i).tail(P_.rows).transpose();
        break;
      case Positions::none: dE.col(tok) += dx0_.row(i).transpose(); break;
    }
  }
}

template <class T>
auto BasicTransformer<T>::attention(int l, int b, int h) const -> Eigen::Map<const Mat> {
  const Mat& A = cache_.at(l).A;
  return {A.data() + std::size_t((b * config_.heads + h) * L_) * L_, L_, L_};
}

template <class T>
ConstRowBlockT<T> BasicTransformer<T>::values(int l, int b, int h) const {
  const int d = config_.width, dh = d / config_.heads;
  return cache_.at(l).qkv.block(b * L_, 2 * d + h * dh, L_, dh);
}

// ---------------------------------------------------------------- instantiations

#define HDAT_SINKS_INSTANTIATE(T)                                                                                    \
  template void layer_norm_forward<T>(const ConstRowBlockT<T>&, const Eigen::Ref<const VecT<T>>&,                   \
                                      const Eigen::Ref<const VecT<T>>&, double, RowBlockT<T>, RowBlockT<T>,          \
                                      Eigen::Ref<VecT<T>>);                                                          \
  template void layer_norm_backward<T>(const ConstRowBlockT<T>&, const ConstRowBlockT<T>&,                           \
                                       const Eigen::Ref<const VecT<T>>&, const Eigen::Ref<const VecT<T>>&,           \
                                       RowBlockT<T>, Eigen::Ref<VecT<T>>, Eigen::Ref<VecT<T>>);                      \
  template void gelu_forward<T>(const RowMatT<T>&, RowMatT<T>&, RowMatT<T>&);                                        \
  template void gelu_backward<T>(const RowMatT<T>&, const RowMatT<T>&, RowMatT<T>&);                                 \
  template void attention_head_forward<T>(const HeadSpec&, const ConstRowBlockT<T>&, const ConstRowBlockT<T>&,       \
                                          const ConstRowBlockT<T>&, RowBlockT<T>, RowBlockT<T>, RowBlockT<T>);       \
  template void attention_head_backward<T>(const HeadSpec&, const ConstRowBlockT<T>&, const ConstRowBlockT<T>&,      \
                                           const ConstRowBlockT<T>&, const ConstRowBlockT<T>&,                       \
                                           const ConstRowBlockT<T>&, const ConstRowBlockT<T>&, RowBlockT<T>,         \
                                           RowBlockT<T>, RowBlockT<T>);                                              \
  template class BasicTransformer<T>;

HDAT_SINKS_INSTANTIATE(double)
HDAT_SINKS_INSTANTIATE(float)
#undef HDAT_SINKS_INSTANTIATE

}  // namespace hdat::sinks
