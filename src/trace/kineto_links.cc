// The linking half of the Kineto reader, after the JSON pass: time base, order, correlations,
// collective metadata for NCCL kernels, steps. Every lookup is a sort plus binary searches, so the
// whole pass is O(events × log events) with no per-event allocation.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <unordered_map>

#include "trace/kineto_parser.h"
#include "trace/kineto_values.h"

namespace powertrain::trace::detail {
namespace {

std::string clip(std::string_view text) {
  constexpr std::size_t kMax = 120;
  if (text.size() <= kMax) return std::string(text);
  return std::string(text.substr(0, kMax)) + "...";
}

bool needs_correlation(EventKind kind) {
  return is_gpu_work(kind) || kind == EventKind::kCudaRuntime || kind == EventKind::kCudaDriver ||
         kind == EventKind::kCudaSync;
}

// Old Kineto versions (and other producers) put the launch ↔ GPU link only in ac2g flows: an "s"
// at the launch and an "f" at the GPU event, both at the event's own (pid, tid, ts).
void fill_correlations_from_flows(ParseState& state) {
  std::vector<TraceEvent>& events = state.trace.events;
  if (state.flows.empty() || !state.correlation_missing) return;
  struct Key {
    std::int64_t pid, tid, ts;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& key) const {
      std::uint64_t h = static_cast<std::uint64_t>(key.ts) * 0x9E3779B97F4A7C15ull;
      h ^= static_cast<std::uint64_t>(key.tid) + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
      h ^= static_cast<std::uint64_t>(key.pid) + 0x85EBCA77C2B2AE63ull + (h << 6) + (h >> 2);
      return static_cast<std::size_t>(h);
    }
  };
  std::unordered_map<Key, std::int64_t, KeyHash> flow_at;
  flow_at.reserve(state.flows.size());
  for (const Flow& flow : state.flows)
    flow_at.emplace(Key{flow.pid, flow.tid, flow.ts_ns}, flow.id);
  std::int64_t filled = 0;
  for (TraceEvent& event : events) {
    if (event.correlation >= 0 || !needs_correlation(event.kind)) continue;
    const auto it = flow_at.find(Key{event.pid, event.tid, event.start_ns});
    if (it == flow_at.end()) continue;
    event.correlation = it->second;
    ++filled;
  }
  if (filled > 0) {
    state.warnings.add(
        "correlation taken from an ac2g flow (args.correlation absent)",
        [&] { return fmt::format("{} events", filled); }, filled);
  }
}

bool is_launch_kind(EventKind kind) {
  return kind == EventKind::kCudaRuntime || kind == EventKind::kCudaDriver;
}

bool is_host_collective_kind(EventKind kind) {
  return kind == EventKind::kCpuOp || kind == EventKind::kUserAnnotation;
}

// What linking needs to know about the ordered events, gathered in the pass that puts them in
// order (while each event is in cache) instead of in passes of their own over ~100 bytes per event.
struct OrderedLists {
  std::vector<std::pair<std::int64_t, std::uint32_t>> launches;  // (correlation, event), in order
  std::vector<std::int64_t> gpu_correlations;                    // of kernels, memcpys, memsets
  std::vector<std::uint32_t> host_collectives;  // cpu ops / annotations with collective metadata
};

// Writes events in their final order, adding the time base, dropping exact copies of an event (a
// trace written twice into one file, or a merge tool run twice: kept once, counted in a warning,
// so that time and energy are not counted twice) and filling OrderedLists. Copies have the same
// (start, duration), so they sit in one run of the ordered events and only that run is compared.
class OrderedPlacer {
 public:
  OrderedPlacer(std::vector<TraceEvent>& out, std::int64_t base, OrderedLists& lists)
      : out_(out), base_(base), lists_(lists) {}

  /// `in_place`: `out` is the events themselves and `event` is at or after position size().
  template <bool in_place>
  void place(const TraceEvent& event) {
    const std::int64_t start = event.start_ns + base_;
    if (kept_ > 0 &&
        (start != out_[run_begin_].start_ns || event.duration_ns != out_[run_begin_].duration_ns)) {
      run_begin_ = kept_;
    }
    for (std::size_t j = run_begin_; j < kept_; ++j) {
      if (same(out_[j], event, start)) {
        ++dropped_;
        return;
      }
    }
    const auto index = static_cast<std::uint32_t>(kept_);
    if constexpr (in_place) {
      if (&out_[kept_] != &event) out_[kept_] = event;
      out_[kept_].start_ns = start;
    } else {
      out_.push_back(event);
      out_.back().start_ns = start;
    }
    ++kept_;
    if (event.correlation >= 0) {
      if (is_launch_kind(event.kind)) {
        lists_.launches.emplace_back(event.correlation, index);
      } else if (is_gpu_work(event.kind)) {
        lists_.gpu_correlations.push_back(event.correlation);
      }
    }
    if (event.collective >= 0 && is_host_collective_kind(event.kind)) {
      lists_.host_collectives.push_back(index);
    }
  }

  std::size_t kept() const { return kept_; }
  std::int64_t dropped() const { return dropped_; }

 private:
  static bool same(const TraceEvent& a, const TraceEvent& b, std::int64_t b_start) {
    return a.kind == b.kind && a.name == b.name && a.start_ns == b_start &&
           a.duration_ns == b.duration_ns && a.pid == b.pid && a.tid == b.tid &&
           a.correlation == b.correlation && a.external_id == b.external_id && a.sync == b.sync &&
           a.wait_on_stream == b.wait_on_stream &&
           a.wait_on_event_correlation == b.wait_on_event_correlation &&
           a.cuda_event == b.cuda_event && a.nccl == b.nccl;
  }

  std::vector<TraceEvent>& out_;
  std::int64_t base_;
  OrderedLists& lists_;
  std::size_t kept_ = 0;
  std::size_t run_begin_ = 0;  // first kept event of the current (start, duration) run
  std::int64_t dropped_ = 0;
};

// Adds the time base (events whose start or end would overflow int64 are dropped), sorts by
// (start, longer first, file order), drops exact duplicates and fills `lists`.
void order_events(ParseState& state, OrderedLists& lists) {
  std::vector<TraceEvent>& events = state.trace.events;
  const std::int64_t base = state.has_base_time ? state.base_time_ns : 0;
  constexpr std::int64_t kSmallBase = std::int64_t{1} << 61;
  std::vector<SortKey> keys;
  std::int64_t placed_base = base;  // what the placement still has to add
  if (state.times_small && base > -kSmallBase && base < kSmallBase &&
      state.sort_keys.size() == events.size()) {
    // No event can overflow: the keys written during the walk (before the base) order the events
    // exactly as keys with the base would.
    keys = std::move(state.sort_keys);
  } else {
    // Sort compact keys rather than the 88-byte events: far fewer cache misses.
    keys.reserve(events.size());
    std::uint32_t kept = 0;
    for (std::size_t i = 0; i < events.size(); ++i) {
      TraceEvent& event = events[i];
      std::int64_t start = 0;
      std::int64_t end = 0;
      if (__builtin_add_overflow(event.start_ns, base, &start) ||
          __builtin_add_overflow(start, event.duration_ns, &end)) {
        state.warnings.add("event time out of the int64 ns range (skipped)", [&] {
          return fmt::format("event '{}'", clip(state.trace.names[event.name]));
        });
        continue;
      }
      event.start_ns = start;
      if (kept != i) events[kept] = event;
      keys.push_back(SortKey{start, event.duration_ns, kept});
      ++kept;
    }
    events.resize(kept);
    placed_base = 0;
  }
  state.sort_keys = {};
  const std::size_t count = events.size();
  lists.launches.reserve(count / 4);
  lists.gpu_correlations.reserve(count / 4);
  const auto before = [](const SortKey& x, const SortKey& y) {
    if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
    if (x.duration_ns != y.duration_ns) return x.duration_ns > y.duration_ns;
    return x.index < y.index;
  };
  std::int64_t dropped = 0;
  if (std::is_sorted(keys.begin(), keys.end(), before)) {
    OrderedPlacer placer(events, placed_base, lists);
    for (std::size_t i = 0; i < count; ++i) placer.template place<true>(events[i]);
    events.resize(placer.kept());
    dropped = placer.dropped();
  } else {
    std::sort(keys.begin(), keys.end(), before);
    // Gather into the thread's scratch vector (independent reads, prefetched a few keys ahead;
    // sequential writes), then swap: the sorted events keep that memory and the scratch takes
    // this trace's old buffer for the next trace. Following the permutation's cycles in place
    // instead made nearly every store miss the cache; gathering into fresh memory paid a page
    // fault per 4 KiB. Both cost ~0.01 s more per 390 k events.
    std::vector<TraceEvent>& scratch = sort_scratch();
    if (scratch.capacity() > 2 * count + 4096) std::vector<TraceEvent>().swap(scratch);
    scratch.clear();
    scratch.reserve(count);
    OrderedPlacer placer(scratch, placed_base, lists);
    constexpr std::size_t kAhead = 8;
    for (std::size_t i = 0; i < count; ++i) {
      if (i + kAhead < count) __builtin_prefetch(&events[keys[i + kAhead].index]);
      placer.template place<false>(events[keys[i].index]);
    }
    dropped = placer.dropped();
    events.swap(scratch);
    release_sort_scratch_outside_scope();
  }
  if (dropped > 0) {
    state.warnings.add(
        "exact duplicate events dropped (same name, time, thread/stream and links)",
        [&] { return fmt::format("{} of {} events", dropped, count); }, dropped);
  }
}

// Collective-bearing host events per thread, in start order, to find the op that launched an
// NCCL kernel by time nesting.
class EnclosingCollectives {
 public:
  EnclosingCollectives(const std::vector<TraceEvent>& events,
                       const std::vector<std::uint32_t>& host_collectives)
      : events_(events) {
    for (const std::uint32_t i : host_collectives) {
      by_thread_[ThreadKey{events[i].pid, events[i].tid}].push_back(i);
    }
  }

  /// The innermost collective-bearing host event on `inner`'s thread that contains it, or -1.
  std::int64_t find(const TraceEvent& inner) const {
    const auto it = by_thread_.find(ThreadKey{inner.pid, inner.tid});
    if (it == by_thread_.end()) return -1;
    const std::vector<std::uint32_t>& list = it->second;
    auto upper =
        std::upper_bound(list.begin(), list.end(), inner.start_ns,
                         [&](std::int64_t t, std::uint32_t i) { return t < events_[i].start_ns; });
    // Walk back over a few later-starting non-enclosing ops; the first enclosing one is innermost.
    for (int steps = 0; upper != list.begin() && steps < 64; ++steps) {
      --upper;
      const TraceEvent& outer = events_[*upper];
      if (outer.start_ns + outer.duration_ns >= inner.start_ns + inner.duration_ns) return *upper;
    }
    return -1;
  }

 private:
  struct ThreadKey {
    std::int64_t pid, tid;
    bool operator==(const ThreadKey&) const = default;
  };
  struct ThreadKeyHash {
    std::size_t operator()(const ThreadKey& key) const {
      return std::hash<std::uint64_t>()(static_cast<std::uint64_t>(key.pid) * 1000003u ^
                                        static_cast<std::uint64_t>(key.tid));
    }
  };
  const std::vector<TraceEvent>& events_;
  std::unordered_map<ThreadKey, std::vector<std::uint32_t>, ThreadKeyHash> by_thread_;
};

// Which runtime/driver call (the first in event order) and whether GPU work carries each
// correlation id. Kineto's ids are dense (consecutive per process), so when they span at most a
// few times their count a table indexed by id − min answers in one probe; otherwise sorted vectors
// and binary searches (which cost ~0.01 s per 100 k lookups on large traces).
class CorrelationIndex {
 public:
  explicit CorrelationIndex(OrderedLists& lists)
      : launches_(std::move(lists.launches)), gpu_correlations_(std::move(lists.gpu_correlations)) {
    for (const auto& [correlation, index] : launches_) {
      min_ = std::min(min_, correlation);
      max_ = std::max(max_, correlation);
    }
    for (const std::int64_t correlation : gpu_correlations_) {
      min_ = std::min(min_, correlation);
      max_ = std::max(max_, correlation);
    }
    const std::size_t count = launches_.size() + gpu_correlations_.size();
    if (count == 0) return;
    dense_ = static_cast<std::uint64_t>(max_ - min_) < 4 * count + 1024;
    if (!dense_) {
      std::sort(launches_.begin(), launches_.end());
      std::sort(gpu_correlations_.begin(), gpu_correlations_.end());
      return;
    }
    const auto span = static_cast<std::size_t>(max_ - min_) + 1;
    launch_table_.assign(span, kNone);
    gpu_table_.assign(span, 0);
    for (const auto& [correlation, index] : launches_) {  // in event order: the first one wins
      std::uint32_t& slot = launch_table_[static_cast<std::size_t>(correlation - min_)];
      if (slot == kNone) slot = index;
    }
    for (const std::int64_t correlation : gpu_correlations_) {
      gpu_table_[static_cast<std::size_t>(correlation - min_)] = 1;
    }
    launches_ = {};
    gpu_correlations_ = {};
  }

  /// The first runtime/driver event carrying `correlation`, or -1.
  std::int64_t launch_of(std::int64_t correlation) const {
    if (dense_) {
      if (correlation < min_ || correlation > max_) return -1;
      const std::uint32_t slot = launch_table_[static_cast<std::size_t>(correlation - min_)];
      return slot == kNone ? -1 : static_cast<std::int64_t>(slot);
    }
    const auto it = std::lower_bound(launches_.begin(), launches_.end(),
                                     std::make_pair(correlation, std::uint32_t{0}));
    return it != launches_.end() && it->first == correlation ? static_cast<std::int64_t>(it->second)
                                                             : std::int64_t{-1};
  }

  /// True when a kernel, memcpy or memset carries `correlation`.
  bool has_gpu_work(std::int64_t correlation) const {
    if (dense_) {
      return correlation >= min_ && correlation <= max_ &&
             gpu_table_[static_cast<std::size_t>(correlation - min_)] != 0;
    }
    return std::binary_search(gpu_correlations_.begin(), gpu_correlations_.end(), correlation);
  }

 private:
  static constexpr std::uint32_t kNone = UINT32_MAX;
  std::int64_t min_ = INT64_MAX;
  std::int64_t max_ = -1;
  bool dense_ = false;
  std::vector<std::uint32_t> launch_table_;
  std::vector<std::uint8_t> gpu_table_;
  std::vector<std::pair<std::int64_t, std::uint32_t>> launches_;  // (correlation, event), sorted
  std::vector<std::int64_t> gpu_correlations_;                    // sorted
};

// Returns the events that carry collective metadata, in order.
std::vector<std::uint32_t> link_correlations_and_collectives(ParseState& state,
                                                             OrderedLists& lists) {
  RankTrace& trace = state.trace;
  std::vector<TraceEvent>& events = trace.events;
  const CorrelationIndex correlations(lists);
  const auto launch_of = [&](std::int64_t correlation) {
    return correlations.launch_of(correlation);
  };

  const EnclosingCollectives enclosing(events, lists.host_collectives);
  std::vector<std::uint32_t> with_collective;
  for (std::uint32_t i = 0; i < events.size(); ++i) {
    TraceEvent& e = events[i];
    if (e.collective >= 0) with_collective.push_back(i);
    const std::uint16_t flags = state.name_flags[e.name];
    const std::string& name = trace.names[e.name];
    if (is_gpu_work(e.kind)) {
      std::int64_t launch = -1;
      if (e.correlation < 0) {
        state.warnings.add("GPU work without a correlation id", [&] {
          return fmt::format("'{}' on device {} stream {}", clip(name), e.pid, e.tid);
        });
      } else if ((launch = launch_of(e.correlation)) < 0) {
        state.warnings.add(
            "GPU work without a launch (no runtime/driver call has its correlation)",
            [&] { return fmt::format("correlation {} on '{}'", e.correlation, clip(name)); });
      }
      if (e.kind == EventKind::kKernel && e.nccl && e.collective < 0) {
        const KernelCollective from_name = collective_from_kernel_name(name);
        CollectiveInfo info;
        info.name = from_name.name;
        info.element_bytes = from_name.element_bytes;
        const std::int64_t host = launch >= 0 ? enclosing.find(events[launch]) : -1;
        if (host >= 0) {  // the op's metadata describes the collective better than the kernel name
          const CollectiveInfo& op = trace.collectives[events[host].collective];
          if (!op.name.empty()) info.name = op.name;
          if (op.in_elements >= 0 || op.out_elements >= 0) {
            info.in_elements = op.in_elements;
            info.out_elements = op.out_elements;
            info.element_bytes = op.element_bytes;
          }
          if (op.group_size >= 0) info.group_size = op.group_size;
          if (!op.process_group.empty()) info.process_group = op.process_group;
          info.process_group_description = op.process_group_description;
          info.process_group_ranks = op.process_group_ranks;
          if (op.sequence >= 0) info.sequence = op.sequence;
        }
        e.collective = static_cast<std::int32_t>(trace.collectives.size());
        trace.collectives.push_back(std::move(info));
        with_collective.push_back(i);
      }
    } else if (e.kind == EventKind::kCudaRuntime || e.kind == EventKind::kCudaDriver) {
      if ((flags & kNameLaunch) == 0) continue;
      if (e.correlation < 0) {
        state.warnings.add("launch without a correlation id",
                           [&] { return fmt::format("'{}' on thread {}", clip(name), e.tid); });
      } else if (!correlations.has_gpu_work(e.correlation)) {
        state.warnings.add(
            "launch without GPU work (no kernel/memcpy/memset has its correlation)",
            [&] { return fmt::format("correlation {} on '{}'", e.correlation, clip(name)); });
      }
    } else if (e.kind == EventKind::kCudaSync && e.correlation >= 0 &&
               launch_of(e.correlation) < 0) {
      state.warnings.add("cuda_sync record without its runtime call", [&] {
        return fmt::format("correlation {} on '{}'", e.correlation, clip(name));
      });
    }
  }
  return with_collective;
}

}  // namespace

RankTrace finish_trace(ParseState& state) {
  RankTrace& trace = state.trace;
  fill_correlations_from_flows(state);
  OrderedLists lists;
  order_events(state, lists);
  const std::vector<std::uint32_t> with_collective =
      link_correlations_and_collectives(state, lists);

  // Collectives in the order of their events (those of dropped events are dropped).
  std::vector<CollectiveInfo> collectives;
  collectives.reserve(with_collective.size());
  for (const std::uint32_t i : with_collective) {
    TraceEvent& event = trace.events[i];
    collectives.push_back(std::move(trace.collectives[event.collective]));
    collectives.back().event = static_cast<std::int32_t>(i);
    event.collective = static_cast<std::int32_t>(collectives.size() - 1);
  }
  trace.collectives = std::move(collectives);

  const std::int64_t base = state.has_base_time ? state.base_time_ns : 0;
  std::sort(state.steps.begin(), state.steps.end());
  for (const auto& [start, end] : state.steps) {
    std::int64_t absolute_start = 0;
    std::int64_t absolute_end = 0;
    if (__builtin_add_overflow(start, base, &absolute_start) ||
        __builtin_add_overflow(end, base, &absolute_end)) {
      continue;  // its event was dropped with a warning above
    }
    trace.step_starts_ns.push_back(absolute_start);
    trace.step_ends_ns.push_back(absolute_end);
  }
  if (state.invalid_runtime_kept > 0) {
    state.warnings.add(
        "cuda_runtime 'INVALID' records kept as plain calls",
        [&] { return fmt::format("{} records", state.invalid_runtime_kept); },
        state.invalid_runtime_kept);
  }
  if (state.invalid_runtime_events > 0) {
    state.warnings.add(
        "cuda_runtime 'INVALID' records without usable timing ignored",
        [&] { return fmt::format("{} records", state.invalid_runtime_events); },
        state.invalid_runtime_events);
  }
  trace.warnings = state.warnings.take();
  return std::move(trace);
}

}  // namespace powertrain::trace::detail
