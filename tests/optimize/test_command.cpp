// hdat optimize end to end: the optimum against the baselines and the optimisers' summaries; bad
// input refused with the option's name before any work (library: InputError; program: exit 2 and
// nothing written); an interrupted run resumed from its saved state; the schedule file read back by
// simulate/curve.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "../quiet_context.hpp"
#include "../sweep/cli.hpp"
#include "hdat/app/optimize.hpp"
#include "hdat/core/error.hpp"
#include "hdat/core/output.hpp"
#include "hdat/core/progress.hpp"

using namespace hdat;
namespace fs = std::filesystem;

namespace {

const ModelEntry& model(const std::string& name) {
  register_models();
  return registry().get(name);
}

Params committee_params(const nlohmann::json& extra = nlohmann::json::object()) {
  std::vector<std::pair<std::string, nlohmann::json>> sets = {{"K", 2}, {"M", 1}, {"eta", 1.0}, {"noise", 0.2}, {"init_std", 0.0}, {"v0", {1.0, 1.0}},
                                                             {"dropout_keep", 0.8}};
  for (const auto& [k, v] : extra.items()) sets.emplace_back(k, v);
  return resolve_for(model("committee"), nlohmann::json(), sets);
}

optimize::OptimizeOptions small_options() {
  optimize::OptimizeOptions o;
  o.controls = {"dropout_keep", "test_scale"};
  o.intervals = 6;
  o.t_final = 2;
  o.bounds["dropout_keep"] = {0.0, 1.0};
  o.bounds["test_scale"] = {0.0, 1.0};
  o.curve_points = 21;
  return o;
}

fs::path scratch(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("hdat-test-optimize-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(p);
  return p;
}

}  // namespace

TEST_CASE("optimize committee: the optimum is no worse than any optimised baseline, every solver reports, the schedule reads back") {
  RunContext ctx = quiet_context();
  const fs::path dir = scratch("committee");
  ctx.out = dir;
  const app::Run run = app::run_optimize(model("committee"), committee_params(), small_options(), ctx);
  REQUIRE(run.output.exit_code == 0);
  const Table& table = run.output.tables.at("baselines.csv");
  REQUIRE(table.rows() == 5);
  CHECK(table.text(0, "schedule") == "optimal");
  const double best = table.number(0, "objective");
  for (std::size_t r = 1; r < table.rows(); ++r) {
    CAPTURE(table.text(r, "schedule"));
    CHECK(best <= table.number(r, "objective") + 1e-12);
    CHECK(table.number(r, "converged") == 1.0);
  }
  const nlohmann::json& solver = run.output.info["optimize"]["solver"];
  for (const char* name : {"optimal", "constant", "step_decay", "cosine", "power_law"}) {
    CAPTURE(name);
    REQUIRE(solver.contains(name));
    CHECK(solver[name]["evaluations"].get<int>() >= 1);
    CHECK(solver[name]["projected_gradient_norm"].get<double>() < 1e-3);
  }
  for (const char* f : {"schedules.csv", "risk_curves.csv"}) CHECK(run.output.tables.count(f) == 1);
  // The optimal schedule as a parameter: the theory under it gives the optimum's final risk.
  app::write_output(dir, run);
  const Params under = committee_params({{"schedule", (dir / "schedule.json").string()}, {"t_points", {0.0, 2.0}}});
  const RunOutput curve = model("committee").commands.at("curve")(under, ctx);
  CHECK(curve.tables.at("curve.csv").number(1, "eg") == doctest::Approx(table.number(0, "final_risk")).epsilon(1e-6));
  fs::remove_all(dir);
}

TEST_CASE("optimize: bad options are refused with the option's name before any work") {
  RunContext ctx = quiet_context();
  const Params p = committee_params();
  auto refused = [&](optimize::OptimizeOptions o, const std::string& key) {
    CAPTURE(key);
    try {
      app::run_optimize(model("committee"), p, o, ctx);
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK(e.key() == key);
    }
  };
  auto o = small_options();
  o.controls = {"learning_rate"};
  refused(o, "control");
  o = small_options();
  o.controls.clear();
  refused(o, "control");
  o = small_options();
  o.intervals = 0;
  refused(o, "intervals");
  o = small_options();
  o.bounds["dropout_keep"] = {0.5, 0.2};
  refused(o, "bounds");
  o = small_options();
  o.bounds["dropout_keep"] = {0.0, 1.5};  // outside the keep-probability's [0, 1]
  refused(o, "bounds");
  o = small_options();
  o.bounds["eta"] = {0.1, 1.0};  // not optimised
  refused(o, "bounds");
  o = small_options();
  o.budget["dropout_keep"] = 1.2;
  refused(o, "budget");
  o = small_options();
  o.objective = optimize::Objective::time_to_target;
  refused(o, "target");
  o = small_options();
  o.t_final = -1;
  refused(o, "t_final");
  o = small_options();
  o.algorithm = "newton";
  refused(o, "algorithm");
  o = small_options();
  o.confirm_size = 200;
  o.confirm_theory = {{"eta", 0.5}};  // changes the finite runs: not the theory's own setting
  refused(o, "confirm_theory");
  o.confirm_theory = {{"rtoll", 1e-8}};
  refused(o, "confirm_theory");
  o.confirm_theory = {{"rtol", -1.0}};
  refused(o, "rtol");
  try {
    app::run_optimize(model("committee"), committee_params({{"schedule", "/nonexistent/schedule.json"}}), small_options(), ctx);
    FAIL("accepted");
  } catch (const InputError& e) {
    CHECK(e.key() == "schedule");
  }
}

// The confirmation holds each simulated seed to the theory from that seed's own initial overlaps:
// from random weights the seeds start apart, so the per-seed predictions differ (a prediction from
// the optimiser's one start would give every seed the same gain), and the realised gain agrees with
// the predicted one within its error.
TEST_CASE("optimize --confirm: each seed's gain is predicted from its own start, and the realised gain agrees") {
  RunContext ctx = quiet_context();
  auto o = small_options();
  o.controls = {"eta"};
  o.bounds.clear();
  o.bounds["eta"] = {0.1, 2.0};
  o.intervals = 4;
  o.t_final = 3;
  o.baselines = false;
  o.confirm_size = 2000;
  o.confirm_seeds = 12;
  o.confirm_theory = {{"rtol", 1e-8}};
  const app::Run run = app::run_optimize(model("committee"), committee_params({{"init_std", 0.5}, {"dropout_keep", 1.0}}), o, ctx);
  REQUIRE(run.output.exit_code == 0);
  const nlohmann::json& c = run.output.info.at("optimize").at("confirm");
  CAPTURE(c.dump());
  CHECK(c.at("predicting_theory") == nlohmann::json({{"rtol", 1e-8}}));
  CHECK(c.at("predicted_gain_se").get<double>() > 0);  // the seeds' starts differ, and so do their predictions
  CHECK(c.at("predicted_gain").get<double>() != c.at("predicted_gain_at_optimiser_start").get<double>());
  CHECK(std::fabs(c.at("z").get<double>()) < 4);  // realised - predicted, per seed, over its standard error
  const Table& t = run.output.tables.at("confirm.csv");
  CHECK(t.has_column("predicted_from_seed_starts"));
  CHECK(t.rows() == 2);
}

TEST_CASE("hdat optimize: exit 2 on bad input with nothing written; interrupted, then resumed by the same command") {
  const fs::path dir = scratch("cli");
  const std::string base = "optimize committee --set K=2 --set M=1 --set init_std=0 --set noise=0.2 --set eta=1 --quiet --out '" + dir.string() + "'";
  for (const std::string& bad : {std::string(" --control learning_rate"), std::string(" --control dropout_keep --intervals 0"),
                                 std::string(" --control dropout_keep --bounds dropout_keep=0.9:0.1"),
                                 std::string(" --control dropout_keep --bounds dropout_keep=0:x"),
                                 std::string(" --control dropout_keep --objective time_to_target"),
                                 std::string(" --control dropout_keep --shape spline")}) {
    CAPTURE(bad);
    const clitest::Result r = clitest::run(base + bad + " --t-final 1");
    CHECK(r.code == 2);
    CHECK(!fs::exists(dir));
  }
  // A run stopped by SIGINT keeps its state; the same command resumes and finishes.
  const std::string good = base + " --control dropout_keep --control test_scale --bounds test_scale=0:1 --intervals 40 --t-final 5";
  const pid_t pid = clitest::spawn(good);
  bool state_written = false;
  for (int i = 0; i < 400 && !state_written; ++i) {
    usleep(20000);
    state_written = fs::exists(dir / "optimize_state.json");
  }
  ::kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  CHECK((code == 130 || code == 0));
  REQUIRE(fs::exists(dir / "optimize_state.json"));
  std::vector<std::string> finished;  // the candidates the interrupted run had finished
  const nlohmann::json state = nlohmann::json::parse(clitest::slurp(dir / "optimize_state.json"));
  for (const auto& [name, c] : state["candidates"].items())
    if (c.value("done", false)) finished.push_back(name);
  const clitest::Result resumed = clitest::run(good);
  CHECK(resumed.code == 0);
  CHECK(fs::exists(dir / "schedule.json"));
  const nlohmann::json run = nlohmann::json::parse(clitest::slurp(dir / "run.json"));
  CHECK(run["command"] == "optimize");
  if (code == 130)
    for (const auto& name : finished) {
      CAPTURE(name);
      CHECK(run["optimize"]["solver"][name]["termination"] == "resumed");
    }
  fs::remove_all(dir);
}
