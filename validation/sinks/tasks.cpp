#include "hdat/sinks/tasks.hpp"

#include <boost/random/uniform_int_distribution.hpp>
#include <numeric>
#include <utility>

#include "hdat/core/error.hpp"

namespace hdat::sinks {

namespace {

// The first n entries of a uniformly random permutation of `pool` (partial Fisher–Yates).
void draw_distinct(rng::Engine& e, std::vector<int>& pool, int n) {
  for (int i = 0; i < n; ++i) std::swap(pool[i], pool[uniform_int(e, i, int(pool.size()) - 1)]);
}
}  // namespace

void Batch::resize(int b, int l) {
  B = b;
  L = l;
  tokens.assign(std::size_t(b) * l, 0);
  targets.assign(std::size_t(b) * l, -1);
  weights.assign(std::size_t(b) * l, 0.0);
  answer.assign(b, -1);
}

void Batch::copy_sequence(const Batch& from, int i, int j) {
  for (int t = 0; t < L; ++t) {
    tokens[j * L + t] = from.tokens[i * L + t];
    targets[j * L + t] = from.targets[i * L + t];
    // Weights are normalised per batch (means over its sequences): rescale to this batch's size.
    weights[j * L + t] = from.weights[i * L + t] * double(from.B) / double(B);
  }
  answer[j] = from.answer[i];
}

void InductionTask::check() const {
  if (n_tokens < 2) throw InputError("n_tokens", "the induction task needs at least 2 tokens");
  if (vocab - 1 < n_tokens) throw InputError("vocab", "needs at least n_tokens + 1 ids (BOS + distinct tokens)");
}

void InductionTask::sample(rng::Engine& engine, int B, Batch& out) const {
  const int n = n_tokens, L = length();
  out.resize(B, L);
  std::vector<int> pool(vocab - 1);
  std::iota(pool.begin(), pool.end(), 1);
  // Weights: the main loss is the mean over sequences; the auxiliary one the mean over the L−1
  // earlier positions of every sequence, times aux_weight.
  const double w_main = 1.0 / B, w_aux = aux_weight / (double(B) * (L - 1));
  for (int b = 0; b < B; ++b) {
    draw_distinct(engine, pool, n);
    const int k = uniform_int(engine, 1, query_last ? n : n - 1);  // q = t_k, 1-based
    const int q = pool[k - 1] + (shift_query ? vocab : 0);
    const int c = k < n ? pool[k] : q;  // the successor t_{k+1}; past the end, the query itself
    int* tok = &out.tokens[b * L];
    int* tgt = &out.targets[b * L];
    double* w = &out.weights[b * L];
    tok[0] = 0;
    for (int i = 0; i < n; ++i) tok[i + 1] = pool[i];
    tok[n + 1] = q;
    for (int i = 0; i < L - 1; ++i) {
      tgt[i] = tok[i + 1];
      w[i] = w_aux;
    }
    tgt[L - 1] = c;
    w[L - 1] = w_main;
    out.answer[b] = c;
  }
}

void ClassificationTask::check() const {
  if (classes < 2) throw InputError("classes", "the classification task needs at least 2 classes");
  if (n_tokens < 2 || n_tokens > group_size)
    throw InputError("n_tokens", "the classification task needs 2 <= n_tokens <= group_size");
}

void ClassificationTask::set_sequence(Batch& out, int j, const std::vector<int>& content, int y) const {
  const int L = length();
  for (int t = 0; t < L; ++t) {
    out.tokens[j * L + t] = t < n_tokens ? content[t] : 0;
    out.targets[j * L + t] = -1;
    out.weights[j * L + t] = 0.0;
  }
  out.targets[j * L + L - 1] = y;
  out.weights[j * L + L - 1] = 1.0 / out.B;
  out.answer[j] = y;
}

void ClassificationTask::sample(rng::Engine& engine, int B, Batch& out) const {
  out.resize(B, length());
  std::vector<int> pool(group_size), content(n_tokens);
  for (int b = 0; b < B; ++b) {
    const int y = uniform_int(engine, 0, classes - 1);
    std::iota(pool.begin(), pool.end(), 1 + y * group_size);
    draw_distinct(engine, pool, n_tokens);
    std::copy(pool.begin(), pool.begin() + n_tokens, content.begin());
    set_sequence(out, b, content, y);
  }
}

int uniform_int(rng::Engine& e, int lo, int hi) { return boost::random::uniform_int_distribution<int>(lo, hi)(e); }

}  // namespace hdat::sinks
