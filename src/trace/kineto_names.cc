// Interning of event names and the per-name facts the reader needs (NCCL, launches, syncs),
// plus the small ParseState and WarningSink members.
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "trace/kineto_json.h"
#include "trace/kineto_parser.h"
#include "trace/kineto_values.h"

namespace powertrain::trace::detail {

void WarningSink::add_overflow(std::string_view kind, std::int64_t count) {
  for (TraceWarning& warning : warnings_) {
    if (warning.kind == "other warnings") {
      warning.count += count;
      return;
    }
  }
  warnings_.push_back(TraceWarning{"other warnings", std::string(kind), count});
}

ParseState::ParseState(std::string source, int default_rank, const ReadOptions& read_options)
    : options(read_options) {
  trace.source = std::move(source);
  trace.rank = default_rank;
}

namespace {
thread_local std::vector<TraceEvent> scratch_events;
thread_local int scratch_scopes = 0;
}  // namespace

std::vector<TraceEvent>& sort_scratch() { return scratch_events; }

void release_sort_scratch_outside_scope() {
  if (scratch_scopes == 0) std::vector<TraceEvent>().swap(scratch_events);
}

SortScratchScope::SortScratchScope() { ++scratch_scopes; }

SortScratchScope::~SortScratchScope() {
  if (--scratch_scopes == 0) std::vector<TraceEvent>().swap(scratch_events);
}

void prefault(void* data, std::size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto from = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first_page = (from + page - 1) / page * page;
  const std::uintptr_t last_page = (from + bytes) / page * page;  // whole pages inside only
  if (last_page > first_page) {
    // Errors (an old kernel: EINVAL) only mean the pages fault in one by one as usual.
    (void)::madvise(reinterpret_cast<void*>(first_page), last_page - first_page,
                    MADV_POPULATE_WRITE);
  }
#else
  (void)data;
  (void)bytes;
#endif
}

void ParseState::prefault_events() {
  std::vector<TraceEvent>& events = trace.events;
  constexpr std::size_t kChunk = (std::size_t{4} << 20) / sizeof(TraceEvent);
  const std::size_t until = std::min(events.size() + kChunk, events.capacity());
  if (until <= events.size()) {
    // Full: the next event reallocates (the move touches the old ones); try again after it.
    events_prefaulted = events.size() + 1;
    return;
  }
  prefault(events.data() + events.size(), (until - events.size()) * sizeof(TraceEvent));
  events_prefaulted = until;
}

std::uint32_t intern_name_uncached(ParseState& state, std::string_view raw,
                                   ParseState::CachedName& cached) {
  std::string_view key = raw;
  std::string decoded;
  const bool escaped = raw.find('\\') != std::string_view::npos;
  if (escaped) {
    if (!json_unescape(raw, &decoded)) {
      state.warnings.add("name with an invalid JSON escape (kept as written)",
                         [&] { return clip(raw); });
      decoded = std::string(raw);
    }
    key = decoded;
  }
  if (const auto it = state.name_index.find(key); it != state.name_index.end()) {
    if (!escaped) cached = {raw, it->second};
    return it->second;
  }
  if (!decoded.empty()) key = state.unescaped.emplace_back(std::move(decoded));
  const auto index = static_cast<std::uint32_t>(state.trace.names.size());
  state.name_index.emplace(key, index);
  state.trace.names.emplace_back(key);

  std::uint16_t flags = 0;
  const auto starts = [&](std::string_view prefix) {
    return key.substr(0, prefix.size()) == prefix;
  };
  if (starts("nccl")) flags |= kNameNcclKernel;
  if (starts("nccl:")) flags |= kNameNcclAnnotation;
  if (key == "record_param_comms") flags |= kNameRecordParamComms;
  if (starts("ProfilerStep#")) flags |= kNameProfilerStep;
  if (key == "INVALID") flags |= kNameInvalid;
  for (std::string_view prefix :
       {"cudaLaunch", "cuLaunch", "cudaGraphLaunch", "cuGraphLaunch", "cudaMemcpy", "cuMemcpy",
        "cudaMemset", "cuMemset", "hipLaunch", "hipExtLaunch", "hipExtModuleLaunch",
        "hipModuleLaunch", "hipGraphLaunch", "hipMemcpy", "hipMemset"}) {
    if (starts(prefix)) flags |= kNameLaunch;
  }
  for (std::string_view event_api :
       {"cudaEventRecord", "cudaEventRecordWithFlags", "cudaStreamWaitEvent",
        "cudaEventSynchronize", "cudaEventQuery", "cuEventRecord", "cuEventRecordWithFlags",
        "cuStreamWaitEvent", "cuEventSynchronize", "cuEventQuery", "hipEventRecord",
        "hipStreamWaitEvent", "hipEventSynchronize", "hipEventQuery"}) {
    if (key == event_api) flags |= kNameEventApi;
  }
  if (key == "cudaStreamWaitEvent" || key == "cuStreamWaitEvent" || key == "hipStreamWaitEvent") {
    flags |= kNameStreamWait;
  }
  if (key == "cudaStreamSynchronize" || key == "cuStreamSynchronize" ||
      key == "hipStreamSynchronize") {
    flags |= kNameStreamSync;
  }
  if (key == "cudaEventSynchronize" || key == "cuEventSynchronize" ||
      key == "hipEventSynchronize") {
    flags |= kNameEventSync;
  }
  if (key == "cudaDeviceSynchronize" || key == "cuCtxSynchronize" ||
      key == "hipDeviceSynchronize") {
    flags |= kNameContextSync;
  }
  state.name_flags.push_back(flags);
  if (!escaped) cached = {raw, index};
  return index;
}

}  // namespace powertrain::trace::detail
