// Kernel registration and launch. nvcc-generated host code registers every kernel's host stub
// with its device name (__cudaRegisterFatBinary → __cudaRegisterFunction), then launches either
// through the CUDA 13 path (__cudaPushCallConfiguration, __cudaPopCallConfiguration,
// __cudaGetKernel, __cudaLaunchKernel) or the classic one (cudaLaunchKernel[ExC]). Each launch
// is validated like on the device (grid/block limits, dynamic shared memory against the kernel's
// opt-in) and recorded with its name, geometry and stream; nothing executes.
#include <cxxabi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "interposer/cudart_impl.h"
#include "interposer/cudart_internal.h"
#include "interposer/trace_schema.h"

namespace powertrain::emu::detail {
namespace {

constexpr std::uintptr_t kIdMask = (std::uintptr_t{1} << 48) - 1;
constexpr std::uintptr_t kKernelTag = std::uintptr_t{0x4b4e} << 48;  // "KN"

// Names are immutable once registered (re-registration under another name adds a kernel), so
// trace formatting and cudaFuncGetName can use them without copying.
struct Kernel {
  std::string mangled;
  std::string json_name;  // `mangled` as a JSON string, quotes included
  const void* host_fun = nullptr;
  const void* fatbin = nullptr;       // the registering fat binary's wrapper (nullptr: driver API)
  int max_dynamic_shared = 0;         // cudaFuncAttributeMaxDynamicSharedMemorySize
  bool non_portable_cluster = false;  // cudaFuncAttributeNonPortableClusterSizeAllowed
  int carveout = -1;
};

// A fat binary registration; the handle given to the program points here.
struct Module {
  const void* fatbin = nullptr;
  bool live = true;
};

struct KernelRegistry {
  std::mutex mutex;
  std::vector<Kernel*> kernels;                           // index = kernel id; never shrinks
  std::unordered_map<const void*, std::int64_t> by_host;  // host stub → index
  std::unordered_set<const Module*> modules;
  std::unordered_map<std::string, std::int64_t> by_module_name;  // driver-API kernels
};

KernelRegistry& kernels() {
  static KernelRegistry* r = new KernelRegistry;  // never destroyed (atexit unregistration)
  return *r;
}

std::string demangle(const char* name) {
  int status = 0;
  char* text = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || text == nullptr) return name;  // extern "C" kernels are not mangled
  std::string result(text);
  std::free(text);
  return result;
}

// Index of the kernel named by `func` (a host stub or a cudaKernel_t/cudaFunction_t handle), or
// -1. `max_dynamic_shared` receives its opt-in limit.
std::int64_t find_kernel(const void* func, int* max_dynamic_shared = nullptr) {
  KernelRegistry& r = kernels();
  const auto bits = reinterpret_cast<std::uintptr_t>(func);
  std::lock_guard<std::mutex> lock(r.mutex);
  std::int64_t index = -1;
  if ((bits & ~kIdMask) == kKernelTag) {
    const auto candidate = static_cast<std::int64_t>(bits & kIdMask);
    if (candidate < static_cast<std::int64_t>(r.kernels.size())) index = candidate;
  } else {
    const auto it = r.by_host.find(func);
    if (it != r.by_host.end()) index = it->second;
  }
  if (index >= 0 && max_dynamic_shared != nullptr) {
    *max_dynamic_shared = r.kernels[index]->max_dynamic_shared;
  }
  return index;
}

cudaError_t unknown_kernel(const char* api, const void* func) {
  return misuse(api, cudaErrorInvalidDeviceFunction,
                "no kernel is registered for " + pointer_text(func) +
                    " (not a __global__ function of a loaded module)");
}

Kernel* kernel_at(std::int64_t index) {
  std::lock_guard<std::mutex> lock(kernels().mutex);
  return kernels().kernels[index];
}

std::string dims_text(dim3 d) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "(%u,%u,%u)", d.x, d.y, d.z);
  return buffer;
}

// Checks a launch configuration like the device does; reports and returns the error.
cudaError_t check_configuration(dim3 grid, dim3 block, std::size_t shmem, int max_dynamic_shared,
                                const char* api) {
  const std::uint64_t threads = std::uint64_t{block.x} * block.y * block.z;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 2147483647u || grid.y > 65535 ||
      grid.z > 65535) {
    return misuse(api, cudaErrorInvalidConfiguration,
                  "invalid grid " + dims_text(grid) + " (limits 2^31-1 x 65535 x 65535)");
  }
  if (threads == 0 || threads > 1024 || block.x > 1024 || block.y > 1024 || block.z > 64) {
    return misuse(api, cudaErrorInvalidConfiguration,
                  "invalid block " + dims_text(block) + " (at most 1024 threads, 1024x1024x64)");
  }
  const int limit = max_dynamic_shared > 0 ? max_dynamic_shared : sm_limits().shared_per_block;
  if (shmem > static_cast<std::size_t>(limit)) {
    return misuse(api, cudaErrorInvalidValue,
                  std::to_string(shmem) + " bytes of dynamic shared memory exceed the kernel's " +
                      std::to_string(limit) +
                      " (raise cudaFuncAttributeMaxDynamicSharedMemorySize first)");
  }
  return cudaSuccess;
}

// x, y and z of `dims` into out[0..2]: trace records and saved launch configurations keep grid
// and block sizes as arrays.
void store_dims(dim3 dims, unsigned* out) {
  out[0] = dims.x;
  out[1] = dims.y;
  out[2] = dims.z;
}

// The fields a kernel record carries: kernel index, dynamic shared bytes, grid and block.
void set_launch_fields(Record& record, std::int64_t index, std::size_t shmem, dim3 grid, dim3 block,
                       const char* api) {
  record.a[2] = index;
  record.a[3] = static_cast<std::int64_t>(shmem);
  store_dims(grid, record.g);
  store_dims(block, record.g + 3);
  record.api = api;
}

cudaError_t launch_index(std::int64_t index, int max_dynamic_shared, dim3 grid, dim3 block,
                         std::size_t shmem, cudaStream_t stream, bool per_thread, const char* api,
                         std::int64_t start) {
  StreamRef ref;
  if (!stream_or_fail(stream, per_thread, api, &ref)) return cudaErrorInvalidResourceHandle;
  const cudaError_t error = check_configuration(grid, block, shmem, max_dynamic_shared, api);
  if (error != cudaSuccess) return error;
  Record record = make_record(Op::kKernel, start, ref.device);
  record.a[0] = ref.id;
  record.a[1] = next_correlation();
  set_launch_fields(record, index, shmem, grid, block, api);
  append(std::move(record));
  return cudaSuccess;
}

// Resident blocks per SM for `block_size` threads and `dynamic_shared` bytes (32 registers per
// thread assumed: the emulator does not know the real register count).
int blocks_per_sm(int block_size, std::size_t dynamic_shared) {
  const SmLimits l = sm_limits();
  const int warps_threads = (block_size + 31) / 32 * 32;
  int blocks = l.max_threads_per_sm / warps_threads;
  blocks = std::min(blocks, l.max_blocks_per_sm);
  blocks = std::min(blocks, l.registers_per_sm / (32 * warps_threads));
  const std::size_t per_block =
      dynamic_shared + static_cast<std::size_t>(l.reserved_shared_per_block);
  blocks = std::min<int>(blocks, static_cast<int>(l.shared_per_sm / per_block));
  return std::max(blocks, 0);
}

}  // namespace

cudaError_t make_kernel_record(const void* func, dim3 grid, dim3 block, std::size_t shmem,
                               const char* api, Record* out) {
  int max_dynamic_shared = 0;
  const std::int64_t index = find_kernel(func, &max_dynamic_shared);
  if (index < 0) return unknown_kernel(api, func);
  const cudaError_t error = check_configuration(grid, block, shmem, max_dynamic_shared, api);
  if (error != cudaSuccess) return error;
  Record record = make_record(Op::kKernel, now_ns(), current_device());
  set_launch_fields(record, index, shmem, grid, block, api);
  *out = std::move(record);
  return cudaSuccess;
}

void* register_module_kernel(const std::string& mangled) {
  const std::int64_t start = now_ns();
  std::int64_t index = -1;
  bool added = false;
  {
    KernelRegistry& r = kernels();
    std::lock_guard<std::mutex> lock(r.mutex);
    const auto it = r.by_module_name.find(mangled);
    if (it != r.by_module_name.end()) {
      index = it->second;
    } else {
      auto* kernel = new Kernel;  // never freed: its index appears in records
      kernel->mangled = mangled;
      append_json_string(kernel->json_name, kernel->mangled);
      index = static_cast<std::int64_t>(r.kernels.size());
      r.kernels.push_back(kernel);
      r.by_module_name.emplace(mangled, index);
      added = true;
    }
  }
  if (added) {
    auto record = begin_record(trace_schema::op::kRegister, start, current_device());
    record.field(trace_schema::field::kName, std::string_view(mangled));
    record.field(trace_schema::field::kDisplay, demangle(mangled.c_str()));
    end_record(record);
  }
  return reinterpret_cast<void*>(kKernelTag | static_cast<std::uintptr_t>(index));
}

bool append_sized_kernel(const std::string& name, std::size_t bytes, const void* stream,
                         const char* api, std::int64_t start_ns, std::int64_t flops) {
  StreamRef ref;
  if (!stream_or_fail(stream, false, api, &ref)) return false;
  void* kernel = register_module_kernel(name);
  const std::size_t threads = std::max<std::size_t>(1, (bytes + 15) / 16);
  const auto blocks =
      static_cast<unsigned>(std::min<std::size_t>((threads + 255) / 256, 2147483647u));
  Record record;
  if (make_kernel_record(kernel, dim3(blocks), dim3(256), 0, api, &record) != cudaSuccess) {
    return false;
  }
  record.t = start_ns;
  record.dt = now_ns() - start_ns;
  record.dev = ref.device;
  record.a[0] = ref.id;
  record.a[1] = next_correlation();
  if (flops > 0) {
    // The kernel's own work (trace_format.h appends it after the launch fields).
    record.text = ",\"flops\":" + std::to_string(flops) + ",\"bytes\":" + std::to_string(bytes);
  }
  append(std::move(record));
  return true;
}

void* kernel_handle(std::int64_t index) {
  return reinterpret_cast<void*>(kKernelTag | static_cast<std::uintptr_t>(index));
}

std::string kernel_name(const void* func) {
  const std::int64_t index = find_kernel(func);
  return index < 0 ? std::string() : kernel_at(index)->mangled;
}

void append_kernel_json_name(std::string& out, std::int64_t index) {
  KernelRegistry& r = kernels();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (index < 0 || index >= static_cast<std::int64_t>(r.kernels.size())) {
    out += "\"\"";
    return;
  }
  out += r.kernels[index]->json_name;
}

namespace impl {

cudaError_t launch(const void* func, dim3 grid, dim3 block, size_t shmem, cudaStream_t stream,
                   bool per_thread, const char* api) {
  const std::int64_t start = now_ns();
  int max_dynamic_shared = 0;
  const std::int64_t index = find_kernel(func, &max_dynamic_shared);
  if (index < 0) return unknown_kernel(api, func);
  return launch_index(index, max_dynamic_shared, grid, block, shmem, stream, per_thread, api,
                      start);
}

cudaError_t launch_ex(const cudaLaunchConfig_t* config, const void* func, bool per_thread,
                      const char* api) {
  const std::int64_t start = now_ns();
  if (config == nullptr) return misuse(api, cudaErrorInvalidValue, "config is NULL");
  int max_dynamic_shared = 0;
  const std::int64_t index = find_kernel(func, &max_dynamic_shared);
  if (index < 0) return unknown_kernel(api, func);
  // Launch attributes (cluster dimensions, priorities, programmatic serialization...) do not
  // change what is recorded.
  return launch_index(index, max_dynamic_shared, config->gridDim, config->blockDim,
                      config->dynamicSmemBytes, config->stream, per_thread, api, start);
}

cudaError_t launch_cooperative(const void* func, dim3 grid, dim3 block, size_t shmem,
                               cudaStream_t stream, bool per_thread, const char* api) {
  // All blocks of a cooperative grid must be resident at once.
  const std::uint64_t blocks = std::uint64_t{grid.x} * grid.y * grid.z;
  const std::uint64_t threads = std::uint64_t{block.x} * block.y * block.z;
  if (threads > 0 && threads <= 1024) {
    const std::uint64_t resident =
        std::uint64_t(blocks_per_sm(static_cast<int>(threads), shmem)) * config().sm_count;
    if (blocks > resident) {
      return misuse(api, cudaErrorCooperativeLaunchTooLarge,
                    std::to_string(blocks) + " blocks cannot all be resident (at most " +
                        std::to_string(resident) + ")");
    }
  }
  return launch(func, grid, block, shmem, stream, per_thread, api);
}

}  // namespace impl
}  // namespace powertrain::emu::detail

namespace detail = powertrain::emu::detail;
namespace trace_schema = powertrain::trace_schema;
namespace impl = powertrain::emu::detail::impl;
using detail::misuse;

// ---- registration (called by nvcc-generated constructors and atexit handlers) ---------------

PT_EXPORT void** __cudaRegisterFatBinary(void* fatCubin) {
  auto* module = new detail::Module{fatCubin, true};  // lives as long as the process
  std::lock_guard<std::mutex> lock(detail::kernels().mutex);
  detail::kernels().modules.insert(module);
  return reinterpret_cast<void**>(module);
}

PT_EXPORT void __cudaRegisterFatBinaryEnd(void** fatCubinHandle) { (void)fatCubinHandle; }

PT_EXPORT void __cudaUnregisterFatBinary(void** fatCubinHandle) {
  // Kernels stay registered: host stubs of an unloaded module can no longer be called, and
  // trace formatting may still need the names.
  auto* module = reinterpret_cast<detail::Module*>(fatCubinHandle);
  std::lock_guard<std::mutex> lock(detail::kernels().mutex);
  if (detail::kernels().modules.count(module) > 0) module->live = false;
}

PT_EXPORT void __cudaRegisterFunction(void** fatCubinHandle, const char* hostFun, char* deviceFun,
                                      const char* deviceName, int thread_limit, uint3* tid,
                                      uint3* bid, dim3* bDim, dim3* gDim, int* wSize) {
  (void)deviceFun;
  (void)thread_limit;
  (void)tid;
  (void)bid;
  (void)bDim;
  (void)gDim;
  (void)wSize;
  const std::int64_t start = powertrain::emu::now_ns();
  if (hostFun == nullptr || deviceName == nullptr) return;
  {
    detail::KernelRegistry& r = detail::kernels();
    std::lock_guard<std::mutex> lock(r.mutex);
    const auto it = r.by_host.find(hostFun);
    if (it == r.by_host.end() || r.kernels[it->second]->mangled != deviceName) {
      auto* kernel = new detail::Kernel;  // never freed: its index appears in records
      kernel->mangled = deviceName;
      detail::append_json_string(kernel->json_name, kernel->mangled);
      kernel->host_fun = hostFun;
      if (fatCubinHandle != nullptr) {
        kernel->fatbin = reinterpret_cast<const detail::Module*>(fatCubinHandle)->fatbin;
      }
      r.by_host[hostFun] = static_cast<std::int64_t>(r.kernels.size());
      r.kernels.push_back(kernel);
    }
  }
  auto record = powertrain::emu::begin_record(trace_schema::op::kRegister, start,
                                              powertrain::emu::current_device());
  record.field(trace_schema::field::kName, std::string_view(deviceName));
  record.field(trace_schema::field::kDisplay, detail::demangle(deviceName));
  powertrain::emu::end_record(record);
}

PT_EXPORT void __cudaRegisterVar(void** fatCubinHandle, char* hostVar, char* deviceAddress,
                                 const char* deviceName, int ext, size_t size, int constant,
                                 int global) {
  (void)fatCubinHandle;
  (void)deviceAddress;
  (void)ext;
  (void)constant;
  (void)global;
  detail::register_variable(hostVar, deviceName, size, false, nullptr);
}

PT_EXPORT void __cudaRegisterManagedVar(void** fatCubinHandle, void** hostVarPtrAddress,
                                        char* deviceAddress, const char* deviceName, int ext,
                                        size_t size, int constant, int global) {
  (void)fatCubinHandle;
  (void)deviceAddress;
  (void)ext;
  (void)constant;
  (void)global;
  detail::register_variable(nullptr, deviceName, size, true, hostVarPtrAddress);
}

// Undocumented registration hooks of the CUDA 13 runtime (host-visible variables, unified
// function tables); nothing to emulate, so they succeed silently rather than be reported.
PT_EXPORT int __cudaRegisterHostVar() { return 0; }
PT_EXPORT int __cudaRegisterUnifiedTable() { return 0; }

PT_EXPORT char __cudaInitModule(void** fatCubinHandle) {
  (void)fatCubinHandle;
  return 1;  // managed variables are set up at registration
}

// ---- launch configuration stack (<<<>>>) ----------------------------------------------------

PT_EXPORT unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                               struct CUstream_st* stream) {
  detail::ThreadState& state = detail::thread_state();
  if (state.config_depth >= detail::ThreadState::kMaxConfigDepth) {
    // Non-zero makes the generated code skip the launch.
    misuse("__cudaPushCallConfiguration", cudaErrorInvalidConfiguration,
           "launch configurations nested too deeply");
    return 1;
  }
  detail::LaunchConfig& c = state.configs[state.config_depth++];
  detail::store_dims(gridDim, c.grid);
  detail::store_dims(blockDim, c.block);
  c.shmem = sharedMem;
  c.stream = stream;
  return 0;
}

PT_EXPORT cudaError_t __cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem,
                                                 void* stream) {
  detail::ThreadState& state = detail::thread_state();
  if (state.config_depth <= 0) {
    return misuse("__cudaPopCallConfiguration", cudaErrorMissingConfiguration,
                  "no pending launch configuration");
  }
  const detail::LaunchConfig& c = state.configs[--state.config_depth];
  if (gridDim != nullptr) *gridDim = dim3(c.grid[0], c.grid[1], c.grid[2]);
  if (blockDim != nullptr) *blockDim = dim3(c.block[0], c.block[1], c.block[2]);
  if (sharedMem != nullptr) *sharedMem = c.shmem;
  if (stream != nullptr) *static_cast<cudaStream_t*>(stream) = static_cast<cudaStream_t>(c.stream);
  return cudaSuccess;
}

// ---- launches -------------------------------------------------------------------------------

PT_EXPORT cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* hostFun) {
  if (kernel == nullptr) return misuse("__cudaGetKernel", cudaErrorInvalidValue, "NULL");
  const std::int64_t index = detail::find_kernel(hostFun);
  if (index < 0) {
    *kernel = nullptr;
    return detail::unknown_kernel("__cudaGetKernel", hostFun);
  }
  *kernel = reinterpret_cast<cudaKernel_t>(detail::kKernelTag | static_cast<std::uintptr_t>(index));
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGetKernel(cudaKernel_t* kernelPtr, const void* entryFuncAddr) {
  return __cudaGetKernel(kernelPtr, entryFuncAddr);
}

PT_EXPORT cudaError_t cudaGetFuncBySymbol(cudaFunction_t* functionPtr, const void* symbolPtr) {
  if (functionPtr == nullptr) return misuse("cudaGetFuncBySymbol", cudaErrorInvalidValue, "NULL");
  const std::int64_t index = detail::find_kernel(symbolPtr);
  if (index < 0) return detail::unknown_kernel("cudaGetFuncBySymbol", symbolPtr);
  *functionPtr =
      reinterpret_cast<cudaFunction_t>(detail::kKernelTag | static_cast<std::uintptr_t>(index));
  return cudaSuccess;
}

PT_EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                         void** args, size_t sharedMem, cudaStream_t stream) {
  (void)args;
  return impl::launch(kernel, gridDim, blockDim, sharedMem, stream, false, "__cudaLaunchKernel");
}

PT_EXPORT cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                              void** args, size_t sharedMem, cudaStream_t stream) {
  (void)args;
  return impl::launch(kernel, gridDim, blockDim, sharedMem, stream, true,
                      "__cudaLaunchKernel_ptsz");
}

PT_EXPORT cudaError_t cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                       size_t sharedMem, cudaStream_t stream) {
  (void)args;
  return impl::launch(func, gridDim, blockDim, sharedMem, stream, false, "cudaLaunchKernel");
}

PT_EXPORT cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func,
                                          void** args) {
  (void)args;
  return impl::launch_ex(config, func, false, "cudaLaunchKernelExC");
}

PT_EXPORT cudaError_t cudaLaunchCooperativeKernel(const void* func, dim3 gridDim, dim3 blockDim,
                                                  void** args, size_t sharedMem,
                                                  cudaStream_t stream) {
  (void)args;
  return impl::launch_cooperative(func, gridDim, blockDim, sharedMem, stream, false,
                                  "cudaLaunchCooperativeKernel");
}

namespace {
// cudaLaunchParams of CUDA 11/12 (no longer declared by the CUDA 13 headers).
struct LaunchParamsV12 {
  void* func;
  dim3 gridDim;
  dim3 blockDim;
  void** args;
  size_t sharedMem;
  cudaStream_t stream;
};
}  // namespace

// Deprecated in CUDA 12 and gone from the CUDA 13 headers, still in old binaries: one cooperative
// grid per device, each on its own device's stream. Checked as a whole first (the same kernel and
// dimensions everywhere, one stream per device), then launched device by device; the flags
// (whether the grids wait for earlier work on the other devices) do not change emulated time.
PT_EXPORT cudaError_t cudaLaunchCooperativeKernelMultiDevice(LaunchParamsV12* launchParamsList,
                                                             unsigned int numDevices,
                                                             unsigned int flags) {
  const char* api = "cudaLaunchCooperativeKernelMultiDevice";
  (void)flags;
  if (launchParamsList == nullptr || numDevices == 0) {
    return misuse(api, cudaErrorInvalidValue, "launchParamsList NULL or numDevices 0");
  }
  if (numDevices > static_cast<unsigned int>(powertrain::emu::device_count())) {
    return misuse(api, cudaErrorInvalidValue,
                  std::to_string(numDevices) + " launches for " +
                      std::to_string(powertrain::emu::device_count()) + " devices");
  }
  std::vector<int> devices;
  for (unsigned int i = 0; i < numDevices; ++i) {
    const LaunchParamsV12& p = launchParamsList[i];
    const LaunchParamsV12& first = launchParamsList[0];
    detail::StreamRef ref;
    if (!detail::stream_or_fail(p.stream, false, api, &ref)) {
      return cudaErrorInvalidResourceHandle;
    }
    if (std::find(devices.begin(), devices.end(), ref.device) != devices.end()) {
      return misuse(api, cudaErrorInvalidDevice,
                    "launch " + std::to_string(i) + "'s stream is on device " +
                        std::to_string(ref.device) + ", which an earlier launch already uses");
    }
    devices.push_back(ref.device);
    if (p.func != first.func || p.gridDim.x != first.gridDim.x || p.gridDim.y != first.gridDim.y ||
        p.gridDim.z != first.gridDim.z || p.blockDim.x != first.blockDim.x ||
        p.blockDim.y != first.blockDim.y || p.blockDim.z != first.blockDim.z ||
        p.sharedMem != first.sharedMem) {
      return misuse(api, cudaErrorInvalidValue,
                    "launch " + std::to_string(i) +
                        " differs from launch 0 in kernel, grid, block or shared memory");
    }
  }
  for (unsigned int i = 0; i < numDevices; ++i) {
    const LaunchParamsV12& p = launchParamsList[i];
    const cudaError_t error =
        impl::launch_cooperative(p.func, p.gridDim, p.blockDim, p.sharedMem, p.stream, false, api);
    if (error != cudaSuccess) return error;
  }
  return cudaSuccess;
}

// ---- function attributes and occupancy ------------------------------------------------------

PT_EXPORT cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes* attr, const void* func) {
  int max_dynamic_shared = 0;
  if (detail::find_kernel(func, &max_dynamic_shared) < 0) {
    return detail::unknown_kernel("cudaFuncGetAttributes", func);
  }
  if (attr == nullptr) return misuse("cudaFuncGetAttributes", cudaErrorInvalidValue, "NULL");
  const detail::Config& c = detail::config();
  *attr = cudaFuncAttributes{};
  // Plausible values for a typical kernel: the device image is not parsed.
  attr->maxThreadsPerBlock = 1024;
  attr->numRegs = 32;
  attr->ptxVersion = c.cc_major * 10 + c.cc_minor;
  attr->binaryVersion = c.cc_major * 10 + c.cc_minor;
  attr->maxDynamicSharedSizeBytes =
      max_dynamic_shared > 0 ? max_dynamic_shared : detail::sm_limits().shared_per_block;
  attr->preferredShmemCarveout = -1;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaFuncSetAttribute(const void* func, enum cudaFuncAttribute attr,
                                           int value) {
  const char* api = "cudaFuncSetAttribute";
  const std::int64_t index = detail::find_kernel(func);
  if (index < 0) return detail::unknown_kernel(api, func);
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (value < 0 || value > detail::sm_limits().shared_per_block_optin) {
      return misuse(api, cudaErrorInvalidValue,
                    "MaxDynamicSharedMemorySize " + std::to_string(value) + " exceeds " +
                        std::to_string(detail::sm_limits().shared_per_block_optin));
    }
    std::lock_guard<std::mutex> lock(detail::kernels().mutex);
    detail::kernels().kernels[index]->max_dynamic_shared = value;
  } else if (attr == cudaFuncAttributePreferredSharedMemoryCarveout) {
    std::lock_guard<std::mutex> lock(detail::kernels().mutex);
    detail::kernels().kernels[index]->carveout = value;
  } else if (attr == cudaFuncAttributeNonPortableClusterSizeAllowed) {
    std::lock_guard<std::mutex> lock(detail::kernels().mutex);
    detail::kernels().kernels[index]->non_portable_cluster = value != 0;
  }
  return cudaSuccess;  // other attributes (cluster shape, scheduling) are accepted hints
}

PT_EXPORT cudaError_t cudaKernelSetAttributeForDevice(cudaKernel_t kernel,
                                                      enum cudaFuncAttribute attr, int value,
                                                      int device) {
  if (device < 0 || device >= powertrain::emu::device_count()) {
    return misuse("cudaKernelSetAttributeForDevice", cudaErrorInvalidDevice, "invalid device");
  }
  return cudaFuncSetAttribute(kernel, attr, value);
}

PT_EXPORT cudaError_t cudaFuncSetCacheConfig(const void* func, enum cudaFuncCache cacheConfig) {
  (void)cacheConfig;
  if (detail::find_kernel(func) < 0) return detail::unknown_kernel("cudaFuncSetCacheConfig", func);
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaFuncSetSharedMemConfig(const void* func,
                                                 enum cudaSharedMemConfig config) {
  (void)config;
  if (detail::find_kernel(func) < 0) {
    return detail::unknown_kernel("cudaFuncSetSharedMemConfig", func);
  }
  return cudaSuccess;
}

// The parameter layout from the kernel's image: its fat binary for the program's own kernels,
// its module for driver-API ones.
PT_EXPORT cudaError_t cudaFuncGetParamInfo(const void* func, size_t paramIndex, size_t* paramOffset,
                                           size_t* paramSize) {
  const std::int64_t index = detail::find_kernel(func);
  if (index < 0) return detail::unknown_kernel("cudaFuncGetParamInfo", func);
  const detail::Kernel* kernel = detail::kernel_at(index);
  detail::ParamLayout layout;
  const bool known = kernel->fatbin != nullptr
                         ? detail::image_param_layout(kernel->fatbin, kernel->mangled, &layout)
                         : detail::module_function_params(func, kernel->mangled, &layout);
  if (!known) {
    return misuse("cudaFuncGetParamInfo", cudaErrorNotSupported,
                  "the parameter layout of " + kernel->mangled +
                      " is not in its image (a compressed fat binary, or an image the emulator "
                      "cannot read)");
  }
  if (paramIndex >= layout.size()) {
    return misuse("cudaFuncGetParamInfo", cudaErrorInvalidValue,
                  "paramIndex " + std::to_string(paramIndex) + " is not below the " +
                      std::to_string(layout.size()) + " parameters of " + kernel->mangled);
  }
  if (paramOffset != nullptr) *paramOffset = layout[paramIndex].first;
  if (paramSize != nullptr) *paramSize = layout[paramIndex].second;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaFuncGetName(const char** name, const void* func) {
  const std::int64_t index = detail::find_kernel(func);
  if (index < 0) return detail::unknown_kernel("cudaFuncGetName", func);
  if (name == nullptr) return misuse("cudaFuncGetName", cudaErrorInvalidValue, "NULL");
  *name = detail::kernel_at(index)->mangled.c_str();  // kernels are never freed
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int* numBlocks, const void* func, int blockSize, size_t dynamicSMemSize, unsigned int flags) {
  (void)flags;
  const char* api = "cudaOccupancyMaxActiveBlocksPerMultiprocessor";
  if (detail::find_kernel(func) < 0) return detail::unknown_kernel(api, func);
  if (numBlocks == nullptr || blockSize <= 0) {
    return misuse(api, cudaErrorInvalidValue, "NULL result or block size <= 0");
  }
  *numBlocks = blockSize > 1024 ? 0 : detail::blocks_per_sm(blockSize, dynamicSMemSize);
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks,
                                                                    const void* func, int blockSize,
                                                                    size_t dynamicSMemSize) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize,
                                                                dynamicSMemSize, 0);
}

// Thread-block clusters (compute capability 9.0+). A cluster's blocks run at once on the SMs of
// one GPC; the count below packs blocks over all SMs and so ignores GPC boundaries (an upper
// bound: H100's GPCs hold 16 or 18 SMs, so 16-block clusters fit fewer than 132 / 16).
namespace {
cudaError_t cluster_query(const void* func, const cudaLaunchConfig_t* config, const char* api,
                          bool need_size, int* cluster_size, int* blocks_per_sm, int* sms,
                          bool* non_portable_out = nullptr) {
  if (detail::find_kernel(func) < 0) return detail::unknown_kernel(api, func);
  if (config == nullptr) return misuse(api, cudaErrorInvalidValue, "launchConfig is NULL");
  const int device = powertrain::emu::current_device();
  int major = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, device);
  if (major < 9) {
    return misuse(api, cudaErrorNotSupported, "thread-block clusters need compute capability 9.0");
  }
  *cluster_size = 0;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    if (config->attrs != nullptr && config->attrs[i].id == cudaLaunchAttributeClusterDimension) {
      const auto& d = config->attrs[i].val.clusterDim;
      *cluster_size = static_cast<int>(d.x * d.y * d.z);
    }
  }
  // The size must come from the configuration (a kernel's compile-time __cluster_dims__ are not
  // known here); above the portable 8 blocks only with the non-portable attribute, up to 16.
  bool non_portable = false;
  {
    const std::int64_t index = detail::find_kernel(func);
    std::lock_guard<std::mutex> lock(detail::kernels().mutex);
    non_portable = detail::kernels().kernels[index]->non_portable_cluster;
  }
  if (non_portable_out != nullptr) *non_portable_out = non_portable;
  if (need_size && *cluster_size <= 0) {
    return misuse(api, cudaErrorInvalidValue,
                  "the launch configuration has no cluster-dimension attribute");
  }
  if (*cluster_size > (non_portable ? 16 : 8)) {
    return misuse(api, cudaErrorInvalidClusterSize,
                  "cluster of " + std::to_string(*cluster_size) + " blocks (at most " +
                      (non_portable ? "16"
                                    : "8 without cudaFuncAttributeNonPortableClusterSize"
                                      "Allowed") +
                      ")");
  }
  const int threads =
      static_cast<int>(config->blockDim.x * config->blockDim.y * config->blockDim.z);
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, func, threads,
                                                       config->dynamicSmemBytes);
}
}  // namespace

PT_EXPORT cudaError_t cudaOccupancyMaxActiveClusters(int* numClusters, const void* func,
                                                     const cudaLaunchConfig_t* launchConfig) {
  const char* api = "cudaOccupancyMaxActiveClusters";
  if (numClusters == nullptr) return misuse(api, cudaErrorInvalidValue, "numClusters is NULL");
  int cluster = 1, blocks = 0, sms = 0;
  if (const cudaError_t e = cluster_query(func, launchConfig, api, true, &cluster, &blocks, &sms);
      e != cudaSuccess) {
    return e;
  }
  *numClusters = sms * blocks / cluster;
  return cudaSuccess;
}

// The largest portable cluster (8 blocks; 16 with cudaFuncAttributeNonPortableClusterSizeAllowed),
// or fewer when fewer blocks fit on the device at once.
PT_EXPORT cudaError_t cudaOccupancyMaxPotentialClusterSize(int* clusterSize, const void* func,
                                                           const cudaLaunchConfig_t* launchConfig) {
  const char* api = "cudaOccupancyMaxPotentialClusterSize";
  if (clusterSize == nullptr) return misuse(api, cudaErrorInvalidValue, "clusterSize is NULL");
  int cluster = 1, blocks = 0, sms = 0;
  bool non_portable = false;
  if (const cudaError_t e =
          cluster_query(func, launchConfig, api, false, &cluster, &blocks, &sms, &non_portable);
      e != cudaSuccess) {
    return e;
  }
  *clusterSize = std::min(non_portable ? 16 : 8, sms * blocks);
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaOccupancyAvailableDynamicSMemPerBlock(size_t* dynamicSmemSize,
                                                                const void* func, int numBlocks,
                                                                int blockSize) {
  const char* api = "cudaOccupancyAvailableDynamicSMemPerBlock";
  int max_dynamic_shared = 0;
  if (detail::find_kernel(func, &max_dynamic_shared) < 0) return detail::unknown_kernel(api, func);
  if (dynamicSmemSize == nullptr || numBlocks <= 0 || blockSize <= 0) {
    return misuse(api, cudaErrorInvalidValue, "NULL result or non-positive block count/size");
  }
  const detail::SmLimits l = detail::sm_limits();
  const long long per_block = l.shared_per_sm / numBlocks - l.reserved_shared_per_block;
  const long long limit = max_dynamic_shared > 0 ? max_dynamic_shared : l.shared_per_block;
  *dynamicSmemSize = static_cast<size_t>(std::max(0ll, std::min(per_block, limit)));
  return cudaSuccess;
}
