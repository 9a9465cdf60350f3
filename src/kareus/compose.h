// Composing frontiers (Kareus §4.4, Alg. 2): partition candidates → microbatch frontier (one clock
// per microbatch, one schedule per partition type, plus Megatron-LM's sequential execution as a
// candidate, §4.5) → iteration frontier with the Perseus solver (src/frontier).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "core/result.h"
#include "frontier/evaluate.h"
#include "frontier/problem.h"
#include "frontier/solver.h"
#include "kareus/search.h"

namespace powertrain::kareus {

/// One way to run a microbatch.
struct MicrobatchOption {
  double time_s = 0.0;
  double energy_j = 0.0;
  int clock_mhz = 0;
  bool sequential = false;          // Megatron-LM execution (no nanobatches)
  std::vector<Schedule> schedules;  // per partition type (empty when sequential)
};

/// Non-dominated options (time, energy), fastest first. O(n log n).
std::vector<MicrobatchOption> pareto_options(std::vector<MicrobatchOption> options);

/// Alg. 2: for each clock in `clocks_mhz`, the Pareto set of Σ_types count × (partition cost) +
/// solo kernels, taking for each partition type any of its evaluated candidates at that clock
/// (Pareto-pruned after each type: exact for sums). `candidates[t]` belongs to
/// `microbatch.partitions[t]`; with no candidates (empty vector) only sequential options. With
/// `include_sequential`, the sequential microbatch at each clock is a candidate too. Clocks where
/// some type has no candidate are skipped (sequential kept).
std::vector<MicrobatchOption> microbatch_frontier(
    const device::GpuSpec& gpu, const ConcurrencyParams& params, const MicrobatchWork& microbatch,
    const std::vector<std::vector<Evaluated>>& candidates, const std::vector<int>& clocks_mhz,
    bool include_sequential);

/// Options of every (stage, forward/backward) instruction: options[stage][0 forward, 1 backward].
using StageOptions = std::vector<std::array<std::vector<MicrobatchOption>, 2>>;

/// A Perseus profile whose "frequencies" are option codes 1..n, slowest first (so the fastest
/// option is the one the solver's all-max-clock baseline uses).
profile::Profile options_profile(const StageOptions& options, const std::string& source);

/// An iteration frontier: planned and realized points.
struct IterationFrontier {
  frontier::PlanningProblem problem;
  frontier::Frontier frontier;
  std::vector<frontier::RealizedPlan> realized;  // per point, slowest first
};

/// Runs the Perseus solver (1F1B, convex piecewise-linear cost model, ceil quantization) on the
/// options. Errors: those of build_planning_problem.
core::Result<IterationFrontier> iteration_frontier(const StageOptions& options, int microbatches,
                                                   double unit_time_s, double p_blocking_w);

/// Realized time and energy when every instruction runs the given option (one per stage and kind).
frontier::RealizedPlan evaluate_fixed(const frontier::PlanningProblem& problem,
                                      const std::vector<std::array<MicrobatchOption, 2>>& chosen);

}  // namespace powertrain::kareus
