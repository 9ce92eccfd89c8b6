#pragma once
// A small transformer for the attention-sink experiments of spec/polarization.md ("Transformer
// experiments"): token and learned positional embeddings, pre-LayerNorm blocks with multi-head
// attention of an interchangeable kind and a GELU MLP, a final LayerNorm and a linear head.
//
// Every layer has a hand-written backward pass (tests/attention_sinks checks each one against finite
// differences). All parameters live in one flat vector θ with named blocks (hdat::StateLayout), so
// the optimiser is one loop and a gradient check can perturb any coordinate by name.
//
// Shapes: N = B·L token rows (sequence b occupies rows b·L .. b·L+L−1), width d, H heads of
// d_h = d/H columns each; activations are row-major N × (features).
#include <Eigen/Dense>
#include <string>
#include <vector>

#include "hdat/core/layout.hpp"
#include "hdat/core/random.hpp"

namespace hdat::sinks {

using RowMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowBlock = Eigen::Ref<RowMat, 0, Eigen::OuterStride<>>;
using ConstRowBlock = Eigen::Ref<const RowMat, 0, Eigen::OuterStride<>>;

/// How attention weights α_ij are made from queries and keys (scores s_ij = q_i·k_j/√d_h unless
/// stated). "_norm" kinds divide by the row sum over the visible keys (plus norm_eps where f can
/// vanish); "_unnorm" kinds use f(s_ij) element-wise, with no competition between keys.
enum class AttentionKind {
  softmax,         ///< exp(s_ij) / Σ_j exp(s_ij) (log-sum-exp)
  sigmoid_norm,    ///< σ(s_ij) / Σ_j σ(s_ij)
  sigmoid_unnorm,  ///< σ(s_ij)
  linear_norm,     ///< φ(q_i)·φ(k_j) / Σ_j φ(q_i)·φ(k_j), φ = elu + 1 on the head's features (no 1/√d_h)
  linear_unnorm,   ///< φ(q_i)·φ(k_j)
  elu_norm,        ///< (elu(s_ij) + 1) / Σ_j (elu + 1)
  elu_unnorm,      ///< elu(s_ij) + 1
  relu_norm,       ///< relu(s_ij) / (Σ_j relu(s_ij) + ε)        (value-softmax spec: normalised ReLU)
  relu_unnorm,     ///< relu(s_ij)                                (value-softmax spec: element-wise ReLU)
  square_norm,     ///< s_ij² / (Σ_j s_ij² + ε)                  (value-softmax spec: f(x) = x²)
  abs_norm,        ///< |s_ij| / (Σ_j |s_ij| + ε)                 (value-softmax spec: l1)
  uniform,         ///< 1 / (number of visible keys): a control without query-key dependence
};

AttentionKind parse_attention(const std::string& name);  // InputError("attention", ...) if unknown
std::string attention_name(AttentionKind kind);
std::vector<std::string> attention_names();
/// Row-normalised kinds (weights of a row sum to 1, up to ε).
bool is_normalised(AttentionKind kind);

enum class Positions { add, concat, none };
Positions parse_positions(const std::string& name);
std::string positions_name(Positions p);

struct Config {
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
  double norm_eps = 1e-9;   ///< ε of the row normalisations whose f can vanish (relu, square, abs)
};
void check_config(const Config& c);  // std::invalid_argument on inconsistent shapes

// ---- Layers (free functions so that each one is checked on its own against finite differences) ----

/// y = γ ⊙ x̂ + β row by row, x̂ = (x − mean)/√(var + ε) (biased variance, as PyTorch).
/// Keeps x̂ and 1/√(var + ε) for the backward pass.
void layer_norm_forward(const RowMat& x, const Eigen::Ref<const Eigen::VectorXd>& gamma,
                        const Eigen::Ref<const Eigen::VectorXd>& beta, double eps, RowMat& y, RowMat& xhat,
                        Eigen::VectorXd& inv_sigma);
/// dx = (1/σ)(g − mean(g) − x̂ mean(g ⊙ x̂)) with g = dy ⊙ γ; dγ += Σ_rows dy ⊙ x̂; dβ += Σ_rows dy.
/// dx is ADDED to (residual streams accumulate).
void layer_norm_backward(const RowMat& dy, const RowMat& xhat, const Eigen::VectorXd& inv_sigma,
                         const Eigen::Ref<const Eigen::VectorXd>& gamma, RowMat& dx,
                         Eigen::Ref<Eigen::VectorXd> dgamma, Eigen::Ref<Eigen::VectorXd> dbeta);

/// Exact GELU x Φ(x) (PyTorch's default), its derivative Φ(x) + x φ(x).
double gelu(double x);
double gelu_derivative(double x);

/// One head on one sequence: q, k, v are L × d_h. Writes the scores S (L × L; for linear kinds
/// φ(q)φ(k)ᵀ), the weights A (L × L, zero above the diagonal when causal) and the output O = A v.
void attention_head_forward(AttentionKind kind, bool causal, double norm_eps, const ConstRowBlock& q,
                            const ConstRowBlock& k, const ConstRowBlock& v, RowBlock S, RowBlock A, RowBlock O);
/// Backward of attention_head_forward: given dO, writes dq, dk, dv (overwritten).
void attention_head_backward(AttentionKind kind, bool causal, double norm_eps, const ConstRowBlock& q,
                             const ConstRowBlock& k, const ConstRowBlock& v, const ConstRowBlock& S,
                             const ConstRowBlock& A, const ConstRowBlock& dO, RowBlock dq, RowBlock dk,
                             RowBlock dv);

// ---- The model ----

class Transformer {
 public:
  explicit Transformer(const Config& config);

  const Config& config() const { return config_; }
  const StateLayout& layout() const { return layout_; }
  Eigen::VectorXd& theta() { return theta_; }
  const Eigen::VectorXd& theta() const { return theta_; }
  int n_parameters() const { return layout_.size(); }

  /// PyTorch's default initialisation: embeddings N(0, 1); linear weights and biases
  /// U(−1/√fan_in, 1/√fan_in); LayerNorm γ = 1, β = 0.
  void initialize(rng::Engine& engine);

  /// Forward pass on B sequences of length L (tokens row by row, sequence-major). Returns the
  /// logits (N × n_out); keeps every activation the backward pass needs.
  const RowMat& forward(const std::vector<int>& tokens, int B, int L);
  /// Gradient of Σ_rows <dlogits, logits> with respect to θ, for the last forward pass.
  void backward(const RowMat& dlogits, Eigen::VectorXd& grad);

  /// Attention weights of the last forward pass: layer l, sequence b, head h (L × L).
  Eigen::Map<const RowMat> attention(int l, int b, int h) const;
  /// Values of head h in layer l for sequence b (L × d_h, before the output projection).
  ConstRowBlock values(int l, int b, int h) const;
  const RowMat& logits() const { return logits_; }
  int batch() const { return B_; }
  int length() const { return L_; }

 private:
  struct LayerBlocks {
    Block ln1_g, ln1_b, Wqkv, bqkv, Wo, bo, ln2_g, ln2_b, W1, c1, W2, c2;
  };
  struct LayerCache {
    RowMat xhat1, u, qkv, z, xhat2, m, h1, Phi, g;
    Eigen::VectorXd isig1, isig2;
    RowMat S, A;  // (B·H·L) × L: block (b·H + h)·L holds one head's L × L matrix
  };
  void resize(int B, int L);

  Config config_;
  StateLayout layout_;
  Eigen::VectorXd theta_;
  Block E_, P_, lnf_g_, lnf_b_, Wout_, bout_;
  std::vector<LayerBlocks> blocks_;

  int B_ = 0, L_ = 0;
  std::vector<int> tokens_;
  RowMat x_;                      // residual stream
  std::vector<LayerCache> cache_;
  RowMat xhatf_, yf_, logits_;
  Eigen::VectorXd isigf_;
  RowMat dx_, du_, dqkv_, dz_, dm_, dh_;  // backward buffers
};

}  // namespace hdat::sinks
