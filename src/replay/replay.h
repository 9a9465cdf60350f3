// The replay and what-if flow as one library call (Lumos): Kineto traces → execution graph →
// simulated replay → metrics, fidelity verdict, critical path and modelled energy, optionally
// after what-if changes. The CLI commands replay, whatif and analyze parse flags, call this and
// hand the result to report/replay_report.h.
//
// It lives beside src/trace rather than in it because it uses graph, sim and whatif, which depend
// on trace (dependencies point one way).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "device/gpu.h"
#include "graph/execution_graph.h"
#include "sim/energy.h"
#include "sim/metrics.h"
#include "sim/simulator.h"
#include "trace/trace_events.h"
#include "whatif/restage.h"
#include "whatif/whatif.h"

namespace powertrain::replay {

/// A progress line for the user (no command prefix, no newline).
using Progress = std::function<void(const std::string&)>;

/// Traces as read: one per rank, sorted by rank.
struct LoadedTraces {
  std::vector<trace::RankTrace> ranks;
  std::size_t events = 0;  // duration events over all ranks
  double read_s = 0.0;     // wall-clock time of the reading (measured)
};

/// Reads every path with trace::read_kineto_traces and counts events. With `require_events`, a
/// rank without duration events is an error naming its source. Errors: those of
/// read_kineto_traces.
core::Result<LoadedTraces> read_traces(const std::vector<std::string>& paths,
                                       bool require_events = false, const Progress& progress = {});

/// An unchanged replay of a graph with its metrics and modelled energy on `gpu`.
struct Replayed {
  sim::ReplayResult result;
  sim::StepMetrics metrics;
  sim::EnergyReport energy;
};
Replayed replay_graph(const graph::ExecutionGraph& graph, const device::GpuSpec& gpu,
                      const sim::ReplayOptions& options = {});

/// What to replay and which what-if changes to apply (all off = a plain replay).
struct Options {
  device::GpuSpec gpu;        // for the modelled energy (required: device::find_gpu)
  sim::ReplayOptions replay;  // collective time model
  std::vector<whatif::DurationScaling> scalings;
  int data_parallel = 0;        // > 0: collectives re-estimated for this DP degree
  double hidden_ratio = 0.0;    // > 0: hidden size × this
  whatif::RestageSpec restage;  // stages/microbatches/layers > 0: rebuild the pipeline
  int input_microbatches = 0;   // 0: found from the input
  bool restages() const {
    return restage.stages > 0 || restage.microbatches > 0 || restage.layers > 0;
  }
  bool changes_anything() const {
    return !scalings.empty() || restages() || data_parallel > 0 || hidden_ratio > 0.0;
  }
};

/// Everything one replay or what-if run computed.
struct ReplayRun {
  LoadedTraces traces;
  graph::ExecutionGraph graph;  // as measured
  // The unchanged replay: the reference for fidelity (replay) and the baseline (what-if).
  sim::ReplayResult faithful;
  sim::StepMetrics input;     // measured
  sim::StepMetrics replayed;  // simulated, unchanged
  sim::ReplayAccuracy accuracy;
  sim::Verdict verdict;
  // Structural what-if: the rebuilt job, and the rebuild at the input's own shape (how much the
  // rebuild itself loses), when it could be built.
  std::optional<whatif::RestagedJob> restaged;
  std::optional<double> rebuilt_at_input_shape_step_s;
  bool changed = false;
  std::int64_t changed_tasks = 0;
  // The run that the energy, critical path and replay trace describe: the what-if one when
  // changed, else the unchanged replay.
  sim::ReplayResult result;
  sim::StepMetrics result_metrics;
  sim::EnergyReport energy;
  sim::CriticalPath path;
  const graph::ExecutionGraph& what_if_graph() const { return restaged ? restaged->graph : graph; }
};

/// Reads the traces, builds the execution graph, replays it unchanged, applies the changes
/// (restage first, then DP degree, hidden size and scalings) and replays again. Deterministic
/// apart from the measured read time. Errors: those of read_traces (events required),
/// graph::build_execution_graph, whatif::restage, change_data_parallel_degree and
/// change_hidden_size.
core::Result<ReplayRun> replay(const std::vector<std::string>& paths, const Options& options,
                               const Progress& progress = {});

}  // namespace powertrain::replay
