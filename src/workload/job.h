// A training job's parallel layout (Megatron-style tensor, pipeline and data parallelism) and
// the per-GPU work of every layer unit: forward, backward and recompute ops, each a
// device::Work the device model can time.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "device/work.h"
#include "workload/model_zoo.h"
#include "workload/partition.h"

namespace powertrain::workload {

struct ParallelConfig {
  int tp = 1;  // tensor-parallel degree
  int pp = 1;  // pipeline-parallel degree (stages)
  int dp = 1;  // data-parallel degree
  /// Context-parallel degree (Llama 3-style all-gather CP, Megatron's cp): each rank holds
  /// seq_len / cp tokens of every sequence, all-gathers K and V over the CP group before
  /// attention and reduce-scatters dK and dV after its backward; weights are replicated over CP.
  int cp = 1;
  bool sequence_parallel = false;  // Korthikanti et al. 2022; needs tp > 1 to matter
  int microbatch_size = 1;         // sequences per microbatch
  int seq_len = 2048;              // tokens per sequence (see make_parallel_config)
  int num_microbatches = 1;        // per pipeline per iteration (bounds 1F1B in-flight work)
  device::Precision precision = device::Precision::kBf16;
  bool recompute = false;              // full activation recomputation of Transformer layers
  bool distributed_optimizer = false;  // optimizer state sharded over dp (Megatron/ZeRO-1)
  bool flash_attention = true;         // fused attention; false: scores, softmax, context ops
};

/// Defaults with the model's training sequence length.
ParallelConfig make_parallel_config(const ModelSpec& spec);

/// Limits on untrusted job settings.
inline constexpr int kMaxParallelDegree = 1 << 16;
inline constexpr int kMaxMicrobatches = 1 << 20;

/// Megatron pads the vocabulary to a multiple of 128 × tp so that every TP rank holds an equal
/// slice of the embedding and output layer (make_vocab_size_divisible_by = 128).
int padded_vocab_size(const ModelSpec& spec, int tp);

/// Bytes per element of activations and weights at `precision`. FP8 training keeps
/// activations in BF16 (only GEMM operands are FP8), so this returns 2 for kFp8.
double activation_element_bytes(device::Precision precision);
/// Bytes per element of GEMM operands (1 for FP8, else as activation_element_bytes).
double gemm_operand_bytes(device::Precision precision);

/// Number of pipeline layer units: one per Transformer layer plus the LM head (the embedding
/// rides with the first Transformer layer), e.g. 25 for GPT-3 1.3B.
int num_layer_units(const ModelSpec& spec);

/// Checks the job against the model, with Megatron's rules. Errors, each giving the reason:
/// the model fails validate_model; any degree, microbatch size, sequence length or microbatch count
/// not positive or over the limits; tp not dividing num_heads or num_kv_heads (Megatron shards
/// whole query groups, so GQA needs kv_heads % tp == 0 too); tp not dividing ffn_hidden_size;
/// sequence parallelism with seq_len not a multiple of tp (of tp × cp with context parallelism);
/// context parallelism with seq_len not a multiple of 2 × cp (Megatron's load-balanced causal
/// chunks); pp greater than the number of layer
/// units; seq_len above the learned position table.
core::Status validate_job(const ModelSpec& spec, const ParallelConfig& config);

/// One piece of per-GPU work. Names are stable identifiers such as "qkv_proj" or
/// "mlp_all_reduce"; backward ops carry suffixes "_dgrad", "_wgrad" or "_bwd".
struct Op {
  std::string name;
  device::Work work;
  /// GPUs in a collective's group; 0: not a collective, or the tensor-parallel group.
  int group_size = 0;
};

enum class UnitKind { kTransformerLayer, kLmHead };

/// One pipeline-partitionable unit (a Transformer layer, or the LM head). All quantities are
/// per GPU of the unit's tensor-parallel group and per microbatch unless stated.
struct LayerUnit {
  std::string name;  // "layer 0", "encoder layer 3", "decoder layer 0", "lm head"
  UnitKind kind = UnitKind::kTransformerLayer;
  std::vector<Op> forward;
  std::vector<Op> backward;   // in execution order (reverse of forward)
  std::vector<Op> recompute;  // forward of the Transformer layer again (empty unless recompute)
  /// Parameters held per GPU, excluding the padded-vocab × hidden matrices, which a stage
  /// counts once per matrix (a tied output layer shares the input embedding's).
  double parameters_per_gpu = 0.0;
  bool uses_input_embedding = false;  // token embedding lookup (first layer, first decoder)
  bool uses_output_layer = false;     // LM head projection
  /// Activation bytes stored from forward until backward, after the recompute policy.
  double stored_activation_bytes = 0.0;
  /// Extra bytes alive while a recomputed layer's backward runs (its full activations).
  double recompute_working_bytes = 0.0;
};

/// Builds every layer unit, the LM head last. Units of the same kind differ only in the ops the
/// embedding (first layer, first decoder layer) and encoder final norm add.
/// Precondition: validate_job(spec, config) is ok. O(num_layers).
std::vector<LayerUnit> layer_units(const ModelSpec& spec, const ParallelConfig& config);

/// One pipeline stage's work per microbatch (forward, backward, recompute) and per iteration.
struct StageWork {
  int stage = 0;
  int first_unit = 0;  // units [first_unit, end_unit)
  int end_unit = 0;
  std::vector<Op> forward;
  std::vector<Op> backward;   // in execution order
  std::vector<Op> recompute;  // run before backward when config.recompute
  /// Once per iteration: data-parallel gradient reduction (and parameter all-gather with the
  /// distributed optimizer), tied-embedding gradient all-reduce between the first and last
  /// stage, and the Adam step.
  std::vector<Op> per_iteration;
  double parameters_per_gpu = 0.0;  // including embedding matrices (a tied one once)
  double p2p_send_bytes = 0.0;      // activation sent to the next stage per microbatch
};

/// Concatenates the ops of the units in `stage` of `partition`.
/// Preconditions: validate_job ok, `units` = layer_units(spec, config), the partition covers
/// units.size() units, 0 <= stage < partition.num_stages().
StageWork build_stage_work(const ModelSpec& spec, const ParallelConfig& config,
                           const std::vector<LayerUnit>& units, const Partition& partition,
                           int stage);

/// The device work of the ops, in order (what device::estimate_work takes).
std::vector<device::Work> works_of(const std::vector<Op>& ops);

/// Sums over ops. O(ops).
double total_flops(const std::vector<Op>& ops);
double total_memory_bytes(const std::vector<Op>& ops);
double total_link_bytes(const std::vector<Op>& ops);

/// Forward FLOPs of each unit for one microbatch on one GPU: a FLOP-proportional cost vector
/// for min_imbalance_partition.
std::vector<double> unit_forward_flops(const std::vector<LayerUnit>& units);

}  // namespace powertrain::workload
