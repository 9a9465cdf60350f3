// The replay engine. Popping a task from the time-ordered heap starts it; its end is known at once
// except for host syncs (they end when the awaited GPU work has ended) and joined collectives
// (they end when the last member has arrived). Launch edges release at the launch's start, every
// other edge at the source's end, so simulated time never goes backwards and "what has been
// launched by now" is exact when a sync resolves.
#include "sim/simulator.h"

#include <fmt/core.h>

#include <algorithm>
#include <limits>
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
};

struct GroupState {
  std::int32_t arrived = 0;
  std::int64_t join_ns = kUnset;
  std::int32_t last = kNone;
  bool done = false;
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
    for (;;) {
      while (!heap_.empty()) {
        std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
        const HeapItem item = heap_.back();
        heap_.pop_back();
        now_ns_ = item.time_ns;
        start_task(item.task, item.time_ns);
      }
      if (!release_stuck_collective()) break;
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
    if (--remaining_[dst] == 0) push(dst);
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
      if (graph_.edge_kind[e] != EdgeKind::kLaunch) continue;
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
        if (sync_[op_index].pending == 0) finish_sync(op_index);
        return;  // otherwise completes when the last awaited task ends
      }
    }
    const std::int32_t group = graph_.collective[v];
    if (group != kNone && options_.join_collectives && graph_.collectives[group].joined &&
        !groups_[group].done) {  // done here only when released by release_stuck_collective
      arrive(group, v, t);
      return;
    }
    if (group != kNone) ++result_.collectives_measured;
    complete(v, t + graph_.duration_ns[v]);
  }

  void arrive(std::int32_t group_index, std::int32_t v, std::int64_t t) {
    GroupState& state = groups_[group_index];
    ++state.arrived;
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
      if (graph_.edge_kind[e] == EdgeKind::kLaunch) continue;  // released at the start
      relax(graph_.edge_dst[e], end_ns + graph_.edge_lag_ns[e], v);
    }
    for (std::int32_t w = waiter_head_[v]; w != kNone;) {
      const Waiter waiter = waiters_[w];
      w = waiter.next;
      const std::int32_t op_index = graph_.runtime_op[waiter.task];
      if (op_index != kNone && is_host_sync(graph_.runtime_ops[op_index].kind)) {
        SyncState& state = sync_[op_index];
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

  // Matching across ranks went wrong somewhere (members wait on each other): end the group that
  // has waited longest with its members' own durations so the rest of the job can go on.
  bool release_stuck_collective() {
    std::int32_t best = kNone;
    for (std::size_t g = 0; g < groups_.size(); ++g) {
      const GroupState& state = groups_[g];
      if (state.done || state.arrived == 0) continue;
      if (best == kNone || state.join_ns < groups_[best].join_ns)
        best = static_cast<std::int32_t>(g);
    }
    if (best == kNone) return false;
    GroupState& state = groups_[best];
    state.done = true;
    ++result_.collectives_forced;
    const graph::CollectiveGroup& group = graph_.collectives[best];
    graph::add_warning(
        result_.warnings, "collective released without all members (deadlock)",
        fmt::format("'{}': {} of {} arrived", group.name, state.arrived, group.member_count));
    for (std::int32_t i = 0; i < group.member_count; ++i) {
      const std::int32_t member = graph_.collective_members[group.first_member + i];
      if (result_.start_ns[member] == kUnset || done_[member]) continue;
      complete(member, std::max(result_.start_ns[member] + graph_.duration_ns[member], now_ns_));
    }
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
  std::int64_t now_ns_ = kUnset;
};

}  // namespace

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
