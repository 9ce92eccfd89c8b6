#include "own_model.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "convert.hpp"
#include "hdat/core/error.hpp"
#include "hdat/core/harness.hpp"
#include "hdat/core/model.hpp"
#include "hdat/core/progress.hpp"
#include "hdat/core/registry.hpp"

namespace hdat::python {

namespace py = pybind11;

// Named, not anonymous: the module is a unity build, whose files share one anonymous namespace.
namespace own_model {

// ---------------------------------------------------------------------------------------------------
// The model as registered: the user's instance and what the harness needs to know without calling it.

struct PyModel {
  std::string name;
  py::handle instance;  // the user's hdat.Model (a registered model lives as long as the process)
  py::handle bind;      // hdat._model._bind(instance, flat parameters) -> config
  py::handle layout;    // hdat._model._layout(instance, config) -> [(name, rows, cols, symmetric, vector)]
  std::vector<std::string> terms;
  StandardDefaults defaults;
  bool replica_start = false;  // the model defines replica_initial_state
  bool has_record = false;     // its System defines record()
  bool has_events = false;     // the model defines events()
  std::string escape_event;    // the event that ends a plateau ("" none)

  std::string where(const std::string& method) const { return "model '" + name + "': " + method; }
};

using BlockArray = py::array_t<double, py::array::forcecast>;

std::string shape_text(const Block& b) {
  return b.vector ? "(" + std::to_string(b.rows) + ",)" : "(" + std::to_string(b.rows) + ", " + std::to_string(b.cols) + ")";
}

std::string shape_text(const py::array& a) {
  std::string s = "(";
  for (py::ssize_t k = 0; k < a.ndim(); ++k) s += (k ? ", " : "") + std::to_string(a.shape(k));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

// The state as {block: ndarray}: one fresh array (the callee may keep it), each block a view of its
// part, column-major as StateLayout stores it.
py::dict blocks_of(const double* x, const StateLayout& layout) {
  py::array_t<double> flat(layout.size());
  std::copy(x, x + layout.size(), flat.mutable_data());
  constexpr auto d = static_cast<py::ssize_t>(sizeof(double));
  py::dict out;
  for (const Block& b : layout.blocks()) {
    double* p = flat.mutable_data() + b.offset;
    if (b.vector) out[py::str(b.name)] = py::array_t<double>({static_cast<py::ssize_t>(b.rows)}, {d}, p, flat);
    else out[py::str(b.name)] = py::array_t<double>({static_cast<py::ssize_t>(b.rows), static_cast<py::ssize_t>(b.cols)}, {d, d * b.rows}, p, flat);
  }
  return out;
}

py::dict mapping(py::handle value, const std::string& what, const std::string& expected) {
  if (py::isinstance<py::dict>(value)) return py::reinterpret_borrow<py::dict>(value);
  if (!PyMapping_Check(value.ptr()) || py::isinstance<py::str>(value) || py::isinstance<py::array>(value))
    throw py::type_error(what + ": expected " + expected + ", got " + std::string(py::str(py::type::handle_of(value).attr("__name__"))));
  return py::dict(py::reinterpret_borrow<py::object>(value));
}

// One block's values from an array of its declared shape into the flat state (a symmetric block must
// be symmetric up to round-off: it is stored in full, and an asymmetric one is a bug of the model).
void read_block(py::handle value, const Block& b, double* into, const std::string& what) {
  const BlockArray a = BlockArray::ensure(value);
  if (!a) throw py::type_error(what + ": expected an array of numbers of shape " + shape_text(b));
  const bool fits = b.vector ? a.ndim() == 1 && a.shape(0) == b.rows
                             : (a.ndim() == 2 && a.shape(0) == b.rows && a.shape(1) == b.cols) || (a.ndim() == 0 && b.size() == 1);
  if (!fits) throw py::value_error(what + ": shape " + shape_text(a) + " where the block is " + shape_text(b));
  if (a.ndim() == 2) {
    const auto m = a.unchecked<2>();
    for (int j = 0; j < b.cols; ++j)
      for (int i = 0; i < b.rows; ++i) into[i + j * b.rows] = m(i, j);
  } else {
    std::copy(a.data(), a.data() + b.size(), into);
  }
  if (!b.symmetric) return;
  double scale = 0, asymmetry = 0;
  for (int j = 0; j < b.cols; ++j)
    for (int i = 0; i < b.rows; ++i) {
      scale = std::max(scale, std::fabs(into[i + j * b.rows]));
      asymmetry = std::max(asymmetry, std::fabs(into[i + j * b.rows] - into[j + i * b.rows]));
    }
  if (!(asymmetry <= 1e-9 * scale))
    throw py::value_error(what + ": the block is declared symmetric, but differs from its transpose by " + std::to_string(asymmetry));
  for (int j = 0; j < b.cols; ++j)
    for (int i = 0; i < j; ++i) into[i + j * b.rows] = into[j + i * b.rows] = 0.5 * (into[i + j * b.rows] + into[j + i * b.rows]);
}

// {block: array} -> the flat state. Every block present (a state), or missing ones zero (a term).
Eigen::VectorXd flat_of(py::handle value, const StateLayout& layout, const std::string& what, bool every_block) {
  const py::dict d = mapping(value, what, "{block: array}");
  Eigen::VectorXd x = Eigen::VectorXd::Zero(layout.size());
  for (auto item : d) {
    const std::string name = py::str(item.first);
    if (!layout.contains(name)) {
      std::string names;
      for (const Block& b : layout.blocks()) names += (names.empty() ? "" : ", ") + b.name;
      throw py::value_error(what + ": unknown block '" + name + "' (the blocks: " + names + ")");
    }
    const Block& b = layout.block(name);
    read_block(item.second, b, x.data() + b.offset, what + ", block '" + name + "'");
  }
  if (every_block)
    for (const Block& b : layout.blocks())
      if (!d.contains(b.name)) throw py::value_error(what + ": block '" + b.name + "' missing (every block of the state is needed)");
  return x;
}

// {term: {block: array}} in the model's declared terms (every term present; a block a term does not
// change may be left out). `dropped`: the term break_term leaves out of the theory (read, then zero).
DriftTerms terms_of(py::handle value, const PyModel& m, const StateLayout& layout, const std::string& what, int dropped = -1) {
  const py::dict d = mapping(value, what, "{term: {block: array}}");
  std::string declared;
  for (const auto& t : m.terms) declared += (declared.empty() ? "" : ", ") + t;
  for (auto item : d) {
    const std::string name = py::str(item.first);
    if (std::find(m.terms.begin(), m.terms.end(), name) == m.terms.end())
      throw py::value_error(what + ": unknown term '" + name + "' (the model's terms: " + declared + ")");
  }
  DriftTerms out;
  for (std::size_t k = 0; k < m.terms.size(); ++k) {
    const std::string& term = m.terms[k];
    if (!d.contains(term)) throw py::value_error(what + ": term '" + term + "' missing (the model's terms: " + declared + ")");
    Eigen::VectorXd v = flat_of(d[py::str(term)], layout, what + ", term '" + term + "'", false);
    if (static_cast<int>(k) == dropped) v.setZero();
    out.add(term, std::move(v));
  }
  return out;
}

// {name: value} or {name: (value, se)}, in the mapping's order.
Observables observables_of(py::handle value, const std::string& what) {
  const py::dict d = mapping(value, what, "{name: value} or {name: (value, se)}");
  Observables out;
  for (auto item : d) {
    const std::string name = py::str(item.first);
    try {
      if (py::isinstance<py::tuple>(item.second) || py::isinstance<py::list>(item.second)) {
        const py::sequence pair = py::reinterpret_borrow<py::sequence>(item.second);
        if (pair.size() != 2) throw py::value_error("");
        out.add(name, pair[0].cast<double>(), pair[1].cast<double>());
      } else {
        out.add(name, item.second.cast<double>());
      }
    } catch (const py::cast_error&) {
      throw py::value_error(what + ": observable '" + name + "' must be a number or (value, se)");
    } catch (const py::value_error&) {
      throw py::value_error(what + ": observable '" + name + "' must be a number or (value, se)");
    }
  }
  return out;
}

py::object size_argument(double size) {
  if (size == std::floor(size) && std::fabs(size) < 9e15) return py::int_(static_cast<long long>(size));
  return py::float_(size);
}

// A call into the model's Python code. Its exception is the model's own failure (hdat::ModelFailure):
// the harness lets it through, from whatever thread, stopping only this command (its seeds, its
// integration, its sweep), and the front end raises the original exception (python/run_guard.cpp).
template <class F>
auto passing(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const py::error_already_set& e) {
    throw ModelFailure(e.what(), std::current_exception());
  } catch (const py::builtin_exception& e) {
    throw ModelFailure(e.what(), std::current_exception());
  }
}


// The theory: the model's drift and observables at a state.
class PyTheory final : public OdeTheory {
 public:
  PyTheory(const PyModel& model, const py::object& config, const StateLayout& layout, int dropped)
      : model_(model), layout_(layout), dropped_(dropped) {
    py::gil_scoped_acquire gil;
    config_ = config;
    drift_ = model.instance.attr("drift");
    observe_ = model.instance.attr("observe");
  }
  ~PyTheory() override {
    py::gil_scoped_acquire gil;
    config_ = drift_ = observe_ = py::object();
  }
  const StateLayout& layout() const override { return layout_; }
  void operator()(const ConstVecRef& x, VecRef dxdt, double t) const override {
    const Eigen::VectorXd state = x;  // contiguous whatever the stepper's storage
    dxdt = drift_terms(state.data(), t).total();
  }
  DriftTerms terms(const Eigen::VectorXd& x, double t) const override { return drift_terms(x.data(), t); }
  Observables observe(const Eigen::VectorXd& x, double t) const override {
    return passing([&] {
      py::gil_scoped_acquire gil;
      return observables_of(observe_(config_, blocks_of(x.data(), layout_), t), model_.where("observe()"));
    });
  }

 private:
  DriftTerms drift_terms(const double* x, double t) const {
    return passing([&] {
      py::gil_scoped_acquire gil;
      return terms_of(drift_(config_, blocks_of(x, layout_), t), model_, layout_, model_.where("drift()"), dropped_);
    });
  }
  const PyModel& model_;
  StateLayout layout_;
  int dropped_;
  py::object config_, drift_, observe_;
};

// One run of the model's System, on one of the harness's threads (seeds run in parallel): a failing
// call is the model's failure, which the harness carries out of its parallel loop to the caller.
class PySystem final : public FiniteSystem {
 public:
  PySystem(const PyModel& model, const py::object& config, const StateLayout& layout, double size, std::uint64_t replica)
      : model_(model), layout_(layout) {
    py::gil_scoped_acquire gil;
    passing([&] {
      self_ = model.instance.attr("System")(config, size_argument(size), replica);
      advance_ = self_.attr("advance_to"), state_ = self_.attr("state"), observe_ = self_.attr("observe");
      increment_ = self_.attr("increment"), time_of_ = self_.attr("time");
    });
  }
  ~PySystem() override {
    py::gil_scoped_acquire gil;
    self_ = advance_ = state_ = observe_ = increment_ = time_of_ = py::object();
  }
  double time() const override {
    py::gil_scoped_acquire gil;
    return passing([&] { return time_of_().cast<double>(); });
  }
  void advance_to(double t) override {
    py::gil_scoped_acquire gil;
    passing([&] { advance_(t); });
  }
  Eigen::VectorXd state() const override {
    py::gil_scoped_acquire gil;
    return passing([&] { return flat_of(state_(), layout_, model_.where("System.state()"), true); });
  }
  // The observables' names are those of the first observation (a run's table has fixed columns).
  Observables observe() override {
    py::gil_scoped_acquire gil;
    return passing([&] {
      Observables o = observables_of(observe_(), model_.where("System.observe()"));
      if (first_names_ && o.names() != *first_names_)
        throw py::value_error(model_.where("System.observe()") + ": the observables' names changed between calls");
      if (!first_names_) first_names_ = o.names();
      return o;
    });
  }
  DriftTerms increment() override {
    py::gil_scoped_acquire gil;
    return passing([&] { return terms_of(increment_(), model_, layout_, model_.where("System.increment()")); });
  }
  nlohmann::json record() const override {
    if (!model_.has_record) return nlohmann::json::object();
    py::gil_scoped_acquire gil;
    return passing([&] {
      nlohmann::json out = to_json(self_.attr("record")());
      if (!out.is_object()) throw py::type_error(model_.where("System.record()") + ": expected a dict");
      return out;
    });
  }

 private:
  const PyModel& model_;
  StateLayout layout_;
  py::object self_, advance_, state_, observe_, increment_, time_of_;
  std::optional<std::vector<std::string>> first_names_;
};

// A Python callable held by C++ copies (an EventFunction is copied into the integrator's options):
// they share it, and the last one releases it under the GIL.
struct HeldCallable {
  py::object f;
  ~HeldCallable() {
    py::gil_scoped_acquire gil;
    f = py::object();
  }
};

// The model's events() at its config: {name: g or (g, direction)}, g(blocks, t) -> float (GIL held).
std::vector<EventFunction> events_of(const PyModel& model, const py::object& config, const StateLayout& layout) {
  const std::string where = model.where("events()");
  const py::object declared = model.instance.attr("events")(config);
  if (!py::isinstance<py::dict>(declared))
    throw std::runtime_error(where + ": must return {name: g} or {name: (g, direction)}, g(blocks, t) -> float");
  std::vector<EventFunction> out;
  for (auto item : declared.cast<py::dict>()) {
    const std::string name = py::str(item.first);
    py::object g = py::reinterpret_borrow<py::object>(item.second);
    int direction = 0;
    if (py::isinstance<py::tuple>(g)) {
      const auto pair = g.cast<py::tuple>();
      if (pair.size() != 2) throw std::runtime_error(where + ": event '" + name + "': give g or (g, direction)");
      g = pair[0];
      direction = pair[1].cast<int>();
    }
    if (!PyCallable_Check(g.ptr())) throw std::runtime_error(where + ": event '" + name + "' is not a function g(blocks, t)");
    if (direction < -1 || direction > 1) throw std::runtime_error(where + ": event '" + name + "': direction must be +1, -1 or 0");
    auto held = std::make_shared<HeldCallable>();
    held->f = g;
    const PyModel* m = &model;
    auto value = [held, layout, m, name](double t, const Eigen::VectorXd& x) {
      return passing([&] {
        py::gil_scoped_acquire gil;
        const py::object v = held->f(blocks_of(x.data(), layout), t);
        try {
          return v.cast<double>();
        } catch (const py::cast_error&) {
          throw std::runtime_error(m->where("events()") + ": event '" + name + "' must return a number");
        }
      });
    };
    out.push_back({name, value, false, direction});
  }
  return out;
}

// The model at one command's parameters: its config built once by the model's configure().
class PyDynamics final : public Dynamics {
 public:
  PyDynamics(const PyModel& model, const Params& p) : model_(model) {
    py::gil_scoped_acquire gil;
    try {
      config_ = model.bind(model.instance, to_python(p.flat()));
      layout_ = layout_of(model.layout(model.instance, config_));
    } catch (py::error_already_set& e) {
      // The model's own InputError (configure) is hdat's: the same message, named key, exit code 2.
      if (e.matches(py::module_::import("hdat._errors").attr("InputError"))) {
        const std::string key = py::str(e.value().attr("key")), message = py::str(e.value());
        const std::string prefix = "parameter '" + key + "': ";
        throw InputError(key, message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message);
      }
      throw;
    }
    if (model.has_events) events_ = events_of(model, config_, layout_);
    if (!model.escape_event.empty() &&
        std::none_of(events_.begin(), events_.end(), [&](const EventFunction& e) { return e.name == model.escape_event; }))
      throw std::runtime_error(model.where("events()") + ": the escape_event '" + model.escape_event + "' is not among the events it returns");
    settings_ = standard_settings(p, model.defaults, layout_);
    const std::string broken = p.text("break_term");
    const auto it = std::find(model.terms.begin(), model.terms.end(), broken);
    dropped_ = it == model.terms.end() ? -1 : static_cast<int>(it - model.terms.begin());
  }
  ~PyDynamics() override {
    py::gil_scoped_acquire gil;
    config_ = py::object();
  }

  DynamicsSettings settings() const override { return settings_; }
  StateLayout layout() const override { return layout_; }
  std::unique_ptr<OdeTheory> theory(int /*replica*/) const override { return std::make_unique<PyTheory>(model_, config_, layout_, dropped_); }
  Eigen::VectorXd initial_state(const OdeTheory&) const override {
    return passing([&] {
      py::gil_scoped_acquire gil;
      return flat_of(model_.instance.attr("initial_state")(config_), layout_, model_.where("initial_state()"), true);
    });
  }
  std::optional<Eigen::VectorXd> replica_initial_state(std::uint64_t replica) const override {
    if (!model_.replica_start) return std::nullopt;
    return passing([&]() -> std::optional<Eigen::VectorXd> {
      py::gil_scoped_acquire gil;
      const py::object x = model_.instance.attr("replica_initial_state")(config_, replica);
      if (x.is_none()) return std::nullopt;
      return flat_of(x, layout_, model_.where("replica_initial_state()"), true);
    });
  }
  std::unique_ptr<FiniteSystem> system(double size, std::uint64_t replica) const override {
    return std::make_unique<PySystem>(model_, config_, layout_, size, replica);
  }
  std::vector<EventFunction> events() const override { return events_; }
  std::string describe() const override {
    return passing([&] {
      py::gil_scoped_acquire gil;
      return std::string(py::str(model_.instance.attr("describe")(config_)));
    });
  }

 private:
  static StateLayout layout_of(const py::handle& blocks) {
    StateLayout layout;
    for (auto item : blocks) {
      const auto b = item.cast<py::tuple>();
      const auto name = b[0].cast<std::string>();
      if (b[4].cast<bool>()) layout.add_vector(name, b[1].cast<int>());
      else layout.add(name, b[1].cast<int>(), b[2].cast<int>(), b[3].cast<bool>());
    }
    return layout;
  }
  const PyModel& model_;
  py::object config_;
  StateLayout layout_;
  DynamicsSettings settings_;
  std::vector<EventFunction> events_;
  int dropped_ = -1;
};

// ---------------------------------------------------------------------------------------------------
// Registration.

Range range_of(const py::dict& p) {
  Range r;
  if (!p["lo"].is_none()) r.lo = p["lo"].cast<double>();
  if (!p["hi"].is_none()) r.hi = p["hi"].cast<double>();
  r.lo_open = p["lo_open"].cast<bool>();
  r.hi_open = p["hi_open"].cast<bool>();
  return r;
}

void declare(ParamSet& set, const py::dict& p) {
  const auto key = p["key"].cast<std::string>(), kind = p["kind"].cast<std::string>(), doc = p["doc"].cast<std::string>();
  const nlohmann::json def = to_json(p["default"]);
  if (kind == "real") set.real(key, def, doc, range_of(p));
  else if (kind == "integer") set.integer(key, def, doc, range_of(p));
  else if (kind == "boolean") set.boolean(key, def, doc);
  else if (kind == "text") set.text(key, def, doc);
  else if (kind == "choice") set.choice(key, def.get<std::string>(), p["choices"].cast<std::vector<std::string>>(), doc);
  else if (kind == "real_list") set.real_list(key, def, doc, range_of(p));
  else if (kind == "int_list") set.int_list(key, def, doc, range_of(p));
  else if (kind == "real_matrix") set.real_matrix(key, def, doc, range_of(p));
  else throw std::logic_error("unknown parameter kind " + kind);
}

StandardDefaults standard_of(const py::dict& s) {
  StandardDefaults d;
  if (s.contains("t_max")) d.t_max = s["t_max"].cast<double>();
  if (s.contains("n_points")) d.n_points = s["n_points"].cast<int>();
  if (s.contains("seeds")) d.seeds = s["seeds"].cast<int>();
  if (s.contains("dims")) d.dims = s["dims"].cast<std::vector<long>>();
  if (s.contains("false_alarm")) d.false_alarm = s["false_alarm"].cast<double>();
  if (s.contains("detectable")) d.detectable = s["detectable"].cast<double>();
  if (s.contains("rel_tolerance")) d.rel_tolerance = s["rel_tolerance"].cast<double>();
  if (s.contains("drift_samples")) d.drift_samples = s["drift_samples"].cast<long>();
  if (s.contains("drift_times")) d.drift_times = s["drift_times"].cast<std::vector<double>>();
  if (s.contains("rtol")) d.rtol = s["rtol"].cast<double>();
  if (s.contains("atol")) d.atol = s["atol"].cast<double>();
  if (s.contains("size_key")) d.size_key = s["size_key"].cast<std::string>();
  if (s.contains("max_size")) d.max_size = s["max_size"].cast<double>();
  return d;
}

const char* kind_of(ParamKind k) {
  switch (k) {
    case ParamKind::real: return "real";
    case ParamKind::integer: return "integer";
    case ParamKind::boolean: return "boolean";
    case ParamKind::text: return "text";
    case ParamKind::choice: return "choice";
    case ParamKind::real_list: return "real_list";
    case ParamKind::int_list: return "int_list";
    case ParamKind::real_matrix: return "real_matrix";
    case ParamKind::any: return "any";
  }
  return "any";
}

// The ModelEntry of a Python model: its keys (its own, break_term over its terms, the standard keys
// with its defaults) and the dynamics commands on PyDynamics. Returns {key: kind} of every key.
py::dict register_model(const py::dict& spec, const py::object& instance, const py::object& bind, const py::object& layout) {
  const auto name = spec["name"].cast<std::string>();
  if (registry().find(name)) throw InputError("model", "a model named '" + name + "' exists already: give yours another name");
  auto* model = new PyModel;  // registered models are never removed (nor their Python objects released)
  model->name = name;
  model->instance = instance.inc_ref();
  model->bind = bind.inc_ref();
  model->layout = layout.inc_ref();
  model->terms = spec["terms"].cast<std::vector<std::string>>();
  model->defaults = standard_of(spec["standard"]);
  model->replica_start = spec["replica_start"].cast<bool>();
  model->has_record = spec["has_record"].cast<bool>();
  model->has_events = spec["has_events"].cast<bool>();
  model->escape_event = spec["escape_event"].cast<std::string>();

  ModelEntry e;
  e.name = name;
  e.summary = spec["summary"].cast<std::string>();
  e.description = spec["description"].cast<std::string>();
  for (auto p : spec["parameters"]) declare(e.params, p.cast<py::dict>());
  declare_break_term(e.params, model->terms);
  declare_standard_keys(e.params, model->defaults);
  e.params.theory_only(spec["theory_only_keys"].cast<std::vector<std::string>>());  // kept out of the seeds' hash

  auto dynamics = std::make_shared<DynamicsModel>();
  dynamics->bind = [model](const Params& p) -> std::unique_ptr<const Dynamics> { return std::make_unique<const PyDynamics>(*model, p); };
  dynamics->start_keys = spec["start_keys"].cast<std::vector<std::string>>();
  dynamics->escape_event = model->escape_event;
  add_dynamics_commands(e, dynamics);
  py::dict kinds;
  for (const ParamSpec& s : e.params.specs()) kinds[py::str(s.key)] = kind_of(s.kind);
  registry().add(std::move(e));
  return kinds;
}

}  // namespace own_model

using namespace own_model;

void bind_own_model(py::module_& m) {
  m.def("register_model", &register_model, py::arg("spec"), py::arg("instance"), py::arg("bind"), py::arg("layout"),
        "register a hdat.Model (python/hdat/_model.py) as a dynamics model of the process's registry");
}

}  // namespace hdat::python
