// Running sweeps in-process on the specialization model with tiny settings: a point equals the single
// run it stands for, results do not depend on the thread count, finished points are reused, and a
// failing point is recorded while the rest finishes.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>

#include "common.hpp"
#include "hdat/core/error.hpp"
#include "hdat/core/output.hpp"
#include "hdat/sweep/sweep.hpp"

using namespace hdat;
using namespace hdat::sweep;
namespace fs = std::filesystem;

namespace {

const std::vector<std::pair<std::string, nlohmann::json>> kTiny = {{"mc_samples", 512}, {"t_max", 5}, {"n_points", 5}};

Plan tiny_plan(const std::vector<std::string>& grid, std::vector<std::string> observables = {}) {
  register_models_for_tests();
  const ModelEntry& m = registry().get("specialization");
  return make_plan(m, "curve", resolve_for(m, nullptr, kTiny), grid, std::move(observables));
}

std::vector<std::size_t> all_of(const Plan& p) { return shard_indices(p.points.size(), 0, 1); }

// sweep.csv without the wall_seconds column (the only one that may differ between runs).
std::string without_wall(const Table& t) {
  std::vector<std::string> cols;
  for (const auto& c : t.columns())
    if (c != "wall_seconds") cols.push_back(c);
  Table u(cols);
  for (std::size_t r = 0; r < t.rows(); ++r) {
    std::vector<Cell> row;
    for (std::size_t c = 0; c < t.columns().size(); ++c)
      if (t.columns()[c] != "wall_seconds") row.push_back(t.row(r)[c]);
    u.add_row(row);
  }
  return u.to_csv();
}

RunOptions quiet_options(int threads) {
  RunOptions o;
  o.threads = threads;
  o.quiet = true;
  return o;
}

}  // namespace

TEST_CASE("a sweep point is exactly the single run it stands for") {
  const Plan plan = tiny_plan({"prior.scale=[0.5,1.5]", "activation=[softmax,bayes]"}, {"final:risk", "info:bayes_risk", "min:risk"});
  const fs::path dir = scratch("single");
  std::vector<Row> rows;
  const RunCounts c = run_points(plan, dir, all_of(plan), quiet_options(1), rows);
  CHECK(c.computed == 4);
  CHECK(c.failed == 0);
  const ModelEntry& m = registry().get("specialization");
  auto direct_params = kTiny;
  direct_params.push_back({"prior.scale", 1.5});
  direct_params.push_back({"activation", "softmax"});
  RunContext ctx;
  ctx.threads = 1;
  ctx.quiet = true;
  const RunOutput out = m.commands.at("curve")(resolve_for(m, nullptr, direct_params), ctx);
  const Table& curve = out.tables.at("curve.csv");
  // Point 2 is (prior.scale=1.5, activation=softmax): first axis slowest.
  REQUIRE(plan.points[2].overrides["activation"] == "softmax");
  CHECK(rows[2].status == "ok");
  CHECK(rows[2].values[0] == curve.number(curve.rows() - 1, "risk"));
  CHECK(rows[2].values[1] == out.info["bayes_risk"].get<double>());
  double lo = INFINITY;
  for (double r : curve.numbers("risk")) lo = std::min(lo, r);
  CHECK(rows[2].values[2] == lo);
  // A larger signal lowers the Bayes risk (a sanity check of the wiring, not of the model).
  CHECK(rows[2].values[1] < rows[0].values[1]);
}

TEST_CASE("the same table for 1 and 2 threads, and for two shards") {
  const Plan plan = tiny_plan({"prior.scale=0.5:2:3", "H=[1,2]"});
  std::vector<Row> r1, r2, rs;
  run_points(plan, scratch("t1"), all_of(plan), quiet_options(1), r1);
  run_points(plan, scratch("t2"), all_of(plan), quiet_options(2), r2);
  const fs::path sd = scratch("shards");
  run_points(plan, sd, shard_indices(plan.points.size(), 1, 2), quiet_options(1), rs);
  run_points(plan, sd, shard_indices(plan.points.size(), 0, 2), quiet_options(1), rs);
  const std::string a = without_wall(assemble(plan, r1));
  CHECK(a == without_wall(assemble(plan, r2)));
  CHECK(a == without_wall(assemble(plan, rs)));
  CHECK(a.find("pending") == std::string::npos);
}

TEST_CASE("finished points are reused: a resumed sweep computes only the missing ones") {
  const Plan plan = tiny_plan({"prior.scale=0.5:2:4"});
  const fs::path dir = scratch("resume");
  std::vector<Row> first;
  CHECK(run_points(plan, dir, all_of(plan), quiet_options(2), first).computed == 4);
  // Lose two points (as if the sweep had been killed before them) and corrupt a third.
  fs::remove(point_path(dir, plan.points[1]));
  fs::remove(point_path(dir, plan.points[3]));
  std::ofstream(point_path(dir, plan.points[2])) << "{ truncated";
  const auto kept = fs::last_write_time(point_path(dir, plan.points[0]));
  std::vector<Row> second;
  const RunCounts c = run_points(plan, dir, all_of(plan), quiet_options(2), second);
  CHECK(c.reused == 1);
  CHECK(c.computed == 3);
  CHECK(fs::last_write_time(point_path(dir, plan.points[0])) == kept);
  CHECK(without_wall(assemble(plan, first)) == without_wall(assemble(plan, second)));
  // A third run computes nothing.
  std::vector<Row> third;
  CHECK(run_points(plan, dir, all_of(plan), quiet_options(2), third).computed == 0);
  // Another observable needs no recomputation either: it is evaluated on the stored output.
  const Plan other = tiny_plan({"prior.scale=0.5:2:4"}, {"max:risk"});
  std::vector<Row> fourth;
  const RunCounts c4 = run_points(other, dir, all_of(other), quiet_options(2), fourth);
  CHECK(c4.computed == 0);
  CHECK(fourth[0].values[0] >= first[0].values[0]);  // the maximum of the risk is at least its final value
}

TEST_CASE("a failing point is recorded with its reason and the others finish") {
  // rtol = atol = 1e-300 cannot be met: the integrator's step size underflows and the curve command
  // exits 3 (atol = 1e-300 alone is harmless: rtol = 1e-6 sets the tolerance).
  register_models_for_tests();
  const ModelEntry& m = registry().get("specialization");
  auto settings = kTiny;
  settings.push_back({"atol", 1e-300});
  const Plan plan = make_plan(m, "curve", resolve_for(m, nullptr, settings), {"rtol=[1e-6,1e-300]", "prior.scale=[0.5,1]"}, {});
  const fs::path dir = scratch("failure");
  std::vector<Row> rows;
  const RunCounts c = run_points(plan, dir, all_of(plan), quiet_options(2), rows);
  CHECK(c.computed == 4);
  CHECK(c.failed == 2);
  for (std::size_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    if (plan.points[i].overrides["rtol"] == 1e-6) {
      CHECK(rows[i].status == "ok");
      CHECK(std::isfinite(rows[i].values[0]));
    } else {
      CHECK(rows[i].status == "numerical_failure");
      CHECK(rows[i].reason.find("underflow") != std::string::npos);
      CHECK(fs::exists(point_path(dir, plan.points[i])));  // recorded, so a rerun does not repeat it
    }
  }
  std::vector<Row> again;
  CHECK(run_points(plan, dir, all_of(plan), quiet_options(2), again).computed == 0);
  RunOptions retry = quiet_options(2);
  retry.retry_failed = true;
  CHECK(run_points(plan, dir, all_of(plan), retry, again).computed == 2);
  const Table t = assemble(plan, rows);
  CHECK(t.text(2, "status") == "numerical_failure");
  CHECK(t.text(2, "reason").find("exit code 3") != std::string::npos);
}

TEST_CASE("plan errors: modes, observables, reserved names") {
  register_models_for_tests();
  const ModelEntry& m = registry().get("specialization");
  CHECK(command_for_mode(m, "theory") == "curve");
  CHECK(command_for_mode(m, "simulate") == "simulate");
  CHECK_THROWS_AS(command_for_mode(m, "no-such-command"), InputError);
  // A model without a theory (sinks) sweeps its simulation by default; without either, an error.
  ModelEntry sim_only, neither;
  sim_only.commands["simulate"] = m.commands.at("simulate");
  neither.commands["validate"] = m.commands.at("validate");
  CHECK(command_for_mode(sim_only, "theory") == "simulate");
  CHECK_THROWS_AS(command_for_mode(neither, "theory"), InputError);
  CHECK_THROWS_AS(tiny_plan({}), InputError);
  CHECK_THROWS_AS(tiny_plan({"H=[1,2]"}, {"final:risk", "final:risk"}), InputError);
  CHECK_THROWS_AS(tiny_plan({"H=[1,2]"}, {"H=final:risk"}), InputError);
  CHECK_THROWS_AS(tiny_plan({"H=[1,2]"}, {"status=final:risk"}), InputError);
  // Defaults come from the model's declaration.
  CHECK(tiny_plan({"H=[1,2]"}).observables.size() == m.default_observables.size());
}

namespace {

// A toy model whose points fail on demand, to check how each kind of failure is recorded.
const ModelEntry& toy_model() {
  static const bool done = [] {
    ModelEntry e;
    e.name = "sweep-test-toy";
    e.params.real("x", 1.0, "slope").choice("behaviour", "ok", {"ok", "nan_end", "nan_always", "throw", "numerical", "exit1", "exit3", "model_failure"},
                                             "what the command does");
    e.commands["curve"] = [](const Params& p, RunContext&) {
      RunOutput out;
      Table t({"t", "y", "y_se", "undefined"});
      const std::string b = p.text("behaviour");
      for (int i = 0; i <= 3; ++i) {
        const double y = (b == "nan_end" && i == 3) ? std::nan("") : p.real("x") * i;
        t.add_row({static_cast<double>(i), y, i == 3 ? INFINITY : 0.1, std::nan("")});  // error bar and an always-NaN column
      }
      if (b == "throw") throw std::runtime_error("toy exception");
      if (b == "numerical") throw NumericalError("toy numerical error");
      if (b == "model_failure") throw ModelFailure("the model's own bug", nullptr);
      out.tables["curve.csv"] = t;
      out.summary = "toy\n  the reason is on the last line\n";
      out.exit_code = b == "exit1" ? 1 : b == "exit3" ? 3 : 0;
      return out;
    };
    e.commands["validate"] = e.commands["curve"];
    e.default_observables = {"final:y"};
    e.command_observables["validate"] = {"final:y"};  // a command's own defaults (7eb840b): the toy's validate is its curve
    registry().add(std::move(e));
    return true;
  }();
  (void)done;
  return registry().get("sweep-test-toy");
}

}  // namespace

TEST_CASE("each kind of failure gets its status; error bars and never-finite columns do not count as non-finite") {
  const ModelEntry& m = toy_model();
  const Params base = resolve_for(m, nullptr, {});
  const Plan plan = make_plan(m, "curve", base, {"behaviour=[ok,nan_end,nan_always,throw,numerical,exit1,exit3]"}, {});
  std::vector<Row> rows;
  const RunCounts c = run_points(plan, scratch("toy"), all_of(plan), quiet_options(2), rows);
  CHECK(c.computed == 7);
  CHECK(c.failed == 5);
  CHECK(rows[0].status == "ok");
  CHECK(rows[0].values[0] == 3.0);
  CHECK(rows[1].status == "nonfinite");
  CHECK(rows[1].reason.find("y is non-finite") != std::string::npos);
  CHECK(rows[2].status == "ok");  // y_se = inf at the end and an always-NaN column are not a failure
  CHECK(rows[3].status == "error");
  CHECK(rows[3].reason == "toy exception");
  CHECK(rows[4].status == "numerical_failure");
  CHECK(rows[5].status == "failed");  // exit code 1 of a curve command
  CHECK(rows[5].reason == "exit code 1: the reason is on the last line");
  CHECK(rows[6].status == "numerical_failure");
  for (std::size_t i = 1; i < 7; ++i)
    if (is_failure(rows[i].status)) CHECK(std::isnan(rows[i].values[0]));
  // For validate, exit code 1 is a verdict (theory and simulation disagree), not a failure.
  const Plan vplan = make_plan(m, "validate", base, {"behaviour=[ok,exit1]"}, {});
  std::vector<Row> vrows;
  CHECK(run_points(vplan, scratch("toy-validate"), all_of(vplan), quiet_options(1), vrows).failed == 0);
  CHECK(vrows[1].status == "disagree");
  CHECK(vrows[1].values[0] == 3.0);
}

// The model's own failure (a Python model's exception) is no outcome of a point: it stops the sweep
// and reaches the caller, and the point is not recorded (a resumed sweep, the bug fixed, computes it).
TEST_CASE("the model's own failure stops the sweep instead of being recorded as a failed point") {
  const ModelEntry& m = toy_model();
  const Params base = resolve_for(m, nullptr, {});
  const Plan plan = make_plan(m, "curve", base, {"behaviour=[model_failure]"}, {});
  const auto dir = scratch("toy-model-failure");
  std::vector<Row> rows;
  CHECK_THROWS_WITH_AS(run_points(plan, dir, all_of(plan), quiet_options(1), rows), "the model's own bug", ModelFailure);
  CHECK_FALSE(std::filesystem::exists(point_path(dir, plan.points[0])));
}
