// hdat: high-dimensional attention theory. Every model of hdat, through the command-line front end
// (hdat/app/command_line.hpp), which a program of your own calls the same way with its own models.
#include "hdat/app/command_line.hpp"
#include "hdat/core/registry.hpp"

int main(int argc, char** argv) {
  hdat::register_models();
  return hdat::app::command_line(argc, argv);
}
