// Schedules follow DeepSpeed/Megatron: 1F1B warms up with (stages - rank - 1) forwards;
// interleaved 1F1B follows Megatron's virtual-pipeline order.
#include "pipeline/schedule.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <tuple>

namespace powertrain::pipeline {
namespace {

constexpr long long kMaxOperations = 1'000'000;

std::vector<ScheduledInstruction> one_f_one_b_order(int rank, int num_gpus, int num_microbatches,
                                                    bool recompute) {
  std::vector<ScheduledInstruction> order;
  const int warmup = std::min(num_gpus - rank - 1, num_microbatches);
  auto add_backward = [&](int m) {
    if (recompute) order.push_back({InstructionKind::kRecompute, rank, m});
    order.push_back({InstructionKind::kBackward, rank, m});
  };
  int next_forward = 0;
  for (; next_forward < warmup; ++next_forward) {
    order.push_back({InstructionKind::kForward, rank, next_forward});
  }
  int next_backward = 0;
  while (next_forward < num_microbatches) {
    order.push_back({InstructionKind::kForward, rank, next_forward++});
    add_backward(next_backward++);
  }
  while (next_backward < num_microbatches) add_backward(next_backward++);
  return order;
}

std::vector<ScheduledInstruction> interleaved_order(int rank, int num_gpus, int num_microbatches,
                                                    int chunks) {
  const int total = num_microbatches * chunks;
  const int group = num_gpus * chunks;
  auto chunk_of = [&](int k, bool forward) {
    const int chunk = (k % group) / num_gpus;
    return forward ? chunk : chunks - 1 - chunk;
  };
  auto microbatch_of = [&](int k) { return (k / group) * num_gpus + k % num_gpus; };
  int warmup = (num_gpus - rank - 1) * 2 + (chunks - 1) * num_gpus;
  if (num_microbatches == num_gpus) warmup = total;  // Megatron: all warm-up in this case
  warmup = std::min(warmup, total);
  std::vector<ScheduledInstruction> order;
  auto forward = [&](int k) {
    order.push_back(
        {InstructionKind::kForward, chunk_of(k, true) * num_gpus + rank, microbatch_of(k)});
  };
  auto backward = [&](int k) {
    order.push_back(
        {InstructionKind::kBackward, chunk_of(k, false) * num_gpus + rank, microbatch_of(k)});
  };
  for (int k = 0; k < warmup; ++k) forward(k);
  const int steady = total - warmup;
  for (int i = 0; i < steady; ++i) {
    forward(warmup + i);
    backward(i);
  }
  for (int k = steady; k < total; ++k) backward(k);
  return order;
}

}  // namespace

std::string_view schedule_name(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::kGPipe:
      return "gpipe";
    case ScheduleKind::kOneFOneB:
      return "1f1b";
    case ScheduleKind::kInterleavedOneFOneB:
      return "interleaved-1f1b";
    case ScheduleKind::kOneFOneBEarlyRecompute:
      return "1f1b-recompute";
  }
  return "?";
}

std::optional<ScheduleKind> parse_schedule(std::string_view name) {
  for (ScheduleKind kind :
       {ScheduleKind::kGPipe, ScheduleKind::kOneFOneB, ScheduleKind::kInterleavedOneFOneB,
        ScheduleKind::kOneFOneBEarlyRecompute}) {
    if (schedule_name(kind) == name) return kind;
  }
  return std::nullopt;
}

std::string known_schedules() { return "gpipe, 1f1b, interleaved-1f1b, 1f1b-recompute"; }

int PipelineSpec::num_profile_stages() const {
  return schedule == ScheduleKind::kInterleavedOneFOneB ? num_gpus * chunks_per_gpu : num_gpus;
}

core::Result<std::vector<std::vector<ScheduledInstruction>>> schedule_order(
    const PipelineSpec& spec) {
  if (spec.num_gpus < 1)
    return core::Error{fmt::format("--pp: expected at least 1, got {}", spec.num_gpus)};
  if (spec.num_microbatches < 1) {
    return core::Error{
        fmt::format("--microbatches: expected at least 1, got {}", spec.num_microbatches)};
  }
  const bool interleaved = spec.schedule == ScheduleKind::kInterleavedOneFOneB;
  if (interleaved) {
    if (spec.chunks_per_gpu < 2) {
      return core::Error{
          fmt::format("--chunks: interleaved 1F1B needs at least 2 model chunks per GPU, got {}",
                      spec.chunks_per_gpu)};
    }
    if (spec.num_microbatches % spec.num_gpus != 0) {
      return core::Error{
          fmt::format("--microbatches: interleaved 1F1B needs a multiple of the {} stages, got {}",
                      spec.num_gpus, spec.num_microbatches)};
    }
  } else if (spec.chunks_per_gpu != 1) {
    return core::Error{
        fmt::format("--chunks: only interleaved-1f1b uses model chunks, got {} with {}",
                    spec.chunks_per_gpu, schedule_name(spec.schedule))};
  }
  const long long per_gpu = 3LL * spec.num_microbatches * (interleaved ? spec.chunks_per_gpu : 1);
  if (per_gpu * spec.num_gpus > kMaxOperations) {
    return core::Error{
        fmt::format("pipeline too large: {} stages x {} microbatches exceeds {} operations",
                    spec.num_gpus, spec.num_microbatches, kMaxOperations)};
  }
  std::vector<std::vector<ScheduledInstruction>> orders(spec.num_gpus);
  for (int rank = 0; rank < spec.num_gpus; ++rank) {
    switch (spec.schedule) {
      case ScheduleKind::kGPipe: {
        for (int m = 0; m < spec.num_microbatches; ++m) {
          orders[rank].push_back({InstructionKind::kForward, rank, m});
        }
        for (int m = spec.num_microbatches - 1; m >= 0; --m) {
          orders[rank].push_back({InstructionKind::kBackward, rank, m});
        }
        break;
      }
      case ScheduleKind::kOneFOneB:
        orders[rank] = one_f_one_b_order(rank, spec.num_gpus, spec.num_microbatches, false);
        break;
      case ScheduleKind::kOneFOneBEarlyRecompute:
        orders[rank] = one_f_one_b_order(rank, spec.num_gpus, spec.num_microbatches, true);
        break;
      case ScheduleKind::kInterleavedOneFOneB:
        orders[rank] =
            interleaved_order(rank, spec.num_gpus, spec.num_microbatches, spec.chunks_per_gpu);
        break;
    }
  }
  return orders;
}

core::Result<OperationDag> build_pipeline_dag(const PipelineSpec& spec) {
  auto orders = schedule_order(spec);
  if (!orders) return orders.error();
  for (double t : {spec.data_loading_time_s, spec.optimizer_step_time_s, spec.p2p_time_s}) {
    if (!(t >= 0.0) || t > 1e6) {
      return core::Error{
          fmt::format("constant operation time: expected 0 to 1e6 seconds, got {}", t)};
    }
  }
  OperationDag dag;
  dag.num_gpus = spec.num_gpus;
  dag.gpu_order.resize(spec.num_gpus);
  const int num_stages = spec.num_profile_stages();
  std::map<std::tuple<InstructionKind, int, int>, int> index;  // (kind, stage, microbatch) -> id

  for (int rank = 0; rank < spec.num_gpus; ++rank) {
    auto append = [&](Operation op) {
      op.gpu = rank;
      op.slot = static_cast<int>(dag.gpu_order[rank].size());
      const int id = dag.add_operation(op);
      if (!dag.gpu_order[rank].empty()) dag.add_edge(dag.gpu_order[rank].back(), id);
      dag.gpu_order[rank].push_back(id);
      return id;
    };
    if (spec.data_loading_time_s > 0.0) {
      append({InstructionKind::kDataLoading, rank, rank, 0, -1, spec.data_loading_time_s});
    }
    for (const ScheduledInstruction& instruction : (*orders)[rank]) {
      const int id =
          append({instruction.kind, instruction.stage, rank, instruction.microbatch, -1, 0.0});
      index[{instruction.kind, instruction.stage, instruction.microbatch}] = id;
    }
    if (spec.optimizer_step_time_s > 0.0) {
      append({InstructionKind::kOptimizerStep, rank, rank, 0, -1, spec.optimizer_step_time_s});
    }
  }

  // Connects two instructions, through a link-transfer node when they run on different GPUs.
  auto connect = [&](int from, int to, int stage, int microbatch) {
    if (spec.p2p_time_s > 0.0 && dag.operations[from].gpu != dag.operations[to].gpu) {
      const int link =
          dag.add_operation({InstructionKind::kP2P, stage, -1, microbatch, -1, spec.p2p_time_s});
      dag.add_edge(from, link);
      dag.add_edge(link, to);
    } else {
      dag.add_edge(from, to);
    }
  };
  const bool recompute = spec.schedule == ScheduleKind::kOneFOneBEarlyRecompute;
  for (int m = 0; m < spec.num_microbatches; ++m) {
    for (int g = 0; g + 1 < num_stages; ++g) {
      connect(index.at({InstructionKind::kForward, g, m}),
              index.at({InstructionKind::kForward, g + 1, m}), g, m);
      connect(index.at({InstructionKind::kBackward, g + 1, m}),
              index.at({InstructionKind::kBackward, g, m}), g + 1, m);
    }
    const int last = num_stages - 1;
    const int last_forward = index.at({InstructionKind::kForward, last, m});
    dag.add_edge(last_forward, recompute ? index.at({InstructionKind::kRecompute, last, m})
                                         : index.at({InstructionKind::kBackward, last, m}));
  }
  if (!dag.finalize()) return core::Error{"internal: pipeline schedule produced a cycle"};
  return dag;
}

}  // namespace powertrain::pipeline
