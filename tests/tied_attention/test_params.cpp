// Keys of tied-attention that apply only to some configurations: set explicitly where they do not
// apply, they are an input error naming the key and the condition, never silently ignored.
#include <doctest/doctest.h>

#include <string>

#include "../input_error_message.hpp"
#include "hdat/core/params.hpp"
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
