#pragma once
// Shared pieces of the `hdat` command line: the options of a model command and running one. What a
// run computes and writes lives in the hdat_app library (include/hdat/app), shared with the Python module.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "hdat/core/registry.hpp"

namespace hdat::cli {

/// The options every model command takes.
struct ModelArgs {
  std::string model;
  std::string config_file;
  std::vector<std::string> sets;
  std::string out;
  int threads = 0;
  bool quiet = false;
  bool replace = false;
};

void add_model_options(CLI::App& sub, ModelArgs& args, bool out_required = true);

/// Resolve, run and write one model command; returns the process exit code.
int run_model_command(const std::string& command, const ModelArgs& args);

}  // namespace hdat::cli
