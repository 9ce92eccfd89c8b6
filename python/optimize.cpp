// hdat._core.optimize: `hdat optimize MODEL` for the Python package (python/hdat/_optimize.py wraps it).
#include "optimize.hpp"

#include <optional>

#include "convert.hpp"
#include "hdat/app/optimize.hpp"
#include "hdat/core/error.hpp"
#include "run_guard.hpp"

namespace py = pybind11;

namespace hdat::python {

namespace {

py::dict run_optimize(const std::string& model_name, const py::object& config, const py::list& sets, const std::vector<std::string>& controls,
                      int intervals, const std::string& shape, const std::vector<std::string>& bounds, const std::vector<std::string>& budget,
                      const std::string& objective, double target, double t_final, const std::string& algorithm, int max_evaluations,
                      bool baselines, double confirm, int confirm_seeds, const py::object& confirm_theory, bool restart, const std::string& out, int threads, bool quiet,
                      bool forward_stderr, const std::string& command_line) {
  const ModelEntry& model = registry().get(model_name);
  std::vector<std::pair<std::string, nlohmann::json>> assignments;
  for (auto item : sets) {
    auto pair = item.cast<py::tuple>();
    assignments.emplace_back(pair[0].cast<std::string>(), to_json(pair[1]));
  }
  const Params params = resolve_for(model, config.is_none() ? nlohmann::json() : to_json(config), assignments);
  optimize::OptimizeOptions o;
  o.controls = controls;
  o.intervals = intervals;
  o.shape = shape_from_name(shape, "shape");
  o.bounds = app::parse_bounds(bounds);
  o.budget = app::parse_budget(budget);
  o.objective = optimize::objective_from_name(objective, "objective");
  o.target = target;
  o.t_final = t_final;
  o.algorithm = algorithm;
  o.max_evaluations = max_evaluations;
  o.baselines = baselines;
  o.confirm_size = confirm;
  o.confirm_seeds = confirm_seeds;
  if (!confirm_theory.is_none()) {
    if (!py::isinstance<py::dict>(confirm_theory)) throw InputError("confirm_theory", "must be a dict {key: value} of the theory's settings");
    o.confirm_theory = to_json(confirm_theory);
  }
  o.restart = restart;
  RunContext ctx;
  ctx.threads = threads;
  ctx.quiet = quiet;
  ctx.out = out;
  std::optional<app::Run> run;
  const bool interrupted = run_guarded(
      [&] {
        run = app::run_optimize(model, params, o, ctx);
        run->command_line = command_line;
        app::write_output(out, *run);
      },
      {forward_stderr});
  py::dict d;
  if (!run) return d;
  py::dict tables;
  for (const auto& [name, table] : run->output.tables) tables[py::str(name)] = py::str(table.to_csv());
  py::list files;
  for (const auto& [name, content] : run->output.files) files.append(name);
  d["model"] = model.name;
  d["command"] = "optimize";
  d["exit_code"] = run->output.exit_code;
  d["summary"] = run->output.summary;
  d["report"] = app::report(*run, out);
  d["tables"] = tables;
  d["files"] = files;
  d["record"] = to_python(app::run_record(*run));
  d["interrupted"] = interrupted;
  return d;
}

}  // namespace

void bind_optimize(py::module_& m) {
  m.def("optimize", &run_optimize, py::arg("model"), py::arg("config"), py::arg("sets"), py::arg("controls"), py::arg("intervals"),
        py::arg("shape"), py::arg("bounds"), py::arg("budget"), py::arg("objective"), py::arg("target"), py::arg("t_final"),
        py::arg("algorithm"), py::arg("max_evaluations"), py::arg("baselines"), py::arg("confirm"), py::arg("confirm_seeds"),
        py::arg("confirm_theory"), py::arg("restart"), py::arg("out"), py::arg("threads"), py::arg("quiet"), py::arg("forward_stderr"), py::arg("command_line"),
        "as `hdat optimize MODEL --control ... --out out`");
}

}  // namespace hdat::python
