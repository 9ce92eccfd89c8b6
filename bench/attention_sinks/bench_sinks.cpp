// Speed of one induction training run of the attention-sink transformer (steps per second on one
// thread), and a dump of one step (parameters, batch, loss, gradient) that torch_reference.py
// reproduces in PyTorch to show that both sides train the same model.
//   bench_attention_sinks [--width 64] [--heads 4] [--layers 2] [--batch 64] [--steps 3000]
//                         [--attention softmax] [--threads 1] [--dump FILE.json]
#include <Eigen/Core>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "hdat/attention_sinks/experiment.hpp"

using namespace hdat::sinks;

int main(int argc, char** argv) {
  int width = 64, heads = 4, layers = 2, batch = 64, steps = 3000, threads = 1;
  std::string attention = "softmax", dump;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--width") width = std::stoi(v);
    else if (k == "--heads") heads = std::stoi(v);
    else if (k == "--layers") layers = std::stoi(v);
    else if (k == "--batch") batch = std::stoi(v);
    else if (k == "--steps") steps = std::stoi(v);
    else if (k == "--threads") threads = std::stoi(v);
    else if (k == "--attention") attention = v;
    else if (k == "--dump") dump = v;
    else {
      fmt::print(stderr, "unknown option {}\n", k);
      return 2;
    }
  }
  Eigen::setNbThreads(threads);
  ExperimentOptions o;
  o.model.width = width;
  o.model.heads = heads;
  o.model.layers = layers;
  o.model.mlp_hidden = 4 * width;
  o.model.attention = parse_attention(attention);
  Transformer model(model_config(o));
  auto init = hdat::rng::engine(0, 0, hdat::rng::student_init);
  model.initialize(init);
  auto data = hdat::rng::engine(0, 0, hdat::rng::training_data);

  // Batches made beforehand: the timing is of the training step (forward, backward, AdamW) alone.
  const int n_batches = 50;
  std::vector<Batch> batches(n_batches);
  for (auto& b : batches) o.induction.sample(data, batch, b);
  const int L = o.induction.length();

  if (!dump.empty()) {
    const Batch& b = batches[0];
    RowMat dlogits;
    const double loss = cross_entropy(model.forward(b.tokens, batch, L), b, &dlogits);
    Eigen::VectorXd grad;
    model.backward(dlogits, grad);
    nlohmann::json j;
    j["config"] = {{"width", width}, {"heads", heads}, {"layers", layers}, {"mlp_hidden", 4 * width},
                   {"vocab", model.config().vocab}, {"n_out", model.config().n_out}, {"max_len", model.config().max_len},
                   {"positions", positions_name(model.config().positions)}, {"attention", attention}, {"batch", batch},
                   {"length", L}, {"ln_eps", model.config().ln_eps}};
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
    std::ofstream(dump) << j.dump() << "\n";
  }

  AdamW adam(model.n_parameters(), AdamWOptions{});
  RowMat dlogits;
  Eigen::VectorXd grad;
  double last = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; ++s) {
    const Batch& b = batches[s % n_batches];
    last = cross_entropy(model.forward(b.tokens, batch, L), b, &dlogits);
    model.backward(dlogits, grad);
    adam.step(model.theta(), grad);
  }
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("{{\"impl\": \"hdat C++ (Eigen, double)\", \"attention\": \"{}\", \"width\": {}, \"heads\": {}, \"layers\": {}, "
             "\"batch\": {}, \"steps\": {}, \"threads\": {}, \"parameters\": {}, \"seconds\": {:.3f}, "
             "\"steps_per_second\": {:.2f}, \"final_loss\": {:.6f}}}\n",
             attention, width, heads, layers, batch, steps, threads, model.n_parameters(), sec, steps / sec, last);
  return 0;
}
