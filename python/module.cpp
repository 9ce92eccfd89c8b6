// hdat._core: the compiled half of the Python package `hdat` (python/hdat/ is the other half).
// Everything a command computes and writes goes through the same library as the command line
// (hdat_app), so a Python call and `hdat ...` with the same keys give the same files. The pure-Python
// layer turns keyword arguments into keys, output folders into DataFrames, and exit codes into
// exceptions; this file only moves data across and runs the work with the GIL released.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <filesystem>
#include <optional>

#include "convert.hpp"
#include "hdat/app/geometry.hpp"
#include "hdat/core/exit_code.hpp"
#include "hdat/app/listing.hpp"
#include "hdat/app/plot.hpp"
#include "hdat/app/run.hpp"
#include "hdat/app/sweep.hpp"
#include "hdat/core/error.hpp"
#include "hdat/core/output.hpp"
#include "integrate.hpp"
#include "optimize.hpp"
#include "own_model.hpp"
#include "run_guard.hpp"

namespace py = pybind11;
using json = nlohmann::json;

namespace hdat::python {

namespace {

using Assignments = std::vector<std::pair<std::string, json>>;

Assignments assignments_of(const py::list& pairs) {
  Assignments out;
  for (auto item : pairs) {
    auto pair = item.cast<py::tuple>();
    out.emplace_back(pair[0].cast<std::string>(), to_json(pair[1]));
  }
  return out;
}

json config_of(const py::object& config) { return config.is_none() ? json() : to_json(config); }

// What the Python layer needs of a finished command: everything the command line would print or
// write, the folder already written.
py::dict describe(const app::Run& run, const std::filesystem::path& dir, bool interrupted) {
  py::dict tables;
  for (const auto& [name, table] : run.output.tables) tables[py::str(name)] = py::str(table.to_csv());
  py::list files;
  for (const auto& [name, content] : run.output.files) files.append(name);
  py::dict out;
  out["model"] = run.model->name;
  out["command"] = run.command;
  out["exit_code"] = run.output.exit_code;
  out["summary"] = run.output.summary;
  out["report"] = app::report(run, dir);
  out["tables"] = tables;
  out["files"] = files;
  out["record"] = to_python(app::run_record(run));
  out["interrupted"] = interrupted;
  return out;
}

py::object run_model(const std::string& model_name, const std::string& command, const py::object& config, const py::list& sets,
                     const std::string& out, int threads, bool quiet, bool forward_stderr, const std::string& command_line, bool replace) {
  check_output_folder(out, "out");  // first, as on the command line
  const ModelEntry& model = registry().get(model_name);
  app::find_command(model, command);  // an unknown command is reported before the parameters, as on the command line
  const Params params = resolve_for(model, config_of(config), assignments_of(sets));
  app::prepare_output(out, model, command, params, replace, "out", "replace=True");
  RunContext ctx;
  ctx.threads = threads;
  ctx.quiet = quiet;
  ctx.out = out;
  std::optional<app::Run> run;
  const bool interrupted = run_guarded(
      [&] {
        // One Python thread state for the worker for the whole run: a Python model's callbacks on
        // this thread then only take the GIL (python/own_model.cpp).
        py::gil_scoped_acquire thread_state;
        py::gil_scoped_release running;
        run = app::run_command(model, command, params, ctx);  // a Python model's failure: no folder
        run->command_line = command_line;
        app::write_output(out, *run);
      },
      {forward_stderr});
  if (!run) return py::none();  // interrupted before the command returned anything
  return describe(*run, out, interrupted);
}

py::object run_geometry(const std::string& model_file, const std::string& maps_file, const py::object& config, const py::list& sets,
                        const std::string& out, int threads, bool quiet, bool forward_stderr, const std::string& command_line) {
  check_output_folder(out, "out");
  const Params params = app::resolve_geometry(config_of(config), assignments_of(sets));
  RunContext ctx;
  ctx.threads = threads;
  ctx.quiet = quiet;
  ctx.out = out;
  std::optional<app::Run> run;
  std::string notes;
  const bool interrupted = run_guarded(
      [&] {
        app::Run r = app::run_geometry({model_file, maps_file}, params, ctx);
        r.command_line = command_line;
        app::write_output(out, r);
        run = std::move(r);
        notes = app::geometry_figures(out, params);
      },
      {forward_stderr});
  if (!run) return py::none();
  py::dict d = describe(*run, out, interrupted);
  d["notes"] = notes;
  return d;
}

py::dict run_sweep(const std::string& model, const py::object& config, const py::list& sets, const std::vector<std::string>& grid,
                   const std::vector<std::string>& observables, const std::string& mode, const std::string& out, int threads,
                   int point_threads, bool retry_failed, bool merge, bool quiet, bool forward_stderr) {
  app::SweepRequest r;
  r.model = model;
  r.config = config.is_none() ? json::object() : to_json(config);
  r.assignments = assignments_of(sets);
  r.grid = grid;
  r.observables = observables;
  r.mode = mode;
  r.out = out;
  r.threads = threads;
  r.point_threads = point_threads;
  r.retry_failed = retry_failed;
  r.merge = merge;
  r.quiet = quiet;
  sweep::Communicator one_process;
  app::SweepOutcome outcome;
  const bool interrupted = run_guarded([&] { outcome = app::run_sweep(r, one_process); }, {forward_stderr});
  py::dict d;
  d["exit_code"] = interrupted && outcome.exit_code == code(ExitCode::ok) ? code(ExitCode::interrupted) : outcome.exit_code;
  d["report"] = outcome.report;
  d["notes"] = outcome.notes;
  d["interrupted"] = interrupted;
  return d;
}

py::dict plot_folder(const std::string& dir, const std::vector<std::string>& observables, const std::vector<double>& contours,
                     const std::string& x, const std::string& y, bool heatmap, bool lines, bool together, bool generic) {
  app::PlotRequest r{observables, contours, x, y, heatmap, lines, together, generic};
  app::PlotOutcome outcome;
  run_guarded([&] { outcome = app::plot_folder(dir, r); });
  py::list figures;
  for (const auto& f : outcome.figures) figures.append(f.string());
  py::dict d;
  d["figures"] = figures;
  d["notes"] = outcome.notes;
  return d;
}

// hdat's C++ errors become the Python classes of hdat/_errors.py (InputError is a ValueError).
void translate(std::exception_ptr p) {
  auto raise = [](const char* cls, py::handle fallback, const std::string& message, const std::string* key) {
    try {
      py::object type = py::module_::import("hdat._errors").attr(cls);
      // An InputError's message is the command line's: _from_core says it in Python's terms.
      py::object e = key ? type.attr("_from_core")(message, *key) : type(message);
      PyErr_SetObject(type.ptr(), e.ptr());
    } catch (const py::error_already_set&) {
      PyErr_SetString(fallback.ptr(), message.c_str());
    }
  };
  try {
    if (p) std::rethrow_exception(p);
  } catch (const InputError& e) {
    raise("InputError", PyExc_ValueError, e.what(), &e.key());
  } catch (const NumericalError& e) {
    raise("NumericalError", PyExc_RuntimeError, e.what(), nullptr);
  }
}

}  // namespace

}  // namespace hdat::python

PYBIND11_MODULE(_core, m) {
  using namespace hdat::python;
  m.doc() = "hdat's compiled core (use the package `hdat`)";
  hdat::register_models();
  py::register_exception_translator(&translate);
  const json provenance = hdat::provenance();
  m.attr("version") = provenance.value("version", "");
  m.attr("git_revision") = provenance.value("git_revision", "");

  m.def("models", [] { return to_python(hdat::app::models_table()); }, "every model: name, summary, description, commands");
  m.def("models_text", [] { return hdat::app::models_text(); }, "what `hdat list` prints");
  m.def("parameters", [](const std::string& model) { return to_python(hdat::app::parameters_table(hdat::registry().get(model))); },
        py::arg("model"), "a model's keys: type, default, range, meaning, condition");
  m.def("parameters_text", [](const std::string& model) { return hdat::app::parameters_text(hdat::registry().get(model)); },
        py::arg("model"), "what `hdat list MODEL` prints");
  m.def("run", &run_model, py::arg("model"), py::arg("command"), py::arg("config"), py::arg("sets"), py::arg("out"), py::arg("threads"),
        py::arg("quiet"), py::arg("forward_stderr"), py::arg("command_line"), py::arg("replace") = false,
        "resolve, run and write one model command into `out` (as `hdat COMMAND MODEL --out out [--replace]`)");
  m.def("geometry", &run_geometry, py::arg("model_file"), py::arg("maps_file"), py::arg("config"), py::arg("sets"), py::arg("out"),
        py::arg("threads"), py::arg("quiet"), py::arg("forward_stderr"), py::arg("command_line"), "as `hdat geometry ... --out out`");
  m.def("sweep", &run_sweep, py::arg("model"), py::arg("config"), py::arg("sets"), py::arg("grid"), py::arg("observables"), py::arg("mode"),
        py::arg("out"), py::arg("threads"), py::arg("point_threads"), py::arg("retry_failed"), py::arg("merge"), py::arg("quiet"),
        py::arg("forward_stderr"), "as `hdat sweep MODEL ... --out out`");
  m.def("plot", &plot_folder, py::arg("dir"), py::arg("observables"), py::arg("contours"), py::arg("x"), py::arg("y"), py::arg("heatmap"),
        py::arg("lines"), py::arg("together"), py::arg("generic"), "as `hdat plot DIR`");
  bind_integrate(m);
  bind_optimize(m);
  bind_own_model(m);
}
