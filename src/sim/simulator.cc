// The replay engine. Popping a task from the time-ordered heap starts it; its end is known at once
// except for host syncs (they end when the awaited GPU work has ended) and joined collectives
// (they end when the last member has arrived). Launch edges release at the launch's start, every
// other edge at the source's end, so simulated time never goes backwards and "what has been
// launched by now" is exact when a sync resolves.
#include "sim/simulator.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace powertrain::sim {
namespace {

using graph::EdgeKind;
using graph::ExecutionGraph;
using graph::kNone;
using graph::RuntimeOp;
using graph::RuntimeOpKind;

constexpr std::int64_t kUnset = std::numeric_limits<std::int64_t>::min();

struct HeapItem {
  std::int64_t time_ns;
  std::int32_t task;
  bool operator>(const HeapItem& other) const {
    return time_ns != other.time_ns ? time_ns > other.time_ns : task > other.task;
  }
};

struct Waiter {
  std::int32_t task;
  std::int32_t next;
  std::int64_t lag_ns;
};

struct SyncState {
  std::int32_t pending = 0;
  std::int64_t awaited_end_ns = kUnset;
  std::int32_t awaited = kNone;
  bool released = false;  // ended by a deadlock release: later completions are ignored
};

struct GroupState {
  std::int32_t arrived = 0;
  std::int64_t first_ns = kUnset;  // first arrival
  std::int64_t join_ns = kUnset;
  std::int32_t last = kNone;
  bool done = false;
};

// A stream wait whose producer had not ended when the wait was issued.
struct BlockedWait {
  std::int32_t waiter;  // index into waiters_
  std::int32_t producer;
  std::int32_t op;
  std::int64_t since_ns;
};

// The blocked dependency a stall releases: weakest kind first, then the longest waiting.
struct Candidate {
  sim::ReleasedKind kind;
  std::int64_t since_ns;
  std::int32_t id;
  int source;  // 0 host sync (op index), 1 stream wait (index into blocked_waits_), 2 group
  bool operator<(const Candidate& o) const {
    if (kind != o.kind) return kind < o.kind;
    if (since_ns != o.since_ns) return since_ns < o.since_ns;
    return source != o.source ? source < o.source : id < o.id;
  }
};

bool is_host_sync(RuntimeOpKind kind) {
  return kind == RuntimeOpKind::kStreamSync || kind == RuntimeOpKind::kEventSync ||
         kind == RuntimeOpKind::kContextSync || kind == RuntimeOpKind::kSyncCopy;
}

// Bytes each rank moves on the bus per message byte (NCCL's bus-bandwidth factors).
double bus_factor(std::string_view collective, std::string_view kernel, int ranks) {
  const double n = std::max(ranks, 1);
  const auto has = [&](std::string_view a, std::string_view b) {
    return collective.find(a) != std::string_view::npos || kernel.find(b) != std::string_view::npos;
  };
  if (has("allreduce", "AllReduce") || has("all_reduce", "AllReduce")) return 2.0 * (n - 1) / n;
  if (has("allgather", "AllGather") || has("all_gather", "AllGather") ||
      has("reducescatter", "ReduceScatter") || has("reduce_scatter", "ReduceScatter") ||
      has("all_to_all", "AllToAll") || has("alltoall", "SendRecv")) {
    return (n - 1) / n;
  }
  return 1.0;
}

class Simulator {
 public:
  Simulator(const ExecutionGraph& graph, const ReplayOptions& options)
      : graph_(graph), options_(options) {}

  ReplayResult run() {
    const std::int32_t tasks = graph_.task_count();
    result_.start_ns.assign(tasks, kUnset);
    result_.end_ns.assign(tasks, kUnset);
    result_.critical_pred.assign(tasks, kNone);
    ready_.assign(tasks, kUnset);
    remaining_.assign(tasks, 0);
    done_.assign(tasks, 0);
    waiter_head_.assign(tasks, kNone);
    last_enqueued_.assign(graph_.processors.size(), kNone);
    captured_.assign(graph_.runtime_ops.size(), kNone);
    sync_.assign(graph_.runtime_ops.size(), SyncState{});
    groups_.assign(graph_.collectives.size(), GroupState{});
    for (std::int32_t dst : graph_.edge_dst) ++remaining_[dst];
    heap_.reserve(1024);
    for (std::int32_t v = 0; v < tasks; ++v) {
      if (remaining_[v] == 0) {
        ready_[v] = graph_.input_start_ns[v];
        push(v);
      }
    }
    // Simulate; when stalled, release the weakest blocked dependency and go on. Each release
    // removes a blocked dependency (or forces one task) for good, so the loop ends.
    for (;;) {
      while (!heap_.empty()) {
        std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
        const HeapItem item = heap_.back();
        heap_.pop_back();
        if (result_.start_ns[item.task] != kUnset) continue;  // forced earlier
        now_ns_ = item.time_ns;
        start_task(item.task, item.time_ns);
      }
      if (!release_weakest()) break;
    }
    for (std::int32_t v : released_nodes_) {
      if (done_[v]) {
        result_.released_shift_ns += std::abs(result_.end_ns[v] - graph_.input_end_ns(v));
      }
    }
    for (std::int32_t v = 0; v < tasks; ++v) result_.stalled_tasks += !done_[v];
    if (result_.stalled_tasks > 0) {
      result_.outcome = ReplayOutcome::kStalled;
      result_.warnings.push_back({"tasks never ran",
                                  "a dependency cycle or a sync on work that never completed",
                                  result_.stalled_tasks});
    }
    return std::move(result_);
  }

 private:
  void push(std::int32_t task) {
    heap_.push_back({ready_[task], task});
    std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
  }

  void relax(std::int32_t dst, std::int64_t time_ns, std::int32_t pred) {
    if (time_ns > ready_[dst]) {
      ready_[dst] = time_ns;
      result_.critical_pred[dst] = pred;
    }
    if (--remaining_[dst] == 0 && result_.start_ns[dst] == kUnset) push(dst);
  }

  void enqueue(std::int32_t gpu_task) {
    std::int32_t& last = last_enqueued_[graph_.processor[gpu_task]];
    last = std::max(last, gpu_task);  // stream order = task order on a stream
  }

  void add_waiter(std::int32_t awaited, std::int32_t waiter, std::int64_t lag_ns) {
    waiters_.push_back({waiter, waiter_head_[awaited], lag_ns});
    waiter_head_[awaited] = static_cast<std::int32_t>(waiters_.size() - 1);
  }

  void await(std::int32_t op_index, std::int32_t awaited) {
    if (awaited == kNone) return;
    SyncState& state = sync_[op_index];
    if (done_[awaited]) {
      if (result_.end_ns[awaited] > state.awaited_end_ns) {
        state.awaited_end_ns = result_.end_ns[awaited];
        state.awaited = awaited;
      }
    } else {
      ++state.pending;
      add_waiter(awaited, graph_.runtime_ops[op_index].node, 0);
    }
  }

  void finish_sync(std::int32_t op_index) {
    const RuntimeOp& op = graph_.runtime_ops[op_index];
    const SyncState& state = sync_[op_index];
    const std::int64_t start = result_.start_ns[op.node];
    if (state.awaited_end_ns > start) result_.critical_pred[op.node] = state.awaited;
    complete(op.node, std::max(start, state.awaited_end_ns) + op.tail_ns);
  }

  void start_task(std::int32_t v, std::int64_t t) {
    result_.start_ns[v] = t;
    ++result_.tasks_run;
    const std::uint32_t begin = graph_.edge_begin[v];
    const std::uint32_t end = graph_.edge_begin[v + 1];
    for (std::uint32_t e = begin; e < end; ++e) {
      if (!graph::anchored_at_start(graph_.edge_kind[e])) continue;
      const std::int32_t dst = graph_.edge_dst[e];
      enqueue(dst);
      relax(dst, t + graph_.edge_lag_ns[e], v);
    }
    if (graph::is_gpu(graph_.kind[v])) enqueue(v);

    const std::int32_t op_index = graph_.runtime_op[v];
    if (op_index != kNone) {
      const RuntimeOp& op = graph_.runtime_ops[op_index];
      const auto last_on = [&](std::int32_t stream) {
        return stream == kNone ? kNone : last_enqueued_[stream];
      };
      switch (op.kind) {
        case RuntimeOpKind::kEventRecord:
          captured_[op_index] = last_on(op.stream);
          break;
        case RuntimeOpKind::kStreamWait: {
          const std::int32_t producer =
              op.record != kNone ? captured_[op.record] : last_on(op.stream);
          if (producer != kNone && op.target != kNone && producer != op.target) {
            if (done_[producer]) {
              const std::int64_t at = result_.end_ns[producer] + op.lag_ns;
              if (at > ready_[op.target]) {
                ready_[op.target] = at;
                result_.critical_pred[op.target] = producer;
              }
            } else {
              ++remaining_[op.target];  // the wait's own edge still holds the target
              add_waiter(producer, op.target, op.lag_ns);
              blocked_waits_.push_back(
                  {static_cast<std::int32_t>(waiters_.size() - 1), producer, op_index, t});
            }
          }
          break;
        }
        case RuntimeOpKind::kStreamSync:
          await(op_index, last_on(op.stream));
          break;
        case RuntimeOpKind::kEventSync:
          await(op_index, op.record != kNone ? captured_[op.record] : last_on(op.stream));
          break;
        case RuntimeOpKind::kContextSync:
          for (std::int32_t stream : graph_.ranks[graph_.rank_index_of(v)].streams) {
            await(op_index, last_on(stream));
          }
          break;
        case RuntimeOpKind::kSyncCopy:
          for (std::uint32_t e = begin; e < end; ++e) {
            if (graph_.edge_kind[e] == EdgeKind::kLaunch) await(op_index, graph_.edge_dst[e]);
          }
          break;
      }
      if (is_host_sync(op.kind)) {
        if (sync_[op_index].pending == 0) {
          finish_sync(op_index);
        } else {
          blocked_syncs_.push_back(op_index);
        }
        return;  // otherwise completes when the last awaited task ends
      }
    }
    const std::int32_t group = graph_.collective[v];
    if (group != kNone && options_.join_collectives && graph_.collectives[group].joined &&
        !groups_[group].done) {  // done here only when released by release_weakest
      arrive(group, v, t);
      return;
    }
    if (group != kNone) ++result_.collectives_measured;
    complete(v, t + graph_.duration_ns[v]);
  }

  void arrive(std::int32_t group_index, std::int32_t v, std::int64_t t) {
    GroupState& state = groups_[group_index];
    if (state.arrived++ == 0) state.first_ns = t;
    if (t >= state.join_ns) {
      state.join_ns = t;
      state.last = v;
    }
    const graph::CollectiveGroup& group = graph_.collectives[group_index];
    if (state.arrived < group.member_count) return;
    state.done = true;
    ++result_.collectives_joined;
    const std::int64_t end = state.join_ns + wire_time(group);
    for (std::int32_t i = 0; i < group.member_count; ++i) {
      const std::int32_t member = graph_.collective_members[group.first_member + i];
      if (member != state.last) result_.critical_pred[member] = state.last;
      complete(member, end);
    }
  }

  std::int64_t wire_time(const graph::CollectiveGroup& group) {
    std::int64_t shortest = std::numeric_limits<std::int64_t>::max();
    for (std::int32_t i = 0; i < group.member_count; ++i) {
      shortest =
          std::min(shortest, graph_.duration_ns[graph_.collective_members[group.first_member + i]]);
    }
    if (options_.collective_time != ReplayOptions::CollectiveTime::kBandwidthLatency) {
      return shortest;
    }
    if (group.message_bytes < 0 || options_.bus_bandwidth_gb_s <= 0.0) {
      graph::add_warning(result_.warnings,
                         "collective without message size: shortest measured time used",
                         fmt::format("'{}'", group.name));
      return shortest;
    }
    const double bytes = static_cast<double>(group.message_bytes) *
                         bus_factor(group.collective, group.name, group.member_count);
    const double seconds =
        options_.collective_latency_s + bytes / (options_.bus_bandwidth_gb_s * 1e9);
    return static_cast<std::int64_t>(seconds * 1e9 + 0.5);
  }

  void complete(std::int32_t v, std::int64_t end_ns) {
    result_.end_ns[v] = end_ns;
    done_[v] = 1;
    for (std::uint32_t e = graph_.edge_begin[v]; e < graph_.edge_begin[v + 1]; ++e) {
      if (graph::anchored_at_start(graph_.edge_kind[e])) continue;  // released at the start
      relax(graph_.edge_dst[e], end_ns + graph_.edge_lag_ns[e], v);
    }
    for (std::int32_t w = waiter_head_[v]; w != kNone;) {
      const Waiter waiter = waiters_[w];
      w = waiter.next;
      if (waiter.task == kNone) continue;  // released
      const std::int32_t op_index = graph_.runtime_op[waiter.task];
      if (op_index != kNone && is_host_sync(graph_.runtime_ops[op_index].kind)) {
        SyncState& state = sync_[op_index];
        if (state.released) continue;
        if (end_ns > state.awaited_end_ns) {
          state.awaited_end_ns = end_ns;
          state.awaited = v;
        }
        if (--state.pending == 0) finish_sync(op_index);
      } else {
        relax(waiter.task, end_ns + waiter.lag_ns, v);
      }
    }
    waiter_head_[v] = kNone;
  }

  sim::ReleasedKind sync_kind(const RuntimeOp& op) const {
    switch (op.kind) {
      case RuntimeOpKind::kSyncCopy:
        return sim::ReleasedKind::kBlockingCopy;
      case RuntimeOpKind::kContextSync:
        return sim::ReleasedKind::kContextSync;
      default:
        return op.inferred ? sim::ReleasedKind::kInferredHostSync
                           : sim::ReleasedKind::kRecordedHostSync;
    }
  }

  void note_release(sim::ReleasedKind kind, std::string example) {
    ++result_.released[static_cast<int>(kind)];
    graph::add_warning(result_.warnings, fmt::format("deadlock: {} released", sim::to_string(kind)),
                       example);
  }

  // Nothing can run but tasks remain: every blocked task waits, directly or not, on a runtime
  // dependency that cannot be met (inferred fixed edges form a DAG). Release the blocked one
  // with the least evidence; ties go to the one waiting longest (the root of the stall).
  bool release_weakest() {
    std::optional<Candidate> best;
    const auto consider = [&](const Candidate& c) {
      if (!best || c < *best) best = c;
    };
    std::erase_if(blocked_syncs_, [&](std::int32_t op) {
      return sync_[op].released || done_[graph_.runtime_ops[op].node];
    });
    for (std::int32_t op : blocked_syncs_) {
      const RuntimeOp& o = graph_.runtime_ops[op];
      consider({sync_kind(o), result_.start_ns[o.node], op, 0});
    }
    std::erase_if(blocked_waits_, [&](const BlockedWait& b) {
      return waiters_[b.waiter].task == kNone || done_[b.producer];
    });
    for (std::size_t i = 0; i < blocked_waits_.size(); ++i) {
      const BlockedWait& b = blocked_waits_[i];
      consider({graph_.runtime_ops[b.op].inferred ? sim::ReleasedKind::kInferredStreamWait
                                                  : sim::ReleasedKind::kRecordedStreamWait,
                b.since_ns, static_cast<std::int32_t>(i), 1});
    }
    for (std::size_t g = 0; g < groups_.size(); ++g) {
      const GroupState& state = groups_[g];
      if (state.done || state.arrived == 0) continue;
      consider(
          {sim::ReleasedKind::kCollectiveJoin, state.first_ns, static_cast<std::int32_t>(g), 2});
    }
    if (!best) return force_one_task();
    switch (best->source) {
      case 0: {  // the call ends after its measured duration, as if it had waited as measured
        SyncState& state = sync_[best->id];
        const RuntimeOp& op = graph_.runtime_ops[best->id];
        state.released = true;
        note_release(best->kind, fmt::format("'{}' at {} ns (ended at its measured duration)",
                                             graph_.task_name(op.node), result_.start_ns[op.node]));
        released_nodes_.push_back(op.node);
        complete(op.node, result_.start_ns[op.node] + graph_.duration_ns[op.node]);
        break;
      }
      case 1: {  // the waiting task keeps its other dependencies
        const BlockedWait b = blocked_waits_[best->id];
        const std::int32_t target = waiters_[b.waiter].task;
        waiters_[b.waiter].task = kNone;
        note_release(best->kind, fmt::format("'{}' waiting for '{}'", graph_.task_name(target),
                                             graph_.task_name(b.producer)));
        released_nodes_.push_back(target);
        relax(target, kUnset, kNone);
        break;
      }
      default: {  // members that arrived end with their own measured durations
        GroupState& state = groups_[best->id];
        state.done = true;
        ++result_.collectives_forced;
        const graph::CollectiveGroup& group = graph_.collectives[best->id];
        note_release(best->kind, fmt::format("'{}': {} of {} members arrived", group.name,
                                             state.arrived, group.member_count));
        for (std::int32_t i = 0; i < group.member_count; ++i) {
          const std::int32_t member = graph_.collective_members[group.first_member + i];
          if (result_.start_ns[member] == kUnset || done_[member]) continue;
          released_nodes_.push_back(member);
          complete(member, result_.start_ns[member] + graph_.duration_ns[member]);
        }
        break;
      }
    }
    return true;
  }

  // Safety net (a fixed-edge cycle would be a builder bug): start the earliest-ready task that is
  // still waiting, at its measured start, so that no task is ever lost.
  bool force_one_task() {
    std::int32_t pick = kNone;
    for (std::int32_t v = 0; v < graph_.task_count(); ++v) {
      if (result_.start_ns[v] != kUnset) continue;
      if (pick == kNone || graph_.input_start_ns[v] < graph_.input_start_ns[pick]) pick = v;
    }
    if (pick == kNone) return false;
    graph::add_warning(result_.warnings, "deadlock: fixed dependency released (a graph bug)",
                       fmt::format("'{}'", graph_.task_name(pick)));
    remaining_[pick] = std::numeric_limits<std::int32_t>::min() / 2;  // never pushed again
    ready_[pick] = std::max(ready_[pick], graph_.input_start_ns[pick]);
    released_nodes_.push_back(pick);
    push(pick);
    return true;
  }

  const ExecutionGraph& graph_;
  const ReplayOptions& options_;
  ReplayResult result_;
  std::vector<std::int64_t> ready_;
  std::vector<std::int32_t> remaining_;
  std::vector<std::uint8_t> done_;
  std::vector<std::int32_t> waiter_head_;
  std::vector<Waiter> waiters_;
  std::vector<std::int32_t> last_enqueued_;  // per processor
  std::vector<std::int32_t> captured_;       // per runtime op (event records)
  std::vector<SyncState> sync_;              // per runtime op (host syncs)
  std::vector<GroupState> groups_;
  std::vector<HeapItem> heap_;
  std::vector<std::int32_t> blocked_syncs_;  // host syncs started with work pending
  std::vector<BlockedWait> blocked_waits_;
  std::vector<std::int32_t> released_nodes_;
  std::int64_t now_ns_ = kUnset;
};

}  // namespace

std::string_view to_string(ReleasedKind kind) {
  switch (kind) {
    case ReleasedKind::kInferredStreamWait:
      return "inferred stream wait";
    case ReleasedKind::kInferredHostSync:
      return "inferred host sync";
    case ReleasedKind::kCollectiveJoin:
      return "collective join";
    case ReleasedKind::kRecordedStreamWait:
      return "recorded stream wait";
    case ReleasedKind::kRecordedHostSync:
      return "recorded host sync";
    case ReleasedKind::kContextSync:
      return "context sync";
    case ReleasedKind::kBlockingCopy:
      return "blocking copy";
  }
  return "?";
}

ReplayResult replay(const graph::ExecutionGraph& graph, const ReplayOptions& options) {
  return Simulator(graph, options).run();
}

CriticalPath critical_path(const graph::ExecutionGraph& graph, const ReplayResult& replay,
                           int rank_index) {
  CriticalPath path;
  std::int32_t last = kNone;
  const std::int32_t begin = rank_index < 0 ? 0 : graph.ranks[rank_index].first_task;
  const std::int32_t end = rank_index < 0 ? graph.task_count() : graph.ranks[rank_index].end_task;
  for (std::int32_t v = begin; v < end; ++v) {
    if (replay.end_ns[v] == kUnset) continue;
    if (last == kNone || replay.end_ns[v] > replay.end_ns[last]) last = v;
  }
  if (last == kNone) return path;
  for (std::int32_t v = last, steps = 0; v != kNone && steps <= graph.task_count(); ++steps) {
    path.tasks.push_back(v);
    const std::int64_t busy = replay.end_ns[v] - replay.start_ns[v];
    if (!graph::is_gpu(graph.kind[v])) {
      path.cpu_ns += busy;
    } else if (graph.nccl[v]) {
      path.communication_ns += busy;
    } else {
      path.gpu_compute_ns += busy;
    }
    v = replay.critical_pred[v];
  }
  std::reverse(path.tasks.begin(), path.tasks.end());
  path.length_ns = replay.end_ns[path.tasks.back()] - replay.start_ns[path.tasks.front()];
  return path;
}

}  // namespace powertrain::sim
