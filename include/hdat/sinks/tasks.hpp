#pragma once
// The two tasks of the attention-sink experiments (spec/polarization.md, "Transformer experiments").
//
// Induction heads: [BOS, t_1 .. t_n, q] with n distinct tokens from 1 .. vocab−1, q = t_k for a
// uniform k in 1 .. n−1 (optionally shifted to a separate id range: q = t_k + vocab), and the target
// c = t_{k+1} predicted at the query position. The auxiliary loss (weight aux_weight) is next-token
// prediction at the earlier positions (targets t_1 .. t_n, q); it is unpredictable except for the
// no-repeat constraint and for q, and mainly shapes the early layers.
// By default k stops at n−1 so that the successor exists; with query_last (the authors' data) k runs
// to n, and for k = n (1/n of the sequences) the target is the query token q itself, a case the
// spec's "predict the successor" does not cover.
//
// Token-group classification: C classes of G token ids each (ids 1 + y·G .. (y+1)·G; 0 = CLS);
// a sequence holds n distinct tokens of one class followed by CLS, and the label is read at CLS.
#include <vector>

#include "hdat/core/random.hpp"

namespace hdat::sinks {

/// B sequences of length L, row-major; targets per row (−1: no loss), loss weight per row.
struct Batch {
  int B = 0, L = 0;
  std::vector<int> tokens, targets;
  std::vector<double> weights;
  std::vector<int> answer;  ///< per sequence: the target at the scored position (successor or label)
  void resize(int b, int l);
  /// Copy sequence i of `from` into slot j of this batch (same L; loss weights rescaled by from.B / B).
  void copy_sequence(const Batch& from, int i, int j);
};

struct InductionTask {
  int vocab = 50;           ///< ids 0 .. vocab−1, 0 = BOS
  int n_tokens = 10;        ///< n distinct tokens per sequence
  bool shift_query = false; ///< q = t_k + vocab (input and output vocabulary 2·vocab)
  bool query_last = false;  ///< k may be n; then the target is q itself (the authors' data)
  double aux_weight = 0.2;  ///< weight of the mean cross-entropy at the earlier positions
  int length() const { return n_tokens + 2; }
  int input_vocab() const { return shift_query ? 2 * vocab : vocab; }
  int n_out() const { return input_vocab(); }
  void check() const;  // InputError on impossible settings
  void sample(rng::Engine& engine, int B, Batch& out) const;
};

struct ClassificationTask {
  int classes = 4;
  int group_size = 10;  ///< G token ids per class
  int n_tokens = 10;    ///< n ≤ G distinct tokens per sequence, then CLS
  int length() const { return n_tokens + 1; }
  int input_vocab() const { return 1 + classes * group_size; }
  int n_out() const { return classes; }
  int label_of(int token) const { return (token - 1) / group_size; }
  void check() const;
  void sample(rng::Engine& engine, int B, Batch& out) const;
  /// Fill sequence j of `out` with the given content tokens and CLS, label y (weights as sample()).
  void set_sequence(Batch& out, int j, const std::vector<int>& content, int y) const;
};

/// A uniform integer in [lo, hi].
int uniform_int(rng::Engine& e, int lo, int hi);

}  // namespace hdat::sinks
