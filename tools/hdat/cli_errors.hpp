#pragma once
// Command-line syntax errors in hdat's words: what was meant and the right form (`--set eta 0.5` ->
// "write --set eta=0.5"), the nearest command or option for a misspelt one (hdat::did_you_mean), and
// the command's usage. Each throws hdat::InputError (exit code 2, one line).
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace hdat::cli {

/// The first argument must name a command of `app`: InputError otherwise (with the nearest command).
void check_command_word(const CLI::App& app, const std::vector<std::string>& args);

/// The arguments of the command `sub` that CLI11 could not place (sub.remaining()): InputError saying
/// what the first of them was probably meant as. `args` is the command line without the program name.
void check_unplaced(const CLI::App& sub, const std::vector<std::string>& args);

/// CLI11's own error (a missing required option, a value of the wrong type ...) with the usage of the
/// command it concerns.
[[noreturn]] void rethrow_parse_error(const CLI::App& app, const CLI::ParseError& e, const std::vector<std::string>& args);

/// One line: "hdat curve MODEL [--config TEXT] [--set key=value]... --out TEXT [--threads INT] [--quiet]".
std::string usage(const CLI::App& sub);

}  // namespace hdat::cli
