// The analysis driver: closed-form maps, the averaging order (documents last), the JSON round trip
// (maps exported from the checkpoint analysis give the same numbers), thread-count independence,
// sparsification identities, and input errors that name the key.
#include <doctest/doctest.h>

#include <cmath>

#include "hdat/core/error.hpp"
#include "hdat/geometry/maps.hpp"
#include "model_path.hpp"
#include "hdat/geometry/analysis.hpp"
#include "hdat/geometry/sparsify.hpp"

using namespace hdat;
using namespace hdat::geometry;

namespace {

Params settings(const std::vector<std::pair<std::string, nlohmann::json>>& sets) {
  return resolve(analysis_params(), nullptr, sets);
}

RunContext quiet(int threads = 1) {
  RunContext ctx;
  ctx.threads = threads;
  ctx.quiet = true;
  return ctx;
}

// Rows of `t` where every column in `want` has the given text.
std::vector<std::size_t> rows(const Table& t, const std::map<std::string, std::string>& want) {
  std::vector<std::size_t> r;
  for (std::size_t i = 0; i < t.rows(); ++i) {
    bool ok = true;
    for (const auto& [c, v] : want) ok = ok && t.text(i, c) == v;
    if (ok) r.push_back(i);
  }
  return r;
}

AttentionMap orthogonal_map(int layer, int head, long document, int peak) {
  AttentionMap m;
  m.layer = layer;
  m.head = head;
  m.query = 3;
  m.alpha = Eigen::VectorXd::Constant(4, 0.1);
  m.alpha(peak) = 0.7;
  m.values = 2.0 * Eigen::MatrixXd::Identity(4, 4);  // orthogonal, equal norms
  m.document = document;
  return m;
}

AttentionMap worked_example(int layer, int head, long document) {
  AttentionMap m;
  m.layer = layer;
  m.head = head;
  m.query = 3;
  m.alpha = Eigen::VectorXd{{0.4, 0.3, 0.2, 0.1}};
  m.values.resize(2, 4);
  m.values << 1, 0, 0, 4, 0, 1, 0, 3;
  m.document = document;
  return m;
}

}  // namespace

TEST_CASE("maps with orthogonal equal-norm values: F = 1 for top and random; the taxonomy follows the peak") {
  std::vector<AttentionMap> maps;
  for (long d = 0; d < 3; ++d) {
    maps.push_back(orthogonal_map(0, 0, d, 3));  // peak on the query itself: Retriever
    maps.push_back(orthogonal_map(0, 1, d, 0));  // peak on the sink: Mixer
    maps.push_back(orthogonal_map(1, 0, d, 1));  // peak elsewhere: Reset
  }
  RunContext ctx = quiet();
  const RunOutput out = analyze_maps(maps, settings({{"bootstrap", 100}}), ctx);
  const Table& s = out.tables.at("summary.csv");
  for (std::size_t r = 0; r < s.rows(); ++r) {
    if (s.text(r, "selection") == "top_minus_random") CHECK(s.number(r, "F") == 0.0);
    else CHECK(s.number(r, "F") == 1.0);
    CHECK(s.number(r, "units") == 3);
  }
  const Table& h = out.tables.at("heads.csv");
  REQUIRE(h.rows() == 3);
  CHECK(h.text(0, "label") == "retriever");
  CHECK(h.number(0, "retriever_share") == 1.0);
  CHECK(h.text(1, "label") == "mixer");
  CHECK(h.text(2, "label") == "reset");
  CHECK(h.number(2, "previous_share") == 0.0);
  CHECK(h.number(0, "sink_norm_ratio") == 1.0);  // equal norms
  CHECK(h.number(0, "norm_cv") == 0.0);
  CHECK(h.number(0, "cos_sink_current") == 0.0);  // orthogonal
  CHECK(h.number(1, "sink_attention_final") == doctest::Approx(0.7));
  CHECK(out.info.at("bootstrap_unit") == "document");
}

TEST_CASE("averaging order: maps within a document first, then documents") {
  // Document 0: one orthogonal map (F_2 = 1). Document 1: one orthogonal map and two copies of the
  // worked example (Euclidean F_2 = 0). Document means 1 and 1/3: the summary is 2/3, not the
  // pooled 2/4.
  std::vector<AttentionMap> maps = {orthogonal_map(0, 0, 0, 3), orthogonal_map(0, 0, 1, 3), worked_example(1, 0, 1),
                                    worked_example(1, 1, 1)};
  RunContext ctx = quiet();
  const RunOutput out = analyze_maps(maps, settings({{"bootstrap", 0}, {"random_repeats", 0}}), ctx);
  const Table& s = out.tables.at("summary.csv");
  const auto r = rows(s, {{"queries", "all"}, {"distance", "euclidean"}, {"selection", "top"}});
  REQUIRE(r.size() == 2);  // N = 1, 2
  CHECK(s.number(r[1], "N") == 2);
  CHECK(s.number(r[1], "F") == doctest::Approx(2.0 / 3.0).epsilon(1e-14));
  CHECK(s.number(r[1], "precision") == doctest::Approx((1.0 + (1.0 + 2.0 / 3 + 2.0 / 3) / 3) / 2).epsilon(1e-14));
  // geometry.csv: the per-map row of the worked example, averaged over the one document holding it.
  const Table& g = out.tables.at("geometry.csv");
  const auto w = rows(g, {{"distance", "euclidean"}, {"selection", "top"}});
  bool seen = false;
  for (std::size_t i : w)
    if (g.number(i, "layer") == 1 && g.number(i, "head") == 0 && g.number(i, "N") == 2) {
      CHECK(g.number(i, "precision") == doctest::Approx(2.0 / 3.0));
      CHECK(g.number(i, "recall") == 0.0);
      CHECK(g.number(i, "ginv") == 2.0);
      seen = true;
    }
  CHECK(seen);
  // Without document keys every map is its own unit.
  for (auto& m : maps) m.document = -1;
  const RunOutput per_map = analyze_maps(maps, settings({{"bootstrap", 0}, {"random_repeats", 0}}), ctx);
  CHECK(per_map.info.at("bootstrap_unit") == "map");
  const Table& s2 = per_map.tables.at("summary.csv");
  const auto r2 = rows(s2, {{"queries", "all"}, {"distance", "euclidean"}, {"selection", "top"}});
  CHECK(s2.number(r2[1], "F") == doctest::Approx(0.5).epsilon(1e-14));
}

TEST_CASE("checkpoint analysis: exported maps read back give the same tables; thread count does not matter") {
  const auto p = settings({{"documents", 3}, {"tokens", 40}, {"export_maps", 3}, {"sparsify.enabled", false}, {"bootstrap", 200},
                           {"random_repeats", 4}, {"plots", false}});
  RunContext one = quiet(1), two = quiet(2);
  const RunOutput a = analyze_model(stories260k_path(), p, one);
  const RunOutput b = analyze_model(stories260k_path(), p, two);
  for (const char* name : {"geometry.csv", "summary.csv", "sink_effect.csv", "heads.csv", "taxonomy.csv", "attention_mass.csv"})
    CHECK_MESSAGE(a.tables.at(name).to_csv() == b.tables.at(name).to_csv(), name);
  CHECK(a.info.at("sample_nll") == b.info.at("sample_nll"));
  CHECK(a.files.at("documents.txt") == b.files.at("documents.txt"));

  const std::vector<AttentionMap> maps = parse_maps(nlohmann::json::parse(a.files.at("maps.json")));
  CHECK(maps.size() == 3u * 40u * a.info.at("evaluated_queries").size());
  RunContext ctx = quiet(2);
  const RunOutput m = analyze_maps(maps, p, ctx);
  for (const char* name : {"geometry.csv", "summary.csv", "sink_effect.csv"})
    CHECK_MESSAGE(a.tables.at(name).to_csv() == m.tables.at(name).to_csv(), name);
  // The contract's columns.
  CHECK(a.tables.at("geometry.csv").columns() ==
        std::vector<std::string>{"layer", "head", "query", "N", "distance", "selection", "precision", "recall", "F", "margin", "ginv"});
  const auto& hc = a.tables.at("heads.csv").columns();
  CHECK(std::vector<std::string>(hc.begin(), hc.begin() + 8) ==
        std::vector<std::string>{"layer", "head", "sink_norm_ratio", "norm_cv", "label", "retriever_share", "mixer_share", "reset_share"});
  CHECK(a.info.contains("sample_nll"));
}

TEST_CASE("sparsification: nothing removed costs nothing, everything removed is one model whatever the order") {
  const auto p = settings({{"documents", 2}, {"tokens", 48}, {"sparsify.documents", 2}, {"sparsify.step", 13}, {"sparsify.random_orders", 2},
                           {"bootstrap", 0}, {"random_repeats", 0}, {"plots", false}, {"queries.stride", 47}});
  RunContext ctx = quiet(2);
  const RunOutput out = analyze_model(stories260k_path(), p, ctx);
  const Table& c = out.tables.at("sparsify.csv");
  CHECK(c.number(0, "delta") == 0.0);
  std::vector<double> all_removed;
  for (std::size_t r = 0; r < c.rows(); ++r)
    if (c.number(r, "removed") == 40) all_removed.push_back(c.number(r, "nll"));
  REQUIRE(all_removed.size() == 4u);  // taxonomy, write_norm, entropy, random
  for (double x : all_removed) CHECK(x == doctest::Approx(all_removed[0]).epsilon(1e-12));
  CHECK(all_removed[0] > c.number(0, "nll") + 1.0);  // without attention the model is far worse
  CHECK(out.tables.at("single_heads.csv").rows() == 40u);
}

TEST_CASE("removal orders and their parameters") {
  detail::HeadScores s;
  s.layers = 1;
  s.heads = 4;
  s.write_norm = {0.3, 0.1, 0.4, 0.2};
  s.entropy = {1.0, 3.0, 2.0, 0.5};
  s.labels.resize(4);
  s.labels[0].label = Role::retriever;
  s.labels[0].share = {0.6, 0.0, 0.4};
  s.labels[1].label = Role::reset;
  s.labels[1].share = {0.2, 0.1, 0.7};
  s.labels[2].label = Role::mixer;
  s.labels[2].share = {0.1, 0.8, 0.1};
  s.labels[3].label = Role::reset;
  s.labels[3].share = {0.0, 0.1, 0.9};
  const auto order = detail::parse_class_order("mixer, reset,retriever", "sparsify.order");
  CHECK(detail::removal_order("taxonomy", s, order) == std::vector<int>{2, 3, 1, 0});
  CHECK(detail::removal_order("write_norm", s, order) == std::vector<int>{1, 3, 0, 2});
  CHECK(detail::removal_order("entropy", s, order) == std::vector<int>{1, 2, 0, 3});
  CHECK_THROWS_AS(detail::parse_class_order("mixer,reset", "sparsify.order"), InputError);
  CHECK_THROWS_AS(detail::parse_class_order("mixer,reset,reset", "sparsify.order"), InputError);
  CHECK_THROWS_AS(detail::parse_class_order("mixer,reset,sink", "sparsify.order"), InputError);
}

TEST_CASE("bad settings and inputs name the key") {
  auto key_of = [](auto&& f) {
    try {
      f();
    } catch (const InputError& e) {
      return e.key();
    }
    return std::string("(no error)");
  };
  CHECK(key_of([] { settings({{"n_maxx", 4}}); }) == "n_maxx");
  CHECK(key_of([] { settings({{"n_max", 0}}); }) == "n_max");
  CHECK(key_of([] { settings({{"ranking", "alpha"}}); }) == "ranking");
  CHECK(key_of([] { settings({{"confidence", 1.0}}); }) == "confidence");
  RunContext ctx = quiet();
  CHECK(key_of([&] { analyze_model(stories260k_path(), settings({{"tokens", 600}}), ctx); }) == "tokens");
  CHECK(key_of([&] { analyze_model(stories260k_path(), settings({{"sparsify.order", "reset"}}), ctx); }) == "sparsify.order");
  CHECK(key_of([&] { analyze_model(stories260k_path(), settings({{"queries.bins", nlohmann::json::array({4, 1})}}), ctx); }) ==
        "queries.bins");
  CHECK(key_of([&] { analyze_model("/nonexistent/model.bin", settings({}), ctx); }) == "--model-file");
  CHECK(key_of([&] { analyze_maps({}, settings({}), ctx); }) == "--maps");
}
