// One rank of the execution graph: events are classified and leaves found (nesting per host
// thread) in one pass, tasks are created in time order in a second, then launches, stream order,
// thread order and the cross-thread gap rule are linked. Every edge gets the lag that makes a
// replay of the unchanged graph reproduce the input: the edge that bound a task's start in the
// trace keeps the measured slack, the others keep none (a launch keeps at most the rank's median
// launch delay).
#include "graph/rank_builder.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <unordered_map>

#include "graph/step_windows.h"

namespace powertrain::graph::detail {
namespace {

constexpr std::int64_t kMaxTime = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMinTime = std::numeric_limits<std::int64_t>::min();

TaskKind task_kind_of(EventKind kind) {
  if (kind == EventKind::kGpuMemcpy) return TaskKind::kMemcpy;
  if (kind == EventKind::kGpuMemset) return TaskKind::kMemset;
  return TaskKind::kKernel;
}

}  // namespace

void RankBuilder::build() {
  n_ = static_cast<std::int32_t>(trace_.events.size());
  graph_.stats.events_read += n_;
  proc_base_ = static_cast<std::int32_t>(graph_.processors.size());
  task_base_ = graph_.task_count();
  edge_base_ = edges_.size();
  order_events();
  classify_names();
  place_unattached_sync_records();
  find_leaves();
  create_tasks();
  link_launches();
  link_streams();
  link_threads();
  create_runtime_ops();
  assign_lags();
  RankInfo& info = graph_.ranks[rank_index_];
  info.first_task = task_base_;
  info.end_task = graph_.task_count();
}

void RankBuilder::order_events() {
  const auto before = [](const TraceEvent& a, const TraceEvent& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.duration_ns > b.duration_ns;
  };
  bool sorted = true;
  for (std::int32_t i = 1; i < n_ && sorted; ++i) {
    sorted = !before(trace_.events[i], trace_.events[i - 1]);
  }
  if (sorted) return;
  add_warning(graph_.warnings, "events not sorted by time",
              fmt::format("{}: sorted by the graph builder", trace_.source));
  order_.resize(n_);
  for (std::int32_t i = 0; i < n_; ++i) order_[i] = static_cast<std::uint32_t>(i);
  std::stable_sort(order_.begin(), order_.end(), [&](std::uint32_t a, std::uint32_t b) {
    return before(trace_.events[a], trace_.events[b]);
  });
}

void RankBuilder::classify_names() {
  name_class_.resize(trace_.names.size());
  name_is_step_.resize(trace_.names.size());
  name_launch_.resize(trace_.names.size());
  for (std::size_t i = 0; i < trace_.names.size(); ++i) {
    name_class_[i] = classify_call(trace_.names[i]);
    name_launch_[i] = launch_mask(trace_.names[i]);
    name_is_step_[i] = trace_.names[i].rfind("ProfilerStep#", 0) == 0;
  }
}

std::int32_t RankBuilder::processor_of(std::int64_t pid, std::int64_t tid, bool gpu) {
  const ProcessorKey key{pid, tid, gpu};
  if (have_last_key_ && key == last_key_) return last_processor_;
  auto [it, inserted] =
      processor_index_.try_emplace(key, static_cast<std::int32_t>(graph_.processors.size()));
  if (inserted) {
    graph_.processors.push_back(
        {rank_index_, gpu ? ProcessorKind::kGpuStream : ProcessorKind::kCpuThread, pid, tid});
    RankInfo& info = graph_.ranks[rank_index_];
    (gpu ? info.streams : info.threads).push_back(it->second);
    stacks_.emplace_back();
    thread_tasks_.emplace_back();
    enqueued_.emplace_back();
  }
  have_last_key_ = true;
  last_key_ = key;
  last_processor_ = it->second;
  return it->second;
}

std::int32_t RankBuilder::find_stream(std::int64_t device, std::int64_t stream) const {
  auto it = processor_index_.find({device, stream, true});
  return it == processor_index_.end() ? kNone : it->second;
}

// Pops a finished frame; a frame that got no child is a leaf.
void RankBuilder::pop_frame(std::vector<Frame>& stack) {
  const Frame frame = stack.back();
  stack.pop_back();
  std::int32_t first = frame.pos;
  std::int32_t last = frame.pos;
  if (frame.has_child) {
    is_leaf_[frame.pos] = 0;
    first_leaf_[frame.pos] = frame.first_leaf;
    last_leaf_[frame.pos] = frame.last_leaf;
    first = frame.first_leaf;
    last = frame.last_leaf;
  }
  if (!stack.empty()) {
    Frame& parent = stack.back();
    if (parent.first_leaf < 0) parent.first_leaf = first;
    parent.last_leaf = last;
  }
}

// A cuda_sync record spans the host's wait (CUPTI times the synchronizing API call). When no call
// carries its correlation (the runtime call is missing, or its correlation is), the host still
// waited: attach the record to the synchronizing call around it in time, or, with none, make it
// a host task of its own on the thread whose innermost open event encloses it (the op that
// synchronized, e.g. aten::_local_scalar_dense), else the thread last active before it.
void RankBuilder::place_unattached_sync_records() {
  std::vector<std::int64_t> call_correlations;
  std::vector<std::int64_t> record_correlations;
  bool any = false;
  for (std::int32_t pos = 0; pos < n_; ++pos) {
    const TraceEvent& e = event(pos);
    if (is_call(e.kind) && e.correlation >= 0) call_correlations.push_back(e.correlation);
    if (e.kind == EventKind::kCudaSync) {
      any = any || e.sync != SyncKind::kNone;
      if (e.correlation >= 0) record_correlations.push_back(e.correlation);
    }
  }
  if (!any) return;
  std::sort(call_correlations.begin(), call_correlations.end());
  std::sort(record_correlations.begin(), record_correlations.end());
  const auto has = [](const std::vector<std::int64_t>& sorted, std::int64_t c) {
    return c >= 0 && std::binary_search(sorted.begin(), sorted.end(), c);
  };
  bool unattached = false;  // the common case: every record has its call (no sweep needed)
  for (std::int32_t pos = 0; pos < n_ && !unattached; ++pos) {
    const TraceEvent& e = event(pos);
    unattached = e.kind == EventKind::kCudaSync && e.sync != SyncKind::kNone &&
                 !has(call_correlations, e.correlation);
  }
  if (!unattached) return;
  struct Open {
    std::int32_t pos;
    std::int64_t start_ns, end_ns;
  };
  struct Thread {
    std::int64_t pid, tid;
    std::vector<Open> stack;
    std::int64_t last_start_ns;
  };
  std::vector<Thread> threads;
  std::unordered_map<ProcessorKey, std::size_t, ProcessorKeyHash> thread_of;
  for (std::int32_t pos = 0; pos < n_; ++pos) {
    const TraceEvent& e = event(pos);
    if (e.name >= trace_.names.size()) continue;
    const std::int64_t start = e.start_ns;
    const std::int64_t end = start + duration(e);
    if (is_host(e.kind)) {
      auto [it, inserted] = thread_of.try_emplace({e.pid, e.tid, false}, threads.size());
      if (inserted) threads.push_back({e.pid, e.tid, {}, start});
      Thread& t = threads[it->second];
      while (!t.stack.empty() && (t.stack.back().end_ns <= start || t.stack.back().end_ns < end)) {
        t.stack.pop_back();
      }
      t.stack.push_back({pos, start, end});
      t.last_start_ns = start;
      continue;
    }
    if (e.kind != EventKind::kCudaSync || e.sync == SyncKind::kNone ||
        has(call_correlations, e.correlation)) {
      continue;
    }
    const Thread* best = nullptr;
    const Open* around = nullptr;
    for (Thread& t : threads) {
      while (!t.stack.empty() && t.stack.back().end_ns <= start) t.stack.pop_back();
      if (t.stack.empty() || t.stack.back().end_ns < end) continue;
      const Open& o = t.stack.back();
      if (around == nullptr || o.end_ns - o.start_ns < around->end_ns - around->start_ns) {
        best = &t;
        around = &o;
      }
    }
    if (around != nullptr) {
      const TraceEvent& host = event(around->pos);
      const CallClass cls = name_class_[host.name];
      const bool sync_call = cls == CallClass::kStreamSync || cls == CallClass::kEventSync ||
                             cls == CallClass::kContextSync || cls == CallClass::kStreamWait;
      if (is_call(host.kind) && sync_call && !has(record_correlations, host.correlation) &&
          record_of_call_by_time_.try_emplace(around->pos, pos).second) {
        continue;
      }
    } else {
      for (const Thread& t : threads) {
        if (t.last_start_ns <= start &&
            (best == nullptr || t.last_start_ns > best->last_start_ns)) {
          best = &t;
        }
      }
    }
    if (best == nullptr) continue;  // no host thread before it: left as a record
    record_host_.emplace(pos, std::make_pair(best->pid, best->tid));
  }
  const std::int64_t placed =
      static_cast<std::int64_t>(record_host_.size() + record_of_call_by_time_.size());
  if (placed > 0) {
    graph_.warnings.push_back(
        {"cuda_sync record without its call, placed on the host by time",
         fmt::format("{}: {} attached to the call around it, {} replayed as host waits",
                     trace_.source, record_of_call_by_time_.size(), record_host_.size()),
         placed});
  }
}

void RankBuilder::find_leaves() {
  role_.assign(n_, Role::kSkip);
  proc_.assign(n_, kNone);
  is_leaf_.assign(n_, 1);
  first_leaf_.assign(n_, -1);
  last_leaf_.assign(n_, -1);
  std::int64_t misnested = 0;
  std::int64_t negative = 0;
  for (std::int32_t pos = 0; pos < n_; ++pos) {
    const TraceEvent& e = event(pos);
    if (e.duration_ns < 0) ++negative;
    if (e.name >= trace_.names.size()) continue;  // malformed: the reader should not do this
    const auto placed = record_host_.empty() ? record_host_.end() : record_host_.find(pos);
    if (is_host(e.kind) || placed != record_host_.end()) {
      role_[pos] = Role::kHost;
      const std::int32_t proc =
          placed != record_host_.end()
              ? processor_of(placed->second.first, placed->second.second, false)
              : processor_of(e.pid, e.tid, false);
      proc_[pos] = proc;
      std::vector<Frame>& stack = stacks_[proc - proc_base_];
      const std::int64_t start = e.start_ns;
      const std::int64_t end = start + duration(e);
      while (!stack.empty() && (stack.back().end_ns <= start || stack.back().end_ns < end)) {
        if (stack.back().end_ns > start) ++misnested;  // overlaps without nesting
        pop_frame(stack);
      }
      if (!stack.empty()) stack.back().has_child = true;
      stack.push_back({pos, end});
    } else if (trace::is_gpu_work(e.kind)) {
      role_[pos] = Role::kGpu;
      proc_[pos] = processor_of(e.pid, e.tid, true);
    } else if (e.kind == EventKind::kCudaSync) {
      role_[pos] = Role::kSyncRecord;
    }
  }
  for (auto& stack : stacks_) {
    while (!stack.empty()) pop_frame(stack);
  }
  if (misnested > 0) {
    graph_.warnings.push_back({"host events overlap without nesting",
                               fmt::format("{}: treated as siblings", trace_.source), misnested});
  }
  if (negative > 0) {
    graph_.warnings.push_back(
        {"negative duration", fmt::format("{}: replayed as 0 ns", trace_.source), negative});
  }
}

void RankBuilder::create_tasks() {
  task_of_pos_.assign(n_, kNone);
  std::int64_t tasks = 0;
  for (std::int32_t pos = 0; pos < n_; ++pos) {
    tasks += (role_[pos] == Role::kHost && is_leaf_[pos]) || role_[pos] == Role::kGpu;
  }
  if (tasks + task_base_ > std::numeric_limits<std::int32_t>::max() - 1) {
    too_many_ = true;
    return;
  }
  const std::size_t total = static_cast<std::size_t>(task_base_ + tasks);
  graph_.input_start_ns.reserve(total);
  graph_.input_duration_ns.reserve(total);
  graph_.duration_ns.reserve(total);
  graph_.processor.reserve(total);
  graph_.name.reserve(total);
  graph_.kind.reserve(total);
  graph_.nccl.reserve(total);
  graph_.event_index.reserve(total);
  for (std::int32_t pos = 0; pos < n_; ++pos) {
    const bool host_leaf = role_[pos] == Role::kHost && is_leaf_[pos];
    if (!host_leaf && role_[pos] != Role::kGpu) continue;
    const TraceEvent& e = event(pos);
    const std::int32_t task = graph_.task_count();
    task_of_pos_[pos] = task;
    graph_.input_start_ns.push_back(e.start_ns);
    graph_.input_duration_ns.push_back(duration(e));
    graph_.duration_ns.push_back(duration(e));
    graph_.processor.push_back(proc_[pos]);
    graph_.name.push_back(e.name);
    graph_.kind.push_back(host_leaf ? TaskKind::kCpu : task_kind_of(e.kind));
    graph_.nccl.push_back(!host_leaf && e.nccl && e.kind == EventKind::kKernel);
    graph_.event_index.push_back(event_index(pos));
    if (host_leaf) {
      thread_tasks_[proc_[pos] - proc_base_].push_back(task);
      ++graph_.stats.cpu_tasks;
    } else {
      ++graph_.stats.gpu_tasks;
    }
  }
  graph_.runtime_op.resize(graph_.task_count(), kNone);
  graph_.collective.resize(graph_.task_count(), kNone);
  const std::int32_t local_count = graph_.task_count() - task_base_;
  launch_of_.assign(local_count, kNone);
  launch_stream_.assign(local_count, kNone);
  launched_first_.assign(local_count, kNone);
  launched_next_.assign(local_count, kNone);

  // Parent spans: rebuilt from leaves in the replay; ProfilerStep spans define step windows.
  RankInfo& info = graph_.ranks[rank_index_];
  for (std::int32_t pos = 0; pos < n_; ++pos) {
    if (role_[pos] != Role::kHost) continue;
    const TraceEvent& e = event(pos);
    // Older PyTorch writes ProfilerStep#N as a cpu_op (the reader takes both, so do the windows).
    const bool step = (e.kind == EventKind::kUserAnnotation || e.kind == EventKind::kCpuOp) &&
                      name_is_step_[e.name];
    if (is_leaf_[pos] && !step) continue;
    if (!is_leaf_[pos] && !step && !options_.keep_parent_spans) continue;
    const std::int32_t first = is_leaf_[pos] ? task_of_pos_[pos] : task_of_pos_[first_leaf_[pos]];
    const std::int32_t last = leaf_task_of(pos);
    ParentSpan span;
    span.processor = proc_[pos];
    span.name = e.name;
    span.kind = e.kind;
    span.first_leaf = first;
    span.last_leaf = last;
    span.lead_ns = graph_.input_start_ns[first] - e.start_ns;
    span.trail_ns = e.start_ns + duration(e) - graph_.input_end_ns(last);
    span.input_start_ns = e.start_ns;
    span.input_duration_ns = duration(e);
    if (step) {
      step_parent_of_event_.emplace(event_index(pos),
                                    static_cast<std::int32_t>(graph_.parents.size()));
      info.profiler_steps.push_back(static_cast<std::int32_t>(graph_.parents.size()));
    }
    graph_.parents.push_back(span);
    ++graph_.stats.parent_spans;
  }
  normalize_profiler_steps();
}

// The step windows (graph/step_windows.h, shared with analyze): the spans left out of the list
// stay parent spans.
void RankBuilder::normalize_profiler_steps() {
  RankInfo& info = graph_.ranks[rank_index_];
  const StepWindows windows = step_windows(trace_);
  for (const auto& [kind, example] : windows.notes) add_warning(graph_.warnings, kind, example);
  std::vector<std::int32_t> kept;
  for (std::uint32_t e : windows.events) {
    auto it = step_parent_of_event_.find(e);
    if (it != step_parent_of_event_.end()) kept.push_back(it->second);
  }
  info.step_count = kept.size() == info.profiler_steps.size() &&
                            windows.step_count == static_cast<std::int32_t>(kept.size())
                        ? 0
                        : windows.step_count;
  info.profiler_steps = std::move(kept);
  step_parent_of_event_.clear();
}

void RankBuilder::add_edge(std::int32_t src, std::int32_t dst, EdgeKind kind) {
  std::int64_t slack;
  if (anchored_at_start(kind)) {
    slack = graph_.input_start_ns[dst] - graph_.input_start_ns[src];
    if (slack < 0) {
      add_warning(graph_.warnings, "GPU task starts before its launch",
                  fmt::format("{}: '{}' (replayed from the launch start)", trace_.source,
                              graph_.task_name(dst)));
      slack = 0;
    }
  } else {
    // Never before the source's start, so simulated time only moves forward.
    slack = std::max(graph_.input_start_ns[dst] - graph_.input_end_ns(src),
                     -graph_.input_duration_ns[src]);
  }
  edges_.push_back({src, dst, slack, kind});
  ++graph_.stats.edges[static_cast<int>(kind)];
}

// correlations_ is sorted; Kineto's ids are nearly consecutive per process, so the entry for id c
// is at or near index c − (smallest id). The search starts there and widens by doubling steps
// before a binary search in the bracket found: one or two cache lines per lookup instead of a
// cache miss per halving step of a search over the whole list (same result as lower_bound).
std::int32_t RankBuilder::find_launch(std::int64_t correlation) const {
  const auto& a = correlations_;
  const std::size_t n = a.size();
  if (n == 0 || correlation < a.front().first || correlation > a.back().first) return kNone;
  const auto key = std::make_pair(correlation, std::int32_t{-1});
  const auto offset = static_cast<std::uint64_t>(correlation) -
                      static_cast<std::uint64_t>(a.front().first);  // both ≥ 0 here
  const std::size_t guess = static_cast<std::size_t>(std::min<std::uint64_t>(offset, n - 1));
  std::size_t lo = 0;  // the answer (first entry not below key) lies in [lo, hi]
  std::size_t hi = 0;
  std::size_t step = 1;
  if (a[guess] < key) {
    lo = guess + 1;
    hi = lo;
    while (hi < n && a[hi] < key) {
      lo = hi + 1;
      hi = std::min(n, lo + step);
      step *= 2;
    }
  } else {
    hi = guess;
    lo = hi;
    while (lo > 0 && !(a[lo - 1] < key)) {
      hi = lo - 1;
      lo = hi > step ? hi - step : 0;
      step *= 2;
    }
  }
  const auto it = std::lower_bound(a.begin() + static_cast<std::ptrdiff_t>(lo),
                                   a.begin() + static_cast<std::ptrdiff_t>(hi), key);
  if (it == a.end() || it->first != correlation) return kNone;
  return it->second;
}

void RankBuilder::link_launches() {
  if (too_many_) return;
  for (std::int32_t pos = 0; pos < n_; ++pos) {
    if (role_[pos] == Role::kHost && is_call(event(pos).kind) && event(pos).correlation >= 0) {
      correlations_.emplace_back(event(pos).correlation, pos);
    }
  }
  std::sort(correlations_.begin(), correlations_.end());
  for (std::int32_t pos = 0; pos < n_; ++pos) {
    if (role_[pos] != Role::kGpu) continue;
    const std::int32_t task = task_of_pos_[pos];
    const std::int32_t launch_pos = find_launch(event(pos).correlation);
    if (launch_pos == kNone) {
      ++graph_.stats.gpu_tasks_without_launch;
      add_warning(
          graph_.warnings, "GPU task without launch",
          fmt::format(
              "{}: '{}' correlation {} (anchored to host activity, or at its measured start)",
              trace_.source, graph_.task_name(task), event(pos).correlation));
      continue;
    }
    const std::int32_t launch = leaf_task_of(launch_pos);
    add_edge(launch, task, EdgeKind::kLaunch);
    launch_of_[local(task)] = launch;
    if (launch_stream_[local(launch)] == kNone) launch_stream_[local(launch)] = proc_[pos];
    // Keep the launched tasks of a call in a list (a blocking copy waits for all of them).
    launched_next_[local(task)] = launched_first_[local(launch)];
    launched_first_[local(launch)] = task;
  }
}

// GPU work whose correlation no call carries (older CUPTI, INVALID or missing records) was still
// issued by the host: by stream FIFO order no later than the next launched task on its stream,
// and no later than its own start. Anchor it to the leaf that the thread launching that stream's
// work was running then (time nesting, as older traces link ops to runtime calls), or the last
// one before it that could issue such work (not a sync the thread was blocked in). Work that
// starts before the thread's first leaf was launched before the profiling window: left alone.
void RankBuilder::anchor_launchless() {
  std::vector<std::vector<std::int32_t>> by_stream(graph_.processors.size() - proc_base_);
  bool any = false;
  for (std::int32_t task = task_base_; task < graph_.task_count(); ++task) {
    if (!is_gpu(graph_.kind[task])) continue;
    by_stream[graph_.processor[task] - proc_base_].push_back(task);
    any = any || launch_of_[local(task)] == kNone;
  }
  if (!any) return;
  pair_orphan_launches();
  for (const std::vector<std::int32_t>& tasks : by_stream) {
    // Per position: the next launched task on the stream (its launch bounds earlier work).
    std::int32_t next_launched = kNone;
    std::int32_t previous_launched = kNone;
    std::vector<std::int32_t> next(tasks.size(), kNone);
    for (std::size_t i = tasks.size(); i-- > 0;) {
      next[i] = next_launched;
      if (launch_of_[local(tasks[i])] != kNone) next_launched = tasks[i];
    }
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const std::int32_t task = tasks[i];
      if (launch_of_[local(task)] != kNone) {
        previous_launched = task;
        continue;
      }
      const std::int32_t guide = next[i] != kNone ? next[i] : previous_launched;
      if (guide == kNone) continue;
      const std::int32_t launcher = launch_of_[local(guide)];
      std::int64_t bound = graph_.input_start_ns[task];
      if (next[i] != kNone) bound = std::min(bound, graph_.input_start_ns[launcher] - 1);
      const auto& thread = thread_tasks_[graph_.processor[launcher] - proc_base_];
      auto it = std::upper_bound(
          thread.begin(), thread.end(), bound,
          [&](std::int64_t t, std::int32_t leaf) { return t < graph_.input_start_ns[leaf]; });
      // A thread blocked in a sync issues nothing, and a copy call issues only its copy: skip
      // such leaves, else a sync would await work it "issued" itself (issue 13: +25 % step).
      const bool copy = graph_.kind[task] == TaskKind::kMemcpy;
      while (it != thread.begin() && !can_issue(*std::prev(it), copy)) --it;
      if (it == thread.begin()) continue;  // launched before the window
      const std::int32_t anchor = *std::prev(it);
      add_edge(anchor, task, EdgeKind::kAnchor);
      launch_of_[local(task)] = anchor;
      ++graph_.stats.gpu_tasks_anchored;
    }
  }
}

// Launch calls (and INVALID records) whose correlation no GPU work carries, in start order.
std::vector<OrphanLaunch> RankBuilder::orphan_launches() const {
  std::vector<OrphanLaunch> orphans;
  std::vector<std::int64_t> gpu_correlations;
  for (std::int32_t pos = 0; pos < n_; ++pos) {
    if (role_[pos] == Role::kGpu && event(pos).correlation >= 0) {
      gpu_correlations.push_back(event(pos).correlation);
    }
  }
  std::sort(gpu_correlations.begin(), gpu_correlations.end());
  // Per host thread, the spans of its collective ops (record_param_comms, nccl:*): a launch
  // inside one enqueued the collective's kernel.
  std::map<std::pair<std::int64_t, std::int64_t>,
           std::vector<std::pair<std::int64_t, std::int64_t>>>
      collective_spans;
  for (std::int32_t pos = 0; pos < n_; ++pos) {
    const TraceEvent& e = event(pos);
    if (role_[pos] == Role::kHost && e.nccl && !is_call(e.kind))
      collective_spans[{e.pid, e.tid}].emplace_back(e.start_ns, e.start_ns + e.duration_ns);
  }
  for (auto& [thread, spans] : collective_spans) std::sort(spans.begin(), spans.end());
  for (std::int32_t pos = 0; pos < n_; ++pos) {
    if (role_[pos] != Role::kHost || !is_call(event(pos).kind)) continue;
    const TraceEvent& e = event(pos);
    if (e.name >= name_launch_.size()) continue;
    const bool invalid = name_class_[e.name] == CallClass::kInvalid;
    const std::uint8_t mask =
        invalid ? kLaunchesKernel | kLaunchesCopy | kLaunchesSet : name_launch_[e.name];
    if (mask == 0) continue;
    if (e.correlation >= 0 &&
        std::binary_search(gpu_correlations.begin(), gpu_correlations.end(), e.correlation)) {
      continue;
    }
    const std::int32_t leaf = leaf_task_of(pos);
    orphans.push_back({graph_.input_start_ns[leaf], leaf, e.pid, mask, invalid});
    const auto spans = collective_spans.find({e.pid, e.tid});
    if (spans != collective_spans.end()) {
      // The last span starting at or before the call (c10d's spans do not nest in each other).
      auto it =
          std::upper_bound(spans->second.begin(), spans->second.end(), e.start_ns,
                           [](std::int64_t t, const std::pair<std::int64_t, std::int64_t>& span) {
                             return t < span.first;
                           });
      orphans.back().in_collective_op =
          it != spans->second.begin() && std::prev(it)->second >= e.start_ns;
    }
  }
  std::stable_sort(
      orphans.begin(), orphans.end(),
      [](const OrphanLaunch& a, const OrphanLaunch& b) { return a.start_ns < b.start_ns; });
  return orphans;
}

// Links GPU task `task` to launch call `call` (counted, with a warning).
void RankBuilder::pair_launch(std::int32_t task, std::int32_t call) {
  add_edge(call, task, EdgeKind::kLaunch);
  launch_of_[local(task)] = call;
  if (launch_stream_[local(call)] == kNone) launch_stream_[local(call)] = graph_.processor[task];
  launched_next_[local(task)] = launched_first_[local(call)];
  launched_first_[local(call)] = task;
  ++graph_.stats.gpu_tasks_paired;
  add_warning(graph_.warnings,
              "GPU task paired with a launch call by stream order and time "
              "(correlations differ)",
              fmt::format("{}: '{}' with '{}' at {} ns", trace_.source, graph_.task_name(task),
                          graph_.task_name(call), graph_.input_start_ns[call]));
}

// The strongest evidence first: a copy call that returned within 50 µs after a copy started
// during it ended (it blocked until the data landed: loss.item()) launched the copy that ended
// last within it, whichever stream ran other work meanwhile.
void RankBuilder::pair_blocking_copies(std::vector<OrphanLaunch>& orphans,
                                       const std::vector<std::int32_t>& launchless) {
  std::vector<std::int32_t> copies;
  for (const std::int32_t task : launchless) {
    if (graph_.kind[task] == TaskKind::kMemcpy) copies.push_back(task);
  }
  for (OrphanLaunch& o : orphans) {
    // A graph launch returns at once: it never waited for a copy.
    if ((o.mask & kLaunchesCopy) == 0 || (o.mask & kLaunchesGraph) != 0 || copies.empty()) {
      continue;
    }
    const std::int64_t call_end = graph_.input_end_ns(o.leaf);
    auto it = std::lower_bound(
        copies.begin(), copies.end(), o.start_ns,
        [&](std::int32_t t, std::int64_t v) { return graph_.input_start_ns[t] < v; });
    std::int32_t best = kNone;
    for (int steps = 0; it != copies.end() && steps < 64; ++it, ++steps) {
      if (graph_.input_start_ns[*it] > call_end) break;
      if (launch_of_[local(*it)] != kNone || graph_.input_end_ns(*it) > call_end) continue;
      if (best == kNone || graph_.input_end_ns(*it) > graph_.input_end_ns(best)) best = *it;
    }
    // It returned right after its copy landed; a call that outlasts other copies by more was
    // not blocked on them (ResNet: a 70 ms call spanning copies queued 90 ms earlier).
    constexpr std::int64_t kMaxTailNs = 50'000;
    if (best == kNone || call_end - graph_.input_end_ns(best) > kMaxTailNs) continue;
    o.used = true;
    pair_launch(best, o.leaf);
  }
}

// The orphan call that enqueued `stream_tasks[at]` (a launchless task), or kNone: the earliest
// unused call that can enqueue its kind, issued after the previous launch on its stream and
// before both its own start and the next launch on its stream (FIFO).
std::int32_t RankBuilder::fifo_orphan_for(const std::vector<std::int32_t>& stream_tasks,
                                          std::size_t at,
                                          const std::vector<OrphanLaunch>& orphans) const {
  const std::int32_t task = stream_tasks[at];
  // Bounds from the stream's neighbours that have a launch (FIFO order).
  std::int64_t lower = std::numeric_limits<std::int64_t>::min();
  bool have_process = false;
  std::int64_t process = 0;  // the process that launches the stream's other work
  for (std::size_t k = at; k-- > 0;) {
    const std::int32_t l = launch_of_[local(stream_tasks[k])];
    if (l == kNone) continue;
    lower = graph_.input_start_ns[l];
    have_process = true;
    process = graph_.processors[graph_.processor[l]].pid;
    break;
  }
  std::int64_t upper = graph_.input_start_ns[task];
  for (std::size_t k = at + 1; k < stream_tasks.size(); ++k) {
    const std::int32_t l = launch_of_[local(stream_tasks[k])];
    if (l == kNone) continue;
    upper = std::min(upper, graph_.input_start_ns[l]);
    if (!have_process) process = graph_.processors[graph_.processor[l]].pid;
    have_process = true;
    break;
  }
  const std::uint8_t need = graph_.kind[task] == TaskKind::kMemcpy   ? kLaunchesCopy
                            : graph_.kind[task] == TaskKind::kMemset ? kLaunchesSet
                                                                     : kLaunchesKernel;
  // From `lower` inclusive: the previous task's own graph launch may have enqueued this one too.
  auto first =
      std::lower_bound(orphans.begin(), orphans.end(), lower,
                       [](const OrphanLaunch& o, std::int64_t t) { return o.start_ns < t; });
  // The earliest call that fits (FIFO), from any thread of the process that launches the
  // stream's other work first, then other processes; INVALID records count as launches of
  // any kind (kernels take them last). Preferring the thread of the stream's previous
  // launch skipped the true call at every forward → backward (autograd thread) switch and
  // left 54 % of ResNet unpaired; taking the latest call for work that started on an idle
  // stream left 9–37 % of the real traces unpaired (a kernel often starts after the next
  // launch call began). At most kScan calls are looked at (bounded work per task).
  constexpr int kScan = 1024;
  const auto last =
      std::upper_bound(first, orphans.end(), upper,
                       [](std::int64_t t, const OrphanLaunch& o) { return t < o.start_ns; });
  std::int32_t chosen = kNone;
  int best_tier = 8;
  // NCCL kernels are launched from inside the collective's op, other work from outside: a call
  // of the other context is taken only when none of the right one fits (a compute kernel that
  // starts before the collective's took the NCCL launch: pipeline transfers, issue 13).
  const bool collective_task = graph_.nccl[task];
  int scanned = 0;
  // A graph launch enqueues many tasks: once used it still fits work that no unused call fits
  // (the latest such launch in the bounds: an earlier one is followed by its own successor).
  std::int32_t used_graph = kNone;
  for (auto it = first; it != last && scanned < kScan && best_tier > 0; ++it, ++scanned) {
    if ((it->mask & need) == 0) continue;
    if (it->used) {
      if ((it->mask & kLaunchesGraph) != 0 && (!have_process || it->pid == process)) {
        used_graph = static_cast<std::int32_t>(it - orphans.begin());
      }
      continue;
    }
    if (it->start_ns == lower && (it->mask & kLaunchesGraph) == 0) continue;
    // INVALID records were mostly copies: a kernel takes one only when no launch fits.
    const int tier = (it->in_collective_op != collective_task ? 4 : 0) +
                     (it->invalid && need != kLaunchesCopy ? 2 : 0) +
                     (!have_process || it->pid == process ? 0 : 1);
    if (tier < best_tier) {
      best_tier = tier;
      chosen = static_cast<std::int32_t>(it - orphans.begin());
    }
  }
  return chosen != kNone ? chosen : used_graph;
}

// GPU work without a launch next to launch calls without GPU work (their correlations were lost
// or renumbered on one side, as in older CUPTI): pair them by stream FIFO order and time. Each
// launchless task, in start order, takes the earliest unused call that can enqueue its kind and
// was issued after the previous launch on its stream and before both its own start and the next
// launch on its stream (any thread). A blocking copy call first takes the copy it waited for.
// Tasks sharing a correlation (a graph launch's kernels) share the call.
void RankBuilder::pair_orphan_launches() {
  std::vector<OrphanLaunch> orphans = orphan_launches();
  if (orphans.empty()) return;
  // Per stream, in stream order: tasks; launchless ones are visited in start order overall.
  std::vector<std::vector<std::int32_t>> by_stream(graph_.processors.size() - proc_base_);
  std::vector<std::int32_t> launchless;
  std::vector<std::int32_t> index_in_stream(graph_.task_count() - task_base_, -1);
  for (std::int32_t task = task_base_; task < graph_.task_count(); ++task) {
    if (!is_gpu(graph_.kind[task])) continue;
    by_stream[graph_.processor[task] - proc_base_].push_back(task);
    if (launch_of_[local(task)] == kNone) launchless.push_back(task);
  }
  // Events sort longest first at one start (host spans before their children), but a stream runs
  // its tasks one after another, so their midpoints are in stream order too, also where clock
  // rounding wrote a task a few ns before its predecessor: a 0 µs memset at the start of the copy
  // after it ran first (by start, FIFO paired the copy first and left the memset no call before
  // the copy's: 122 of 126 launches re-paired without correlations).
  for (auto& list : by_stream) {
    std::stable_sort(list.begin(), list.end(), [&](std::int32_t a, std::int32_t b) {
      return 2 * graph_.input_start_ns[a] + graph_.input_duration_ns[a] <
             2 * graph_.input_start_ns[b] + graph_.input_duration_ns[b];
    });
    for (std::size_t k = 0; k < list.size(); ++k)
      index_in_stream[local(list[k])] = static_cast<std::int32_t>(k);
  }
  std::stable_sort(launchless.begin(), launchless.end(), [&](std::int32_t a, std::int32_t b) {
    return graph_.input_start_ns[a] < graph_.input_start_ns[b];
  });
  pair_blocking_copies(orphans, launchless);
  // Tasks sharing a correlation (a graph launch's kernels) share the call, unless a later graph
  // launch nobody has claimed yet fits the task by stream order: then the correlation is not
  // one launch's (renumbered or reused ids), and each replay of the graph takes its own call.
  std::unordered_map<std::int64_t, std::int32_t> orphan_of_correlation;
  for (const std::int32_t task : launchless) {
    if (launch_of_[local(task)] != kNone) continue;  // a blocking copy, paired above
    const TraceEvent& e = trace_.events[graph_.event_index[task]];
    std::int32_t orphan = kNone;
    // CUPTI's ids start at 1: a 0 (kernels of some graph launches) is no correlation at all.
    if (e.correlation > 0) {
      auto it = orphan_of_correlation.find(e.correlation);
      if (it != orphan_of_correlation.end()) orphan = it->second;
    }
    // Only a graph launch can yield its tasks to a later one: look for one then.
    if (orphan == kNone || (orphans[orphan].mask & kLaunchesGraph) != 0) {
      const std::int32_t fifo =
          fifo_orphan_for(by_stream[graph_.processor[task] - proc_base_],
                          static_cast<std::size_t>(index_in_stream[local(task)]), orphans);
      if (orphan == kNone) {
        orphan = fifo;
      } else if (fifo != kNone && !orphans[fifo].used &&
                 (orphans[fifo].mask & kLaunchesGraph) != 0 &&
                 orphans[fifo].start_ns > orphans[orphan].start_ns) {
        orphan = fifo;
      }
    }
    if (orphan == kNone) continue;
    orphans[orphan].used = true;
    if (e.correlation > 0) orphan_of_correlation[e.correlation] = orphan;
    const std::int32_t chosen = orphans[orphan].leaf;
    pair_launch(task, chosen);
  }
}

// Whether host leaf `leaf` can have issued GPU work without a launch link: not while its thread
// was blocked in a stream/event/device sync, and a copy call only a copy.
bool RankBuilder::can_issue(std::int32_t leaf, bool copy) const {
  if (trace_.events[graph_.event_index[leaf]].kind == EventKind::kCudaSync) return false;
  const std::uint32_t name = graph_.name[leaf];
  if (name >= name_class_.size()) return true;
  switch (name_class_[name]) {
    case CallClass::kContextSync:
    case CallClass::kStreamSync:
    case CallClass::kEventSync:
      return false;
    case CallClass::kSyncCopy:
    case CallClass::kAsyncCopy:
      return copy;
    default:
      return true;
  }
}

void RankBuilder::link_streams() {
  if (too_many_) return;
  anchor_launchless();
  std::vector<std::int32_t> last(graph_.processors.size() - proc_base_, kNone);
  for (std::int32_t task = task_base_; task < graph_.task_count(); ++task) {
    if (!is_gpu(graph_.kind[task])) {
      if (launch_stream_[local(task)] != kNone) launches_.push_back(task);
      continue;
    }
    const std::int32_t stream = graph_.processor[task] - proc_base_;
    if (last[stream] != kNone) add_edge(last[stream], task, EdgeKind::kStreamOrder);
    last[stream] = task;
    const std::int32_t launch = launch_of_[local(task)];
    IssueKey key = launch == kNone ? IssueKey{graph_.input_start_ns[task], task}
                                   : IssueKey{graph_.input_start_ns[launch], launch};
    auto& list = enqueued_[stream];
    if (!list.empty() && key < list.back().key) key = list.back().key;
    list.push_back({key, task});
  }
}

// The last task on `stream` whose launch was issued before `at` (input timeline), or kNone.
std::int32_t RankBuilder::last_enqueued(std::int32_t stream, IssueKey at) const {
  if (stream == kNone) return kNone;
  const auto& list = enqueued_[stream - proc_base_];
  auto it = std::lower_bound(list.begin(), list.end(), at,
                             [](const Enqueued& e, const IssueKey& k) { return e.key < k; });
  return it == list.begin() ? kNone : std::prev(it)->task;
}

// The first task on `stream` whose launch was issued after `at`, or kNone.
std::int32_t RankBuilder::next_enqueued(std::int32_t stream, IssueKey at) const {
  if (stream == kNone) return kNone;
  const auto& list = enqueued_[stream - proc_base_];
  auto it = std::upper_bound(list.begin(), list.end(), at,
                             [](const IssueKey& k, const Enqueued& e) { return k < e.key; });
  return it == list.end() ? kNone : it->task;
}

void RankBuilder::link_threads() {
  if (too_many_) return;
  const RankInfo& info = graph_.ranks[rank_index_];
  // Per thread: running maximum of leaf ends (and which leaf), for the gap rule's search.
  std::vector<std::vector<std::pair<std::int64_t, std::int32_t>>> ends(thread_tasks_.size());
  for (std::int32_t proc : info.threads) {
    const auto& tasks = thread_tasks_[proc - proc_base_];
    auto& run = ends[proc - proc_base_];
    run.reserve(tasks.size());
    for (std::int32_t task : tasks) {
      const std::int64_t end = graph_.input_end_ns(task);
      if (run.empty() || end >= run.back().first) {
        run.emplace_back(end, task);
      } else {
        run.push_back(run.back());
      }
    }
  }
  for (std::int32_t proc : info.threads) {
    const auto& tasks = thread_tasks_[proc - proc_base_];
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const std::int32_t task = tasks[i];
      const std::int64_t start = graph_.input_start_ns[task];
      std::int64_t previous_end = kMinTime;
      if (i > 0) {
        add_edge(tasks[i - 1], task, EdgeKind::kThreadOrder);
        previous_end = graph_.input_end_ns(tasks[i - 1]);
        if (start - previous_end < options_.cross_thread_gap_ns) continue;
      }
      // Lumos: a thread that idles waits for another thread; take the latest task of another
      // thread that ended inside the gap.
      std::int32_t best = kNone;
      std::int64_t best_end = previous_end;
      for (std::int32_t other : info.threads) {
        if (other == proc) continue;
        const auto& run = ends[other - proc_base_];
        auto it =
            std::upper_bound(run.begin(), run.end(), start,
                             [](std::int64_t t, const std::pair<std::int64_t, std::int32_t>& e) {
                               return t < e.first;
                             });
        if (it == run.begin()) continue;
        const auto [end, candidate] = *std::prev(it);
        if (end == start && candidate > task) continue;  // keep edges acyclic on ties
        if (end > best_end) {
          best_end = end;
          best = candidate;
        }
      }
      if (best != kNone) add_edge(best, task, EdgeKind::kCrossThread);
    }
  }
}

void RankBuilder::assign_lags() {
  if (too_many_) return;
  const std::int32_t local_count = graph_.task_count() - task_base_;
  std::vector<std::int64_t> min_slack(local_count, kMaxTime);
  for (std::size_t i = edge_base_; i < edges_.size(); ++i) {
    std::int64_t& m = min_slack[local(edges_[i].dst)];
    m = std::min(m, edges_[i].lag_ns);
  }
  for (const WaitCandidate& w : waits_) {
    std::int64_t& m = min_slack[local(w.target)];
    m = std::min(m, w.slack_ns);
  }
  // Median delay of launches that bound their task's start: the launch latency to keep when
  // a launch did not bind (the task waited for its stream instead).
  std::vector<std::int64_t> binding_launch;
  for (std::size_t i = edge_base_; i < edges_.size(); ++i) {
    const TempEdge& edge = edges_[i];
    if (anchored_at_start(edge.kind) && edge.lag_ns == min_slack[local(edge.dst)]) {
      binding_launch.push_back(edge.lag_ns);
    }
  }
  std::int64_t default_lag = 0;
  if (!binding_launch.empty()) {
    auto middle = binding_launch.begin() + static_cast<std::ptrdiff_t>(binding_launch.size() / 2);
    std::nth_element(binding_launch.begin(), middle, binding_launch.end());
    default_lag = *middle;
  }
  graph_.ranks[rank_index_].default_launch_lag_ns = default_lag;
  for (std::size_t i = edge_base_; i < edges_.size(); ++i) {
    TempEdge& edge = edges_[i];
    if (edge.lag_ns == min_slack[local(edge.dst)]) continue;  // binding: keep the slack
    edge.lag_ns = anchored_at_start(edge.kind) ? std::min(edge.lag_ns, default_lag)
                                               : std::min<std::int64_t>(edge.lag_ns, 0);
  }
  for (const WaitCandidate& w : waits_) {
    graph_.runtime_ops[w.op].lag_ns = w.slack_ns == min_slack[local(w.target)] ? w.slack_ns : 0;
  }
}

}  // namespace powertrain::graph::detail
