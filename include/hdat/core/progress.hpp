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

/// The rate of a job's progress, smoothed over the last seconds (exponentially, time constant 3 s),
/// so that the remaining time follows a change of pace (a run leaving its plateau, a later and
/// costlier stage) instead of averaging over the whole past.
class SmoothedRate {
 public:
  /// The work done `seconds` after the start.
  void add(double seconds, double done);
  double rate() const { return rate_; }  ///< work per second; 0 before the first interval
  /// Seconds left for the work up to `total` at the smoothed rate; NaN while no rate is known.
  double remaining(double total) const;

 private:
  double rate_ = 0, seconds_ = 0, done_ = 0;
};

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

  /// The line as printed after `elapsed` seconds.
  std::string line(double elapsed) const;

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
  SmoothedRate rate_;
};

}  // namespace hdat
