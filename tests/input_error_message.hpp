#pragma once
// The message of the hdat::InputError that f throws, or "" when it throws none: tests check that bad
// input is refused with a message naming the key.
#include <functional>
#include <string>

#include "hdat/core/error.hpp"

inline std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const hdat::InputError& e) {
    return e.what();
  }
  return "";
}
