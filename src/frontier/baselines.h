// Baselines the frontier is compared with (Perseus §6.2, §6.4): all maximum clock, ZeusGlobal,
// ZeusPerStage and EnvPipe's heuristic, each evaluated with the measured time and energy of the
// clocks it picks (same energy definition as a realized frontier point).
#pragma once

#include <string>
#include <vector>

#include "frontier/evaluate.h"
#include "frontier/problem.h"
#include "frontier/profile.h"

namespace powertrain::frontier {

/// One baseline plan: a clock per (stage, instruction), evaluated on the pipeline DAG.
struct BaselinePoint {
  std::string label;      // e.g. "ZeusGlobal 1200 MHz"
  double time_s = 0.0;    // iteration time (longest path of measured times)
  double energy_j = 0.0;  // Σ measured energy + P_blocking × (GPUs × time − Σ busy time)
  std::vector<int> clock_by_model;  // per PlanningProblem model (0 for constant-time nodes)
};

struct Baselines {
  BaselinePoint all_max_clock;
  std::vector<BaselinePoint> zeus_global;  // one clock for every instruction; slowest first
  std::vector<BaselinePoint>
      zeus_per_stage;     // per-stage clocks balancing forward time; slowest first
  BaselinePoint envpipe;  // EnvPipe heuristic (single point)
};

/// Computes every baseline from the measured options in `profile` for the pipeline of `problem`.
Baselines compute_baselines(const PlanningProblem& problem, const Profile& profile);

}  // namespace powertrain::frontier
