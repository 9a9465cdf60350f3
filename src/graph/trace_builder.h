// Builds a trace::RankTrace by hand (tests, synthetic jobs, what-if fixtures, the emulator's
// timeline) without a Kineto file: events are added in any order; build() interns names, sorts
// events the way the reader does and fills the ProfilerStep lists.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "trace/trace_events.h"

namespace powertrain::graph {

class RankTraceBuilder {
 public:
  explicit RankTraceBuilder(int rank = 0, int world_size = 1, std::string source = "hand-built");

  /// Host process id of the host events added afterwards (default 100).
  RankTraceBuilder& host_pid(std::int64_t pid);

  /// A host event on thread `tid` (start and duration in ns).
  RankTraceBuilder& host(trace::EventKind kind, std::string_view name, std::int64_t start_ns,
                         std::int64_t duration_ns, std::int64_t tid = 1,
                         std::int64_t correlation = -1);
  RankTraceBuilder& op(std::string_view name, std::int64_t start_ns, std::int64_t duration_ns,
                       std::int64_t tid = 1) {
    return host(trace::EventKind::kCpuOp, name, start_ns, duration_ns, tid);
  }
  RankTraceBuilder& runtime(std::string_view name, std::int64_t start_ns, std::int64_t duration_ns,
                            std::int64_t correlation, std::int64_t tid = 1) {
    return host(trace::EventKind::kCudaRuntime, name, start_ns, duration_ns, tid, correlation);
  }
  /// "ProfilerStep#n" annotation.
  RankTraceBuilder& step(int n, std::int64_t start_ns, std::int64_t duration_ns,
                         std::int64_t tid = 1);

  /// GPU work on (device, stream).
  RankTraceBuilder& gpu(trace::EventKind kind, std::string_view name, std::int64_t start_ns,
                        std::int64_t duration_ns, std::int64_t correlation, std::int64_t stream = 7,
                        std::int64_t device = 0);
  RankTraceBuilder& kernel(std::string_view name, std::int64_t start_ns, std::int64_t duration_ns,
                           std::int64_t correlation, std::int64_t stream = 7) {
    return gpu(trace::EventKind::kKernel, name, start_ns, duration_ns, correlation, stream);
  }
  /// An NCCL kernel; with a non-empty `process_group` it gets CollectiveInfo metadata.
  RankTraceBuilder& nccl_kernel(std::string_view name, std::int64_t start_ns,
                                std::int64_t duration_ns, std::int64_t correlation,
                                std::int64_t stream, std::string_view process_group = {},
                                std::int64_t sequence = -1, std::int64_t group_size = -1);

  /// Attaches `info` to the last event added and marks it as NCCL work; build() sets `info.event`.
  RankTraceBuilder& collective(trace::CollectiveInfo info);

  /// A cuda_sync record for the call with `correlation`, on (device, `stream`). SyncKind::kNone
  /// gives an "Event Record" record (the stream a cudaEventRecord captures).
  RankTraceBuilder& sync_record(trace::SyncKind kind, std::int64_t start_ns,
                                std::int64_t duration_ns, std::int64_t correlation,
                                std::int64_t stream, std::int64_t wait_on_stream = -1,
                                std::int64_t wait_on_event_correlation = -1,
                                std::int64_t device = 0);

  /// The last event added (to set fields such as cuda_event).
  trace::TraceEvent& last() { return trace_.events.back(); }

  /// Sorts by (start, −duration), user annotations before other events with the same start and
  /// duration (so they enclose them), points collectives at their events and fills the step lists.
  trace::RankTrace build();

 private:
  std::uint32_t intern(std::string_view name);

  trace::RankTrace trace_;
  std::unordered_map<std::string, std::uint32_t> name_index_;
  std::int64_t pid_ = 100;
};

}  // namespace powertrain::graph
