// Thorough checks of `tied-attention` (label `thorough`, tools/thorough.sh; minutes): theory against
// finite-d ERM at larger d and more seeds than the default suite affords, for the closed-form T = 1
// theory and the sampled T = 2 softmax channel, each with a wrong term that must make it fail.
#include <doctest/doctest.h>

#include "../../quiet_context.hpp"

#include "hdat/tied_attention/model.hpp"
#include "hdat/tied_attention/declaration.hpp"

using namespace hdat;
using namespace hdat::tied;

TEST_CASE("thorough: T = 1, convex ERM at d = 60, 100, 140 with 8 seeds agrees; a wrong d_delta J fails") {
  const json base = {{"T", 1},        {"noise", 0.1}, {"lambda", 1.0}, {"alphas", json::array({0.1, 0.2, 0.4})},
                     {"training", "convex"}, {"seeds", 8}, {"dims", json::array({60, 100, 140})}};
  const Params p = resolve(param_set(), base, {});
  RunContext ctx = quiet_context();
  CHECK(validate_command(p, ctx).exit_code == 0);
  CHECK(validate_command(p.with({{"break_term", "denoiser"}}), ctx).exit_code == 1);
}

TEST_CASE("thorough: T = 2 softmax channel, factorised ERM at d = 60, 80, 100 with 6 seeds agrees; a wrong d_q M fails") {
  const json base = {{"T", 2},        {"noise", 0.1}, {"lambda", 0.1}, {"alphas", json::array({0.1, 0.2})},
                     {"seeds", 6},    {"dims", json::array({60, 80, 100})}};
  const Params p = resolve(param_set(), base, {});
  RunContext ctx = quiet_context();
  CHECK(validate_command(p, ctx).exit_code == 0);
  CHECK(validate_command(p.with({{"break_term", "channel"}}), ctx).exit_code == 1);
}

// AMP against its state evolution at d = 50-200 (amp_prior=oracle: each run paired with the SE at
// its own target spectrum), iteration by iteration, for the three channels; each wrong term fails.
TEST_CASE("thorough: AMP tracks its state evolution at d = 50-200 (T = 1, T = 2 softmax, T = 2 hardmax); broken terms fail") {
  RunContext ctx = quiet_context();
  const json common = {{"estimator", "amp"}, {"amp_prior", "oracle"}, {"noise", 0.1}, {"seeds", 6},
                       {"dims", json::array({50, 100, 150, 200})}, {"amp_max_iter", 50}};
  for (json s : {json{{"T", 1}, {"alphas", json::array({0.2, 0.4})}},
                 json{{"T", 2}, {"alphas", json::array({0.1, 0.2})}},
                 json{{"T", 2}, {"channel", "hardmax"}, {"alphas", json::array({0.4})}}}) {
    s.update(common);
    CAPTURE(s.dump());
    const Params p = resolve(param_set(), s, {});
    CHECK(validate_command(p, ctx).exit_code == 0);
    CHECK(validate_command(p.with({{"break_term", "denoiser"}}), ctx).exit_code == 1);
    CHECK(validate_command(p.with({{"break_term", "channel"}}), ctx).exit_code == 1);
  }
}

// Hardmax labels in ERM: the ERM theory (its sample side with one-hot labels) against finite-d training.
TEST_CASE("thorough: T = 2 ERM with hardmax labels agrees with its theory; a wrong d_q M fails") {
  const json base = {{"T", 2},     {"channel", "hardmax"}, {"noise", 0.1}, {"lambda", 0.1}, {"alphas", json::array({0.1, 0.2})},
                     {"seeds", 6}, {"dims", json::array({40, 60, 80})}};
  const Params p = resolve(param_set(), base, {});
  RunContext ctx = quiet_context();
  CHECK(validate_command(p, ctx).exit_code == 0);
  CHECK(validate_command(p.with({{"break_term", "channel"}}), ctx).exit_code == 1);
}
