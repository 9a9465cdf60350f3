// The emulation-trace record schema (docs/emulation-trace.md): every record kind ("op") and
// field name the interposer writes and src/emulate reads, spelled once. Included by both sides;
// header-only with no dependency beyond the standard library, so the interposer (which links
// nothing of powertrain_lib) can use it. The names are char arrays with linkage, so the writer
// can build its `,"key":` literals at compile time (trace_format.h).
#pragma once

#include <string_view>

namespace powertrain::trace_schema {

/// Values of the `op` field.
namespace op {
inline constexpr char kProcess[] = "process";  // first line
inline constexpr char kExit[] = "exit";        // last line
inline constexpr char kRegister[] = "register";
inline constexpr char kKernel[] = "kernel";
inline constexpr char kMemcpy[] = "memcpy";
inline constexpr char kMemset[] = "memset";
inline constexpr char kMalloc[] = "malloc";
inline constexpr char kFree[] = "free";
inline constexpr char kStreamCreate[] = "stream_create";
inline constexpr char kStreamDestroy[] = "stream_destroy";
inline constexpr char kEventCreate[] = "event_create";
inline constexpr char kEventDestroy[] = "event_destroy";
inline constexpr char kEventRecord[] = "event_record";
inline constexpr char kStreamWaitEvent[] = "stream_wait_event";
inline constexpr char kStreamSync[] = "stream_sync";
inline constexpr char kEventSync[] = "event_sync";
inline constexpr char kDeviceSync[] = "device_sync";
inline constexpr char kSetDevice[] = "set_device";
inline constexpr char kDeviceReset[] = "device_reset";
inline constexpr char kCommInit[] = "comm_init";
inline constexpr char kNccl[] = "nccl";
inline constexpr char kGemm[] = "gemm";
inline constexpr char kHostFunc[] = "host_func";
inline constexpr char kGraphLaunch[] = "graph_launch";
inline constexpr char kClockLock[] = "clock_lock";  // NVML clock locks (nvml_emu.cc)
inline constexpr char kUnsupported[] = "unsupported";
inline constexpr char kMisuse[] = "misuse";
inline constexpr char kAssumption[] = "assumption";  // emulated under an unchecked assumption
inline constexpr char kNvtx[] = "nvtx";              // annotations, not records of work
// Informational records: read and skipped (no work or dependency for the timeline).
inline constexpr char kModuleLoad[] = "module_load";
inline constexpr char kMemMap[] = "mem_map";
inline constexpr char kMemUnmap[] = "mem_unmap";
inline constexpr char kCurand[] = "curand";
inline constexpr char kFft[] = "fft";        // cuFFT execution (work: the kernel that follows)
inline constexpr char kSparse[] = "sparse";  // cuSPARSE/cuSolverSp op (work: the kernel after it)
inline constexpr char kDnnGraph[] = "dnn_graph";  // cuDNN graph execution (work: gemm records)
}  // namespace op

/// Field names (keys). Which op carries which field: docs/emulation-trace.md.
namespace field {
inline constexpr char kOp[] = "op";
// common to every record
inline constexpr char kT[] = "t";
inline constexpr char kDt[] = "dt";
inline constexpr char kTid[] = "tid";
inline constexpr char kDev[] = "dev";
inline constexpr char kGraph[] = "graph";
inline constexpr char kApi[] = "api";
// work on a stream
inline constexpr char kStream[] = "stream";
inline constexpr char kCorr[] = "corr";
inline constexpr char kEvent[] = "event";
inline constexpr char kFlags[] = "flags";
inline constexpr char kPriority[] = "priority";
// register, kernel
inline constexpr char kName[] = "name";
inline constexpr char kDisplay[] = "display";
inline constexpr char kGrid[] = "grid";
inline constexpr char kBlock[] = "block";
inline constexpr char kShmem[] = "shmem";
// memcpy, memset, malloc, free
inline constexpr char kKind[] = "kind";  // copy direction, allocation kind, nvtx kind
inline constexpr char kBytes[] = "bytes";
inline constexpr char kAsync[] = "async";
inline constexpr char kPtr[] = "ptr";
inline constexpr char kOk[] = "ok";
inline constexpr char kUsed[] = "used";
// comm_init, nccl
inline constexpr char kComm[] = "comm";
inline constexpr char kRank[] = "rank";
inline constexpr char kSize[] = "size";
inline constexpr char kColl[] = "coll";
inline constexpr char kCommRank[] = "comm_rank";
inline constexpr char kCommSize[] = "comm_size";
inline constexpr char kCount[] = "count";
inline constexpr char kDtype[] = "dtype";
inline constexpr char kPeer[] = "peer";
inline constexpr char kRoot[] = "root";
inline constexpr char kSeq[] = "seq";
inline constexpr char kGroup[] = "group";
// gemm
inline constexpr char kM[] = "m";
inline constexpr char kN[] = "n";
inline constexpr char kK[] = "k";
inline constexpr char kBatch[] = "batch";
inline constexpr char kDtypeA[] = "dtype_a";
inline constexpr char kDtypeB[] = "dtype_b";
inline constexpr char kDtypeC[] = "dtype_c";
inline constexpr char kCompute[] = "compute";
inline constexpr char kFlops[] = "flops";
// clock_lock: the SM clock range the program locked, MHz (both 0: unlocked again)
inline constexpr char kMinMhz[] = "min_mhz";
inline constexpr char kMaxMhz[] = "max_mhz";
// misuse, nvtx
inline constexpr char kWhat[] = "what";
inline constexpr char kId[] = "id";
// process line
inline constexpr char kVersion[] = "version";
inline constexpr char kPid[] = "pid";
inline constexpr char kWorldSize[] = "world_size";
inline constexpr char kLocalRank[] = "local_rank";
inline constexpr char kDevices[] = "devices";
inline constexpr char kGpu[] = "gpu";
inline constexpr char kProgram[] = "program";
inline constexpr char kArgv[] = "argv";
inline constexpr char kStartUnixNs[] = "start_unix_ns";
inline constexpr char kForkedFrom[] = "forked_from";  // process line: a fork child's parent pid
// exit line
inline constexpr char kPeakUsed[] = "peak_used";
inline constexpr char kRecords[] = "records";
}  // namespace field

/// `kind` of a memcpy record; the index is the enum value on both sides (interposer
/// detail::CopyKind, emulate::CopyKind).
inline constexpr std::string_view kCopyKinds[] = {"HtoD", "DtoH", "DtoD", "HtoH", "PtoP"};
/// `kind` of malloc/free records (detail::AllocKind, emulate::MemoryKind).
inline constexpr std::string_view kMemoryKinds[] = {"device", "host", "managed", "async"};
/// `coll` of nccl records that the reader models (emulate::Collective order).
inline constexpr std::string_view kCollectives[] = {
    "allreduce", "allgather", "reducescatter", "broadcast", "reduce", "send", "recv", "alltoall"};

/// The `stream` column of `emulate --two-pass`'s syncs-rank-R.tsv for waits that are not a stream
/// synchronization (both passes count occurrences per (device, key)): cudaDeviceSynchronize,
/// blocking copies (cudaMemcpy & co.: the host waits for the copy), cudaEventSynchronize.
inline constexpr long long kPaceDeviceSync = -1;
inline constexpr long long kPaceBlockingCopy = -2;
inline constexpr long long kPaceEventSync = -3;

/// The version written in, and accepted from, the process line.
inline constexpr int kVersion = 1;

}  // namespace powertrain::trace_schema

/// The record kinds that both the interposer's binary log (emu::detail::Op) and the reader
/// (emulate::OpKind) name, in their common order: each enum lists its own kinds around this one
/// list, so the two cannot drift apart. X(name) is called once per kind.
#define POWERTRAIN_TRACE_SHARED_OPS(X) \
  X(kKernel)                           \
  X(kMemcpy)                           \
  X(kMemset)                           \
  X(kMalloc)                           \
  X(kFree)                             \
  X(kStreamCreate)                     \
  X(kStreamDestroy)                    \
  X(kEventCreate)                      \
  X(kEventDestroy)                     \
  X(kEventRecord)                      \
  X(kStreamWaitEvent)                  \
  X(kStreamSync)                       \
  X(kEventSync)                        \
  X(kDeviceSync)                       \
  X(kSetDevice)
#define POWERTRAIN_TRACE_ENUMERATOR(name) name,
