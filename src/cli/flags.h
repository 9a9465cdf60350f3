// One flag vocabulary for every subcommand: typed, range-checked options, hidden old spellings,
// usage errors (exit 2) apart from data errors (exit 1), and "did you mean" suggestions.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "core/atomic_output.h"

namespace powertrain::cli {

inline constexpr int kExitDataError = 1;   // the input data or the environment is wrong
inline constexpr int kExitUsageError = 2;  // the command line is wrong
inline constexpr int kExitInternalError = 70;

/// Prints "powertrain <command>: error: <message>" and returns kExitUsageError.
int usage_error(const std::string& command, const std::string& message);

/// A progress callback that prints "<command>: <line>" to stderr; empty (no output) when `quiet`.
std::function<void(const std::string&)> stderr_progress(const std::string& command, bool quiet);

/// `text` without leading and trailing blanks and tabs.
std::string trimmed(const std::string& text);

/// An integer in [min, max] (text checked before conversion, so overflow is a usage error).
CLI::Validator integer_in(long long min, long long max);
/// A finite number in [min, max]; with `min_exclusive`, in (min, max].
CLI::Validator number_in(double min, double max, bool min_exclusive = false);

/// Adds an option under its current name plus hidden old spellings that still work for one release
/// (each use prints a note naming the current spelling). The validator applies to all names.
template <typename T>
CLI::Option* add_option_with_aliases(CLI::App& app, const std::string& name,
                                     std::initializer_list<const char*> old_names, T& value,
                                     const std::string& description,
                                     const CLI::Validator& validator = CLI::Validator()) {
  CLI::Option* option = app.add_option(name, value, description);
  if (validator.get_description() != "" || validator.get_name() != "") option->check(validator);
  for (const char* old_name : old_names) {
    CLI::Option* alias = app.add_option(old_name, value)->group("");
    const std::string old_spelling = old_name;
    if (validator.get_description() != "" || validator.get_name() != "") {
      // CLI11 names hidden options "" in its errors; name the spelling the user typed.
      alias->check(CLI::Validator(
          [validator, old_spelling](std::string& text) -> std::string {
            std::string error = validator(text);
            return error.empty() ? error : old_spelling + ": " + error;
          },
          validator.get_description()));
    }
    alias->each([old_spelling, name](const std::string&) {
      std::fprintf(stderr, "note: %s is now spelled %s\n", old_spelling.c_str(), name.c_str());
    });
  }
  return option;
}

/// Registers --max-input-mb: raises (or lowers) the size limit of every input file read by the
/// command (core::input_limits; profiles, models, traces after gzip inflation).
void add_input_limit_flag(CLI::App& app);

/// Registers --force (replace an existing output that powertrain did not write).
void add_force_flag(CLI::App& app, bool& force);
inline core::OutputPolicy output_policy(bool force) { return core::OutputPolicy{.force = force}; }

/// The candidate closest to `word` by edit distance, or "" if none is close enough to suggest.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

/// Runs the CLI: "did you mean" for unknown subcommands and flags, "powertrain X: error:" on every
/// error, exit 2 for usage errors; returns the process exit code.
int run_cli(int argc, char** argv);

}  // namespace powertrain::cli
