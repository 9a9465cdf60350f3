// Streams and events of the emulated device. Handles are tagged integers (a non-canonical
// address carrying a tag and the trace id), validated against a registry before any use, so a
// stale or forged handle is reported as cudaErrorInvalidResourceHandle and never dereferenced;
// ids are never reused, so a destroyed handle stays invalid. Work completes the moment it is
// enqueued: queries report completion, synchronisation only writes its record, and host
// callbacks run synchronously in the calling thread.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "interposer/cudart_impl.h"
#include "interposer/cudart_internal.h"
#include "interposer/trace_schema.h"

namespace powertrain::emu::detail {
namespace {

constexpr std::uintptr_t kIdMask = (std::uintptr_t{1} << 48) - 1;
constexpr std::uintptr_t kStreamTag = std::uintptr_t{0x5354} << 48;  // "ST"
constexpr std::uintptr_t kEventTag = std::uintptr_t{0x4556} << 48;   // "EV"
constexpr unsigned kValidEventFlags =
    cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
constexpr int kLeastPriority = 0;
constexpr int kGreatestPriority = -5;  // as on H100

struct StreamEntry {
  int device = 0;
  unsigned flags = 0;
  int priority = 0;
  bool live = false;
};

struct EventEntry {
  int device = 0;
  unsigned flags = 0;
  bool live = false;
  bool recorded = false;
  std::int64_t record_t = 0;  // host time of the last cudaEventRecord
  // Second pass of `emulate --two-pass`: the predicted device time of the last record.
  bool predicted = false;
  std::int64_t predicted_t = 0;
  std::int64_t predicted_host_t = -1;  // when that record call returns on the modelled host clock
  std::int32_t records = 0;            // cudaEventRecord calls so far (the occurrence of the next)
};

// Predicted event completions of this process (POWERTRAIN_EMU_EVENT_TIMES/rank-$RANK.tsv, lines
// "event occurrence device_ns host_ns"), loaded on first use; empty without a second pass.
struct PredictedTime {
  std::int64_t device_ns = 0;
  std::int64_t host_ns = -1;  // -1: not in the file (an older 3-column file)
};
struct PredictedEvents {
  bool active = false;
  std::map<std::pair<std::int64_t, std::int32_t>, PredictedTime> ns;
};

// cudaEventQuery polls in the second pass: each "not ready" answer advances the modelled host
// clock by one poll — the query call (1 µs, the host model's cost of other calls) and the
// default modelled gap between two calls (1 µs) — so a polling loop ends when the clock reaches
// the event's predicted completion, after ⌈(device − host) / 2 µs⌉ answers. Bounded: a query
// answers "ready" after kMaxNotReady consecutive "not ready" answers (2 s of modelled polling).
constexpr std::int64_t kPollNs = 2000;
constexpr std::int64_t kMaxNotReady = 1000000;

const PredictedEvents& predicted_events() {
  static const PredictedEvents* loaded = [] {
    auto* p = new PredictedEvents;  // never destroyed (calls arrive during exit)
    const char* dir = std::getenv("POWERTRAIN_EMU_EVENT_TIMES");
    if (dir == nullptr || *dir == '\0') return p;
    const char* rank = std::getenv("RANK");
    const std::string path =
        std::string(dir) + "/rank-" + (rank != nullptr && *rank != '\0' ? rank : "0") + ".tsv";
    p->active = true;
    std::FILE* f = std::fopen(path.c_str(), "r");
    if (f == nullptr) {
      std::fprintf(stderr, "powertrain: two-pass: cannot read %s; event times are host time\n",
                   path.c_str());
      return p;
    }
    char line[256];
    while (std::fgets(line, sizeof line, f) != nullptr) {
      long long event = 0, occurrence = 0, ns = 0, host = -1;
      if (line[0] == '#') continue;
      const int fields = std::sscanf(line, "%lld %lld %lld %lld", &event, &occurrence, &ns, &host);
      if (fields >= 3 && occurrence >= 0 && occurrence <= INT32_MAX) {
        p->ns[{event, static_cast<std::int32_t>(occurrence)}] = {ns, fields == 4 ? host : -1};
      }
    }
    std::fclose(f);
    return p;
  }();
  return *loaded;
}

// Second pass: the modelled return of each stream/device synchronization of pass 1
// (POWERTRAIN_EMU_EVENT_TIMES/syncs-rank-$RANK.tsv, lines "device stream occurrence return_ns";
// stream −1 = cudaDeviceSynchronize; a cudaStreamQuery that answered "ready" counts as a stream
// synchronization). The calls are paced in real time: a wait returns no earlier than the real
// time of the previous paced return plus the modelled time between the two returns, so a host
// timer (std::chrono, nccl-tests' own) around them measures the predicted time wherever this
// machine is faster than the prediction. One wait is capped at kMaxPaceNs.
constexpr std::int64_t kMaxPaceNs = 10'000'000'000;
struct SyncPacer {
  bool active = false;
  std::map<std::tuple<int, std::int64_t, std::int32_t>, std::int64_t> return_ns;
  std::mutex mutex;
  std::map<std::pair<int, std::int64_t>, std::int32_t> next;  // occurrences so far
  std::int64_t real_anchor_ns = 0;                            // now_ns() at the last paced return
  std::int64_t modelled_anchor_ns = 0;
};

SyncPacer& sync_pacer() {
  static SyncPacer* loaded = [] {
    auto* p = new SyncPacer;  // never destroyed (calls arrive during exit)
    const char* dir = std::getenv("POWERTRAIN_EMU_EVENT_TIMES");
    if (dir == nullptr || *dir == '\0') return p;
    const char* rank = std::getenv("RANK");
    const std::string path = std::string(dir) + "/syncs-rank-" +
                             (rank != nullptr && *rank != '\0' ? rank : "0") + ".tsv";
    std::FILE* f = std::fopen(path.c_str(), "r");
    if (f == nullptr) return p;  // an older first pass: no pacing
    p->active = true;
    char line[256];
    while (std::fgets(line, sizeof line, f) != nullptr) {
      long long device = 0, stream = 0, occurrence = 0, ns = 0;
      if (line[0] == '#') continue;
      if (std::sscanf(line, "%lld %lld %lld %lld", &device, &stream, &occurrence, &ns) == 4 &&
          device >= 0 && device <= INT32_MAX && occurrence >= 0 && occurrence <= INT32_MAX) {
        p->return_ns[{static_cast<int>(device), stream, static_cast<std::int32_t>(occurrence)}] =
            ns;
      }
    }
    std::fclose(f);
    return p;
  }();
  return *loaded;
}

// The real time (now_ns clock) before which the next synchronization of (device, stream) must not
// return in the second pass, or -1 when it has no prediction. Does not consume the occurrence.
std::int64_t pace_deadline(int device, std::int64_t stream) {
  SyncPacer& p = sync_pacer();
  if (!p.active) return -1;
  std::lock_guard<std::mutex> lock(p.mutex);
  const auto found = p.next.find({device, stream});
  const std::int32_t occurrence = found == p.next.end() ? 0 : found->second;
  const auto it = p.return_ns.find({device, stream, occurrence});
  if (it == p.return_ns.end()) return -1;
  const std::int64_t ahead =
      std::clamp<std::int64_t>(it->second - p.modelled_anchor_ns, 0, kMaxPaceNs);
  return p.real_anchor_ns + ahead;
}

// The synchronization of (device, stream) returns now: consumes its occurrence and moves the
// anchor (real now, its modelled return), so this machine's earlier slowness is not carried on.
void pace_return(int device, std::int64_t stream) {
  SyncPacer& p = sync_pacer();
  if (!p.active) return;
  std::lock_guard<std::mutex> lock(p.mutex);
  std::int32_t& occurrence = p.next[{device, stream}];
  const auto it = p.return_ns.find({device, stream, occurrence});
  if (occurrence < INT32_MAX) ++occurrence;
  if (it == p.return_ns.end()) return;
  p.real_anchor_ns = now_ns();
  p.modelled_anchor_ns = it->second;
}

void sleep_ns(std::int64_t ns) {
  if (ns <= 0) return;
  timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

// Blocks until `deadline` (now_ns clock; -1: no wait).
void wait_until(std::int64_t deadline) {
  if (deadline < 0) return;
  for (std::int64_t left = deadline - now_ns(); left > 0; left = deadline - now_ns()) {
    sleep_ns(left);
  }
}

struct Registry {
  std::mutex mutex;
  std::vector<StreamEntry> streams;  // index = id - kFirstCreatedStream
  std::vector<EventEntry> events;    // index = id - 1
  // Second pass: the modelled host clock (ns from the process's first record) as far as the
  // predicted events tell it — set at each predicted record's return, advanced by event
  // synchronizations and by cudaEventQuery polls. Its "not ready" answers in a row.
  std::int64_t modelled_host_ns = 0;
  std::int64_t not_ready_in_a_row = 0;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed (calls arrive during exit)
  return *r;
}

cudaStream_t stream_handle(std::int64_t id) {
  return reinterpret_cast<cudaStream_t>(kStreamTag | static_cast<std::uintptr_t>(id));
}

cudaEvent_t event_handle(std::int64_t id) {
  return reinterpret_cast<cudaEvent_t>(kEventTag | static_cast<std::uintptr_t>(id));
}

// Index into registry().streams for a created-stream handle, or -1.
std::int64_t created_stream_index(const void* stream) {
  const auto bits = reinterpret_cast<std::uintptr_t>(stream);
  if ((bits & ~kIdMask) != kStreamTag) return -1;
  return static_cast<std::int64_t>(bits & kIdMask) - kFirstCreatedStream;
}

// Index into registry().events, or -1 for a value that is not an event handle.
std::int64_t event_index(const void* event) {
  const auto bits = reinterpret_cast<std::uintptr_t>(event);
  if ((bits & ~kIdMask) != kEventTag) return -1;
  return static_cast<std::int64_t>(bits & kIdMask) - 1;
}

// Looks a live event up; returns its id or -1 (with `entry` filled on success). Lock held.
std::int64_t live_event(Registry& r, const void* event, EventEntry** entry) {
  const std::int64_t index = event_index(event);
  if (index < 0 || index >= static_cast<std::int64_t>(r.events.size())) return -1;
  if (!r.events[index].live) return -1;
  *entry = &r.events[index];
  return index + 1;
}

std::string bad_event_text(const void* event) {
  const std::int64_t index = event_index(event);
  if (index >= 0 && index < static_cast<std::int64_t>(registry().events.size())) {
    return "event " + std::to_string(index + 1) + " (" + pointer_text(event) +
           ") was already destroyed";
  }
  return "invalid event handle " + pointer_text(event);
}

cudaError_t create_stream(cudaStream_t* out, unsigned flags, int priority, const char* api) {
  const std::int64_t start = now_ns();
  if (out == nullptr) return misuse(api, cudaErrorInvalidValue, "pStream is NULL");
  if ((flags & ~static_cast<unsigned>(cudaStreamNonBlocking)) != 0) {
    return misuse(api, cudaErrorInvalidValue, "unknown stream flags " + std::to_string(flags));
  }
  // The runtime clamps priorities into the device's range rather than failing.
  if (priority > kLeastPriority) priority = kLeastPriority;
  if (priority < kGreatestPriority) priority = kGreatestPriority;
  const int device = current_device();
  std::int64_t id = 0;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    id = static_cast<std::int64_t>(r.streams.size()) + kFirstCreatedStream;
    r.streams.push_back(StreamEntry{device, flags, priority, true});
  }
  *out = stream_handle(id);
  Record record = make_record(Op::kStreamCreate, start, device);
  record.a[0] = id;
  record.a[1] = flags;
  record.a[2] = priority;
  append(std::move(record));
  return cudaSuccess;
}

cudaError_t create_event(cudaEvent_t* out, unsigned flags, const char* api) {
  const std::int64_t start = now_ns();
  if (out == nullptr) return misuse(api, cudaErrorInvalidValue, "event is NULL");
  if ((flags & ~kValidEventFlags) != 0) {
    return misuse(api, cudaErrorInvalidValue, "unknown event flags " + std::to_string(flags));
  }
  const int device = current_device();
  std::int64_t id = 0;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    id = static_cast<std::int64_t>(r.events.size()) + 1;
    r.events.push_back(EventEntry{device, flags, true, false, 0, false, 0, 0});
  }
  *out = event_handle(id);
  Record record = make_record(Op::kEventCreate, start, device);
  record.a[0] = id;
  record.a[1] = flags;
  append(std::move(record));
  return cudaSuccess;
}

}  // namespace

std::int64_t event_id(const void* event) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  EventEntry* entry = nullptr;
  return live_event(r, event, &entry);
}

std::int64_t reserve_internal_stream(int device) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const auto id = static_cast<std::int64_t>(r.streams.size()) + kFirstCreatedStream;
  r.streams.push_back(StreamEntry{device, cudaStreamNonBlocking, 0, false});
  return id;
}

std::int64_t reserve_internal_event(int device) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const auto id = static_cast<std::int64_t>(r.events.size()) + 1;
  r.events.push_back(EventEntry{device, cudaEventDisableTiming, false, false, 0, false, 0, 0});
  return id;
}

StreamRef resolve_stream(const void* stream, bool per_thread) {
  StreamRef ref;
  const auto bits = reinterpret_cast<std::uintptr_t>(stream);
  if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread) {
    const bool per_thread_default =
        stream == cudaStreamPerThread || (stream == nullptr && per_thread);
    ref.id =
        per_thread_default ? kPerThreadDefaultStreamBase + thread_index() : kLegacyDefaultStream;
    ref.device = current_device();
    return ref;
  }
  if ((bits & ~kIdMask) != kStreamTag) return ref;
  const std::int64_t index = created_stream_index(stream);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (index >= 0 && index < static_cast<std::int64_t>(r.streams.size()) && r.streams[index].live) {
    ref.id = index + kFirstCreatedStream;
    ref.device = r.streams[index].device;
  }
  return ref;
}

bool stream_or_fail(const void* stream, bool per_thread, std::string_view api, StreamRef* out) {
  *out = resolve_stream(stream, per_thread);
  if (out->id != kInvalidStream) return true;
  const std::int64_t index = created_stream_index(stream);
  bool destroyed = false;
  if (index >= 0) {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    destroyed = index < static_cast<std::int64_t>(r.streams.size());
  }
  misuse(api, cudaErrorInvalidResourceHandle,
         destroyed ? "stream " + std::to_string(index + kFirstCreatedStream) + " (" +
                         pointer_text(stream) + ") was already destroyed"
                   : "invalid stream handle " + pointer_text(stream));
  return false;
}

void reset_streams_and_events(int device) {
  std::vector<std::int64_t> destroyed;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    for (std::size_t i = 0; i < r.streams.size(); ++i) {
      if (r.streams[i].live && r.streams[i].device == device) {
        r.streams[i].live = false;
        destroyed.push_back(static_cast<std::int64_t>(i) + kFirstCreatedStream);
      }
    }
    for (EventEntry& e : r.events) {
      if (e.device == device) e.live = false;
    }
  }
  for (const std::int64_t id : destroyed) {
    Record record = make_record(Op::kStreamDestroy, now_ns(), device);
    record.a[0] = id;
    append(std::move(record));
  }
}

namespace impl {

// All enqueued work is complete in the emulator, so a single pass answers "ready" at once. The
// answer is recorded as a stream_sync named after the call: the program goes on as if the stream
// were done, so the timeline makes the host wait for it there. Second pass: "not ready" until the
// paced return of that synchronization (a polling loop then spins about as long as predicted).
cudaError_t stream_query(cudaStream_t stream, bool per_thread, const char* api) {
  const std::int64_t start = now_ns();
  StreamRef ref;
  if (!stream_or_fail(stream, per_thread, api, &ref)) return cudaErrorInvalidResourceHandle;
  if (stream_capture_status(ref.id, nullptr, nullptr)) return cudaSuccess;  // not a sync point
  const std::int64_t deadline = pace_deadline(ref.device, ref.id);
  if (deadline >= 0 && start < deadline) {
    // Sleep part of the rest so the loop does not burn a shared core; not an error, so the last
    // error stays alone, as in the runtime.
    sleep_ns(std::min<std::int64_t>(deadline - start, 100'000));
    return cudaErrorNotReady;
  }
  pace_return(ref.device, ref.id);
  Record record = make_record(Op::kStreamSync, start, ref.device);
  record.a[0] = ref.id;
  record.api = api;
  append(std::move(record));
  return cudaSuccess;
}

cudaError_t stream_accept(cudaStream_t stream, bool per_thread, const char* api) {
  StreamRef ref;
  if (!stream_or_fail(stream, per_thread, api, &ref)) return cudaErrorInvalidResourceHandle;
  return cudaSuccess;
}

cudaError_t stream_synchronize(cudaStream_t stream, bool per_thread, const char* api, bool named) {
  const std::int64_t start = now_ns();
  StreamRef ref;
  if (!stream_or_fail(stream, per_thread, api, &ref)) return cudaErrorInvalidResourceHandle;
  wait_until(pace_deadline(ref.device, ref.id));
  pace_return(ref.device, ref.id);
  Record record = make_record(Op::kStreamSync, start, ref.device);
  record.a[0] = ref.id;
  if (named) record.api = api;
  append(std::move(record));
  return cudaSuccess;
}

void pace_wait(int device, std::int64_t key) {
  wait_until(pace_deadline(device, key));
  pace_return(device, key);
}

void pace_device_synchronize(int device) { pace_wait(device, trace_schema::kPaceDeviceSync); }

cudaError_t stream_get_device(cudaStream_t stream, int* device, bool per_thread, const char* api) {
  StreamRef ref;
  if (!stream_or_fail(stream, per_thread, api, &ref)) return cudaErrorInvalidResourceHandle;
  if (device == nullptr) return misuse(api, cudaErrorInvalidValue, "device is NULL");
  *device = ref.device;
  return cudaSuccess;
}

namespace {
// A property of a created stream read under the registry lock (0 for the default streams);
// `what` names the output argument in the misuse message.
template <typename T, typename Member>
cudaError_t created_stream_property(cudaStream_t stream, T* out, bool per_thread, const char* api,
                                    std::string_view what, Member member) {
  StreamRef ref;
  if (!stream_or_fail(stream, per_thread, api, &ref)) return cudaErrorInvalidResourceHandle;
  if (out == nullptr) return misuse(api, cudaErrorInvalidValue, std::string(what) + " is NULL");
  *out = 0;
  const std::int64_t index = created_stream_index(stream);
  if (index >= 0) {
    std::lock_guard<std::mutex> lock(registry().mutex);
    *out = registry().streams[index].*member;
  }
  return cudaSuccess;
}
}  // namespace

cudaError_t stream_get_flags(cudaStream_t stream, unsigned* flags, bool per_thread,
                             const char* api) {
  return created_stream_property(stream, flags, per_thread, api, "flags", &StreamEntry::flags);
}

cudaError_t stream_get_id(cudaStream_t stream, unsigned long long* id, bool per_thread,
                          const char* api) {
  StreamRef ref;
  if (!stream_or_fail(stream, per_thread, api, &ref)) return cudaErrorInvalidResourceHandle;
  if (id == nullptr) return misuse(api, cudaErrorInvalidValue, "streamId is NULL");
  *id = static_cast<unsigned long long>(ref.id);  // the trace id: stable and unique
  return cudaSuccess;
}

cudaError_t stream_get_priority(cudaStream_t stream, int* priority, bool per_thread,
                                const char* api) {
  return created_stream_property(stream, priority, per_thread, api, "priority",
                                 &StreamEntry::priority);
}

namespace {
// cudaEventRecord and cudaStreamWaitEvent: checks the stream, the flags (bits outside `allowed`
// are refused) and the event, lets `on_event` update the live event under the registry lock,
// and records `op` (stream, event, correlation).
template <typename OnEvent>
cudaError_t stream_event_call(Op op, cudaEvent_t event, cudaStream_t stream, unsigned flags,
                              unsigned allowed, std::string_view flag_kind, bool per_thread,
                              const char* api, OnEvent&& on_event) {
  const std::int64_t start = now_ns();
  StreamRef ref;
  if (!stream_or_fail(stream, per_thread, api, &ref)) return cudaErrorInvalidResourceHandle;
  if ((flags & ~allowed) != 0) {
    return misuse(api, cudaErrorInvalidValue,
                  "unknown " + std::string(flag_kind) + " flags " + std::to_string(flags));
  }
  std::int64_t id = -1;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    EventEntry* entry = nullptr;
    id = live_event(r, event, &entry);
    if (id > 0) on_event(*entry, start, id);
  }
  if (id < 0) return misuse(api, cudaErrorInvalidResourceHandle, bad_event_text(event));
  Record record = make_record(op, start, ref.device);
  record.a[0] = ref.id;
  record.a[1] = id;
  record.a[2] = next_correlation();
  record.api = api;
  append(std::move(record));
  return cudaSuccess;
}
}  // namespace

cudaError_t event_record(cudaEvent_t event, cudaStream_t stream, unsigned flags, bool per_thread,
                         const char* api) {
  return stream_event_call(
      Op::kEventRecord, event, stream, flags, static_cast<unsigned>(cudaEventRecordExternal),
      "record", per_thread, api, [](EventEntry& entry, std::int64_t start, std::int64_t id) {
        entry.recorded = true;
        entry.record_t = start;
        const std::int32_t occurrence = entry.records;
        if (entry.records < INT32_MAX) ++entry.records;
        const PredictedEvents& p = predicted_events();
        const auto it = p.ns.find({id, occurrence});
        entry.predicted = it != p.ns.end();
        if (entry.predicted) {
          entry.predicted_t = it->second.device_ns;
          entry.predicted_host_t = it->second.host_ns;
          Registry& r = registry();  // its mutex is held here
          r.modelled_host_ns = std::max(r.modelled_host_ns, it->second.host_ns);
        }
        if (p.active && !entry.predicted) {
          static bool warned = false;
          if (!warned) {
            warned = true;
            std::fprintf(stderr,
                         "powertrain: two-pass: event %lld record %d has no "
                         "predicted time (this run diverged from the "
                         "recorded one); its elapsed times are host time\n",
                         static_cast<long long>(id), occurrence);
          }
        }
      });
}

cudaError_t stream_wait_event(cudaStream_t stream, cudaEvent_t event, unsigned flags,
                              bool per_thread, const char* api) {
  return stream_event_call(Op::kStreamWaitEvent, event, stream, flags,
                           static_cast<unsigned>(cudaEventWaitExternal), "wait", per_thread, api,
                           [](EventEntry&, std::int64_t, std::int64_t) {});
}

cudaError_t launch_host_func(cudaStream_t stream, cudaHostFn_t fn, void* user_data, bool per_thread,
                             const char* api) {
  const std::int64_t start = now_ns();
  StreamRef ref;
  if (!stream_or_fail(stream, per_thread, api, &ref)) return cudaErrorInvalidResourceHandle;
  if (fn == nullptr) return misuse(api, cudaErrorInvalidValue, "fn is NULL");
  Record record = make_record(Op::kHostFunc, start, ref.device);
  record.a[0] = ref.id;
  record.a[1] = next_correlation();
  record.api = api;
  set_pending_host_fn(fn, user_data);
  append(std::move(record));
  // A captured host node runs at each cudaGraphLaunch instead.
  if (take_captured()) return cudaSuccess;
  // Earlier work on the stream is already complete, so the function may run now; running it in
  // the calling thread keeps the program's observable order (it runs after the enqueue).
  fn(user_data);
  return cudaSuccess;
}

cudaError_t stream_add_callback(cudaStream_t stream, cudaStreamCallback_t callback, void* user_data,
                                unsigned flags, bool per_thread, const char* api) {
  const std::int64_t start = now_ns();
  StreamRef ref;
  if (!stream_or_fail(stream, per_thread, api, &ref)) return cudaErrorInvalidResourceHandle;
  if (callback == nullptr || flags != 0) {
    return misuse(api, cudaErrorInvalidValue, "callback is NULL or flags are not 0");
  }
  Record record = make_record(Op::kHostFunc, start, ref.device);
  record.a[0] = ref.id;
  record.a[1] = next_correlation();
  record.api = api;
  append(std::move(record));
  callback(stream, cudaSuccess, user_data);
  return cudaSuccess;
}

cudaError_t stream_is_capturing(cudaStream_t stream, cudaStreamCaptureStatus* status,
                                bool per_thread, const char* api) {
  StreamRef ref;
  if (!stream_or_fail(stream, per_thread, api, &ref)) return cudaErrorInvalidResourceHandle;
  if (status == nullptr) return misuse(api, cudaErrorInvalidValue, "pCaptureStatus is NULL");
  *status = stream_capture_status(ref.id, nullptr, nullptr) ? cudaStreamCaptureStatusActive
                                                            : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}

cudaError_t stream_get_capture_info(cudaStream_t stream, cudaStreamCaptureStatus* status,
                                    unsigned long long* id, cudaGraph_t* graph,
                                    const cudaGraphNode_t** dependencies,
                                    const cudaGraphEdgeData** edge_data, size_t* num_dependencies,
                                    bool per_thread, const char* api) {
  const cudaError_t error = stream_is_capturing(stream, status, per_thread, api);
  if (error != cudaSuccess) return error;
  if (id != nullptr) *id = 0;
  if (graph != nullptr) *graph = nullptr;
  if (dependencies != nullptr) *dependencies = nullptr;
  if (edge_data != nullptr) *edge_data = nullptr;  // all default edges
  if (num_dependencies != nullptr) *num_dependencies = 0;
  if (*status == cudaStreamCaptureStatusActive) {
    StreamRef ref;
    if (stream_or_fail(stream, per_thread, api, &ref)) {
      stream_capture_status(ref.id, id, graph);
      capture_dependencies(ref.id, dependencies, num_dependencies);
    }
  }
  return cudaSuccess;
}

cudaError_t update_capture_dependencies(cudaStream_t stream, cudaGraphNode_t* dependencies,
                                        size_t count, unsigned flags, bool per_thread,
                                        const char* api) {
  StreamRef ref;
  if (!stream_or_fail(stream, per_thread, api, &ref)) return cudaErrorInvalidResourceHandle;
  return detail::update_capture_dependencies(ref.id, dependencies, count, flags, api);
}

}  // namespace impl
}  // namespace powertrain::emu::detail

namespace detail = powertrain::emu::detail;
namespace impl = powertrain::emu::detail::impl;
using detail::misuse;

// ---- streams -------------------------------------------------------------------------------

PT_EXPORT cudaError_t cudaStreamCreate(cudaStream_t* pStream) {
  return detail::create_stream(pStream, cudaStreamDefault, 0, "cudaStreamCreate");
}

PT_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  return detail::create_stream(pStream, flags, 0, "cudaStreamCreateWithFlags");
}

PT_EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t* pStream, unsigned int flags,
                                                   int priority) {
  return detail::create_stream(pStream, flags, priority, "cudaStreamCreateWithPriority");
}

PT_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  const std::int64_t start = powertrain::emu::now_ns();
  const char* api = "cudaStreamDestroy";
  const std::int64_t index = detail::created_stream_index(stream);
  int device = 0;
  bool ok = false;
  {
    detail::Registry& r = detail::registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (index >= 0 && index < static_cast<std::int64_t>(r.streams.size()) &&
        r.streams[index].live) {
      r.streams[index].live = false;
      device = r.streams[index].device;
      ok = true;
    }
  }
  if (!ok) {
    detail::StreamRef ref;
    if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread) {
      return misuse(api, cudaErrorInvalidResourceHandle,
                    "a default stream cannot be destroyed (" + detail::pointer_text(stream) + ")");
    }
    detail::stream_or_fail(stream, false, api, &ref);  // reports destroyed vs invalid
    return cudaErrorInvalidResourceHandle;
  }
  detail::Record record = detail::make_record(detail::Op::kStreamDestroy, start, device);
  record.a[0] = index + powertrain::emu::kFirstCreatedStream;
  detail::append(std::move(record));
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaStreamQuery(cudaStream_t stream) {
  return impl::stream_query(stream, false, "cudaStreamQuery");
}

PT_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  return impl::stream_synchronize(stream, false, "cudaStreamSynchronize");
}

PT_EXPORT cudaError_t cudaStreamGetDevice(cudaStream_t hStream, int* device) {
  return impl::stream_get_device(hStream, device, false, "cudaStreamGetDevice");
}

PT_EXPORT cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int* flags) {
  return impl::stream_get_flags(hStream, flags, false, "cudaStreamGetFlags");
}

PT_EXPORT cudaError_t cudaStreamGetId(cudaStream_t hStream, unsigned long long* streamId) {
  return impl::stream_get_id(hStream, streamId, false, "cudaStreamGetId");
}

PT_EXPORT cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int* priority) {
  return impl::stream_get_priority(hStream, priority, false, "cudaStreamGetPriority");
}

PT_EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
                                          unsigned int flags) {
  return impl::stream_wait_event(stream, event, flags, false, "cudaStreamWaitEvent");
}

PT_EXPORT cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback,
                                            void* userData, unsigned int flags) {
  return impl::stream_add_callback(stream, callback, userData, flags, false,
                                   "cudaStreamAddCallback");
}

PT_EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData) {
  return impl::launch_host_func(stream, fn, userData, false, "cudaLaunchHostFunc");
}

PT_EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t stream,
                                            enum cudaStreamCaptureStatus* pCaptureStatus) {
  return impl::stream_is_capturing(stream, pCaptureStatus, false, "cudaStreamIsCapturing");
}

PT_EXPORT cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream,
                                               enum cudaStreamCaptureStatus* captureStatus_out,
                                               unsigned long long* id_out, cudaGraph_t* graph_out,
                                               const cudaGraphNode_t** dependencies_out,
                                               const cudaGraphEdgeData** edgeData_out,
                                               size_t* numDependencies_out) {
  return impl::stream_get_capture_info(stream, captureStatus_out, id_out, graph_out,
                                       dependencies_out, edgeData_out, numDependencies_out, false,
                                       "cudaStreamGetCaptureInfo");
}

// CUDA 12's names: `cudaStreamGetCaptureInfo` compiles to `_v2` (no edge data; PyTorch's CUDA 12
// builds call it at every allocation during capture) and `_v3` is CUDA 13's signature.
PT_EXPORT cudaError_t cudaStreamGetCaptureInfo_v2(cudaStream_t stream,
                                                  enum cudaStreamCaptureStatus* captureStatus_out,
                                                  unsigned long long* id_out,
                                                  cudaGraph_t* graph_out,
                                                  const cudaGraphNode_t** dependencies_out,
                                                  size_t* numDependencies_out) {
  return impl::stream_get_capture_info(stream, captureStatus_out, id_out, graph_out,
                                       dependencies_out, nullptr, numDependencies_out, false,
                                       "cudaStreamGetCaptureInfo_v2");
}

PT_EXPORT cudaError_t cudaStreamGetCaptureInfo_v2_ptsz(
    cudaStream_t stream, enum cudaStreamCaptureStatus* captureStatus_out,
    unsigned long long* id_out, cudaGraph_t* graph_out, const cudaGraphNode_t** dependencies_out,
    size_t* numDependencies_out) {
  return impl::stream_get_capture_info(stream, captureStatus_out, id_out, graph_out,
                                       dependencies_out, nullptr, numDependencies_out, true,
                                       "cudaStreamGetCaptureInfo_v2_ptsz");
}

PT_EXPORT cudaError_t cudaStreamGetCaptureInfo_v3(
    cudaStream_t stream, enum cudaStreamCaptureStatus* captureStatus_out,
    unsigned long long* id_out, cudaGraph_t* graph_out, const cudaGraphNode_t** dependencies_out,
    const cudaGraphEdgeData** edgeData_out, size_t* numDependencies_out) {
  return impl::stream_get_capture_info(stream, captureStatus_out, id_out, graph_out,
                                       dependencies_out, edgeData_out, numDependencies_out, false,
                                       "cudaStreamGetCaptureInfo_v3");
}

PT_EXPORT cudaError_t cudaStreamGetCaptureInfo_v3_ptsz(
    cudaStream_t stream, enum cudaStreamCaptureStatus* captureStatus_out,
    unsigned long long* id_out, cudaGraph_t* graph_out, const cudaGraphNode_t** dependencies_out,
    const cudaGraphEdgeData** edgeData_out, size_t* numDependencies_out) {
  return impl::stream_get_capture_info(stream, captureStatus_out, id_out, graph_out,
                                       dependencies_out, edgeData_out, numDependencies_out, true,
                                       "cudaStreamGetCaptureInfo_v3_ptsz");
}

PT_EXPORT cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t stream,
                                                          cudaGraphNode_t* dependencies,
                                                          const cudaGraphEdgeData* dependencyData,
                                                          size_t numDependencies,
                                                          unsigned int flags) {
  (void)dependencyData;  // edge data orders nothing here
  if (detail::cudart_abi() == 12) {
    // CUDA 12's signature has no edge data: (stream, dependencies, count, flags).
    flags = static_cast<unsigned>(numDependencies);
    numDependencies = static_cast<size_t>(reinterpret_cast<std::uintptr_t>(dependencyData));
  }
  return impl::update_capture_dependencies(stream, dependencies, numDependencies, flags, false,
                                           "cudaStreamUpdateCaptureDependencies");
}

// CUDA 12's edge-data form.
PT_EXPORT cudaError_t cudaStreamUpdateCaptureDependencies_v2(
    cudaStream_t stream, cudaGraphNode_t* dependencies, const cudaGraphEdgeData* dependencyData,
    size_t numDependencies, unsigned int flags) {
  (void)dependencyData;
  return impl::update_capture_dependencies(stream, dependencies, numDependencies, flags, false,
                                           "cudaStreamUpdateCaptureDependencies_v2");
}

// CUDA 12's edge-data form for per-thread default stream programs.
PT_EXPORT cudaError_t cudaStreamUpdateCaptureDependencies_v2_ptsz(
    cudaStream_t stream, cudaGraphNode_t* dependencies, const cudaGraphEdgeData* dependencyData,
    size_t numDependencies, unsigned int flags) {
  (void)dependencyData;
  return impl::update_capture_dependencies(stream, dependencies, numDependencies, flags, true,
                                           "cudaStreamUpdateCaptureDependencies_v2_ptsz");
}

PT_EXPORT cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode* mode) {
  if (mode == nullptr) {
    return misuse("cudaThreadExchangeStreamCaptureMode", cudaErrorInvalidValue, "mode is NULL");
  }
  if (*mode < cudaStreamCaptureModeGlobal || *mode > cudaStreamCaptureModeRelaxed) {
    return misuse(
        "cudaThreadExchangeStreamCaptureMode", cudaErrorInvalidValue,
        "mode " + std::to_string(static_cast<int>(*mode)) + " is not a cudaStreamCaptureMode");
  }
  // The thread's mode is kept and exchanged (save/restore pairs round-trip, as PyTorch's
  // capture guards use them); the emulator does not refuse unsafe calls during a capture by it.
  thread_local cudaStreamCaptureMode t_mode = cudaStreamCaptureModeGlobal;
  std::swap(*mode, t_mode);
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaStreamGetAttribute(cudaStream_t stream, cudaStreamAttrID attr,
                                             cudaStreamAttrValue* value) {
  const cudaError_t error = impl::stream_accept(stream, false, "cudaStreamGetAttribute");
  if (error != cudaSuccess) return error;
  if (value == nullptr) {
    return misuse("cudaStreamGetAttribute", cudaErrorInvalidValue, "value is NULL");
  }
  (void)attr;
  *value = cudaStreamAttrValue{};  // defaults: no access policy, default sync policy
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaStreamSetAttribute(cudaStream_t stream, cudaStreamAttrID attr,
                                             const cudaStreamAttrValue* param) {
  (void)attr;
  (void)param;
  return impl::stream_accept(stream, false, "cudaStreamSetAttribute");  // hints: accepted
}

PT_EXPORT cudaError_t cudaStreamCopyAttributes(cudaStream_t dst, cudaStream_t src) {
  const cudaError_t error = impl::stream_accept(dst, false, "cudaStreamCopyAttributes");
  if (error != cudaSuccess) return error;
  return impl::stream_accept(src, false, "cudaStreamCopyAttributes");
}

PT_EXPORT cudaError_t cudaStreamAttachMemAsync(cudaStream_t stream, void* devPtr, size_t length,
                                               unsigned int flags) {
  (void)devPtr;
  (void)length;
  (void)flags;
  return impl::stream_accept(stream, false, "cudaStreamAttachMemAsync");
}

PT_EXPORT cudaError_t cudaDeviceGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  if (leastPriority != nullptr) *leastPriority = detail::kLeastPriority;
  if (greatestPriority != nullptr) *greatestPriority = detail::kGreatestPriority;
  return cudaSuccess;
}

// ---- events --------------------------------------------------------------------------------

PT_EXPORT cudaError_t cudaEventCreate(cudaEvent_t* event) {
  return detail::create_event(event, cudaEventDefault, "cudaEventCreate");
}

PT_EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  return detail::create_event(event, flags, "cudaEventCreateWithFlags");
}

namespace {
// cudaEventDestroy and cudaEventSynchronize: finds the live event (`on_live` updates it under the
// registry lock) and records `op` with its id on the event's device.
template <typename OnLive>
cudaError_t event_call(cudaEvent_t event, const char* api, detail::Op op, OnLive&& on_live) {
  const std::int64_t start = powertrain::emu::now_ns();
  std::int64_t id = -1;
  int device = 0;
  {
    detail::Registry& r = detail::registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    detail::EventEntry* entry = nullptr;
    id = detail::live_event(r, event, &entry);
    if (id > 0) {
      on_live(*entry);
      device = entry->device;
    }
  }
  if (id < 0) return misuse(api, cudaErrorInvalidResourceHandle, detail::bad_event_text(event));
  detail::Record record = detail::make_record(op, start, device);
  record.a[0] = id;
  detail::append(std::move(record));
  return cudaSuccess;
}
}  // namespace

// IPC event handles (simpleIPC): only for events created with cudaEventInterprocess and
// cudaEventDisableTiming, as in the runtime. Opened in the exporting process (or a child forked
// after the export) the handle is the event itself; in another process, a new event with the
// same flags — emulated processes share no events, so a wait on it there waits for nothing.
PT_EXPORT cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t* handle, cudaEvent_t event) {
  const char* api = "cudaIpcGetEventHandle";
  if (handle == nullptr) return misuse(api, cudaErrorInvalidValue, "handle is NULL");
  detail::IpcHandle h;
  {
    detail::Registry& r = detail::registry();
    std::unique_lock<std::mutex> lock(r.mutex);
    detail::EventEntry* entry = nullptr;
    const std::int64_t id = detail::live_event(r, event, &entry);
    if (id < 0) {
      lock.unlock();
      return misuse(api, cudaErrorInvalidResourceHandle, detail::bad_event_text(event));
    }
    constexpr unsigned kNeeded = cudaEventInterprocess | cudaEventDisableTiming;
    if ((entry->flags & kNeeded) != kNeeded) {
      lock.unlock();
      return misuse(api, cudaErrorInvalidResourceHandle,
                    "the event was not created with cudaEventInterprocess | "
                    "cudaEventDisableTiming");
    }
    h.value = static_cast<std::uint64_t>(id);
    h.device = entry->device;
    h.flags = entry->flags;
  }
  std::memcpy(h.magic, detail::kIpcMagic, sizeof h.magic);
  h.pid = ::getpid();
  *handle = cudaIpcEventHandle_t{};
  std::memcpy(handle->reserved, &h, sizeof h);
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaIpcOpenEventHandle(cudaEvent_t* event, cudaIpcEventHandle_t handle) {
  const char* api = "cudaIpcOpenEventHandle";
  if (event == nullptr) return misuse(api, cudaErrorInvalidValue, "event is NULL");
  detail::IpcHandle h;
  std::memcpy(&h, handle.reserved, sizeof h);
  if (std::memcmp(h.magic, detail::kIpcMagic, sizeof h.magic) != 0 || h.bytes != 0 ||
      h.value == 0) {
    return misuse(api, cudaErrorInvalidValue, "not an event handle from cudaIpcGetEventHandle");
  }
  {
    detail::Registry& r = detail::registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    const std::uint64_t index = h.value - 1;
    // This process made it (a forked child has the same registry up to the fork).
    if (index < r.events.size() && r.events[index].live && r.events[index].flags == h.flags &&
        r.events[index].device == h.device) {
      *event = detail::event_handle(static_cast<std::int64_t>(h.value));
      return cudaSuccess;
    }
  }
  return detail::create_event(event, h.flags, api);
}

PT_EXPORT cudaError_t cudaEventDestroy(cudaEvent_t event) {
  return event_call(event, "cudaEventDestroy", detail::Op::kEventDestroy,
                    [](detail::EventEntry& entry) { entry.live = false; });
}

PT_EXPORT cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  return impl::event_record(event, stream, 0, false, "cudaEventRecord");
}

PT_EXPORT cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream,
                                               unsigned int flags) {
  return impl::event_record(event, stream, flags, false, "cudaEventRecordWithFlags");
}

// Single pass: recorded work is complete at once (a never-recorded event also reports success).
// Second pass of --two-pass: "not ready" while the modelled host clock is before the last
// record's predicted completion; each such answer is one poll (kPollNs) of the clock, so a
// polling loop spins as long as it would on the predicted timeline, and never forever.
PT_EXPORT cudaError_t cudaEventQuery(cudaEvent_t event) {
  detail::Registry& r = detail::registry();
  std::unique_lock<std::mutex> lock(r.mutex);
  detail::EventEntry* entry = nullptr;
  if (detail::live_event(r, event, &entry) < 0) {
    lock.unlock();
    return misuse("cudaEventQuery", cudaErrorInvalidResourceHandle, detail::bad_event_text(event));
  }
  if (!entry->recorded || !entry->predicted || entry->predicted_host_t < 0 ||
      r.modelled_host_ns >= entry->predicted_t || r.not_ready_in_a_row >= detail::kMaxNotReady) {
    r.not_ready_in_a_row = 0;
    return cudaSuccess;
  }
  if (r.modelled_host_ns < INT64_MAX - detail::kPollNs) r.modelled_host_ns += detail::kPollNs;
  ++r.not_ready_in_a_row;
  return cudaErrorNotReady;  // not an error: the last error is left alone, as in the runtime
}

PT_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  int device = 0;
  const cudaError_t status = event_call(
      event, "cudaEventSynchronize", detail::Op::kEventSync, [&](detail::EventEntry& entry) {
        device = entry.device;
        // Second pass: the host waited for the predicted completion.
        if (entry.predicted && entry.predicted_host_t >= 0) {
          detail::Registry& r = detail::registry();  // its mutex is held here
          r.modelled_host_ns = std::max(r.modelled_host_ns, entry.predicted_t);
        }
      });
  // Second pass: returns on the paced predicted schedule, so a host timer around it (a
  // blocking-sync event included: the same wait) measures the prediction. Every event_sync record
  // is a paced wait on both sides (also of an event recorded only by a graph or in a capture),
  // so the occurrences of pass 1 and pass 2 pair up.
  if (status == cudaSuccess) {
    impl::pace_wait(device, powertrain::trace_schema::kPaceEventSync);
  }
  return status;
}

// Emulated work takes no device time, so the elapsed time is the host time between the two
// cudaEventRecord calls (documented in docs/emulate-interposer.md) — or, in the second pass of
// `emulate --two-pass`, the predicted device time between them when both records have one.
// Errors follow the runtime: timing disabled or an event never recorded →
// cudaErrorInvalidResourceHandle.
namespace {
cudaError_t event_elapsed_time(float* ms, cudaEvent_t start, cudaEvent_t end, const char* api) {
  if (ms == nullptr) return misuse(api, cudaErrorInvalidValue, "ms is NULL");
  detail::EventEntry first;
  detail::EventEntry second;
  std::int64_t start_id = -1;
  std::int64_t end_id = -1;
  {
    detail::Registry& r = detail::registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    detail::EventEntry* entry = nullptr;
    start_id = detail::live_event(r, start, &entry);
    if (start_id > 0) first = *entry;
    end_id = detail::live_event(r, end, &entry);
    if (end_id > 0) second = *entry;
  }
  if (start_id < 0) {
    return misuse(api, cudaErrorInvalidResourceHandle, detail::bad_event_text(start));
  }
  if (end_id < 0) return misuse(api, cudaErrorInvalidResourceHandle, detail::bad_event_text(end));
  if (((first.flags | second.flags) & cudaEventDisableTiming) != 0) {
    return detail::fail(cudaErrorInvalidResourceHandle);  // as the runtime: not a misuse report
  }
  if (!first.recorded || !second.recorded) return detail::fail(cudaErrorInvalidResourceHandle);
  const bool predicted = first.predicted && second.predicted;
  const std::int64_t ns =
      predicted ? second.predicted_t - first.predicted_t : second.record_t - first.record_t;
  *ms = static_cast<float>(static_cast<double>(ns) / 1e6);
  return cudaSuccess;
}
}  // namespace

PT_EXPORT cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  return event_elapsed_time(ms, start, end, "cudaEventElapsedTime");
}

// CUDA 12.8's name for the same call (cuda-python and Rust bindings load it by name).
PT_EXPORT cudaError_t cudaEventElapsedTime_v2(float* ms, cudaEvent_t start, cudaEvent_t end) {
  return event_elapsed_time(ms, start, end, "cudaEventElapsedTime_v2");
}
