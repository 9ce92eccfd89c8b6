#pragma once
// Error types that the command line maps to exit codes (see tools/hdat/main.cpp):
//   InputError     -> exit 2, one message naming the offending key; nothing is written.
//   NumericalError -> exit 3, with the place where the numbers went wrong.
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

}  // namespace hdat
