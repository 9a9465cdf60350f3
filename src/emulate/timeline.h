// One emulated process as a normalized trace (trace::RankTrace), so that the execution-graph
// builder and the replay simulator of issue 4 run it unchanged. The recorded calls keep their
// order and the wall-clock gaps between them (host work); their own cost, the GPU work and all
// waits are modelled: a list schedule places every call and every GPU task (stream order, launch
// latency, event waits, host syncs) as the hardware would have run this process alone. The graph
// builder turns that timeline into dependencies; the simulator then adds what one process cannot
// know (collective joins with the other ranks).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "emulate/emulation_trace.h"
#include "trace/trace_events.h"

namespace powertrain::emulate {

/// Modelled host time of intercepted calls (the emulator's own time inside a call means nothing
/// for the real runtime). Nanoseconds. Typical values measured on recent CUDA runtimes.
struct HostCosts {
  std::int64_t launch_ns = 3'000;  // cudaLaunchKernel, cudaLaunchHostFunc
  std::int64_t gemm_ns = 5'000;    // a cuBLAS/cuBLASLt GEMM call (heuristics + launch)
  std::int64_t nccl_ns = 5'000;    // enqueuing an NCCL collective or send/recv
  std::int64_t copy_ns = 3'000;    // enqueuing a memcpy/memset (blocking ones also wait)
  std::int64_t sync_ns = 2'000;    // a synchronizing call returns this long after the work ended
  std::int64_t event_ns = 1'500;   // cudaEventRecord, cudaStreamWaitEvent
  std::int64_t malloc_ns = 10'000;
  std::int64_t free_ns = 5'000;
  std::int64_t create_ns = 5'000;          // stream/event create and destroy
  std::int64_t comm_init_ns = 10'000'000;  // ncclCommInit*: bootstrap (order of magnitude)
  std::int64_t other_ns = 1'000;           // cudaSetDevice, unsupported and misused calls, ...
  /// From a launch call's start to the earliest start of its GPU work on an idle stream.
  std::int64_t launch_latency_ns = 4'000;
  /// Host gaps at least this long become "host work" tasks; shorter ones stay as the gap between
  /// two calls (the graph keeps it as the thread-order lag either way).
  std::int64_t min_host_work_ns = 1'000;
  /// Measured host gaps are capped at this (0: no cap). The emulated run's host time includes
  /// scheduling noise of the CPU machine (a loaded machine, many ranks on few cores); a cap keeps
  /// the prediction to the GPU-side structure when host speed is not the question.
  std::int64_t max_host_gap_ns = 0;
  /// Host-time model (≥ 0): every gap between two calls of a thread is this long, whatever was
  /// measured, so the prediction does not depend on the emulating machine's speed or load; the
  /// program's own host work between calls is then not in the prediction. −1: measured gaps.
  std::int64_t modelled_host_gap_ns = -1;
  bool host_time_modelled() const { return modelled_host_gap_ns >= 0; }
};

/// Stream of the communicator bootstrap barriers (no program stream has this id): their tasks are
/// not GPU work and stay out of the GPU span.
inline constexpr std::int64_t kBootstrapStream = 999'999;

/// A fused NCCL kernel (the calls of one ncclGroupStart/End block on one stream, or one call).
struct NcclKernel {
  std::int32_t launch_record = 0;  // the record whose call launches it (the block's last)
  std::string name;                // e.g. "ncclDevKernel_AllReduce"
  std::string collective;          // "allreduce", "sendrecv", ... (CollectiveInfo::name)
  std::string group_key;           // identical on every member of the joined group
  std::int32_t group_size = 1;     // members of the joined group (1: not joined)
  std::int64_t bytes = 0;          // message bytes (per-rank buffer)
};

/// A repeated iteration: records [first_record, last_record] of the main thread.
struct StepBlock {
  std::int32_t first_record = 0;
  std::int32_t last_record = 0;
};

struct TimelineInput {
  const ProcessTrace* trace = nullptr;
  int rank = 0;
  int world_size = 1;
  /// Per record: modelled duration (ns, ≥ 1) of the GPU work it launches, or −1 for none. NCCL
  /// records launch their fused kernel only when they are its launch_record.
  std::vector<std::int64_t> work_ns;
  /// Per record: the kernel and display name to use (kernels, GEMMs), empty for the default.
  std::vector<std::string> work_name;
  std::vector<NcclKernel> nccl;              // fused NCCL kernels
  std::vector<std::int32_t> nccl_of_record;  // per record: index into nccl, or −1
  /// Per record (empty = none): for a communicator init shared with other simulated processes,
  /// the index into `nccl` of its bootstrap barrier (a 1 ns task joined across the members that
  /// the call waits for, so every member leaves ncclCommInit* together), or −1.
  std::vector<std::int32_t> barrier_of_record;
  /// Per record (empty = none): the SM clock (MHz) the work it launches runs at, 0 = default.
  std::vector<std::int32_t> work_clock_mhz;
  std::vector<StepBlock> steps;  // ProfilerStep#k spans, in order (may be empty)
  std::int32_t main_tid = 0;     // the thread the steps are on
};

/// The correlation id the GPU work of record `index` carries in the built RankTrace (the record's
/// own, else a synthetic one), to find a graph task's record.
std::int64_t work_correlation(const ProcessTrace& trace, std::int32_t index);

/// When a cudaEventRecord completes on the device in the modelled schedule: the occurrence-th
/// record (0-based, in record order) of event `event` of the process. A second pass of the program
/// reads these back (`emulate --two-pass`) so cudaEventElapsedTime reports predicted time.
struct PredictedEvent {
  std::int64_t event = 0;
  std::int32_t occurrence = 0;
  std::int64_t device_ns = 0;  // from the process's first record
  // When the cudaEventRecord call returns on the modelled host clock (same origin): pass 2 starts
  // its modelled host clock there for cudaEventQuery polls.
  std::int64_t host_ns = 0;
};

/// When a host-blocking wait returns on the modelled host clock: the occurrence-th (0-based, in
/// record order) `stream_sync` record of (device, stream) — cudaStreamSynchronize, or a
/// cudaStreamQuery that answered "ready" (the program then went on as if the stream were done) —
/// or `device_sync` of `device` (stream −1), a blocking copy (−2) or any `event_sync` (−3) on
/// `device` (trace_schema::kPace*). A second pass paces these calls in real
/// time, so a program's own host timer around them measures the prediction (`emulate --two-pass`).
struct PredictedSync {
  std::int32_t device = 0;
  std::int64_t stream = -1;  // or trace_schema::kPace* (−1 device sync, −2 copy, −3 event)
  std::int32_t occurrence = 0;
  std::int64_t return_ns = 0;  // from the process's first record
};

/// Builds the RankTrace: host calls (cuda_runtime) at modelled times, gaps ≥ min_host_work_ns as
/// host work (cpu_op), GPU tasks with the calls' correlation ids, cuda_sync records for stream
/// waits and syncs (so the graph resolves them exactly), ProfilerStep#k spans for the steps.
/// The timeline starts at the process's first record. A cudaDeviceSynchronize in a process with
/// several devices becomes one stream sync per busy stream of its device. Errors: a record count
/// that does not match the per-record vectors. O(records log records).
/// `events` (optional) receives every cudaEventRecord's predicted completion: the later of the
/// end of the work before it on its stream and its call's start + launch latency (an idle stream
/// reaches the record as it would a launch).
/// `syncs` (optional) receives every stream and device synchronization's modelled return.
core::Result<trace::RankTrace> build_rank_trace(const TimelineInput& input, const HostCosts& costs,
                                                std::vector<PredictedEvent>* events = nullptr,
                                                std::vector<PredictedSync>* syncs = nullptr);

/// Iterations by a simple rule: the main thread's operation sequence (launches, copies, syncs,
/// events, collectives; not allocations or setup calls) ends with a block repeated at least twice
/// that contains a host-synchronizing call (a stream/event/device sync or a blocking copy); the
/// shortest such block is an iteration. `operation_hashes` is per record (dedup.h). Empty when no
/// such block exists (the whole trace is then one step). O(records).
std::vector<StepBlock> find_steps(const ProcessTrace& trace,
                                  const std::vector<std::uint64_t>& operation_hashes,
                                  std::int32_t main_tid);

/// The thread with the most records (the lowest tid on ties).
std::int32_t main_thread(const ProcessTrace& trace);

}  // namespace powertrain::emulate
