#pragma once
// Where the tests find the pretrained model: ../shared/models/stories260K/ from the project root
// (the tests run there; HDAT_SOURCE_DIR names the root when set).
#include <cstdlib>
#include <filesystem>

#include "hdat/llama/checkpoint.hpp"

inline std::filesystem::path stories260k_path() {
  const char* root = std::getenv("HDAT_SOURCE_DIR");
  const std::filesystem::path base = root ? std::filesystem::path(root) : std::filesystem::current_path();
  return base / hdat::llama::kDefaultModelFile;
}
