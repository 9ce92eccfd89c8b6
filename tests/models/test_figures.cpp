// `hdat plot` of every output folder kind of every registered model with a theory and a check: curve,
// simulate, validate (trajectory, and drift for dynamics models) and a sweep. Each draws, every
// figure's gnuplot script has only non-empty data blocks and no empty panel, and a corrupted folder
// fails with a message and writes nothing.
#include <doctest/doctest.h>

#include <filesystem>
#include <set>

#include "../gnuplot_script.hpp"
#include "../quiet_context.hpp"
#include "hdat/app/plot.hpp"
#include "hdat/app/run.hpp"
#include "hdat/app/sweep.hpp"
#include "hdat/core/error.hpp"
#include "hdat/core/output.hpp"
#include "hdat/core/plot.hpp"
#include "hdat/core/registry.hpp"

using namespace hdat;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / "hdat_test_figures" / name;
  fs::remove_all(dir);
  fs::create_directories(dir.parent_path());
  return dir;
}

// Run `command` of `model` with `settings` into DIR, as `hdat COMMAND MODEL --set ... --out DIR` does.
void run_into(const ModelEntry& model, const std::string& command, const json& settings, const fs::path& dir) {
  std::vector<std::pair<std::string, json>> sets;
  for (const auto& [key, value] : settings.items()) sets.emplace_back(key, value);
  const Params p = resolve_for(model, json(), sets);
  RunContext ctx = quiet_context();
  ctx.threads = 2;
  ctx.out = dir;
  const app::Run run = app::run_command(model, command, p, ctx);
  app::write_output(dir, run);
}

std::set<fs::path> files_of(const fs::path& dir) {
  std::set<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out.insert(e.path());
  return out;
}

// Draw DIR and check every figure: a PNG beside its script, whose data blocks hold rows and whose
// panels each draw some of them.
void check_figures(const fs::path& dir, const std::string& what) {
  CAPTURE(what);
  const app::PlotOutcome outcome = app::plot_folder(dir);
  REQUIRE(!outcome.figures.empty());
  CHECK(outcome.notes.empty());  // no fallback to the generic figures
  for (const fs::path& png : outcome.figures) {
    CAPTURE(png);
    CHECK(fs::file_size(png) > 1000);
    const fs::path gp = fs::path(png).replace_extension(".gp");
    REQUIRE(fs::exists(gp));
    const testing::GnuplotScript script(read_file(gp));
    CHECK(!script.plots.empty());
    CHECK(script.empty_plot() == "");
    // The verdict's clauses are not split from their values at a line break of the title.
    const std::string text = read_file(gp);
    CHECK(text.find("rate:\\n") == std::string::npos);
    CHECK(text.find("false-alarm\\nrate") == std::string::npos);
  }
  for (const fs::path& f : files_of(dir)) CHECK_MESSAGE(f.filename().string().find(".hdat-tmp") == std::string::npos, f);
}

// Fewer seeds and sizes than the smoke test: the figures, not the verdict, are under test.
json small(const ModelEntry& m) {
  json s = m.smoke.settings;
  if (m.params.find("seeds") && m.params.find("seeds")->kind == ParamKind::integer) s["seeds"] = 2;
  return s;
}

// A quiet two-thread sweep of the model at `settings` over `grid`, into `out`.
app::SweepRequest small_sweep(const ModelEntry& m, const json& settings, const std::string& grid, const fs::path& out) {
  app::SweepRequest sweep;
  sweep.model = m.name;
  for (const auto& [key, value] : settings.items()) sweep.assignments.emplace_back(key, value);
  sweep.grid = {grid};
  sweep.out = out;
  sweep.quiet = true;
  sweep.threads = 2;
  return sweep;
}

}  // namespace

TEST_CASE("hdat plot draws every folder kind of every model, no panel empty") {
  if (!plot::available()) {
    MESSAGE("gnuplot not installed: skipped");
    return;
  }
  register_models();
  int models = 0;
  for (const ModelEntry* m : registry().all()) {
    if (!m->commands.count("validate") || !m->smoke.declared()) continue;
    CAPTURE(m->name);
    ++models;
    const json settings = small(*m);
    for (const std::string command : {"curve", "simulate", "validate"}) {
      if (!m->commands.count(command)) continue;
      const fs::path dir = scratch(m->name + "_" + command);
      run_into(*m, command, settings, dir);
      check_figures(dir, m->name + " " + command);
    }
    if (!m->dynamics && m->params.find("false_alarm")) {
      // A state-evolution model's validate sweep, with its default observable (the worst deviation
      // over the allowed one): tied-attention's refused to run without --observable.
      app::SweepRequest sweep = small_sweep(*m, settings, "false_alarm=[0.01,0.05]", scratch(m->name + "_sweep_validate"));
      sweep.mode = "validate";
      sweep::Communicator comm;
      REQUIRE(app::run_sweep(sweep, comm).exit_code == 0);
      check_figures(sweep.out, m->name + " sweep --mode validate");
      const Table points = Table::read_csv_file((sweep.out / "sweep.csv").string());
      CHECK(points.has_column("worst"));
    }
    if (m->dynamics) {
      json drift = settings;
      drift["mode"] = "drift";
      drift.erase("theory_replicas");  // applies to trajectories only
      if (m->params.find("drift_samples")) drift["drift_samples"] = 200;  // polarization's flow has exact increments
      drift["drift_times"] = json::array({0.0});
      const fs::path dir = scratch(m->name + "_drift");
      run_into(*m, "validate", drift, dir);
      check_figures(dir, m->name + " validate mode=drift");

      const double t_max = settings.value("t_max", 10.0);
      app::SweepRequest sweep = small_sweep(*m, settings, "t_max=" + json::array({t_max / 2, t_max}).dump(), scratch(m->name + "_sweep"));
      sweep::Communicator comm;
      REQUIRE(app::run_sweep(sweep, comm).exit_code == 0);
      check_figures(sweep.out, m->name + " sweep");

      // A sweep of validate with its default observable (the worst deviation over the allowed one):
      // a finite value at every point, so the figure has something to draw.
      sweep.mode = "validate";
      sweep.out = scratch(m->name + "_sweep_validate");
      REQUIRE(app::run_sweep(sweep, comm).exit_code == 0);
      check_figures(sweep.out, m->name + " sweep --mode validate");
      // A point that did not agree is marked as such on the figure, not only in sweep.csv.
      const Table points = Table::read_csv_file((sweep.out / "sweep.csv").string());
      const std::string script = read_file(sweep.out / "sweep.gp");
      for (const auto& [status, mark] : {std::pair<std::string, std::string>{"undecided", "undecided (sweep.csv: reason)"}, {"disagree", "DISAGREE"}}) {
        bool any = false;
        for (std::size_t r = 0; r < points.rows(); ++r) any = any || points.text(r, "status") == status;
        CAPTURE(status);
        CHECK(any == (script.find("title \"" + mark + "\"") != std::string::npos));
      }
    }
  }
  CHECK(models >= 1);
  fs::remove_all(fs::temp_directory_path() / "hdat_test_figures");
}

TEST_CASE("a corrupted validate folder fails with a message naming the file and writes nothing") {
  if (!plot::available()) return;
  register_models();
  const ModelEntry* m = registry().find("committee");
  if (!m) return;
  const fs::path dir = scratch("corrupted");
  run_into(*m, "validate", small(*m), dir);
  SUBCASE("validate.json cut short") {
    const std::string text = read_file(dir / "validate.json");
    write_file_atomic(dir / "validate.json", text.substr(0, text.size() / 2));
    const std::set<fs::path> before = files_of(dir);
    CHECK_THROWS_WITH_AS(app::plot_folder(dir), doctest::Contains("validate.json"), InputError);
    CHECK(files_of(dir) == before);
  }
  SUBCASE("escape.csv (read after the figures of every size are drawn) without its columns") {
    write_file_atomic(dir / "escape.csv", "N,t\n500,0\n");
    const std::set<fs::path> before = files_of(dir);
    CHECK_THROWS_WITH_AS(app::plot_folder(dir), doctest::Contains("escape.csv"), InputError);
    CHECK(files_of(dir) == before);
  }
  fs::remove_all(fs::temp_directory_path() / "hdat_test_figures");
}
