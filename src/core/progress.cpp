#include "hdat/core/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdio>

namespace hdat {
namespace {
volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_signal(int) { g_interrupted = 1; }

constexpr double kSilentSeconds = 2.0;  // shorter jobs print nothing
constexpr double kEverySeconds = 0.25;  // refresh of the live line
constexpr double kRateSeconds = 3.0;    // time constant of the smoothed rate

std::string duration_text(double s) {
  if (s < 90) return fmt::format("{:.0f} s", s);
  if (s < 5400) return fmt::format("{:.0f} min", s / 60);
  return fmt::format("{:.1f} h", s / 3600);
}

std::string amount_text(double v) { return std::fabs(v - std::round(v)) < 1e-9 ? fmt::format("{:.0f}", v) : fmt::format("{:.4g}", v); }
}  // namespace

bool interrupted() { return g_interrupted != 0; }
void request_interrupt() { g_interrupted = 1; }
void clear_interrupt() { g_interrupted = 0; }
void install_interrupt_handler() {
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
}

Progress::Progress(std::string label, double total, bool enabled, std::string unit)
    : label_(std::move(label)), unit_(std::move(unit)), total_(total), enabled_(enabled), tty_(isatty(fileno(stderr)) != 0),
      start_(std::chrono::steady_clock::now()), last_(start_) {}

Progress::~Progress() { finish(); }

void SmoothedRate::add(double seconds, double done) {
  const double dt = seconds - seconds_;
  if (!(dt > 0)) return;
  const double recent = (done - done_) / dt;
  // The first interval's rate as it is; later ones blended in with the weight of their duration.
  rate_ = seconds_ == 0 ? recent : rate_ + (1.0 - std::exp(-dt / kRateSeconds)) * (recent - rate_);
  seconds_ = seconds, done_ = done;
}

double SmoothedRate::remaining(double total) const { return rate_ > 0 ? std::max(0.0, total - done_) / rate_ : NAN; }

void Progress::advance(double by, const std::string& note) {
  done_.fetch_add(by);
  update(note);
}

void Progress::reach(double done, const std::string& note) {
  done_ = done;
  update(note);
}

void Progress::update(const std::string& note) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!note.empty()) note_ = note;
  const auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - last_).count() < kEverySeconds) return;
  rate_.add(std::chrono::duration<double>(now - start_).count(), done_);
  last_ = now;
  print(false);
}

void Progress::set_note(const std::string& note) {
  std::lock_guard<std::mutex> lock(mutex_);
  note_ = note;
}

void Progress::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (finished_) return;
  finished_ = true;
  if (printed_) print(true);  // a job that showed a live line ends it
}

std::string Progress::line(double elapsed) const {
  const double d = done_;
  const double fraction = total_ > 0 ? std::min(1.0, d / total_) : 1.0;
  std::string text = fmt::format("{}: {:.0f}%", label_, 100.0 * fraction);
  if (!unit_.empty()) text += fmt::format(" ({} = {} of {})", unit_, amount_text(d), amount_text(total_));
  else text += fmt::format(" ({} of {})", amount_text(d), amount_text(total_));
  text += fmt::format(", {}", duration_text(elapsed));
  const double left = rate_.remaining(total_);
  if (std::isfinite(left) && d < total_) text += fmt::format(", {:.3g} {}/s, ~{} left", rate_.rate(), unit_.empty() ? "items" : unit_, duration_text(left));
  if (!note_.empty()) text += "  " + note_;
  return text;
}

void Progress::print(bool final) {
  if (!enabled_ || !tty_) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (!final && elapsed < kSilentSeconds) return;
  printed_ = true;
  fmt::print(stderr, "\r\033[K{}{}", line(elapsed), final ? "\n" : "");
  std::fflush(stderr);
}

}  // namespace hdat
