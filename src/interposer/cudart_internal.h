// Internal interfaces between the cudart parts of the interposer (cudart_*.cc, emulator.cc):
// the emulated device's configuration, per-thread state (current device, last error, launch
// configuration stack) and the handle registries (streams, events, allocations, kernels,
// variables). Only the CUDA headers' types are used: the real runtime is never linked or called.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "interposer/emulator.h"
#include "interposer/trace_log.h"

/// Marks a function as part of the library's exported C ABI (the build hides everything else).
#ifndef PT_EXPORT
#define PT_EXPORT extern "C" __attribute__((visibility("default")))
#endif

namespace powertrain::emu::detail {

// ---- configuration (environment, read once) ----------------------------------------------

/// The emulated device(s) and job identity, from the POWERTRAIN_EMU_* environment
/// (docs/emulate-interposer.md). Invalid values are reported once on stderr and replaced by the
/// default.
struct Config {
  std::string dir = "powertrain-emu";  // POWERTRAIN_EMU_DIR
  std::string gpu = "h100";            // POWERTRAIN_EMU_GPU (catalog key, only written out)
  std::string gpu_name = "NVIDIA H100 80GB HBM3";
  std::string job;                                 // POWERTRAIN_EMU_JOB
  std::int64_t memory_bytes = 85'899'345'920;      // per device
  std::int64_t backed_limit = 64ll * 1024 * 1024;  // larger device allocations are not backed
  // What the context and the runtime hold on each device before the program allocates
  // (POWERTRAIN_EMU_RESERVED_BYTES): cudaMemGetInfo's free starts this much below the total and
  // allocations fail this much earlier. 512 MiB: about what a fresh CUDA 12/13 context shows on
  // an H100 80GB (nvidia-smi ~0.5 GiB per process with lazy module loading); not measured here.
  std::int64_t reserved_bytes = 512ll * 1024 * 1024;
  // Pinned host memory of the process (cudaMallocHost/cudaHostAlloc), POWERTRAIN_EMU_HOST_-
  // MEMORY_BYTES; default: the machine's physical memory (page-locked memory cannot exceed it).
  std::int64_t host_memory_bytes = 0;
  int sm_count = 132;
  int cc_major = 9;
  int cc_minor = 0;
  int clock_mhz = 1980;     // highest SM clock (POWERTRAIN_EMU_CLOCK_MHZ)
  int min_clock_mhz = 210;  // lowest supported SM clock (POWERTRAIN_EMU_MIN_CLOCK_MHZ)
  int clock_step_mhz = 15;  // between supported SM clocks (POWERTRAIN_EMU_CLOCK_STEP_MHZ)
  int power_limit_w = 700;  // board power limit (POWERTRAIN_EMU_POWER_LIMIT_W)
  int devices = 1;
  // NVML sees the node's GPUs (POWERTRAIN_EMU_NODE_GPUS; default: this process's devices), the
  // process's CUDA device d being node GPU first_node_gpu + d (POWERTRAIN_EMU_FIRST_NODE_GPU).
  int node_gpus = 0;
  int first_node_gpu = 0;
  int rank = -1;
  int world_size = -1;
  int local_rank = -1;
};
const Config& config();

/// Per-SM and per-block limits of the emulated architecture (from the compute capability; the
/// values NVIDIA documents for V100, A100, GA10x/AD10x and H100/B200).
struct SmLimits {
  int max_threads_per_sm = 2048;
  int max_blocks_per_sm = 32;
  int shared_per_sm = 233472;           // bytes
  int shared_per_block_optin = 232448;  // bytes, with cudaFuncAttributeMaxDynamicSharedMemorySize
  int shared_per_block = 49152;         // bytes without opt-in
  int reserved_shared_per_block = 1024;
  int registers_per_sm = 65536;
  int l2_bytes = 52428800;
  int memory_bus_bits = 5120;
  int memory_clock_khz = 2619000;
};
SmLimits sm_limits();

/// 13 for the LD_PRELOAD library and libcudart.so.13, 12 for the libcudart.so.12 build (selects
/// the CUDA 12 cudaDeviceProp layout and the reported runtime version).
int cudart_abi();

// ---- per-thread state ------------------------------------------------------------------------

/// A pending <<<>>> configuration (__cudaPushCallConfiguration).
struct LaunchConfig {
  unsigned grid[3];
  unsigned block[3];
  std::size_t shmem;
  void* stream;
};

/// Trivially destructible on purpose: calls arrive from atexit handlers after thread-local
/// destructors would have run.
struct ThreadState {
  int index = -1;
  int device = 0;
  int last_error = 0;
  int config_depth = 0;
  static constexpr int kMaxConfigDepth = 16;
  LaunchConfig configs[kMaxConfigDepth] = {};
};
ThreadState& thread_state();

/// Sets the last error and returns it (for `return fail(cudaErrorX);`).
inline cudaError_t fail(cudaError_t error) {
  set_last_error(static_cast<int>(error));
  return error;
}

/// report_misuse + sets the last error; returns `error`.
cudaError_t misuse(std::string_view api, cudaError_t error, std::string_view what);

/// Appends to CUDA's error log (cudaLogs*/cuLogs*, error_log.cc) and queues it for the
/// callbacks (called on a delivery thread); every misuse and unsupported call is logged. A forked
/// child starts with an empty log and no callbacks.
void log_error_message(std::string_view message);
void reset_error_log_after_fork();

/// "0x..." for messages.
std::string pointer_text(const void* pointer);

/// The exported stub body for APIs the emulator does not implement.
int unsupported_stub(const char* api);

// ---- streams and events (cudart_stream.cc) ------------------------------------------------

/// A stream as seen by an enqueueing call: its trace id and device. `id == kInvalidStream` when
/// the handle is unknown or destroyed.
struct StreamRef {
  std::int64_t id = kInvalidStream;
  int device = 0;
};
StreamRef resolve_stream(const void* stream, bool per_thread);

/// Resolves `stream` for `api`; on an invalid handle reports misuse and returns false with the
/// error set (cudaErrorInvalidResourceHandle).
bool stream_or_fail(const void* stream, bool per_thread, std::string_view api, StreamRef* out);

/// Trace id of a live event handle, or -1.
std::int64_t event_id(const void* event);

/// Stream and event ids for a graph's internal lanes: never handed to the program.
std::int64_t reserve_internal_stream(int device);
std::int64_t reserve_internal_event(int device);

// ---- CUDA graphs (cudart_graph.cc) -----------------------------------------------------------

/// cudaLaunchHostFunc: the function of the record about to be appended (kept by a capture), and
/// afterwards whether that record was captured (then the function must not run now).
void set_pending_host_fn(cudaHostFn_t fn, void* user);
bool take_captured();
/// True when trace stream `stream` is capturing (with the capture's id and graph).
bool stream_capture_status(std::int64_t stream, unsigned long long* id, cudaGraph_t* graph);

/// True when `stream` (NULL: the current device's legacy stream) is capturing into a graph: the
/// work enqueued on it is a node, not run now, so a library computes nothing at the call; graph
/// launches replay the node's record only, so captured library results are never computed.
inline bool capturing_stream(cudaStream_t stream) {
  int device = 0;
  const std::int64_t id = emu::stream_id(stream, false, &device);
  return id != kInvalidStream && stream_capture_status(id, nullptr, nullptr);
}
/// The capturing stream's current dependencies (the nodes its next work will depend on), as node
/// handles valid until the capture changes; false when `stream` is not capturing.
bool capture_dependencies(std::int64_t stream, const cudaGraphNode_t** nodes, std::size_t* count);
/// cudaStreamUpdateCaptureDependencies: adds `nodes` to, or (cudaStreamSetCaptureDependencies)
/// replaces, the capturing stream's dependencies.
cudaError_t update_capture_dependencies(std::int64_t stream, const cudaGraphNode_t* nodes,
                                        std::size_t count, unsigned flags, const char* api);

/// A kernel record (kKernel: a[2] kernel index, shmem, grid, block, api; stream and correlation
/// left for the caller) for `func` after checking the configuration like a launch; the error is
/// reported and returned otherwise (graph kernel nodes).
cudaError_t make_kernel_record(const void* func, dim3 grid, dim3 block, std::size_t shmem,
                               const char* api, Record* out);

/// Destroys every stream and event of `device` (cudaDeviceReset).
void reset_streams_and_events(int device);

// ---- allocations (cudart_memory.cc) ----------------------------------------------------------

/// What a pointer belongs to.
struct PointerInfo {
  bool known = false;        // inside a live allocation made through the emulator
  bool device_side = false;  // device, managed or stream-ordered memory (not pinned host)
  bool backed = false;       // real host memory behind the range (copies are performed)
  int device = 0;
  AllocKind kind = AllocKind::kDevice;
  std::uintptr_t base = 0;
  std::size_t bytes = 0;      // allocation size
  std::size_t available = 0;  // bytes from the pointer to the end of the allocation
};
PointerInfo lookup_pointer(const void* pointer);

/// Host memory, or device memory with real bytes behind it: readable and writable here (the
/// libraries that compute results on the host, cublasXt and cuFFTW, check their operands so).
inline bool host_accessible(const void* pointer) {
  if (pointer == nullptr) return false;
  const PointerInfo info = lookup_pointer(pointer);
  return !info.known || info.backed;
}

/// Executes emulated cuFFT plan `handle` (its own type) with the records named `api`: cuFFTW's
/// executions (cufftw_emu.cc) run through it. Returns a cufftResult value.
int cufft_execute_as(int handle, const void* in, void* out, int direction, const char* api);

/// A kernel's parameters by ordinal: (offset, bytes) in the device-side parameter layout
/// (cuFuncGetParamInfo). From a module image (cuda_driver.cc): a cubin's EIATTR_KPARAM_INFO
/// attributes, else a PTX `.entry`'s `.param` list laid out by the PTX ABI. `image` is a
/// registered fat binary's wrapper (or a fat binary; uncompressed entries are read). False when
/// the image holds no layout for `name`.
using ParamLayout = std::vector<std::pair<std::size_t, std::size_t>>;
bool image_param_layout(const void* image, const std::string& name, ParamLayout* out);
/// The layout of kernel `name` of the driver-API module that `function` (a cuModuleGetFunction
/// handle) came from.
bool module_function_params(const void* function, const std::string& name, ParamLayout* out);

/// Managed-memory hints (cudart_memory.cc). The location a CUDA 12 `int device` names
/// (cudaCpuDeviceId: the host). cudaMemAdvise's effect on the range's pages (rounded out to CPU
/// pages; the range must lie inside one managed allocation). A prefetch's destination, remembered
/// for managed memory only. One cudaMemRangeGetAttribute query.
cudaMemLocation legacy_location(int device);
cudaError_t advise_managed(const char* api, const void* pointer, std::size_t count, int advice,
                           const cudaMemLocation& location);
void note_prefetch(const void* pointer, std::size_t count, const cudaMemLocation& location);
/// cudaErrorInvalidDevice (or InvalidValue) with a misuse record for a destination that is no
/// device of this emulation, the host or host NUMA node 0; cudaSuccess otherwise.
cudaError_t check_prefetch_location(const char* api, const cudaMemLocation& location);
/// A prefetch on `stream`: its destination checked, the stream accepted, the destination
/// remembered for managed memory.
cudaError_t prefetch_managed(const char* api, const void* pointer, std::size_t count,
                             const cudaMemLocation& location, cudaStream_t stream, bool per_thread);
cudaError_t managed_range_attribute(const char* api, void* data, std::size_t data_size,
                                    int attribute, const void* pointer, std::size_t count);

/// A shareable handle's description written to a new memfd (the file descriptor another process
/// receives); -1 when the host refuses one. And read back from a descriptor: false when it does
/// not hold `bytes` (cudart_memory.cc).
int share_through_fd(const void* description, std::size_t bytes, const char* name);
bool read_shared_fd(int fd, void* description, std::size_t bytes);

/// The emulator's cudaIpcMemHandle_t / cudaIpcEventHandle_t contents (both 64 bytes): which
/// process exported what. Another process of the job cannot reach that memory (each emulated
/// process has its own), so it opens a stand-in of the same size (cudart_memory.cc).
struct IpcHandle {
  char magic[8];            // kIpcMagic: a handle made by this emulator
  std::int64_t pid = 0;     // the exporting process
  std::uint64_t value = 0;  // the allocation's base address, or the event id
  std::uint64_t bytes = 0;  // the allocation's size (memory handles)
  std::int32_t device = 0;  // the allocation's or event's device
  std::uint32_t flags = 0;  // the event's flags (event handles)
};
inline constexpr char kIpcMagic[8] = {'P', 'T', 'E', 'M', 'U', 'I', 'P', 'C'};
static_assert(sizeof(IpcHandle) <= sizeof(cudaIpcMemHandle_t) &&
              sizeof(IpcHandle) <= sizeof(cudaIpcEventHandle_t));

/// Per-device peak bytes in use (for the exit line) and current bytes in use.
std::vector<std::int64_t> peak_used_per_device();
std::int64_t used_bytes(int device);

/// Virtual memory management (cuda_driver.cc). A cuMemCreate handle is an accounted device
/// allocation without backing (recorded as `malloc`/`free` named `api`); its address is the
/// handle and is not a device pointer. A cuMemMap'ed range is a known, unaccounted device range
/// (real memory when `backed`) that cudaFree refuses.
cudaError_t allocate_physical(void** handle, std::size_t bytes, int device, const char* api);
/// A device allocation on `device` (not necessarily the current one), recorded as a `malloc`
/// named `api` (CUDA graph memory alloc nodes).
cudaError_t allocate_on_device(void** out, std::size_t bytes, int device, const char* api);
cudaError_t release_physical(void* handle, const char* api);
bool add_mapping(void* address, std::size_t bytes, int device, bool backed);  // false: overlaps
bool remove_mapping(void* address);  // false: no mapping starts there

/// Registers a kernel loaded through the driver API (cuModuleGetFunction) by its mangled name
/// (one `register` record per new name) and returns its handle (a cudaKernel_t/CUfunction).
void* register_module_kernel(const std::string& mangled);
/// A library's memory-bound work as a kernel record named `name` on `stream` (resolved for `api`),
/// sized so the raw-kernel estimate (16 bytes per thread) moves `bytes`: 256-thread blocks. The
/// record has entry time `start_ns`. With `flops` > 0 the record also carries `flops` and
/// `bytes` fields, and the estimator times it by the roofline of both (cuFFT, cuSPARSE) instead
/// of the grid. False (and the error reported) for an invalid stream.
bool append_sized_kernel(const std::string& name, std::size_t bytes, const void* stream,
                         const char* api, std::int64_t start_ns, std::int64_t flops = 0);
/// The kernel handle (cudaKernel_t/cudaFunction_t) of kernel index `index` (a kernel record's
/// a[2]).
void* kernel_handle(std::int64_t index);
/// The mangled name of a kernel handle or host stub ("" when unknown).
std::string kernel_name(const void* func);

/// Frees every allocation of `device` (cudaDeviceReset), recording each.
void release_device_allocations(int device);

/// Registered __device__/__constant__/__managed__ variable: its emulated device storage.
struct VariableInfo {
  bool known = false;
  void* storage = nullptr;  // backed device-side allocation holding the variable
  std::size_t size = 0;
};
void register_variable(const void* host_var, const char* name, std::size_t size, bool managed,
                       void** managed_ptr_address);
VariableInfo lookup_variable(const void* symbol);

}  // namespace powertrain::emu::detail
