#pragma once
// hdat._core.register_model: a dynamics model declared in Python (hdat.Model, python/hdat/_model.py)
// registered as a ModelEntry, so that curve, simulate, validate, sweep and plot run it through the
// same C++ harness as a built-in model. The model's theory and finite system call back into Python.
#include <pybind11/pybind11.h>

namespace hdat::python {

void bind_own_model(pybind11::module_& m);

}  // namespace hdat::python
