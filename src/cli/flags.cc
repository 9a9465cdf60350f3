#include "cli/flags.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <utility>

#include "cli/commands.h"
#include "core/input_limits.h"

namespace powertrain::cli {

std::string trimmed(const std::string& text) {
  const auto begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t") - begin + 1);
}

namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::vector<std::string> long_names_of(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_group().empty()) continue;  // hidden old spellings are not suggested
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
  }
  return names;
}

}  // namespace

int usage_error(const std::string& command, const std::string& message) {
  fmt::print(stderr, "powertrain {}: error: {}\n", command, message);
  return kExitUsageError;
}

std::function<void(const std::string&)> stderr_progress(const std::string& command, bool quiet) {
  if (quiet) return {};
  return [command](const std::string& line) { fmt::print(stderr, "{}: {}\n", command, line); };
}

CLI::Validator integer_in(long long min, long long max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        const std::string item = trimmed(text);
        long long value = 0;
        auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
        if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || value < min ||
            value > max) {
          return fmt::format("expected an integer from {} to {}, got '{}'", min, max, text);
        }
        text = item;
        return {};
      },
      fmt::format("INT in [{}, {}]", min, max));
}

CLI::Validator number_in(double min, double max, bool min_exclusive) {
  return CLI::Validator(
      [min, max, min_exclusive](std::string& text) -> std::string {
        const std::string item = trimmed(text);
        double value = 0.0;
        auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
        const bool in_range =
            std::isfinite(value) && (min_exclusive ? value > min : value >= min) && value <= max;
        if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || !in_range) {
          return fmt::format("expected a number {} {:g} and <= {:g}, got '{}'",
                             min_exclusive ? ">" : ">=", min, max, text);
        }
        text = item;
        return {};
      },
      fmt::format("NUMBER in {}{:g}, {:g}]", min_exclusive ? "(" : "[", min, max));
}

void add_input_limit_flag(CLI::App& app) {
  const core::InputLimits defaults;
  app.add_option_function<long long>(
         "--max-input-mb",
         [](const long long& mib) {
           core::InputLimits limits;
           limits.max_text_bytes = static_cast<std::size_t>(mib) << 20;
           limits.max_trace_bytes = static_cast<std::size_t>(mib) << 20;
           core::set_input_limits(limits);
         },
         fmt::format("Largest input file accepted, MiB after gzip inflation (default {} for "
                     "profiles and models, {} for traces)",
                     defaults.max_text_bytes >> 20, defaults.max_trace_bytes >> 20))
      ->check(integer_in(1, 4095));
}

void add_force_flag(CLI::App& app, bool& force) {
  app.add_flag("--force", force,
               "Replace an existing output that powertrain did not write (never the current "
               "directory or its parents)");
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = std::string::npos;
  for (const std::string& candidate : candidates) {
    const std::size_t distance = edit_distance(word, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  const std::size_t allowed = std::max<std::size_t>(2, word.size() / 3);
  return best_distance <= allowed ? best : std::string();
}

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
