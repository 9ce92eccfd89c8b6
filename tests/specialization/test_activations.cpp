// `hdat analyze specialization --set analysis=activations`: each variant is the model's own curve at
// the variant's keys (the same start, Bayes risk and pruning as `hdat curve`), and a comparison
// resumed from its persisted variants equals the fresh one; a persisted variant of another
// configuration is computed again, not taken.
#include <doctest/doctest.h>

#include <filesystem>

#include "common.hpp"
#include "hdat/core/harness.hpp"
#include "hdat/core/output.hpp"
#include "hdat/specialization/analyze.hpp"
#include "hdat/specialization/declaration.hpp"

using namespace hdat;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> keys = {"analysis=activations", "t_max=3", "n_points=6", "mc_samples=2000",
                                       R"(variants=[{"activation":"softmax"},{"activation":"softmax1","aggregation":"sum","bias":-3}])"};
const std::vector<nlohmann::json> overrides = {{{"activation", "softmax"}},
                                               {{"activation", "softmax1"}, {"aggregation", "sum"}, {"bias", {-3.0, -3.0}}}};

RunContext context(const fs::path& out) {
  RunContext ctx;
  ctx.quiet = true;
  ctx.threads = 1;
  ctx.out = out;
  return ctx;
}

}  // namespace

TEST_CASE("activations: each variant is its curve, and a resumed comparison equals a fresh one") {
  const Params p = spec_test::params(keys);
  const fs::path dir = fs::temp_directory_path() / "hdat_test_activations";
  fs::remove_all(dir);
  RunContext ctx = context(dir);
  const RunOutput fresh = specialization::compare_activations(p, ctx);
  REQUIRE(fresh.exit_code == 0);
  const Table& summary = fresh.tables.at("activations.csv");
  REQUIRE(summary.rows() == overrides.size());

  for (std::size_t k = 0; k < overrides.size(); ++k) {
    CAPTURE(k);
    RunContext quiet = context({});
    const RunOutput curve = dynamics_curve(*specialization::dynamics_model(), p.with(overrides[k]).with({{"prune", true}}), quiet);
    const Table& c = curve.tables.at("curve.csv");
    CHECK(summary.number(k, "final_risk") == c.number(c.rows() - 1, "risk"));
    CHECK(summary.number(k, "bayes_risk") == curve.info.at("bayes_risk").get<double>());
    const Table& pruned = curve.tables.at("prune.csv");
    for (std::size_t r = 0; r < pruned.rows(); ++r)  // the pruning with F = 2 heads kept
      if (pruned.number(r, "kept_heads") == 2.0) CHECK(summary.number(k, "kept_F_risk") == pruned.number(r, "risk"));
  }

  const RunOutput resumed = specialization::compare_activations(p, ctx);  // every variant read from dir/variants
  for (const auto& [name, table] : fresh.tables) CHECK(resumed.tables.at(name).to_csv() == table.to_csv());
  CHECK(resumed.info == fresh.info);
  CHECK(resumed.summary == fresh.summary);

  // A persisted variant whose configuration is not this one's (a changed key) is not taken.
  for (const auto& entry : fs::directory_iterator(dir / "variants")) {
    nlohmann::json j = nlohmann::json::parse(read_file(entry.path()));
    j["config"]["eta"] = 0.25;
    j["info"]["bayes_risk"] = -1.0;
    write_file_atomic(entry.path(), j.dump());
  }
  const RunOutput recomputed = specialization::compare_activations(p, ctx);
  CHECK(recomputed.tables.at("activations.csv").to_csv() == summary.to_csv());

  // Files cut short (an entry missing; a curve without the layout's columns): computed again, not an error.
  int damaged = 0;
  for (const auto& entry : fs::directory_iterator(dir / "variants")) {
    nlohmann::json j = nlohmann::json::parse(read_file(entry.path()));
    if (damaged++ == 0) j["info"].erase("bayes_risk");
    else j["curve"] = "t,ri";
    write_file_atomic(entry.path(), j.dump());
  }
  REQUIRE(damaged == 2);
  CHECK(specialization::compare_activations(p, ctx).tables.at("activations.csv").to_csv() == summary.to_csv());
  fs::remove_all(dir);
}
