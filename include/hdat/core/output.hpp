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

/// Before any work: `dir` must name a folder that can be written: not "", not an existing file, and
/// writable (checked by creating a probe file there, and the folder if it is missing; both are
/// removed again). InputError(key) saying which otherwise.
void check_output_folder(const std::filesystem::path& dir, const std::string& key = "--out");

/// What a run writes into its output folder: a command of a model with a resolved configuration
/// (run.json's model, command and config).
struct OutputClaim {
  std::string model, command;
  nlohmann::json config;
};

/// One run per folder: when `dir` holds the outputs of another command or configuration (its
/// run.json), InputError(key) saying what is there and how to replace it, unless `replace`, which
/// first removes hdat's outputs there (clear_outputs). The same command with the same configuration
/// finds its finished work (resumes).
void claim_output_folder(const std::filesystem::path& dir, const OutputClaim& claim, bool replace, const std::string& key = "--out",
                         const std::string& replace_option = "--replace");

/// Remove what hdat wrote into `dir`: run.json and the files it lists under "outputs", the folders
/// seeds/ and points/, and the figures of `hdat plot` (*.png, *.svg, *.gp). Other files stay.
void clear_outputs(const std::filesystem::path& dir);

/// Program version, git revision, compiler, host, time and command line, for run.json.
nlohmann::json provenance();

/// v as a JSON number, or null when it is not finite (JSON has no NaN or infinity).
nlohmann::json number_or_null(double v);
/// Record the command line once at start-up (main does it).
void set_command_line(int argc, char** argv);
std::string now_iso8601();

}  // namespace hdat
