#pragma once
// Shared pieces of the sweep tests: the model registry with the specialization model, tiny settings,
// scratch folders.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>

#include "hdat/core/registry.hpp"

namespace hdat {
void register_specialization(Registry& r);  // validation/specialization/register.cpp
}

inline void register_models_for_tests() {
  static const bool done = [] {
    hdat::register_specialization(hdat::registry());
    return true;
  }();
  (void)done;
}

/// The scratch root of this test process, removed at exit (kept when HDAT_KEEP_TEST_FILES is set).
inline std::filesystem::path scratch_root() {
  struct Root {
    std::filesystem::path path = std::filesystem::temp_directory_path() / ("hdat-test-sweep-" + std::to_string(::getpid()));
    ~Root() {
      std::error_code ec;
      if (!std::getenv("HDAT_KEEP_TEST_FILES")) std::filesystem::remove_all(path, ec);
    }
  };
  static const Root root;
  return root.path;
}

/// A fresh scratch folder for one test (removed first if it exists).
inline std::filesystem::path scratch(const std::string& name) {
  const auto p = scratch_root() / name;
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p.parent_path());
  return p;
}
