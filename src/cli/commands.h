// The CLI's subcommands. Each parses its flags, calls the library and prints; nothing else.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace powertrain::cli {

/// A subcommand registers its flags on `app` and returns the action to run after parsing.
/// The action returns the process exit code.
using Action = std::function<int()>;

struct Subcommand {
  const char* name;
  const char* description;
  Action (*add)(CLI::App& app);
};

Action add_frontier_command(CLI::App& app);
Action add_lookup_command(CLI::App& app);
Action add_example_profile_command(CLI::App& app);
Action add_profile_command(CLI::App& app);
Action add_calibrate_command(CLI::App& app);
Action add_cluster_command(CLI::App& app);
Action add_partition_command(CLI::App& app);
Action add_replay_command(CLI::App& app);
Action add_whatif_command(CLI::App& app);
Action add_emulate_command(CLI::App& app);
Action add_kareus_command(CLI::App& app);
Action add_kareus_cluster_command(CLI::App& app);
Action add_analyze_command(CLI::App& app);
Action add_diff_command(CLI::App& app);
Action add_serve_command(CLI::App& app);
Action add_measure_command(CLI::App& app);
Action add_search_command(CLI::App& app);
Action add_plan_command(CLI::App& app);

/// All subcommands, in help order.
const std::vector<Subcommand>& subcommands();

/// Prints "powertrain <command>: error: <message>" to stderr and returns exit code 1.
int fail(const std::string& command, const std::string& message);

}  // namespace powertrain::cli
