// The execution graph that the replay simulator runs (Lumos §3.3): CPU tasks on host threads and
// GPU tasks on streams, with fixed dependencies (edges with a lag) and runtime dependencies
// (synchronizing calls, event records and stream waits resolved while simulating). Nodes are
// stored as a struct of arrays so that a graph of millions of tasks costs about 50 bytes a task
// plus 13 bytes an edge and no per-task heap allocation.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trace/trace_events.h"

namespace powertrain::graph {

inline constexpr std::int32_t kNone = -1;

enum class TaskKind : std::uint8_t {
  kCpu,     // a leaf host event (op, runtime/driver call, annotation without children)
  kKernel,  // GPU kernel (NCCL kernels too; see ExecutionGraph::collective)
  kMemcpy,  // GPU memcpy
  kMemset,  // GPU memset
};
inline bool is_gpu(TaskKind kind) { return kind != TaskKind::kCpu; }

enum class ProcessorKind : std::uint8_t { kCpuThread, kGpuStream };

/// A host thread or a GPU stream of one rank.
struct Processor {
  std::int32_t rank_index = 0;  // index into ExecutionGraph::ranks
  ProcessorKind kind = ProcessorKind::kCpuThread;
  std::int64_t pid = 0;  // host pid, or the device for a stream
  std::int64_t tid = 0;  // host tid, or the stream id
};

/// Fixed dependencies. Every edge says: dst may start at (anchor of src) + lag_ns, where the
/// anchor is src's end, except for kLaunch where it is src's start (a kernel can begin before its
/// launch call returns).
enum class EdgeKind : std::uint8_t {
  kThreadOrder,  // the previous leaf on the same host thread
  kCrossThread,  // a task on another thread that ended inside this task's idle gap (Lumos rule)
  kLaunch,       // launch call → the GPU task with the same correlation (anchored at the start)
  kStreamOrder,  // the previous task on the same GPU stream
  kStreamWait,   // a cudaStreamWaitEvent call → the GPU task it holds back (issue order only)
  kAnchor,       // GPU work without a launch in the trace → the host leaf that was running when
                 // it must have been issued (time nesting, bounded by stream order); as kLaunch
};
inline bool anchored_at_start(EdgeKind kind) {
  return kind == EdgeKind::kLaunch || kind == EdgeKind::kAnchor;
}

/// Calls whose dependencies are resolved while simulating (Lumos "runtime dependencies"): which
/// kernel a stream synchronize waits for depends on what has been launched at that moment.
enum class RuntimeOpKind : std::uint8_t {
  kEventRecord,  // captures the last task enqueued on `stream` when the call runs
  kStreamWait,   // `target` waits for the task captured by `record`, or the last task on `stream`
  kStreamSync,   // the host waits for the last task enqueued on `stream`
  kEventSync,    // the host waits for the task captured by `record` (or the last on `stream`)
  kContextSync,  // the host waits for the last task of every stream of the rank
  kSyncCopy,     // a blocking copy (cudaMemcpy): the host waits for the GPU tasks it launched
};
std::string_view to_string(RuntimeOpKind kind);

struct RuntimeOp {
  RuntimeOpKind kind = RuntimeOpKind::kStreamSync;
  bool inferred = false;        // from naming/ordering rules, not from a cuda_sync record
  std::int32_t node = kNone;    // the host call
  std::int32_t stream = kNone;  // processor index (recorded/awaited stream), or kNone
  std::int32_t record = kNone;  // index of the kEventRecord op, or kNone
  std::int32_t target = kNone;  // kStreamWait: the GPU task that waits
  std::int64_t lag_ns = 0;      // kStreamWait: target start ≥ producer end + lag_ns
  std::int64_t tail_ns = 0;     // host syncs: call end = max(call start, awaited end) + tail_ns
};

/// One collective matched across ranks (members are GPU tasks, one per rank).
struct CollectiveGroup {
  std::int32_t first_member = 0;  // into ExecutionGraph::collective_members
  std::int32_t member_count = 0;
  std::int32_t expected_members = 0;  // group size from metadata, else the job's world size
  bool joined = false;                // all expected members present: replayed with a join
  std::string name;                   // kernel name of the first member
  std::string collective;             // "allreduce", "allgather", ... from metadata, else ""
  std::int64_t message_bytes = -1;    // max(in, out) elements × element size when known
};

/// A host event that is not scheduled itself (it has children, or it is a ProfilerStep span):
/// its replayed span is rebuilt from its first and last leaf descendants.
struct ParentSpan {
  std::int32_t processor = 0;
  std::uint32_t name = 0;  // index into the rank's names
  trace::EventKind kind = trace::EventKind::kCpuOp;
  std::int32_t first_leaf = kNone;
  std::int32_t last_leaf = kNone;
  std::int64_t lead_ns = 0;   // first leaf start − span start (input)
  std::int64_t trail_ns = 0;  // span end − last leaf end (input)
  std::int64_t input_start_ns = 0;
  std::int64_t input_duration_ns = 0;
};

struct RankInfo {
  int rank = 0;
  int world_size = 1;
  std::string source;
  std::vector<std::string> names;            // the trace's interned names
  std::int32_t first_task = 0;               // tasks of a rank are contiguous
  std::int32_t end_task = 0;                 // one past the last
  std::vector<std::int32_t> streams;         // processor indices of its GPU streams
  std::vector<std::int32_t> threads;         // processor indices of its host threads
  std::vector<std::int32_t> profiler_steps;  // ParentSpan indices of ProfilerStep#N, in time order
  // Steps the spans stand for when not one per span (threads or processes of one file stepping
  // together, steps whose span is missing); 0: one per span.
  std::int32_t step_count = 0;
  std::int64_t default_launch_lag_ns = 0;  // median launch→start delay of launch-bound tasks
};

/// Counts of what the builder found and decided (for reports and tests).
struct GraphStats {
  std::int64_t events_read = 0;
  std::int64_t cpu_tasks = 0;
  std::int64_t gpu_tasks = 0;
  std::int64_t parent_spans = 0;
  std::int64_t edges[6] = {0, 0, 0, 0, 0, 0};        // by EdgeKind
  std::int64_t runtime_ops[6] = {0, 0, 0, 0, 0, 0};  // by RuntimeOpKind
  std::int64_t inferred_runtime_ops = 0;
  std::int64_t dropped_contradicted = 0;  // syncs/waits whose resolution contradicts the input
  std::int64_t gpu_tasks_without_launch = 0;
  std::int64_t gpu_tasks_anchored = 0;  // of those, anchored to host activity (EdgeKind::kAnchor)
  // Of those, paired with a launch call whose correlation matches no GPU work (kLaunch edge).
  std::int64_t gpu_tasks_paired = 0;
  std::int64_t blocking_async_copies = 0;  // cudaMemcpyAsync calls that returned after their copy
  std::int64_t collectives = 0;            // NCCL GPU tasks
  std::int64_t collective_groups_joined = 0;
  std::int64_t collectives_measured = 0;  // replayed with their own measured duration
};

/// Invariants the simulator relies on: tasks of a rank are contiguous; on every GPU stream the
/// task indices increase in stream order; edges form a DAG; lags keep dst ≥ src start.
struct ExecutionGraph {
  std::vector<RankInfo> ranks;
  std::vector<Processor> processors;

  // Tasks (index = task id).
  std::vector<std::int64_t> input_start_ns;     // measured start (absolute ns)
  std::vector<std::int64_t> input_duration_ns;  // measured duration
  std::vector<std::int64_t> duration_ns;        // duration to replay (what-ifs change this)
  std::vector<std::int32_t> processor;
  std::vector<std::uint32_t> name;  // index into ranks[rank].names
  std::vector<TaskKind> kind;
  std::vector<std::uint8_t> nccl;          // 1 for NCCL GPU tasks
  std::vector<std::uint32_t> event_index;  // index into the source RankTrace::events
  std::vector<std::int32_t> runtime_op;    // index into runtime_ops, or kNone
  std::vector<std::int32_t> collective;    // index into collectives, or kNone

  // Fixed out-edges in compressed rows: edges of task v are [edge_begin[v], edge_begin[v + 1]).
  std::vector<std::uint32_t> edge_begin;
  std::vector<std::int32_t> edge_dst;
  std::vector<std::int64_t> edge_lag_ns;
  std::vector<EdgeKind> edge_kind;

  std::vector<RuntimeOp> runtime_ops;
  std::vector<CollectiveGroup> collectives;
  std::vector<std::int32_t> collective_members;
  std::vector<ParentSpan> parents;

  GraphStats stats;
  std::vector<trace::TraceWarning> warnings;  // counted, one example each

  std::int32_t task_count() const { return static_cast<std::int32_t>(input_start_ns.size()); }
  std::int32_t rank_index_of(std::int32_t task) const {
    return processors[processor[task]].rank_index;
  }
  std::int64_t input_end_ns(std::int32_t task) const {
    return input_start_ns[task] + input_duration_ns[task];
  }
  const std::string& task_name(std::int32_t task) const {
    return ranks[rank_index_of(task)].names[name[task]];
  }
};

/// A fixed edge before the graph's compressed rows exist (builders collect these, then store).
struct TempEdge {
  std::int32_t src;
  std::int32_t dst;
  std::int64_t lag_ns;  // the graph builder keeps the measured slack here until lags are assigned
  EdgeKind kind;
};

/// Moves `edges` into the graph's compressed rows (grouped by source, insertion order kept within
/// a source) and empties `edges`. The graph's tasks must all exist. O(V + E).
void store_edges(std::vector<TempEdge>& edges, ExecutionGraph& graph);

/// Adds one occurrence of a warning kind (keeps the first example).
void add_warning(std::vector<trace::TraceWarning>& warnings, std::string_view kind,
                 std::string_view example);

/// Adds `from`'s counts to `into`'s warnings of the same kind, and the kinds `into` lacks (with
/// their examples).
void merge_warnings(std::vector<trace::TraceWarning>& into,
                    const std::vector<trace::TraceWarning>& from);

/// Index of the first task named `name` (exact) on rank index `rank_index` at or after task
/// `from`, or kNone. Linear; for tests and tools.
std::int32_t find_task(const ExecutionGraph& graph, int rank_index, std::string_view name,
                       std::int32_t from = 0);

}  // namespace powertrain::graph
