// Reading a frontier directory back (frontier.csv + plans.csv) to look up the plan to deploy.
#pragma once

#include <string>
#include <tuple>
#include <vector>

#include "core/result.h"

namespace powertrain::report {

struct StoredPoint {
  double time_s = 0.0;             // planned
  double energy_j = 0.0;           // planned
  double realized_time_s = 0.0;    // measured clocks
  double realized_energy_j = 0.0;  // measured clocks
};

/// Instruction at a GPU's slot.
struct StoredSlot {
  std::string instruction;
  int stage = 0;
  int microbatch = 0;
};

/// A frontier read back from disk.
struct StoredFrontier {
  std::string directory;
  std::vector<StoredPoint> points;                              // slowest first
  std::vector<std::vector<StoredSlot>> slots;                   // [gpu][slot]
  std::vector<std::vector<std::tuple<int, int, int>>> changes;  // [point] -> (gpu, slot, MHz)

  /// Per GPU, (instruction, MHz) in execution order at a point. O(changes up to that point).
  std::vector<std::vector<std::pair<std::string, int>>> plan_at(std::size_t point) const;
  /// Slowest point not slower than `target_s`; the fastest if none is.
  std::size_t point_for_time(double target_s) const;
};

/// Reads `<dir>/frontier.csv` and `<dir>/plans.csv`. Errors name the file and line: missing files
/// or columns, non-monotone times, plans referring to unknown points or slots, gaps in slots.
core::Result<StoredFrontier> read_frontier_directory(const std::string& directory);

/// The deployment decision for a straggler (Perseus §3.1): T_opt = min(T*, T′).
struct LookupDecision {
  double straggler_time_s = 0.0;
  double target_time_s = 0.0;
  std::size_t point = 0;
  bool faster_than_t_min = false;  // T′ < T_min: the fastest plan is used and the job is not slowed
};
LookupDecision decide(const StoredFrontier& frontier, double straggler_time_s);

}  // namespace powertrain::report
