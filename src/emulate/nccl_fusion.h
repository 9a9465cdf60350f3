// NCCL calls → the fused kernels the emulated timeline launches, joined across the simulated
// ranks (part of emulate.h's pipeline).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "device/gpu.h"
#include "emulate/collation.h"
#include "emulate/dedup.h"
#include "emulate/emulation_trace.h"
#include "emulate/estimators.h"
#include "emulate/timeline.h"

namespace powertrain::emulate {

/// What the fusion reads.
struct NcclFusionContext {
  const std::vector<ProcessTrace>& procs;
  const std::vector<std::int32_t>& simulated;  // process indices, in rank order
  const Collation& collation;
  const RankClasses& classes;
  int gpus_per_node = 8;
  const device::GpuSpec& gpu;
  const EstimatorChain& chain;
};

/// Consecutive NCCL calls on one thread with the same nonzero group id (an ncclGroupStart/End
/// block) share a kernel per (device, stream); kernels are joined through the collation's
/// groups re-formed by rank class, and each gets its duration: the sum of its collectives plus
/// the longest of its P2P transfers. Fills inputs[s].nccl, nccl_of_record and work_ns of the
/// launching records; `count_use(estimator)` counts each kernel's estimator; a join that would
/// wait on its own stream is refused with a warning.
void fuse_nccl_calls(const NcclFusionContext& context, std::vector<TimelineInput>& inputs,
                     std::vector<trace::TraceWarning>& warnings,
                     const std::function<void(int)>& count_use);

/// Seconds → ns, at least 1.
std::int64_t to_ns(double seconds);

}  // namespace powertrain::emulate
