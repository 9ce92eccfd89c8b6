#include "convert.hpp"

#include <pybind11/numpy.h>

namespace hdat::python {

using json = nlohmann::json;

py::object to_python(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return py::none();
    case json::value_t::boolean: return py::bool_(j.get<bool>());
    case json::value_t::number_integer: return py::int_(j.get<std::int64_t>());
    case json::value_t::number_unsigned: return py::int_(j.get<std::uint64_t>());
    case json::value_t::number_float: return py::float_(j.get<double>());
    case json::value_t::string: return py::str(j.get_ref<const std::string&>());
    case json::value_t::array: {
      py::list out;
      for (const auto& e : j) out.append(to_python(e));
      return out;
    }
    case json::value_t::object: {
      py::dict out;
      for (auto it = j.begin(); it != j.end(); ++it) out[py::str(it.key())] = to_python(it.value());
      return out;
    }
    default: return py::none();  // binary, discarded: never in hdat's records
  }
}

json to_json(py::handle v) {
  if (v.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>();
  if (py::isinstance<py::int_>(v)) {
    try {
      return v.cast<std::int64_t>();
    } catch (const py::cast_error&) {
      return py::str(v).cast<std::string>();  // beyond 64 bits: the key's check says what is allowed
    }
  }
  if (py::isinstance<py::float_>(v)) return v.cast<double>();
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::dict>(v)) {
    json out = json::object();
    for (auto item : v.cast<py::dict>()) out[py::str(item.first).cast<std::string>()] = to_json(item.second);
    return out;
  }
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    json out = json::array();
    for (auto e : v) out.push_back(to_json(e));
    return out;
  }
  if (py::isinstance<py::array>(v)) return to_json(v.attr("tolist")());
  if (py::hasattr(v, "item") && py::hasattr(v, "dtype")) return to_json(v.attr("item")());  // NumPy scalar
  return py::str(v).cast<std::string>();
}

}  // namespace hdat::python
