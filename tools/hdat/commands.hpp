#pragma once
// Registration points of the `hdat` program. Adding a model: write its register function and call
// it from register_models() (models.cpp). Adding a top-level command (geometry, sweep, plot ...):
// return it from extra_commands() (commands.cpp).
#include <CLI/CLI.hpp>
#include <functional>
#include <vector>

namespace hdat {

class Registry;
void register_models();
void register_polarization(class Registry& r);  // validation/polarization/register.cpp
void register_sinks(Registry& r);
void register_specialization(Registry& r);
void register_geometry(Registry& r);  // validation/geometry/register.cpp
void register_tied_attention(Registry& r);  // validation/tied_attention/register.cpp

struct ExtraCommand {
  CLI::App* app;
  std::function<int()> run;  // called when app was parsed; returns the exit code
};

std::vector<ExtraCommand> extra_commands(CLI::App& app);
ExtraCommand sinks_command(CLI::App& app);  // cmd_sinks.cpp
ExtraCommand geometry_command(CLI::App& app);  // cmd_geometry.cpp
ExtraCommand sweep_command(CLI::App& app);  // cmd_sweep.cpp
ExtraCommand plot_command(CLI::App& app);  // cmd_plot.cpp

}  // namespace hdat
