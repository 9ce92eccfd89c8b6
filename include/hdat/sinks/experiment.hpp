#pragma once
// Training and evaluation of one transformer on one task: AdamW, the loss, the metrics of the
// attention-sink experiments and the attention maps in the `geometry` file format.
// Options in, Summary out: run_experiment() touches no file; the `sinks` model writes its result.
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hdat/core/table.hpp"
#include "hdat/sinks/tasks.hpp"
#include "hdat/sinks/transformer.hpp"

namespace hdat::sinks {

/// AdamW as in PyTorch (decoupled weight decay θ ← θ − lr·λ·θ, then the bias-corrected Adam step).
struct AdamWOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.01;
};

/// The optimiser in the precision of the parameters it updates (moments too, as PyTorch's).
template <class T>
class BasicAdamW {
 public:
  BasicAdamW(int n, const AdamWOptions& options);
  void step(VecT<T>& theta, const VecT<T>& grad);
  long steps() const { return t_; }

 private:
  AdamWOptions o_;
  VecT<T> m_, v_;
  long t_ = 0;
};
using AdamW = BasicAdamW<double>;

/// Σ_rows w_r · (log Σ_c e^{z_rc} − z_r,target) over the rows with a target (log-sum-exp), and,
/// when dlogits is given, its gradient w_r (softmax(z_r) − e_target). The sum is accumulated in double.
template <class T>
double cross_entropy(const RowMatT<T>& logits, const Batch& batch, std::type_identity_t<RowMatT<T>>* dlogits);

enum class Task { induction, classification };

/// Scalar type of the parameters and activations: float64 (the reference) or float32 (≈ 3× faster;
/// PyTorch's default, the authors' precision).
enum class Precision { float64, float32 };

/// How training batches are drawn from the pool of n_train sequences.
enum class Batching {
  cyclic,  ///< every batch has `batch` sequences; the pool is reshuffled whenever it is used up, so a batch may span two epochs
  epochs,  ///< each epoch is one permutation of the pool cut into batches; the last one is short (n_train mod batch), as PyTorch's DataLoader(shuffle=True)
};

struct Config {
  Task task = Task::induction;
  InductionTask induction;
  ClassificationTask classification;
  TransformerConfig model;  ///< vocab, n_out and max_len are set from the task
  AdamWOptions adam;
  Precision precision = Precision::float64;
  int steps = 3000, batch = 64;  ///< steps = batches (a short last batch of an epoch counts as one)
  int n_train = 100000;  ///< fixed training pool, reshuffled every epoch; 0: fresh sequences every step
  Batching batching = Batching::cyclic;
  int n_eval = 1000;
  int eval_every = 250;
  int flip_pairs = 500;       ///< pairs of the token-flip test (classification)
  int export_sequences = 2;   ///< evaluation sequences whose attention maps are exported
  std::uint64_t seed = 0;
  double sink_threshold = 0.9;
  double accuracy_threshold = 0.95;
  bool quiet = true;
  /// Observer of the training stream (e.g. to replay it in another implementation): called with
  /// every training batch before its step, and with the parameters after initialisation (as double).
  std::function<void(long step, const Batch& batch)> on_batch;
  std::function<void(const StateLayout& layout, const Eigen::VectorXd& theta)> on_initialised;
  std::function<void(const Batch& eval)> on_evaluation_set;
};

struct HeadMetrics {
  int layer = 0, head = 0;
  double sink_score = 0;  ///< induction: mass on BOS over rows 1 .. L−3 (NaN for classification)
  double sparsity = 0;    ///< mean largest share of a row
  double flip_rate = 0;   ///< classification: prediction follows the single flipped token (NaN for induction)
};

struct ExperimentResult {
  std::string status = "ok";  ///< ok | diverged | interrupted
  long steps_done = 0;
  double train_seconds = 0, steps_per_second = 0;
  int n_parameters = 0;
  Table curve;  ///< step, train_loss, eval_loss, accuracy
  double accuracy = 0, eval_loss = 0;
  std::vector<HeadMetrics> heads;  ///< layer-major
  double sink_share = 0;       ///< share of last-layer heads with sink score > threshold
  int sink_heads = 0;          ///< their number
  double sink_score_mean = 0;  ///< mean sink score of the last layer's heads
  bool above_accuracy = false; ///< accuracy > accuracy_threshold: the model counts in the sink statistics
  double sparsity_mean = 0;    ///< over all heads
  double flip_rate_mean = 0;   ///< over the last layer's heads (classification)
  std::vector<RowMat> mean_maps;  ///< per (layer, head): attention weights averaged over the evaluation set
  nlohmann::json maps;            ///< {"maps": [...]} in the geometry format
};

/// Build the model from the options, train it and evaluate it.
ExperimentResult run_experiment(const Config& options);

/// The model configuration the experiment uses (vocabulary, outputs and length from the task).
TransformerConfig model_config(const Config& options);

}  // namespace hdat::sinks
