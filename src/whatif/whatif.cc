#include "whatif/whatif.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string_view>

#include "sim/energy.h"

namespace powertrain::whatif {
namespace {

bool in_class(const graph::ExecutionGraph& graph, std::int32_t task, TaskClass task_class) {
  const graph::TaskKind kind = graph.kind[task];
  if (task_class == TaskClass::kAll) return true;
  if (task_class == TaskClass::kCpu) return !graph::is_gpu(kind);
  if (!graph::is_gpu(kind)) return false;
  const std::optional<sim::KernelClass> selected = kernel_class(task_class);
  return !selected ||
         sim::classify_kernel(graph.task_name(task), kind, graph.nccl[task] != 0) == *selected;
}

}  // namespace

std::optional<sim::KernelClass> kernel_class(TaskClass task_class) {
  switch (task_class) {
    case TaskClass::kMatmul:
    case TaskClass::kMemory:
    case TaskClass::kCollective:
      return static_cast<sim::KernelClass>(task_class);
    case TaskClass::kAll:
    case TaskClass::kGpu:
    case TaskClass::kCpu:
      return std::nullopt;
  }
  return std::nullopt;
}

core::Result<DurationScaling> parse_duration_scaling(const std::string& text) {
  constexpr const char* kKnown = "all, gpu, cpu, matmul, memory, collective";
  const auto eq = text.find('=');
  if (eq == std::string::npos)
    return core::Error{fmt::format("--scale '{}': expected CLASS=FACTOR ({})", text, kKnown)};
  const std::string name = text.substr(0, eq);
  DurationScaling scaling;
  struct Name {
    std::string_view name;
    TaskClass task_class;
  };
  static constexpr Name kNames[] = {
      {"all", TaskClass::kAll},
      {"gpu", TaskClass::kGpu},
      {"cpu", TaskClass::kCpu},
      {"matmul", TaskClass::kMatmul},
      {"gemm", TaskClass::kMatmul},
      {"memory", TaskClass::kMemory},
      {"collective", TaskClass::kCollective},
      {"nccl", TaskClass::kCollective},
  };
  const auto found = std::find_if(std::begin(kNames), std::end(kNames),
                                  [&](const Name& n) { return n.name == name; });
  if (found == std::end(kNames)) {
    return core::Error{
        fmt::format("--scale '{}': unknown class '{}' (known: {})", text, name, kKnown)};
  }
  scaling.task_class = found->task_class;
  const std::string number = text.substr(eq + 1);
  char* end = nullptr;
  const double factor = std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || !std::isfinite(factor) ||
      factor <= 0.0 || factor > 1e6)
    return core::Error{
        fmt::format("--scale '{}': factor must be a number in (0, 1e6], got '{}'", text, number)};
  scaling.factor = factor;
  return scaling;
}

std::int64_t scale_durations(graph::ExecutionGraph& graph, const DurationScaling& scaling) {
  std::int64_t changed = 0;
  auto scaled = [&](std::int64_t ns) {
    return static_cast<std::int64_t>(std::llround(static_cast<double>(ns) * scaling.factor));
  };
  for (std::int32_t task = 0; task < graph.task_count(); ++task) {
    if (!in_class(graph, task, scaling.task_class)) continue;
    graph.duration_ns[task] = scaled(graph.duration_ns[task]);
    ++changed;
  }
  if (scaling.task_class == TaskClass::kAll) {
    // Gaps between tasks are time too (host overhead, launch delays): scale them with the tasks.
    for (std::int64_t& lag : graph.edge_lag_ns) lag = scaled(lag);
    for (graph::RuntimeOp& op : graph.runtime_ops) {
      op.lag_ns = scaled(op.lag_ns);
      op.tail_ns = scaled(op.tail_ns);
    }
    // Step spans (ProfilerStep#N) are rebuilt around their leaves with these margins.
    for (graph::ParentSpan& parent : graph.parents) {
      parent.lead_ns = scaled(parent.lead_ns);
      parent.trail_ns = scaled(parent.trail_ns);
    }
    for (graph::RankInfo& rank : graph.ranks)
      rank.default_launch_lag_ns = scaled(rank.default_launch_lag_ns);
    // Tasks without dependencies start at their measured time; dilate those around the job's
    // first event too, or the offsets between ranks' and threads' first tasks would not scale.
    // The graph's input_* then describe the dilated reference timeline.
    if (graph.task_count() > 0) {
      const std::int64_t origin =
          *std::min_element(graph.input_start_ns.begin(), graph.input_start_ns.end());
      for (std::int32_t task = 0; task < graph.task_count(); ++task) {
        graph.input_start_ns[task] = origin + scaled(graph.input_start_ns[task] - origin);
        graph.input_duration_ns[task] = scaled(graph.input_duration_ns[task]);
      }
      for (graph::ParentSpan& parent : graph.parents) {
        parent.input_start_ns = origin + scaled(parent.input_start_ns - origin);
        parent.input_duration_ns = scaled(parent.input_duration_ns);
      }
    }
  }
  return changed;
}

}  // namespace powertrain::whatif
