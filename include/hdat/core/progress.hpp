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

/// A live progress line on a terminal: work done of the total, elapsed time, rate and remaining
/// time. The work is counted in units whose cost is about even (items, or time reached weighted by
/// the steps it takes), so that the remaining time, the work left over a rate smoothed over the last
/// seconds, is honest. Silent for jobs shorter than about two seconds, when stderr is not a
/// terminal, and when disabled (--quiet).
class Progress {
 public:
  /// `unit`: what the work is counted in, for the line ("t": time reached); empty: items.
  Progress(std::string label, double total, bool enabled = true, std::string unit = "");
  ~Progress();
  void advance(double by = 1, const std::string& note = "");  // thread-safe
  void reach(double done, const std::string& note = "");      // the work done so far (thread-safe)
  void set_note(const std::string& note);
  void finish();
  double done() const { return done_; }

  /// The line as printed after `elapsed` seconds (for tests), with the current smoothed rate.
  std::string line(double elapsed) const;
  /// The smoothing of the rate: the weight of a rate measured over dt seconds (time constant 3 s).
  static double rate_weight(double dt);

 private:
  void update(const std::string& note);
  void print(bool final);
  std::string label_, unit_;
  double total_;
  std::atomic<double> done_{0};
  bool enabled_, tty_, finished_ = false, printed_ = false;
  std::string note_;
  std::mutex mutex_;
  std::chrono::steady_clock::time_point start_, last_;
  double rate_ = 0, done_at_last_ = 0;  // smoothed rate (units per second), work at the last update
};

}  // namespace hdat
