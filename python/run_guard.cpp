#include "run_guard.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "hdat/core/error.hpp"
#include "hdat/core/progress.hpp"

namespace hdat::python {

namespace {

// Guarded runs in progress (several Python threads may each run one). The interrupt flag is the
// process's: it is lowered only when no other run could be stopping because of it, and descriptor 2
// is redirected by one run at a time.
std::atomic<int> g_active_runs{0};
std::atomic<bool> g_forwarding{false};

// Descriptor 2 redirected into a pipe that the waiting thread empties into sys.stderr, whole lines
// at a time (a progress line on a pipe ends with a newline).
class StderrForward {
 public:
  explicit StderrForward(bool on) {
    if (!on || g_forwarding.exchange(true)) return;  // another run forwards already (its copy takes ours too)
    owner_ = true;
    std::fflush(stderr);
    int fds[2];
    if (pipe(fds) != 0) return;
    saved_ = dup(2);
    if (saved_ < 0 || dup2(fds[1], 2) < 0) {
      close(fds[0]), close(fds[1]);
      if (saved_ >= 0) close(saved_);
      return;
    }
    close(fds[1]);
    read_end_ = fds[0];
    fcntl(read_end_, F_SETFL, fcntl(read_end_, F_GETFL) | O_NONBLOCK);
  }
  StderrForward(const StderrForward&) = delete;
  StderrForward& operator=(const StderrForward&) = delete;
  ~StderrForward() {
    restore();
    if (read_end_ >= 0) close(read_end_);
    if (owner_) g_forwarding = false;
  }

  /// Forward the complete lines written so far (GIL held).
  void pump(bool everything = false) {
    if (read_end_ < 0) return;
    char buf[4096];
    ssize_t n;
    while ((n = read(read_end_, buf, sizeof buf)) > 0) pending_.append(buf, static_cast<std::size_t>(n));
    const std::size_t cut = everything ? pending_.size() : pending_.find_last_of("\r\n") + 1;  // npos + 1 == 0
    if (cut == 0) return;
    const std::string text = pending_.substr(0, cut);
    pending_.erase(0, cut);
    try {
      py::object err = py::module_::import("sys").attr("stderr");
      if (err.is_none()) return;
      err.attr("write")(py::bytes(text).attr("decode")("utf-8", "replace"));
      err.attr("flush")();
    } catch (const py::error_already_set&) {
      // A broken sys.stderr must not stop the computation; the text is dropped.
    }
  }

  /// Put descriptor 2 back and forward the rest (GIL held).
  void finish() {
    if (read_end_ < 0) return;
    restore();
    pump(true);
    close(read_end_);
    read_end_ = -1;
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    dup2(saved_, 2);
    close(saved_);
    saved_ = -1;
  }
  bool owner_ = false;  // this run redirected descriptor 2 (and releases g_forwarding)
  int saved_ = -1, read_end_ = -1;
  std::string pending_;
};

// A Python model's failure (hdat::ModelFailure, from whichever thread raised it): the model's own
// exception, as Python raised it; any other error as it is.
std::exception_ptr cause_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const ModelFailure& failure) {
    return failure.cause();
  } catch (...) {
    return error;
  }
}

}  // namespace

bool run_guarded(const std::function<void()>& work, const GuardOptions& options) {
  if (g_active_runs++ == 0) clear_interrupt();
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  std::exception_ptr error;
  StderrForward forward(options.forward_stderr);

  std::thread worker([&] {
    try {
      work();
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mutex);
    done = true;
    finished.notify_all();
  });

  // From here to the join nothing may throw: a std::thread destroyed while joinable ends the process.
  bool user_interrupt = false;
  std::exception_ptr signal_error;  // raised by a signal handler other than Ctrl-C's default
  for (;;) {
    bool over = false;
    {
      py::gil_scoped_release release;
      std::unique_lock<std::mutex> lock(mutex);
      over = finished.wait_for(lock, std::chrono::milliseconds(50), [&] { return done; });
    }
    forward.pump();
    if (over) break;
    if (!user_interrupt && !signal_error && PyErr_CheckSignals() != 0) {
      if (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) {
        PyErr_Clear();
        user_interrupt = true;
      } else {
        try {
          throw py::error_already_set();
        } catch (...) {
          signal_error = std::current_exception();
        }
      }
      request_interrupt();  // the work stops at its next check, keeping what it finished
    }
  }
  {
    py::gil_scoped_release release;
    worker.join();
  }
  forward.finish();
  if (--g_active_runs == 0) clear_interrupt();
  if (signal_error) std::rethrow_exception(signal_error);
  if (error && !user_interrupt) std::rethrow_exception(cause_of(error));
  return user_interrupt;
}

}  // namespace hdat::python
