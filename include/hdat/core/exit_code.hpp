#pragma once
// The exit codes of the hdat program, one named value each (README, "Exit codes"). A command's
// RunOutput::exit_code and the program's return value take these values.
namespace hdat {

enum class ExitCode : int {
  ok = 0,                 ///< success; validate: theory and simulation agree
  disagree = 1,           ///< validate: they disagree; claims: a claim fails; sweep --merge: points not finished yet
  bad_input = 2,          ///< a parameter, file or command line is wrong: one message naming it, nothing written
  numerical_failure = 3,  ///< the numbers went wrong (non-finite, no convergence): what was computed before is kept
  internal_error = 4,     ///< anything else (an output that cannot be written, a bug): the message says what
  undecided = 5,          ///< validate: the data cannot decide (too few seeds): the message says what to raise
  interrupted = 130,      ///< SIGINT / SIGTERM: finished work is kept; the same command resumes (128 + SIGINT)
};

/// The value the process returns.
constexpr int code(ExitCode c) { return static_cast<int>(c); }

}  // namespace hdat
