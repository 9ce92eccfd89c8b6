// Dropout in the committee (Mignacco and Mori's setting, derivation.md §9): the theory with the
// masks' moments r^(distinct students) against the finite system drawing the masks, term by term
// (drift check; K = 4 has products of four distinct students) and along whole trajectories; a
// schedule of η and r and the test-time scale p_f read by theory and simulator alike.
#include <doctest/doctest.h>

#include "../quiet_context.hpp"
#include "hdat/committee/declaration.hpp"
#include "hdat/core/registry.hpp"

namespace hdat {
void register_committee(Registry& r);
}

using namespace hdat;

namespace {

const ModelEntry& entry() {
  static Registry r;
  static const ModelEntry& e = [] -> const ModelEntry& {
    register_committee(r);
    return r.get("committee");
  }();
  return e;
}

RunOutput run(const std::string& command, const nlohmann::json& settings) {
  std::vector<std::pair<std::string, nlohmann::json>> sets;
  for (const auto& [key, value] : settings.items()) sets.emplace_back(key, value);
  RunContext ctx = quiet_context();
  return entry().commands.at(command)(resolve_for(entry(), nlohmann::json(), sets), ctx);
}

}  // namespace

TEST_CASE("dropout: the drift of every term agrees with the masked one-step increments (K = 4: up to r^4), and a dropped eta^2 term does not") {
  const nlohmann::json s = {{"mode", "drift"}, {"K", 4},           {"M", 2},         {"eta", 1.0},
                            {"noise", 0.3},    {"dropout_keep", 0.4}, {"dims", {1000}}, {"drift_samples", 40000}};
  CHECK(run("validate", s).exit_code == 0);
  nlohmann::json broken = s;
  broken["break_term"] = "eta_squared";
  CHECK(run("validate", broken).exit_code == 1);
  // The second layer and unequal readouts under dropout.
  const nlohmann::json v = {{"mode", "drift"}, {"K", 2},        {"M", 2},   {"eta", 1.0},         {"train_v", true},
                            {"noise", 0.3},    {"v0", {1.0, 0.5}}, {"vstar", {1.0, 0.5}}, {"dropout_keep", 0.6}, {"dims", {500}},
                            {"drift_samples", 40000}};
  CHECK(run("validate", v).exit_code == 0);
}

TEST_CASE("dropout: theory and simulation agree along trajectories from zero weights (Mignacco and Mori's setting)") {
  const nlohmann::json s = {{"K", 2},         {"M", 1},           {"eta", 1.0},           {"noise", 0.2},
                            {"init_std", 0.0}, {"dropout_keep", 0.6}, {"test_scale", 0.6},  {"t_max", 5.0},
                            {"dims", {500, 1000}}, {"seeds", 12},   {"n_points", 10},       {"test_size", 0}};
  CHECK(run("validate", s).exit_code == 0);
}

TEST_CASE("dropout: a schedule of eta and r and a final p_f move theory and simulation alike") {
  const nlohmann::json schedule = {
      {"controls",
       {{{"control", "dropout_keep"}, {"shape", "piecewise_constant"}, {"t_final", 4.0}, {"values", {1.0, 0.8, 0.5, 0.3}}},
        {{"control", "eta"}, {"shape", "piecewise_linear"}, {"t_final", 4.0}, {"values", {1.5, 0.5}}}}},
      {"final", {{"test_scale", 0.7}}}};
  const nlohmann::json s = {{"K", 2},           {"M", 1},        {"noise", 0.2}, {"init_std", 0.0}, {"schedule", schedule},
                            {"t_max", 4.0},     {"dims", {500, 1000}}, {"seeds", 12}, {"n_points", 10}, {"test_size", 0}};
  CHECK(run("validate", s).exit_code == 0);
  // Every piece of the schedule matters: the curve under it differs from the constant run.
  nlohmann::json constant = s;
  constant.erase("schedule");
  const Table a = run("curve", s).tables.at("curve.csv"), b = run("curve", constant).tables.at("curve.csv");
  CHECK(std::fabs(a.number(a.rows() - 1, "eg") - b.number(b.rows() - 1, "eg")) > 1e-3);
}

// The drift at time t is the theory's terms at t: under a schedule, η(t) and r(t) there. (Before the
// terms took the time, the check compared the increments at t with the drift at η(0), r(0), and a
// schedule was refused with mode=drift.)
TEST_CASE("dropout: the drift check under a schedule compares the terms at the run's time") {
  const nlohmann::json schedule = {
      {"controls",
       {{{"control", "dropout_keep"}, {"shape", "piecewise_constant"}, {"t_final", 4.0}, {"values", {1.0, 0.5}}},
        {{"control", "eta"}, {"shape", "piecewise_linear"}, {"t_final", 4.0}, {"values", {2.0, 0.4}}}}}};
  const nlohmann::json s = {{"mode", "drift"}, {"K", 2},           {"M", 1},      {"noise", 0.2},          {"schedule", schedule},
                            {"t_max", 4.0},    {"drift_times", {0.0, 3.0}}, {"dims", {500}}, {"drift_samples", 20000}};
  CHECK(run("validate", s).exit_code == 0);
}
