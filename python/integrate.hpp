#pragma once
// hdat._core.integrate: a Python right-hand side integrated by hdat's engine (hdat::integrate), and
// the engine's Summary as a Python class.
#include <pybind11/pybind11.h>

namespace hdat::python {

void bind_integrate(pybind11::module_& m);

}  // namespace hdat::python
