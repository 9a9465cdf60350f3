// Turning planned durations into clocks, and measuring plans and baselines with measured numbers.
#pragma once

#include <string>
#include <vector>

#include "frontier/problem.h"
#include "frontier/solver.h"

namespace powertrain::frontier {

/// A plan evaluated with the measured time and energy of the clocks it chose.
struct RealizedPlan {
  double time_s = 0.0;    // iteration time (longest path of measured times)
  double energy_j = 0.0;  // Σ measured energy + P_blocking × (GPUs × time − Σ busy time)
};

/// Clock of each node for planned durations (0 for constant-time nodes).
std::vector<int> frequencies_for(const PlanningProblem& problem, const std::vector<int>& durations);

/// Measured time (s) of each node at its planned duration (constant nodes: their fixed time).
std::vector<double> measured_times(const PlanningProblem& problem,
                                   const std::vector<int>& durations);

/// Realized time and energy of the discrete plan for planned durations.
RealizedPlan realize(const PlanningProblem& problem, const std::vector<int>& durations);

/// Realized time and energy of every frontier point (replays the stored plan changes). O(points ×
/// nodes).
std::vector<RealizedPlan> realize_frontier(const PlanningProblem& problem,
                                           const Frontier& frontier);

/// A plan given as the measured time (s) and energy (J) of every node (constant-time nodes: their
/// fixed time at blocking power), evaluated like a realized point. Precondition: both vectors have
/// one entry per DAG node. O(nodes + edges).
RealizedPlan evaluate_measured(const PlanningProblem& problem, const std::vector<double>& times_s,
                               const std::vector<double>& energies_j);

/// Every instruction at its highest measured clock.
RealizedPlan all_max_clock_baseline(const PlanningProblem& problem);

/// Makes the fastest point no slower, realized, than all max clock: while its realized time
/// exceeds all_max_clock_baseline (slack that quantization made up was spent on slower clocks),
/// every node on a realized critical path moves to its fastest option, which with ceil
/// quantization is the fastest measured clock; other nodes keep their cheaper clocks. If that plan
/// is planned faster than the last point (a preview stopped early), it is appended as a new point.
/// Returns whether the frontier changed. O(rounds × (nodes + edges)).
bool pin_fastest_point(const PlanningProblem& problem, Frontier& frontier);

/// Baseline energy as the Perseus paper's Table 6 defines it: Σ measured max-clock energies +
/// P_blocking × (GPUs × T − Σ max-clock busy time), for an iteration lasting T seconds.
double max_clock_energy_at(const PlanningProblem& problem, double iteration_time_s);

/// Index of the point to deploy for a target iteration time: the slowest point not slower than
/// `target_time_s` (frontier points are slowest first); the fastest point if none is.
std::size_t point_for_time(const Frontier& frontier, double unit_time_s, double target_time_s);

/// A straggler scenario (Perseus §3.1, Table 4): the job's iteration lasts T′ = slowdown × T_min;
/// this pipeline runs the plan for T_opt = min(T*, T′) and blocks until T′.
struct StragglerOutcome {
  double slowdown = 1.0;
  double straggler_time_s = 0.0;  // T′
  double target_time_s = 0.0;     // T_opt
  std::size_t point = 0;
  double planned_time_s = 0.0;
  double energy_j = 0.0;           // planned energy + blocking until T′ (modelled)
  double baseline_energy_j = 0.0;  // all max clock finishing at T_min, blocking until T′
  double savings_fraction = 0.0;   // 1 − energy / baseline
};
StragglerOutcome straggler_outcome(const PlanningProblem& problem, const Frontier& frontier,
                                   double slowdown);

}  // namespace powertrain::frontier
