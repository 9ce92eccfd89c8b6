#pragma once
// Helpers shared by the fuzz targets: a scratch file (the parsers under test read files, as the
// program does) and splitting an input into lines.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "hdat/core/params.hpp"

namespace hdat_fuzz {

class ScratchFile {
 public:
  explicit ScratchFile(const std::string& name)
      : path_((std::filesystem::temp_directory_path() / ("hdat_fuzz_" + std::to_string(::getpid()) + "_" + name)).string()) {}
  ~ScratchFile() { std::filesystem::remove(path_); }
  void write(std::string_view bytes) const {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::vector<std::string> lines(std::string_view text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    const std::size_t stop = end == std::string_view::npos ? text.size() : end;
    if (stop > start) out.emplace_back(text.substr(start, stop - start));
    start = stop + 1;
  }
  return out;
}

/// Every declared key read through its typed accessor (InputError is the only allowed failure).
inline void read_every_key(const hdat::Params& p) {
  for (const auto& spec : p.set().specs()) {
    if (!p.has(spec.key)) continue;
    switch (spec.kind) {
      case hdat::ParamKind::real: (void)p.real(spec.key); break;
      case hdat::ParamKind::integer: (void)p.integer(spec.key); break;
      case hdat::ParamKind::boolean: (void)p.boolean(spec.key); break;
      case hdat::ParamKind::text:
      case hdat::ParamKind::choice: (void)p.text(spec.key); break;
      case hdat::ParamKind::real_list: (void)p.vector(spec.key); break;
      case hdat::ParamKind::int_list: (void)p.int_vector(spec.key); break;
      case hdat::ParamKind::real_matrix: (void)p.matrix(spec.key); break;
      case hdat::ParamKind::any: (void)p.raw(spec.key); break;
    }
  }
}

}  // namespace hdat_fuzz
