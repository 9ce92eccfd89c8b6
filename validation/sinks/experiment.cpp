#include "hdat/sinks/experiment.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/random/uniform_int_distribution.hpp>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>

#include "hdat/core/progress.hpp"
#include "hdat/sinks/metrics.hpp"
#include "hdat/core/constants.hpp"
#include "hdat/sinks/tasks.hpp"

namespace hdat::sinks {

namespace {


int task_length(const Config& o) {
  return o.task == Task::induction ? o.induction.length() : o.classification.length();
}

void sample(const Config& o, rng::Engine& e, int B, Batch& out) {
  if (o.task == Task::induction)
    o.induction.sample(e, B, out);
  else
    o.classification.sample(e, B, out);
}

// Predicted class at the scored (last) position of sequence b.
template <class Mat>
int prediction(const Mat& logits, int b, int L) {
  Eigen::Index arg;
  logits.row(b * L + L - 1).maxCoeff(&arg);
  return int(arg);
}

struct Evaluation {
  double loss = 0, accuracy = 0;
  std::vector<double> sink, sparsity;  // per (layer, head), means over sequences
  std::vector<RowMat> mean_maps;
  std::vector<int> top_content;        // classification: per (sequence, layer, head), the top content key at CLS
};

// Loss and accuracy on the evaluation set, in chunks; with `full` also the map metrics.
template <class Model>
Evaluation evaluate(Model& model, const Config& o, const Batch& eval, bool full) {
  const int L = eval.L, n = eval.B, layers = model.config().layers, H = model.config().heads;
  const int chunk = std::min(n, 256);
  Evaluation ev;
  if (full) {
    ev.sink.assign(layers * H, 0.0);
    ev.sparsity.assign(layers * H, 0.0);
    ev.mean_maps.assign(layers * H, RowMat::Zero(L, L));
    ev.top_content.assign(std::size_t(n) * layers * H, -1);
  }
  std::vector<int> sparsity_rows, content_keys;
  if (o.task == Task::induction) {
    for (int i = 1; i < L; ++i) sparsity_rows.push_back(i);  // row 0 sees only BOS: trivially 1
  } else {
    sparsity_rows.push_back(L - 1);  // the CLS row, whose output is read out
    for (int j = 0; j < L - 1; ++j) content_keys.push_back(j);
  }
  std::vector<int> sparsity_counts(layers * H, 0);
  Batch part;
  long correct = 0;
  double loss_sum = 0;
  for (int start = 0; start < n; start += chunk) {
    const int B = std::min(chunk, n - start);
    part.resize(B, L);
    for (int b = 0; b < B; ++b) part.copy_sequence(eval, start + b, b);
    // The batch weights are 1/(chunk B); rescale so that the loss is the mean over the whole set.
    const auto& logits = model.forward(part.tokens, B, L);
    loss_sum += cross_entropy<typename Model::Scalar>(logits, part, nullptr) * B;
    for (int b = 0; b < B; ++b) correct += prediction(logits, b, L) == part.answer[b];
    if (!full) continue;
    for (int l = 0; l < layers; ++l)
      for (int h = 0; h < H; ++h) {
        const int lh = l * H + h;
        for (int b = 0; b < B; ++b) {
          const RowMat A = model.attention(l, b, h).template cast<double>();
          ev.mean_maps[lh] += A;
          if (o.task == Task::induction) ev.sink[lh] += sink_score(A, 1, L - 3, 0);
          const double sp = sparsity_score(A, sparsity_rows);
          if (std::isfinite(sp)) {
            ev.sparsity[lh] += sp;
            ++sparsity_counts[lh];
          }
          if (o.task == Task::classification)
            ev.top_content[(std::size_t(start + b) * layers + l) * H + h] = top_key(A, L - 1, content_keys);
        }
      }
  }
  ev.loss = loss_sum / n;
  ev.accuracy = double(correct) / n;
  if (full)
    for (int lh = 0; lh < layers * H; ++lh) {
      ev.mean_maps[lh] /= n;
      ev.sink[lh] = o.task == Task::induction ? ev.sink[lh] / n : kNaN;
      ev.sparsity[lh] = sparsity_counts[lh] ? ev.sparsity[lh] / sparsity_counts[lh] : kNaN;
    }
  return ev;
}

// Token-flip test: the top-attended content token (of head (l, h), at CLS) of a sequence of class a
// placed among the other n−1 content tokens of a sequence of class b, in random order. The flip rate
// of the head is how often the model then predicts a.
template <class Model>
std::vector<double> flip_rates(Model& model, const Config& o, const Batch& eval,
                               const std::vector<int>& top_content) {
  const ClassificationTask& task = o.classification;
  const int L = eval.L, n = task.n_tokens, layers = model.config().layers, H = model.config().heads;
  std::vector<double> rate(layers * H, 0.0);
  if (o.flip_pairs <= 0) return std::vector<double>(layers * H, kNaN);
  std::vector<std::vector<int>> by_class(task.classes);
  for (int i = 0; i < eval.B; ++i) by_class[eval.answer[i]].push_back(i);
  int usable = 0;
  for (const auto& c : by_class) usable += !c.empty();
  if (usable < 2) return std::vector<double>(layers * H, kNaN);

  rng::Engine e = rng::engine(o.seed, 0, rng::user + 1);
  struct Pair {
    int ya, sa, sb;
  };
  std::vector<Pair> pairs;
  while (int(pairs.size()) < o.flip_pairs) {
    const int ya = uniform_int(e, 0, task.classes - 1), yb = uniform_int(e, 0, task.classes - 1);
    if (ya == yb || by_class[ya].empty() || by_class[yb].empty()) continue;
    pairs.push_back({ya, by_class[ya][uniform_int(e, 0, int(by_class[ya].size()) - 1)],
                     by_class[yb][uniform_int(e, 0, int(by_class[yb].size()) - 1)]});
  }
  // One mixed sequence per (pair, layer, head), evaluated in chunks.
  const int total = int(pairs.size()) * layers * H, chunk = 256;
  Batch mixed;
  std::vector<int> content(n), owner(chunk);
  for (int start = 0; start < total; start += chunk) {
    const int B = std::min(chunk, total - start);
    mixed.resize(B, L);
    for (int j = 0; j < B; ++j) {
      const int id = start + j, lh = id % (layers * H);
      const Pair& p = pairs[id / (layers * H)];
      const int top_a = top_content[std::size_t(p.sa) * layers * H + lh];
      const int top_b = top_content[std::size_t(p.sb) * layers * H + lh];
      int c = 0;
      content[c++] = eval.tokens[p.sa * L + top_a];
      for (int t = 0; t < n; ++t)
        if (t != top_b) content[c++] = eval.tokens[p.sb * L + t];
      for (int i = n - 1; i > 0; --i) std::swap(content[i], content[uniform_int(e, 0, i)]);
      task.set_sequence(mixed, j, content, p.ya);
      owner[j] = lh;
    }
    const auto& logits = model.forward(mixed.tokens, B, L);
    for (int j = 0; j < B; ++j) rate[owner[j]] += prediction(logits, j, L) == mixed.answer[j];
  }
  for (double& r : rate) r /= double(pairs.size());
  return rate;
}

// Attention maps of the first sequences of the evaluation set in the geometry file format:
// induction: every query t with its visible keys 0 .. t; classification: the CLS query, all keys.
template <class Model>
nlohmann::json export_maps(Model& model, const Config& o, const Batch& eval) {
  const int count = std::min(o.export_sequences, eval.B);
  nlohmann::json maps = nlohmann::json::array();
  if (count <= 0) return {{"maps", maps}};
  Batch part;
  const int L = eval.L;
  part.resize(count, L);
  for (int b = 0; b < count; ++b) part.copy_sequence(eval, b, b);
  model.forward(part.tokens, count, L);
  const int layers = model.config().layers, H = model.config().heads;
  for (int b = 0; b < count; ++b)
    for (int l = 0; l < layers; ++l)
      for (int h = 0; h < H; ++h) {
        const auto A = model.attention(l, b, h);
        const auto V = model.values(l, b, h);
        const int first = o.task == Task::induction ? 0 : L - 1;
        for (int t = first; t < L; ++t) {
          const int visible = model.config().causal ? t + 1 : L;
          std::vector<double> alpha(A.row(t).data(), A.row(t).data() + visible);
          std::vector<std::vector<double>> values(visible);
          for (int i = 0; i < visible; ++i) values[i].assign(V.row(i).data(), V.row(i).data() + V.cols());  // (to double)
          nlohmann::json m = {{"document", b}, {"layer", l}, {"head", h}, {"query", t}, {"alpha", alpha},
                              {"values", values}};
          if (o.task == Task::induction) m["sink"] = 0;
          maps.push_back(std::move(m));
        }
      }
  return {{"maps", maps}};
}

}  // namespace

template <class T>
BasicAdamW<T>::BasicAdamW(int n, const AdamWOptions& options)
    : o_(options), m_(VecT<T>::Zero(n)), v_(VecT<T>::Zero(n)) {}

template <class T>
void BasicAdamW<T>::step(VecT<T>& theta, const VecT<T>& grad) {
  ++t_;
  const double bc1 = 1.0 - std::pow(o_.beta1, double(t_)), bc2 = 1.0 - std::pow(o_.beta2, double(t_));
  const T step = T(o_.lr / bc1), decay = T(1.0 - o_.lr * o_.weight_decay), rbc2 = T(1.0 / std::sqrt(bc2));
  const T b1 = T(o_.beta1), b2 = T(o_.beta2), eps = T(o_.eps);
  T* th = theta.data();
  T* m = m_.data();
  T* v = v_.data();
  const T* g = grad.data();
  for (Eigen::Index i = 0; i < theta.size(); ++i) {
    th[i] *= decay;
    m[i] = b1 * m[i] + (T(1) - b1) * g[i];
    v[i] = b2 * v[i] + (T(1) - b2) * g[i] * g[i];
    th[i] -= step * m[i] / (std::sqrt(v[i]) * rbc2 + eps);
  }
}

template <class T>
double cross_entropy(const RowMatT<T>& logits, const Batch& batch, std::type_identity_t<RowMatT<T>>* dlogits) {
  if (dlogits) dlogits->setZero(logits.rows(), logits.cols());
  double loss = 0;
  for (Eigen::Index r = 0; r < logits.rows(); ++r) {
    const int target = batch.targets[r];
    const double w = batch.weights[r];
    if (target < 0 || w == 0.0) continue;
    const T m = logits.row(r).maxCoeff();
    const T lse = m + std::log((logits.row(r).array() - m).exp().sum());
    loss += w * double(lse - logits(r, target));
    if (dlogits) {
      dlogits->row(r).array() = T(w) * (logits.row(r).array() - lse).exp();
      (*dlogits)(r, target) -= T(w);
    }
  }
  return loss;
}

template class BasicAdamW<double>;
template class BasicAdamW<float>;
template double cross_entropy<double>(const RowMatT<double>&, const Batch&, RowMatT<double>*);
template double cross_entropy<float>(const RowMatT<float>&, const Batch&, RowMatT<float>*);

TransformerConfig model_config(const Config& o) {
  TransformerConfig c = o.model;
  if (o.task == Task::induction) {
    c.vocab = o.induction.input_vocab();
    c.n_out = o.induction.n_out();
  } else {
    c.vocab = o.classification.input_vocab();
    c.n_out = o.classification.n_out();
  }
  c.max_len = task_length(o);
  return c;
}

namespace {

template <class T>
ExperimentResult train_and_evaluate(const Config& o) {
  if (o.task == Task::induction)
    o.induction.check();
  else
    o.classification.check();
  ExperimentResult res;
  BasicTransformer<T> model(model_config(o));
  res.n_parameters = model.n_parameters();
  {
    rng::Engine init = rng::engine(o.seed, 0, rng::student_init);
    model.initialize(init);
  }
  if (o.on_initialised) o.on_initialised(model.layout(), model.theta().template cast<double>());
  const int L = task_length(o);
  rng::Engine data = rng::engine(o.seed, 0, rng::training_data);
  rng::Engine test = rng::engine(o.seed, 0, rng::test_set);
  Batch eval, pool, batch;
  sample(o, test, o.n_eval, eval);
  if (o.on_evaluation_set) o.on_evaluation_set(eval);
  if (o.n_train > 0) sample(o, data, o.n_train, pool);
  std::vector<int> order(std::max(o.n_train, 0));
  std::iota(order.begin(), order.end(), 0);
  std::size_t next = order.size();  // position in the current epoch; reshuffle when exhausted

  BasicAdamW<T> adam(model.n_parameters(), o.adam);
  VecT<T> grad(model.n_parameters());
  RowMatT<T> dlogits;
  res.curve = Table({"step", "train_loss", "eval_loss", "accuracy"});
  auto checkpoint = [&](long step, double train_loss) {
    const Evaluation ev = evaluate(model, o, eval, false);
    res.curve.add_row(std::vector<double>{double(step), train_loss, ev.loss, ev.accuracy});
    return ev;
  };
  checkpoint(0, kNaN);

  Progress progress("train", o.steps, !o.quiet);
  const auto start = std::chrono::steady_clock::now();
  double window_loss = 0;
  int window = 0;
  for (long step = 1; step <= o.steps; ++step) {
    if (interrupted()) {
      res.status = "interrupted";
      break;
    }
    if (o.n_train > 0) {
      // cyclic: a full batch, reshuffling mid-batch when the pool is used up; epochs: reshuffle only
      // at the start of a batch, so that the last batch of an epoch takes what is left.
      auto reshuffle = [&] {
        for (std::size_t i = order.size() - 1; i > 0; --i) std::swap(order[i], order[uniform_int(data, 0, int(i))]);
        next = 0;
      };
      if (o.batching == Batching::epochs && next >= order.size()) reshuffle();
      const int B = o.batching == Batching::epochs ? int(std::min<std::size_t>(o.batch, order.size() - next)) : o.batch;
      batch.resize(B, L);
      for (int b = 0; b < B; ++b) {
        if (next >= order.size()) reshuffle();
        batch.copy_sequence(pool, order[next++], b);
      }
    } else {
      sample(o, data, o.batch, batch);
    }
    if (o.on_batch) o.on_batch(step, batch);
    const auto& logits = model.forward(batch.tokens, batch.B, L);
    const double loss = cross_entropy<T>(logits, batch, &dlogits);
    if (!std::isfinite(loss)) {
      res.status = "diverged";
      break;
    }
    model.backward(dlogits, grad);
    adam.step(model.theta(), grad);
    res.steps_done = step;
    window_loss += loss;
    ++window;
    if (step % o.eval_every == 0 || step == o.steps) {
      const Evaluation ev = checkpoint(step, window_loss / window);
      progress.set_note(fmt::format("loss {:.3f} acc {:.3f}", window_loss / window, ev.accuracy));
      window_loss = 0;
      window = 0;
    }
    progress.advance();
  }
  progress.finish();
  res.train_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  res.steps_per_second = res.train_seconds > 0 ? res.steps_done / res.train_seconds : 0;
  if (!model.theta().allFinite()) res.status = "diverged";
  if (res.status == "diverged") return res;

  const Evaluation ev = evaluate(model, o, eval, true);
  res.accuracy = ev.accuracy;
  res.eval_loss = ev.loss;
  res.above_accuracy = ev.accuracy > o.accuracy_threshold;
  res.mean_maps = ev.mean_maps;
  const int layers = model.config().layers, H = model.config().heads;
  std::vector<double> flips(layers * H, kNaN);
  if (o.task == Task::classification) flips = flip_rates(model, o, eval, ev.top_content);
  std::vector<double> last_sink;
  double sp_sum = 0, flip_sum = 0;
  int sp_n = 0;
  for (int l = 0; l < layers; ++l)
    for (int h = 0; h < H; ++h) {
      const int lh = l * H + h;
      res.heads.push_back({l, h, ev.sink[lh], ev.sparsity[lh], flips[lh]});
      if (std::isfinite(ev.sparsity[lh])) {
        sp_sum += ev.sparsity[lh];
        ++sp_n;
      }
      if (l == layers - 1) {
        last_sink.push_back(ev.sink[lh]);
        flip_sum += flips[lh];
      }
    }
  res.sink_share = o.task == Task::induction ? share_above(last_sink, o.sink_threshold) : kNaN;
  res.sink_heads = o.task == Task::induction ? int(std::lround(res.sink_share * H)) : 0;
  res.sink_score_mean =
      o.task == Task::induction ? std::accumulate(last_sink.begin(), last_sink.end(), 0.0) / double(H) : kNaN;
  res.sparsity_mean = sp_n ? sp_sum / sp_n : kNaN;
  res.flip_rate_mean = o.task == Task::classification ? flip_sum / H : kNaN;
  res.maps = export_maps(model, o, eval);
  return res;
}

}  // namespace

ExperimentResult run_experiment(const Config& o) {
  return o.precision == Precision::float32 ? train_and_evaluate<float>(o) : train_and_evaluate<double>(o);
}

}  // namespace hdat::sinks
