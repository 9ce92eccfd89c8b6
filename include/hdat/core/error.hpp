#pragma once
// Error types that the command line maps to exit codes (see tools/hdat/main.cpp):
//   InputError     -> exit 2, one message naming the offending key; nothing is written.
//   NumericalError -> exit 3, with the place where the numbers went wrong.
//   Interrupted    -> exit 130: the user stopped the command (Ctrl-C) before it had a result; the
//                     message says what finished work was kept and how to resume it.
//   ModelFailure   -> the model's own code failed (a Python model's exception): the command stops and
//                     the failure reaches the caller as itself, never as a result.
#include <exception>
#include <stdexcept>
#include <string>

namespace hdat {

class InputError : public std::runtime_error {
 public:
  InputError(std::string key, const std::string& message)
      : std::runtime_error(key.empty() ? message : "parameter '" + key + "': " + message), key_(std::move(key)) {}
  const std::string& key() const { return key_; }

 private:
  std::string key_;
};

class NumericalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The user interrupted the command before it had a result (what it finished is kept where the
/// message says).
class Interrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The model's own code failed: not an outcome of the parameters (as a non-finite state or a failed
/// integration is) but an error in the model, such as an exception raised by a Python model's
/// callback. The integrator does not turn it into a stopped run and a sweep does not record it as a
/// failed point: it stops the command, whatever thread it was raised on, and reaches the caller, who
/// gets `cause()` (the original exception) back. It stops only the command it was raised in.
class ModelFailure : public std::runtime_error {
 public:
  ModelFailure(const std::string& what, std::exception_ptr cause) : std::runtime_error(what), cause_(std::move(cause)) {}
  const std::exception_ptr& cause() const { return cause_; }

 private:
  std::exception_ptr cause_;
};

}  // namespace hdat
