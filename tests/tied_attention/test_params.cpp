// Keys of tied-attention that apply only to some configurations: set explicitly where they do not
// apply, they are an input error naming the key and the condition, never silently ignored.
#include <doctest/doctest.h>

#include <string>

#include "../input_error_message.hpp"
#include "hdat/core/params.hpp"
#include "hdat/core/registry.hpp"
#include "hdat/tied_attention/declaration.hpp"
#include "hdat/tied_attention/model.hpp"

using namespace hdat;
using namespace hdat::tied_attention;

namespace {
std::string refusal(const nlohmann::json& config) {
  return message_of([&] { (void)resolve(param_set(), config, {}); });
}
}  // namespace

TEST_CASE("sampled-channel, solver, AMP and power-law keys are refused where they do not apply") {
  // T = 1 is the linear channel in closed form: nothing is sampled and nothing iterated.
  for (const char* key : {"mc_samples", "mc_seed", "beta", "damping", "fp_tol"}) {
    CAPTURE(key);
    const std::string m = refusal({{"T", 1}, {key, key == std::string("damping") || key == std::string("fp_tol") ? 0.001 : 500}});
    CHECK(m.find(std::string("'") + key + "'") != std::string::npos);
    CHECK(m.find("applies only when") != std::string::npos);
  }
  CHECK(refusal({{"T", 1}, {"test_samples", 500}}).find("T >= 2") != std::string::npos);
  CHECK(refusal({{"T", 2}, {"channel", "hardmax"}, {"beta0", 2.0}}).find("'beta0'") != std::string::npos);
  CHECK(refusal({{"T", 2}, {"se_samples", 2048}}).find("hardmax") != std::string::npos);
  CHECK(refusal({{"amp_tol", 1e-4}}).find("estimator is amp") != std::string::npos);
  CHECK(refusal({{"gamma", 2.0}}).find("target is powerlaw") != std::string::npos);
}

TEST_CASE("the same keys are accepted where they apply") {
  CHECK_NOTHROW(resolve(param_set(), {{"T", 2}, {"mc_samples", 512}, {"beta", 2.0}, {"beta0", 2.0}, {"test_samples", 500}}, {}));
  CHECK_NOTHROW(resolve(param_set(), {{"T", 1}, {"training", "direct"}, {"damping", 0.3}, {"fp_tol", 1e-8}}, {}));
  CHECK_NOTHROW(resolve(param_set(), {{"T", 2}, {"channel", "hardmax"}, {"se_samples", 2048}, {"beta", 3.0}}, {}));
  CHECK_NOTHROW(resolve(param_set(), {{"estimator", "amp"}, {"amp_tol", 1e-4}, {"amp_prior", "oracle"}}, {}));
  CHECK_NOTHROW(resolve(param_set(), {{"target", "powerlaw"}, {"gamma", 2.0}}, {}));
  // Defaults never count as set: the default configuration resolves with every key at its default.
  CHECK_NOTHROW(resolve(param_set(), {{"T", 1}}, {}));
}

// Bound once (issue 33): the check parses the keys into the typed Config and attaches it; every
// command then works from that Config instead of parsing the keys again. Shown by attaching a
// Config that differs from the keys: the command follows the attached one.
TEST_CASE("the check attaches the typed Config and the commands work from it") {
  Params p = resolve(param_set(), {{"T", 1}, {"alphas", nlohmann::json::array({0.2})}, {"bayes", false}}, {});
  check_params(p);
  const auto attached = p.binding<Config>();
  REQUIRE(attached != nullptr);
  CHECK(config_for(p) == attached);
  CHECK(attached->alphas == std::vector<double>{0.2});
  CHECK(attached->channel == BayesChannel::linear);
  Config other = *attached;
  other.alphas = {0.35, 0.7};
  p.attach(std::make_shared<const Config>(other));
  RunContext ctx;
  ctx.quiet = true;
  const Table curve = curve_command(p, ctx).tables.at("curve.csv");
  CHECK(curve.numbers("alpha") == std::vector<double>{0.35, 0.7});
  // A copy with other keys carries no binding: it is parsed anew.
  CHECK(config_for(p.with({{"alphas", nlohmann::json::array({0.5})}}))->alphas == std::vector<double>{0.5});
}
