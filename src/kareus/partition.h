// Kareus partitioned overlap (Kareus §4.2, §4.5): a microbatch split into two nanobatches, cut at
// its communication kernels into partitions of one nanobatch's collective and the independent
// compute kernels of the other nanobatch.
#pragma once

#include <string>
#include <vector>

#include "device/kernel_efficiency.h"
#include "device/work.h"
#include "workload/job.h"

namespace powertrain::kareus {

/// One launch slot: a compute kernel, or consecutive memory-bound kernels merged into one (§4.5).
struct Kernel {
  std::string name;  // "input_norm" or "attn_residual+mlp_norm" when merged
  device::Work work;
  int launches = 1;             // kernel launches in the slot (merged memory-bound ops: one each)
  device::KernelShape shape{};  // GEMM / attention tiles (unknown: no wave term)
  /// Causal flash attention: busy-SM fraction of its blocks on all of the GPU's SMs
  /// (causal_attention_fill); replaces the uniform tile-wave fill. 0: not computed.
  double causal_fill = 0.0;
};

/// What a workload::Op does not carry but its kernel's shape needs (kernel-size terms): every
/// GEMM of workload::layer_ops has m = the rank's tokens of the microbatch.
struct ShapeContext {
  double tokens = 0.0;  // b · s / cp (0: shapes unknown)
  double hidden = 0.0;  // h
  double heads = 0.0;   // query heads per TP rank
  double keys = 0.0;    // keys each query row attends to: s
  double operand_bytes = 2.0;
  double activation_bytes = 2.0;
  /// Causal attention's block grid (causal_attention_fill): sequences per microbatch, the
  /// sequence length, cp and the GPU's SMs. sms 0 or a non-causal model: no causal term.
  bool causal = false;
  int sequences = 0;
  double seq_len = 0.0;
  int cp = 1;
  int sms = 0;
};
/// `sms`: the GPU's SM count for the causal attention term (0: none).
ShapeContext shape_context(const workload::ModelSpec& spec, const workload::ParallelConfig& config,
                           int sms = 0);

/// Busy-SM fraction of a causal flash-attention kernel's blocks on `sms` SMs, the load imbalance
/// the uniform tile waves leave out. Forward: one block per 128 query rows × sequence × head
/// (flash attention 2's grid, x fastest), each computing one 128 × 128 score tile per key block
/// it attends to; backward: one block per key block, one tile per query block that attends to
/// it. Blocks are dispatched in grid order to the SM that frees first (greedy list scheduling);
/// fill = tiles / (sms × makespan). With cp > 1 each rank holds chunks r and 2cp−1−r of 2cp
/// (Megatron's load-balanced layout) and runs one kernel per chunk against the gathered keys
/// before it (TransformerEngine's all-gather CP attention), chunk r's first; the slowest rank
/// counts. 0 when the counts are not whole (sequences < 1, seq_len not a multiple of 2·cp·tile)
/// or the grid exceeds 2^20 blocks.
double causal_attention_fill(int sequences, double seq_len, int cp, double heads, bool backward,
                             int sms, double tile = 128.0);

/// The shape of an op's kernel: projections (`*_proj`, `mlp_fc1/2`, `lm_head*`, with `_dgrad` /
/// `_wgrad`) take k = hidden, or n = hidden for out_proj, down_proj and fc2; the other dimension
/// is FLOPs / (2 m k); fused attention is (tokens, heads, keys). A GEMM's shape is kept only when
/// it reproduces the op's HBM bytes by workload::layer_ops' formulas (to 1e-9 relative);
/// otherwise, and for every other op, it is unknown.
device::KernelShape op_shape(const workload::Op& op, const ShapeContext& ctx);

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
  std::vector<workload::Op> sequential;    // Megatron-LM: the full microbatch, one kernel at a time
  std::vector<Kernel> sequential_kernels;  // the same ops as kernels, with their shapes
  std::vector<PartitionType> partitions;   // partitioned overlap; empty without collectives
  /// Nanobatch kernels that run alone: the first nanobatch's compute before its first collective
  /// and the second nanobatch's compute after its last one (each nanobatch's half of the work).
  std::vector<Kernel> solo;
};

/// Half the microbatch's sequences: flops, link and HBM bytes halve (work without a shape).
device::Work nanobatch_work(const device::Work& work);
/// The same with the kernel's shape: device::token_fraction(…, 0.5), so weight reads and the fp32
/// weight-gradient accumulation (KernelShape::token_invariant_bytes) are moved by each nanobatch
/// again, and the shape's token dimension halves.
Kernel nanobatch_kernel(const Kernel& full);

/// Splits a microbatch's ops (forward or backward, in execution order) into partitions. With
/// collectives C_0..C_{n-1} separating compute segments S_0..S_n, nanobatches A and B run
/// A:S_0, [A:C_0 ‖ B:S_0], [B:C_0 ‖ A:S_1], [A:C_1 ‖ B:S_1], ..., [B:C_{n-1} ‖ A:S_n], B:S_n,
/// so each collective C_k forms the partitions (C_k, S_k) and (C_k, S_{k+1}); partitions with the
/// same kernels (to the byte) are one type. An empty segment yields no partition (its collective
/// runs exposed, as a solo kernel). `group_size`: the tensor-parallel degree, used for collectives
/// whose Op::group_size is 0 (context-parallel K/V all-gathers carry cp). O(ops²) worst case.
MicrobatchWork build_microbatch_work(const std::vector<workload::Op>& ops, bool backward,
                                     int group_size, const ShapeContext& shapes = {});

/// The ops of one forward or backward microbatch of a stage in execution order. With `recompute`
/// (full activation recomputation) the backward is the stage's forward again (StageWork::recompute)
/// and then its backward, as Megatron runs it: recomputation costs time and energy in every
/// backward, sequential or partitioned.
std::vector<workload::Op> microbatch_ops(const workload::StageWork& stage, bool backward,
                                         bool recompute);

}  // namespace powertrain::kareus
