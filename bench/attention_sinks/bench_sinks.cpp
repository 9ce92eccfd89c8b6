// Speed of induction training of the attention-sink transformer (steps per second on one thread, in
// float64 and float32), and a dump of one step (parameters, batch, loss, gradient) that
// torch_reference.py reproduces in PyTorch to show that both sides train the same model.
//   bench_attention_sinks [--width 128] [--heads 4] [--layers 2] [--batch 256] [--steps 100]
//                         [--attention softmax] [--positions concat] [--shift-query 1]
//                         [--precision float32|float64|both] [--threads 1] [--dump FILE.json]
// Defaults: the authors' configuration (tml-epfl/softmax, conf/induction_config.yaml).
#include <Eigen/Core>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "hdat/attention_sinks/experiment.hpp"

using namespace hdat::sinks;

namespace {

struct Bench {
  int width = 128, heads = 4, layers = 2, batch = 256, steps = 100, threads = 1;
  bool shift_query = true;
  std::string attention = "softmax", positions = "concat", precision = "both", dump;
};

ExperimentOptions options(const Bench& a) {
  ExperimentOptions o;
  o.model.width = a.width;
  o.model.heads = a.heads;
  o.model.layers = a.layers;
  o.model.mlp_hidden = 4 * a.width;
  o.model.attention = parse_attention(a.attention);
  o.model.positions = parse_positions(a.positions);
  o.induction.shift_query = a.shift_query;
  return o;
}

// Batches made beforehand: the timing is of the training step (forward, backward, AdamW) alone.
std::vector<Batch> make_batches(const ExperimentOptions& o, int batch) {
  auto data = hdat::rng::engine(0, 0, hdat::rng::training_data);
  std::vector<Batch> batches(50);
  for (auto& b : batches) o.induction.sample(data, batch, b);
  return batches;
}

template <class T>
void time_training(const Bench& a, const char* label) {
  const ExperimentOptions o = options(a);
  BasicTransformer<T> model(model_config(o));
  auto init = hdat::rng::engine(0, 0, hdat::rng::student_init);
  model.initialize(init);
  const std::vector<Batch> batches = make_batches(o, a.batch);
  const int L = o.induction.length();
  BasicAdamW<T> adam(model.n_parameters(), AdamWOptions{});
  RowMatT<T> dlogits;
  VecT<T> grad;
  auto step = [&](int s) {
    const Batch& b = batches[s % batches.size()];
    const double loss = cross_entropy<T>(model.forward(b.tokens, a.batch, L), b, &dlogits);
    model.backward(dlogits, grad);
    adam.step(model.theta(), grad);
    return loss;
  };
  for (int s = 0; s < 3; ++s) step(s);  // warm-up: buffers allocated, caches filled
  double last = 0;
  // Wall time, and the CPU time of this process: on a shared machine the second is what a step costs.
  const auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();
  for (int s = 0; s < a.steps; ++s) last = step(s);
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu = double(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  fmt::print("{{\"impl\": \"hdat C++ (Eigen, {})\", \"attention\": \"{}\", \"width\": {}, \"heads\": {}, \"layers\": {}, "
             "\"batch\": {}, \"steps\": {}, \"threads\": {}, \"parameters\": {}, \"seconds\": {:.3f}, "
             "\"steps_per_second\": {:.3f}, \"cpu_seconds\": {:.3f}, \"steps_per_cpu_second\": {:.3f}, "
             "\"final_loss\": {:.6f}}}\n",
             label, a.attention, a.width, a.heads, a.layers, a.batch, a.steps, a.threads, model.n_parameters(), sec,
             a.steps / sec, cpu, a.steps / cpu, last);
  std::fflush(stdout);
}

void write_dump(const Bench& a) {
  const ExperimentOptions o = options(a);
  Transformer model(model_config(o));
  auto init = hdat::rng::engine(0, 0, hdat::rng::student_init);
  model.initialize(init);
  const std::vector<Batch> batches = make_batches(o, a.batch);
  const Batch& b = batches[0];
  const int L = o.induction.length();
  RowMat dlogits;
  const double loss = cross_entropy<double>(model.forward(b.tokens, a.batch, L), b, &dlogits);
  Eigen::VectorXd grad;
  model.backward(dlogits, grad);
  nlohmann::json j;
  j["config"] = {{"width", a.width}, {"heads", a.heads}, {"layers", a.layers}, {"mlp_hidden", 4 * a.width},
                 {"vocab", model.config().vocab}, {"n_out", model.config().n_out}, {"max_len", model.config().max_len},
                 {"positions", positions_name(model.config().positions)}, {"attention", a.attention}, {"batch", a.batch},
                 {"length", L}, {"ln_eps", model.config().ln_eps}, {"n_tokens", o.induction.n_tokens},
                 {"task_vocab", o.induction.vocab}, {"shift_query", a.shift_query}};
  for (const auto& blk : model.layout().blocks()) {
    // Column-major values of each named block (E: d_tok x vocab, W: d_in x d_out, ...).
    j["theta"][blk.name] = {{"rows", blk.rows}, {"cols", blk.cols},
                            {"values", std::vector<double>(model.theta().data() + blk.offset,
                                                           model.theta().data() + blk.offset + blk.size())}};
    j["grad"][blk.name] = std::vector<double>(grad.data() + blk.offset, grad.data() + blk.offset + blk.size());
  }
  j["tokens"] = b.tokens;
  j["targets"] = b.targets;
  j["weights"] = b.weights;
  j["loss"] = loss;
  std::ofstream(a.dump) << j.dump() << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  Bench a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--width") a.width = std::stoi(v);
    else if (k == "--heads") a.heads = std::stoi(v);
    else if (k == "--layers") a.layers = std::stoi(v);
    else if (k == "--batch") a.batch = std::stoi(v);
    else if (k == "--steps") a.steps = std::stoi(v);
    else if (k == "--threads") a.threads = std::stoi(v);
    else if (k == "--attention") a.attention = v;
    else if (k == "--positions") a.positions = v;
    else if (k == "--shift-query") a.shift_query = v != "0";
    else if (k == "--precision") a.precision = v;
    else if (k == "--dump") a.dump = v;
    else {
      fmt::print(stderr, "unknown option {}\n", k);
      return 2;
    }
  }
  if (a.precision != "float32" && a.precision != "float64" && a.precision != "both") {
    fmt::print(stderr, "--precision: float32|float64|both\n");
    return 2;
  }
  Eigen::setNbThreads(a.threads);
  if (!a.dump.empty()) write_dump(a);
  if (a.precision != "float64") time_training<float>(a, "float32");
  if (a.precision != "float32") time_training<double>(a, "float64");
  return 0;
}
