// Chrome trace writer of a replay. Written by hand into one buffer: traces have millions of
// events and a DOM would triple the memory.
#include "sim/replay_trace.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <string_view>

#include "core/atomic_output.h"

namespace powertrain::sim {
namespace {

constexpr std::int64_t kUnset = std::numeric_limits<std::int64_t>::min();

void append_escaped(fmt::memory_buffer& out, std::string_view text) {
  for (char c : text) {
    switch (c) {
      case '"':
        out.append(std::string_view("\\\""));
        break;
      case '\\':
        out.append(std::string_view("\\\\"));
        break;
      case '\n':
        out.append(std::string_view("\\n"));
        break;
      case '\t':
        out.append(std::string_view("\\t"));
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out.push_back(c);
        }
    }
  }
}

// ns → µs with three decimals, exact (no floating point).
void append_us(fmt::memory_buffer& out, std::int64_t ns) {
  if (ns < 0) {
    out.push_back('-');
    ns = -ns;
  }
  fmt::format_to(std::back_inserter(out), "{}.{:03}", ns / 1000, ns % 1000);
}

std::string_view category_of(graph::TaskKind kind, bool nccl) {
  switch (kind) {
    case graph::TaskKind::kCpu:
      return "cpu";
    case graph::TaskKind::kKernel:
      return nccl ? "kernel,nccl" : "kernel";
    case graph::TaskKind::kMemcpy:
      return "gpu_memcpy";
    case graph::TaskKind::kMemset:
      return "gpu_memset";
  }
  return "?";
}

std::string_view category_of(trace::EventKind kind) {
  switch (kind) {
    case trace::EventKind::kCpuOp:
      return "cpu_op";
    case trace::EventKind::kUserAnnotation:
      return "user_annotation";
    case trace::EventKind::kPythonFunction:
      return "python_function";
    case trace::EventKind::kCudaRuntime:
      return "cuda_runtime";
    case trace::EventKind::kCudaDriver:
      return "cuda_driver";
    default:
      return "other";
  }
}

}  // namespace

std::string replay_chrome_trace(const graph::ExecutionGraph& graph, const ReplayResult& replay,
                                const ChromeTraceOptions& options) {
  std::int64_t origin = std::numeric_limits<std::int64_t>::max();
  for (std::int32_t v = 0; v < graph.task_count(); ++v) {
    if (replay.start_ns[v] != kUnset) origin = std::min(origin, replay.start_ns[v]);
  }
  if (options.include_parents) {
    for (const graph::ParentSpan& span : graph.parents) {
      if (replay.start_ns[span.first_leaf] == kUnset) continue;
      origin = std::min(origin, replay.start_ns[span.first_leaf] - span.lead_ns);
    }
  }
  if (origin == std::numeric_limits<std::int64_t>::max()) origin = 0;

  fmt::memory_buffer out;
  out.reserve(static_cast<std::size_t>(graph.task_count()) * 120 + 4096);
  fmt::format_to(std::back_inserter(out),
                 "{{\"displayTimeUnit\":\"ms\",\"otherData\":{{\"generator\":\"powertrain replay\","
                 "\"time_origin_ns\":{}}},\"traceEvents\":[\n",
                 origin);
  bool first = true;
  const auto separator = [&] {
    if (!first) out.append(std::string_view(",\n"));
    first = false;
  };
  for (const graph::RankInfo& rank : graph.ranks) {
    separator();
    fmt::format_to(
        std::back_inserter(out),
        "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"args\":{{\"name\":\"rank {} "
        "(",
        rank.rank, rank.rank);
    append_escaped(out, options.label);
    out.append(std::string_view(")\"}},\n"));
    fmt::format_to(std::back_inserter(out),
                   "{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{},\"args\":{{\"sort_"
                   "index\":{}}}}}",
                   rank.rank, rank.rank);
  }
  for (std::size_t p = 0; p < graph.processors.size(); ++p) {
    const graph::Processor& proc = graph.processors[p];
    const int pid = graph.ranks[proc.rank_index].rank;
    separator();
    if (proc.kind == graph::ProcessorKind::kCpuThread) {
      fmt::format_to(std::back_inserter(out),
                     "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{"
                     "\"name\":\"CPU thread {}\"}}}}",
                     pid, p, proc.tid);
    } else {
      fmt::format_to(std::back_inserter(out),
                     "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{"
                     "\"name\":\"GPU {} stream {}\"}}}}",
                     pid, p, proc.pid, proc.tid);
    }
    separator();
    // Host threads above GPU streams.
    const std::size_t sort = (proc.kind == graph::ProcessorKind::kCpuThread ? 0 : 1u << 20) + p;
    fmt::format_to(std::back_inserter(out),
                   "{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{},\"tid\":{},\"args\":{{"
                   "\"sort_index\":{}}}}}",
                   pid, p, sort);
  }
  // One complete event; `task` ≥ 0 adds its index and measured start as args.
  const auto event = [&](std::string_view name, std::string_view category, std::int32_t processor,
                         std::int64_t start, std::int64_t end, std::int32_t task) {
    separator();
    out.append(std::string_view("{\"ph\":\"X\",\"name\":\""));
    append_escaped(out, name);
    fmt::format_to(std::back_inserter(out),
                   "\",\"cat\":\"{}\",\"pid\":{},\"tid\":{},\"ts\":", category,
                   graph.ranks[graph.processors[processor].rank_index].rank, processor);
    append_us(out, start - origin);
    out.append(std::string_view(",\"dur\":"));
    append_us(out, std::max<std::int64_t>(0, end - start));
    if (task >= 0) {
      fmt::format_to(std::back_inserter(out), ",\"args\":{{\"task\":{},\"measured_ts_ns\":{}}}",
                     task, graph.input_start_ns[task]);
    }
    out.push_back('}');
  };
  if (options.include_parents) {
    for (const graph::ParentSpan& span : graph.parents) {
      if (replay.start_ns[span.first_leaf] == kUnset || replay.end_ns[span.last_leaf] == kUnset) {
        continue;
      }
      const graph::RankInfo& rank = graph.ranks[graph.processors[span.processor].rank_index];
      event(rank.names[span.name], category_of(span.kind), span.processor,
            replay.start_ns[span.first_leaf] - span.lead_ns,
            replay.end_ns[span.last_leaf] + span.trail_ns, -1);
    }
  }
  for (std::int32_t v = 0; v < graph.task_count(); ++v) {
    if (replay.start_ns[v] == kUnset || replay.end_ns[v] == kUnset) continue;
    event(graph.task_name(v), category_of(graph.kind[v], graph.nccl[v] != 0), graph.processor[v],
          replay.start_ns[v], replay.end_ns[v], v);
  }
  out.append(std::string_view("\n]}\n"));
  return fmt::to_string(out);
}

core::Status write_replay_chrome_trace(const std::filesystem::path& path,
                                       const graph::ExecutionGraph& graph,
                                       const ReplayResult& replay,
                                       const ChromeTraceOptions& options) {
  return core::write_owned_file_atomically(path, replay_chrome_trace(graph, replay, options));
}

}  // namespace powertrain::sim
