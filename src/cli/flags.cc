#include "cli/flags.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

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

}  // namespace powertrain::cli
