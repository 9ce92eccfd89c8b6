// Speed of induction training of the attention-sink transformer (steps per second on one thread, in
// float64 and float32), and a dump of one step (parameters, batch, loss, gradient) that
// torch_reference.py reproduces in PyTorch to show that both sides train the same model.
//   bench_sinks [--width 128] [--heads 4] [--layers 2] [--batch 256] [--steps 100]
//                         [--attention softmax] [--positions concat] [--shift-query 1]
//                         [--precision float32|float64|both] [--threads 1] [--dump FILE.json]
//   bench_sinks --replay STEM [--attention K] [--seed S] [--steps 1173] [--precision float32]
//                         [--authors-data 1]
//     trains one model as `hdat sinks` does (authors' configuration) and writes its training stream:
//     STEM.json (initial parameters, evaluation set, hdat's result) and STEM.bin (int32: per step B,
//     then B·L tokens and B·L targets), for torch_train.py --replay to train the same model on it.
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
#include <type_traits>

#include "hdat/sinks/experiment.hpp"
#include "hdat/core/matrix_product.hpp"

using namespace hdat::sinks;

namespace {

struct Bench {
  int width = 128, heads = 4, layers = 2, batch = 256, steps = 100, threads = 1;
  bool shift_query = true, authors_data = true;
  long seed = 0;
  std::string attention = "softmax", positions = "concat", precision = "both", dump, replay;
};

Config options(const Bench& a) {
  Config o;
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
std::vector<Batch> make_batches(const Config& o, int batch) {
  auto data = hdat::rng::engine(0, 0, hdat::rng::training_data);
  std::vector<Batch> batches(50);
  for (auto& b : batches) o.induction.sample(data, batch, b);
  return batches;
}

template <class T>
void time_training(const Bench& a, const char* label) {
  const Config o = options(a);
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
  // The float32 products run on oneDNN in a build with it (hdat/core/matrix_product.hpp).
  const char* products = std::is_same_v<T, float> && hdat::linalg::onednn_available() ? "oneDNN sgemm" : "Eigen";
  fmt::print("{{\"impl\": \"hdat C++ ({}, {})\", \"attention\": \"{}\", \"width\": {}, \"heads\": {}, \"layers\": {}, "
             "\"batch\": {}, \"steps\": {}, \"threads\": {}, \"parameters\": {}, \"seconds\": {:.3f}, "
             "\"steps_per_second\": {:.3f}, \"cpu_seconds\": {:.3f}, \"steps_per_cpu_second\": {:.3f}, "
             "\"final_loss\": {:.6f}}}\n",
             products, label, a.attention, a.width, a.heads, a.layers, a.batch, a.steps, a.threads, model.n_parameters(), sec,
             a.steps / sec, cpu, a.steps / cpu, last);
  std::fflush(stdout);
}

void write_dump(const Bench& a) {
  const Config o = options(a);
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

// Train through run_experiment (the `sinks` model's code path) and record what it sees.
void write_replay(const Bench& a) {
  Config o = options(a);
  o.batch = a.batch;
  o.steps = a.steps;
  o.seed = std::uint64_t(a.seed);
  o.precision = a.precision == "float64" ? Precision::float64 : Precision::float32;  // "both": float32
  o.induction.query_last = a.authors_data;
  o.batching = a.authors_data ? Batching::epochs : Batching::cyclic;
  o.eval_every = 391;
  o.export_sequences = 0;
  o.quiet = false;
  nlohmann::json j;
  std::ofstream bin(a.replay + ".bin", std::ios::binary);
  auto put = [&](int v) {
    const std::int32_t x = v;
    bin.write(reinterpret_cast<const char*>(&x), sizeof x);
  };
  o.on_initialised = [&](const hdat::StateLayout& layout, const Eigen::VectorXd& theta) {
    for (const auto& blk : layout.blocks())
      j["theta"][blk.name] = {{"rows", blk.rows}, {"cols", blk.cols},
                              {"values", std::vector<double>(theta.data() + blk.offset, theta.data() + blk.offset + blk.size())}};
  };
  o.on_evaluation_set = [&](const Batch& eval) {
    j["eval"] = {{"B", eval.B}, {"L", eval.L}, {"tokens", eval.tokens}, {"answer", eval.answer}};
  };
  o.on_batch = [&](long, const Batch& b) {
    put(b.B);
    for (int t : b.tokens) put(t);
    for (int t : b.targets) put(t);
  };
  const ExperimentResult r = run_experiment(o);
  const TransformerConfig c = model_config(o);
  j["config"] = {{"width", c.width}, {"heads", c.heads}, {"layers", c.layers}, {"mlp_hidden", c.mlp_hidden},
                 {"vocab", c.vocab}, {"n_out", c.n_out}, {"max_len", c.max_len}, {"positions", positions_name(c.positions)},
                 {"attention", a.attention}, {"batch", a.batch}, {"length", o.induction.length()},
                 {"aux_weight", o.induction.aux_weight}, {"steps", a.steps}, {"seed", a.seed}, {"precision", a.precision},
                 {"authors_data", a.authors_data}};
  std::vector<double> last_layer;
  for (const auto& h : r.heads)
    if (h.layer == c.layers - 1) last_layer.push_back(h.sink_score);
  j["hdat"] = {{"accuracy", r.accuracy}, {"eval_loss", r.eval_loss}, {"sink_score", last_layer}, {"curve", r.curve.to_csv()}};
  std::ofstream(a.replay + ".json") << j.dump() << "\n";
  fmt::print("hdat ({}): accuracy {:.4f}, layer-{} sink scores", a.precision, r.accuracy, c.layers);
  for (double x : last_layer) fmt::print(" {:.3f}", x);
  fmt::print("\nwrote {}.json and {}.bin\n", a.replay, a.replay);
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
    else if (k == "--replay") a.replay = v;
    else if (k == "--seed") a.seed = std::stol(v);
    else if (k == "--authors-data") a.authors_data = v != "0";
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
  if (!a.replay.empty()) {
    write_replay(a);
    return 0;
  }
  if (!a.dump.empty()) write_dump(a);
  if (a.precision != "float64") time_training<float>(a, "float32");
  if (a.precision != "float32") time_training<double>(a, "float64");
  return 0;
}
