// Job validation (Megatron's divisibility rules), vocabulary padding and per-stage work.
#include "workload/job.h"

#include <fmt/core.h>

#include <algorithm>
#include <cassert>

namespace powertrain::workload {

using core::Error;
using device::Precision;
using device::Work;
using device::WorkKind;

ParallelConfig make_parallel_config(const ModelSpec& spec) {
  ParallelConfig config;
  config.seq_len = spec.default_seq_len;
  return config;
}

int padded_vocab_size(const ModelSpec& spec, int tp) {
  const long long multiple = 128LL * tp;
  return static_cast<int>((spec.vocab_size + multiple - 1) / multiple * multiple);
}

double activation_element_bytes(Precision precision) {
  switch (precision) {
    case Precision::kFp32:
    case Precision::kTf32:
      return 4.0;
    case Precision::kBf16:
    case Precision::kFp16:
    case Precision::kFp8:
      return 2.0;
  }
  return 2.0;
}

double gemm_operand_bytes(Precision precision) {
  return precision == Precision::kFp8 ? 1.0 : activation_element_bytes(precision);
}

int num_layer_units(const ModelSpec& spec) { return spec.num_layers + 1; }

core::Status validate_job(const ModelSpec& spec, const ParallelConfig& c) {
  // Specs built in code (what-if edits) get the same checks as parsed ones.
  if (core::Status model = validate_model(spec, spec.name); !model) return model.error();
  struct Bounded {
    const char* name;
    int value;
    int max;
  };
  const Bounded bounded[] = {
      {"tp", c.tp, kMaxParallelDegree},
      {"pp", c.pp, kMaxParallelDegree},
      {"dp", c.dp, kMaxParallelDegree},
      {"cp", c.cp, kMaxParallelDegree},
      {"microbatch_size", c.microbatch_size, 1 << 16},
      {"seq_len", c.seq_len, kMaxSeqLen},
      {"num_microbatches", c.num_microbatches, kMaxMicrobatches},
  };
  for (const Bounded& b : bounded) {
    if (b.value < 1 || b.value > b.max) {
      return Error{fmt::format("job: {} must be between 1 and {}, got {}", b.name, b.max, b.value)};
    }
  }
  if (spec.num_heads % c.tp != 0) {
    return Error{
        fmt::format("job: tp = {} must divide num_heads = {} of {} (Megatron gives each "
                    "TP rank whole attention heads)",
                    c.tp, spec.num_heads, spec.name)};
  }
  if (spec.num_kv_heads % c.tp != 0) {
    return Error{
        fmt::format("job: tp = {} must divide num_kv_heads = {} of {} (Megatron gives "
                    "each TP rank whole key/value groups)",
                    c.tp, spec.num_kv_heads, spec.name)};
  }
  if (spec.ffn_hidden_size % c.tp != 0) {
    return Error{
        fmt::format("job: tp = {} must divide ffn_hidden_size = {} of {} (the MLP is "
                    "split by columns across TP ranks)",
                    c.tp, spec.ffn_hidden_size, spec.name)};
  }
  if (static_cast<long long>(c.dp) * c.cp > kMaxParallelDegree) {
    return Error{fmt::format("job: dp x cp = {} x {} exceeds {} (the gradient-reduction group)",
                             c.dp, c.cp, kMaxParallelDegree)};
  }
  if (c.cp > 1 && c.seq_len % (2 * c.cp) != 0) {
    return Error{
        fmt::format("job: seq_len = {} must be a multiple of 2 x cp = {} with context "
                    "parallelism (each rank holds two of 2 x cp balanced causal chunks)",
                    c.seq_len, 2 * c.cp)};
  }
  if (c.sequence_parallel && c.cp > 1 && (c.seq_len / c.cp) % c.tp != 0) {
    return Error{
        fmt::format("job: seq_len / cp = {} must be a multiple of tp = {} with sequence "
                    "parallelism",
                    c.seq_len / c.cp, c.tp)};
  }
  if (c.sequence_parallel && c.seq_len % c.tp != 0) {
    return Error{
        fmt::format("job: seq_len = {} must be a multiple of tp = {} with sequence "
                    "parallelism (each rank holds seq_len / tp tokens)",
                    c.seq_len, c.tp)};
  }
  if (spec.position == PositionEncoding::kLearned && c.seq_len > spec.default_seq_len) {
    return Error{fmt::format("job: seq_len = {} exceeds the {} learned positions of {}", c.seq_len,
                             spec.default_seq_len, spec.name)};
  }
  if (c.pp > num_layer_units(spec)) {
    return Error{
        fmt::format("job: pp = {} exceeds the {} layer units of {} ({} Transformer "
                    "layers + LM head)",
                    c.pp, num_layer_units(spec), spec.name, spec.num_layers)};
  }
  return core::Ok{};
}

std::vector<device::Work> works_of(const std::vector<Op>& ops) {
  std::vector<device::Work> works;
  works.reserve(ops.size());
  for (const Op& op : ops) works.push_back(op.work);
  return works;
}

double total_flops(const std::vector<Op>& ops) {
  double sum = 0.0;
  for (const Op& op : ops) sum += op.work.flops;
  return sum;
}

double total_memory_bytes(const std::vector<Op>& ops) {
  double sum = 0.0;
  for (const Op& op : ops) sum += op.work.memory_bytes;
  return sum;
}

double total_link_bytes(const std::vector<Op>& ops) {
  double sum = 0.0;
  for (const Op& op : ops) sum += op.work.link_bytes;
  return sum;
}

std::vector<double> unit_forward_flops(const std::vector<LayerUnit>& units) {
  std::vector<double> flops;
  flops.reserve(units.size());
  for (const LayerUnit& unit : units) flops.push_back(total_flops(unit.forward));
  return flops;
}

namespace {

void append(std::vector<Op>& to, const std::vector<Op>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

Op ring_all_reduce(std::string name, double size_bytes, int group, Precision precision) {
  Work w;
  w.kind = WorkKind::kCollective;
  w.precision = precision;
  w.memory_bytes = 2.0 * size_bytes;
  w.link_bytes = 2.0 * (group - 1) / group * size_bytes;
  return {std::move(name), w};
}

Op ring_gather_or_scatter(std::string name, double size_bytes, int group, Precision precision) {
  Work w;
  w.kind = WorkKind::kCollective;
  w.precision = precision;
  w.memory_bytes = size_bytes + size_bytes / group;
  w.link_bytes = double(group - 1) / group * size_bytes;
  return {std::move(name), w};
}

}  // namespace

StageWork build_stage_work(const ModelSpec& spec, const ParallelConfig& config,
                           const std::vector<LayerUnit>& units, const Partition& partition,
                           int stage) {
  assert(partition.num_units() == static_cast<int>(units.size()));
  assert(stage >= 0 && stage < partition.num_stages());
  StageWork work;
  work.stage = stage;
  work.first_unit = partition.boundaries[stage];
  work.end_unit = partition.boundaries[stage + 1];

  bool input_embedding = false;
  bool output_layer = false;
  for (int u = work.first_unit; u < work.end_unit; ++u) {
    const LayerUnit& unit = units[u];
    append(work.forward, unit.forward);
    append(work.recompute, unit.recompute);
    work.parameters_per_gpu += unit.parameters_per_gpu;
    input_embedding = input_embedding || unit.uses_input_embedding;
    output_layer = output_layer || unit.uses_output_layer;
  }
  // Backward runs the units last to first.
  for (int u = work.end_unit; u-- > work.first_unit;) append(work.backward, units[u].backward);

  const double tp = config.tp;
  const double matrix = double(padded_vocab_size(spec, config.tp)) * spec.hidden_size / tp;
  // A tied output layer reuses the input embedding when both sit on this stage.
  const int matrices = (input_embedding ? 1 : 0) +
                       (output_layer && !(spec.tied_embeddings && input_embedding) ? 1 : 0);
  work.parameters_per_gpu += matrices * matrix;

  const Precision act = config.precision == Precision::kFp8 ? Precision::kBf16 : config.precision;
  const bool sp = config.sequence_parallel && config.tp > 1;
  const double hidden_bytes = double(config.microbatch_size) * config.seq_len * spec.hidden_size *
                              activation_element_bytes(act) / (sp ? tp : 1.0) / config.cp;
  if (stage + 1 < partition.num_stages()) {
    // Encoder-decoder stages past the encoder also forward the encoder output.
    const bool two = spec.architecture == Architecture::kEncoderDecoder &&
                     work.end_unit > spec.num_encoder_layers;
    work.p2p_send_bytes = hidden_bytes * (two ? 2.0 : 1.0);
  }

  // Per iteration. Megatron reduces bf16/fp16 jobs' gradients in fp32 (main grads).
  const bool mixed = activation_element_bytes(config.precision) == 2.0;
  const double grad_bytes = 4.0 * work.parameters_per_gpu;
  // Context-parallel ranks hold the same weights: gradients are reduced over dp × cp (Megatron's
  // data-parallel-with-context-parallel group).
  const int replicas = config.dp * config.cp;
  if (replicas > 1) {
    if (config.distributed_optimizer) {
      work.per_iteration.push_back(
          ring_gather_or_scatter("grad_reduce_scatter", grad_bytes, replicas, Precision::kFp32));
      work.per_iteration.push_back(ring_gather_or_scatter(
          "param_all_gather", work.parameters_per_gpu * (mixed ? 2.0 : 4.0), replicas, act));
    } else {
      work.per_iteration.push_back(
          ring_all_reduce("grad_all_reduce", grad_bytes, replicas, Precision::kFp32));
    }
  }
  if (spec.tied_embeddings && (input_embedding || output_layer)) {
    // Every stage holding a copy of the tied matrix joins one all-reduce of its gradient.
    int holders = 0;
    for (int s = 0; s < partition.num_stages(); ++s) {
      bool holds = false;
      for (int u = partition.boundaries[s]; u < partition.boundaries[s + 1]; ++u) {
        holds = holds || units[u].uses_input_embedding || units[u].uses_output_layer;
      }
      holders += holds ? 1 : 0;
    }
    if (holders > 1) {
      work.per_iteration.push_back(
          ring_all_reduce("embedding_grad_all_reduce", 4.0 * matrix, holders, Precision::kFp32));
    }
  }
  // Adam: read the fp32 grad, read and write master weights (mixed precision), m and v, write
  // the working copy: 30 bytes per parameter (28 in fp32, where the weights are the master).
  Work step;
  step.kind = WorkKind::kMemoryBound;
  step.precision = Precision::kFp32;
  step.flops = 0.0;
  step.memory_bytes = work.parameters_per_gpu * (mixed ? 30.0 : 28.0) /
                      (config.distributed_optimizer ? replicas : 1);
  work.per_iteration.push_back({"optimizer_step", step});
  return work;
}

}  // namespace powertrain::workload
