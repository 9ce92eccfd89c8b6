#pragma once
// hdat._core.optimize (optimize.cpp).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

namespace hdat::python {
void bind_optimize(pybind11::module_& m);
}
