// RankTraceBuilder: the normalized trace written directly, as the reader would leave it.
#include "graph/trace_builder.h"

#include <algorithm>
#include <utility>

namespace powertrain::graph {

RankTraceBuilder::RankTraceBuilder(int rank, int world_size, std::string source) {
  trace_.rank = rank;
  trace_.world_size = world_size;
  trace_.source = std::move(source);
}

RankTraceBuilder& RankTraceBuilder::host_pid(std::int64_t pid) {
  pid_ = pid;
  return *this;
}

std::uint32_t RankTraceBuilder::intern(std::string_view name) {
  auto [it, inserted] =
      name_index_.try_emplace(std::string(name), static_cast<std::uint32_t>(trace_.names.size()));
  if (inserted) trace_.names.emplace_back(name);
  return it->second;
}

RankTraceBuilder& RankTraceBuilder::host(trace::EventKind kind, std::string_view name,
                                         std::int64_t start_ns, std::int64_t duration_ns,
                                         std::int64_t tid, std::int64_t correlation) {
  trace::TraceEvent e;
  e.kind = kind;
  e.name = intern(name);
  e.start_ns = start_ns;
  e.duration_ns = duration_ns;
  e.pid = pid_;
  e.tid = tid;
  e.correlation = correlation;
  trace_.events.push_back(e);
  return *this;
}

RankTraceBuilder& RankTraceBuilder::step(int n, std::int64_t start_ns, std::int64_t duration_ns,
                                         std::int64_t tid) {
  return host(trace::EventKind::kUserAnnotation, "ProfilerStep#" + std::to_string(n), start_ns,
              duration_ns, tid);
}

RankTraceBuilder& RankTraceBuilder::gpu(trace::EventKind kind, std::string_view name,
                                        std::int64_t start_ns, std::int64_t duration_ns,
                                        std::int64_t correlation, std::int64_t stream,
                                        std::int64_t device) {
  trace::TraceEvent e;
  e.kind = kind;
  e.name = intern(name);
  e.start_ns = start_ns;
  e.duration_ns = duration_ns;
  e.pid = device;
  e.tid = stream;
  e.correlation = correlation;
  trace_.events.push_back(e);
  return *this;
}

RankTraceBuilder& RankTraceBuilder::nccl_kernel(std::string_view name, std::int64_t start_ns,
                                                std::int64_t duration_ns, std::int64_t correlation,
                                                std::int64_t stream, std::string_view process_group,
                                                std::int64_t sequence, std::int64_t group_size) {
  gpu(trace::EventKind::kKernel, name, start_ns, duration_ns, correlation, stream);
  trace_.events.back().nccl = true;
  if (process_group.empty()) return *this;
  trace::CollectiveInfo info;
  info.name = "allreduce";
  info.process_group = std::string(process_group);
  info.sequence = sequence;
  info.group_size = group_size;
  return collective(std::move(info));
}

RankTraceBuilder& RankTraceBuilder::collective(trace::CollectiveInfo info) {
  trace::TraceEvent& e = trace_.events.back();
  e.nccl = true;
  e.collective = static_cast<std::int32_t>(trace_.collectives.size());
  trace_.collectives.push_back(std::move(info));
  return *this;
}

RankTraceBuilder& RankTraceBuilder::sync_record(trace::SyncKind kind, std::int64_t start_ns,
                                                std::int64_t duration_ns, std::int64_t correlation,
                                                std::int64_t stream, std::int64_t wait_on_stream,
                                                std::int64_t wait_on_event_correlation,
                                                std::int64_t device) {
  static constexpr std::string_view kNames[] = {"Event Record", "Stream Wait Event", "Event Sync",
                                                "Stream Sync", "Context Sync"};
  trace::TraceEvent e;
  e.kind = trace::EventKind::kCudaSync;
  e.name = intern(kNames[static_cast<int>(kind)]);
  e.start_ns = start_ns;
  e.duration_ns = duration_ns;
  e.pid = device;
  e.tid = stream;
  e.correlation = correlation;
  e.sync = kind;
  e.wait_on_stream = wait_on_stream;
  e.wait_on_event_correlation = wait_on_event_correlation;
  trace_.events.push_back(e);
  return *this;
}

trace::RankTrace RankTraceBuilder::build() {
  std::stable_sort(trace_.events.begin(), trace_.events.end(),
                   [](const trace::TraceEvent& a, const trace::TraceEvent& b) {
                     if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
                     if (a.duration_ns != b.duration_ns) return a.duration_ns > b.duration_ns;
                     return a.kind == trace::EventKind::kUserAnnotation &&
                            b.kind != trace::EventKind::kUserAnnotation;
                   });
  trace_.step_starts_ns.clear();
  trace_.step_ends_ns.clear();
  for (std::size_t i = 0; i < trace_.events.size(); ++i) {
    const trace::TraceEvent& e = trace_.events[i];
    if (e.collective >= 0) trace_.collectives[e.collective].event = static_cast<std::int32_t>(i);
    if (e.kind == trace::EventKind::kUserAnnotation &&
        trace_.names[e.name].rfind("ProfilerStep#", 0) == 0) {
      trace_.step_starts_ns.push_back(e.start_ns);
      trace_.step_ends_ns.push_back(e.start_ns + e.duration_ns);
    }
  }
  return std::move(trace_);
}

}  // namespace powertrain::graph
