#pragma once
// Conversions between JSON (parameters, run.json records) and Python objects.
#include <pybind11/pybind11.h>

#include <nlohmann/json.hpp>


namespace hdat::python {

namespace py = pybind11;

/// JSON -> Python (dict, list, str, int, float, bool, None).
py::object to_python(const nlohmann::json& j);

/// Python -> JSON: None, bool, int, float, str, dict (str keys), list and tuple; NumPy arrays and
/// scalars through .tolist() / .item(). Any other object is taken as its str(), as the command line
/// takes a --set value that is not JSON.
nlohmann::json to_json(py::handle value);

}  // namespace hdat::python
