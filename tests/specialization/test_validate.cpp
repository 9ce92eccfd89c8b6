// Theory against simulation, at small D and short times (a few seconds each): the trajectory
// comparison and the drift check pass with the correct equations and FAIL with a broken term.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "common.hpp"
#include "hdat/core/harness.hpp"
#include "hdat/specialization/declaration.hpp"

using namespace hdat;
using namespace hdat::specialization;
using spec_test::params;

namespace {
RunOutput run_validate(std::vector<std::string> sets) {
  RunContext ctx;
  ctx.quiet = true;
  ctx.threads = 2;
  return dynamics_validate(*dynamics_model(), params(sets), ctx);
}
}  // namespace

TEST_CASE("H = 1 (no symmetry breaking): theory and simulation agree over the whole run") {
  const auto out = run_validate({"H=1", "F=2", "activation=softmax", "eta=1", "dims=[200,400]", "seeds=16", "t_max=8",
                                 "n_points=8", "test_size=4000", "mc_samples=8000"});
  CHECK(out.exit_code == 0);
  CHECK(out.info["validation"]["verdict"] == "agree");
}

TEST_CASE("early phase of a multi-head run: agreement; broken eta^2 term or wrong sign of 2gg: disagreement") {
  const std::vector<std::string> base = {"H=2", "activation=softmax", "eta=1", "dims=[300]", "seeds=40", "t_max=10",
                                         "n_points=8", "test_size=4000", "mc_samples=8000"};
  CHECK(run_validate(base).exit_code == 0);
  for (const char* broken : {"break_term=eta2", "break_term=sign_gg"}) {
    CAPTURE(broken);
    auto sets = base;
    sets.push_back(broken);
    const auto out = run_validate(sets);
    CHECK(out.exit_code == 1);
  }
}

TEST_CASE("drift check: every term agrees for every activation, and a broken term is caught") {
  for (const char* act : {"softmax", "softmax1", "bayes"}) {
    CAPTURE(act);
    const std::vector<std::string> base = {"mode=drift", fmt::format("activation={}", act), "H=2", "eta=1", "dims=[500]", "drift_samples=16000",
                                           "drift_times=[0,4]", "mc_samples=16000"};
    const auto ok = run_validate(base);
    CHECK(ok.exit_code == 0);
    auto sets = base;
    sets.push_back("break_term=eta2");
    CHECK(run_validate(sets).exit_code == 1);
  }
}

TEST_CASE("softmax1 with a bias, fixed and trained: the drift check agrees; a broken bias term is caught") {
  const std::vector<std::string> base = {"mode=drift", "activation=softmax1", "aggregation=sum", "H=2", "eta=1", "dims=[500]",
                                         "drift_samples=30000", "drift_times=[0,4]", "mc_samples=16000"};  // 30000: the seeds the verdict asks for (about 21000) to resolve 0.1 x the eta term
  auto with = [&](std::vector<std::string> extra) {
    auto sets = base;
    sets.insert(sets.end(), extra.begin(), extra.end());
    return run_validate(sets);
  };
  // Fixed b = -2: b in the logits of theory and simulator; the theory without it (bias_logit) fails.
  CHECK(with({"bias=[-2,-2]"}).exit_code == 0);
  CHECK(with({"bias=[-2,-2]", "break_term=bias_logit"}).exit_code == 1);
  // Trained b: its drift (term "bias") is checked with the others; the wrong sign of it fails.
  const auto trained = with({"bias=[-2,-2]", "train_bias=true", "eta_bias=2"});
  CHECK(trained.exit_code == 0);
  const Table& drift = trained.tables.at("drift.csv");
  int bias_rows = 0;
  for (std::size_t r = 0; r < drift.rows(); ++r)
    if (drift.text(r, "term") == "bias") bias_rows += std::fabs(drift.number(r, "simulation")) > 3 * drift.number(r, "simulation_se");
  CHECK(bias_rows >= 2);  // the bias moves measurably in the simulation, and the theory matches it
  CHECK(with({"bias=[-2,-2]", "train_bias=true", "eta_bias=2", "break_term=bias_sign"}).exit_code == 1);
}
