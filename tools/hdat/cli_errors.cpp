#include "cli_errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "hdat/core/error.hpp"
#include "hdat/core/suggest.hpp"

namespace hdat::cli {

namespace {

// Options whose one value is key=value (their value is never a separate word).
bool takes_assignment(const std::string& option) { return option == "--set" || option == "--grid"; }

std::vector<std::string> command_names(const CLI::App& app) {
  std::vector<std::string> out;
  for (const auto* sub : app.get_subcommands({})) out.push_back(sub->get_name());
  return out;
}

std::vector<std::string> option_names(const CLI::App& sub) {
  std::vector<std::string> out;
  for (const auto* o : sub.get_options())
    for (const auto& l : o->get_lnames()) out.push_back("--" + l);
  return out;
}

const CLI::App* command_of(const CLI::App& app, const std::vector<std::string>& args) {
  if (args.empty()) return nullptr;
  for (const auto* sub : app.get_subcommands({}))
    if (sub->get_name() == args.front()) return sub;
  return nullptr;
}

}  // namespace

std::string usage(const CLI::App& sub) {
  std::string line = "hdat " + sub.get_name();
  for (const auto* o : sub.get_options()) {
    std::string word;
    if (o->get_positional()) {
      word = o->get_name();
    } else {
      if (o->get_lnames().empty() || o->get_lnames().front().rfind("help", 0) == 0) continue;  // --help, --help-all
      const std::string name = "--" + o->get_lnames().front();
      const bool flag = o->get_type_name().empty();
      word = flag ? name : name + " " + (takes_assignment(name) ? "key=value" : o->get_type_name());
    }
    if (o->get_expected_max() > 1) word += "...";
    line += " " + (o->get_required() ? word : "[" + word + "]");
  }
  return line;
}

void check_command_word(const CLI::App& app, const std::vector<std::string>& args) {
  if (args.empty() || command_of(app, args)) return;
  const std::string& first = args.front();
  if (first == "-h" || first == "--help" || first == "--help-all") return;
  const std::vector<std::string> commands = command_names(app);
  if (first.rfind("-", 0) == 0)
    throw InputError("", fmt::format("the command comes first (hdat COMMAND [options]), got the option '{}'; commands: {}", first,
                                     fmt::join(commands, ", ")));
  throw InputError("", fmt::format("unknown command '{}'{}", first, did_you_mean_among(first, commands, "commands")));
}

void check_unplaced(const CLI::App& sub, const std::vector<std::string>& args) {
  const std::vector<std::string> unplaced = sub.remaining();
  if (unplaced.empty()) return;
  const std::string& extra = unplaced.front();
  const std::string form = "usage: " + usage(sub);
  // Where the argument stands: its last occurrence (a value such as 0.5 may also appear earlier).
  const auto at = std::find(args.rbegin(), args.rend(), extra);
  const std::size_t i = at == args.rend() ? 0 : static_cast<std::size_t>(args.rend() - at) - 1;
  if (extra.rfind("-", 0) == 0 && extra.size() > 1 && !std::isdigit(static_cast<unsigned char>(extra[1])) && extra[1] != '.') {
    const std::string name = extra.substr(0, extra.find('='));
    throw InputError(name, fmt::format("not an option of hdat {}{}", sub.get_name(), did_you_mean_among(name, option_names(sub), "options")));
  }
  if (i >= 2 && takes_assignment(args[i - 2])) {
    // `--set eta 0.5` or `--set eta= 0.5`: the value after a space.
    std::string key = args[i - 1];
    if (!key.empty() && key.back() == '=') key.pop_back();
    if (key.find('=') == std::string::npos) {
      const std::string value = extra.rfind("=", 0) == 0 ? extra.substr(1) : extra;
      throw InputError(args[i - 2], fmt::format("takes key=value as one word, without spaces: write {} {}={} (got '{} {}')", args[i - 2], key,
                                                value, args[i - 1], extra));
    }
  }
  if (extra.find('=') != std::string::npos && extra.front() != '=')
    throw InputError("", fmt::format("unexpected argument '{}': a parameter is given as --set {} ({})", extra, extra, form));
  throw InputError("", fmt::format("unexpected argument '{}' ({})", extra, form));
}

void rethrow_parse_error(const CLI::App& app, const CLI::ParseError& e, const std::vector<std::string>& args) {
  const CLI::App* sub = command_of(app, args);
  if (sub) throw InputError("", fmt::format("{} (usage: {})", e.what(), usage(*sub)));
  throw InputError("", fmt::format("{} (hdat COMMAND ...; commands: {})", e.what(), fmt::join(command_names(app), ", ")));
}

}  // namespace hdat::cli
