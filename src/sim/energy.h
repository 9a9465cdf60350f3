// Modelled GPU energy of a timeline (usually the replay) from the device model: static power over
// the step window plus dynamic power × activity of each GPU task by kernel class, at one SM clock
// (the GPU's top clock unless told). Every number here is modelled, not measured.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "device/gpu.h"
#include "device/work.h"
#include "graph/execution_graph.h"
#include "sim/metrics.h"
#include "sim/simulator.h"

namespace powertrain::sim {

/// The one kernel class of a GPU task (docs/glossary.md): energy accounting (sim/), what-if
/// selection (whatif::TaskClass reuses these values) and the emulator's estimates. The values
/// index per-class arrays (kKernelClassCount of them).
enum class KernelClass : std::uint8_t { kMatmul, kMemory, kCollective };
inline constexpr int kKernelClassCount = 3;
std::string_view to_string(KernelClass kind);

/// The device model's work kind of a class: kMatmul → kMatmul, kMemory → kMemoryBound,
/// kCollective → kCollective. The only mapping between the two enums; the device model's
/// kAttention (tensor-core work at a lower efficiency) is kMatmul here, so no class maps to it.
device::WorkKind work_kind(KernelClass kind);

/// NCCL tasks → kCollective; names containing a GEMM/convolution/attention marker (gemm, matmul,
/// bmm_, nvjet, xmma, wgmma, hmma, scudnn, winograd, dgrad, wgrad, fprop, convolve, fmha,
/// flash_fwd, flash_bwd, flash_attn, attention; case-insensitive) → kMatmul; everything else
/// (memcpy, memset, elementwise, reductions, norms, unknown) → kMemory.
KernelClass classify_kernel(std::string_view name, graph::TaskKind kind, bool nccl);

struct GpuEnergy {
  int rank = 0;
  std::int64_t device = 0;
  double window_s = 0.0;  // the rank's step window (all steps)
  int steps = 1;
  double busy_s[kKernelClassCount] = {0.0, 0.0, 0.0};  // task time by KernelClass inside the window
  double dynamic_j_by_class[kKernelClassCount] = {0.0, 0.0, 0.0};
  double static_j = 0.0;   // static power × window
  double dynamic_j = 0.0;  // Σ dynamic power × activity(class) × task time
  double total_j = 0.0;
  double average_power_w = 0.0;
  bool above_power_limit = false;  // average power above the GPU's limit (not capped here)
  double total_j_per_step() const { return total_j / std::max(steps, 1); }
};

struct EnergyReport {
  std::string gpu;         // catalog name
  double clock_mhz = 0.0;  // SM clock of the estimate
  std::string basis = "modelled";
  std::vector<GpuEnergy> gpus;  // one per (rank, device)
  double static_j = 0.0;        // sums over GPUs, each over its window
  double dynamic_j = 0.0;
  double total_j = 0.0;
  double total_j_per_step = 0.0;  // Σ over GPUs of energy per step
};

/// Energy of a timeline: `windows` come from metrics_of_timeline on the same timeline. Overlapping
/// tasks add their activities (as the device model adds back-to-back ops). `clock_mhz` ≤ 0 means
/// the GPU's highest clock; `task_clock_mhz` (per task, 0 = that clock; empty = none) gives tasks
/// that ran at their own clock (a program's NVML lock) that clock's dynamic power. O(tasks).
EnergyReport timeline_energy(const graph::ExecutionGraph& graph,
                             std::span<const std::int64_t> start_ns,
                             std::span<const std::int64_t> end_ns, const StepMetrics& metrics,
                             const device::GpuSpec& gpu, double clock_mhz = 0.0,
                             std::span<const double> task_clock_mhz = {});

/// Energy of the replay on `gpu`.
EnergyReport replay_energy(const graph::ExecutionGraph& graph, const ReplayResult& replay,
                           const StepMetrics& replay_metrics, const device::GpuSpec& gpu,
                           double clock_mhz = 0.0, std::span<const double> task_clock_mhz = {});
/// The same on the default GPU, a100-sxm.
EnergyReport replay_energy(const graph::ExecutionGraph& graph, const ReplayResult& replay,
                           const StepMetrics& replay_metrics);

}  // namespace powertrain::sim
