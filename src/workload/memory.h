// Per-GPU memory of each pipeline stage: Megatron's mixed-precision Adam model state and the
// activations of Korthikanti et al. 2022 under 1F1B, checked against a GPU's capacity.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "workload/job.h"
#include "workload/model_zoo.h"
#include "workload/partition.h"

namespace powertrain::workload {

/// One GPU of one stage. Bytes unless named otherwise.
struct StageMemory {
  int stage = 0;
  double parameters = 0.0;  // count held by the GPU (TP shard, tied matrix once)
  double parameter_bytes = 0.0;
  double gradient_bytes = 0.0;                   // fp32 main gradients
  double optimizer_bytes = 0.0;                  // fp32 master copy (mixed precision), Adam m and v
  double activation_bytes_per_microbatch = 0.0;  // stored from forward to backward
  int in_flight_microbatches = 0;                // 1F1B: min(pp - stage, microbatches)
  double recompute_working_bytes = 0.0;          // one recomputed layer's full activations
  double activation_bytes = 0.0;  // per_microbatch × in_flight + recompute working set
  double total_bytes = 0.0;
};

struct MemoryEstimate {
  std::vector<StageMemory> stages;
  double capacity_bytes = 0.0;
  int peak_stage = 0;  // the stage with the largest total
  bool fits = false;   // every stage's total ≤ capacity
  /// One line, e.g. "does not fit: stage 0 needs 106.3 GiB per GPU but the GPU has 80.0 GiB
  /// (parameters 5.2, gradients 10.5, optimizer 31.4, activations 59.2 GiB)".
  std::string verdict;
};

/// Bytes per parameter of model state: mixed precision (bf16/fp16/fp8 jobs) keeps 2-byte
/// weights, 4-byte gradients and 12 bytes of optimizer state (fp32 master, m, v); fp32/tf32
/// jobs 4 + 4 + 8. The distributed optimizer divides the optimizer state by dp (Megatron's
/// 6 + 12/dp).
struct StateBytes {
  double parameter = 0.0;
  double gradient = 0.0;
  double optimizer = 0.0;
};
StateBytes state_bytes_per_parameter(const ParallelConfig& config);

/// Estimates every stage's per-GPU memory. Not modelled: the CUDA context, NCCL and cuBLAS
/// workspaces, allocator fragmentation and transient buffers of single ops (docs/workload.md).
/// Errors: the job fails validate_job, the partition does not match the job's units and pp,
/// capacity not finite and positive.
core::Result<MemoryEstimate> estimate_memory(const ModelSpec& spec, const ParallelConfig& config,
                                             const Partition& partition, double capacity_bytes);

/// Korthikanti et al. 2022's closed form for one GPT-style layer (multi-head attention,
/// 4h MLP, dropout, 2-byte activations), bytes per microbatch: sbh(34 + 5as/h) without
/// parallelism, sbh(10 + 24/t + 5as/(ht)) with TP, sbh/t · (34 + 5as/h) with TP + SP; a flash
/// kernel drops the 5as/h term; full recompute keeps 2sbh (2sbh/t with SP). For tests/docs.
double korthikanti_layer_activation_bytes(double s, double b, double h, double a, double t,
                                          bool sequence_parallel, bool flash, bool recompute);

}  // namespace powertrain::workload
