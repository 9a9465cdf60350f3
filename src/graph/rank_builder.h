// Internals of the graph builder: builds one rank's tasks, fixed edges (rank_builder.cc) and
// runtime ops (runtime_ops.cc) into a shared ExecutionGraph. Not a public interface.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "graph/collectives.h"
#include "graph/execution_graph.h"
#include "graph/graph_builder.h"
#include "trace/trace_events.h"

namespace powertrain::graph::detail {

using trace::EventKind;
using trace::RankTrace;
using trace::SyncKind;
using trace::TraceEvent;

enum class CallClass : std::uint8_t {
  kOther,
  kInvalid,  // Kineto's "INVALID" record: a plain call (its correlation may launch work)
  kContextSync,
  kStreamSync,
  kEventSync,
  kEventRecord,
  kStreamWait,
  kSyncCopy,
  kAsyncCopy,  // cudaMemcpyAsync and kin: a sync copy only when the call outlasted its copy
};

CallClass classify_call(std::string_view name);

/// What GPU work a launching call can enqueue (bit mask), by its name; 0 for other calls.
enum LaunchMask : std::uint8_t {
  kLaunchesKernel = 1,
  kLaunchesCopy = 2,
  kLaunchesSet = 4,
  kLaunchesGraph = 8,  // a graph launch: one call, any number of kernel, copy and set nodes
};
std::uint8_t launch_mask(std::string_view name);

inline bool is_host(EventKind kind) {
  return kind == EventKind::kCpuOp || kind == EventKind::kUserAnnotation ||
         kind == EventKind::kPythonFunction || kind == EventKind::kCudaRuntime ||
         kind == EventKind::kCudaDriver;
}
inline bool is_call(EventKind kind) {
  return kind == EventKind::kCudaRuntime || kind == EventKind::kCudaDriver;
}

enum class Role : std::uint8_t { kSkip, kHost, kGpu, kSyncRecord };

struct ProcessorKey {
  std::int64_t pid;
  std::int64_t tid;
  bool gpu;
  bool operator==(const ProcessorKey&) const = default;
};
struct ProcessorKeyHash {
  std::size_t operator()(const ProcessorKey& key) const {
    const std::uint64_t a = static_cast<std::uint64_t>(key.pid) * 0x9E3779B97F4A7C15ULL;
    const std::uint64_t b = static_cast<std::uint64_t>(key.tid) * 0xC2B2AE3D27D4EB4FULL;
    return static_cast<std::size_t>(a ^ (b >> 1) ^ (key.gpu ? 0x165667B19E3779F9ULL : 0));
  }
};

struct Frame {
  std::int32_t pos;
  std::int64_t end_ns;
  std::int32_t first_leaf = -1;
  std::int32_t last_leaf = -1;
  bool has_child = false;
};

// A point in issue order: (time, task) compared lexicographically, as the simulator pops tasks.
struct IssueKey {
  std::int64_t time_ns;
  std::int32_t task;
  bool operator<(const IssueKey& other) const {
    return time_ns != other.time_ns ? time_ns < other.time_ns : task < other.task;
  }
};

struct Enqueued {
  IssueKey key;  // when its launch was issued (running max, so the list is sorted)
  std::int32_t task;
};

struct WaitCandidate {
  std::int32_t op;
  std::int32_t target;
  std::int64_t slack_ns;
};

// A launch call (or INVALID record) whose correlation no GPU work carries.
struct OrphanLaunch {
  std::int64_t start_ns;
  std::int32_t leaf;
  std::int64_t pid;  // host process: one process's calls never enqueue to another's GPUs
  std::uint8_t mask;
  bool invalid;  // Kineto's INVALID record: may have launched anything
  bool used = false;
  bool in_collective_op = false;  // inside record_param_comms / nccl:* on its thread
};

/// Builds one rank: construct, build(), then check too_many().
struct RuntimeOpScan;  // runtime_ops.cc
struct CallSite;

class RankBuilder {
 public:
  RankBuilder(const RankTrace& trace, std::int32_t rank_index, const GraphOptions& options,
              ExecutionGraph& graph, std::vector<TempEdge>& edges)
      : trace_(trace), rank_index_(rank_index), options_(options), graph_(graph), edges_(edges) {}

  /// Appends the rank's tasks, processors, parent spans, runtime ops and edges (with lags).
  void build();
  /// The rank would push the task count past 2^31 − 1 (nothing usable was built).
  bool too_many() const { return too_many_; }

 private:
  const TraceEvent& event(std::int32_t pos) const {
    return trace_.events[order_.empty() ? pos : order_[pos]];
  }
  std::uint32_t event_index(std::int32_t pos) const {
    return order_.empty() ? static_cast<std::uint32_t>(pos) : order_[pos];
  }
  std::int64_t duration(const TraceEvent& e) const {
    return std::max<std::int64_t>(0, e.duration_ns);
  }
  std::int32_t local(std::int32_t task) const { return task - task_base_; }
  std::int32_t leaf_task_of(std::int32_t pos) const {
    return is_leaf_[pos] ? task_of_pos_[pos] : task_of_pos_[last_leaf_[pos]];
  }

  void order_events();
  void classify_names();
  std::int32_t processor_of(std::int64_t pid, std::int64_t tid, bool gpu);
  std::int32_t find_stream(std::int64_t device, std::int64_t stream) const;
  // Pops a finished frame; a frame that got no child is a leaf.
  void pop_frame(std::vector<Frame>& stack);
  // cuda_sync records whose correlation no call carries: attached by time to the host call
  // around them, else placed on the host thread that was waiting as a task of their own.
  void place_unattached_sync_records();
  void find_leaves();
  void create_tasks();
  void normalize_profiler_steps();
  void add_edge(std::int32_t src, std::int32_t dst, EdgeKind kind);
  std::int32_t find_launch(std::int64_t correlation) const;
  void link_launches();
  // Pieces of pair_orphan_launches.
  std::vector<OrphanLaunch> orphan_launches() const;
  void pair_launch(std::int32_t task, std::int32_t call);
  void pair_blocking_copies(std::vector<OrphanLaunch>& orphans,
                            const std::vector<std::int32_t>& launchless);
  std::int32_t fifo_orphan_for(const std::vector<std::int32_t>& stream_tasks, std::size_t at,
                               const std::vector<OrphanLaunch>& orphans) const;
  void pair_orphan_launches();
  void anchor_launchless();
  bool can_issue(std::int32_t leaf, bool copy) const;
  void link_streams();
  // The last task on `stream` whose launch was issued before `at` (input timeline), or kNone.
  std::int32_t last_enqueued(std::int32_t stream, IssueKey at) const;
  // The first task on `stream` whose launch was issued after `at`, or kNone.
  std::int32_t next_enqueued(std::int32_t stream, IssueKey at) const;
  void link_threads();
  void assign_lags();

  // The stream of the closest launch before `task` (rank-wide) on a stream other than `not_on`.
  std::int32_t preceding_launch_stream(std::int32_t task, std::int32_t not_on) const;
  std::int32_t stream_of_record(const TraceEvent& record, std::int64_t stream_id) const;
  void drop(std::string_view what, std::int32_t task);
  void create_runtime_ops();
  // Pieces of create_runtime_ops (runtime_ops.cc).
  void start_runtime_op_scan(RuntimeOpScan& scan) const;
  CallClass runtime_call_class(std::int32_t pos, const TraceEvent* record);
  std::int32_t stream_ending_in_call(std::int32_t call, IssueKey at, bool from_start) const;
  void infer_record_streams(RuntimeOpScan& scan) const;
  std::int32_t find_event_record(const RuntimeOpScan& scan, const CallSite& call,
                                 std::int32_t not_on) const;
  std::int32_t producer_on_input(const RuntimeOpScan& scan, const RuntimeOp& o, IssueKey at) const;
  bool resolve_stream_wait(RuntimeOpScan& scan, const CallSite& call, RuntimeOp& op,
                           std::int64_t& wait_slack);
  std::int32_t restream_record_for_wait(RuntimeOpScan& scan, std::int32_t record,
                                        std::int32_t waiting, std::int32_t target,
                                        IssueKey wait_at);
  bool resolve_runtime_op(RuntimeOpScan& scan, const CallSite& call, CallClass cls, RuntimeOp& op,
                          std::int64_t& awaited_end, std::int64_t& wait_slack);
  void add_runtime_op(RuntimeOpScan& scan, const CallSite& call, const RuntimeOp& op,
                      std::int64_t awaited_end, std::int64_t wait_slack);

  const RankTrace& trace_;
  const std::int32_t rank_index_;
  const GraphOptions& options_;
  ExecutionGraph& graph_;
  std::vector<TempEdge>& edges_;

  std::int32_t n_ = 0;
  std::int32_t proc_base_ = 0;
  std::int32_t task_base_ = 0;
  std::size_t edge_base_ = 0;
  bool too_many_ = false;
  std::vector<std::uint32_t> order_;  // empty when the events are already sorted
  // place_unattached_sync_records: record position → host (pid, tid) it becomes a task on, and
  // call position → the record attached to it by time.
  std::unordered_map<std::int32_t, std::pair<std::int64_t, std::int64_t>> record_host_;
  std::unordered_map<std::int32_t, std::int32_t> record_of_call_by_time_;
  std::vector<CallClass> name_class_;
  std::vector<std::uint8_t> name_is_step_;
  std::vector<std::uint8_t> name_launch_;  // launch_mask of each name

  std::unordered_map<ProcessorKey, std::int32_t, ProcessorKeyHash> processor_index_;
  bool have_last_key_ = false;
  ProcessorKey last_key_{};
  std::int32_t last_processor_ = kNone;
  // Indexed by processor − proc_base_.
  std::vector<std::vector<Frame>> stacks_;
  std::vector<std::vector<std::int32_t>> thread_tasks_;
  std::vector<std::vector<Enqueued>> enqueued_;

  // Indexed by event position (time order).
  std::vector<Role> role_;
  std::vector<std::int32_t> proc_;
  std::vector<std::uint8_t> is_leaf_;
  std::vector<std::int32_t> first_leaf_;
  std::vector<std::int32_t> last_leaf_;
  std::vector<std::int32_t> task_of_pos_;

  // Indexed by task − task_base_.
  std::vector<std::int32_t> launch_of_;
  std::vector<std::int32_t> launch_stream_;
  std::vector<std::int32_t> launched_first_;
  std::vector<std::int32_t> launched_next_;

  std::vector<std::pair<std::int64_t, std::int32_t>> correlations_;  // (correlation, position)
  std::vector<std::int32_t> launches_;  // host tasks that launch GPU work, in task order
  std::vector<WaitCandidate> waits_;
  // create_tasks: trace event index of a ProfilerStep span → its parent span.
  std::unordered_map<std::uint32_t, std::int32_t> step_parent_of_event_;
};

}  // namespace powertrain::graph::detail
