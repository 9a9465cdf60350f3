// Step metrics computed by the same functions on the input timeline and on the replay: step time,
// the Lumos execution breakdown (exposed compute, exposed communication, overlapped, other), GPU
// busy utilization in 1 ms windows, and the accuracy of a replay against its input.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "graph/execution_graph.h"
#include "sim/simulator.h"

namespace powertrain::sim {

/// A span of GPU work on one rank.
struct Interval {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  bool communication = false;  // NCCL kernel
};

/// The part of a rank's timeline that the metrics describe.
struct TimeWindow {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  int steps = 1;                // ProfilerStep spans inside (1 without them)
  bool profiler_steps = false;  // from ProfilerStep#N spans, else first to last task
  std::int64_t length_ns() const { return end_ns - start_ns; }
  double step_time_ns() const { return static_cast<double>(length_ns()) / std::max(steps, 1); }
};

/// Fractions of a window (they sum to 1 for a non-empty window).
struct Breakdown {
  double exposed_compute = 0.0;        // compute running, no communication
  double exposed_communication = 0.0;  // communication running, no compute
  double overlapped = 0.0;             // both
  double other = 0.0;                  // no GPU work: idle, host-bound

  // Sums and means over ranks (each field on its own).
  Breakdown& operator+=(const Breakdown& b) {
    exposed_compute += b.exposed_compute;
    exposed_communication += b.exposed_communication;
    overlapped += b.overlapped;
    other += b.other;
    return *this;
  }
  Breakdown& operator/=(double n) {
    exposed_compute /= n;
    exposed_communication /= n;
    overlapped /= n;
    other /= n;
    return *this;
  }
};

/// The breakdown of `intervals` (any order, may overlap) clipped to `window`. O(k log k).
Breakdown breakdown_of(std::span<const Interval> intervals, const TimeWindow& window);

/// Fraction of each `bin_ns` bin of `window` (from its start; the last bin may be shorter) during
/// which at least one interval runs (Lumos §4.2.3 SM utilization). Windows longer than 10^7 bins
/// get coarser bins (at most 10^7). O(k log k + bins).
std::vector<double> utilization_of(std::span<const Interval> intervals, const TimeWindow& window,
                                   std::int64_t bin_ns = 1'000'000);

struct RankMetrics {
  int rank = 0;
  TimeWindow window;
  double step_time_ns = 0.0;
  Breakdown breakdown;
  std::vector<double> utilization;  // 1 ms bins
  double mean_utilization = 0.0;    // GPU busy time / window
};

struct StepMetrics {
  std::vector<RankMetrics> ranks;  // in graph rank order
  double job_step_time_ns = 0.0;   // the slowest rank's step time
  Breakdown job_breakdown;         // mean over ranks
  double job_mean_utilization = 0.0;
};

/// Per-rank windows of a timeline (per-task starts and ends): all ProfilerStep#N spans of the rank
/// (first start to last end, divided by their count), else its first to last task.
std::vector<TimeWindow> step_windows(const graph::ExecutionGraph& graph,
                                     std::span<const std::int64_t> start_ns,
                                     std::span<const std::int64_t> end_ns);

/// Metrics of any timeline of the graph's tasks (tasks with start INT64_MIN are skipped).
StepMetrics metrics_of_timeline(const graph::ExecutionGraph& graph,
                                std::span<const std::int64_t> start_ns,
                                std::span<const std::int64_t> end_ns);
/// The measured timeline.
StepMetrics metrics_of_input(const graph::ExecutionGraph& graph);
/// The replayed timeline.
StepMetrics metrics_of_replay(const graph::ExecutionGraph& graph, const ReplayResult& replay);

/// How closely a replay reproduces its input.
struct ReplayAccuracy {
  std::vector<double> rank_step_time_error_pct;  // (replay − input) / input × 100, per rank
  double job_step_time_error_pct = 0.0;
  double max_breakdown_error_pp = 0.0;    // largest |difference| of a breakdown share, ×100
  double max_utilization_error_pp = 0.0;  // largest |difference| of mean utilization, ×100
  double utilization_bin_mae_pp = 0.0;    // mean |difference| per 1 ms bin, ×100, all ranks
  double kernel_start_mae_ns = 0.0;       // mean |replayed − measured| over GPU tasks
  double kernel_end_mae_ns = 0.0;
  std::int64_t max_collective_end_spread_input_ns = 0;  // over joined groups: max − min end
  std::int64_t max_collective_end_spread_replay_ns = 0;
};

ReplayAccuracy compare_replay(const graph::ExecutionGraph& graph, const ReplayResult& replay,
                              const StepMetrics& input, const StepMetrics& replayed);

/// When an unchanged replay counts as reproducing its trace.
struct VerdictOptions {
  double max_step_error_pct = 1.0;            // per rank
  double max_breakdown_error_pp = 2.0;        // per rank, any share
  std::int64_t max_release_shift_ns = 1'000;  // released dependencies that moved tasks more
};

struct VerdictReason {
  std::string text;
  double explained_s = 0.0;  // seconds per step this reason accounts for (ranking key)
};

/// Whether the replay reproduces the trace, and if not why, largest explained time first.
struct Verdict {
  bool faithful = true;
  std::vector<VerdictReason> reasons;
};

/// Judges an unchanged replay: not faithful when a rank's step time is off by more than
/// max_step_error_pct, a breakdown share by more than max_breakdown_error_pp, tasks were lost,
/// or dependencies released to break deadlocks moved tasks from their measured times.
Verdict judge_replay(const graph::ExecutionGraph& graph, const ReplayResult& replay,
                     const StepMetrics& input, const StepMetrics& replayed,
                     const ReplayAccuracy& accuracy, const VerdictOptions& options = {});

}  // namespace powertrain::sim
