// powertrain: predict and optimize the time and energy of large-model training.
#include <fmt/core.h>

#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "cli/flags.h"

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
      {"kareus",
       "Kareus: joint clock, comm-SM and launch-timing frontier vs Megatron/Perseus/nanobatching",
       add_kareus_command},
      {"kareus-cluster",
       "Kareus §6.3 large-scale emulation: Llama 3.3 70B on 1,280-10,240 GPUs vs Perseus",
       add_kareus_cluster_command},
      {"analyze", "HTA-style analysis of Kineto traces: breakdowns, overlap, streams, critical path",
       add_analyze_command},
      {"diff", "Compare two Kineto traces by op and kernel name (like HTA's TraceDiff)",
       add_diff_command},
      {"serve", "Persistent plan server: Zeus PFO routes, online frontiers, straggler switches",
       add_serve_command},
      {"measure",
       "Thermally stable GPU time and energy of a command via NVML (warm-up, window, cooldown)",
       add_measure_command},
      {"search", "Energy-aware configuration search: time-energy frontier across parallel layouts",
       add_search_command},
      {"plan", "Perseus frequency plan from a pipeline-parallel trace or emulated program",
       add_plan_command},
  };
  return table;
}

int fail(const std::string& command, const std::string& message) {
  fmt::print(stderr, "powertrain {}: error: {}\n", command, message);
  return 1;
}

}  // namespace powertrain::cli

int main(int argc, char** argv) { return powertrain::cli::run_cli(argc, argv); }
