// The command line of DESIGN.md as a library call (hdat/app/command_line.hpp):
//   hdat list [MODEL] | curve | simulate | validate | analyze | sweep | plot | optimize | geometry | sinks
// over whatever models the process registered. Exit codes: hdat::ExitCode (include/hdat/core/exit_code.hpp;
// README, "Exit codes").
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>

#include "cli_common.hpp"
#include "cli_errors.hpp"
#include "commands.hpp"
#include "hdat/app/command_line.hpp"
#include "hdat/app/listing.hpp"
#include "hdat/core/error.hpp"
#include "hdat/core/exit_code.hpp"
#include "hdat/core/output.hpp"
#include "hdat/core/progress.hpp"

using namespace hdat;

namespace {

int list_models(const std::string& name) {
  fmt::print("{}", name.empty() ? app::models_text() : app::parameters_text(registry().get(name)));
  return code(ExitCode::ok);
}

}  // namespace

namespace hdat::app {

int command_line(int argc, char** argv) {
  set_command_line(argc, argv);
  install_interrupt_handler();
  // Messages are the program's own: `hdat`, or a researcher's program built on this front end.
  const std::string program = argc > 0 && argv[0] && *argv[0] ? std::filesystem::path(argv[0]).filename().string() : "hdat";
  const std::string about = program == "hdat" ? "hdat: theory of how attention layers learn, checked against simulation"
                                              : program + ": models run by hdat's harness (theory, simulation, validation)";

  CLI::App app{about, program};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "help on every command");

  std::string list_name;
  auto* list = app.add_subcommand("list", "models, or one model's parameters with defaults and meaning");
  list->add_option("MODEL", list_name, "a model name");

  cli::ModelArgs margs;
  const std::vector<std::pair<std::string, std::string>> model_commands = {
      {"curve", "theory: learning curve of MODEL -> DIR/curve.csv, DIR/run.json"},
      {"simulate", "finite-dimensional simulation over seeds -> DIR/sim.csv, DIR/run.json"},
      {"validate", "theory against simulation; exit code 0 agree, 1 disagree, 5 undecided (too few seeds: it says what to raise)"},
      {"analyze", "analysis of the theory (e.g. linear stability) -> DIR/*.json"},
  };
  std::vector<CLI::App*> model_subs;
  for (const auto& [name, help] : model_commands) {
    auto* sub = app.add_subcommand(name, help);
    cli::add_model_options(*sub, margs);
    model_subs.push_back(sub);
  }
  std::vector<ExtraCommand> extras = extra_commands(app);

  // Arguments CLI11 cannot place are kept (allow_extras) and explained by check_unplaced: the right
  // form (`--set eta=0.5`), the nearest option, the command's usage.
  for (auto* sub : app.get_subcommands({})) sub->allow_extras();
  const std::vector<std::string> args(argv + 1, argv + argc);

  try {
    cli::check_command_word(app, args);
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
      return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
      return app.exit(e);
    } catch (const CLI::ParseError& e) {
      cli::rethrow_parse_error(app, e, args);
    }
    for (const auto* sub : app.get_subcommands()) cli::check_unplaced(*sub, args);
    if (list->parsed()) return list_models(list_name);
    for (auto* sub : model_subs)
      if (sub->parsed()) return cli::run_model_command(sub->get_name(), margs);
    for (auto& ex : extras)
      if (ex.app->parsed()) return ex.run();
  } catch (const InputError& e) {
    fmt::print(stderr, "{}: {}\n", program, e.what());
    return code(ExitCode::bad_input);
  } catch (const Interrupted& e) {
    fmt::print(stderr, "{}: {}\n", program, e.what());
    return code(ExitCode::interrupted);
  } catch (const NumericalError& e) {
    fmt::print(stderr, "{}: numerical failure: {}\n", program, e.what());
    return code(ExitCode::numerical_failure);
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: error: {}\n", program, e.what());
    return code(ExitCode::internal_error);
  } catch (...) {
    fmt::print(stderr, "{}: error: an exception that is not a std::exception\n", program);
    return code(ExitCode::internal_error);
  }
  return code(ExitCode::ok);
}

}  // namespace hdat::app
