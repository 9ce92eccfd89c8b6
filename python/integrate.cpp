#include "integrate.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <exception>
#include <limits>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "convert.hpp"
#include "hdat/core/error.hpp"
#include "hdat/core/integrate.hpp"
#include "hdat/core/layout.hpp"
#include "hdat/core/progress.hpp"
#include "run_guard.hpp"

namespace hdat::python {

namespace py = pybind11;

namespace {

using Array = py::array_t<double, py::array::c_style | py::array::forcecast>;

// The first Python exception raised by the right-hand side or the monitor; the engine only learns
// that the call failed, and the exception itself is raised again once the engine has returned.
struct PythonFailure {
  std::exception_ptr error;
  void keep(std::exception_ptr e) {
    if (!error) error = std::move(e);
  }
};

// f(t, x) -> dx/dt of length n, called with the GIL taken; x is a fresh copy the caller may keep.
struct PythonSystem {
  py::object f;
  Eigen::Index n;
  PythonFailure* failure;

  void operator()(const ConstVecRef& x, VecRef dxdt, double t) const {
    if (interrupted()) throw std::runtime_error("interrupted (KeyboardInterrupt)");
    py::gil_scoped_acquire gil;
    try {
      Array xa(n);
      std::copy(x.data(), x.data() + n, xa.mutable_data());
      Array d(f(t, xa));
      if (d.size() != n) {
        throw py::value_error("f(t, x) returned " + std::to_string(d.size()) + " values for a state of " + std::to_string(n) +
                              " (it must return dx/dt of the state's size)");
      }
      std::copy(d.data(), d.data() + n, dxdt.data());
    } catch (py::error_already_set& e) {
      failure->keep(std::current_exception());
      throw std::runtime_error(std::string("f(t, x) raised ") + e.what());
    } catch (const std::exception& e) {
      failure->keep(std::current_exception());
      throw std::runtime_error(std::string("f(t, x) failed: ") + e.what());
    }
  }
};

py::dict integrate_py(const py::object& f, const Array& x0, const Array& times, const std::vector<std::tuple<std::string, int, int>>& blocks,
                      const std::string& method, double rtol, double atol, double initial_step, double max_step, long max_steps,
                      bool log_time, double time_scale, double divergence, const py::list& events) {
  if (x0.ndim() != 1) throw py::value_error("x0 must be one-dimensional");
  if (times.ndim() != 1 || times.size() < 1) throw py::value_error("t must be a one-dimensional array of at least one time");
  const Eigen::Index n = x0.size();
  Eigen::VectorXd x(n);
  std::copy(x0.data(), x0.data() + n, x.data());
  const std::vector<double> t(times.data(), times.data() + times.size());
  const double t0 = t.front();

  StateLayout layout;
  for (const auto& [name, rows, cols] : blocks) layout.add(name, rows, cols);
  if (!blocks.empty() && layout.size() != n) throw py::value_error("the blocks hold " + std::to_string(layout.size()) + " values, x0 " + std::to_string(n));

  IntegrateOptions o;
  try {
    o.stepper = stepper_from_name(method);
  } catch (const InputError& e) {  // the Python keyword is `method`
    throw InputError("method", std::string(e.what()).substr(std::string("parameter 'stepper': ").size()));
  }
  o.rtol = rtol, o.atol = atol, o.initial_step = initial_step, o.max_step = max_step, o.max_steps = max_steps;
  o.log_time = log_time, o.time_scale = time_scale, o.divergence = divergence;
  o.validate();  // InputError naming the option, before anything runs
  if (!blocks.empty()) o.component_name = [&layout](int k) { return layout.component_name(k); };

  PythonFailure failure;
  // Events (g, name, terminal, direction), located by the engine between steps (TOMS 748 on the
  // stepper's own solution). A g that raises ends the run at the next step; its exception is raised again.
  for (const auto& item : events) {
    const auto spec = item.cast<py::tuple>();
    const py::object g = spec[0];
    auto value = [g, &failure, n](double tt, const Eigen::VectorXd& xs) {
      if (failure.error) return std::numeric_limits<double>::quiet_NaN();
      py::gil_scoped_acquire gil;
      try {
        Array xa(n);
        std::copy(xs.data(), xs.data() + n, xa.mutable_data());
        return g(tt, xa).cast<double>();
      } catch (py::error_already_set&) {
        failure.keep(std::current_exception());
        return std::numeric_limits<double>::quiet_NaN();
      }
    };
    o.events.push_back({spec[1].cast<std::string>(), value, spec[2].cast<bool>(), spec[3].cast<int>()});
  }
  if (!o.events.empty()) o.step_monitor = [&failure](double, const Eigen::VectorXd&) { return !failure.error; };

  std::vector<double> seen;
  std::vector<double> states;
  const OdeObserver observe = [&](double tt, const Eigen::VectorXd& xs) {
    seen.push_back(tt);
    states.insert(states.end(), xs.data(), xs.data() + n);
    return true;
  };
  // Built here, with the GIL: copying the Python function bumps its reference count.
  const OdeSystem system = PythonSystem{f, n, &failure};
  IntegrateSummary summary;
  const bool interrupted_by_user = run_guarded([&] {
    // One Python thread state for the worker for the whole run (taken, then the GIL let go): each call
    // of f then only takes the GIL, instead of creating and destroying a thread state every time.
    py::gil_scoped_acquire thread_state;
    py::gil_scoped_release running;
    summary = integrate(system, x, t0, t, observe, o);
  });

  if (failure.error && !interrupted_by_user) std::rethrow_exception(failure.error);
  const auto k = static_cast<py::ssize_t>(seen.size());
  py::array_t<double> ts(k), xs({k, static_cast<py::ssize_t>(n)});
  std::copy(seen.begin(), seen.end(), ts.mutable_data());
  std::copy(states.begin(), states.end(), xs.mutable_data());
  py::dict out;
  out["t"] = ts;
  out["x"] = xs;
  out["summary"] = summary;
  py::list located;
  for (const LocatedEvent& e : summary.events) {
    py::array_t<double> xe(static_cast<py::ssize_t>(e.x.size()));
    std::copy(e.x.data(), e.x.data() + e.x.size(), xe.mutable_data());
    located.append(py::make_tuple(e.name, e.t, xe, e.direction));
  }
  out["events"] = located;
  out["interrupted"] = interrupted_by_user;
  return out;
}

}  // namespace

void bind_integrate(py::module_& m) {
  py::class_<IntegrateSummary>(m, "Summary", "how an integration went (hdat::IntegrateSummary)")
      .def_property_readonly("status", &IntegrateSummary::status_name, "completed | stopped_by_event | nonfinite | diverged | max_steps | step_underflow | failed")
      .def_readonly("message", &IntegrateSummary::message, "why it stopped ('' when completed)")
      .def_readonly("method", &IntegrateSummary::stepper)
      .def_readonly("rtol", &IntegrateSummary::rtol)
      .def_readonly("atol", &IntegrateSummary::atol)
      .def_readonly("log_time", &IntegrateSummary::log_time)
      .def_readonly("t_start", &IntegrateSummary::t_start)
      .def_readonly("t_requested", &IntegrateSummary::t_requested)
      .def_readonly("t_reached", &IntegrateSummary::t_reached)
      .def_readonly("rhs_calls", &IntegrateSummary::rhs_calls, "evaluations of f")
      .def_readonly("accepted_steps", &IntegrateSummary::accepted_steps)
      .def_readonly("rejected_steps", &IntegrateSummary::rejected_steps)
      .def_readonly("jacobian_calls", &IntegrateSummary::jacobian_calls, "finite-difference Jacobians (rosenbrock4)")
      .def_readonly("observations", &IntegrateSummary::observations)
      .def_readonly("smallest_step", &IntegrateSummary::smallest_step)
      .def_readonly("largest_step", &IntegrateSummary::largest_step)
      .def_readonly("wall_seconds", &IntegrateSummary::wall_seconds)
      .def_readonly("rhs_seconds", &IntegrateSummary::rhs_seconds, "time spent in f")
      .def_property_readonly("ok", &IntegrateSummary::ok, "completed or stopped by an event")
      .def_property_readonly("steps", [](const IntegrateSummary& s) { return s.accepted_steps + s.rejected_steps; })
      .def("brief", &IntegrateSummary::brief, "one line")
      .def("report", &IntegrateSummary::report, "several lines")
      .def("to_dict", [](const IntegrateSummary& s) { return to_python(s.to_json()); })
      .def("__repr__", [](const IntegrateSummary& s) { return "<hdat.Summary " + s.brief() + ">"; })
      .def("__str__", &IntegrateSummary::report);
  m.def("methods", &stepper_names, "the steppers of hdat::integrate");
  m.def("integrate", &integrate_py, py::arg("f"), py::arg("x0"), py::arg("t"), py::arg("blocks"), py::arg("method"), py::arg("rtol"),
        py::arg("atol"), py::arg("initial_step"), py::arg("max_step"), py::arg("max_steps"), py::arg("log_time"), py::arg("time_scale"),
        py::arg("divergence"), py::arg("events"), "hdat::integrate of a Python f(t, x) -> dx/dt at the times t (t[0] is the start)");
}

}  // namespace hdat::python
