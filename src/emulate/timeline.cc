// The list schedule behind build_rank_trace: records are taken in time order; each host thread
// has a modelled clock that advances by the recorded gap before a call and by the call's modelled
// cost (or until the awaited GPU work ends, for syncs); each stream has the end of its last task;
// events remember what their record captured. Syncs and waits also get cuda_sync records so the
// graph builder resolves them from the record instead of by its naming rules.
#include "emulate/timeline.h"

#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <unordered_map>

#include "graph/trace_builder.h"
#include "interposer/trace_schema.h"

namespace powertrain::emulate {
namespace {

using trace::EventKind;
using trace::SyncKind;

constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::min();
// Correlation ids for calls that launch nothing (the interposer's start at 1).
constexpr std::int64_t kSyntheticCorrelation = std::int64_t{1} << 50;

bool is_blocking_copy_name(std::string_view api) {
  return api == "cudaMemcpy" || api == "cudaMemcpy2D" || api == "cudaMemcpy3D" ||
         api == "cudaMemcpyToSymbol" || api == "cudaMemcpyFromSymbol";
}

std::string_view default_api(const Record& r) {
  switch (r.op) {
    case OpKind::kRegister:
      return "__cudaRegisterFunction";
    case OpKind::kKernel:
      return "cudaLaunchKernel";
    case OpKind::kMemcpy:
      return r.async ? "cudaMemcpyAsync" : "cudaMemcpy";
    case OpKind::kMemset:
      return r.async ? "cudaMemsetAsync" : "cudaMemset";
    case OpKind::kMalloc:
      switch (r.memory) {
        case MemoryKind::kHost:
          return "cudaMallocHost";
        case MemoryKind::kManaged:
          return "cudaMallocManaged";
        case MemoryKind::kAsync:
          return "cudaMallocAsync";
        default:
          return "cudaMalloc";
      }
    case OpKind::kFree:
      switch (r.memory) {
        case MemoryKind::kHost:
          return "cudaFreeHost";
        case MemoryKind::kAsync:
          return "cudaFreeAsync";
        default:
          return "cudaFree";
      }
    case OpKind::kStreamCreate:
      return "cudaStreamCreate";
    case OpKind::kStreamDestroy:
      return "cudaStreamDestroy";
    case OpKind::kEventCreate:
      return "cudaEventCreate";
    case OpKind::kEventDestroy:
      return "cudaEventDestroy";
    case OpKind::kEventRecord:
      return "cudaEventRecord";
    case OpKind::kStreamWaitEvent:
      return "cudaStreamWaitEvent";
    case OpKind::kStreamSync:
      return "cudaStreamSynchronize";
    case OpKind::kEventSync:
      return "cudaEventSynchronize";
    case OpKind::kDeviceSync:
      return "cudaDeviceSynchronize";
    case OpKind::kSetDevice:
      return "cudaSetDevice";
    case OpKind::kDeviceReset:
      return "cudaDeviceReset";
    case OpKind::kGraphLaunch:
      return "cudaGraphLaunch";
    case OpKind::kClockLock:
      return "nvmlDeviceSetGpuLockedClocks";
    case OpKind::kCommInit:
      return "ncclCommInitRank";
    case OpKind::kNccl:
      return "ncclCollective";
    case OpKind::kGemm:
      return "cublasGemmEx";
    case OpKind::kHostFunc:
      return "cudaLaunchHostFunc";
    case OpKind::kUnsupported:
    case OpKind::kMisuse:
    case OpKind::kAssumption:
      return "unknown API";
  }
  return "unknown API";
}

std::int64_t cost_of(const Record& r, const HostCosts& c) {
  switch (r.op) {
    case OpKind::kKernel:
    case OpKind::kHostFunc:
    case OpKind::kGraphLaunch:  // one launch for the whole graph; its nodes cost nothing more
      return c.launch_ns;
    case OpKind::kGemm:
      return c.gemm_ns;
    case OpKind::kNccl:
      return c.nccl_ns;
    case OpKind::kMemcpy:
    case OpKind::kMemset:
      return c.copy_ns;
    case OpKind::kMalloc:
      return c.malloc_ns;
    case OpKind::kFree:
      return c.free_ns;
    case OpKind::kStreamCreate:
    case OpKind::kStreamDestroy:
    case OpKind::kEventCreate:
    case OpKind::kEventDestroy:
      return c.create_ns;
    case OpKind::kEventRecord:
    case OpKind::kStreamWaitEvent:
      return c.event_ns;
    case OpKind::kStreamSync:
    case OpKind::kEventSync:
    case OpKind::kDeviceSync:
    case OpKind::kDeviceReset:
      return c.sync_ns;
    case OpKind::kCommInit:
      return c.comm_init_ns;
    default:
      return c.other_ns;
  }
}

trace::CollectiveInfo collective_of(const NcclKernel& k) {
  trace::CollectiveInfo c;
  c.name = k.collective;
  c.in_elements = k.bytes;
  c.out_elements = k.bytes;
  c.element_bytes = 1;
  c.group_size = k.group_size;
  c.process_group = k.group_key;
  c.sequence = 0;  // the group key alone identifies the call
  return c;
}

// Stream id of the legacy default stream in the trace (docs/emulation-trace.md).
constexpr std::int64_t kLegacyStream = 0;

struct StreamState {
  std::int64_t free_ns = kNever;      // the next task starts no earlier (stream order + waits)
  std::int64_t last_end_ns = kNever;  // end of the last task enqueued (what a sync awaits)
  // Legacy default stream semantics: work on stream 0 waits for earlier work on every blocking
  // stream of its device and the other way round. Counts of enqueued tasks tell which implicit
  // dependencies are new.
  bool blocking = true;  // created without cudaStreamNonBlocking (or never created: default)
  std::int64_t tasks = 0;
  std::int64_t legacy_tasks_seen = 0;     // legacy stream's task count when this one last waited
  std::int64_t tasks_seen_by_legacy = 0;  // this stream's task count when legacy last waited
};

struct ThreadState {
  bool started = false;
  std::int64_t clock_ns = 0;         // modelled
  std::int64_t recorded_start = -1;  // t of the previous record (the interposer's clock)
  OpKind previous_op = OpKind::kSetDevice;
  std::int64_t recorded_end = 0;  // t + dt of the previous record
};

struct EventState {
  std::int64_t end_ns = kNever;  // what the last record captured
  std::int64_t correlation = -1;
  std::int64_t stream = -1;
  bool recorded = false;
};

class Scheduler {
 public:
  Scheduler(const TimelineInput& in, const HostCosts& costs, std::vector<PredictedEvent>* events,
            std::vector<PredictedSync>* syncs)
      : in_(in),
        t_(*in.trace),
        costs_(costs),
        out_(in.rank, in.world_size, in.trace->source),
        predicted_(events),
        syncs_(syncs) {
    out_.host_pid(in.trace->process.pid);
  }

  trace::RankTrace run() {
    const std::size_t n = t_.records.size();
    std::vector<std::int32_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
      return t_.records[a].t_ns < t_.records[b].t_ns;
    });
    if (n > 0) t0_ = t_.records[order.front()].t_ns;
    step_of_first_.assign(n, -1);
    step_of_last_.assign(n, -1);
    for (std::size_t s = 0; s < in_.steps.size(); ++s) {
      step_of_first_[in_.steps[s].first_record] = static_cast<std::int32_t>(s);
      step_of_last_[in_.steps[s].last_record] = static_cast<std::int32_t>(s);
    }
    step_start_.assign(in_.steps.size(), 0);
    if (in_.steps.size() > 1) {
      // The recorded gap before the second step's first call (on its thread).
      const std::int32_t first = in_.steps[1].first_record;
      const Record& r = t_.records[first];
      for (std::int32_t j = first - 1; j >= 0; --j) {
        if (t_.records[j].tid != r.tid) continue;
        second_step_gap_ =
            std::max<std::int64_t>(0, r.t_ns - (t_.records[j].t_ns + t_.records[j].dt_ns));
        break;
      }
    }
    for (const Annotation& a : t_.annotations) pending_annotations_[a.tid].push_back(&a);
    for (std::int32_t i : order) record(i);
    // Annotations after a thread's last call, and ranges still open, end with that call.
    for (auto& [tid, queue] : pending_annotations_) {
      ThreadState& th = threads_[tid];
      for (std::size_t k = next_annotation_[tid]; k < queue.size(); ++k) {
        annotate(*queue[k], th.clock_ns);
      }
      for (const auto& [name, start] : open_pushes_[tid]) emit_range(name, start, th.clock_ns, tid);
    }
    for (const auto& [id, range] : open_ranges_) {
      emit_range(range.name, range.start, threads_[range.tid].clock_ns, range.tid);
    }
    return out_.build();
  }

 private:
  StreamState& stream(std::int32_t device, std::int64_t id) { return streams_[{device, id}]; }

  std::int64_t correlation_of(std::int32_t i) const { return work_correlation(t_, i); }

  std::string_view api_of(const Record& r) const {
    if (r.op == OpKind::kKernel || r.op == OpKind::kRegister || r.name == kNoString) {
      return r.op == OpKind::kKernel && r.detail != kNoString ? t_.str(r.detail) : default_api(r);
    }
    return t_.str(r.name);
  }

  // Enqueues GPU work launched at `start`; returns its end.
  std::int64_t enqueue(std::int32_t i, std::int64_t start) {
    const Record& r = t_.records[i];
    const std::int64_t duration = std::max<std::int64_t>(1, in_.work_ns[i]);
    StreamState& s = stream(r.device, r.stream);
    const std::int64_t begin = std::max(start + costs_.launch_latency_ns, s.free_ns);
    s.free_ns = s.last_end_ns = begin + duration;
    ++s.tasks;
    const std::int64_t corr = correlation_of(i);
    const std::string& custom = in_.work_name[i];
    switch (r.op) {
      case OpKind::kMemcpy:
        out_.gpu(EventKind::kGpuMemcpy, fmt::format("Memcpy {}", to_string(r.copy)), begin,
                 duration, corr, r.stream, r.device);
        break;
      case OpKind::kMemset:
        out_.gpu(EventKind::kGpuMemset, "Memset (Device)", begin, duration, corr, r.stream,
                 r.device);
        break;
      case OpKind::kNccl: {
        const NcclKernel& k = in_.nccl[in_.nccl_of_record[i]];
        out_.gpu(EventKind::kKernel, k.name, begin, duration, corr, r.stream, r.device)
            .collective(collective_of(k));
        break;
      }
      case OpKind::kHostFunc:
        out_.gpu(EventKind::kKernel, "cudaLaunchHostFunc callback", begin, duration, corr, r.stream,
                 r.device);
        break;
      default: {
        std::string_view name = custom;
        if (name.empty()) name = r.name != kNoString ? t_.str(r.name) : "unnamed kernel";
        out_.gpu(EventKind::kKernel, name, begin, duration, corr, r.stream, r.device);
        break;
      }
    }
    return begin + duration;
  }

  // The implicit dependency of legacy default stream work: a 1 ns cudaEventRecord on `from` and a
  // 1 ns wait of `to` on it before the launch, so the graph sees it as an ordinary event wait.
  std::int64_t implicit_wait(std::int32_t device, std::int64_t from, std::int64_t to,
                             std::int32_t tid, std::int64_t t) {
    const std::int64_t record = extra_correlation_++;
    const std::int64_t wait = extra_correlation_++;
    out_.host(EventKind::kCudaRuntime, "cudaEventRecord", t, 1, tid, record);
    out_.sync_record(SyncKind::kNone, t, 1, -1, from, from, record, device);
    out_.host(EventKind::kCudaRuntime, "implicit wait (legacy default stream)", t + 1, 1, tid,
              wait);
    out_.sync_record(SyncKind::kStreamWaitEvent, t + 1, 1, wait, to, from, record, device);
    StreamState& waiting = stream(device, to);
    waiting.free_ns = std::max(waiting.free_ns, stream(device, from).last_end_ns);
    return t + 2;
  }

  // Before a launch on the legacy stream: waits for new work on the device's blocking streams;
  // before a launch on a blocking stream: waits for new legacy stream work. Returns the new time.
  std::int64_t legacy_dependencies(const Record& r, std::int64_t t) {
    if (r.stream == kLegacyStream) {
      std::vector<std::int64_t> pending;
      for (auto& [key, s] : streams_) {
        if (key.first == r.device && key.second != kLegacyStream && s.blocking &&
            s.tasks > s.tasks_seen_by_legacy) {
          s.tasks_seen_by_legacy = s.tasks;
          pending.push_back(key.second);
        }
      }
      for (std::int64_t from : pending) t = implicit_wait(r.device, from, kLegacyStream, r.tid, t);
      return t;
    }
    StreamState& s = stream(r.device, r.stream);
    const StreamState& legacy = stream(r.device, kLegacyStream);
    if (s.blocking && legacy.tasks > s.legacy_tasks_seen) {
      s.legacy_tasks_seen = legacy.tasks;
      t = implicit_wait(r.device, kLegacyStream, r.stream, r.tid, t);
    }
    return t;
  }

  // A host sync ends `sync_ns` after the awaited work (or after its own cost if nothing waits).
  std::int64_t sync_end(std::int64_t start, std::int64_t cost, std::int64_t awaited) const {
    return awaited == kNever ? start + cost : std::max(start + cost, awaited + costs_.sync_ns);
  }

  // NVTX ranges become user annotations on their host thread. An annotation recorded between
  // two calls is placed at the same fraction of the modelled gap between them.
  struct OpenRange {
    std::string name;
    std::int64_t start = 0;
    std::int32_t tid = 0;
  };

  void emit_range(const std::string& name, std::int64_t start, std::int64_t end, std::int32_t tid) {
    out_.host(EventKind::kUserAnnotation, name, start, std::max<std::int64_t>(1, end - start), tid);
  }

  void annotate(const Annotation& a, std::int64_t at) {
    const std::string name(a.name != kNoString ? t_.str(a.name) : std::string_view());
    switch (a.kind) {
      case Annotation::Kind::kPush:
        open_pushes_[a.tid].emplace_back(name, at);
        break;
      case Annotation::Kind::kPop:
        if (!open_pushes_[a.tid].empty()) {
          const auto [open_name, start] = open_pushes_[a.tid].back();
          open_pushes_[a.tid].pop_back();
          emit_range(open_name, start, at, a.tid);
        }
        break;
      case Annotation::Kind::kStart:
        open_ranges_[a.id] = OpenRange{name, at, a.tid};
        break;
      case Annotation::Kind::kEnd:
        if (const auto it = open_ranges_.find(a.id); it != open_ranges_.end()) {
          emit_range(it->second.name, it->second.start, at, it->second.tid);
          open_ranges_.erase(it);
        }
        break;
      case Annotation::Kind::kMark:
        break;  // instants carry no duration
    }
  }

  // Places the annotations of `tid` recorded before `t_ns` (the entry of its next call) inside
  // the modelled gap [clock, clock + gap) that replaces the recorded [recorded_end, t_ns), and
  // emits the gap as host work split at those points (so annotations and host work nest).
  // `split` (≥ 0): a further boundary of the host work (where the first step begins).
  void gap_with_annotations(std::int32_t tid, std::int64_t t_ns, const ThreadState& th,
                            std::int64_t gap, std::int64_t split = -1) {
    std::int64_t done = th.clock_ns;  // host work emitted up to here
    const auto emit = [&](std::int64_t until) {
      if (until - done >= costs_.min_host_work_ns && until > done) {
        out_.host(EventKind::kCpuOp, "host work", done, until - done, tid);
      }
      done = std::max(done, until);
    };
    const auto host_work = [&](std::int64_t until) {
      if (split > done && split <= until) emit(split);
      emit(until);
    };
    const auto it = pending_annotations_.find(tid);
    if (it != pending_annotations_.end()) {
      std::size_t& next = next_annotation_[tid];
      const std::int64_t raw = t_ns - th.recorded_end;
      while (next < it->second.size() && it->second[next]->t_ns <= t_ns) {
        const Annotation& a = *it->second[next++];
        std::int64_t at = th.clock_ns;
        if (th.started && raw > 0) {
          const std::int64_t into = std::clamp<std::int64_t>(a.t_ns - th.recorded_end, 0, raw);
          at += static_cast<std::int64_t>(static_cast<double>(gap) * static_cast<double>(into) /
                                          static_cast<double>(raw));
        }
        host_work(at);
        annotate(a, at);
      }
    }
    host_work(th.clock_ns + gap);
  }

  void record(std::int32_t i) {
    const Record& r = t_.records[i];
    ThreadState& th = threads_[r.tid];
    // One API call can write several records with its entry time (ncclCommInitAll: one per
    // device); only the first is charged the call's modelled cost.
    const bool same_call = th.started && r.t_ns == th.recorded_start;
    advance_host_clock(i, r, th, same_call);
    if (in_.work_ns[i] >= 0) th.clock_ns = legacy_dependencies(r, th.clock_ns);
    const std::int64_t start = th.clock_ns;
    // Communicator inits issued back to back (one per device inside ncclGroupStart/End) are
    // bootstrapped together: the batch is charged once.
    const bool batched_init =
        r.op == OpKind::kCommInit && th.started && th.previous_op == OpKind::kCommInit;
    const std::int64_t cost =
        same_call || batched_init ? 1 : std::max<std::int64_t>(1, cost_of(r, costs_));
    const std::int64_t corr = correlation_of(i);
    std::int64_t end = start + cost;
    std::string_view api = api_of(r);
    bool plain_call = true;  // emitted below as one cuda_runtime event [start, end)
    const std::int32_t barrier = in_.barrier_of_record.empty() ? -1 : in_.barrier_of_record[i];
    if (r.op == OpKind::kCommInit && barrier >= 0) {
      end = bootstrap_barrier(r, in_.nccl[barrier], api, start, cost, corr);
      plain_call = false;
    }
    plain_call = emit_call(i, r, start, cost, corr, end, api) && plain_call;
    if (plain_call) out_.host(EventKind::kCudaRuntime, api, start, end - start, r.tid, corr);
    th.clock_ns = end;
    if (r.op != OpKind::kSetDevice) th.previous_op = r.op;  // a loop over devices sets them
    th.recorded_start = r.t_ns;
    th.recorded_end = std::max(same_call ? th.recorded_end : 0, r.t_ns + r.dt_ns);
    drift_ = th.clock_ns - (th.recorded_end - t0_);
    if (step_of_last_[i] >= 0) {
      const std::int32_t s = step_of_last_[i];
      out_.step(s, step_start_[s], end - step_start_[s], r.tid);
    }
  }

  // Moves the thread's clock over the host work before record `i` (the recorded gap, capped)
  // and starts the step that record `i` begins.
  void advance_host_clock(std::int32_t i, const Record& r, ThreadState& th, bool same_call) {
    std::int64_t gap = 0;
    if (!th.started) {
      th.clock_ns = std::max<std::int64_t>(0, r.t_ns - t0_ + drift_);
      gap_with_annotations(r.tid, r.t_ns, th, 0);
      th.started = true;
    } else if (!same_call) {
      gap = std::max<std::int64_t>(0, r.t_ns - th.recorded_end);
      if (costs_.max_host_gap_ns > 0) gap = std::min(gap, costs_.max_host_gap_ns);
      if (costs_.host_time_modelled()) gap = costs_.modelled_host_gap_ns;
      // The first step owns only part of its gap (below): the host work is split there too, so
      // the ProfilerStep span and the host work nest.
      std::int64_t split = -1;
      if (step_of_first_[i] == 0 && in_.steps.size() > 1) {
        split = th.clock_ns + gap - std::min(gap, second_step_gap_);
      }
      gap_with_annotations(r.tid, r.t_ns, th, gap, split);
      th.clock_ns += gap;
    }
    if (const std::int32_t s = step_of_first_[i]; s >= 0) {
      // A step owns the host work before its first call (e.g. loading the next batch). Before
      // the first step that gap also holds start-up work, so it owns only as much as the second
      // step's (iterations repeat).
      std::int64_t owned = gap;
      if (s == 0 && in_.steps.size() > 1) owned = std::min(gap, second_step_gap_);
      step_start_[s] = th.clock_ns - owned;
    }
  }

  // ncclCommInit* returns when every member has bootstrapped: after its own modelled cost the
  // call launches a 1 ns task on a stream of its own, joined across the communicator's simulated
  // processes, and waits for it; so all members leave together, at the slowest member's time.
  // (Start-up skew of the emulated processes stops there.) Returns the call's end.
  std::int64_t bootstrap_barrier(const Record& r, const NcclKernel& k, std::string_view api,
                                 std::int64_t start, std::int64_t cost, std::int64_t corr) {
    // The call keeps its modelled length when the members arrive together (so simulating one
    // representative of identical ranks gives the same answer): its last 2 ns are the launch
    // and the wait.
    const std::int64_t length = std::max<std::int64_t>(cost, 3);
    const std::int64_t ready = start + length - 2;
    out_.host(EventKind::kCudaRuntime, api, start, ready - start, r.tid, corr);
    const std::int64_t launch_corr = extra_correlation_++;
    out_.host(EventKind::kCudaRuntime, "ncclCommInit bootstrap barrier", ready, 1, r.tid,
              launch_corr);
    // Zero length: only waiting for a later member shows (as an NCCL kernel that spins would).
    out_.gpu(EventKind::kKernel, k.name, ready + 1, 0, launch_corr, kBootstrapStream, r.device)
        .collective(collective_of(k));
    const std::int64_t wait_corr = extra_correlation_++;
    out_.host(EventKind::kCudaRuntime, "ncclCommInit bootstrap wait", ready + 1, 1, r.tid,
              wait_corr);
    out_.sync_record(SyncKind::kStreamSync, ready + 1, 1, wait_corr, kBootstrapStream, -1, -1,
                     r.device);
    return ready + 2;
  }

  // The events of the call of record `i` by its op: copies, event records and waits, syncs,
  // launches. `end` and `api` may change; false when the call's event was emitted here (true:
  // the caller emits it as one cuda_runtime event).
  bool emit_call(std::int32_t i, const Record& r, std::int64_t start, std::int64_t cost,
                 std::int64_t corr, std::int64_t& end, std::string_view& api) {
    const bool launches = in_.work_ns[i] >= 0;
    bool plain_call = true;
    switch (r.op) {
      case OpKind::kMemcpy: {
        const bool blocking_name = is_blocking_copy_name(api);
        std::string fixed;
        if (!r.async && !blocking_name) api = "cudaMemcpy";
        if (r.async && blocking_name) {
          fixed = std::string(api) + "Async";
          api = fixed;
        }
        const std::int64_t copy_end = launches ? enqueue(i, start) : kNever;
        if (!r.async) {
          end = sync_end(start, cost, copy_end);
          note_sync(r.device, trace_schema::kPaceBlockingCopy, end);
        }
        out_.host(EventKind::kCudaRuntime, api, start, end - start, r.tid, corr);
        plain_call = false;
        break;
      }
      case OpKind::kEventRecord: {
        EventState& ev = events_[r.event];
        const StreamState& s = stream(r.device, r.stream);
        ev = {s.last_end_ns, corr, r.stream, true};
        if (predicted_ != nullptr) {
          const std::int64_t reached = start + costs_.launch_latency_ns;
          predicted_->push_back(PredictedEvent{
              r.event, occurrences_[r.event]++,
              s.last_end_ns == kNever ? reached : std::max(reached, s.last_end_ns), start + cost});
        }
        out_.host(EventKind::kCudaRuntime, "cudaEventRecord", start, cost, r.tid, corr)
            .last()
            .cuda_event = r.event;
        // Tells the builder which stream this record captures (even if nothing waits on it).
        out_.sync_record(SyncKind::kNone, start, cost, -1, r.stream, r.stream, corr, r.device);
        plain_call = false;
        break;
      }
      case OpKind::kStreamWaitEvent: {
        const auto it = events_.find(r.event);
        if (it == events_.end() || !it->second.recorded) {
          api = "cudaStreamWaitEvent (event never recorded)";  // a no-op in CUDA
          break;
        }
        StreamState& s = stream(r.device, r.stream);
        s.free_ns = std::max(s.free_ns, it->second.end_ns);
        out_.host(EventKind::kCudaRuntime, "cudaStreamWaitEvent", start, cost, r.tid, corr)
            .last()
            .cuda_event = r.event;
        out_.sync_record(SyncKind::kStreamWaitEvent, start, cost, corr, r.stream, it->second.stream,
                         it->second.correlation, r.device);
        plain_call = false;
        break;
      }
      case OpKind::kStreamSync: {
        // A cudaStreamQuery that answered "ready" is written as a stream_sync with its api: the
        // program went on as if the stream were done, so the host waits for it here too.
        end = sync_end(start, cost, stream(r.device, r.stream).last_end_ns);
        note_sync(r.device, r.stream, end);
        const std::string_view name =
            r.name != kNoString ? t_.str(r.name) : std::string_view("cudaStreamSynchronize");
        out_.host(EventKind::kCudaRuntime, name, start, end - start, r.tid, corr);
        out_.sync_record(SyncKind::kStreamSync, start, end - start, corr, r.stream, -1, -1,
                         r.device);
        plain_call = false;
        break;
      }
      case OpKind::kEventSync: {
        const auto it = events_.find(r.event);
        if (it == events_.end() || !it->second.recorded) {
          api = "cudaEventSynchronize (event never recorded)";
          // Still a paced wait: pass 2 counts every event synchronization (its return is the
          // call's own end here).
          note_sync(r.device, trace_schema::kPaceEventSync, end);
          break;
        }
        end = sync_end(start, cost, it->second.end_ns);
        note_sync(r.device, trace_schema::kPaceEventSync, end);
        out_.host(EventKind::kCudaRuntime, "cudaEventSynchronize", start, end - start, r.tid, corr)
            .last()
            .cuda_event = r.event;
        out_.sync_record(SyncKind::kEventSync, start, end - start, corr, -1, it->second.stream,
                         it->second.correlation, r.device);
        plain_call = false;
        break;
      }
      case OpKind::kDeviceSync:
      case OpKind::kDeviceReset:  // waits for the device's work like a synchronize
        end = device_sync(r, i, start, cost);
        if (r.op == OpKind::kDeviceSync) note_sync(r.device, trace_schema::kPaceDeviceSync, end);
        plain_call = false;
        break;
      case OpKind::kStreamCreate:
        stream(r.device, r.stream).blocking = (r.flags & 1) == 0;  // cudaStreamNonBlocking
        break;
      default:
        if (launches) enqueue(i, start);
        break;
    }
    return plain_call;
  }

  // One process, one device: a context sync. Several devices: the graph's context sync would wait
  // for every device, so the call becomes one stream sync per stream of this device that has work.
  std::int64_t device_sync(const Record& r, std::int32_t i, std::int64_t start, std::int64_t cost) {
    if (t_.process.devices <= 1) {
      std::int64_t awaited = kNever;
      for (const auto& [key, s] : streams_) awaited = std::max(awaited, s.last_end_ns);
      const std::int64_t end = sync_end(start, cost, awaited);
      const std::int64_t corr = correlation_of(i);
      out_.host(EventKind::kCudaRuntime, "cudaDeviceSynchronize", start, end - start, r.tid, corr);
      out_.sync_record(SyncKind::kContextSync, start, end - start, corr, -1, -1, -1, r.device);
      return end;
    }
    std::vector<std::pair<std::int64_t, std::int64_t>> busy;  // (stream, last end)
    for (const auto& [key, s] : streams_) {
      if (key.first == r.device && s.last_end_ns != kNever)
        busy.emplace_back(key.second, s.last_end_ns);
    }
    if (busy.empty()) {
      out_.host(EventKind::kCudaRuntime, "cudaDeviceSynchronize (idle device)", start, cost, r.tid,
                correlation_of(i));
      return start + cost;
    }
    std::int64_t t = start;
    for (std::size_t k = 0; k < busy.size(); ++k) {
      const bool last = k + 1 == busy.size();
      // Intermediate calls end when their stream is done (1 ns at least, to keep host order).
      const std::int64_t end =
          last ? sync_end(t, cost, busy[k].second) : std::max(t + 1, busy[k].second);
      const std::int64_t corr = k == 0 ? correlation_of(i) : extra_correlation_++;
      out_.host(EventKind::kCudaRuntime, "cudaDeviceSynchronize", t, end - t, r.tid, corr);
      out_.sync_record(SyncKind::kStreamSync, t, end - t, corr, busy[k].first, -1, -1, r.device);
      t = end;
    }
    return t;
  }

  const TimelineInput& in_;
  const ProcessTrace& t_;
  const HostCosts& costs_;
  graph::RankTraceBuilder out_;
  std::int64_t t0_ = 0;
  std::int64_t extra_correlation_ = kSyntheticCorrelation + (std::int64_t{1} << 45);
  std::int64_t drift_ = 0;  // modelled − recorded time of the latest record (for new threads)
  std::map<std::pair<std::int32_t, std::int64_t>, StreamState> streams_;  // ordered: determinism
  std::unordered_map<std::int32_t, ThreadState> threads_;
  std::map<std::int32_t, std::vector<const Annotation*>> pending_annotations_;  // by thread
  std::unordered_map<std::int32_t, std::size_t> next_annotation_;
  std::unordered_map<std::int32_t, std::vector<std::pair<std::string, std::int64_t>>> open_pushes_;
  std::map<std::int64_t, OpenRange> open_ranges_;  // NVTX start/end ids
  std::unordered_map<std::int64_t, EventState> events_;
  std::vector<std::int32_t> step_of_first_;
  std::vector<std::int32_t> step_of_last_;
  std::vector<std::int64_t> step_start_;
  std::int64_t second_step_gap_ = 0;
  std::vector<PredictedEvent>* predicted_ = nullptr;
  std::unordered_map<std::int64_t, std::int32_t> occurrences_;  // event id → records so far
  std::vector<PredictedSync>* syncs_ = nullptr;
  std::map<std::pair<std::int32_t, std::int64_t>, std::int32_t> sync_occurrences_;

  void note_sync(std::int32_t device, std::int64_t stream_id, std::int64_t end) {
    if (syncs_ == nullptr) return;
    syncs_->push_back(
        PredictedSync{device, stream_id, sync_occurrences_[{device, stream_id}]++, end});
  }
};

}  // namespace

std::int64_t work_correlation(const ProcessTrace& trace, std::int32_t index) {
  const Record& r = trace.records[static_cast<std::size_t>(index)];
  return r.correlation >= 0 ? r.correlation : kSyntheticCorrelation + index;
}

core::Result<trace::RankTrace> build_rank_trace(const TimelineInput& input, const HostCosts& costs,
                                                std::vector<PredictedEvent>* events,
                                                std::vector<PredictedSync>* syncs) {
  if (input.trace == nullptr) return core::Error{"timeline: no trace"};
  const std::size_t n = input.trace->records.size();
  if (input.work_ns.size() != n || input.work_name.size() != n ||
      input.nccl_of_record.size() != n ||
      (!input.barrier_of_record.empty() && input.barrier_of_record.size() != n)) {
    return core::Error{
        fmt::format("{}: timeline input does not match its {} records", input.trace->source, n)};
  }
  for (const StepBlock& s : input.steps) {
    if (s.first_record < 0 || s.last_record < s.first_record ||
        static_cast<std::size_t>(s.last_record) >= n) {
      return core::Error{fmt::format("{}: step block out of range", input.trace->source)};
    }
  }
  if (events != nullptr) events->clear();
  if (syncs != nullptr) syncs->clear();
  return Scheduler(input, costs, events, syncs).run();
}

std::int32_t main_thread(const ProcessTrace& trace) {
  std::map<std::int32_t, std::int64_t> count;
  for (const Record& r : trace.records) ++count[r.tid];
  std::int32_t best = 0;
  std::int64_t most = -1;
  for (const auto& [tid, c] : count) {
    if (c > most) {
      best = tid;
      most = c;
    }
  }
  return best;
}

std::vector<StepBlock> find_steps(const ProcessTrace& trace,
                                  const std::vector<std::uint64_t>& operation_hashes,
                                  std::int32_t main_tid) {
  // The main thread's operations, last first.
  std::vector<std::int32_t> ops;
  for (std::int32_t i = static_cast<std::int32_t>(trace.records.size()) - 1; i >= 0; --i) {
    const Record& r = trace.records[i];
    if (r.tid != main_tid) continue;
    switch (r.op) {
      case OpKind::kRegister:
      case OpKind::kMalloc:
      case OpKind::kFree:
      case OpKind::kStreamCreate:
      case OpKind::kStreamDestroy:
      case OpKind::kEventCreate:
      case OpKind::kEventDestroy:
      case OpKind::kSetDevice:
      case OpKind::kDeviceReset:
      case OpKind::kCommInit:
      case OpKind::kUnsupported:
      case OpKind::kMisuse:
      case OpKind::kAssumption:
        continue;
      default:
        ops.push_back(i);
    }
  }
  const std::size_t n = ops.size();
  if (n < 2) return {};
  // Z-function of the reversed sequence: z[p] >= p ⟺ the last p operations repeat just before.
  std::vector<std::size_t> z(n, 0);
  const auto same = [&](std::size_t a, std::size_t b) {
    return operation_hashes[ops[a]] == operation_hashes[ops[b]];
  };
  for (std::size_t i = 1, l = 0, r = 0; i < n; ++i) {
    if (i < r) z[i] = std::min(r - i, z[i - l]);
    while (i + z[i] < n && same(z[i], i + z[i])) ++z[i];
    if (i + z[i] > r) {
      l = i;
      r = i + z[i];
    }
  }
  // Prefix counts of host-synchronizing calls and of calls that enqueue GPU work.
  std::vector<std::size_t> syncs(n + 1, 0);
  std::vector<std::size_t> launches(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const Record& r = trace.records[ops[i]];
    const bool sync = r.op == OpKind::kStreamSync || r.op == OpKind::kEventSync ||
                      r.op == OpKind::kDeviceSync || (r.op == OpKind::kMemcpy && !r.async);
    syncs[i + 1] = syncs[i] + sync;
    launches[i + 1] = launches[i] + enqueues_gpu_work(r.op);
  }
  for (std::size_t p = 1; 2 * p <= n; ++p) {
    if (z[p] < p || syncs[p] == 0 || launches[p] == 0) continue;
    std::size_t repeats = 2;
    while ((repeats + 1) * p <= n && z[repeats * p] >= p) ++repeats;
    // Iterations make up most of a training program; a short repeated tail (two identical
    // checks at the end of a test program) is not one.
    if (2 * repeats * p < n) continue;
    std::vector<StepBlock> steps;
    for (std::size_t k = repeats; k-- > 0;) {
      // Block k (from the end) covers reversed positions [k·p, (k+1)·p).
      steps.push_back({ops[(k + 1) * p - 1], ops[k * p]});
    }
    return steps;
  }
  return {};
}

}  // namespace powertrain::emulate
