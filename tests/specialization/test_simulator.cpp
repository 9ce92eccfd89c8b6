// The finite-D online-SGD simulator: initial overlaps, reproducibility, thread independence, and
// the projected test set against full D-dimensional test sequences.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cmath>

#include "common.hpp"
#include "hdat/specialization/curve.hpp"
#include "hdat/core/harness.hpp"
#include "hdat/specialization/declaration.hpp"
#include "hdat/specialization/simulator.hpp"

using namespace hdat;
using namespace hdat::specialization;
using spec_test::params;

TEST_CASE("initial overlaps match their exact law: M_hf ~ N(0, s0^2/D), R = s0^2 (I + O(1/sqrt D))") {
  const Params p = params({"H=2", "F=2", "init_std=0.3"});
  const Config s = Config::from(p);
  const int D = 400, runs = 200;
  double m_sum = 0, m_sq = 0, rd_sum = 0, rd_sq = 0, ro_sum = 0, ro_sq = 0;
  int nm = 0, nd = 0, no = 0;
  for (int k = 0; k < runs; ++k) {
    OnlineSGD sgd(s, D, 11, static_cast<std::uint64_t>(k));
    const Eigen::MatrixXd M = sgd.M(), R = sgd.R();
    for (int i = 0; i < M.size(); ++i) m_sum += M.data()[i], m_sq += M.data()[i] * M.data()[i], ++nm;
    for (int h = 0; h < 2; ++h) rd_sum += R(h, h), rd_sq += R(h, h) * R(h, h), ++nd;
    ro_sum += R(0, 1), ro_sq += R(0, 1) * R(0, 1), ++no;
    CHECK(std::fabs(sgd.value_overlap()(0)) < 6 * 0.3 / std::sqrt(D));
  }
  const double s2 = 0.09;
  const double m_mean = m_sum / nm, m_var = m_sq / nm - m_mean * m_mean;
  CHECK(std::fabs(m_mean) < 4 * std::sqrt(s2 / D / nm));
  CHECK(m_var == doctest::Approx(s2 / D).epsilon(0.15));  // 800 draws: 5% statistical error on a variance
  const double rd_mean = rd_sum / nd, rd_var = rd_sq / nd - rd_mean * rd_mean;
  CHECK(std::fabs(rd_mean - s2) < 4 * std::sqrt(2 * s2 * s2 / D / nd));
  CHECK(rd_var == doctest::Approx(2 * s2 * s2 / D).epsilon(0.2));  // chi-square: Var |k|^2/D = 2 s0^4 / D
  const double ro_mean = ro_sum / no, ro_var = ro_sq / no - ro_mean * ro_mean;
  CHECK(std::fabs(ro_mean) < 4 * std::sqrt(s2 * s2 / D / no));
  CHECK(ro_var == doctest::Approx(s2 * s2 / D).epsilon(0.3));
}

TEST_CASE("runs are reproducible and independent of the thread count") {
  const auto model = dynamics_model();
  auto ensemble = [&](const char* seed, int threads) {
    const Params p = params({"H=2", "activation=softmax", "D=150", "seeds=3", seed, "test_size=200", "t_points=[0,0.5,1]"});
    RunContext ctx;
    ctx.quiet = true;
    ctx.threads = threads;
    return run_ensemble(Bound(*model, p), 150, ctx);
  };
  const Ensemble a = ensemble("seed=4", 1), b = ensemble("seed=4", 2);
  REQUIRE(a.runs.size() == 3);
  for (std::size_t k = 0; k < 3; ++k) CHECK(a.runs[k].table().to_csv() == b.runs[k].table().to_csv());
  CHECK(a.mean.table().to_csv() == b.mean.table().to_csv());
  // A different seed gives a different run.
  const Ensemble c = ensemble("seed=5", 2);
  CHECK(c.runs[0].table().to_csv() != a.runs[0].table().to_csv());
}

TEST_CASE("projected test sequences have the law of full D-dimensional ones") {
  // Same weights, independent test sets: the two risk estimates agree within their errors, across
  // several weight configurations along a run.
  for (const char* act : {"softmax", "bayes"}) {
    CAPTURE(act);
    const Params p = params({"H=2", fmt::format("activation={}", act), "eta=1"});
    OnlineSGD sgd(Config::from(p), 200, 3, 0);
    for (double t : {0.0, 3.0, 10.0}) {
      sgd.advance_to(t);
      const auto [rp, sp] = sgd.test_risk(40000, true);
      const auto [rf, sf] = sgd.test_risk(4000, false);
      CAPTURE(t);
      CHECK(std::fabs(rp - rf) < 4 * std::sqrt(sp * sp + sf * sf));
    }
  }
}

TEST_CASE("an interrupted ensemble keeps its finished seeds and the rerun reuses them") {
  const auto model = dynamics_model();
  const Params p = params({"H=1", "activation=softmax", "D=100", "seeds=2", "test_size=100", "t_points=[0,0.5]"});
  const auto dir = std::filesystem::temp_directory_path() / "hdat_test_sim_persist";
  std::filesystem::remove_all(dir);
  RunContext ctx;
  ctx.quiet = true;
  ctx.threads = 1;
  ctx.out = dir;
  const Ensemble first = run_ensemble(Bound(*model, p), 100, ctx);
  // One table per finished seed, and its record (the engine) beside it.
  int tables = 0, records = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir / "seeds"))  // each seed's initial state (*.initial.json) aside
    if (f.path().string().find(".initial.json") == std::string::npos) (f.path().extension() == ".json" ? records : tables) += 1;
  CHECK(tables == 2);
  CHECK(records == 2);
  const Ensemble again = run_ensemble(Bound(*model, p), 100, ctx);  // loads both seeds from disk
  CHECK(again.mean.table().to_csv() == first.mean.table().to_csv());
  std::filesystem::remove_all(dir);
}
