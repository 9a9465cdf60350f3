// Kareus partitioned overlap (Kareus §4.2, §4.5): a microbatch split into two nanobatches, cut at
// its communication kernels into partitions of one nanobatch's collective and the independent
// compute kernels of the other nanobatch.
#pragma once

#include <string>
#include <vector>

#include "device/work.h"
#include "workload/job.h"

namespace powertrain::kareus {

/// One launch slot: a compute kernel, or consecutive memory-bound kernels merged into one (§4.5).
struct Kernel {
  std::string name;  // "input_norm" or "attn_residual+mlp_norm" when merged
  device::Work work;
};

/// A partition type: identical partitions (every Transformer layer's) are optimized once.
struct PartitionType {
  std::string name;  // "fwd attn_all_reduce || attn_residual..mlp_down_proj"
  bool backward = false;
  std::vector<Kernel> compute;  // one nanobatch's compute kernels, in order (the launch slots)
  Kernel comm;                  // the other nanobatch's collective (consecutive ones fused)
  int count = 0;                // occurrences per microbatch
  int group_size = 1;  // GPUs in the collective's group (tp, or cp for CP's K/V collectives)
};

/// One forward or backward microbatch of a stage in both execution models.
struct MicrobatchWork {
  bool backward = false;
  std::vector<workload::Op> sequential;   // Megatron-LM: the full microbatch, one kernel at a time
  std::vector<PartitionType> partitions;  // partitioned overlap; empty without collectives
  /// Nanobatch kernels that run alone: the first nanobatch's compute before its first collective
  /// and the second nanobatch's compute after its last one (each nanobatch's half of the work).
  std::vector<Kernel> solo;
};

/// Halves flops, HBM and link bytes (a nanobatch is half the microbatch's sequences). Weight reads
/// of GEMMs are halved too: a small underestimate of a nanobatch's traffic.
device::Work nanobatch_work(const device::Work& work);

/// Splits a microbatch's ops (forward or backward, in execution order) into partitions. With
/// collectives C_0..C_{n-1} separating compute segments S_0..S_n, nanobatches A and B run
/// A:S_0, [A:C_0 ‖ B:S_0], [B:C_0 ‖ A:S_1], [A:C_1 ‖ B:S_1], ..., [B:C_{n-1} ‖ A:S_n], B:S_n,
/// so each collective C_k forms the partitions (C_k, S_k) and (C_k, S_{k+1}); partitions with the
/// same kernels (to the byte) are one type. An empty segment yields no partition (its collective
/// runs exposed, as a solo kernel). `group_size`: the tensor-parallel degree, used for collectives
/// whose Op::group_size is 0 (context-parallel K/V all-gathers carry cp). O(ops²) worst case.
MicrobatchWork build_microbatch_work(const std::vector<workload::Op>& ops, bool backward,
                                     int group_size);

}  // namespace powertrain::kareus
