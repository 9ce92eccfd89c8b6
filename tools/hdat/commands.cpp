// Top-level commands other than the per-model ones.
#include "commands.hpp"

namespace hdat {

std::vector<ExtraCommand> extra_commands(CLI::App& app) {
  std::vector<ExtraCommand> out;
  out.push_back(sinks_command(app));
  out.push_back(geometry_command(app));
  out.push_back(sweep_command(app));
  out.push_back(plot_command(app));
  out.push_back(optimize_command(app));
  (void)app;
  return out;
}

}  // namespace hdat
