#pragma once
// hdat._core.register_model: a dynamics model declared in Python (hdat.Model, python/hdat/_model.py)
// registered as a ModelEntry, so that curve, simulate, validate, sweep and plot run it through the
// same C++ harness as a built-in model. The model's theory and finite system call back into Python.
#include <pybind11/pybind11.h>

#include <exception>

namespace hdat::python {

void bind_own_model(pybind11::module_& m);

/// The first exception a Python model's callback raised since the last call (and clears it). A
/// callback that fails where the harness cannot let an exception through (a seed's run on an OpenMP
/// thread, the integrator's right-hand side) keeps it here and raises hdat's interrupt flag, so that
/// the command stops soon; the front end then raises it instead of the command's result.
std::exception_ptr take_callback_failure();

}  // namespace hdat::python
