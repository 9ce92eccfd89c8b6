#pragma once
// The Llama forward pass of a llama2.c checkpoint, in double or float (Scalar), with capture of what
// the geometry analysis needs: per layer and query head the attention weights α, per key/value head
// the value vectors v (before the output projection), and each head's write into the residual stream.
//
// Per layer (x: residual stream, one column per position p):
//   h = x / sqrt(mean(x²) + 1e-5) ⊙ rms_att;  q = W_q h, k = W_k h, v = W_v h;
//   RoPE on q, k per head on adjacent pairs (2i, 2i+1), angle p θ_i, θ_i = 10000^(−2i/head_size);
//   query head h uses key/value head h // (n_heads / n_kv_heads);  α = causal softmax(q·k / sqrt(head_size));
//   x += W_o concat_h(Σ_i α_i v_i);  h = rmsnorm(x) ⊙ rms_ffn;  x += W_2 (silu(W_1 h) ⊙ W_3 h).
// logits = W_cls (rmsnorm(x) ⊙ rms_final).
#include <Eigen/Dense>
#include <span>
#include <vector>

#include "hdat/llama/checkpoint.hpp"

namespace hdat::llama {

inline constexpr int kBos = 1, kEos = 2;
inline constexpr double kRmsEpsilon = 1e-5;

/// Conventions of the forward pass. The defaults are the checkpoint's; the alternatives exist so that
/// the verification can show it detects a wrong convention (tests run them and expect failure).
struct ForwardOptions {
  enum class RopePairing { adjacent, half_split };  ///< llama2.c (2i, 2i+1) vs NEOX (i, i + hs/2)
  enum class RopeTable { computed, file };          ///< cos/sin in double, or the file's float32 table
  enum class KvMapping { grouped, interleaved };    ///< query head h -> kv head h // group, or h % n_kv
  RopePairing rope_pairing = RopePairing::adjacent;
  RopeTable rope_table = RopeTable::computed;
  KvMapping kv_mapping = KvMapping::grouped;
};

/// What one layer's attention did over a sequence of T positions (always double).
struct LayerCapture {
  std::vector<Eigen::MatrixXd> alpha;   ///< per query head: T × T, column t = α over sources 0..t (zero below)
  std::vector<Eigen::MatrixXd> values;  ///< per key/value head: head_size × T, column i = v_i
  Eigen::MatrixXd head_write_norm;      ///< n_heads × T: |W_o[:, head h] o_h(t)|, the head's write into x
};
struct Capture {
  std::vector<LayerCapture> layers;
  std::vector<int> kv_head;  ///< query head -> its key/value head (the mapping the pass used)
};

/// Multiplies each head's output before W_o (n_layers × n_heads); 0 removes a head.
using HeadGates = Eigen::MatrixXd;

template <class Scalar>
class Transformer {
 public:
  using Matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;
  using Vector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;

  explicit Transformer(const Checkpoint& checkpoint, ForwardOptions options = {});
  const Config& config() const { return config_; }
  const ForwardOptions& options() const { return options_; }
  int kv_head(int h) const;

  /// Full causal pass over `tokens` (1 ≤ T ≤ seq_len): logits, vocab × T, column t predicts token t+1.
  /// Fills `capture` when given; `gates` (n_layers × n_heads) scales head outputs when given.
  Eigen::MatrixXd forward(std::span<const int> tokens, Capture* capture = nullptr, const HeadGates* gates = nullptr) const;

  /// Incremental decoding with a key/value cache: one position per call.
  class Session {
   public:
    explicit Session(const Transformer& model);
    /// Logits after feeding `token` at the next position (InputError past seq_len).
    Eigen::VectorXd step(int token);
    int position() const { return pos_; }

   private:
    const Transformer& m_;
    int pos_ = 0;
    std::vector<Matrix> k_cache_, v_cache_;  // per layer: kv_dim × seq_len
  };

 private:
  friend class Session;
  struct Layer {
    Vector rms_att, rms_ffn;
    Matrix wq, wk, wv, wo, w1, w2, w3;
  };
  void rope(Eigen::Ref<Matrix> x, int n_heads_in_x, int first_position) const;
  void check_tokens(std::span<const int> tokens) const;

  Config config_;
  ForwardOptions options_;
  Matrix embedding_, classifier_;
  Vector rms_final_;
  std::vector<Layer> layers_;
  Matrix cos_, sin_;  // seq_len × head_size/2
};

extern template class Transformer<double>;
extern template class Transformer<float>;

/// Column-wise log-softmax of logits (log-sum-exp).
Eigen::VectorXd log_softmax(const Eigen::Ref<const Eigen::VectorXd>& logits);

/// Mean negative log-likelihood (nats per token) of tokens[1..T−1] given the logits of a full pass.
double mean_nll(const Eigen::Ref<const Eigen::MatrixXd>& logits, std::span<const int> tokens);
/// Per-position NLLs, −log p(tokens[t+1] | tokens[0..t]), t = 0..T−2.
Eigen::VectorXd token_nll(const Eigen::Ref<const Eigen::MatrixXd>& logits, std::span<const int> tokens);

}  // namespace hdat::llama
