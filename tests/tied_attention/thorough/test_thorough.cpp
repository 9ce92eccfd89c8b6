// Thorough checks of `tied-attention` (label `thorough`, tools/thorough.sh; minutes): theory against
// finite-d ERM at larger d and more seeds than the default suite affords, for the closed-form T = 1
// theory and the sampled T = 2 softmax channel, each with a wrong term that must make it fail.
#include <doctest/doctest.h>

#include "../../quiet_context.hpp"

#include "hdat/tied_attention/model.hpp"
#include "hdat/tied_attention/harness.hpp"

using namespace hdat;
using namespace hdat::tied;

TEST_CASE("thorough: T = 1, convex ERM at d = 60, 100, 140 with 8 seeds agrees; a wrong d_delta J fails") {
  const json base = {{"T", 1},        {"noise", 0.1}, {"lambda", 1.0}, {"alphas", json::array({0.1, 0.2, 0.4})},
                     {"training", "convex"}, {"seeds", 8}, {"dims", json::array({60, 100, 140})}};
  const Params p = resolve(param_set(), base, {});
  RunContext ctx = quiet_context();
  CHECK(validate_command(p, ctx).exit_code == 0);
  CHECK(validate_command(p.with({{"check_perturbation", 1.25}}), ctx).exit_code == 1);
}

TEST_CASE("thorough: T = 2 softmax channel, factorised ERM at d = 60, 80, 100 with 6 seeds agrees; a wrong d_q M fails") {
  const json base = {{"T", 2},        {"noise", 0.1}, {"lambda", 0.1}, {"alphas", json::array({0.1, 0.2})},
                     {"seeds", 6},    {"dims", json::array({60, 80, 100})}};
  const Params p = resolve(param_set(), base, {});
  RunContext ctx = quiet_context();
  CHECK(validate_command(p, ctx).exit_code == 0);
  CHECK(validate_command(p.with({{"check_sample_perturbation", 1.5}}), ctx).exit_code == 1);
}
