// powertrain: predict and optimize the time and energy of large-model training.
#include <fmt/core.h>

#include <cstdio>
#include <exception>

#include "cli/commands.h"

namespace powertrain::cli {

const std::vector<Subcommand>& subcommands() {
  static const std::vector<Subcommand> table = {
      {"frontier", "Perseus time-energy frontier of one pipeline iteration from a profile",
       add_frontier_command},
      {"lookup", "Pick the plan to deploy from a frontier for a straggler's iteration time",
       add_lookup_command},
      {"example-profile", "Write the built-in example profile CSV", add_example_profile_command},
      {"profile", "Predict a Perseus profile CSV from a built-in model, GPU and parallel config",
       add_profile_command},
      {"calibrate", "Fit a GPU's time and power model to a measured Perseus profile",
       add_calibrate_command},
      {"partition",
       "Split a model's layers into pipeline stages (uniform, explicit, min-imbalance)",
       add_partition_command},
      {"cluster", "Emulate N data-parallel pipelines with stragglers: intrinsic/extrinsic savings",
       add_cluster_command},
      {"replay", "Replay PyTorch Kineto traces: step time, breakdown, utilization, energy",
       add_replay_command},
      {"whatif", "Replay Kineto traces after changes (e.g. --scale matmul=0.5)",
       add_whatif_command},
      {"emulate",
       "Run a CUDA program on emulated GPUs (or analyse its traces): predicted time and energy",
       add_emulate_command},
  };
  return table;
}

int fail(const std::string& command, const std::string& message) {
  fmt::print(stderr, "powertrain {}: error: {}\n", command, message);
  return 1;
}

}  // namespace powertrain::cli

int main(int argc, char** argv) {
  using namespace powertrain::cli;
  CLI::App app{"powertrain: time and energy of large-model training, planned and optimized"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "powertrain 0.1.0");
  std::vector<std::pair<CLI::App*, Action>> actions;
  for (const Subcommand& sub : subcommands()) {
    CLI::App* command = app.add_subcommand(sub.name, sub.description);
    actions.emplace_back(command, sub.add(*command));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto& [command, action] : actions) {
      if (command->parsed()) return action();
    }
  } catch (const std::exception& e) {
    // Library code reports bad input through results; reaching here is a bug or resource
    // exhaustion.
    fmt::print(stderr, "powertrain: internal error: {}\n", e.what());
    return 2;
  }
  return 1;
}
