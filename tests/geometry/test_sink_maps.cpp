// Sink geometry, the Retriever/Mixer/Reset taxonomy with its explicit parameters, and the JSON
// attention-map format.
#include <doctest/doctest.h>

#include <cmath>

#include "hdat/core/error.hpp"
#include "hdat/geometry/maps.hpp"
#include "hdat/geometry/sink.hpp"

using namespace hdat;
using namespace hdat::geometry;

TEST_CASE("sink geometry in closed form") {
  Eigen::MatrixXd v(2, 4);
  v << 0.5, 1, 0, -3,  //
      0, 0, 2, 0;
  // Norms: sink 0.5, others (1, 2, 3): median 2, mean 2, population sd sqrt(2/3).
  const SinkGeometry g = sink_geometry(v, 0, 3);
  CHECK(g.sink_norm == 0.5);
  CHECK(g.median_norm == 2.0);
  CHECK(g.norm_ratio == 0.25);
  CHECK(g.norm_cv == doctest::Approx(std::sqrt(2.0 / 3.0) / 2.0).epsilon(1e-14));
  CHECK(g.cos_current == doctest::Approx(-1.0).epsilon(1e-12));  // v_3 = −3 e1 against v_0 = 0.5 e1
  // mean of others = (−2/3, 2/3): cos with e1 = −1/√2.
  CHECK(g.cos_mean_others == doctest::Approx(-1.0 / std::sqrt(2.0)).epsilon(1e-12));
  // Even count: median is the mean of the middle two.
  const SinkGeometry h = sink_geometry(v.leftCols(3), 0, 2);
  CHECK(h.median_norm == 1.5);
  CHECK(std::isnan(sink_geometry(v, 3, 3).cos_current));
  CHECK_THROWS_AS(sink_geometry(v, 4, 3), InputError);
  CHECK_THROWS_AS(sink_geometry(v.leftCols(1), 0, 0), InputError);
}

TEST_CASE("taxonomy: the winner is argmax α_j |v_j|, with explicit tie rule and margin") {
  Eigen::MatrixXd v = Eigen::MatrixXd::Ones(2, 4);
  TaxonomyOptions o;
  CHECK(classify_query(Eigen::VectorXd{{0.1, 0.1, 0.1, 0.7}}, v, o) == Role::retriever);
  CHECK(classify_query(Eigen::VectorXd{{0.7, 0.1, 0.1, 0.1}}, v, o) == Role::mixer);
  CHECK(classify_query(Eigen::VectorXd{{0.1, 0.7, 0.1, 0.1}}, v, o) == Role::reset);
  // The sink's large α does not win when its value vector is small (contribution, not attention).
  Eigen::MatrixXd small_sink = v;
  small_sink.col(0) *= 0.05;
  CHECK(classify_query(Eigen::VectorXd{{0.7, 0.1, 0.05, 0.15}}, small_sink, o) == Role::retriever);
  // Exact tie between sink and current token: earlier -> Mixer, later -> Retriever.
  const Eigen::VectorXd tie{{0.4, 0.1, 0.1, 0.4}};
  CHECK(classify_query(tie, v, o) == Role::mixer);
  TaxonomyOptions later = o;
  later.tie = Tie::later;
  CHECK(classify_query(tie, v, later) == Role::retriever);
  // Winner margin: 0.36 vs 0.34 leads by 6 %; a 10 % margin calls it Reset.
  const Eigen::VectorXd close{{0.34, 0.15, 0.15, 0.36}};
  CHECK(classify_query(close, v, o) == Role::retriever);
  TaxonomyOptions margin = o;
  margin.winner_margin = 0.1;
  CHECK(classify_query(close, v, margin) == Role::reset);
  CHECK(classify_query(Eigen::VectorXd{{0.1, 0.1, 0.1, 0.7}}, v, margin) == Role::retriever);
  // Another sink index.
  TaxonomyOptions sink1 = o;
  sink1.sink = 1;
  CHECK(classify_query(Eigen::VectorXd{{0.1, 0.7, 0.1, 0.1}}, v, sink1) == Role::mixer);
  // The sink's own query cannot be classified.
  CHECK_THROWS_AS(classify_query(Eigen::VectorXd::Ones(1), Eigen::MatrixXd::Ones(2, 1), o), InputError);
  const Winner w = winning_source(Eigen::VectorXd{{0.2, 0.5, 0.3}}, Eigen::MatrixXd::Ones(1, 3), Tie::earlier);
  CHECK(w.source == 1);
  CHECK(w.score == 0.5);
  CHECK(w.runner_up == 0.3);
}

TEST_CASE("taxonomy: a head's label is the plurality over queries, ties to the less specific label") {
  TaxonomyOptions o;
  HeadLabel h = aggregate_roles({5, 3, 2}, o);
  CHECK(h.label == Role::retriever);
  CHECK(h.share[0] == 0.5);
  CHECK(h.queries == 10);
  CHECK(aggregate_roles({3, 3, 2}, o).label == Role::mixer);
  CHECK(aggregate_roles({1, 1, 1}, o).label == Role::reset);
  CHECK(aggregate_roles({0, 4, 1}, o).label == Role::mixer);
  o.min_share = 0.5;  // a strict majority is needed
  CHECK(aggregate_roles({4, 3, 3}, o).label == Role::reset);
  CHECK(aggregate_roles({6, 3, 1}, o).label == Role::retriever);
  CHECK_THROWS_AS(aggregate_roles({0, 0, 0}, o), InputError);
}

TEST_CASE("attention-map JSON: round trip and clear errors") {
  AttentionMap a;
  a.layer = 1;
  a.head = 3;
  a.query = 2;
  a.alpha = Eigen::VectorXd{{0.5, 0.25, 0.25}};
  a.values = Eigen::MatrixXd::Random(4, 3);
  AttentionMap b = a;
  b.sink = 1;
  b.document = 7;
  const auto doc = maps_to_json({a, b});
  const auto back = parse_maps(doc);
  REQUIRE(back.size() == 2);
  CHECK(back[0].layer == 1);
  CHECK(back[0].head == 3);
  CHECK(back[0].query == 2);
  CHECK(back[0].alpha == a.alpha);
  CHECK(back[0].values == a.values);
  CHECK(back[0].sink == -1);
  CHECK(back[1].sink == 1);
  CHECK(back[1].document == 7);

  // The spec's example spelled out.
  const auto spec = nlohmann::json::parse(R"({"maps": [{"layer": 0, "head": 0, "query": 1, "alpha": [0.3, 0.7],
      "values": [[1, 0, 2], [0, 1, 0]], "sink": 0}]})");
  const auto m = parse_maps(spec);
  CHECK(m[0].values.rows() == 3);
  CHECK(m[0].values(2, 0) == 2.0);

  auto broken = [&](const std::string& text, const std::string& fragment) {
    try {
      parse_maps(nlohmann::json::parse(text));
      FAIL("accepted: " << text);
    } catch (const InputError& e) {
      CHECK(e.key() == "--maps");
      CHECK_MESSAGE(std::string(e.what()).find(fragment) != std::string::npos, e.what());
    }
  };
  broken(R"({"map": []})", "\"maps\"");
  broken(R"({"maps": []})", "non-empty");
  broken(R"({"maps": [{"layer": 0, "head": 0, "query": 1, "alpha": [1], "values": [[1]]}]})", "sees 2 sources");
  broken(R"({"maps": [{"layer": 0, "head": 0, "query": 1, "alpha": [0.5, 0.5], "values": [[1]]}]})", "has 1 vectors");
  broken(R"({"maps": [{"layer": 0, "head": 0, "query": 1, "alpha": [0.5, 0.5], "values": [[1], [1, 2]]}]})", "width");
  broken(R"({"maps": [{"layer": 0, "head": 0, "query": 1, "alpha": [1.5, -0.5], "values": [[1], [2]]}]})", "negative");
  broken(R"({"maps": [{"layer": 0, "head": 0, "query": 1, "alpha": [0.5, "x"], "values": [[1], [2]]}]})", "alpha[1]");
  broken(R"({"maps": [{"layer": -1, "head": 0, "query": 0, "alpha": [1], "values": [[1]]}]})", "\"layer\"");
  broken(R"({"maps": [{"layer": 0.5, "head": 0, "query": 0, "alpha": [1], "values": [[1]]}]})", "\"layer\"");
  broken(R"({"maps": [{"head": 0, "query": 0, "alpha": [1], "values": [[1]]}]})", "missing \"layer\"");
  broken(R"({"maps": [{"layer": 0, "head": 0, "query": 0, "alpha": [1], "values": [[1]], "sink": 1}]})", "sink 1");
  broken(R"({"maps": [{"layer": 0, "head": 0, "query": 0, "alpha": [1], "values": [[1]], "sinks": 0}]})", "unknown key \"sinks\"");
  broken(R"({"maps": [{"layer": 0, "head": 0, "query": 0, "alpha": [1], "values": [[]]}]})", "values[0]");
  // Found by fuzz_maps: a huge head index made the analysis allocate tables for every (layer, head)
  // up to it (72 GB); indices are bounded, and so is the number of cells they span.
  broken(R"({"maps": [{"layer": 0, "head": 77777777777770, "query": 0, "alpha": [1], "values": [[1]]}]})", "[0, 4095]");
  broken(R"({"maps": [{"layer": 4000, "head": 4000, "query": 0, "alpha": [1], "values": [[1]]}]})", "layers x heads");
  CHECK(parse_maps(nlohmann::json::parse(R"({"maps": [{"layer": 11, "head": 4095, "query": 0, "alpha": [1], "values": [[1]]}]})"))[0].head == 4095);
  CHECK_THROWS_AS(read_maps("/nonexistent/maps.json"), InputError);
}
