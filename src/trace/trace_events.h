// A rank's PyTorch Kineto trace, normalized: every duration event with integer nanosecond times,
// integer ids and the links the execution graph needs. The reader (kineto_reader.h) fills it; the
// graph builder and simulator only read it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace powertrain::trace {

enum class EventKind : std::uint8_t {
  kCpuOp,              // cpu_op (and 2021 "Operator")
  kUserAnnotation,     // user_annotation (incl. ProfilerStep#N, nccl:* annotations)
  kPythonFunction,     // python_function
  kCudaRuntime,        // cuda_runtime (and "Runtime")
  kCudaDriver,         // cuda_driver
  kKernel,             // kernel on a GPU stream
  kGpuMemcpy,          // gpu_memcpy
  kGpuMemset,          // gpu_memset
  kGpuUserAnnotation,  // gpu_user_annotation (spans on a GPU stream; not work)
  kCudaSync,           // cuda_sync records (stream waits, event/stream/context syncs)
  kOther,              // overhead, cuda_event, Trace, ... (kept for completeness, not replayed)
};

/// True for events that occupy a GPU stream (kernel, memcpy, memset).
inline bool is_gpu_work(EventKind kind) {
  return kind == EventKind::kKernel || kind == EventKind::kGpuMemcpy ||
         kind == EventKind::kGpuMemset;
}

enum class SyncKind : std::uint8_t {
  kNone,
  kStreamWaitEvent,  // a stream waits for an event recorded on another stream
  kEventSync,        // the host waits for an event
  kStreamSync,       // the host waits for a stream
  kContextSync,      // the host waits for the whole device
};

/// Collective metadata from `record_param_comms` ops or NCCL kernels (when present).
struct CollectiveInfo {
  std::string name;                 // "allreduce", "all_to_all", "allgather", ... (lower case)
  std::int64_t in_elements = -1;    // In msg nelems
  std::int64_t out_elements = -1;   // Out msg nelems
  std::int64_t element_bytes = -1;  // from dtype, when known
  std::int64_t group_size = -1;
  std::string process_group;   // Process Group Name (or description), empty if absent
  std::int64_t sequence = -1;  // Seq, when present
  // Added by the reader (kineto_reader.h):
  std::int32_t event = -1;  // index into RankTrace::events of the event this entry belongs to
  std::string process_group_description;          // Process Group Description, empty if absent
  std::vector<std::int64_t> process_group_ranks;  // Process Group Ranks, empty if absent
};

// Fields ordered so that the one-byte ones share the first word with the name: 88 bytes instead
// of the 96 that declaration order padded to (a 1 GB trace holds ~3 M of these; every byte is
// written once by the reader and read by each graph-building pass).
struct TraceEvent {
  EventKind kind = EventKind::kOther;
  SyncKind sync = SyncKind::kNone;  // cuda_sync and cudaEventRecord/cudaStreamWaitEvent details
  bool nccl = false;                // NCCL kernel or nccl:* / record_param_comms op
  std::uint32_t name = 0;           // index into RankTrace::names
  std::int64_t start_ns = 0;        // absolute (epoch-based) nanoseconds
  std::int64_t duration_ns = 0;
  // Host events: pid/tid of the thread. GPU events: pid = device, tid = stream.
  std::int64_t pid = 0;
  std::int64_t tid = 0;
  std::int64_t correlation = -1;  // launch ↔ GPU work link (args.correlation / ac2g flow id)
  std::int64_t external_id = -1;  // op ↔ runtime link (args."External id")
  std::int64_t wait_on_stream = -1;
  std::int64_t wait_on_event_correlation = -1;  // wait_on_cuda_event_record_corr_id
  std::int64_t cuda_event = -1;                 // args."cuda_event" id on record/wait calls
  std::int32_t collective = -1;                 // index into RankTrace::collectives, or -1
};
static_assert(sizeof(TraceEvent) == 88, "TraceEvent grew: keep the small fields together");

/// A warning that did not stop reading, counted by kind.
struct TraceWarning {
  std::string kind;     // e.g. "dangling correlation", "unknown category"
  std::string example;  // one example, e.g. "correlation 123 on kernel 'foo' has no launch"
  std::int64_t count = 0;
};

/// Ids given to string pids/tids: string_id(i) = -2^40 - i, far below any numeric pid/tid Kineto
/// writes (those fit in 32 bits, possibly negative), so they never collide.
inline constexpr std::int64_t kFirstStringId = -(std::int64_t{1} << 40);
inline std::int64_t string_id(std::size_t index) {
  return kFirstStringId - static_cast<std::int64_t>(index);
}

struct RankTrace {
  std::string source;  // file name
  int rank = 0;        // distributedInfo.rank, or the file's position when absent
  int world_size = 1;
  std::vector<std::string> names;  // interned event names
  std::vector<TraceEvent> events;  // duration events, sorted by (start_ns, -duration_ns)
  std::vector<CollectiveInfo> collectives;
  std::vector<std::int64_t> step_starts_ns;  // ProfilerStep#N starts, sorted (may be empty)
  std::vector<std::int64_t> step_ends_ns;
  std::vector<TraceWarning> warnings;
  // String pids/tids ("Spans", "PyTorch Profiler", ...) become string_id(i) for string_ids[i].
  std::vector<std::string> string_ids;

  const std::string& name_of(const TraceEvent& event) const { return names[event.name]; }
};

}  // namespace powertrain::trace
