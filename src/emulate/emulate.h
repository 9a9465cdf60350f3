// The emulation pipeline's entry point: per-process traces → collation → deduplication of
// identical ranks → kernel duration estimates → one RankTrace per simulated process → the
// execution graph and replay simulator of issue 4 → report (predicted step time, breakdown, peak
// memory, out-of-memory events, modelled energy, misuse) and the Perfetto trace. Every time and
// energy in the result is modelled/predicted, not measured.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "device/gpu.h"
#include "emulate/collation.h"
#include "emulate/dedup.h"
#include "emulate/emulation_trace.h"
#include "emulate/estimators.h"
#include "emulate/timeline.h"
#include "graph/execution_graph.h"
#include "sim/energy.h"
#include "sim/metrics.h"
#include "sim/simulator.h"

namespace powertrain::emulate {

struct EmulateOptions {
  std::string gpu = "h100";  // catalog name (device::find_gpu)
  int nodes = 0;             // 0: as many as the traces' GPUs need
  int gpus_per_node = 8;
  bool dedup = true;
  std::string kernel_table;  // CSV of profiled kernels (TableEstimator), optional
  /// Estimators asked before the table and the device model (e.g. a trained regressor).
  std::vector<std::shared_ptr<const KernelEstimator>> extra_estimators;
  DeviceModelOptions device_model;
  HostCosts host_costs;
  /// Find repeated iterations (find_steps); false: the whole trace is one step.
  bool detect_steps = true;
};

struct OutOfMemory {
  int rank = 0;
  int device = 0;
  std::int64_t gpu = 0;  // global index
  std::string api;
  std::int64_t bytes = 0;        // requested
  std::int64_t used_bytes = -1;  // in use on the device when it failed (−1: not recorded)
  std::string where;             // "trace-12.jsonl:37"
};

/// An SM clock lock the program made through NVML (nvmlDeviceSetGpuLockedClocks & co.): work the
/// rank launched on `device` after it is timed, and its energy modelled, at `max_mhz` (clamped to
/// the GPU's clocks) until the next lock; max_mhz 0 unlocks (the default clock again).
struct ClockLock {
  int rank = 0;
  int device = 0;
  double t_s = 0.0;  // host time of the call from the process's first record
  int min_mhz = 0;
  int max_mhz = 0;
  std::string api;
};

struct RankReport {
  int rank = 0;
  std::string source;
  int devices = 1;
  std::int64_t first_gpu = 0;
  std::int32_t rank_class = 0;
  bool simulated = true;  // the representative of its class
  int representative_rank = 0;
  // Predicted (from the replay of this rank or of its class's representative).
  double step_s = 0.0;
  int steps = 1;
  bool steps_detected = false;
  sim::Breakdown breakdown;
  double gpu_utilization = 0.0;
  /// First GPU task start to last GPU task end of the whole run (all steps), predicted: the
  /// device-side length without the host's start-up and tear-down.
  double gpu_span_s = 0.0;
  double energy_j_per_step = 0.0;  // all devices of the process
  std::vector<double> device_energy_j_per_step;
  // From this process's own records.
  std::vector<std::int64_t> peak_memory_bytes;  // per device
  std::int64_t gpu_tasks = 0;
  std::int64_t out_of_memory = 0;  // failed allocations
  std::int64_t unsupported_calls = 0;
  std::int64_t misuse_calls = 0;
  /// Predicted completion of every cudaEventRecord (the representative's schedule), for a second
  /// pass that reports predicted device time to the program (emulate --two-pass).
  std::vector<PredictedEvent> predicted_events;
  /// Modelled return of every stream/device synchronization (same schedule), for the second
  /// pass's pacing.
  std::vector<PredictedSync> predicted_syncs;
};

struct EstimatorUse {
  std::string name;
  std::string basis;
  std::int64_t tasks = 0;  // GPU tasks of the simulated processes it estimated
};

struct EmulationResult {
  device::GpuSpec gpu;
  int nodes = 1;
  int gpus_per_node = 8;
  std::int64_t gpu_count = 0;
  std::vector<RankReport> ranks;  // in rank order
  double job_step_s = 0.0;        // the slowest rank's predicted step time
  sim::Breakdown job_breakdown;   // mean over all ranks (each class counted by its size)
  double job_gpu_utilization = 0.0;
  double job_gpu_span_s = 0.0;     // earliest GPU task start to latest GPU task end, any rank
  double energy_j_per_step = 0.0;  // all GPUs of the job, modelled
  double static_j_per_step = 0.0;
  double dynamic_j_per_step = 0.0;
  double critical_path_s = 0.0;  // of the simulated ranks' replay
  std::vector<OutOfMemory> out_of_memory;
  std::map<std::string, std::int64_t> unsupported;  // API → calls
  std::map<std::string, std::int64_t> misuse;       // "API: what" → calls
  RankClasses classes;
  Collation collation;
  std::vector<EstimatorUse> estimators;
  HostCosts host_costs;
  std::vector<trace::TraceWarning> warnings;  // traces, collation, graph, replay
  /// Some rank's trace stands for several processes (joined in sequence, split into device
  /// ranks, or with processes left out: join_sequential_processes): a second pass, whose
  /// processes read predicted times by RANK, cannot give each process its own.
  bool ranks_from_several_processes = false;
  std::int64_t records = 0;
  std::vector<ClockLock> clock_locks;  // of the simulated ranks, in record order per rank
  // The simulated processes' graph and replay (for the Perfetto trace).
  graph::ExecutionGraph graph;
  sim::ReplayResult replay;
  double analysis_s = 0.0;  // wall time of the pipeline (not a prediction)
};

/// Runs the pipeline on parsed traces. Errors: no traces, an unknown GPU, an unreadable or
/// invalid kernel table, collation errors, a graph that cannot be built, a topology too small
/// for the traces' GPUs. Complexity: O(records) to collate and hash plus graph build and replay
/// of the simulated (representative) processes only.
core::Result<EmulationResult> emulate_traces(const std::vector<ProcessTrace>& processes,
                                             const EmulateOptions& options);

/// Reads trace files/directories (read_emulation_traces) and runs emulate_traces.
core::Result<EmulationResult> emulate_trace_paths(const std::vector<std::string>& paths,
                                                  const EmulateOptions& options);

}  // namespace powertrain::emulate
