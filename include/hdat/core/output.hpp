#pragma once
// Output folders and provenance. Files are written atomically (temporary file, then rename), so an
// interrupted or failed run never leaves a half-written CSV behind.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "hdat/core/table.hpp"

namespace hdat {

/// Write `content` to `path` atomically (creating parent folders).
void write_file_atomic(const std::filesystem::path& path, const std::string& content);
std::string read_file(const std::filesystem::path& path);

/// Program version, git revision, compiler, host, time and command line, for run.json.
nlohmann::json provenance();

/// v as a JSON number, or null when it is not finite (JSON has no NaN or infinity).
nlohmann::json number_or_null(double v);
/// Record the command line once at start-up (main does it).
void set_command_line(int argc, char** argv);
std::string now_iso8601();

}  // namespace hdat
