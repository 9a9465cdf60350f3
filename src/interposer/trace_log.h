// In-memory trace log of the interposer and its JSON Lines writer (format:
// docs/emulation-trace.md). Hot-path records (kernel launches, copies, events, allocations) are
// stored as fixed binary structs and formatted only when the log is written, so an intercepted
// call costs a clock read and a short critical section; rare records (registration, misuse, the
// NCCL/cuBLAS records built with emu::RecordBuilder) carry pre-formatted JSON text.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "interposer/trace_schema.h"

namespace powertrain::emu::detail {

/// Binary record kinds; kText carries a complete JSON object in Record::text.
enum class Op : std::uint8_t {
  kText,
  POWERTRAIN_TRACE_SHARED_OPS(POWERTRAIN_TRACE_ENUMERATOR)  // kKernel … kSetDevice (trace_schema.h)
  kHostFunc,
  kWork,  // a library's GPU work (cuBLAS GEMM, cuDNN convolution): its own fields in `text`
};

/// Copy directions as written to the trace (`kind` of a memcpy record).
enum class CopyKind : std::uint8_t { kHtoD, kDtoH, kDtoD, kHtoH, kPtoP };

/// Allocation kinds (`kind` of malloc/free records).
enum class AllocKind : std::uint8_t { kDevice, kHost, kManaged, kAsync };

/// One trace line. Field use per op (a = a[], g = g[]):
///   kKernel: a0 stream, a1 corr, a2 kernel index, a3 shmem, g0-2 grid, g3-5 block, api; text:
///            "" or a library kernel's pre-formatted ,"flops":N,"bytes":M
///   kMemcpy: a0 stream, a1 corr, a2 bytes, sub = CopyKind, flag = async, api
///   kMemset: a0 stream, a1 corr, a2 bytes, flag = async, api
///   kMalloc: a0 ptr, a1 bytes, a2 used after, sub = AllocKind, flag = ok, a3 stream, a4 corr
///            (a3/a4 only for stream-ordered allocations: a3 = kInvalidStream otherwise)
///   kFree:   a0 ptr, a1 bytes, a2 used after, sub = AllocKind, a3 stream, a4 corr (as malloc)
///   kStreamCreate: a0 stream, a1 flags, a2 priority;  kStreamDestroy/kStreamSync: a0 stream
///   kEventCreate: a0 event, a1 flags;  kEventDestroy/kEventSync: a0 event
///   kEventRecord / kStreamWaitEvent: a0 stream, a1 event, a2 corr
///   kHostFunc: a0 stream, a1 corr, api
///   kWork: a0 stream, a1 corr; text = the op and its own fields ("op":"gemm","api":..., no
///          braces); t/dt/tid/dev/graph/stream/corr are added when formatted, so stream capture
///          can keep it as a graph node and replay it like a kernel
struct Record {
  std::int64_t t = 0;
  std::int64_t dt = 0;
  std::int32_t tid = 0;
  std::int32_t dev = 0;
  Op op = Op::kText;
  std::uint8_t sub = 0;
  bool flag = false;
  const char* api = nullptr;  // static string (an exported API name) or nullptr
  std::int64_t a[5] = {0, 0, 0, 0, 0};
  std::uint32_t g[6] = {0, 0, 0, 0, 0, 0};
  std::int64_t graph = 0;  // > 0: replayed by cudaGraphLaunch of this graph exec (`graph` field)
  std::string text;        // kText only: the whole JSON object
  /// Graph nodes whose record must change at every replay (an NCCL call captured in a graph gets
  /// a new sequence number per launch): called on the launch's copy before it is appended, with a
  /// process-wide serial number of the launch.
  void (*on_replay)(Record& record, std::int64_t launch) = nullptr;
};

/// Fills t/dt/tid/dev for a record of a call that started at `start_ns` (now = end of call).
Record make_record(Op op, std::int64_t start_ns, int device);

/// Appends a record (thread-safe). The log is written to disk in chunks when it grows large, so
/// memory stays bounded for long programs; the time spent writing is excluded from now_ns().
void append(Record&& record);

/// Streams capturing into a CUDA graph (cudart_graph.cc); while > 0 append() offers each record
/// to capture_record(), which keeps the work of capturing streams as graph nodes (true: taken).
extern std::atomic<int> g_capturing_streams;
bool capture_record(Record& record);

// Provided by the rest of the interposer and used while formatting:
/// Appends the mangled device name of kernel `index` as a JSON string (cudart_launch.cc); ""
/// when unknown.
void append_kernel_json_name(std::string& out, std::int64_t index);
/// The first line's JSON object, without the newline (emulator.cc).
std::string process_line_json();
/// The fields of the exit line after "op","t" — e.g. `"peak_used":[..]` (emulator.cc).
std::string exit_line_fields();
/// Host time excluded from now_ns() (the interposer's own trace writing), in ns (emulator.cc).
void add_paused_ns(std::int64_t ns);

/// Appends JSON string escaping of `text` (quotes included).
void append_json_string(std::string& out, std::string_view text);

/// Writes the process line (first flush), every pending record, and — when `final` — the exit
/// line. After the final write later records are counted but dropped (the exit line stays last).
void write_log(bool final);

/// Fork handling (pthread_atfork): the parent takes the log's locks before fork and releases
/// them after; the child clears the log (new pid → new file; the parent's records are not
/// repeated) and releases them.
void lock_for_fork();
void unlock_after_fork();
void reset_after_fork();

}  // namespace powertrain::emu::detail
