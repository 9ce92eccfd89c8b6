#pragma once
// Running C++ work from Python: the work runs on a worker thread while the calling thread waits
// without the GIL (other Python threads keep running) and looks at Python's signals every 50 ms.
// Ctrl-C there (KeyboardInterrupt) raises hdat's interrupt flag; the long loops poll it, save what is
// finished and return, and the caller learns that the user interrupted the work.
#include <pybind11/pybind11.h>

#include <functional>

namespace hdat::python {

namespace py = pybind11;

struct GuardOptions {
  /// Copy what C++ writes on file descriptor 2 (progress lines, warnings) to sys.stderr while the work
  /// runs: a notebook shows sys.stderr, not the kernel's descriptor 2.
  bool forward_stderr = false;
};

/// Run `work` (on a worker thread; it may take the GIL itself to call Python). Returns true when the
/// user interrupted it; the work has returned by then (shortened by the interrupt flag). An exception
/// thrown by the work is rethrown here (with the GIL held), unless the user interrupted it.
bool run_guarded(const std::function<void()>& work, const GuardOptions& options = {});

}  // namespace hdat::python
