// The replay's critical path (sim::critical_path) split per step and by what bounds it: GPU
// compute, communication, host (CPU tasks) or idle gaps between consecutive path tasks; with the
// modelled energy of the GPU along it (sim energy model). Times are from the replay of the measured
// trace.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/execution_graph.h"
#include "sim/energy.h"
#include "sim/simulator.h"

namespace powertrain::analyze {

struct BoundBy {
  std::int64_t compute_ns = 0;
  std::int64_t communication_ns = 0;
  std::int64_t host_ns = 0;
  std::int64_t idle_gap_ns = 0;
  std::int64_t total_ns() const { return compute_ns + communication_ns + host_ns + idle_gap_ns; }
};

struct StepPath {
  int step = 0;  // 0-based ProfilerStep index; -1: the fallback window; 0 also for the whole path
  std::int64_t start_ns = 0;  // replayed step span
  std::int64_t end_ns = 0;
  BoundBy bound;           // path time inside the step, by class (Σ ≤ the step's length)
  std::int64_t tasks = 0;  // path tasks that end inside the step
  double energy_j = 0.0;   // modelled GPU energy along the path inside the step
};

struct RankPath {
  int rank = 0;
  std::int64_t start_ns = 0;  // first path task's replayed start
  std::int64_t end_ns = 0;    // last path task's replayed end
  std::int64_t tasks = 0;
  std::int64_t other_rank_tasks = 0;  // path tasks of other ranks (reached through collectives)
  BoundBy bound;                      // Σ = end − start
  double energy_j = 0.0;              // modelled
  double static_power_w = 0.0;        // the model's static power of this rank's GPU
  std::vector<StepPath> steps;
  struct Top {
    std::int32_t task = 0;
    std::int64_t on_path_ns = 0;
  };
  std::vector<Top> longest;  // the path's longest pieces (up to 10), for reports
};

/// The critical path of each rank of the replay, split by ProfilerStep spans (their replayed
/// times) and by class. Each path piece is a task's time after the previous path task ended (its
/// own class: CPU task → host, NCCL/communication GPU task → communication, other GPU task →
/// compute) or the gap before it started (idle gap). Energy: static power × piece + dynamic power
/// of the task's kernel class on its rank's GPU (from `energy`: dynamic J / busy s of that class) ×
/// GPU piece. O(path length + steps).
/// `fallback_windows` (by graph rank index; may be empty) stand in for the steps of a rank without
/// ProfilerStep spans, e.g. the analysis window, so the split describes that window and not the
/// whole trace (whose path usually starts with start-up calls).
std::vector<RankPath> critical_paths(
    const graph::ExecutionGraph& graph, const sim::ReplayResult& replay,
    const sim::EnergyReport& energy,
    const std::vector<std::pair<std::int64_t, std::int64_t>>& fallback_windows = {});

}  // namespace powertrain::analyze
