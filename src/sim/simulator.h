// Discrete-event replay of an ExecutionGraph (Lumos Alg. 1): tasks start when their fixed
// dependencies are done, in order of time (ties by task index, so replays are deterministic);
// synchronizing calls, event records and stream waits resolve against what has been launched at
// the simulated moment; matched collectives end together on all ranks.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/execution_graph.h"
#include "trace/trace_events.h"

namespace powertrain::sim {

struct ReplayOptions {
  enum class CollectiveTime {
    kShortestMeasured,  // wire time = the shortest duration among the members (replay default)
    kBandwidthLatency,  // latency + bus bytes / bandwidth (falls back when bytes are unknown)
  };
  CollectiveTime collective_time = CollectiveTime::kShortestMeasured;
  double bus_bandwidth_gb_s = 0.0;  // kBandwidthLatency: GB/s of bus bandwidth per rank
  double collective_latency_s = 0.0;
  /// false: every collective replays its own duration from its own start (no join).
  bool join_collectives = true;
};

enum class ReplayOutcome {
  kComplete,  // every task ran
  kStalled,   // some tasks never became ready (a bug: deadlocks are resolved by releases)
};

/// A runtime dependency released to break a deadlock, weakest evidence first: when the replay
/// stalls, the blocked dependency of the lowest kind (ties: the one waiting longest) is released.
enum class ReleasedKind : std::uint8_t {
  kInferredStreamWait,  // a cudaStreamWaitEvent paired by rules (no cuda_sync record)
  kInferredHostSync,    // a stream/event sync whose stream or record was guessed
  kCollectiveJoin,      // a collective whose members cannot all arrive (peers absent/mismatched)
  kRecordedStreamWait,  // a wait named by a cuda_sync record
  kRecordedHostSync,    // a sync named by a cuda_sync record
  kContextSync,         // cudaDeviceSynchronize
  kBlockingCopy,        // a blocking copy waiting for its own copy
};
inline constexpr int kReleasedKinds = 7;
std::string_view to_string(ReleasedKind kind);

struct ReplayResult {
  ReplayOutcome outcome = ReplayOutcome::kComplete;
  std::vector<std::int64_t> start_ns;  // per task, absolute ns on the input's clock
  std::vector<std::int64_t> end_ns;
  /// The task that decided each task's start, or its end when a sync or a collective join
  /// extended it (graph::kNone for tasks that started at their measured time).
  std::vector<std::int32_t> critical_pred;
  std::int64_t tasks_run = 0;
  std::int64_t stalled_tasks = 0;
  std::int64_t collectives_joined = 0;    // groups replayed with a join
  std::int64_t collectives_measured = 0;  // members replayed with their own duration
  std::int64_t collectives_forced = 0;    // groups released without all members (deadlock)
  /// Dependencies released to break deadlocks, by ReleasedKind, and how far the released tasks
  /// ended from their measured end in total (0: the release did not change timing).
  std::int64_t released[kReleasedKinds] = {};
  std::int64_t released_shift_ns = 0;
  std::vector<trace::TraceWarning> warnings;

  std::int64_t released_total() const {
    std::int64_t n = 0;
    for (std::int64_t c : released) n += c;
    return n;
  }
};

/// Replays the graph. Tasks without dependencies start at their measured start; every other
/// task at the latest (anchor + lag) of its dependencies. Host syncs end at max(call start,
/// awaited end) + tail. A joined collective's members start when ready and all end at
/// (last member ready) + wire time. When nothing can run while tasks remain (a deadlock from a
/// wrong inference or a window cut), the weakest blocked runtime dependency is released and the
/// simulation goes on: a released sync ends at its measured duration, a released stream wait
/// leaves its task to its other dependencies, a released collective ends its arrived members with
/// their measured durations. Every task runs. Complexity O((V + E) log V + R·B) time, O(V)
/// memory, R releases and B blocked dependencies at a stall (each release removes one for good).
ReplayResult replay(const graph::ExecutionGraph& graph, const ReplayOptions& options = {});

struct CriticalPath {
  std::vector<std::int32_t> tasks;  // first to last
  std::int64_t length_ns = 0;       // end of the last − start of the first
  std::int64_t cpu_ns = 0;          // busy time of the path's tasks by class
  std::int64_t gpu_compute_ns = 0;
  std::int64_t communication_ns = 0;
};

/// Follows critical_pred back from the task that ends last (on rank index `rank_index`, or the
/// whole job when it is −1). O(length of the path).
CriticalPath critical_path(const graph::ExecutionGraph& graph, const ReplayResult& replay,
                           int rank_index = -1);

}  // namespace powertrain::sim
