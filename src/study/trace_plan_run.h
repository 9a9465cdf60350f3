// The `plan` flow's planning in one call: the timeline of a pipeline-parallel Kineto trace
// (replayed) or of an emulated run's kept traces (emulated), and the frontier planned from it
// (study/trace_plan.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/result.h"
#include "device/gpu.h"
#include "graph/execution_graph.h"
#include "sim/simulator.h"
#include "study/trace_plan.h"

namespace powertrain::study {

struct TracePlanRequest {
  std::vector<std::string> traces;  // Kineto traces; empty: `emulated`
  std::string emulated;             // output directory of `emulate --keep-traces`
  std::string kernel_table;         // emulated only: CSV of profiled kernels
  double max_host_gap_us = 0.0;     // emulated only: cap on host gaps between calls
  double modelled_host_gap_us =
      -1;  // emulated only: >= 0 replaces every host gap (host time model)
  TracePlanOptions options;
  std::function<void(const std::string&)> progress;  // reading the traces (may be empty)
};

struct TracePlanRun {
  graph::ExecutionGraph graph;
  sim::ReplayResult replayed;
  std::string source;  // what was read, for messages and summary.json
  const char* step_basis = "replayed from the measured trace";
  double measured_step_s = -1.0;  // the trace's own step (Kineto traces only)
  double step_s = 0.0;            // the replayed (or predicted) step
  TracePlan plan;
};

/// Replays the traces (or emulates the kept ones) on `gpu` and plans from the timeline. Errors:
/// reading or building, an emulated directory without traces/, a replay that did not complete,
/// those of plan_from_timeline (prefixed with the source).
core::Result<TracePlanRun> plan_from_traces(const TracePlanRequest& request,
                                            const device::GpuSpec& gpu);

}  // namespace powertrain::study
