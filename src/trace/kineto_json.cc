// The JSON half of the Kineto reader: one forward pass of simdjson On-Demand over the document.
// Each event's fields are read in file order into an EventFields of string_views into the
// document (no allocation per event), then committed as a TraceEvent, a flow end point, or
// ignored. Values are taken from raw tokens and parsed here, so numbers, strings holding numbers
// and floats are all accepted where Kineto versions differ.
#include "trace/kineto_json.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <map>

#include "trace/kineto_parser.h"
#include "trace/kineto_values.h"

namespace powertrain::trace::detail {
namespace {

enum class Value : std::uint8_t { kMissing, kOk, kBad };

struct Extra;

// One event's fields, as found. String views point into the document.
struct EventFields {
  char ph = 0;
  Value cat = Value::kMissing;
  std::string_view cat_text;
  bool category_known = false;  // one of kCategories
  EventKind kind = EventKind::kOther;
  Value name = Value::kMissing;
  std::string_view name_text;
  std::uint32_t name_index = UINT32_MAX;  // interned while reading, for X events
  Value pid = Value::kMissing;
  Value tid = Value::kMissing;
  std::string_view pid_token;
  std::string_view tid_token;
  Value ts = Value::kMissing;
  std::int64_t ts_ns = 0;
  Value dur = Value::kMissing;
  std::int64_t dur_ns = 0;
  bool has_id = false;
  std::int64_t id = -1;
  // args read for every event that has them
  std::int64_t correlation = -1;
  std::int64_t external_id = -1;
  std::int64_t cuda_event = -1;
  // The rarely present args (read only when every arg is: syncs, collectives), kept apart so
  // that the per-event fields stay small to initialize; null until such args are read.
  Extra* extra = nullptr;
  Extra* extra_slot = nullptr;  // storage for *extra, reused across events
};

struct Extra {
  std::int64_t wait_on_stream = -1;
  std::int64_t wait_on_event_correlation = -1;
  std::int64_t wait_on_event_id = -1;
  bool has_sync_kind = false;
  std::string_view sync_kind;
  bool has_collective = false;  // "Collective name" present
  std::string_view collective_name;
  std::string_view dtype;
  std::string_view group_name;
  std::string_view group_description;
  std::vector<std::int64_t> group_ranks;  // "[0, 1]" as a string (Kineto) or a JSON array
  std::int64_t in_elements = -1;
  std::int64_t out_elements = -1;
  std::int64_t group_size = -1;
  std::int64_t sequence = -1;
  std::int64_t input_elements = -1;  // product of the first "Input Dims" entry
  std::string_view input_type;       // first "Input type" entry
};

const Extra kNoExtra{};

// Categories in rough order of frequency. Kineto's ActivityType names plus the 2021 ones.
struct Category {
  std::string_view name;
  EventKind kind;
};
constexpr Category kCategories[] = {
    {"cpu_op", EventKind::kCpuOp},
    {"python_function", EventKind::kPythonFunction},
    {"cuda_runtime", EventKind::kCudaRuntime},
    {"kernel", EventKind::kKernel},
    {"cuda_driver", EventKind::kCudaDriver},
    {"gpu_memcpy", EventKind::kGpuMemcpy},
    {"gpu_memset", EventKind::kGpuMemset},
    {"user_annotation", EventKind::kUserAnnotation},
    {"gpu_user_annotation", EventKind::kGpuUserAnnotation},
    {"cuda_sync", EventKind::kCudaSync},
    {"Operator", EventKind::kCpuOp},
    {"Runtime", EventKind::kCudaRuntime},
    {"Kernel", EventKind::kKernel},
    {"Memcpy", EventKind::kGpuMemcpy},
    {"Memset", EventKind::kGpuMemset},
    {"overhead", EventKind::kOther},
    {"Trace", EventKind::kOther},
    {"cuda_event", EventKind::kOther},
    {"cpu_instant_event", EventKind::kOther},
    {"external_correlation", EventKind::kOther},
    {"cuda_profiler_range", EventKind::kOther},
    {"collective_comm", EventKind::kOther},
    {"glow_runtime", EventKind::kOther},
    {"mtia_runtime", EventKind::kOther},
    {"mtia_ccp_events", EventKind::kOther},
    {"hpu_op", EventKind::kOther},
    {"xpu_runtime", EventKind::kOther},
    {"xpu_driver", EventKind::kOther},
    {"privateuse1_runtime", EventKind::kOther},
    {"privateuse1_driver", EventKind::kOther},
};

// kCategories by a hash of length, first and last byte: one comparison per event instead of a
// walk down the list (the names are distinct under it: checked at compile time).
constexpr std::size_t kCategorySlots = 128;
constexpr std::size_t category_slot(std::string_view text) {
  return (text.size() + 2 * static_cast<unsigned char>(text.front()) +
          5 * static_cast<unsigned char>(text.back())) %
         kCategorySlots;
}
struct CategoryTable {
  std::int8_t slot[kCategorySlots] = {};  // index into kCategories + 1; 0 = none
  bool distinct = true;
};
constexpr CategoryTable make_category_table() {
  CategoryTable table;
  for (std::size_t i = 0; i < std::size(kCategories); ++i) {
    std::int8_t& entry = table.slot[category_slot(kCategories[i].name)];
    if (entry != 0) table.distinct = false;
    entry = static_cast<std::int8_t>(i + 1);
  }
  return table;
}
constexpr CategoryTable kCategoryTable = make_category_table();
static_assert(kCategoryTable.distinct, "two categories share a slot: change category_slot");

bool is_flow_category(std::string_view cat) {
  return cat == "ac2g" || cat == "async_cpu_to_gpu" || cat == "async";
}

void read_category(std::string_view token, EventFields& f) {
  f.cat = string_contents(token, &f.cat_text) ? Value::kOk : Value::kBad;
  f.category_known = false;
  f.kind = EventKind::kOther;
  if (f.cat != Value::kOk) return;
  const std::string_view text = f.cat_text;
  if (text.empty()) return;
  const std::int8_t entry = kCategoryTable.slot[category_slot(text)];
  if (entry == 0) return;
  const Category& category = kCategories[entry - 1];
  if (category.name == text) {
    f.category_known = true;
    f.kind = category.kind;
  }
}

// Known category → kind; unknown → kOther plus a warning per distinct category.
EventKind kind_of(ParseState& state, const EventFields& f) {
  if (f.cat != Value::kOk) {
    state.warnings.add("X event without a string cat (kept as other)",
                       [&] { return fmt::format("event '{}'", clip(f.name_text)); });
  } else if (!f.category_known) {
    state.warnings.add(fmt::format("unknown category '{}' (kept as other)", clip(f.cat_text)),
                       [&] { return fmt::format("event '{}'", clip(f.name_text)); });
  } else if (f.kind == EventKind::kOther &&
             (f.cat_text.ends_with("_runtime") || f.cat_text.ends_with("_driver"))) {
    // Another backend's API (Intel XPU's ur*/pi* calls, MTIA, PrivateUse1): its launches, copies
    // and waits are not modelled; its GPU work is anchored by stream order and time instead.
    state.warnings.add(
        fmt::format("'{}' calls not recognised: another backend's runtime, not modelled (its "
                    "launches and waits are not linked; GPU work anchored by time)",
                    clip(f.cat_text)),
        [&] { return fmt::format("call '{}'", clip(f.name_text)); });
  }
  return f.kind;
}

// Which args an event needs, so that parse_args can stop early and skip the rest (kernels carry
// a dozen args, ops with record_shapes long shape lists). Known only when cat and name come before
// args, as Kineto writes them; otherwise every arg is read.
enum ArgBit : std::uint16_t {
  kArgExternalId = 1 << 0,
  kArgCorrelation = 1 << 1,
  kArgCudaEvent = 1 << 2,
  kArgAll = 0xffff,  // never satisfied: read all args
};

std::uint16_t needed_args(const EventFields& f, const ParseState& state) {
  if (f.ph != 'X' && f.ph != 0 && f.ph != 'B') return 0;
  if (f.cat == Value::kMissing || f.name_index == UINT32_MAX) return kArgAll;
  const std::uint16_t flags = state.name_flags[f.name_index];
  if ((flags & (kNameNcclKernel | kNameNcclAnnotation | kNameRecordParamComms)) != 0)
    return kArgAll;
  switch (f.kind) {
    case EventKind::kCpuOp:
    case EventKind::kUserAnnotation:
    case EventKind::kGpuUserAnnotation:
      return kArgExternalId;
    case EventKind::kCudaRuntime:
    case EventKind::kCudaDriver:
      return kArgExternalId | kArgCorrelation | ((flags & kNameEventApi) != 0 ? kArgCudaEvent : 0);
    case EventKind::kKernel:
    case EventKind::kGpuMemcpy:
    case EventKind::kGpuMemset:
      return kArgExternalId | kArgCorrelation;
    case EventKind::kCudaSync:
      return kArgAll;
    case EventKind::kPythonFunction:
    case EventKind::kOther:
      return 0;
  }
  return kArgAll;
}

// pid/tid: integers (also as float or string), or any other string → a stable negative id.
std::int64_t thread_id(ParseState& state, Value presence, std::string_view token,
                       std::string_view what, const EventFields& f) {
  if (presence == Value::kMissing) {
    state.warnings.add(fmt::format("event without {} (0 used)", what),
                       [&] { return fmt::format("event '{}'", clip(f.name_text)); });
    return 0;
  }
  std::int64_t value = 0;
  if (parse_integer(token, &value)) return value;
  std::string_view raw;
  if (string_contents(token, &raw)) {
    std::string text;
    if (!json_unescape(raw, &text)) text = std::string(raw);
    const auto [it, inserted] =
        state.string_ids.emplace(std::move(text), string_id(state.trace.string_ids.size()));
    if (inserted) state.trace.string_ids.push_back(it->first);
    return it->second;
  }
  state.warnings.add(fmt::format("{} is neither a number nor a string (0 used)", what), [&] {
    return fmt::format("{} {} on event '{}'", what, clip(trim_token(token)), clip(f.name_text));
  });
  return 0;
}

SyncKind sync_kind_of(std::string_view text) {
  if (text == "Stream Wait Event") return SyncKind::kStreamWaitEvent;
  if (text == "Event Sync") return SyncKind::kEventSync;
  if (text == "Stream Sync") return SyncKind::kStreamSync;
  if (text == "Context Sync") return SyncKind::kContextSync;
  return SyncKind::kNone;
}

std::string unescaped(std::string_view raw) {
  std::string text;
  if (!json_unescape(raw, &text)) return std::string(raw);
  return text;
}

// "[0, 1, 2]" (a string, as Kineto writes it): the integers in it.
std::vector<std::int64_t> parse_rank_list(std::string_view text) {
  std::vector<std::int64_t> ranks;
  std::size_t i = 0;
  while (i < text.size() && ranks.size() < (1 << 20)) {
    if ((text[i] >= '0' && text[i] <= '9') || text[i] == '-') {
      std::size_t j = i + 1;
      while (j < text.size() && text[j] >= '0' && text[j] <= '9') ++j;
      std::int64_t value = 0;
      if (parse_integer(text.substr(i, j - i), &value)) ranks.push_back(value);
      i = j;
    } else {
      ++i;
    }
  }
  return ranks;
}

void add_collective(ParseState& state, TraceEvent& event, const EventFields& f) {
  const Extra& x = f.extra != nullptr ? *f.extra : kNoExtra;
  CollectiveInfo info;
  if (x.has_collective) {
    std::string_view raw;
    if (string_contents(x.collective_name, &raw)) info.name = to_lower(unescaped(raw));
    info.in_elements = x.in_elements;
    info.out_elements = x.out_elements;
    if (string_contents(x.dtype, &raw)) info.element_bytes = element_bytes(unescaped(raw));
    info.group_size = x.group_size;
    if (string_contents(x.group_name, &raw)) info.process_group = unescaped(raw);
    if (string_contents(x.group_description, &raw)) {
      info.process_group_description = unescaped(raw);
    }
    if (info.process_group.empty()) info.process_group = info.process_group_description;
    info.process_group_ranks = x.group_ranks;
    info.sequence = x.sequence;
  } else {  // an nccl:* annotation: the name says the collective, Input Dims/type the size
    const std::string& name = state.trace.names[event.name];
    info.name = to_lower(std::string_view(name).substr(5));
    info.in_elements = x.input_elements;
    std::string_view raw;
    if (string_contents(x.input_type, &raw)) info.element_bytes = element_bytes(unescaped(raw));
  }
  event.collective = static_cast<std::int32_t>(state.trace.collectives.size());
  state.trace.collectives.push_back(std::move(info));
}

}  // namespace

// Chrome-trace "B"/"E" halves, kept in file order until the walk ends: they are paired after a
// stable sort by time, as Chrome's trace viewer does, so that events written out of order still
// pair (an "E" closes the innermost open "B" of its thread, the one with its name when it names
// one).
struct OpenDurationEvents {
  struct Half {
    EventFields fields;
    Extra extra;
    bool has_extra = false;
  };
  std::vector<Half> halves;
  Extra closing_extra;  // the args of the pair being committed
};

namespace {

bool commit(ParseState& state, EventFields& f);

void keep_duration_half(ParseState& state, const EventFields& f) {
  if (state.open_duration_events == nullptr) {
    state.open_duration_events = std::make_shared<OpenDurationEvents>();
  }
  OpenDurationEvents::Half half{f, f.extra != nullptr ? *f.extra : Extra{}, f.extra != nullptr};
  half.fields.extra = nullptr;
  half.fields.extra_slot = nullptr;
  state.open_duration_events->halves.push_back(std::move(half));
}

}  // namespace

void commit_duration_pairs(ParseState& state) {
  if (state.open_duration_events == nullptr) return;
  OpenDurationEvents& pairs = *state.open_duration_events;
  std::vector<OpenDurationEvents::Half>& halves = pairs.halves;
  // At one time an "E" goes first: spans written back to back (a step's end is the next one's
  // start) close before the next opens.
  std::stable_sort(halves.begin(), halves.end(), [](const auto& a, const auto& b) {
    if (a.fields.ts_ns != b.fields.ts_ns) return a.fields.ts_ns < b.fields.ts_ns;
    return a.fields.ph == 'E' && b.fields.ph == 'B';
  });
  std::map<std::pair<std::string_view, std::string_view>, std::vector<std::size_t>> open;
  for (std::size_t i = 0; i < halves.size(); ++i) {
    EventFields& f = halves[i].fields;
    std::vector<std::size_t>& stack = open[{f.pid_token, f.tid_token}];
    if (f.ph == 'B') {
      stack.push_back(i);
      continue;
    }
    std::size_t match = stack.size();
    if (match > 0 && f.name == Value::kOk) {
      while (match > 0 && halves[stack[match - 1]].fields.name_text != f.name_text) --match;
      if (match == 0) match = stack.size();  // no "B" of that name: the innermost, as Chrome does
    }
    if (match == 0) {
      state.warnings.add("\"E\" event without an open \"B\" on its thread (skipped)", [&] {
        return fmt::format("pid {} tid {} at ts {} ns", clip(trim_token(f.pid_token)),
                           clip(trim_token(f.tid_token)), f.ts_ns);
      });
      continue;
    }
    OpenDurationEvents::Half& begin = halves[stack[match - 1]];
    stack.erase(stack.begin() + static_cast<std::ptrdiff_t>(match - 1));
    if (f.ts != Value::kOk || begin.fields.ts != Value::kOk) {
      state.warnings.add("\"B\"/\"E\" pair without a usable duration (skipped)", [&] {
        return fmt::format("event '{}' (a ts missing or not a number)",
                           clip(begin.fields.name_text));
      });
      continue;
    }
    EventFields x = begin.fields;
    x.ph = 'X';
    x.dur = Value::kOk;
    x.dur_ns = f.ts_ns - x.ts_ns;
    x.extra_slot = nullptr;
    x.extra = nullptr;
    if (begin.has_extra) {
      pairs.closing_extra = begin.extra;
      x.extra = &pairs.closing_extra;
    }
    if (!commit(state, x)) break;  // the event cap
  }
  // Not a structured binding: clang 14 (the fuzz builds) cannot capture one in a lambda.
  for (const auto& entry : open) {
    const auto& thread = entry.first;
    for (const std::size_t i : entry.second) {
      state.warnings.add("\"B\" event without its \"E\" (not replayed)", [&] {
        return fmt::format("event '{}' on pid {} tid {}", clip(halves[i].fields.name_text),
                           clip(trim_token(thread.first)), clip(trim_token(thread.second)));
      });
    }
  }
  state.open_duration_events.reset();
}

namespace {

// Returns false when the event cap is hit.
bool commit(ParseState& state, EventFields& f) {
  // "B"/"E" halves are paired once the walk is done (commit_duration_pairs).
  if (f.ph == 'B' || f.ph == 'E') {
    keep_duration_half(state, f);
    return true;
  }
  const Extra& x = f.extra != nullptr ? *f.extra : kNoExtra;
  if (f.ph == 's' || f.ph == 'f' || f.ph == 't') {
    if (f.cat == Value::kOk && is_flow_category(f.cat_text) && f.has_id && f.ts == Value::kOk) {
      std::int64_t pid = 0;
      std::int64_t tid = 0;
      if (f.pid != Value::kMissing && !parse_integer(f.pid_token, &pid)) {
        pid = thread_id(state, f.pid, f.pid_token, "pid", f);
      }
      if (f.tid != Value::kMissing && !parse_integer(f.tid_token, &tid)) {
        tid = thread_id(state, f.tid, f.tid_token, "tid", f);
      }
      state.flows.push_back(Flow{f.id, pid, tid, f.ts_ns});
    }
    return true;
  }
  if (f.ph != 'X') return true;  // metadata, instants, counters, async spans: not replayed
  if (f.ts != Value::kOk) {
    state.warnings.add(f.ts == Value::kMissing ? "X event without ts (skipped)"
                                               : "X event with a non-numeric or out-of-range ts "
                                                 "(skipped)",
                       [&] { return fmt::format("event '{}'", clip(f.name_text)); });
    return true;
  }
  if (f.name != Value::kOk) {
    state.warnings.add("X event without a string name (empty name used)", [&] {
      return fmt::format("event at ts {} ns (before the time base)", f.ts_ns);
    });
    f.name_text = {};
  }
  const EventKind kind = kind_of(state, f);
  const std::uint32_t name =
      f.name_index != UINT32_MAX ? f.name_index : intern_name(state, f.name_text);
  const std::uint16_t flags = state.name_flags[name];
  if ((flags & kNameInvalid) != 0 && kind == EventKind::kCudaRuntime) {
    // Older CUPTI names some real calls (copies, launches) INVALID: keep those whose timing is
    // usable, as plain calls that may carry a launch correlation.
    if (f.dur != Value::kOk || f.dur_ns < 0) {
      ++state.invalid_runtime_events;
      return true;
    }
    ++state.invalid_runtime_kept;
  }
  if (kind == EventKind::kPythonFunction && !state.options.keep_python_functions) return true;
  if (state.trace.events.size() >= state.options.max_events) return false;

  if (state.trace.events.size() >= state.events_prefaulted) state.prefault_events();
  // Built here and appended at the end: emplace_back() value-initializes, zeroing all 88 bytes
  // with a slow-starting `rep stos` before the defaults are written.
  TraceEvent event;
  event.kind = kind;
  event.name = name;
  event.start_ns = f.ts_ns;
  if (f.dur == Value::kOk && f.dur_ns >= 0) {
    event.duration_ns = f.dur_ns;
  } else {
    const char* kind_text = f.dur == Value::kMissing ? "X event without dur (0 used)"
                            : f.dur == Value::kBad   ? "X event with a non-numeric dur (0 used)"
                                                     : "X event with a negative dur (0 used)";
    state.warnings.add(kind_text, [&] { return fmt::format("event '{}'", clip(f.name_text)); });
  }
  constexpr std::int64_t kSmall = std::int64_t{1} << 60;
  if (event.start_ns <= -kSmall || event.start_ns >= kSmall || event.duration_ns >= kSmall) {
    state.times_small = false;
  }
  state.sort_keys.push_back(SortKey{event.start_ns, event.duration_ns,
                                    static_cast<std::uint32_t>(state.trace.events.size())});
  event.pid = f.pid == Value::kOk && parse_integer(f.pid_token, &event.pid)
                  ? event.pid
                  : thread_id(state, f.pid, f.pid_token, "pid", f);
  event.tid = f.tid == Value::kOk && parse_integer(f.tid_token, &event.tid)
                  ? event.tid
                  : thread_id(state, f.tid, f.tid_token, "tid", f);
  event.correlation = f.correlation;
  if (f.correlation < 0 && (is_gpu_work(kind) || kind == EventKind::kCudaRuntime ||
                            kind == EventKind::kCudaDriver || kind == EventKind::kCudaSync)) {
    state.correlation_missing = true;  // the same kinds as needs_correlation (kineto_links.cc)
  }
  event.external_id = f.external_id;
  event.cuda_event = f.cuda_event;

  if (kind == EventKind::kCudaSync) {
    std::string_view raw;
    SyncKind sync = SyncKind::kNone;
    if (x.has_sync_kind && string_contents(x.sync_kind, &raw)) {
      sync = sync_kind_of(raw);
    } else {
      sync = sync_kind_of(state.trace.names[name]);
    }
    if (sync == SyncKind::kNone) {
      state.warnings.add("cuda_sync event of unknown cuda_sync_kind", [&] {
        return fmt::format("event '{}', cuda_sync_kind {}", clip(f.name_text),
                           x.has_sync_kind ? clip(trim_token(x.sync_kind)) : "absent");
      });
    }
    event.sync = sync;
    event.wait_on_stream = x.wait_on_stream;
    event.wait_on_event_correlation = x.wait_on_event_correlation;
    if (event.cuda_event < 0) event.cuda_event = x.wait_on_event_id;
  } else if (kind == EventKind::kCudaRuntime || kind == EventKind::kCudaDriver) {
    if ((flags & kNameStreamWait) != 0) event.sync = SyncKind::kStreamWaitEvent;
    if ((flags & kNameStreamSync) != 0) event.sync = SyncKind::kStreamSync;
    if ((flags & kNameEventSync) != 0) event.sync = SyncKind::kEventSync;
    if ((flags & kNameContextSync) != 0) event.sync = SyncKind::kContextSync;
  }

  const bool host = kind == EventKind::kCpuOp || kind == EventKind::kUserAnnotation;
  const bool nccl_annotation = kind == EventKind::kUserAnnotation && (flags & kNameNcclAnnotation);
  event.nccl = x.has_collective || nccl_annotation ||
               (kind == EventKind::kKernel && (flags & kNameNcclKernel) != 0) ||
               (kind == EventKind::kGpuUserAnnotation && (flags & kNameNcclAnnotation) != 0) ||
               (host && (flags & kNameRecordParamComms) != 0);
  if (x.has_collective || nccl_annotation) add_collective(state, event, f);
  if (host && (flags & kNameProfilerStep) != 0) {
    state.steps.emplace_back(event.start_ns, event.start_ns + event.duration_ns);
  }
  state.trace.events.push_back(event);
  return true;
}

// Product of the first entry of "Input Dims" ([[6144], [], ...]); -1 when absent or not ints.
error_code first_input_elements(od::value& value, std::int64_t* elements) {
  od::array outer;
  if (value.get_array().get(outer) != SUCCESS) return SUCCESS;
  for (auto inner_result : outer) {
    od::array inner;
    error_code error = inner_result.get_array().get(inner);
    if (error == simdjson::INCORRECT_TYPE) return SUCCESS;
    if (error != SUCCESS) return error;
    std::int64_t product = 1;
    bool any = false;
    for (auto dim_result : inner) {
      od::value dim;
      if ((error = dim_result.get(dim)) != SUCCESS) return error;
      std::int64_t size = 0;
      if (!parse_integer(dim.raw_json_token(), &size) || size < 0 ||
          __builtin_mul_overflow(product, size, &product)) {
        return SUCCESS;
      }
      any = true;
    }
    if (any) *elements = product;
    return SUCCESS;  // the rest of the array is skipped by the parent
  }
  return SUCCESS;
}

error_code first_string_token(od::value& value, std::string_view* token) {
  od::array array;
  if (value.get_array().get(array) != SUCCESS) return SUCCESS;
  for (auto item_result : array) {
    od::value item;
    if (const error_code error = item_result.get(item); error != SUCCESS) return error;
    *token = item.raw_json_token();
    return SUCCESS;
  }
  return SUCCESS;
}

// Process Group Ranks: "[0, 1]" (a string, as Kineto writes it) or a JSON array of integers.
error_code rank_list(od::value& value, std::vector<std::int64_t>* ranks) {
  std::string_view text;
  if (string_contents(value.raw_json_token(), &text)) {
    *ranks = parse_rank_list(text);
    return SUCCESS;
  }
  od::array array;
  if (value.get_array().get(array) != SUCCESS) return SUCCESS;
  for (auto item_result : array) {
    od::value item;
    if (const error_code error = item_result.get(item); error != SUCCESS) return error;
    std::int64_t rank = 0;
    if (ranks->size() < (1 << 20) && parse_integer(item.raw_json_token(), &rank)) {
      ranks->push_back(rank);
    }
  }
  return SUCCESS;
}

error_code parse_args(od::object& args, EventFields& f, const ParseState& state,
                      std::uint16_t needed) {
  const std::uint32_t name_hint = f.name_index;
  const bool all = needed == kArgAll;
  std::uint16_t found = 0;
  if (all && f.extra == nullptr) {
    *f.extra_slot = Extra{};
    f.extra = f.extra_slot;
  }
  for (auto field_result : args) {
    // The field is used in place: copying it out of the result (get) stored its parts with two
    // narrow writes and reloaded them with one wide read, a store-forwarding stall per field.
    if (const error_code error = field_result.error(); error != SUCCESS) return error;
    od::field&& field = std::move(field_result).value_unsafe();
    const od::raw_json_string key = field.key();
    const char first = key.raw()[0];
    od::value& value = field.value();
    std::int64_t number = 0;
    switch (first) {
      case 'c':
        // "correlationId" is how CUPTI and some converters spell it.
        if (key_is(key, "correlation") || key_is(key, "correlationId")) {
          if (parse_integer(value.raw_json_token(), &number)) f.correlation = number;
          found |= kArgCorrelation;
        } else if (all && key_is(key, "cuda_sync_kind")) {
          f.extra->has_sync_kind = true;
          f.extra->sync_kind = value.raw_json_token();
        } else if (key_is(key, "cuda_event")) {
          if (parse_integer(value.raw_json_token(), &number)) f.cuda_event = number;
          found |= kArgCudaEvent;
        }
        break;
      case 'E':
      case 'e':  // "external id" (lower case) in some PyTorch versions
        if (key_is(key, "External id") || key_is(key, "external id")) {
          if (parse_integer(value.raw_json_token(), &number)) f.external_id = number;
          found |= kArgExternalId;
        }
        break;
      case 'w':
        if (!all) break;
        if (key_is(key, "wait_on_stream")) {
          if (parse_integer(value.raw_json_token(), &number)) f.extra->wait_on_stream = number;
        } else if (key_is(key, "wait_on_cuda_event_record_corr_id")) {
          if (parse_integer(value.raw_json_token(), &number))
            f.extra->wait_on_event_correlation = number;
        } else if (key_is(key, "wait_on_cuda_event_id")) {
          if (parse_integer(value.raw_json_token(), &number)) f.extra->wait_on_event_id = number;
        }
        break;
      case 'C':
        if (all && key_is(key, "Collective name")) {
          f.extra->has_collective = true;
          f.extra->collective_name = value.raw_json_token();
        }
        break;
      case 'I':
        if (!all) break;
        if (key_is(key, "In msg nelems")) {
          if (parse_integer(value.raw_json_token(), &number)) f.extra->in_elements = number;
        } else if (name_hint != UINT32_MAX &&
                   (state.name_flags[name_hint] & (kNameNcclAnnotation | kNameRecordParamComms))) {
          // Shapes are read only for collective ops: parsing every op's would cost time.
          if (key_is(key, "Input Dims")) {
            if (const error_code error = first_input_elements(value, &f.extra->input_elements);
                error != SUCCESS) {
              return error;
            }
          } else if (key_is(key, "Input type")) {
            if (const error_code error = first_string_token(value, &f.extra->input_type);
                error != SUCCESS) {
              return error;
            }
          }
        }
        break;
      case 'O':
        if (all && key_is(key, "Out msg nelems") &&
            parse_integer(value.raw_json_token(), &number)) {
          f.extra->out_elements = number;
        }
        break;
      case 'G':
        if (all && key_is(key, "Group size") && parse_integer(value.raw_json_token(), &number)) {
          f.extra->group_size = number;
        }
        break;
      case 'd':
        if (all && key_is(key, "dtype")) f.extra->dtype = value.raw_json_token();
        break;
      case 'P':
        if (!all) break;
        if (key_is(key, "Process Group Name")) {
          f.extra->group_name = value.raw_json_token();
        } else if (key_is(key, "Process Group Description")) {
          f.extra->group_description = value.raw_json_token();
        } else if (key_is(key, "Process Group Ranks")) {
          if (const error_code error = rank_list(value, &f.extra->group_ranks); error != SUCCESS) {
            return error;
          }
        }
        break;
      case 'S':
        if (all && key_is(key, "Seq") && parse_integer(value.raw_json_token(), &number)) {
          f.extra->sequence = number;
        }
        break;
      default:
        break;
    }
    // Stop before advancing: the parent then skips the rest of the object (and still checks its
    // brackets). Checking before fetching the next field would swallow that fetch's error.
    if ((found & needed) == needed) break;
  }
  return SUCCESS;
}

error_code parse_event(od::object& object, EventFields& f, ParseState& state) {
  for (auto field_result : object) {
    // The field is used in place: copying it out of the result (get) stored its parts with two
    // narrow writes and reloaded them with one wide read, a store-forwarding stall per field.
    if (const error_code error = field_result.error(); error != SUCCESS) return error;
    od::field&& field = std::move(field_result).value_unsafe();
    const od::raw_json_string key = field.key();
    const char* k = key.raw();
    od::value& value = field.value();
    switch (k[0]) {
      case 'p':
        if (k[1] == 'h' && k[2] == '"') {
          std::string_view ph;
          if (string_contents(value.raw_json_token(), &ph) && ph.size() == 1) f.ph = ph[0];
        } else if (key_is(key, "pid")) {
          f.pid = Value::kOk;
          f.pid_token = value.raw_json_token();
        }
        break;
      case 't':
        if (k[1] == 's' && k[2] == '"') {
          f.ts = parse_us_as_ns(value.raw_json_token(), &f.ts_ns) ? Value::kOk : Value::kBad;
        } else if (key_is(key, "tid")) {
          f.tid = Value::kOk;
          f.tid_token = value.raw_json_token();
        }
        break;
      case 'd':
        if (key_is(key, "dur")) {
          f.dur = parse_us_as_ns(value.raw_json_token(), &f.dur_ns) ? Value::kOk : Value::kBad;
        }
        break;
      case 'c':
        if (key_is(key, "cat")) read_category(value.raw_json_token(), f);
        break;
      case 'n':
        if (key_is(key, "name")) {
          f.name = string_contents(value.raw_json_token(), &f.name_text) ? Value::kOk : Value::kBad;
          if (f.name == Value::kOk && (f.ph == 'X' || f.ph == 0 || f.ph == 'B')) {
            f.name_index = intern_name(state, f.name_text);
          }
        }
        break;
      case 'i':
        if (k[1] == 'd' && k[2] == '"') {
          f.has_id = parse_integer(value.raw_json_token(), &f.id);
        }
        break;
      case 'a':
        if (key_is(key, "args")) {
          const std::uint16_t needed = needed_args(f, state);
          if (needed == 0) break;
          od::object args;
          const error_code error = value.get_object().get(args);
          if (error == SUCCESS) {
            if (const error_code args_error = parse_args(args, f, state, needed);
                args_error != SUCCESS) {
              return args_error;
            }
          } else if (error != simdjson::INCORRECT_TYPE) {
            return error;
          }
        }
        break;
      default:
        break;
    }
  }
  return SUCCESS;
}

}  // namespace

EventsOutcome parse_events(od::array& events, ParseState& state, bool skip_first) {
  EventsOutcome outcome;
  const char* last_start = nullptr;  // start of the last element handled (committed or skipped)
  Extra extra;
  bool first = true;
  for (auto element_result : events) {
    // Used in place, not copied out of the result (see parse_event).
    if ((outcome.error = element_result.error()) != SUCCESS) {
      outcome.restart = last_start;
      outcome.restart_skips_first = true;
      return outcome;
    }
    od::value&& element = std::move(element_result).value_unsafe();
    const char* start = element.raw_json_token().data();
    if (first && skip_first) {  // committed by the previous window
      first = false;
      last_start = start;
      continue;
    }
    first = false;
    simdjson::simdjson_result<od::object> object_result = element.get_object();
    const error_code type_error = object_result.error();
    od::object&& object = std::move(object_result).value_unsafe();  // used only on SUCCESS
    if (type_error == simdjson::INCORRECT_TYPE) {
      // A bracket, comma or NUL where a value should be is a structural error (a cut window ends
      // like this), not an element of another type.
      const char c = *start;
      const bool value_start = c == '"' || c == '-' || (c >= '0' && c <= '9') || c == 't' ||
                               c == 'f' || c == 'n' || c == '[';
      if (!value_start) {
        outcome.error = simdjson::TAPE_ERROR;
        outcome.restart = last_start;
        outcome.restart_skips_first = true;
        return outcome;
      }
      state.warnings.add("traceEvents entry that is not an object (skipped)", [&] {
        return fmt::format("entry {}", clip(trim_token(element.raw_json_token())));
      });
      last_start = start;
      ++outcome.committed;
      continue;
    }
    EventFields fields;
    fields.extra_slot = &extra;
    if (type_error == SUCCESS) outcome.error = parse_event(object, fields, state);
    if (type_error != SUCCESS) outcome.error = type_error;
    if (outcome.error != SUCCESS) {
      outcome.restart = start;
      outcome.restart_skips_first = false;
      return outcome;
    }
    if (!commit(state, fields)) {
      outcome.too_many = true;
      return outcome;
    }
    last_start = start;
    ++outcome.committed;
  }
  outcome.restart = last_start;  // the array ended: where a walk would resume, were it cut here
  outcome.restart_skips_first = true;
  return outcome;
}

}  // namespace powertrain::trace::detail
