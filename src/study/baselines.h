// Baselines the frontier is compared with (Perseus §6.2, §6.4): all maximum clock, ZeusGlobal,
// ZeusPerStage and EnvPipe's heuristic, each evaluated with the measured time and energy of the
// clocks it picks (same energy definition as a realized frontier point).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "frontier/evaluate.h"
#include "frontier/problem.h"
#include "profile/profile.h"

namespace powertrain::study {

/// One baseline plan: a measured clock per DAG node, evaluated on the pipeline DAG.
struct BaselinePoint {
  std::string label;      // e.g. "ZeusGlobal 1200 MHz"
  double time_s = 0.0;    // iteration time (longest path of measured times)
  double energy_j = 0.0;  // Σ measured energy + P_blocking × (GPUs × time − Σ busy time)
  std::vector<int> clock_by_operation;  // MHz per DAG node (0 for constant-time nodes)
};

/// Every baseline of one pipeline. Energies are per pipeline and per iteration, like the frontier.
struct Baselines {
  /// Every instruction at its highest measured clock (the default mode of operation).
  BaselinePoint all_max_clock;
  /// Zeus scanning one global clock: one point per clock measured for every (stage, instruction),
  /// lowest clock (slowest) first.
  std::vector<BaselinePoint> zeus_global;
  /// Zeus with per-GPU clocks that balance forward time: for each clock of the GPU whose forward
  /// is slowest at its top clock, every GPU runs all its instructions at its lowest clock whose
  /// forward time is not longer (the fastest clock if none). Slowest target first; plans that
  /// repeat an earlier one are dropped.
  std::vector<BaselinePoint> zeus_per_stage;
  /// EnvPipe (ATC'23; reference code casys-kaist/EnvPipe, "envelope" type with "balanced"
  /// reconfiguration, emulated on the DAG like the Perseus authors' lowtime-based script): the last
  /// GPU and each GPU's first forward and last backward (the outer envelope, the 1F1B critical
  /// path when the last stage is the heaviest, as EnvPipe assumes) run at the top clock, every
  /// other instruction at its least-measured-energy clock (the bottom of EnvPipe's energy valley);
  /// then, while the iteration is slower than all max clock, every critical (zero-slack)
  /// instruction at the lowest clock on the critical paths is raised to its next measured clock.
  /// (EnvPipe stops when the critical path is the envelope: the same point when the last stage is
  /// the heaviest.) Ends no slower than all max clock. EnvPipe targets 1F1B; other schedules get
  /// the same rule.
  BaselinePoint envpipe;
};

/// Computes every baseline from all measured clocks in `profile` (not only Pareto-optimal ones).
/// Precondition: `problem` was built from `profile` (so every profiled node has measurements).
/// ZeusGlobal is empty when no clock was measured for every (stage, instruction), ZeusPerStage
/// when a GPU's instructions share no measured clock.
/// O(clocks × (nodes + edges)) for Zeus; EnvPipe takes at most one DAG pass per raise step.
Baselines compute_baselines(const frontier::PlanningProblem& problem,
                            const profile::Profile& profile);

/// The realized frontier point Perseus would run in place of a baseline lasting `time_s`: the one
/// with the least realized energy among those whose realized time is within `time_s` (relative
/// tolerance 1e-9). nullopt when every realized point is slower. O(points).
std::optional<std::size_t> perseus_point_within(const std::vector<frontier::RealizedPlan>& realized,
                                                double time_s);

}  // namespace powertrain::study
