// The binary's entry: registers the subcommands (cli/commands.h), parses the command line,
// suggests the closest command or flag on a typo and runs the chosen command's action; exit
// codes 0, 1 (data or environment), 2 (command line), 70 (internal error).
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/flags.h"

namespace powertrain::cli {
namespace {

std::vector<std::string> long_names_of(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_group().empty()) continue;  // hidden old spellings are not suggested
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
  }
  return names;
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{"powertrain: time and energy of large-model training, planned and optimized"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "powertrain 0.1.0");
  app.footer(
      "Exit codes: 0 success, 1 bad input data or environment, 2 bad command line.\n"
      "Run 'powertrain COMMAND --help' for a command's flags.");
  std::vector<std::pair<CLI::App*, Action>> actions;
  std::vector<std::string> names;
  for (const Subcommand& sub : subcommands()) {
    CLI::App* command = app.add_subcommand(sub.name, sub.description);
    actions.emplace_back(command, sub.add(*command));
    names.emplace_back(sub.name);
  }

  // The subcommand is the first argument that is not a flag of the top level.
  std::string command_name;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind('-', 0) == 0) continue;
    command_name = arg;
    break;
  }
  if (!command_name.empty() && std::find(names.begin(), names.end(), command_name) == names.end()) {
    const std::string suggestion = closest_match(command_name, names);
    fmt::print(stderr, "powertrain: error: unknown command '{}'{}; commands: {}\n", command_name,
               suggestion.empty() ? "" : fmt::format(" (did you mean '{}'?)", suggestion),
               fmt::format("{}", fmt::join(names, ", ")));
    return kExitUsageError;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    const std::string prefix =
        command_name.empty() ? "powertrain" : fmt::format("powertrain {}", command_name);
    std::string message = e.what();
    if (message.empty()) message = e.get_name();
    if (message.rfind(": ", 0) == 0) message = message.substr(2);  // hidden alias, named inside
    std::string hint;
    if (CLI::App* sub = command_name.empty() ? nullptr : app.get_subcommand(command_name)) {
      const std::vector<std::string> flags = long_names_of(*sub);
      std::vector<std::string> every_flag;
      for (const CLI::Option* option : sub->get_options()) {
        for (const std::string& name : option->get_lnames()) every_flag.push_back("--" + name);
      }
      for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg.rfind("--", 0) != 0 || arg == "--") continue;
        arg = arg.substr(0, arg.find('='));
        if (std::find(every_flag.begin(), every_flag.end(), arg) != every_flag.end() ||
            arg == "--help")
          continue;
        const std::string suggestion = closest_match(arg, flags);
        hint += suggestion.empty()
                    ? fmt::format("; unknown flag {}", arg)
                    : fmt::format("; unknown flag {} (did you mean {}?)", arg, suggestion);
      }
      if (hint.empty()) hint = fmt::format("; see 'powertrain {} --help'", command_name);
    } else if (command_name.empty()) {
      hint = fmt::format("; commands: {}", fmt::join(names, ", "));
    }
    fmt::print(stderr, "{}: error: {}{}\n", prefix, message, hint);
    return kExitUsageError;
  }
  try {
    for (auto& [command, action] : actions) {
      if (command->parsed()) return action();
    }
  } catch (const std::exception& e) {
    // Library code reports bad input through results; reaching here is a bug or resource
    // exhaustion.
    fmt::print(stderr, "powertrain {}: internal error: {}\n", command_name, e.what());
    return kExitInternalError;
  }
  return kExitUsageError;
}

}  // namespace powertrain::cli
