#include "hdat/core/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>

namespace hdat {
namespace {
volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_signal(int) { g_interrupted = 1; }
}  // namespace

bool interrupted() { return g_interrupted != 0; }
void request_interrupt() { g_interrupted = 1; }
void clear_interrupt() { g_interrupted = 0; }
void install_interrupt_handler() {
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
}

Progress::Progress(std::string label, long total, bool enabled)
    : label_(std::move(label)), total_(total), enabled_(enabled), tty_(isatty(fileno(stderr)) != 0),
      start_(std::chrono::steady_clock::now()), last_(start_) {}

Progress::~Progress() { finish(); }

void Progress::advance(long by, const std::string& note) {
  done_ += by;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!note.empty()) note_ = note;
  const auto now = std::chrono::steady_clock::now();
  // A tty gets a live line; logs get a line every 10 s so that CI output stays short.
  const double every = tty_ ? 0.2 : 10.0;
  if (std::chrono::duration<double>(now - last_).count() >= every) {
    last_ = now;
    print(false);
  }
}

void Progress::set_note(const std::string& note) {
  std::lock_guard<std::mutex> lock(mutex_);
  note_ = note;
}

void Progress::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (finished_) return;
  finished_ = true;
  const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (enabled_ && (tty_ || el > 10.0)) print(true);
}

void Progress::print(bool final) {
  if (!enabled_) return;
  const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const long d = done_;
  std::string eta;
  if (d > 0 && d < total_) eta = fmt::format(", ~{:.0f} s left", el * static_cast<double>(total_ - d) / static_cast<double>(d));
  const std::string line = fmt::format("{}: {}/{} ({:.0f}%), {:.1f} s{}{}", label_, d, total_,
                                       total_ > 0 ? 100.0 * static_cast<double>(d) / static_cast<double>(total_) : 100.0, el, eta,
                                       note_.empty() ? "" : "  " + note_);
  if (tty_) fmt::print(stderr, "\r\033[K{}{}", line, final ? "\n" : "");
  else fmt::print(stderr, "{}\n", line);
  std::fflush(stderr);
}

}  // namespace hdat
