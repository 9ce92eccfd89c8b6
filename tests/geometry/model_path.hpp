#pragma once
// Where the tests find the pretrained model: the bundled stories260K (data/models/stories260K/), found
// and sha256-checked the way `hdat geometry` finds its default model.
#include <filesystem>

#include "hdat/llama/checkpoint.hpp"

inline std::filesystem::path stories260k_path() { return hdat::llama::default_model_file(); }
