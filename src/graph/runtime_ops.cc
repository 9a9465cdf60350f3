// Synchronizing calls, event records and stream waits (Lumos "runtime dependencies"): which call
// is one, which stream or record it refers to (a cuda_sync record when the trace has one, naming
// and ordering rules otherwise), and the checks against the input timeline that keep a wrong
// guess from slowing the replay down. The rules are listed in docs/replay.md.
#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "graph/rank_builder.h"

namespace powertrain::graph::detail {
namespace {

constexpr std::int64_t kMinTime = std::numeric_limits<std::int64_t>::min();

}  // namespace

CallClass classify_call(std::string_view name) {
  if (name == "INVALID") return CallClass::kInvalid;
  if (name == "cudaDeviceSynchronize" || name == "cuCtxSynchronize" ||
      name == "hipDeviceSynchronize") {
    return CallClass::kContextSync;
  }
  if (name == "cudaStreamSynchronize" || name == "cuStreamSynchronize" ||
      name == "hipStreamSynchronize") {
    return CallClass::kStreamSync;
  }
  if (name == "cudaEventSynchronize" || name == "cuEventSynchronize" ||
      name == "hipEventSynchronize") {
    return CallClass::kEventSync;
  }
  if (name == "cudaEventRecord" || name == "cudaEventRecordWithFlags" || name == "cuEventRecord" ||
      name == "cuEventRecordWithFlags" || name == "hipEventRecord" ||
      name == "hipEventRecordWithFlags") {
    return CallClass::kEventRecord;
  }
  if (name == "cudaStreamWaitEvent" || name == "cuStreamWaitEvent" ||
      name == "hipStreamWaitEvent") {
    return CallClass::kStreamWait;
  }
  // Copies that return only when the data has arrived.
  if (name == "cudaMemcpy" || name == "cudaMemcpy2D" || name == "cudaMemcpy3D" ||
      name == "cudaMemcpyToSymbol" || name == "cudaMemcpyFromSymbol" || name == "cuMemcpyDtoH_v2" ||
      name == "cuMemcpyHtoD_v2" || name == "cuMemcpyDtoH" || name == "cuMemcpyHtoD" ||
      name == "hipMemcpy" || name == "hipMemcpy2D" || name == "hipMemcpyDtoH" ||
      name == "hipMemcpyHtoD" || name == "hipMemcpyWithStream" || name == "cudaMemcpyPeer" ||
      name == "cuMemcpyPeer" || name == "hipMemcpyPeer") {
    return CallClass::kSyncCopy;
  }
  // Async copies block too when the host memory is pageable (a D2H loss.item()); decided per
  // call from the input (the call returned after its copy ended).
  if (name == "cudaMemcpyAsync" || name == "cuMemcpyDtoHAsync_v2" || name == "cuMemcpyDtoHAsync" ||
      name == "cuMemcpyAsync" || name == "hipMemcpyAsync" || name == "hipMemcpyDtoHAsync" ||
      name == "cudaMemcpy2DAsync" || name == "cudaMemcpy3DAsync" || name == "cudaMemcpyPeerAsync" ||
      name == "cuMemcpy2DAsync_v2" || name == "cuMemcpy3DAsync_v2" || name == "cuMemcpyPeerAsync" ||
      name == "hipMemcpy2DAsync" || name == "hipMemcpyPeerAsync") {
    return CallClass::kAsyncCopy;
  }
  return CallClass::kOther;
}

std::uint8_t launch_mask(std::string_view name) {
  const auto starts = [&](std::string_view prefix) {
    return name.substr(0, prefix.size()) == prefix;
  };
  for (std::string_view prefix : {"cudaGraphLaunch", "cuGraphLaunch", "hipGraphLaunch"}) {
    if (starts(prefix)) return kLaunchesKernel | kLaunchesCopy | kLaunchesSet | kLaunchesGraph;
  }
  for (std::string_view prefix : {"cudaLaunch", "cuLaunch", "hipLaunch", "hipExtLaunch",
                                  "hipExtModuleLaunch", "hipModuleLaunch"}) {
    if (starts(prefix)) return kLaunchesKernel;
  }
  for (std::string_view prefix : {"cudaMemcpy", "cuMemcpy", "hipMemcpy"}) {
    if (starts(prefix)) return kLaunchesCopy;
  }
  for (std::string_view prefix : {"cudaMemset", "cuMemset", "hipMemset"}) {
    if (starts(prefix)) return kLaunchesSet;
  }
  return 0;
}

// The stream of the closest launch before `task` (rank-wide) on a stream other than `not_on`.
std::int32_t RankBuilder::preceding_launch_stream(std::int32_t task, std::int32_t not_on) const {
  auto it = std::lower_bound(launches_.begin(), launches_.end(), task);
  for (int steps = 0; it != launches_.begin() && steps < 64; ++steps) {
    --it;
    const std::int32_t stream = launch_stream_[local(*it)];
    if (stream != not_on) return stream;
  }
  return kNone;
}

std::int32_t RankBuilder::stream_of_record(const TraceEvent& record, std::int64_t stream_id) const {
  return find_stream(record.pid, stream_id);
}

void RankBuilder::drop(std::string_view what, std::int32_t task) {
  ++graph_.stats.dropped_contradicted;
  add_warning(graph_.warnings, "dependency contradicts the input, dropped",
              fmt::format("{}: {} '{}' at {} ns", trace_.source, what, graph_.task_name(task),
                          graph_.input_start_ns[task]));
}

// What create_runtime_ops keeps while it walks a rank's host calls.
struct RuntimeOpScan {
  std::unordered_map<std::int32_t, std::int32_t> record_of_call;  // call → its cuda_sync record
  std::unordered_map<std::int64_t, std::int32_t> stream_hint;  // event-record correlation → stream
  // Event-record call position → its stream, from the host event sync that waited for it, and
  // whether that was inferred (from the call's timing) or read (its record's wait_on_stream).
  std::unordered_map<std::int32_t, std::pair<std::int32_t, bool>> record_stream_by_sync;
  std::vector<std::int32_t> next_launch_stream;  // per position: the thread's next launch stream
  bool rank_has_records = false;                 // any cudaEventRecord on this rank
  std::vector<std::int32_t> last_launch_stream;  // per thread
  std::vector<std::vector<std::int32_t>> thread_records;  // per thread: its event-record ops
  std::unordered_map<std::int64_t, std::int32_t> record_by_correlation;
  std::unordered_map<std::int64_t, std::int32_t> record_by_event;
  // Per op of this rank (index − op_base): a record's capture on the input timeline.
  std::size_t op_base = 0;
  std::vector<std::int32_t> captured;
};

// One synchronizing host call.
struct CallSite {
  std::int32_t pos = 0;
  const TraceEvent* event = nullptr;
  const TraceEvent* record = nullptr;  // its cuda_sync record, if any
  std::int32_t thread = 0;
  std::int32_t task = 0;
  IssueKey at;
};

void RankBuilder::start_runtime_op_scan(RuntimeOpScan& scan) const {
  // cuda_sync records attach to their host call by correlation.
  for (const auto& [call, record] : record_of_call_by_time_)
    scan.record_of_call.emplace(call, record);
  for (std::int32_t pos = 0; pos < n_; ++pos) {
    const bool placed = role_[pos] == Role::kHost && event(pos).kind == EventKind::kCudaSync;
    if (role_[pos] != Role::kSyncRecord && !placed) continue;
    const TraceEvent& r = event(pos);
    // A record placed on the host is its own call.
    const std::int32_t call = placed ? pos : find_launch(r.correlation);
    if (call != kNone) scan.record_of_call.emplace(call, pos);
    if (r.wait_on_event_correlation >= 0 && r.wait_on_stream >= 0) {
      const std::int32_t stream = stream_of_record(r, r.wait_on_stream);
      if (stream != kNone) scan.stream_hint.emplace(r.wait_on_event_correlation, stream);
    }
  }
  // Which stream the next launch of each thread goes to (for stream waits without a record).
  scan.next_launch_stream.assign(n_, kNone);
  std::vector<std::int32_t> next(graph_.processors.size() - proc_base_, kNone);
  for (std::int32_t pos = n_ - 1; pos >= 0; --pos) {
    if (role_[pos] != Role::kHost) continue;
    const std::int32_t thread = proc_[pos] - proc_base_;
    scan.next_launch_stream[pos] = next[thread];
    if (is_leaf_[pos] && launch_stream_[local(task_of_pos_[pos])] != kNone) {
      next[thread] = launch_stream_[local(task_of_pos_[pos])];
    }
  }
  for (std::int32_t pos = 0; pos < n_ && !scan.rank_has_records; ++pos) {
    scan.rank_has_records = role_[pos] == Role::kHost && is_call(event(pos).kind) &&
                            name_class_[event(pos).name] == CallClass::kEventRecord;
  }
  scan.last_launch_stream.assign(graph_.processors.size() - proc_base_, kNone);
  scan.thread_records.resize(scan.last_launch_stream.size());
  scan.op_base = graph_.runtime_ops.size();
}

// The stream (rank-wide) whose last task enqueued before `at` ended inside the host call `call`
// (from its start, or from any time with `from_start` false, to its return + tolerance), of
// several the one ending last: the GPU work a blocking call waited for. kNone when none did.
std::int32_t RankBuilder::stream_ending_in_call(std::int32_t call, IssueKey at,
                                                bool from_start) const {
  const std::int64_t start = from_start ? graph_.input_start_ns[call] : kMinTime;
  const std::int64_t end = graph_.input_end_ns(call) + options_.contradiction_tolerance_ns;
  std::int32_t best = kNone;
  std::int64_t best_end = kMinTime;
  for (std::int32_t stream : graph_.ranks[rank_index_].streams) {
    const std::int32_t task = last_enqueued(stream, at);
    if (task == kNone) continue;
    const std::int64_t task_end = graph_.input_end_ns(task);
    if (task_end >= start && task_end <= end && task_end > best_end) {
      best = stream;
      best_end = task_end;
    }
  }
  return best;
}

// Without a cuda_sync record naming it, an event record's stream is the thread's current one by
// rule, which is wrong when the event is recorded on another stream after work was launched to
// the current one (the end of an all-reduce on the NCCL stream after more backward kernels). A
// host event sync on the same event (by CUDA event id, else the thread's latest record, as
// find_event_record pairs them) returned once the captured task ended: when the rule's captured
// task did not end inside that call, the stream whose captured task did (closest to the return)
// is the record's; when none did and the rule's task ended after the call returned, the latest
// task that ended before it.
void RankBuilder::infer_record_streams(RuntimeOpScan& scan) const {
  if (!scan.rank_has_records) return;  // no cudaEventRecord: nothing to correct
  const std::size_t threads = graph_.processors.size() - proc_base_;
  std::vector<std::int32_t> current(threads, kNone);        // the thread's last launch stream
  std::vector<std::int32_t> latest(threads, kNone);         // the thread's latest record call
  std::unordered_map<std::int64_t, std::int32_t> by_event;  // CUDA event id → record call
  std::unordered_map<std::int32_t, std::int32_t> rule;      // record call → rule stream
  const std::int64_t tolerance = options_.contradiction_tolerance_ns;
  for (std::int32_t pos = 0; pos < n_; ++pos) {
    if (role_[pos] != Role::kHost) continue;
    const TraceEvent& e = event(pos);
    const std::size_t thread = static_cast<std::size_t>(proc_[pos] - proc_base_);
    if (is_leaf_[pos] && launch_stream_[local(task_of_pos_[pos])] != kNone) {
      current[thread] = launch_stream_[local(task_of_pos_[pos])];
    }
    if (!is_call(e.kind) && e.kind != EventKind::kCudaSync) continue;
    const auto record_it = scan.record_of_call.find(pos);
    const TraceEvent* record =
        record_it == scan.record_of_call.end() ? nullptr : &event(record_it->second);
    CallClass cls = name_class_[e.name];
    if (record != nullptr && record->sync != SyncKind::kNone) {
      cls = record->sync == SyncKind::kEventSync ? CallClass::kEventSync : CallClass::kOther;
    }
    if (cls == CallClass::kEventRecord) {
      if (scan.stream_hint.count(e.correlation) != 0) continue;  // named by a wait's record
      rule[pos] = current[thread];
      latest[thread] = pos;
      if (e.cuda_event >= 0) by_event[e.cuda_event] = pos;
      continue;
    }
    if (cls != CallClass::kEventSync) continue;
    std::int32_t record_pos = kNone;
    if (record != nullptr && record->wait_on_event_correlation >= 0) {
      const std::int32_t named = find_launch(record->wait_on_event_correlation);
      if (named != kNone && rule.count(named) != 0) record_pos = named;
    } else if (e.cuda_event >= 0) {
      auto it = by_event.find(e.cuda_event);
      if (it != by_event.end()) record_pos = it->second;
    } else {
      record_pos = latest[thread];
    }
    if (record_pos == kNone) continue;
    if (record != nullptr && record->wait_on_stream >= 0) {
      // The record says which stream the event was on.
      const std::int32_t stream = stream_of_record(*record, record->wait_on_stream);
      if (stream != kNone) scan.record_stream_by_sync[record_pos] = {stream, false};
      continue;
    }
    const std::int32_t record_task = leaf_task_of(record_pos);
    const IssueKey at{graph_.input_start_ns[record_task], record_task};
    const std::int32_t sync_task = leaf_task_of(pos);
    const std::int64_t start = graph_.input_start_ns[sync_task];
    const std::int64_t end = graph_.input_end_ns(sync_task);
    const std::int32_t guessed = rule[record_pos];
    const std::int32_t guessed_task = guessed == kNone ? kNone : last_enqueued(guessed, at);
    const std::int64_t guessed_end =
        guessed_task == kNone ? kMinTime : graph_.input_end_ns(guessed_task);
    if (guessed_task != kNone && guessed_end >= start && guessed_end <= end + tolerance) continue;
    std::int32_t chosen = stream_ending_in_call(sync_task, at, true);
    if (chosen == kNone && guessed_end > end + tolerance) {
      // Nothing ended inside the call and the rule contradicts it: the latest task that ended
      // before the call returned.
      chosen = stream_ending_in_call(sync_task, at, false);
    }
    if (chosen != kNone && chosen != guessed)
      scan.record_stream_by_sync[record_pos] = {chosen, true};
  }
}

// The call's class by its name, then its cuda_sync record; an async copy that blocked (it ended
// no earlier than its copy did: it waited for the data) is a synchronous copy.
CallClass RankBuilder::runtime_call_class(std::int32_t pos, const TraceEvent* record) {
  const TraceEvent& e = event(pos);
  CallClass cls = name_class_[e.name];
  if (cls == CallClass::kAsyncCopy) {
    const std::int32_t first = launched_first_[local(leaf_task_of(pos))];
    bool blocked = first != kNone;
    for (std::int32_t t = first; t != kNone; t = launched_next_[local(t)]) {
      blocked = blocked && graph_.kind[t] == TaskKind::kMemcpy &&
                graph_.input_end_ns(t) <= e.start_ns + duration(e) &&
                graph_.input_end_ns(t) > e.start_ns;
    }
    if (!blocked) return CallClass::kOther;
    cls = CallClass::kSyncCopy;
    ++graph_.stats.blocking_async_copies;
  }
  if (record != nullptr) {
    switch (record->sync) {
      case SyncKind::kStreamWaitEvent:
        return CallClass::kStreamWait;
      case SyncKind::kEventSync:
        return CallClass::kEventSync;
      case SyncKind::kStreamSync:
        return CallClass::kStreamSync;
      case SyncKind::kContextSync:
        return CallClass::kContextSync;
      case SyncKind::kNone:
        break;
    }
  }
  return cls;
}

// The cudaEventRecord op a wait/sync refers to: by correlation (cuda_sync record), by CUDA
// event id, else (rules) the thread's latest record on a stream other than `not_on`.
std::int32_t RankBuilder::find_event_record(const RuntimeOpScan& scan, const CallSite& call,
                                            std::int32_t not_on) const {
  const TraceEvent* record = call.record;
  if (record != nullptr && record->wait_on_event_correlation >= 0) {
    auto it = scan.record_by_correlation.find(record->wait_on_event_correlation);
    if (it != scan.record_by_correlation.end()) return it->second;
  }
  if (call.event->cuda_event >= 0) {
    auto it = scan.record_by_event.find(call.event->cuda_event);
    if (it != scan.record_by_event.end()) return it->second;
  }
  if (record != nullptr) return kNone;  // named a record we do not have: no guessing
  const auto& records = scan.thread_records[call.thread];
  for (std::size_t k = records.size(), steps = 0; k > 0 && steps < 16; --k, ++steps) {
    const std::int32_t candidate = records[k - 1];
    const std::int32_t stream = graph_.runtime_ops[candidate].stream;
    if (stream != kNone && stream != not_on) return candidate;
  }
  return kNone;
}

// The task whose end `o` waits for on the input timeline: what its record captured, else the
// last task enqueued on its stream before `at`.
std::int32_t RankBuilder::producer_on_input(const RuntimeOpScan& scan, const RuntimeOp& o,
                                            IssueKey at) const {
  if (o.record != kNone) return scan.captured[o.record - scan.op_base];
  return last_enqueued(o.stream, at);
}

// A wait whose record's stream was guessed by rule (the thread's current stream) and whose
// captured task ended after the wait's target started: either the event was recorded on another
// stream (a gradient bucket's event on the compute stream right after a send was launched on the
// P2P stream) or the waiting stream is the wrong guess. Only when the target's start is otherwise
// unexplained (its stream's previous task ended earlier) and another stream's task enqueued last
// before the record ended right then (within the contradiction tolerance: the wait held the target
// until it) is the record moved to that stream. Returns the new captured task, kNone when the
// record's stream was not guessed or nothing explains the start.
std::int32_t RankBuilder::restream_record_for_wait(RuntimeOpScan& scan, std::int32_t record,
                                                   std::int32_t waiting, std::int32_t target,
                                                   IssueKey wait_at) {
  RuntimeOp& recorded = graph_.runtime_ops[static_cast<std::size_t>(record)];
  if (!recorded.inferred) return kNone;
  const std::int32_t record_task = recorded.node;
  const IssueKey at{graph_.input_start_ns[record_task], record_task};
  const std::int64_t tolerance = options_.contradiction_tolerance_ns;
  const std::int64_t start = graph_.input_start_ns[target];
  const std::int32_t before = last_enqueued(waiting, wait_at);
  if (before != kNone && graph_.input_end_ns(before) >= start - tolerance) return kNone;
  std::int32_t best_stream = kNone, best_task = kNone;
  std::int64_t best_end = kMinTime;
  for (std::int32_t stream : graph_.ranks[rank_index_].streams) {
    if (stream == waiting || stream == recorded.stream) continue;
    const std::int32_t task = last_enqueued(stream, at);
    if (task == kNone) continue;
    const std::int64_t end = graph_.input_end_ns(task);
    if (end <= start + tolerance && end >= start - tolerance && end > best_end) {
      best_stream = stream;
      best_task = task;
      best_end = end;
    }
  }
  if (best_task == kNone) return kNone;
  recorded.stream = best_stream;
  scan.captured[static_cast<std::size_t>(record) - scan.op_base] = best_task;
  add_warning(graph_.warnings,
              "event record's stream taken from the stream wait that awaited it (the rule's "
              "stream contradicted the input)",
              fmt::format("{}: '{}' at {} ns", trace_.source, graph_.task_name(record_task),
                          graph_.input_start_ns[record_task]));
  return best_task;
}

// A stream wait: the waiting stream, the record (or stream) it waits for, the task it holds
// back; false when one is unknown or the input contradicts the wait (dropped).
bool RankBuilder::resolve_stream_wait(RuntimeOpScan& scan, const CallSite& call, RuntimeOp& op,
                                      std::int64_t& wait_slack) {
  const TraceEvent* record = call.record;
  op.kind = RuntimeOpKind::kStreamWait;
  const std::int32_t waiting = record != nullptr ? stream_of_record(*record, record->tid)
                                                 : scan.next_launch_stream[call.pos];
  if (waiting == kNone) {
    return false;
  }
  op.record = find_event_record(scan, call, waiting);
  if (op.record == kNone) {
    if (record != nullptr && record->wait_on_stream >= 0) {
      op.stream = stream_of_record(*record, record->wait_on_stream);
    } else if (!scan.rank_has_records) {
      // No cudaEventRecord in the trace: the closest earlier launch on another stream.
      op.stream = preceding_launch_stream(call.task, waiting);
      op.inferred = true;
    }
  }
  if (op.record == kNone && op.stream == kNone) {
    return false;
  }
  op.target = next_enqueued(waiting, call.at);
  if (op.target == kNone) {
    return false;
  }
  std::int32_t producer = producer_on_input(scan, op, call.at);
  if (producer != kNone &&
      graph_.input_end_ns(producer) >
          graph_.input_start_ns[op.target] + options_.contradiction_tolerance_ns) {
    producer = op.record == kNone
                   ? kNone
                   : restream_record_for_wait(scan, op.record, waiting, op.target, call.at);
    if (producer == kNone) {
      drop("stream wait", call.task);
      return false;
    }
  }
  if (producer != kNone) {
    wait_slack =
        std::max<std::int64_t>(0, graph_.input_start_ns[op.target] - graph_.input_end_ns(producer));
  }
  return true;
}

// Fills `op` for a call of class `cls`: its stream, record and target, and for host syncs the
// input end of what it waits for. False when the call is not a usable runtime op.
bool RankBuilder::resolve_runtime_op(RuntimeOpScan& scan, const CallSite& call, CallClass cls,
                                     RuntimeOp& op, std::int64_t& awaited_end,
                                     std::int64_t& wait_slack) {
  const TraceEvent& e = *call.event;
  const TraceEvent* record = call.record;
  const std::int32_t task = call.task;
  const std::int32_t thread = call.thread;
  const IssueKey at = call.at;
  const auto& stream_hint = scan.stream_hint;
  const auto& last_launch_stream = scan.last_launch_stream;

  bool valid = true;
  switch (cls) {
    case CallClass::kEventRecord: {
      op.kind = RuntimeOpKind::kEventRecord;
      auto hint = stream_hint.find(e.correlation);
      const auto evidence = scan.record_stream_by_sync.find(call.pos);
      if (hint != stream_hint.end()) {
        op.stream = hint->second;
        op.inferred = false;
      } else if (evidence != scan.record_stream_by_sync.end()) {
        op.stream = evidence->second.first;  // the sync that waited for it says which
        op.inferred = evidence->second.second;
      } else {
        op.stream = last_launch_stream[thread];  // rule: the thread's current stream
        op.inferred = true;
      }
      break;
    }
    case CallClass::kStreamWait:
      valid = resolve_stream_wait(scan, call, op, wait_slack);
      break;
    case CallClass::kStreamSync: {
      op.kind = RuntimeOpKind::kStreamSync;
      op.stream =
          record != nullptr ? stream_of_record(*record, record->tid) : last_launch_stream[thread];
      const std::int32_t awaited = last_enqueued(op.stream, at);
      if (awaited != kNone) awaited_end = graph_.input_end_ns(awaited);
      valid = op.stream != kNone;
      break;
    }
    case CallClass::kEventSync: {
      op.kind = RuntimeOpKind::kEventSync;
      op.record = find_event_record(scan, call, kNone);  // any stream
      if (op.record == kNone && record != nullptr && record->wait_on_stream >= 0) {
        op.stream = stream_of_record(*record, record->wait_on_stream);
      } else if (op.record == kNone) {
        // No record of the event in the trace: the GPU work the call waited for says which stream.
        op.stream = stream_ending_in_call(task, at, true);
        op.inferred = true;
      }
      valid = op.record != kNone || op.stream != kNone;
      const std::int32_t awaited = valid ? producer_on_input(scan, op, at) : kNone;
      if (awaited != kNone) awaited_end = graph_.input_end_ns(awaited);
      break;
    }
    case CallClass::kContextSync: {
      op.kind = RuntimeOpKind::kContextSync;
      op.inferred = false;  // the whole device: nothing to guess
      for (std::int32_t stream : graph_.ranks[rank_index_].streams) {
        const std::int32_t awaited = last_enqueued(stream, at);
        if (awaited != kNone) awaited_end = std::max(awaited_end, graph_.input_end_ns(awaited));
      }
      break;
    }
    case CallClass::kSyncCopy: {
      op.kind = RuntimeOpKind::kSyncCopy;
      op.inferred = false;
      valid = launched_first_[local(task)] != kNone;
      for (std::int32_t t = launched_first_[local(task)]; t != kNone;
           t = launched_next_[local(t)]) {
        awaited_end = std::max(awaited_end, graph_.input_end_ns(t));
      }
      break;
    }
    case CallClass::kOther:
    case CallClass::kInvalid:
    case CallClass::kAsyncCopy:
      valid = false;
      break;
  }
  return valid;
}

// Checks a host sync against the input timeline and registers the op (its stream-wait edge, its
// record for later waits).
void RankBuilder::add_runtime_op(RuntimeOpScan& scan, const CallSite& call, const RuntimeOp& op,
                                 std::int64_t awaited_end, std::int64_t wait_slack) {
  const std::int32_t task = call.task;
  const TraceEvent& e = *call.event;
  RuntimeOp added = op;
  const bool host_sync =
      op.kind != RuntimeOpKind::kEventRecord && op.kind != RuntimeOpKind::kStreamWait;
  if (host_sync) {
    const std::int64_t call_end = graph_.input_end_ns(task);
    if (awaited_end > call_end + options_.contradiction_tolerance_ns) {
      drop(to_string(op.kind), task);
      return;
    }
    added.tail_ns = std::clamp(call_end - std::max(graph_.input_start_ns[task], awaited_end),
                               std::int64_t{0}, graph_.input_duration_ns[task]);
  }
  if (graph_.runtime_op[task] != kNone) {
    // A runtime call and its driver child map to the same leaf; the outer call (first in
    // time order) carries the cuda_sync record when there is one.
    add_warning(graph_.warnings, "two synchronizing calls on one task, kept the first",
                fmt::format("{}: '{}'", trace_.source, graph_.task_name(task)));
    return;
  }
  const std::int32_t index = static_cast<std::int32_t>(graph_.runtime_ops.size());
  graph_.runtime_op[task] = index;
  graph_.runtime_ops.push_back(added);
  scan.captured.push_back(op.kind == RuntimeOpKind::kEventRecord ? last_enqueued(op.stream, call.at)
                                                                 : kNone);
  ++graph_.stats.runtime_ops[static_cast<int>(op.kind)];
  graph_.stats.inferred_runtime_ops += op.inferred;
  if (op.kind == RuntimeOpKind::kEventRecord) {
    scan.thread_records[call.thread].push_back(index);
    if (e.correlation >= 0) scan.record_by_correlation[e.correlation] = index;
    if (e.cuda_event >= 0) scan.record_by_event[e.cuda_event] = index;
  }
  if (op.kind == RuntimeOpKind::kStreamWait) {
    add_edge(task, op.target, EdgeKind::kStreamWait);
    if (wait_slack >= 0) waits_.push_back({index, op.target, wait_slack});
  }
}

void RankBuilder::create_runtime_ops() {
  if (too_many_) return;
  RuntimeOpScan scan;
  start_runtime_op_scan(scan);
  infer_record_streams(scan);
  if (!scan.record_stream_by_sync.empty()) {
    add_warning(graph_.warnings,
                "event record's stream taken from the host sync that waited for it",
                fmt::format("{}: {} record(s)", trace_.source, scan.record_stream_by_sync.size()));
  }
  for (std::int32_t pos = 0; pos < n_; ++pos) {
    if (role_[pos] != Role::kHost) continue;
    const TraceEvent& e = event(pos);
    const std::int32_t thread = proc_[pos] - proc_base_;
    if (is_leaf_[pos] && launch_stream_[local(task_of_pos_[pos])] != kNone) {
      scan.last_launch_stream[thread] = launch_stream_[local(task_of_pos_[pos])];
    }
    if (!is_call(e.kind) && e.kind != EventKind::kCudaSync) continue;
    const auto record_it = scan.record_of_call.find(pos);
    const TraceEvent* record =
        record_it == scan.record_of_call.end() ? nullptr : &event(record_it->second);
    const CallClass cls = runtime_call_class(pos, record);
    if (cls == CallClass::kOther || cls == CallClass::kInvalid) continue;
    const std::int32_t task = leaf_task_of(pos);
    const CallSite call{pos, &e, record, thread, task, IssueKey{graph_.input_start_ns[task], task}};
    RuntimeOp op;
    op.node = task;
    op.inferred = record == nullptr;
    std::int64_t awaited_end = kMinTime;  // input end of what a host sync waits for
    std::int64_t wait_slack = -1;         // stream wait: target start − producer end (input)
    if (!resolve_runtime_op(scan, call, cls, op, awaited_end, wait_slack)) continue;
    add_runtime_op(scan, call, op, awaited_end, wait_slack);
  }
}

}  // namespace powertrain::graph::detail
