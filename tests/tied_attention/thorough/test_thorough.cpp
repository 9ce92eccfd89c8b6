// Thorough checks of `tied-attention` (label `thorough`, tools/thorough.sh; minutes): theory against
// finite-d ERM at larger d and more seeds than the default suite affords, for the closed-form T = 1
// theory and the sampled T = 2 softmax channel, each with a wrong term that must make it fail.
#include <doctest/doctest.h>

#include "../../quiet_context.hpp"

#include <memory>
#include <random>

#include "../published_hardmax.hpp"
#include "hdat/tied_attention/model.hpp"
#include "hdat/tied_attention/declaration.hpp"
#include "hdat/tied_attention/target.hpp"

using namespace hdat;
using namespace hdat::tied_attention;

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
                     {"seeds", 16}, {"dims", json::array({40, 60, 80, 100, 120})}};
  // Five sizes: over d = 40-80 alone the alpha = 0.2 mse and rank do not follow a + b/d well enough
  // for the fit's one degree of freedom (critical value 509: undecided whatever the seeds, and the
  // verdict says to add sizes). With d up to 120 (dof 3) it agrees, 8 of 8 checks; the broken channel
  // disagrees (train_loss 19.6x its allowance). About 10 CPU minutes per validate.
  const Params p = resolve(param_set(), base, {});
  RunContext ctx = quiet_context();
  CHECK(validate_command(p, ctx).exit_code == 0);
  CHECK(validate_command(p.with({{"break_term", "channel"}}), ctx).exit_code == 1);
}

TEST_CASE("thorough: hardmax SE at alpha = 1 with the published score lands on the published MMSE 0.3145; with the exact score on hdat's") {
  using namespace hdat::tied_attention::published;
  StateEvolutionOptions o;
  o.T = 2;
  o.channel = BayesChannel::hardmax;
  o.noise = 0;
  o.prior = std::make_shared<WishartTarget>(0.5);
  o.information.samples = 1 << 15;
  const StateEvolution se(o);
  std::mt19937_64 eng(7);
  std::normal_distribution<double> N01;
  std::vector<double> normals(6 << 16);
  for (double& x : normals) x = N01(eng);
  const double alpha = kPublishedAlpha;
  const double with_published = se_fixed_point(se, alpha, [&](double q, double V) { return information(q, V, normals, published_score); });
  const double with_exact = se_fixed_point(se, alpha, [&](double q, double V) { return information(q, V, normals, hdat_score); });
  const StateEvolutionRun run = se.run(alpha);
  MESSAGE("hardmax SE at alpha = 1.0027: published score " << with_published << ", exact score " << with_exact << ", hdat "
                                                           << run.mse() << " +- " << run.mse_se << "; published curve " << kPublishedMmse);
  // The published curve is the fixed point with the published score (the residual, ~2%, is below the
  // 3% allowed for the published run's own Monte Carlo: 25000 fresh samples per iteration, a
  // heavy-tailed integrand φ2/Φ2); with the exact score the same iteration is hdat's SE.
  CHECK(with_published == doctest::Approx(kPublishedMmse).epsilon(0.03));
  CHECK(with_exact == doctest::Approx(run.mse()).epsilon(0.02));
}
