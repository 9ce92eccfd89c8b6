// The `sinks` model: trains one small transformer on the induction or token-group classification
// task with a chosen attention kind and measures its attention sinks (spec/polarization.md,
// "Transformer experiments"; docs/sinks.md). Commands: simulate (= `hdat sinks`).
#include <Eigen/Core>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <limits>

#include "hdat/core/error.hpp"
#include "hdat/core/exit_code.hpp"
#include "hdat/core/output.hpp"
#include "hdat/core/plot.hpp"
#include "hdat/core/matrix_product.hpp"
#include "hdat/core/registry.hpp"
#include "hdat/sinks/experiment.hpp"
#include "hdat/sinks/study.hpp"

namespace hdat {

namespace {

using json = nlohmann::json;
using namespace hdat::sinks;

ParamSet sinks_params() {
  ParamSet p;
  p.choice("task", "induction", {"induction", "classification"}, "induction heads or token-group classification");
  p.choice("attention", "softmax", attention_names(),
           "attention kind: softmax; sigmoid / linear (elu+1 features) / elu (elu+1 of the score; alias "
           "coupled_linear) / relu with (_norm) or without (_unnorm) row normalisation; raw_dotproduct (the score, "
           "_norm: divided by max(|row sum|, 1)); square_norm, abs_norm (value-softmax normalisations); uniform (control)");
  p.choice("precision", "float64", {"float64", "float32"},
           "scalar type of parameters and activations: float64 (reference) or float32 (about 3x faster; the authors' "
           "PyTorch precision)");
  p.integer("layers", 2, "transformer blocks", Range::between(1, 16));
  p.integer("width", 64, "model width d (heads divide it)", Range::between(2, 1024));
  p.integer("heads", 4, "attention heads per block", Range::between(1, 64));
  p.real("mlp_ratio", 4.0, "MLP hidden units / width", Range::positive());
  p.choice("positions", "auto", {"auto", "add", "concat", "none"},
           "learned positional embedding added, concatenated (half the width each) or none; auto: concat for "
           "induction, none for classification (the authors' settings)");
  p.boolean("causal", json(), "causal attention mask (unset: true for induction, false for classification)");
  p.integer("vocab", 50, "induction: token ids incl. BOS = 0", Range::between(3, 100000)).when_in("task", {"induction"});
  p.integer("n_tokens", 10, "distinct tokens per sequence (both tasks)", Range::between(2, 1000));
  p.boolean("shift_query", false, "induction: the query copy uses a separate id range (q = t_k + vocab)")
      .when_in("task", {"induction"});
  p.boolean("query_last", false,
            "induction: the query may copy the last token t_n (1/n of the sequences), whose target is then the query "
            "token itself (the authors' data); false: k < n, the successor always exists")
      .when_in("task", {"induction"});
  p.real("aux_weight", 0.2, "induction: weight of the next-token loss at the earlier positions", Range::nonnegative())
      .when_in("task", {"induction"});
  p.integer("classes", 4, "classification: number of token groups (labels)", Range::between(2, 1000))
      .when_in("task", {"classification"});
  p.integer("group_size", 10, "classification: token ids per group", Range::between(2, 10000))
      .when_in("task", {"classification"});
  p.integer("steps", 3000, "AdamW steps (batches)", Range::between(0, 10000000))
      .when("epochs is 0 (epochs > 0 sets the number of steps)", [](const Params& q) { return q.integer("epochs") == 0; },
            {"epochs"});
  p.integer("epochs", 0,
            "if > 0: train this many passes over the n_train pool instead of `steps` (steps = epochs x batches per "
            "epoch: ceil(n_train/batch) with batching=epochs)",
            Range::between(0, 100000))
      .when("n_train > 0 (epochs of a training pool)", [](const Params& q) { return q.integer("n_train") > 0; },
            {"n_train"});
  p.choice("batching", "cyclic", {"cyclic", "epochs"},
           "cyclic: every batch full, the pool reshuffled whenever used up (batches may span epochs); epochs: one "
           "permutation per epoch, the last batch short (n_train mod batch), as PyTorch's DataLoader(shuffle=True)")
      .when("n_train > 0 (batches drawn from a training pool)", [](const Params& q) { return q.integer("n_train") > 0; },
            {"n_train"});
  p.integer("batch", 64, "sequences per step", Range::between(1, 100000));
  p.real("lr", 1e-3, "AdamW learning rate", Range::positive());
  p.real("weight_decay", 0.01, "AdamW decoupled weight decay (PyTorch default)", Range::nonnegative());
  p.real("beta1", 0.9, "AdamW first-moment decay", Range::between(0, 1));
  p.real("beta2", 0.999, "AdamW second-moment decay", Range::between(0, 1));
  p.real("adam_eps", 1e-8, "AdamW epsilon", Range::positive());
  p.integer("n_train", 100000, "training pool of sequences, reshuffled each epoch (0: fresh sequences every step)",
            Range::between(0, 100000000));
  p.integer("n_eval", 1000, "evaluation sequences (separate random stream)", Range::between(1, 10000000));
  p.integer("eval_every", 250, "steps between points of the training curve", Range::between(1, 10000000));
  p.integer("flip_pairs", 500, "classification: sequence pairs of the token-flip test", Range::between(0, 1000000))
      .when_in("task", {"classification"});
  p.integer("export_sequences", 2, "evaluation sequences whose attention maps go to attention_maps.json",
            Range::between(0, 100000));
  p.integer("seed", 0, "seed of initialisation, training data and evaluation set", Range::between(0, 1e15));
  p.real("sink_threshold", 0.9, "induction: a head is a sink head when its sink score exceeds this", Range::between(0, 1))
      .when_in("task", {"induction"});
  p.real("accuracy_threshold", 0.95, "models above this accuracy count in the sink statistics", Range::between(0, 1));
  std::vector<std::string> row_sum_kinds;
  for (const auto& k : attention_names())
    if (has_row_sum(parse_attention(k))) row_sum_kinds.push_back(k);
  p.real("norm_eps", 1e-9,
         "epsilon added to the row sum of the f/sum f kinds (the authors' 1e-9); 0 allowed where f > 0 (sigmoid, "
         "linear, elu), > 0 needed where the sum can vanish (relu, square, abs)",
         Range::nonnegative())
      .when_in("attention", row_sum_kinds);
  return p;
}

Config options_from(const Params& p) {
  Config o;
  o.task = p.text("task") == "induction" ? Task::induction : Task::classification;
  const bool induction = o.task == Task::induction;
  o.induction.vocab = int(p.integer("vocab"));
  o.induction.n_tokens = int(p.integer("n_tokens"));
  o.induction.shift_query = p.boolean("shift_query");
  o.induction.query_last = p.boolean("query_last");
  o.induction.aux_weight = p.real("aux_weight");
  o.classification.classes = int(p.integer("classes"));
  o.classification.group_size = int(p.integer("group_size"));
  o.classification.n_tokens = int(p.integer("n_tokens"));
  TransformerConfig& c = o.model;
  c.width = int(p.integer("width"));
  c.heads = int(p.integer("heads"));
  c.layers = int(p.integer("layers"));
  c.mlp_hidden = std::max(1, int(std::lround(p.real("mlp_ratio") * c.width)));
  const std::string pos = p.text("positions");
  c.positions = pos == "auto" ? (induction ? Positions::concat : Positions::none) : parse_positions(pos);
  c.causal = p.has("causal") ? p.boolean("causal") : induction;
  c.attention = parse_attention(p.text("attention"));
  c.norm_eps = p.real("norm_eps");
  o.precision = p.text("precision") == "float32" ? Precision::float32 : Precision::float64;
  o.adam = {p.real("lr"), p.real("beta1"), p.real("beta2"), p.real("adam_eps"), p.real("weight_decay")};
  o.batch = int(p.integer("batch"));
  o.n_train = int(p.integer("n_train"));
  o.batching = p.text("batching") == "epochs" ? Batching::epochs : Batching::cyclic;
  o.steps = int(p.integer("steps"));
  if (const long epochs = p.integer("epochs"); epochs > 0 && o.n_train > 0) {
    const long per_epoch = o.batching == Batching::epochs ? (o.n_train + o.batch - 1) / o.batch : 0;
    o.steps = int(o.batching == Batching::epochs ? epochs * per_epoch : (epochs * o.n_train + o.batch - 1) / o.batch);
  }
  o.n_eval = int(p.integer("n_eval"));
  o.eval_every = int(p.integer("eval_every"));
  o.flip_pairs = int(p.integer("flip_pairs"));
  o.export_sequences = int(p.integer("export_sequences"));
  o.seed = std::uint64_t(p.integer("seed"));
  o.sink_threshold = p.real("sink_threshold");
  o.accuracy_threshold = p.real("accuracy_threshold");
  return o;
}

void check_params(const Params& p) {
  const int width = int(p.integer("width")), heads = int(p.integer("heads"));
  if (width % heads != 0) throw InputError("heads", fmt::format("must divide width ({})", width));
  const Config o = options_from(p);
  if (row_sum_can_vanish(o.model.attention) && !(o.model.norm_eps > 0))
    throw InputError("norm_eps", "must be > 0 for " + p.text("attention") + " (its row sum can vanish)");
  if (o.model.positions == Positions::concat && width % 2 != 0)
    throw InputError("width", "must be even with concatenated positions");
  if (o.task == Task::induction) {
    o.induction.check();
    if (o.n_eval < 1) throw InputError("n_eval", ">= 1");
  } else {
    o.classification.check();
  }
}

json head_matrix(const ExperimentResult& r, int layers, int heads, double HeadMetrics::*field) {
  json m = json::array();
  for (int l = 0; l < layers; ++l) {
    json row = json::array();
    for (int h = 0; h < heads; ++h) {
      const double v = r.heads[l * heads + h].*field;
      row.push_back(std::isfinite(v) ? json(v) : json());
    }
    m.push_back(row);
  }
  return m;
}

json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(); }

RunOutput simulate(const Params& p, RunContext& ctx) {
  Config o = options_from(p);
  o.quiet = ctx.quiet;
  // One model is small: its matrix products run on one thread unless --threads asks for more
  // (sweeps parallelise over points instead).
  const int threads = ctx.threads > 0 ? ctx.threads : 1;
  Eigen::setNbThreads(threads);
  const ExperimentResult r = run_experiment(o);
  const TransformerConfig c = model_config(o);

  RunOutput out;
  out.tables["sim.csv"] = r.curve;
  out.info["training"] = {{"status", r.status},
                          {"steps_done", r.steps_done},
                          {"train_seconds", r.train_seconds},
                          {"steps_per_second", r.steps_per_second},
                          {"n_parameters", r.n_parameters},
                          {"threads", threads},
                          {"precision", p.text("precision")},
                          {"matrix_products", o.precision == Precision::float32 && linalg::onednn_available() ? "oneDNN sgemm" : "Eigen"},
                          {"steps", o.steps},
                          {"positions", positions_name(c.positions)},
                          {"causal", c.causal},
                          {"mlp_hidden", c.mlp_hidden}};
  out.info["seeds"] = {{"seed", o.seed},
                       {"streams", {{"init", "student_init"}, {"training", "training_data"}, {"evaluation", "test_set"},
                                    {"flip_test", "user+1"}}}};
  if (r.status == "diverged") {
    out.exit_code = code(ExitCode::numerical_failure);
    out.summary = fmt::format("training diverged (non-finite loss) after {} steps", r.steps_done);
    return out;
  }
  Table heads({"layer", "head", "sink_score", "sparsity", "flip_rate"});
  for (const auto& h : r.heads)
    heads.add_row(std::vector<double>{double(h.layer), double(h.head), h.sink_score, h.sparsity, h.flip_rate});
  out.tables["sink_heads.csv"] = heads;
  Table maps({"layer", "head", "query", "key", "weight"});
  for (int l = 0; l < c.layers; ++l)
    for (int h = 0; h < c.heads; ++h) {
      const RowMat& A = r.mean_maps[l * c.heads + h];
      for (int i = 0; i < A.rows(); ++i)
        for (int j = 0; j < A.cols(); ++j) maps.add_row(std::vector<double>{double(l), double(h), double(i), double(j), A(i, j)});
    }
  out.tables["attention.csv"] = maps;
  out.files["attention_maps.json"] = r.maps.dump() + "\n";

  json s;
  s["task"] = p.text("task");
  s["attention"] = p.text("attention");
  s["layers"] = c.layers;
  s["heads"] = c.heads;
  s["width"] = c.width;
  s["seed"] = o.seed;
  s["status"] = r.status;
  s["accuracy"] = r.accuracy;
  s["eval_loss"] = r.eval_loss;
  s["accuracy_threshold"] = o.accuracy_threshold;
  s["above_accuracy_threshold"] = r.above_accuracy;
  s["sink_threshold"] = o.sink_threshold;
  s["sink_layer"] = c.layers - 1;
  s["sink_score"] = head_matrix(r, c.layers, c.heads, &HeadMetrics::sink_score);
  s["sink_share"] = finite_or_null(r.sink_share);
  s["sink_heads"] = r.sink_heads;
  s["lr"] = o.adam.lr;
  s["precision"] = p.text("precision");
  s["sink_score_mean"] = finite_or_null(r.sink_score_mean);
  s["sparsity"] = head_matrix(r, c.layers, c.heads, &HeadMetrics::sparsity);
  s["sparsity_mean"] = finite_or_null(r.sparsity_mean);
  s["flip_rate"] = head_matrix(r, c.layers, c.heads, &HeadMetrics::flip_rate);
  s["flip_rate_mean"] = finite_or_null(r.flip_rate_mean);
  s["steps_per_second"] = r.steps_per_second;
  s["maps_file"] = "attention_maps.json";
  out.files["sinks.json"] = s.dump(2) + "\n";
  out.info["observables"] = {{"accuracy", r.accuracy},
                             {"eval_loss", r.eval_loss},
                             {"sink_share", finite_or_null(r.sink_share)},
                             {"sink_heads", o.task == Task::induction ? json(r.sink_heads) : json()},
                             {"heads", c.heads},
                             {"above_accuracy_threshold", r.above_accuracy ? 1 : 0},
                             {"sink_score", finite_or_null(r.sink_score_mean)},
                             {"sparsity", finite_or_null(r.sparsity_mean)},
                             {"flip_rate", finite_or_null(r.flip_rate_mean)},
                             {"steps_per_second", r.steps_per_second}};
  std::string sinks_line;
  if (o.task == Task::induction) {
    sinks_line = "sink scores, last layer:";
    for (int h = 0; h < c.heads; ++h) sinks_line += fmt::format(" {:.3f}", r.heads[(c.layers - 1) * c.heads + h].sink_score);
    sinks_line += fmt::format(" (share > {}: {:.2f})", o.sink_threshold, r.sink_share);
  } else {
    sinks_line = fmt::format("flip rate, last layer (mean over heads): {:.3f}", r.flip_rate_mean);
  }
  out.summary = fmt::format("{} / {}: accuracy {:.4f}, eval loss {:.4f}, sparsity {:.3f}; {}\n{} steps in {:.1f} s ({:.1f} steps/s)",
                            p.text("task"), p.text("attention"), r.accuracy, r.eval_loss, r.sparsity_mean, sinks_line,
                            r.steps_done, r.train_seconds, r.steps_per_second);
  if (r.status == "interrupted") out.exit_code = code(ExitCode::interrupted);
  return out;
}

}  // namespace

void register_sinks(Registry& registry) {
  ModelEntry m;
  m.name = "sinks";
  m.summary = "attention sinks in small trained transformers: softmax vs sigmoid vs linear attention";
  m.description =
      "Trains a small causal (or bidirectional) pre-LayerNorm transformer in C++ on the induction-head task\n"
      "or the token-group classification task of spec/polarization.md, with an interchangeable attention kind,\n"
      "and measures accuracy, the sink score of every head (attention mass on BOS over the rows 1..L-3), the\n"
      "share of sink heads (score > sink_threshold) in the last layer, the sparsity score and, for classification,\n"
      "the token-flip rate. simulate writes sim.csv (training curve), sink_heads.csv, attention.csv (mean maps),\n"
      "sinks.json and attention_maps.json (the geometry format). `hdat sinks --collect DIRS --out DIR` pools runs.\n"
      "See docs/sinks.md.";
  m.params = sinks_params();
  m.check = check_params;
  m.commands["simulate"] = simulate;
  m.default_observables = {"accuracy", "sink_share", "sparsity", "flip_rate"};
  m.plot = [](const std::filesystem::path& dir) { plot_sinks_folder(dir); };
  // Seconds (the Python suite against the command line).
  m.small = {{"simulate", {{"width", 16}, {"heads", 2}, {"steps", 20}, {"batch", 8}, {"n_train", 200}, {"n_eval", 50}, {"eval_every", 10},
                           {"vocab", 20}, {"n_tokens", 5}}}};
  registry.add(std::move(m));
}

}  // namespace hdat
