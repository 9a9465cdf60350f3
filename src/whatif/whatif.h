// What-if transformations of an execution graph (Lumos §3.4): change what the replay runs, not
// what was measured (ExecutionGraph::input_* stay; duration_ns changes).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "graph/execution_graph.h"
#include "sim/energy.h"

namespace powertrain::whatif {

/// Which tasks a scaling applies to: a kernel class (sim::KernelClass, the one kernel-class enum;
/// the same values) or one of the selectors all/gpu/cpu on top of it.
enum class TaskClass : std::uint8_t {
  kMatmul = static_cast<std::uint8_t>(sim::KernelClass::kMatmul),  // GEMM/convolution/attention
  kMemory = static_cast<std::uint8_t>(sim::KernelClass::kMemory),  // other kernels, memcpy, memset
  kCollective = static_cast<std::uint8_t>(sim::KernelClass::kCollective),  // NCCL kernels
  kAll = sim::kKernelClassCount,  // every task, host and GPU
  kGpu,                           // every GPU task
  kCpu,                           // host tasks
};

/// The kernel class a TaskClass selects; nullopt for the selectors kAll, kGpu, kCpu.
std::optional<sim::KernelClass> kernel_class(TaskClass task_class);

struct DurationScaling {
  TaskClass task_class = TaskClass::kAll;
  double factor = 1.0;  // new duration = factor × current duration (> 0)
};

/// Parses "matmul=0.5", "collective=0.5", "all=2", "gpu=1.1", "memory=0.8", "cpu=0.9".
/// Errors name the bad part and list the classes.
core::Result<DurationScaling> parse_duration_scaling(const std::string& text);

/// Multiplies the replayed duration of every task in the class. For kAll the whole timeline is
/// dilated: measured gaps (edge lags, sync tails, step-span margins) and the start times of tasks
/// without dependencies (around the first event) scale too, so the step scales by exactly k; the
/// graph's input_* then describe that dilated reference. Returns the number of tasks changed.
std::int64_t scale_durations(graph::ExecutionGraph& graph, const DurationScaling& scaling);

}  // namespace powertrain::whatif
