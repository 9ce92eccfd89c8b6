#pragma once
// hdat's command-line front end as a library call, for the `hdat` program and for a program of your
// own: register your models in hdat::registry() (and hdat::register_models() for hdat's), then
//
//   int main(int argc, char** argv) { hdat::registry().add(my_model()); return hdat::app::command_line(argc, argv); }
//
// gives them `list`, `curve`, `simulate`, `validate`, `analyze`, `sweep`, `plot` and `optimize`, with
// the same options, messages, output folders and exit codes as `hdat` (README, "Exit codes").
namespace hdat::app {

/// Parse the arguments, run the command over the process-wide registry, print what the program
/// prints; returns the exit code (hdat::ExitCode). Installs the interrupt handler (SIGINT: finished
/// work is kept, exit 130).
int command_line(int argc, char** argv);

}  // namespace hdat::app
