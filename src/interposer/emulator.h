// Shared state of the emulated CUDA device inside the interposer library (LD_PRELOAD or drop-in
// libcudart.so.N). The cudart part (cudart_*.cc) owns and implements this; the NCCL and cuBLAS
// parts (nccl_*.cc, cublas_*.cc) only call it. Everything here is construct-on-first-use and
// never destroyed (registration runs from constructors, unregistration from atexit), and
// thread-safe. Records are appended to an in-memory log and written as JSON lines (format:
// docs/emulation-trace.md) in chunks of 65536 records, when the process exits, and when
// emu::flush() is called.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace powertrain::emu {

/// Stream ids written to the trace. Handles created by cudaStreamCreate* get ids from
/// kFirstCreatedStream upward, in creation order per process.
inline constexpr std::int64_t kLegacyDefaultStream = 0;
inline constexpr std::int64_t kPerThreadDefaultStreamBase = 1'000'000;  // + host thread index
inline constexpr std::int64_t kFirstCreatedStream = 1;
inline constexpr std::int64_t kInvalidStream = -1;

/// Host nanoseconds since the process's emulator started (steady clock).
std::int64_t now_ns();

/// Small dense index of the calling host thread (0 = the first thread that called in).
int thread_index();

/// The calling thread's current device (cudaSetDevice), 0 by default.
int current_device();

/// The emulated device count of this process (POWERTRAIN_EMU_DEVICES, default 1).
int device_count();

/// Maps a stream handle of the calling thread to its trace id: nullptr → legacy default (or the
/// per-thread default in ptds builds / when `per_thread` is true), cudaStreamPerThread →
/// per-thread default, a live created stream → its id. kInvalidStream for unknown or destroyed
/// handles (the caller reports cudaErrorInvalidResourceHandle). `device` receives the device the
/// stream belongs to.
std::int64_t stream_id(const void* stream, bool per_thread, int* device);

/// A correlation id shared by a host call and the GPU work it enqueues (process-wide, from 1).
std::int64_t next_correlation();

/// Sets the calling thread's sticky/last error (cudaGetLastError semantics) — cudaError_t value.
/// cudaSuccess (0) is ignored: as in the real runtime, a successful call does not clear an
/// earlier error; only cudaGetLastError does.
void set_last_error(int cuda_error);

/// Appends one JSON object (without the trailing newline) to the trace. The caller writes the
/// op-specific fields; `begin_record` writes the common prefix {"op":..,"t":..,"tid":..,"dev":..
/// and `end_record` adds "dt" (now − start_ns) and closes it. Typical use:
///   auto r = emu::begin_record("nccl", start_ns, device);
///   r.field("coll", "allreduce"); r.field("count", n); ... ; emu::end_record(r);
class RecordBuilder {
 public:
  void field(std::string_view key, std::int64_t value);
  void field(std::string_view key, double value);
  void field(std::string_view key, std::string_view value);  // JSON-escaped
  void field_bool(std::string_view key, bool value);
  void raw(std::string_view key, std::string_view json);  // pre-formatted JSON value
  std::string& text() { return text_; }

 private:
  friend RecordBuilder begin_record(std::string_view op, std::int64_t start_ns, int device);
  friend void end_record(RecordBuilder& record);
  friend RecordBuilder begin_work(std::string_view op, std::int64_t start_ns);
  friend void end_work(RecordBuilder& record, int device, std::int64_t stream, std::int64_t corr);
  std::string text_;
  std::int64_t start_ns_ = 0;  // `dt` is measured from here when the record is closed
};
RecordBuilder begin_record(std::string_view op, std::int64_t start_ns, int device);
void end_record(RecordBuilder& record);

/// GPU work a library enqueues on `stream` (cuBLAS GEMMs, cuDNN convolutions): begin_work starts
/// the record's own fields ("op" first); end_work appends it like a kernel launch, so a capturing
/// stream keeps it as a graph node that cudaGraphLaunch replays. t/dt/tid/dev, `stream` and
/// `corr` (0: the next correlation id) are written by the log.
RecordBuilder begin_work(std::string_view op, std::int64_t start_ns);
void end_work(RecordBuilder& record, int device, std::int64_t stream, std::int64_t corr);

/// Host work the emulator does for the program — computing a library's result on the host
/// (cuBLAS level 1/2, cublasXt GEMMs, cuSPARSE products, cuFFTW transforms) — is not the
/// program's time: on a GPU those calls return in microseconds. A scope takes its duration out of
/// the trace clock, as the trace writer's pauses are (for every thread: an approximation where
/// other threads run meanwhile).
class HostComputeScope {
 public:
  HostComputeScope();
  ~HostComputeScope();
  HostComputeScope(const HostComputeScope&) = delete;
  HostComputeScope& operator=(const HostComputeScope&) = delete;

 private:
  std::int64_t start_ns_;
};

/// Reports an unsupported API by name (once per name on stderr, every call in the trace as
/// {"op":"unsupported","api":name}). Returns cudaErrorNotSupported for convenience.
int report_unsupported(std::string_view api);

/// Reports misuse (invalid handle, double free, ...) on stderr (rate-limited) and in the trace as
/// {"op":"misuse","api":api,"what":what}.
void report_misuse(std::string_view api, std::string_view what);

/// Reports work emulated under an assumption the emulator cannot check (a conditional graph
/// node's condition set by device code): on stderr once per text, and in the trace as
/// {"op":"assumption","api":api,"what":what}, which the analysis counts as a warning.
void report_assumption(std::string_view api, std::string_view what);

/// Device memory on the calling thread's current device, accounted and recorded like cudaMalloc
/// (`malloc`/`free` records named `api`; ncclMemAlloc). Returns a cudaError_t value.
int allocate_device_memory(void** pointer, std::size_t bytes, const char* api);
int free_device_memory(void* pointer, const char* api);

/// Writes everything recorded so far (idempotent; also runs at exit).
void flush();

}  // namespace powertrain::emu
