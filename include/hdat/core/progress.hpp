#pragma once
// Progress lines for long jobs (to stderr), and the interrupt flag that long loops poll so that
// Ctrl-C stops a run after saving what is finished.
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>

namespace hdat {

/// Wall-clock seconds since t0 (timings in summaries and tables).
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Set by SIGINT / SIGTERM once install_interrupt_handler() ran; long loops check it.
bool interrupted();
void install_interrupt_handler();
void request_interrupt();  // for tests, and front ends that catch the signal themselves (Python)
void clear_interrupt();    // after an interrupted call, so that the next one runs (Python)

class Progress {
 public:
  explicit Progress(std::string label, long total, bool enabled = true);
  ~Progress();
  void advance(long by = 1, const std::string& note = "");  // thread-safe
  void set_note(const std::string& note);
  void finish();
  long done() const { return done_; }

 private:
  void print(bool final);
  std::string label_;
  long total_;
  std::atomic<long> done_{0};
  bool enabled_, tty_, finished_ = false;
  std::string note_;
  std::mutex mutex_;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace hdat
