// Pipeline schedules (GPipe, 1F1B, interleaved 1F1B, 1F1B with early recomputation) as
// OperationDags.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "pipeline/operation_dag.h"

namespace powertrain::pipeline {

enum class ScheduleKind { kGPipe, kOneFOneB, kInterleavedOneFOneB, kOneFOneBEarlyRecompute };

/// CLI names: "gpipe", "1f1b", "interleaved-1f1b", "1f1b-recompute".
std::string_view schedule_name(ScheduleKind kind);
std::optional<ScheduleKind> parse_schedule(std::string_view name);
/// Comma-separated list of the names above, for error messages.
std::string known_schedules();

/// What to build. Times of constant operations are in seconds; 0 means "no such node".
struct PipelineSpec {
  ScheduleKind schedule = ScheduleKind::kOneFOneB;
  int num_gpus = 1;  // pipeline stages (GPUs in one pipeline)
  int num_microbatches = 1;
  int chunks_per_gpu = 1;              // v, only for interleaved 1F1B
  double data_loading_time_s = 0.0;    // one node per GPU before its first instruction
  double optimizer_step_time_s = 0.0;  // one node per GPU after its last instruction
  double p2p_time_s = 0.0;             // one node on every inter-GPU activation/gradient transfer

  /// Number of profile stages the schedule needs (num_gpus × chunks_per_gpu).
  int num_profile_stages() const;
};

/// One entry of a GPU's execution order.
struct ScheduledInstruction {
  InstructionKind kind;
  int stage;  // profile stage (model chunk id for interleaved)
  int microbatch;
};

/// The per-GPU instruction order of a schedule (no constant nodes).
/// Errors: non-positive sizes, interleaved with microbatches not a multiple of the GPUs or v < 2.
core::Result<std::vector<std::vector<ScheduledInstruction>>> schedule_order(
    const PipelineSpec& spec);

/// Builds the DAG: GPU order edges, forward activations to the next stage, gradients to the
/// previous stage, and the last stage's forward feeding its backward (through recompute if any).
/// Limits: at most 1e6 operations.
core::Result<OperationDag> build_pipeline_dag(const PipelineSpec& spec);

}  // namespace powertrain::pipeline
