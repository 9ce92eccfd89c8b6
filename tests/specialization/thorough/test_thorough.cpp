// Thorough checks of `specialization` (label `thorough`, tools/thorough.sh; minutes, not seconds):
// theory against online SGD at larger D and more seeds than the default suite affords, the
// finite-size trend of the gap, broken terms caught at larger D, the drift check at D = 4000, and
// the predicted order of specialization against every simulated run.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "../../quiet_context.hpp"
#include "../common.hpp"
#include "hdat/specialization/analyze.hpp"
#include "hdat/core/harness.hpp"
#include "hdat/specialization/declaration.hpp"

using namespace hdat;
using namespace hdat::specialization;
using spec_test::params;

TEST_CASE("thorough: default setting, D = 500 ... 4000 with 16 seeds: agreement, and the gap shrinks with D") {
  RunContext ctx = quiet_context();
  const RunOutput out = dynamics_validate(*dynamics_model(), params({"dims=[500,1000,2000,4000]", "seeds=16", "t_max=40"}), ctx);
  CHECK(out.exit_code == 0);
  // Away from symmetry breaking the gap is expected ∝ D^(-1/2); M is the cleanest block on the common
  // window (R's gap is at the seed-noise level there, see docs/specialization.md).
  const double pM = out.info["validation"]["gap_exponent"]["M"].get<double>();
  MESSAGE("gap exponent of M: " << pM);
  CHECK(pM < -0.25);
  CHECK(pM > -1.0);
}

TEST_CASE("thorough: broken eta^2 term or wrong sign of 2gg fail at D = 1000, 2000; the correct equations pass") {
  const std::vector<std::string> base = {"activation=softmax", "dims=[1000,2000]", "seeds=8", "t_max=20", "n_points=12"};
  RunContext ctx = quiet_context();
  CHECK(dynamics_validate(*dynamics_model(), params(base), ctx).exit_code == 0);
  for (const char* broken : {"break_term=eta2", "break_term=sign_gg"}) {
    CAPTURE(broken);
    auto sets = base;
    sets.push_back(broken);
    CHECK(dynamics_validate(*dynamics_model(), params(sets), ctx).exit_code == 1);
  }
}

TEST_CASE("thorough: drift check at D = 4000 along a run, and a broken term caught") {
  const std::vector<std::string> base = {"mode=drift", "dims=[4000]", "drift_samples=20000", "drift_times=[0,5,20]"};  // 20000: the verdict asks for about 13700
  RunContext ctx = quiet_context();
  CHECK(dynamics_validate(*dynamics_model(), params(base), ctx).exit_code == 0);
  auto sets = base;
  sets.push_back("break_term=sign_gg");
  CHECK(dynamics_validate(*dynamics_model(), params(sets), ctx).exit_code == 1);
}

// Not in EVERY run: at D = 250 an O(D^-1/2) initial asymmetry can favour the other feature, or the
// second split falls after t_max. Measured over 192 runs at D = 250 per engine: 4 (reduced) and 3
// (full) of 192 did not show the predicted order; a wrong prediction would match about half the runs.
TEST_CASE("thorough: the predicted order of specialization holds in at least 90% of simulated runs (D = 250 ... 2000, 8 seeds)") {
  RunContext ctx = quiet_context();
  const RunOutput out = analyze_command(params({"dims=[250,500,1000,2000]", "seeds=8", "compare=true"}), ctx);
  REQUIRE(out.files.count("stability.json"));
  const json st = json::parse(out.files.at("stability.json"));
  const auto predicted = st["predicted_order"].get<std::vector<int>>();
  REQUIRE(!predicted.empty());
  int runs = 0, matching = 0;
  for (const auto& r : st["measured_orders"]) {
    ++runs;
    if (r["order"].get<std::vector<int>>() == predicted) ++matching;
  }
  MESSAGE("predicted order matched in " << matching << " of " << runs << " runs");
  CHECK(runs >= 24);  // most seeds escape within t_max at these D
  CHECK(matching >= 0.9 * runs);
}
