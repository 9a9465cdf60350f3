// Internals of the Kineto reader shared by its two halves: kineto_json.cc walks the JSON with
// simdjson On-Demand and appends events in file order; kineto_links.cc then applies the time base,
// sorts, and resolves correlations, collectives and steps.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/result.h"
#include "trace/kineto_reader.h"
#include "trace/trace_events.h"

namespace powertrain::trace::detail {

/// Counted warnings, one entry per kind with the first example. The example is built only the
/// first time a kind occurs, so warnings cost nothing on hot paths after that.
class WarningSink {
 public:
  /// Distinct kinds kept; later new kinds are counted under "other warnings" (fuzzed input can
  /// invent a new unknown category per event).
  static constexpr std::size_t kMaxKinds = 64;

  template <typename MakeExample>
  void add(std::string_view kind, MakeExample&& make_example, std::int64_t count = 1) {
    for (TraceWarning& warning : warnings_) {
      if (warning.kind == kind) {
        warning.count += count;
        return;
      }
    }
    if (warnings_.size() >= kMaxKinds) {
      add_overflow(kind, count);
      return;
    }
    warnings_.push_back(TraceWarning{std::string(kind), make_example(), count});
  }
  std::vector<TraceWarning> take() { return std::move(warnings_); }

 private:
  void add_overflow(std::string_view kind, std::int64_t count);
  std::vector<TraceWarning> warnings_;
};

/// Per-name facts, computed once when a name is interned.
enum NameFlag : std::uint16_t {
  kNameNcclKernel = 1 << 0,        // starts with "nccl" (kernels only)
  kNameNcclAnnotation = 1 << 1,    // "nccl:*"
  kNameRecordParamComms = 1 << 2,  // "record_param_comms"
  kNameProfilerStep = 1 << 3,      // "ProfilerStep#N"
  kNameInvalid = 1 << 4,           // "INVALID" (a capture-info runtime record)
  kNameLaunch = 1 << 5,            // a runtime/driver call that should produce GPU work
  kNameStreamWait = 1 << 6,        // cudaStreamWaitEvent & co.
  kNameStreamSync = 1 << 7,
  kNameEventSync = 1 << 8,
  kNameContextSync = 1 << 9,
  kNameEventApi = 1 << 10,  // cudaEventRecord, cudaStreamWaitEvent & co. (may carry cuda_event)
};

/// An ac2g (CPU → GPU) flow end point; `ts_ns` before the time base is applied.
struct Flow {
  std::int64_t id;
  std::int64_t pid;
  std::int64_t tid;
  std::int64_t ts_ns;
};

/// An event's sort key, (start, longer first, file order): sorting these 24-byte keys instead of
/// the 88-byte events misses the cache far less.
struct SortKey {
  std::int64_t start_ns;
  std::int64_t duration_ns;
  std::uint32_t index;
};

/// Everything collected while walking one document.
struct ParseState {
  ParseState(std::string source, int default_rank, const ReadOptions& options);

  const ReadOptions& options;
  RankTrace trace;
  WarningSink warnings;
  // Names: keys are the unescaped text, pointing into the document (names without escapes) or into
  // `unescaped` (names with escapes); both outlive the parse.
  std::unordered_map<std::string_view, std::uint32_t> name_index;
  // intern_name's cache of recent raw names without escapes (raw text in the document → index).
  struct CachedName {
    std::string_view raw;
    std::uint32_t index = UINT32_MAX;
  };
  static constexpr std::size_t kNameCacheSlots = 256;
  std::vector<CachedName> name_cache = std::vector<CachedName>(kNameCacheSlots);
  std::vector<std::uint16_t> name_flags;
  std::deque<std::string> unescaped;
  std::unordered_map<std::string, std::int64_t> string_ids;
  std::vector<Flow> flows;
  std::vector<std::pair<std::int64_t, std::int64_t>> steps;  // ProfilerStep (start, end), no base
  bool has_base_time = false;
  std::int64_t base_time_ns = 0;
  std::int64_t invalid_runtime_events = 0;  // INVALID records dropped (no usable timing)
  std::int64_t invalid_runtime_kept = 0;
  // Some GPU work, runtime/driver call or cuda_sync record has no args.correlation (set by the
  // walk, so that finish_trace need not scan every event to know whether flows must fill them).
  bool correlation_missing = false;
  // One key per event, written as it is committed (while the event is in cache), before the time
  // base (which may come after traceEvents): adding one base to every start keeps their order.
  std::vector<SortKey> sort_keys;
  // Every start, duration and |start| + duration is below 2^61, so that adding a base below 2^61
  // cannot overflow and the per-event range check of the base can be skipped.
  bool times_small = true;
  // Events up to this index have their memory faulted in (see prefault_events).
  std::size_t events_prefaulted = 0;
  // Chrome-trace "B" events waiting for their "E" (other exporters write duration events as such
  // pairs); kept by kineto_json.cc, created at the first "B".
  std::shared_ptr<struct OpenDurationEvents> open_duration_events;

  /// Faults in the next few MiB of trace.events' reserved capacity with one madvise call:
  /// faulting page by page cost ~10 % of reading a large trace. Contents are unchanged.
  void prefault_events();
};

/// The thread's scratch buffer for sorting events (finish_trace). Kept between the traces read
/// while a SortScratchScope is alive on the thread, so that each trace's sort writes into memory
/// already faulted in; released otherwise.
std::vector<TraceEvent>& sort_scratch();
void release_sort_scratch_outside_scope();
class SortScratchScope {
 public:
  SortScratchScope();
  ~SortScratchScope();
  SortScratchScope(const SortScratchScope&) = delete;
  SortScratchScope& operator=(const SortScratchScope&) = delete;
};

/// Faults in the whole pages of [data, data + bytes) with one madvise(MADV_POPULATE_WRITE) call
/// instead of one page fault per page (the contents are unchanged); a no-op where unsupported.
void prefault(void* data, std::size_t bytes);

/// A cheap hash of a name's length and first and last 8 bytes: enough to spread the few hundred
/// distinct names of a trace over ParseState's name cache.
inline std::size_t name_slot(std::string_view raw) {
  std::uint64_t head = 0;
  std::uint64_t tail = 0;
  const std::size_t n = std::min<std::size_t>(raw.size(), 8);
  if (n > 0) {  // an absent name is an empty view with no data
    std::memcpy(&head, raw.data(), n);
    std::memcpy(&tail, raw.data() + raw.size() - n, n);
  }
  const std::uint64_t h =
      (head ^ (tail * 0x9E3779B97F4A7C15ull) ^ raw.size()) * 0xff51afd7ed558ccdull;
  return static_cast<std::size_t>(h >> 56) % ParseState::kNameCacheSlots;
}

/// intern_name past its cache (kineto_names.cc).
std::uint32_t intern_name_uncached(ParseState& state, std::string_view raw,
                                   ParseState::CachedName& cached);

/// Interns a name given as raw (escaped) JSON string contents; returns its index.
// Inline: most events repeat a recent name, found in a direct-mapped cache of raw texts without
// escapes (whose interning is the identity and never warns), without hashing long kernel names.
inline std::uint32_t intern_name(ParseState& state, std::string_view raw) {
  ParseState::CachedName& cached = state.name_cache[name_slot(raw)];
  if (cached.index != UINT32_MAX && cached.raw == raw) return cached.index;
  return intern_name_uncached(state, raw, cached);
}

/// Walks a JSON document into `state`. `data` must be writable and readable for `capacity` ≥
/// `size` + 65 bytes: the walk goes through the traceEvents array in windows of about
/// ReadOptions::window_bytes, each cut at a newline (never inside a JSON string) and parsed in
/// place by briefly writing a bracket at each end, restored afterwards. Errors: empty input,
/// invalid JSON (with byte offset), no traceEvents array, too many events.
core::Status parse_document(char* data, std::size_t size, std::size_t capacity, ParseState& state);

/// Applies the time base, sorts events by (start, longer first), fills missing correlations from
/// ac2g flows, counts dangling correlations, attaches collective metadata to NCCL kernels and
/// orders collectives and steps. Returns the finished trace.
RankTrace finish_trace(ParseState& state);

/// Pairs the Chrome-trace "B"/"E" halves the walk kept (after a stable sort by time) and commits
/// each pair as its "X" event; warns about unmatched halves. Called once the walk is done, while
/// the document's bytes are still alive.
void commit_duration_pairs(ParseState& state);

}  // namespace powertrain::trace::detail
