#pragma once
// Registration points of the `hdat` program. Models register themselves from their own folders
// (hdat_register_model in their CMakeLists.txt; register_models() is generated). Adding a top-level
// command (geometry, sweep, plot ...): return it from extra_commands() (commands.cpp).
#include <CLI/CLI.hpp>
#include <functional>
#include <vector>

namespace hdat {


struct ExtraCommand {
  CLI::App* app;
  std::function<int()> run;  // called when app was parsed; returns the exit code
};

std::vector<ExtraCommand> extra_commands(CLI::App& app);
ExtraCommand sinks_command(CLI::App& app);  // cmd_sinks.cpp
ExtraCommand geometry_command(CLI::App& app);  // cmd_geometry.cpp
ExtraCommand sweep_command(CLI::App& app);  // cmd_sweep.cpp
ExtraCommand plot_command(CLI::App& app);  // cmd_plot.cpp
ExtraCommand optimize_command(CLI::App& app);  // cmd_optimize.cpp

}  // namespace hdat
