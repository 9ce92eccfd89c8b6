// The model that travels with hdat (data/models/stories260K/): where it is, and the check that it is
// the verified copy (sha256 sums as published with the model; data/models/stories260K/README.md).
#include <fmt/format.h>

#include <cstdlib>
#include <system_error>

#include "hdat/core/error.hpp"
#include "hdat/llama/checkpoint.hpp"
#include "hdat/llama/sha256.hpp"

namespace hdat::llama {

namespace {

struct BundledFile {
  const char* name;
  const char* sha256;
};
// stories260K.bin and tok512.bin: the sums public projects pin for karpathy/tinyllamas (stories260K);
// vocab.txt: the tokenizer's pieces, one per line.
constexpr BundledFile kBundledFiles[] = {
    {"stories260K.bin", "b0a507e7ad0f626624f17112325e66691f9076d622e1d3274d103d00299f2696"},
    {"tok512.bin", "037cb335abb25d1fa9e8ecae30ed2a3a8ace9302862ebcdc05d51a6bbb10c312"},
    {"vocab.txt", "7dc092217d244624cad98fd2f3dc28fec6e4d2ec97c17e3b926489146b28d2c2"},
};
constexpr const char* kModelFolder = "models/stories260K";
constexpr const char* kCheckpoint = "stories260K.bin";

}  // namespace

std::vector<std::filesystem::path> data_folders() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("HDAT_DATA_DIR"); env && *env) return {fs::path(env)};
  std::vector<fs::path> folders;
  std::error_code ec;
  const fs::path program = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) folders.push_back(program.parent_path().parent_path() / "share" / "hdat");
  folders.emplace_back(HDAT_SOURCE_DATA_DIR);
  folders.emplace_back(HDAT_INSTALL_DATA_DIR);
  return folders;
}

void verify_bundled_model(const std::filesystem::path& model_folder, const std::string& key) {
  for (const auto& f : kBundledFiles) {
    const auto file = model_folder / f.name;
    if (!std::filesystem::is_regular_file(file))
      throw InputError(key, fmt::format("the bundled model is incomplete: '{}' is missing (restore data/{}/ or give --model-file)",
                                        file.string(), kModelFolder));
    const std::string sum = file_sha256_hex(file, key);
    if (sum != f.sha256)
      throw InputError(key, fmt::format("'{}' is not the verified copy of the bundled model: sha256 {}, expected {} (restore data/{}/ "
                                        "or give --model-file)", file.string(), sum, f.sha256, kModelFolder));
  }
}

std::filesystem::path default_model_file(const std::string& key) {
  std::string looked;
  for (const auto& folder : data_folders()) {
    const auto model_folder = folder / kModelFolder;
    if (std::filesystem::is_regular_file(model_folder / kCheckpoint)) {
      verify_bundled_model(model_folder, key);
      return model_folder / kCheckpoint;
    }
    looked += (looked.empty() ? "" : ", ") + model_folder.string();
  }
  throw InputError(key, fmt::format("the bundled model {} was not found (looked in {}; HDAT_DATA_DIR names hdat's data folder); "
                                    "give a llama2.c checkpoint with --model-file", kCheckpoint, looked));
}

}  // namespace hdat::llama
