#pragma once
// A small transformer for the attention-sink experiments of spec/polarization.md ("Transformer
// experiments"): token and learned positional embeddings, pre-LayerNorm blocks with multi-head
// attention of an interchangeable kind and a GELU MLP, a final LayerNorm and a linear head.
//
// Every layer has a hand-written backward pass (tests/sinks checks each one against finite
// differences). All parameters live in one flat vector θ with named blocks (hdat::StateLayout), so
// the optimiser is one loop and a gradient check can perturb any coordinate by name.
//
// Precision: everything is a template on the scalar T, instantiated for double (the reference, used
// by the gradient checks) and float (the fast path; tests compare it with double).
//
// Shapes: N = B·L token rows (sequence b occupies rows b·L .. b·L+L−1), width d, H heads of
// d_h = d/H columns each; activations are row-major N × (features).
#include <Eigen/Dense>
#include <string>
#include <type_traits>
#include <vector>

#include "hdat/core/layout.hpp"
#include "hdat/core/random.hpp"

namespace hdat::sinks {

template <class T>
using RowMatT = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using VecT = Eigen::Matrix<T, Eigen::Dynamic, 1>;
template <class T>
using RowBlockT = Eigen::Ref<RowMatT<T>, 0, Eigen::OuterStride<>>;
template <class T>
using ConstRowBlockT = Eigen::Ref<const RowMatT<T>, 0, Eigen::OuterStride<>>;
using RowMat = RowMatT<double>;
using RowBlock = RowBlockT<double>;
using ConstRowBlock = ConstRowBlockT<double>;

/// How attention weights α_ij are made from queries and keys (scores s_ij = q_i·k_j/√d_h unless
/// stated). "_norm" kinds divide by a row statistic over the visible keys; "_unnorm" kinds use
/// f(s_ij) element-wise, with no competition between keys. The names in brackets are the authors'
/// (tml-epfl/softmax, src/attention.py) where they differ; docs/sinks.md maps them to the
/// labels of the paper's figure.
enum class AttentionKind {
  softmax,         ///< exp(s_ij) / Σ_j exp(s_ij) (log-sum-exp)
  sigmoid_norm,    ///< σ(s_ij) / (Σ_j σ(s_ij) + ε)
  sigmoid_unnorm,  ///< σ(s_ij)
  linear_norm,     ///< φ(q_i)·φ(k_j) / (Σ_j φ(q_i)·φ(k_j) + ε), φ = elu + 1 on the head's features, no 1/√d_h [linear]
  linear_unnorm,   ///< φ(q_i)·φ(k_j)                                                                   [linear_unnorm]
  elu_norm,        ///< (elu(s_ij) + 1) / (Σ_j (elu + 1) + ε)                                           [coupled_linear_norm]
  elu_unnorm,      ///< elu(s_ij) + 1                                                                   [coupled_linear_unnorm]
  raw_dotproduct_norm,    ///< s_ij / max(|Σ_j s_ij|, 1): signed weights                                  [raw_dotproduct_norm]
  raw_dotproduct_unnorm,  ///< s_ij                                                                       [raw_dotproduct_unnorm]
  relu_norm,       ///< relu(s_ij) / (Σ_j relu(s_ij) + ε)        (value-softmax spec: normalised ReLU)
  relu_unnorm,     ///< relu(s_ij)                                (value-softmax spec: element-wise ReLU)
  square_norm,     ///< s_ij² / (Σ_j s_ij² + ε)                  (value-softmax spec: f(x) = x²)
  abs_norm,        ///< |s_ij| / (Σ_j |s_ij| + ε)                 (value-softmax spec: l1)
  uniform,         ///< 1 / (number of visible keys): a control without query-key dependence
};

/// The kind of a name; the authors' names (coupled_linear_norm, ...) are accepted as aliases.
AttentionKind parse_attention(const std::string& name);  // InputError("attention", ...) if unknown
std::string attention_name(AttentionKind kind);           // hdat's name
std::vector<std::string> attention_names();               // every accepted name, aliases included
/// Kinds whose weights are divided by a row statistic (the "_norm" kinds and softmax).
bool is_normalised(AttentionKind kind);
/// Kinds whose weights are non-negative and, when normalised, sum to 1 over a row (all but raw_dotproduct).
bool is_positive(AttentionKind kind);
/// Kinds of the form f/(Σ_j f + ε), to which norm_eps applies (sigmoid, linear, elu, relu _norm; square, abs).
bool has_row_sum(AttentionKind kind);
/// Those whose row sum can vanish (relu_norm, square_norm, abs_norm): their ε must be > 0.
bool row_sum_can_vanish(AttentionKind kind);

enum class Positions { add, concat, none };
Positions parse_positions(const std::string& name);
std::string positions_name(Positions p);

struct TransformerConfig {
  int vocab = 50;        ///< input token ids 0 .. vocab−1
  int n_out = 50;        ///< outputs of the head (next-token vocabulary or classes)
  int max_len = 16;      ///< positions with a learned embedding
  int width = 64;        ///< d
  int heads = 4;         ///< H (divides d)
  int layers = 2;
  int mlp_hidden = 256;  ///< hidden units of the GELU MLP
  Positions positions = Positions::concat;
  bool causal = true;
  AttentionKind attention = AttentionKind::softmax;
  double ln_eps = 1e-5;     ///< LayerNorm: (x − μ)/√(var + ε), as in PyTorch
  double norm_eps = 1e-9;   ///< ε added to the row sum Σ_j f of every f/Σf kind (the authors' 1e-9); > 0 where f can vanish
};
void check_config(const TransformerConfig& c);  // std::invalid_argument on inconsistent shapes

/// Settings of one attention head (the part of TransformerConfig the head needs).
struct HeadSpec {
  AttentionKind kind = AttentionKind::softmax;
  bool causal = true;
  double norm_eps = 1e-9;
  /// ε added to the row sum of this kind (0 where the kind has none: softmax, raw_dotproduct, unnormalised, uniform).
  double row_eps() const;
};
HeadSpec head_spec(const TransformerConfig& c);

// ---- Layers (free functions so that each one is checked on its own against finite differences) ----

/// y = γ ⊙ x̂ + β row by row, x̂ = (x − mean)/√(var + ε) (biased variance, as PyTorch).
/// Keeps x̂ and 1/√(var + ε) for the backward pass. The outputs have the shape of x (rows × d, rows).
template <class T>
void layer_norm_forward(const ConstRowBlockT<T>& x, const Eigen::Ref<const VecT<T>>& gamma,
                        const Eigen::Ref<const VecT<T>>& beta, double eps, RowBlockT<T> y, RowBlockT<T> xhat,
                        Eigen::Ref<VecT<T>> inv_sigma);
/// dx = (1/σ)(g − mean(g) − x̂ mean(g ⊙ x̂)) with g = dy ⊙ γ; dγ += Σ_rows dy ⊙ x̂; dβ += Σ_rows dy.
/// dx is ADDED to (residual streams accumulate).
template <class T>
void layer_norm_backward(const ConstRowBlockT<T>& dy, const ConstRowBlockT<T>& xhat,
                         const Eigen::Ref<const VecT<T>>& inv_sigma, const Eigen::Ref<const VecT<T>>& gamma,
                         RowBlockT<T> dx, Eigen::Ref<VecT<T>> dgamma, Eigen::Ref<VecT<T>> dbeta);

/// Exact GELU x Φ(x) (PyTorch's default), its derivative Φ(x) + x φ(x).
double gelu(double x);
double gelu_derivative(double x);
/// Element-wise on a whole activation: Φ(h) and GELU(h) = h Φ(h) (vectorised erf for float).
template <class T>
void gelu_forward(const RowMatT<T>& h, RowMatT<T>& Phi, RowMatT<T>& g);
/// dh ⊙= GELU'(h) = Φ(h) + h φ(h).
template <class T>
void gelu_backward(const RowMatT<T>& h, const RowMatT<T>& Phi, RowMatT<T>& dh);

/// One head on one sequence: q, k, v are L × d_h. Writes the scores S (L × L; for linear kinds
/// φ(q)φ(k)ᵀ), the weights A (L × L, zero above the diagonal when causal) and the output O = A v.
template <class T>
void attention_head_forward(const HeadSpec& spec, const ConstRowBlockT<T>& q, const ConstRowBlockT<T>& k,
                            const ConstRowBlockT<T>& v, RowBlockT<T> S, RowBlockT<T> A, RowBlockT<T> O);
/// Backward of attention_head_forward: given dO, writes dq, dk, dv (overwritten).
template <class T>
void attention_head_backward(const HeadSpec& spec, const ConstRowBlockT<T>& q, const ConstRowBlockT<T>& k,
                             const ConstRowBlockT<T>& v, const ConstRowBlockT<T>& S, const ConstRowBlockT<T>& A,
                             const ConstRowBlockT<T>& dO, RowBlockT<T> dq, RowBlockT<T> dk, RowBlockT<T> dv);

// ---- The model ----

template <class T>
class BasicTransformer {
 public:
  using Scalar = T;
  using Mat = RowMatT<T>;
  using Vec = VecT<T>;

  explicit BasicTransformer(const TransformerConfig& config);

  const TransformerConfig& config() const { return config_; }
  const StateLayout& layout() const { return layout_; }
  Vec& theta() { return theta_; }
  const Vec& theta() const { return theta_; }
  int n_parameters() const { return layout_.size(); }

  /// PyTorch's default initialisation: embeddings N(0, 1); linear weights and biases
  /// U(−1/√fan_in, 1/√fan_in); LayerNorm γ = 1, β = 0. Drawn in double, so that a float and a double
  /// model initialised from the same engine start from the same parameters (rounded).
  void initialize(rng::Engine& engine);

  /// Forward pass on B sequences of length L (tokens row by row, sequence-major). Returns the
  /// logits (N × n_out); keeps every activation the backward pass needs.
  const Mat& forward(const std::vector<int>& tokens, int B, int L);
  /// Gradient of Σ_rows <dlogits, logits> with respect to θ, for the last forward pass.
  void backward(const Mat& dlogits, Vec& grad);

  /// Attention weights of the last forward pass: layer l, sequence b, head h (L × L).
  Eigen::Map<const Mat> attention(int l, int b, int h) const;
  /// Values of head h in layer l for sequence b (L × d_h, before the output projection).
  ConstRowBlockT<T> values(int l, int b, int h) const;
  const Mat& logits() const { return logits_; }
  int batch() const { return B_; }
  int length() const { return L_; }

 private:
  struct LayerBlocks {
    Block ln1_g, ln1_b, Wqkv, bqkv, Wo, bo, ln2_g, ln2_b, W1, c1, W2, c2;
  };
  struct LayerCache {
    Mat xhat1, u, qkv, z, xhat2, m, h1, Phi, g;  // layer 0: xhat1, u, isig1 of the distinct input rows only
    Vec isig1, isig2;
    Mat S, A;  // (B·H·L) × L: block (b·H + h)·L holds one head's L × L matrix
  };
  void resize(int B, int L);
  void find_distinct_inputs(const std::vector<int>& tokens, int L);
  void embedding_backward(T* grad);

  TransformerConfig config_;
  HeadSpec head_;
  StateLayout layout_;
  Vec theta_;
  Block E_, P_, lnf_g_, lnf_b_, Wout_, bout_;
  std::vector<LayerBlocks> blocks_;

  int B_ = 0, L_ = 0;
  std::vector<int> tokens_;
  Mat x_;                      // residual stream
  std::vector<LayerCache> cache_;
  Mat xhatf_, yf_, logits_;
  Vec isigf_;
  Mat dx_, du_, dqkv_, dz_, dm_, dh_;  // backward buffers

  // The input of a row is its (token, position) pair, and so are the first layer's LayerNorm and
  // q, k, v: they are computed once per distinct pair (rows 0 .. U−1 of the buffers below, which
  // have room for N) and copied to the rows (a batch of 256 induction sequences has ~540 distinct
  // pairs among its 3072 rows).
  int U_ = 0;
  std::vector<int> distinct_of_row_, distinct_token_, distinct_pos_, slot_of_pair_;
  Mat x0_, qkv0_, dqkv0_, du0_, dx0_;
};

using Transformer = BasicTransformer<double>;
using Transformer32 = BasicTransformer<float>;

}  // namespace hdat::sinks
