// Identities that must hold for every registered dynamics model and every command (issue 32 item 6),
// asserted on small settings, never golden numbers. A model added later is covered without touching
// this file: its settings are its ValidationSmoke's, with the time grid and the seed count replaced
// here (kTimeKeys, small_settings).
//   (a) a curve observed at times that do not start at 0 equals the curve observed from 0, at those
//       times, to the integration tolerance (the initial state is at t = 0, whatever the first time);
//   (b) simulate gives identical numbers on 1 and on 3 threads;
//   (c) an interrupted simulate, resumed, equals an uninterrupted one; an interrupted curve says that
//       it is computed again and names its last row's time;
//   (d) the drift terms sum to the right-hand side;
//   (e) inputs that cannot give a result are InputError (exit 2) for every command, before any work.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "../quiet_context.hpp"
#include "forwarding_dynamics.hpp"
#include "hdat/app/run.hpp"
#include "hdat/core/error.hpp"
#include "hdat/core/exit_code.hpp"
#include "hdat/core/harness.hpp"
#include "hdat/core/model.hpp"
#include "hdat/core/output.hpp"
#include "hdat/core/progress.hpp"
#include "hdat/core/registry.hpp"

using namespace hdat;
namespace fs = std::filesystem;

namespace {

// The keys that make a model's time grid: replaced by explicit t_points here.
const std::vector<std::string> kTimeKeys = {"t_max", "t_min", "n_points", "points", "t_points"};

struct Case {
  const ModelEntry* entry;
  double t_end;  // the last time of the small runs
};

std::vector<Case> dynamics_models() {
  register_models();
  std::vector<Case> out;
  for (const ModelEntry* m : registry().all()) {
    if (!m->dynamics) continue;
    double t_end = 10;
    if (m->smoke.settings.contains("t_max")) t_end = std::min(t_end, m->smoke.settings["t_max"].get<double>());
    out.push_back({m, t_end});
  }
  return out;
}

// The model's smoke settings with `times` as the observation times, `seeds` seeds, and `extra`.
Params small_settings(const Case& c, const std::vector<double>& times, const nlohmann::json& extra = nlohmann::json::object()) {
  std::vector<std::pair<std::string, nlohmann::json>> sets;
  for (const auto& [key, value] : c.entry->smoke.settings.items())
    if (std::find(kTimeKeys.begin(), kTimeKeys.end(), key) == kTimeKeys.end() && key != "seeds") sets.emplace_back(key, value);
  sets.emplace_back("t_points", times);
  if (c.entry->params.find("seeds")) sets.emplace_back("seeds", 3);
  for (const auto& [key, value] : extra.items()) sets.emplace_back(key, value);
  return resolve_for(*c.entry, nlohmann::json(), sets);
}

RunOutput run(const Case& c, const std::string& command, const Params& p, RunContext ctx = quiet_context()) {
  return c.entry->commands.at(command)(p, ctx);
}

// Every number of two tables, bit for bit (NaN equals NaN).
void check_identical(const Table& a, const Table& b) {
  REQUIRE(a.columns() == b.columns());
  REQUIRE(a.rows() == b.rows());
  for (std::size_t r = 0; r < a.rows(); ++r)
    for (const auto& col : a.columns()) {
      const double x = a.number(r, col), y = b.number(r, col);
      CAPTURE(r);
      CAPTURE(col);
      CHECK(((std::isnan(x) && std::isnan(y)) || x == y));
    }
}

struct TempDir {
  fs::path path;
  TempDir() {
    char name[] = "/tmp/hdat-invariants-XXXXXX";
    path = mkdtemp(name);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

TEST_CASE("every dynamics model: identities of its commands on small settings") {
  const std::vector<Case> cases = dynamics_models();
  REQUIRE(!cases.empty());
  for (const Case& c : cases) {
    CAPTURE(c.entry->name);
    const double T = c.t_end;
    const std::vector<double> from_zero = {0.0, 0.25 * T, 0.5 * T, T}, later = {0.25 * T, 0.5 * T, T};

    SUBCASE("(a) the initial state is at t = 0, whatever the first observation time") {
      const RunOutput a = run(c, "curve", small_settings(c, from_zero));
      const RunOutput b = run(c, "curve", small_settings(c, later));
      const Table& full = a.tables.at("curve.csv");
      const Table& part = b.tables.at("curve.csv");
      REQUIRE(full.rows() == from_zero.size());
      REQUIRE(part.rows() == later.size());
      REQUIRE(full.columns() == part.columns());
      // The integration tolerance (rtol, atol) of both runs: the same steps, observed elsewhere.
      const Params p = small_settings(c, later);
      const double rtol = p.real("rtol"), atol = p.real("atol");
      for (std::size_t r = 0; r < later.size(); ++r)
        for (const auto& col : part.columns()) {
          const double x = full.number(r + 1, col), y = part.number(r, col);
          CAPTURE(col);
          CAPTURE(later[r]);
          CHECK(std::fabs(x - y) <= 100 * (rtol * std::fabs(x) + atol) + 1e-12);
        }
      CHECK(b.info.at("t_start") == 0.0);
    }

    SUBCASE("(b) simulate does not depend on the thread count") {
      const Params p = small_settings(c, from_zero);
      const RunOutput one = run(c, "simulate", p, quiet_context(1));
      const RunOutput three = run(c, "simulate", p, quiet_context(3));
      check_identical(one.tables.at("sim.csv"), three.tables.at("sim.csv"));
    }

    SUBCASE("(c) an interrupted simulate resumes to the uninterrupted result") {
      const Params p = small_settings(c, from_zero);
      const RunOutput whole = run(c, "simulate", p, quiet_context(1));
      // The library's interrupt flag, raised when the last seed's system is built: the earlier
      // seeds finish and persist.
      const int seeds = Bound(*c.entry->dynamics, p).settings().seeds;
      auto built = std::make_shared<int>(0);
      const DynamicsModel stopping = testing::forwarding(*c.entry->dynamics, nullptr, nullptr, [built, seeds] {
        if (++*built == seeds) request_interrupt();
      });
      TempDir dir;
      RunContext ctx = quiet_context(1);
      ctx.out = dir.path;
      const RunOutput stopped = dynamics_simulate(stopping, p, ctx);
      clear_interrupt();
      CHECK(stopped.exit_code == code(ExitCode::interrupted));
      const RunOutput resumed = run(c, "simulate", p, ctx);
      CHECK(resumed.exit_code == code(ExitCode::ok));
      check_identical(whole.tables.at("sim.csv"), resumed.tables.at("sim.csv"));
    }

    SUBCASE("(c) an interrupted curve says that it is computed again, and where its rows end") {
      const Params p = small_settings(c, later);
      request_interrupt();
      const RunOutput stopped = run(c, "curve", p);
      clear_interrupt();
      CHECK(stopped.exit_code == code(ExitCode::interrupted));
      CHECK(stopped.summary.find("computes it again") != std::string::npos);
      const Table& rows = stopped.tables.at("curve.csv");
      const double t_last = rows.rows() ? rows.number(rows.rows() - 1, "t") : 0.0;
      CHECK(stopped.summary.find(fmt::format("to t = {:g}\n", t_last)) != std::string::npos);
      check_identical(run(c, "curve", p).tables.at("curve.csv"), run(c, "curve", p).tables.at("curve.csv"));
    }

    SUBCASE("(d) the drift terms sum to the right-hand side") {
      const Params p = small_settings(c, from_zero);
      const Bound bound(*c.entry->dynamics, p);
      const OdeTheory& theory = bound.theory(0);
      const Eigen::VectorXd x0 = bound.dynamics().initial_state(theory);
      const TheoryRun r = theory_observed(theory, x0, 0.0, {T}, bound.settings().integrate);
      // Each state at its own time: a schedule's drift changes with t, and the terms must follow.
      const std::vector<std::pair<Eigen::VectorXd, double>> at = {{x0, 0.0}, {r.final, T}, {0.5 * (x0 + r.final), 0.5 * T}};
      for (const auto& [x, t] : at) {
        Eigen::VectorXd f(x.size());
        theory(x, f, t);
        const Eigen::VectorXd total = theory.terms(x, t).total();
        REQUIRE(total.size() == f.size());
        CHECK((total - f).cwiseAbs().maxCoeff() <= 1e-9 * (1 + f.cwiseAbs().maxCoeff()));
      }
    }

    SUBCASE("(e) inputs that cannot give a result: InputError for every command, before any work") {
      std::vector<nlohmann::json> bad = {
          {{"t_points", nlohmann::json::array()}},
          {{"t_points", {0.5 * T, 0.25 * T}}},
          {{"t_points", {0.25 * T, 0.25 * T}}},
          {{"t_points", {0.0, T}}, {"t_max", 0.5 * T}},
      };
      for (const char* key : {"dims", "drift_times"})
        if (c.entry->params.find(key)) bad.push_back({{key, nlohmann::json::array()}});
      // An integer beyond C++ int, for every integer key (it would wrap around into a wrong size).
      for (const ParamSpec& s : c.entry->params.specs())
        if (s.kind == ParamKind::integer) bad.push_back({{s.key, 2147483648.0}});
      for (const auto& [command, f] : c.entry->commands)
        for (const nlohmann::json& b : bad) {
          CAPTURE(command);
          CAPTURE(b.dump());
          std::vector<std::pair<std::string, nlohmann::json>> sets;
          for (const auto& [key, value] : c.entry->smoke.settings.items())
            if (std::find(kTimeKeys.begin(), kTimeKeys.end(), key) == kTimeKeys.end() && !b.contains(key)) sets.emplace_back(key, value);
          for (const auto& [key, value] : b.items()) sets.emplace_back(key, value);
          CHECK_THROWS_AS(
              {
                RunContext ctx = quiet_context();
                f(resolve_for(*c.entry, nlohmann::json(), sets), ctx);
              },
              InputError);
        }
    }
  }
}

TEST_CASE("an output folder is checked before any work, and holds one run") {
  register_models();
  const ModelEntry& model = *registry().all().front();
  const Params p = resolve_for(model, nlohmann::json(), {});
  TempDir dir;
  const std::string command = model.commands.begin()->first;
  CHECK_THROWS_AS(app::prepare_output("", model, command, p, false), InputError);
  const fs::path file = dir.path / "a_file";
  std::ofstream(file) << "x";
  CHECK_THROWS_AS(app::prepare_output(file, model, command, p, false), InputError);
  CHECK_THROWS_AS(app::prepare_output(file / "below", model, command, p, false), InputError);
  // A folder that does not exist yet is probed and left as it was: nothing written.
  const fs::path fresh = dir.path / "new" / "run";
  app::prepare_output(fresh, model, command, p, false);
  CHECK(!fs::exists(dir.path / "new"));
  if (geteuid() != 0) {  // root writes everywhere
    const fs::path locked = dir.path / "locked";
    fs::create_directory(locked);
    fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
    CHECK_THROWS_AS(app::prepare_output(locked, model, command, p, false), InputError);
    fs::permissions(locked, fs::perms::owner_all);
  }
  // Another command's run.json: refused, unless replaced (which clears hdat's files, not the user's).
  const fs::path used = dir.path / "used";
  fs::create_directory(used);
  write_file_atomic(used / "run.json", nlohmann::json({{"program", "hdat"}, {"model", model.name}, {"command", "another"},
                                                       {"config", p.nested()}, {"outputs", nlohmann::json::array({"other.csv"})}})
                                           .dump());
  write_file_atomic(used / "other.csv", "t\n0\n");
  write_file_atomic(used / "notes.txt", "mine\n");
  CHECK_THROWS_AS(app::prepare_output(used, model, command, p, false), InputError);
  CHECK(fs::exists(used / "other.csv"));
  app::prepare_output(used, model, command, p, true);
  CHECK(!fs::exists(used / "run.json"));
  CHECK(!fs::exists(used / "other.csv"));
  CHECK(fs::exists(used / "notes.txt"));
  // The same command and configuration: its folder is its own (resumes).
  write_file_atomic(used / "run.json", nlohmann::json({{"program", "hdat"}, {"model", model.name}, {"command", command}, {"config", p.nested()}})
                                           .dump());
  CHECK_NOTHROW(app::prepare_output(used, model, command, p, false));
}

// The hash that names persisted seeds comes from the declaration (ParamSet::theory_only): a key that
// chooses what is compared leaves it alone, so simulate and validate share finished runs; a key that
// changes a run (the seed) changes it.
TEST_CASE("every dynamics model: the simulation hash follows the declaration") {
  for (const Case& c : dynamics_models()) {
    CAPTURE(c.entry->name);
    const Params base = small_settings(c, {0.0, 1.0});
    const double size = Bound(*c.entry->dynamics, base).settings().simulate_size;
    const std::string hash = simulation_hash(Bound(*c.entry->dynamics, base), size);
    for (const ParamSpec& spec : c.entry->params.specs())
      if (spec.key == "false_alarm" || spec.key == "rtol" || spec.key == "mode") CHECK(!spec.changes_simulation);
    if (c.entry->params.find("false_alarm")) {
      const Params other = small_settings(c, {0.0, 1.0}, {{"false_alarm", 0.02}});
      CHECK(simulation_hash(Bound(*c.entry->dynamics, other), size) == hash);
    }
    const Params reseeded = small_settings(c, {0.0, 1.0}, {{"seed", 7}});
    CHECK(simulation_hash(Bound(*c.entry->dynamics, reseeded), size) != hash);
  }
}

// Every model, dynamics or not: a list key given as [] is refused when the parameters are resolved,
// naming the key, before any command runs. (tied-attention's validate crashed on dims=[], and
// curve wrote a λ comparison of nothing for lambda_grid=[].)
TEST_CASE("every model refuses an empty list for every list key, naming it") {
  register_models();
  int lists = 0;
  for (const ModelEntry* model : registry().all())
    for (const ParamSpec& s : model->params.specs()) {
      if (s.kind != ParamKind::real_list && s.kind != ParamKind::int_list) continue;
      CAPTURE(model->name);
      CAPTURE(s.key);
      ++lists;
      try {
        (void)resolve_for(*model, nlohmann::json(), {{s.key, nlohmann::json::array()}});
        FAIL("accepted");
      } catch (const InputError& e) {
        CHECK(e.key() == s.key);
      }
    }
  CHECK(lists >= 10);
}
