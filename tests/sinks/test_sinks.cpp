// Tasks, metrics on hand-built attention maps, training on a handful of sequences, reproducibility,
// the `sinks` model through the registry and the exported maps.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "hdat/core/error.hpp"
#include "hdat/core/registry.hpp"
#include "hdat/sinks/experiment.hpp"
#include "hdat/sinks/metrics.hpp"
#include "hdat/sinks/study.hpp"
#include "hdat/core/matrix_product.hpp"

namespace hdat {
void register_sinks(Registry& registry);
}

using namespace hdat::sinks;
using json = nlohmann::json;

TEST_CASE("induction sequences: BOS, distinct tokens, query copy, successor as target") {
  for (bool shift : {false, true}) {
    InductionTask t;
    t.shift_query = shift;
    auto e = hdat::rng::engine(5);
    Batch b;
    t.sample(e, 200, b);
    const int L = t.length(), n = t.n_tokens;
    REQUIRE(L == 12);
    for (int s = 0; s < b.B; ++s) {
      const int* tok = &b.tokens[s * L];
      CHECK(tok[0] == 0);
      std::set<int> distinct(tok + 1, tok + 1 + n);
      CHECK(int(distinct.size()) == n);
      CHECK(*distinct.begin() >= 1);
      CHECK(*distinct.rbegin() <= t.vocab - 1);
      const int q = tok[L - 1] - (shift ? t.vocab : 0);
      const int k = int(std::find(tok + 1, tok + 1 + n, q) - tok);  // position of t_k
      REQUIRE(k >= 1);
      REQUIRE(k <= n - 1);
      CHECK(b.targets[s * L + L - 1] == tok[k + 1]);
      CHECK(b.answer[s] == tok[k + 1]);
      for (int i = 0; i < L - 1; ++i) CHECK(b.targets[s * L + i] == tok[i + 1]);
      CHECK(tok[L - 1] < t.input_vocab());
    }
    // Loss weights: the main position sums to 1 over the batch, the earlier ones to aux_weight.
    double main = 0, aux = 0;
    for (int s = 0; s < b.B; ++s)
      for (int i = 0; i < L; ++i) (i == L - 1 ? main : aux) += b.weights[s * L + i];
    CHECK(main == doctest::Approx(1.0));
    CHECK(aux == doctest::Approx(t.aux_weight));
  }
}

TEST_CASE("induction sequences with query_last (the authors' data): k = n asks for the query itself") {
  InductionTask t;
  t.shift_query = true;
  t.query_last = true;
  auto e = hdat::rng::engine(15);
  Batch b;
  t.sample(e, 4000, b);
  const int L = t.length(), n = t.n_tokens;
  int last = 0;
  for (int s = 0; s < b.B; ++s) {
    const int* tok = &b.tokens[s * L];
    const int q = tok[L - 1] - t.vocab;
    const int k = int(std::find(tok + 1, tok + 1 + n, q) - tok);
    REQUIRE(k >= 1);
    REQUIRE(k <= n);
    if (k == n) {
      ++last;
      CHECK(b.answer[s] == tok[L - 1]);  // the (shifted) query token
    } else {
      CHECK(b.answer[s] == tok[k + 1]);
    }
    CHECK(b.targets[s * L + L - 1] == b.answer[s]);
  }
  // k uniform over 1..n: the last token in 1/n of the sequences (binomial sd 0.0047 at 4000).
  CHECK(std::abs(double(last) / b.B - 1.0 / n) < 0.02);
}

TEST_CASE("classification sequences: tokens of one group, then CLS") {
  ClassificationTask t;
  auto e = hdat::rng::engine(6);
  Batch b;
  t.sample(e, 100, b);
  const int L = t.length();
  for (int s = 0; s < b.B; ++s) {
    const int y = b.answer[s];
    std::set<int> distinct;
    for (int i = 0; i < L - 1; ++i) {
      CHECK(t.label_of(b.tokens[s * L + i]) == y);
      distinct.insert(b.tokens[s * L + i]);
    }
    CHECK(int(distinct.size()) == t.n_tokens);
    CHECK(b.tokens[s * L + L - 1] == 0);
    CHECK(b.targets[s * L + L - 1] == y);
  }
}

TEST_CASE("metrics on hand-built maps: a pure BOS sink scores 1, uniform attention the BOS share") {
  const int L = 12;
  RowMat sink = RowMat::Zero(L, L);
  sink.col(0).setOnes();
  CHECK(sink_score(sink, 1, L - 3, 0) == 1.0);
  CHECK(sparsity_score(sink, {1, 2, 3}) == 1.0);

  // Uniform causal attention: row i puts 1/(i+1) on BOS, so the score is (1/(L−3)) Σ_{i=1}^{L−3} 1/(i+1).
  RowMat uniform = RowMat::Zero(L, L);
  for (int i = 0; i < L; ++i) uniform.row(i).head(i + 1).setConstant(1.0 / (i + 1));
  double share = 0;
  for (int i = 1; i <= L - 3; ++i) share += 1.0 / (i + 1);
  share /= (L - 3);
  CHECK(sink_score(uniform, 1, L - 3, 0) == doctest::Approx(share).epsilon(1e-15));
  CHECK(share == doctest::Approx((7381.0 / 2520.0 - 1.0) / 9.0).epsilon(1e-14));  // (H_10 − 1)/9, H_10 = 7381/2520
  std::vector<int> rows;
  for (int i = 1; i < L; ++i) rows.push_back(i);
  double sp = 0;
  for (int i = 1; i < L; ++i) sp += 1.0 / (i + 1);
  CHECK(sparsity_score(uniform, rows) == doctest::Approx(sp / (L - 1)));

  // The uniform attention kind of the model produces exactly this map.
  RowMat q = RowMat::Random(L, 4), k = RowMat::Random(L, 4), v = RowMat::Random(L, 4), S(L, L), A(L, L), O(L, 4);
  attention_head_forward<double>({AttentionKind::softmax, true, 1e-9}, q, k, v, S, A, O);
  attention_head_forward<double>({AttentionKind::uniform, true, 1e-9}, q, k, v, S, A, O);
  CHECK(sink_score(A, 1, L - 3, 0) == doctest::Approx(share).epsilon(1e-14));

  // Unnormalised weights: the score is the share of the row mass, scale-free.
  RowMat scaled = 3.7 * uniform;
  CHECK(sink_score(scaled, 1, L - 3, 0) == doctest::Approx(share).epsilon(1e-14));
  CHECK(sparsity_score(scaled, rows) == doctest::Approx(sp / (L - 1)));

  CHECK(share_above({0.95, 0.2, 0.91, 0.9}, 0.9) == 0.5);  // strictly above
  CHECK(top_key(uniform, 5, {0, 1, 2, 3, 4, 5}) == 0);      // ties go to the earlier key
}

namespace {

double fraction_correct(Transformer& m, const Batch& b) {
  const RowMat& logits = m.forward(b.tokens, b.B, b.L);
  int ok = 0;
  for (int s = 0; s < b.B; ++s) {
    Eigen::Index arg;
    logits.row(s * b.L + b.L - 1).maxCoeff(&arg);
    ok += int(arg) == b.answer[s];
  }
  return double(ok) / b.B;
}

}  // namespace

TEST_CASE("a tiny model overfits a handful of induction sequences") {
  for (AttentionKind kind : {AttentionKind::softmax, AttentionKind::sigmoid_unnorm, AttentionKind::linear_norm}) {
    CAPTURE(attention_name(kind));
    InductionTask task;
    task.vocab = 20;
    task.n_tokens = 6;
    auto e = hdat::rng::engine(2);
    Batch b;
    task.sample(e, 8, b);
    TransformerConfig c;
    c.vocab = task.input_vocab();
    c.n_out = task.n_out();
    c.max_len = task.length();
    c.width = 32;
    c.heads = 2;
    c.mlp_hidden = 64;
    c.attention = kind;
    Transformer m(c);
    auto init = hdat::rng::engine(4);
    m.initialize(init);
    AdamWOptions o;
    o.lr = 3e-3;
    AdamW adam(m.n_parameters(), o);
    RowMat dlogits;
    Eigen::VectorXd grad;
    double first = 0, last = 0;
    for (int step = 0; step < 300; ++step) {
      const double loss = cross_entropy(m.forward(b.tokens, b.B, b.L), b, &dlogits);
      if (step == 0) first = loss;
      last = loss;
      m.backward(dlogits, grad);
      adam.step(m.theta(), grad);
    }
    // The main target is memorised; the auxiliary targets are memorised too (8 fixed sequences).
    CHECK(fraction_correct(m, b) == 1.0);
    CHECK(last < 0.05 * first);
  }
}

namespace {
Config small_options(Task task, AttentionKind kind) {
  Config o;
  o.task = task;
  o.induction.vocab = 16;
  o.induction.n_tokens = 5;
  o.classification.classes = 3;
  o.classification.group_size = 5;
  o.classification.n_tokens = 5;
  o.model.width = 16;
  o.model.heads = 2;
  o.model.mlp_hidden = 32;
  o.model.attention = kind;
  o.model.causal = task == Task::induction;
  o.model.positions = task == Task::induction ? Positions::concat : Positions::none;
  o.steps = 40;
  o.batch = 16;
  o.n_train = 200;
  o.n_eval = 50;
  o.eval_every = 20;
  o.flip_pairs = 30;
  o.export_sequences = 1;
  o.seed = 9;
  return o;
}
}  // namespace

TEST_CASE("training is reproducible for a seed and differs between seeds") {
  const Config o = small_options(Task::induction, AttentionKind::softmax);
  const ExperimentResult a = run_experiment(o), b = run_experiment(o);
  Config o2 = o;
  o2.seed = 10;
  const ExperimentResult c = run_experiment(o2);
  REQUIRE(a.status == "ok");
  CHECK(a.eval_loss == b.eval_loss);  // bit for bit
  CHECK(a.heads[0].sink_score == b.heads[0].sink_score);
  CHECK(a.eval_loss != c.eval_loss);
  CHECK(a.curve.rows() == 3);  // steps 0, 20, 40
  // Exported maps: one per (layer, head, query) of the exported sequence, α over the visible keys.
  const auto& maps = a.maps.at("maps");
  CHECK(maps.size() == std::size_t(2 * 2 * o.induction.length()));
  for (const auto& m : maps) {
    const int t = m.at("query");
    CHECK(m.at("alpha").size() == std::size_t(t + 1));
    CHECK(m.at("values").size() == std::size_t(t + 1));
    CHECK(m.at("values")[0].size() == 8u);
    double s = 0;
    for (double x : m.at("alpha")) s += x;
    CHECK(s == doctest::Approx(1.0));
  }
}

TEST_CASE("classification: flip rates in [0, 1], CLS maps exported") {
  const Config o = small_options(Task::classification, AttentionKind::sigmoid_norm);
  const ExperimentResult r = run_experiment(o);
  REQUIRE(r.status == "ok");
  for (const auto& h : r.heads) {
    CHECK(h.flip_rate >= 0.0);
    CHECK(h.flip_rate <= 1.0);
    CHECK(std::isnan(h.sink_score));
  }
  CHECK(r.maps.at("maps").size() == 4u);  // CLS query only: 2 layers × 2 heads
  CHECK(r.maps.at("maps")[0].at("alpha").size() == std::size_t(o.classification.length()));
}

TEST_CASE("the sinks model through the registry: outputs, bad input") {
  hdat::Registry reg;
  hdat::register_sinks(reg);
  const hdat::ModelEntry& m = reg.get("sinks");
  std::vector<std::pair<std::string, json>> set = {{"width", 16}, {"heads", 2}, {"steps", 20}, {"batch", 8},
                                                   {"n_train", 100}, {"n_eval", 40}, {"eval_every", 10},
                                                   {"attention", "sigmoid_unnorm"}, {"mlp_ratio", 2}};
  const hdat::Params p = hdat::resolve_for(m, json(), set);
  hdat::RunContext ctx;
  ctx.quiet = true;
  const hdat::RunOutput out = m.commands.at("simulate")(p, ctx);
  CHECK(out.exit_code == 0);
  REQUIRE(out.files.count("sinks.json"));
  REQUIRE(out.files.count("attention_maps.json"));
  const json s = json::parse(out.files.at("sinks.json"));
  for (const char* key : {"accuracy", "sink_score", "sink_share", "sparsity", "flip_rate"}) CHECK(s.contains(key));
  CHECK(s.at("sink_score").size() == 2u);
  CHECK(s.at("sink_score")[1].size() == 2u);
  CHECK(out.tables.at("sim.csv").rows() == 3);
  CHECK(out.tables.at("attention.csv").rows() == std::size_t(2 * 2 * 12 * 12));

  auto bad = [&](std::vector<std::pair<std::string, json>> a) { CHECK_THROWS_AS(hdat::resolve_for(m, json(), a), hdat::InputError); };
  bad({{"width", 10}, {"heads", 4}});
  bad({{"attention", "softmax2"}});
  bad({{"width", 17}, {"heads", 1}, {"positions", "concat"}});
  bad({{"task", "classification"}, {"n_tokens", 12}});
  bad({{"vocab", 8}, {"n_tokens", 10}});
  bad({{"epochs", 2}, {"n_train", 0}});

  // Epochs: 100 sequences in batches of 32 are 4 batches per epoch (the last of 4 sequences) with
  // batching=epochs, and ceil(2·100/32) = 7 full batches for 2 epochs with cyclic batching.
  for (auto [batching, steps] : {std::pair{"epochs", 8}, std::pair{"cyclic", 7}}) {
    std::vector<std::pair<std::string, json>> e = {{"width", 16}, {"heads", 2}, {"epochs", 2}, {"batch", 32},
                                                   {"n_train", 100}, {"n_eval", 20}, {"batching", batching},
                                                   {"precision", "float32"}, {"query_last", true}};
    const hdat::RunOutput o = m.commands.at("simulate")(hdat::resolve_for(m, json(), e), ctx);
    CHECK(o.exit_code == 0);
    CHECK(o.info.at("training").at("steps_done").get<int>() == steps);
    CHECK(o.info.at("training").at("precision") == "float32");
    CHECK(o.info.at("training").at("matrix_products") == (hdat::linalg::onednn_available() ? "oneDNN sgemm" : "Eigen"));
  }
}

TEST_CASE("sinks keys that apply only to some configurations: setting one elsewhere is an input error") {
  hdat::Registry reg;
  hdat::register_sinks(reg);
  const hdat::ModelEntry& m = reg.get("sinks");
  // The error names the key that does not apply (not the one that makes it not apply).
  auto rejected_key = [&](std::vector<std::pair<std::string, json>> a) -> std::string {
    try {
      hdat::resolve_for(m, json(), a);
    } catch (const hdat::InputError& e) {
      return e.key();
    }
    return "";
  };
  CHECK(rejected_key({{"task", "classification"}, {"aux_weight", 0.3}}) == "aux_weight");
  CHECK(rejected_key({{"task", "classification"}, {"shift_query", true}}) == "shift_query");
  CHECK(rejected_key({{"task", "classification"}, {"query_last", true}}) == "query_last");
  CHECK(rejected_key({{"task", "classification"}, {"vocab", 60}}) == "vocab");
  CHECK(rejected_key({{"task", "classification"}, {"sink_threshold", 0.8}}) == "sink_threshold");
  CHECK(rejected_key({{"flip_pairs", 10}}) == "flip_pairs");  // induction is the default task
  CHECK(rejected_key({{"classes", 3}}) == "classes");
  CHECK(rejected_key({{"group_size", 5}}) == "group_size");
  CHECK(rejected_key({{"epochs", 2}, {"steps", 100}}) == "steps");
  CHECK(rejected_key({{"n_train", 0}, {"batching", "epochs"}}) == "batching");
  CHECK(rejected_key({{"attention", "softmax"}, {"norm_eps", 1e-6}}) == "norm_eps");
  CHECK(rejected_key({{"attention", "linear_unnorm"}, {"norm_eps", 1e-6}}) == "norm_eps");
  CHECK(rejected_key({{"attention", "relu_norm"}, {"norm_eps", 0.0}}) == "norm_eps");  // its row sum can vanish
  // Where they apply they are accepted (aliases of the kinds included), and defaults never trip a condition.
  CHECK(rejected_key({{"task", "classification"}, {"flip_pairs", 10}, {"classes", 3}}) == "");
  CHECK(rejected_key({{"shift_query", true}, {"query_last", true}, {"aux_weight", 0.0}, {"sink_threshold", 0.8}}) == "");
  CHECK(rejected_key({{"attention", "coupled_linear_norm"}, {"norm_eps", 0.0}}) == "");
  CHECK(rejected_key({{"attention", "sigmoid_norm"}, {"norm_eps", 1e-6}}) == "");
  CHECK(rejected_key({{"epochs", 2}, {"batching", "epochs"}}) == "");
  CHECK(rejected_key({{"task", "classification"}}) == "");
}

TEST_CASE("study table pools the models above the accuracy threshold") {
  std::vector<json> recs = {
      {{"task", "induction"}, {"attention", "softmax"}, {"heads", 4}, {"accuracy", 0.99}, {"above_accuracy_threshold", true},
       {"sink_share", 0.75}, {"sparsity_mean", 0.8}},
      {{"task", "induction"}, {"attention", "softmax"}, {"heads", 4}, {"accuracy", 0.97}, {"above_accuracy_threshold", true},
       {"sink_share", 0.25}, {"sparsity_mean", 0.6}},
      {{"task", "induction"}, {"attention", "softmax"}, {"heads", 4}, {"accuracy", 0.5}, {"above_accuracy_threshold", false},
       {"sink_share", 1.0}, {"sparsity_mean", 0.7}},
      {{"task", "induction"}, {"attention", "sigmoid_unnorm"}, {"heads", 4}, {"accuracy", 0.4},
       {"above_accuracy_threshold", false}, {"sink_share", 0.0}}};
  const hdat::Table t = study_table(recs);
  REQUIRE(t.rows() == 2);
  // Sorted by (task, attention): sigmoid_unnorm first.
  CHECK(t.text(1, "attention") == "softmax");
  CHECK(t.number(1, "models") == 3);
  CHECK(t.number(1, "models_above") == 2);
  CHECK(t.number(1, "sink_share") == doctest::Approx(0.5));  // (3 + 1) / 8 heads
  CHECK(t.number(1, "sink_share_sd") == doctest::Approx(std::sqrt(0.125)));
  CHECK(t.number(1, "sparsity") == doctest::Approx(0.7));
  CHECK(std::isnan(t.number(0, "sink_share")));  // no model above the threshold
}

TEST_CASE("protocol table: the figure's statistic over the runs above the accuracy threshold") {
  hdat::Table sweep({"attention", "heads", "lr", "seed", "accuracy", "sink_heads", "status"});
  sweep.add_row(std::vector<hdat::Cell>{"softmax", 4.0, 1e-3, 0.0, 0.99, 3.0, "ok"});
  sweep.add_row(std::vector<hdat::Cell>{"softmax", 1.0, 1e-3, 1.0, 0.97, 1.0, "ok"});
  sweep.add_row(std::vector<hdat::Cell>{"softmax", 8.0, 1e-2, 0.0, 0.50, 8.0, "ok"});     // below the threshold
  sweep.add_row(std::vector<hdat::Cell>{"softmax", 2.0, 1e-4, 0.0, 0.99, 2.0, "error"});  // failed: not a run
  sweep.add_row(std::vector<hdat::Cell>{"linear_unnorm", 2.0, 1e-3, 0.0, 0.96, 0.0, "ok"});
  const hdat::Table t = protocol_table(sweep, 0.95);
  REQUIRE(t.rows() == 2);
  CHECK(t.text(0, "attention") == "softmax");  // the figure's order
  CHECK(t.text(1, "authors_code") == "linear_unnorm");
  CHECK(t.text(1, "figure_label") == "elu·elu");
  CHECK(t.number(1, "normalised") == 0);
  CHECK(t.number(0, "runs") == 3);
  CHECK(t.number(0, "runs_above") == 2);
  CHECK(t.number(0, "sink_share_mean") == doctest::Approx((0.75 + 1.0) / 2));  // mean of the per-run shares
  CHECK(t.number(0, "sink_share_se") == doctest::Approx(std::sqrt(0.03125) / std::sqrt(2.0)));
  CHECK(t.number(0, "sink_share_pooled") == doctest::Approx(4.0 / 5.0));      // sink heads / heads
  CHECK(t.number(0, "share_h4") == doctest::Approx(0.75));
  CHECK(std::isnan(t.number(0, "share_h8")));
  CHECK(t.number(1, "sink_share_mean") == 0.0);
  CHECK(authors_name("elu_norm").code == "coupled_linear_norm");
  CHECK(authors_name("raw_dotproduct_unnorm").figure == "linear");
}
