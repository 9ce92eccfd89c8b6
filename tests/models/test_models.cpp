// Every registered model, through the one contract: a model that offers `validate` declares a small
// configuration on which theory and simulation agree (exit 0), and the value of the shared test-only
// key `break_term` that breaks one term of its theory, with which validate must disagree (exit 1).
// A model added later is covered without touching this file.
#include <doctest/doctest.h>

#include "../quiet_context.hpp"
#include "hdat/core/registry.hpp"

using namespace hdat;

namespace {
int run_validate(const ModelEntry& model, const nlohmann::json& settings) {
  std::vector<std::pair<std::string, nlohmann::json>> sets;
  for (const auto& [key, value] : settings.items()) sets.emplace_back(key, value);
  const Params p = resolve_for(model, nlohmann::json(), sets);
  RunContext ctx = quiet_context();
  return model.commands.at("validate")(p, ctx).exit_code;
}
}  // namespace

TEST_CASE("every model with a check agrees on its smoke configuration and disagrees with a broken term") {
  register_models();
  int checked = 0;
  for (const ModelEntry* m : registry().all()) {
    if (!m->commands.count("validate")) continue;  // analyses without a theory-vs-simulation check
    CAPTURE(m->name);
    REQUIRE_MESSAGE(m->smoke.declared(), "a model with `validate` must declare its ValidationSmoke");
    REQUIRE(m->params.find("break_term"));
    CHECK(run_validate(*m, m->smoke.settings) == 0);
    nlohmann::json broken = m->smoke.settings;
    broken["break_term"] = m->smoke.broken_term;
    CHECK(run_validate(*m, broken) == 1);
    ++checked;
  }
  MESSAGE(checked << " models checked");
  CHECK(checked >= 1);
}
