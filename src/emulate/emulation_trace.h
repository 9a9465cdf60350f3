// Typed records of the emulation traces the interposer writes (one JSON Lines file per emulated
// process; format: docs/emulation-trace.md) and their reader. The reader validates every line in
// every build, names the file, line and field of the first bad one, and tolerates a truncated last
// line (a process killed while writing) and unknown ops with counted warnings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "interposer/trace_schema.h"
#include "trace/trace_events.h"

namespace powertrain::emulate {

enum class OpKind : std::uint8_t {
  kRegister,
  POWERTRAIN_TRACE_SHARED_OPS(POWERTRAIN_TRACE_ENUMERATOR)  // kKernel … kSetDevice (trace_schema.h)
  kCommInit,
  kNccl,
  kGemm,
  kHostFunc,
  kUnsupported,
  kMisuse,
  kAssumption,   // emulated under an unchecked assumption (api, detail): a warning
  kDeviceReset,  // cudaDeviceReset: synchronizes the device; its frees are separate records
  kGraphLaunch,  // cudaGraphLaunch; the replayed nodes follow as records of the same call
  kClockLock,    // NVML SM clock lock on `device`: m = lowest, n = highest MHz (0, 0: unlocked)
};
/// The trace's `op` string ("kernel", "stream_wait_event", ...).
std::string_view to_string(OpKind kind);
/// True for records that enqueue work on a GPU stream (kernel, memcpy, memset, nccl, gemm,
/// host_func).
bool enqueues_gpu_work(OpKind kind);

enum class CopyKind : std::uint8_t { kHtoD, kDtoH, kDtoD, kHtoH, kPtoP };
std::string_view to_string(CopyKind kind);

enum class MemoryKind : std::uint8_t { kDevice, kHost, kManaged, kAsync };
std::string_view to_string(MemoryKind kind);

enum class Collective : std::uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kSend,
  kRecv,
  kAllToAll,
};
std::string_view to_string(Collective kind);
inline bool is_p2p(Collective kind) {
  return kind == Collective::kSend || kind == Collective::kRecv;
}

/// Element types of the trace (lower case names, e.g. "bfloat16"); kUnknown for names the reader
/// does not know (counted as a warning).
enum class Dtype : std::uint8_t {
  kUnknown,
  kFloat32,
  kFloat16,
  kBfloat16,
  kFloat64,
  kInt8,
  kUint8,
  kInt32,
  kInt64,
  kUint32,
  kUint64,
  kFloat8E4m3,
  kFloat8E5m2,
  kComplex64,
  kComplex128,
};
std::string_view to_string(Dtype dtype);
/// Bytes per element; 0 for kUnknown.
int dtype_bytes(Dtype dtype);

inline constexpr std::uint32_t kNoString = 0xFFFFFFFFu;

/// One line of the trace after the process line. Which fields are used depends on `op` (the
/// format's table); unused ones keep their defaults. Strings are indices into
/// ProcessTrace::strings (kNoString when absent). Times are ns on the process's steady clock.
struct Record {
  OpKind op = OpKind::kKernel;
  std::int32_t line = 0;   // 1-based line in the file
  std::int64_t t_ns = 0;   // call entry
  std::int64_t dt_ns = 0;  // time inside the intercepted call (the interposer's, not modelled)
  std::int32_t tid = 0;
  std::int32_t device = 0;
  std::int64_t stream = -1;
  std::int64_t flags = 0;  // stream_create: cudaStreamNonBlocking = 1
  std::int64_t correlation = -1;
  std::int64_t event = -1;
  std::uint32_t name = kNoString;    // kernel: name; register: mangled; others: `api`
  std::uint32_t detail = kNoString;  // register: display; misuse: what; nccl/comm_init: comm id
  // kernel
  std::int64_t grid[3] = {1, 1, 1};
  std::int64_t block[3] = {1, 1, 1};
  std::int64_t shared_bytes = 0;
  // memcpy, memset, malloc, free
  CopyKind copy = CopyKind::kDtoD;
  MemoryKind memory = MemoryKind::kDevice;
  bool async = false;
  bool ok = true;
  std::int64_t bytes = 0;        // also a library kernel's modelled bytes (cuFFT, cuSPARSE), else 0
  std::int64_t used_bytes = -1;  // bytes in use on the device after a malloc/free
  // nccl, comm_init
  Collective collective = Collective::kAllReduce;
  std::int32_t comm_rank = -1;
  std::int32_t comm_size = -1;
  std::int32_t peer = -1;
  std::int32_t root = -1;
  std::int64_t count = 0;
  Dtype dtype = Dtype::kUnknown;
  std::int64_t sequence = -1;
  std::int64_t group = 0;  // ncclGroupStart/End block id, 0 outside
  // gemm
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  Dtype dtype_a = Dtype::kUnknown, dtype_b = Dtype::kUnknown, dtype_c = Dtype::kUnknown;
  std::uint32_t compute = kNoString;
  double flops = 0.0;  // gemm; also a library kernel's modelled FLOPs (cuFFT, cuSPARSE), else 0

  /// Launched threads (double: six factors up to 2^31 overflow any integer type).
  double threads() const {
    return static_cast<double>(grid[0]) * static_cast<double>(grid[1]) *
           static_cast<double>(grid[2]) * static_cast<double>(block[0]) *
           static_cast<double>(block[1]) * static_cast<double>(block[2]);
  }
};

/// The first line of a trace.
struct ProcessInfo {
  int version = 1;
  std::int64_t pid = 0;
  std::int64_t forked_from = 0;  // a fork child's parent pid (0: not forked)
  int rank = -1;                 // −1 when RANK was unset
  int world_size = -1;
  int local_rank = -1;
  int devices = 1;
  std::string gpu;
  std::string program;
  std::vector<std::string> argv;
  std::int64_t start_unix_ns = 0;
};

/// One emulated process.
/// An NVTX annotation record (`nvtx`): ranges become user annotations of the timeline.
struct Annotation {
  enum class Kind : std::uint8_t { kPush, kPop, kStart, kEnd, kMark };
  Kind kind = Kind::kMark;
  std::int64_t t_ns = 0;
  std::int32_t tid = 0;
  std::int64_t id = 0;             // start/end
  std::uint32_t name = kNoString;  // push/start/mark: index into `strings`
};

struct ProcessTrace {
  std::string source;  // file name (as given), used in messages
  ProcessInfo process;
  std::vector<Record> records;             // file order
  std::vector<Annotation> annotations;     // file order (not records: they launch nothing)
  std::vector<std::int32_t> comm_records;  // indices of the comm_init and nccl records, in order
  std::vector<std::string> strings;
  bool has_exit = false;
  std::vector<std::int64_t> exit_peak_used_bytes;  // per device, from the exit line
  std::vector<trace::TraceWarning> warnings;

  std::string_view str(std::uint32_t index) const {
    return index < strings.size() ? std::string_view(strings[index]) : std::string_view();
  }
};

/// Limits on untrusted traces.
struct TraceReadOptions {
  std::size_t max_file_bytes = 0;  // 0 = core::input_limits().max_trace_bytes
  std::size_t max_line_bytes = std::size_t{1} << 20;
  std::size_t max_records = 200'000'000;
  int max_devices = 1024;
};

/// Parses one trace from memory; `source` names it in errors ("trace-12.jsonl:37: field 'stream'
/// missing in 'kernel' record"). Errors: empty input, a first line that is not a valid version-1
/// `process` record, invalid JSON on any line but a last line without its newline (that one is a
/// counted warning "truncated last line"), a missing or mistyped required field, a value out of
/// range (negative bytes, device outside [0, devices), times above 2^53 ns, bytes/counts/GEMM
/// dimensions above 2^50, ranks and communicator sizes above 2^20), too many records or an
/// over-long line.
/// Warnings (counted, one example each): unknown ops, unknown dtypes, no exit line.
/// O(bytes).
core::Result<ProcessTrace> parse_emulation_trace(std::string_view text, const std::string& source,
                                                 const TraceReadOptions& options = {});

/// Reads one trace file (plain JSON Lines). Errors: unreadable or too large, and those of
/// parse_emulation_trace.
core::Result<ProcessTrace> read_emulation_trace(const std::string& path,
                                                const TraceReadOptions& options = {});

/// Reads trace files and directories (their `trace-*.jsonl` files, not recursive) in name order.
/// Errors: no paths, a missing path, a directory without traces, the first bad trace.
core::Result<std::vector<ProcessTrace>> read_emulation_traces(
    const std::vector<std::string>& paths_or_dirs, const TraceReadOptions& options = {});

}  // namespace powertrain::emulate
