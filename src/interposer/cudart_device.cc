// Device management of the emulated GPU(s): count, selection, properties and attributes answer
// like the configured GPU (POWERTRAIN_EMU_*; limits per compute capability), versions, limits,
// peer access, synchronisation and reset. Synchronising calls only write their record: emulated
// work is complete when enqueued.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "interposer/cudart_array.h"
#include "interposer/cudart_impl.h"
#include "interposer/cudart_internal.h"
#include "interposer/trace_schema.h"

namespace powertrain::emu::detail {
namespace {

// CUDA 12's struct cudaDeviceProp (driver_types.h of CUDA 12.x), filled for programs built
// against CUDA 12 (cudaGetDeviceProperties_v2, and cudaGetDeviceProperties in the
// libcudart.so.12 build). CUDA 13 removed the deprecated fields marked below.
struct Cuda12DeviceProp {
  char name[256];
  cudaUUID_t uuid;
  char luid[8];
  unsigned int luidDeviceNodeMask;
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int regsPerBlock;
  int warpSize;
  size_t memPitch;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int clockRate;  // removed in 13
  size_t totalConstMem;
  int major;
  int minor;
  size_t textureAlignment;
  size_t texturePitchAlignment;
  int deviceOverlap;  // removed in 13
  int multiProcessorCount;
  int kernelExecTimeoutEnabled;  // removed in 13
  int integrated;
  int canMapHostMemory;
  int computeMode;  // removed in 13
  int maxTexture1D;
  int maxTexture1DMipmap;
  int maxTexture1DLinear;  // removed in 13
  int maxTexture2D[2];
  int maxTexture2DMipmap[2];
  int maxTexture2DLinear[3];
  int maxTexture2DGather[2];
  int maxTexture3D[3];
  int maxTexture3DAlt[3];
  int maxTextureCubemap;
  int maxTexture1DLayered[2];
  int maxTexture2DLayered[3];
  int maxTextureCubemapLayered[2];
  int maxSurface1D;
  int maxSurface2D[2];
  int maxSurface3D[3];
  int maxSurface1DLayered[2];
  int maxSurface2DLayered[3];
  int maxSurfaceCubemap;
  int maxSurfaceCubemapLayered[2];
  size_t surfaceAlignment;
  int concurrentKernels;
  int ECCEnabled;
  int pciBusID;
  int pciDeviceID;
  int pciDomainID;
  int tccDriver;
  int asyncEngineCount;
  int unifiedAddressing;
  int memoryClockRate;  // removed in 13
  int memoryBusWidth;
  int l2CacheSize;
  int persistingL2CacheMaxSize;
  int maxThreadsPerMultiProcessor;
  int streamPrioritiesSupported;
  int globalL1CacheSupported;
  int localL1CacheSupported;
  size_t sharedMemPerMultiprocessor;
  int regsPerMultiprocessor;
  int managedMemory;
  int isMultiGpuBoard;
  int multiGpuBoardGroupID;
  int hostNativeAtomicSupported;
  int singleToDoublePrecisionPerfRatio;  // removed in 13
  int pageableMemoryAccess;
  int concurrentManagedAccess;
  int computePreemptionSupported;
  int canUseHostPointerForRegisteredMem;
  int cooperativeLaunch;
  int cooperativeMultiDeviceLaunch;  // removed in 13
  size_t sharedMemPerBlockOptin;
  int pageableMemoryAccessUsesHostPageTables;
  int directManagedMemAccessFromHost;
  int maxBlocksPerMultiProcessor;
  int accessPolicyMaxWindowSize;
  size_t reservedSharedMemPerBlock;
  int hostRegisterSupported;
  int sparseCudaArraySupported;
  int hostRegisterReadOnlySupported;
  int timelineSemaphoreInteropSupported;
  int memoryPoolsSupported;
  int gpuDirectRDMASupported;
  unsigned int gpuDirectRDMAFlushWritesOptions;
  int gpuDirectRDMAWritesOrdering;
  unsigned int memoryPoolSupportedHandleTypes;
  int deferredMappingCudaArraySupported;
  int ipcEventSupported;
  int clusterLaunch;
  int unifiedFunctionPointers;
  int reserved2[2];
  int reserved1[1];
  int reserved[60];
};
static_assert(sizeof(Cuda12DeviceProp) == 1032, "CUDA 12 cudaDeviceProp is 1032 bytes");

// Dense index of this process's device `device` among all emulated GPUs of the job.
int global_index(int device) {
  const Config& c = config();
  return (c.rank < 0 ? 0 : c.rank) * c.devices + device;
}

bool valid_device(int device) { return device >= 0 && device < config().devices; }

cudaError_t invalid_device(const char* api, int device) {
  return misuse(api, cudaErrorInvalidDevice,
                "device " + std::to_string(device) + " does not exist (the emulator has " +
                    std::to_string(config().devices) + ")");
}

cudaUUID_t device_uuid(int device) {
  // Stable per (job, global GPU index): programs use the UUID to tell GPUs apart.
  cudaUUID_t uuid{};
  std::uint64_t hash = 1469598103934665603ull;
  for (const char ch : config().job)
    hash = (hash ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  const std::uint64_t index = static_cast<std::uint64_t>(global_index(device));
  std::memcpy(uuid.bytes, "PTEMU\0\0\0", 8);
  std::memcpy(uuid.bytes + 8, &index, 4);
  std::memcpy(uuid.bytes + 12, &hash, 4);
  return uuid;
}

// Fields shared by the CUDA 12 and 13 layouts.
template <typename Prop>
void fill_common(Prop* p, int device) {
  const Config& c = config();
  const SmLimits l = sm_limits();
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->name, sizeof p->name, "%s", c.gpu_name.c_str());
  p->uuid = device_uuid(device);
  p->totalGlobalMem = static_cast<size_t>(c.memory_bytes);
  p->sharedMemPerBlock = static_cast<size_t>(l.shared_per_block);
  p->regsPerBlock = 65536;
  p->warpSize = 32;
  p->memPitch = 2147483647;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = 1024;
  p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647;
  p->maxGridSize[1] = 65535;
  p->maxGridSize[2] = 65535;
  p->totalConstMem = 65536;
  p->major = c.cc_major;
  p->minor = c.cc_minor;
  p->textureAlignment = 512;
  p->texturePitchAlignment = 32;
  p->multiProcessorCount = c.sm_count;
  p->integrated = 0;
  p->canMapHostMemory = 1;
  p->maxTexture1D = 131072;
  p->maxTexture1DMipmap = 32768;
  p->maxTexture2D[0] = 131072;
  p->maxTexture2D[1] = 65536;
  p->maxTexture2DMipmap[0] = 32768;
  p->maxTexture2DMipmap[1] = 32768;
  p->maxTexture2DLinear[0] = 131072;
  p->maxTexture2DLinear[1] = 65000;
  p->maxTexture2DLinear[2] = 2097120;
  p->maxTexture2DGather[0] = 32768;
  p->maxTexture2DGather[1] = 32768;
  p->maxTexture3D[0] = p->maxTexture3D[1] = p->maxTexture3D[2] = 16384;
  p->maxTexture3DAlt[0] = p->maxTexture3DAlt[1] = 8192;
  p->maxTexture3DAlt[2] = 32768;
  p->maxTextureCubemap = 32768;
  p->maxTexture1DLayered[0] = 32768;
  p->maxTexture1DLayered[1] = 2048;
  p->maxTexture2DLayered[0] = p->maxTexture2DLayered[1] = 32768;
  p->maxTexture2DLayered[2] = 2048;
  p->maxTextureCubemapLayered[0] = 32768;
  p->maxTextureCubemapLayered[1] = 2046;
  p->maxSurface1D = 32768;
  p->maxSurface2D[0] = 131072;
  p->maxSurface2D[1] = 65536;
  p->maxSurface3D[0] = p->maxSurface3D[1] = p->maxSurface3D[2] = 16384;
  p->maxSurface1DLayered[0] = 32768;
  p->maxSurface1DLayered[1] = 2048;
  p->maxSurface2DLayered[0] = p->maxSurface2DLayered[1] = 32768;
  p->maxSurface2DLayered[2] = 2048;
  p->maxSurfaceCubemap = 32768;
  p->maxSurfaceCubemapLayered[0] = 32768;
  p->maxSurfaceCubemapLayered[1] = 2046;
  p->surfaceAlignment = 512;
  p->concurrentKernels = 1;
  p->ECCEnabled = 1;
  p->pciBusID = 0x18 + global_index(device) % 200;
  p->pciDeviceID = 0;
  p->pciDomainID = 0;
  p->tccDriver = 0;
  p->asyncEngineCount = 3;
  p->unifiedAddressing = 1;
  p->memoryBusWidth = l.memory_bus_bits;
  p->l2CacheSize = l.l2_bytes;
  p->persistingL2CacheMaxSize = l.l2_bytes / 8 * 5;
  p->maxThreadsPerMultiProcessor = l.max_threads_per_sm;
  p->streamPrioritiesSupported = 1;
  p->globalL1CacheSupported = 1;
  p->localL1CacheSupported = 1;
  p->sharedMemPerMultiprocessor = static_cast<size_t>(l.shared_per_sm);
  p->regsPerMultiprocessor = l.registers_per_sm;
  p->managedMemory = 1;
  p->isMultiGpuBoard = 0;
  p->multiGpuBoardGroupID = global_index(device);
  p->hostNativeAtomicSupported = 0;
  p->pageableMemoryAccess = 0;
  p->concurrentManagedAccess = 1;
  p->computePreemptionSupported = 1;
  p->canUseHostPointerForRegisteredMem = 1;
  p->cooperativeLaunch = 1;
  p->sharedMemPerBlockOptin = static_cast<size_t>(l.shared_per_block_optin);
  p->pageableMemoryAccessUsesHostPageTables = 0;
  p->directManagedMemAccessFromHost = 0;
  p->maxBlocksPerMultiProcessor = l.max_blocks_per_sm;
  p->accessPolicyMaxWindowSize = 134213632;
  p->reservedSharedMemPerBlock = static_cast<size_t>(l.reserved_shared_per_block);
  p->hostRegisterSupported = 1;
  p->sparseCudaArraySupported = 1;
  p->hostRegisterReadOnlySupported = 1;
  p->timelineSemaphoreInteropSupported = 1;
  p->memoryPoolsSupported = 1;
  p->gpuDirectRDMASupported = 1;
  p->gpuDirectRDMAFlushWritesOptions = 1;
  p->gpuDirectRDMAWritesOrdering = 100;
  p->memoryPoolSupportedHandleTypes = 9;
  p->deferredMappingCudaArraySupported = 1;
  p->ipcEventSupported = 1;
  p->clusterLaunch = c.cc_major >= 9 ? 1 : 0;
  p->unifiedFunctionPointers = 1;
}

void fill_cuda12(Cuda12DeviceProp* p, int device) {
  fill_common(p, device);
  p->clockRate = config().clock_mhz * 1000;
  p->deviceOverlap = 1;
  p->kernelExecTimeoutEnabled = 0;
  p->computeMode = 0;  // cudaComputeModeDefault
  p->maxTexture1DLinear = 268435456;
  p->memoryClockRate = sm_limits().memory_clock_khz;
  p->singleToDoublePrecisionPerfRatio = 2;
  p->cooperativeMultiDeviceLaunch = 1;
}

void fill_cuda13(cudaDeviceProp* p, int device) {
  fill_common(p, device);
  p->deviceNumaConfig = 0;
  p->deviceNumaId = -1;
  p->mpsEnabled = 0;
  p->hostNumaId = -1;
  p->gpuPciDeviceID = 0x233010de;  // vendor 10de (NVIDIA), an H100-class device id
  p->gpuPciSubsystemID = 0x16c110de;
}

// cudaDeviceGetAttribute values that are the same on every emulated device.
constexpr std::pair<cudaDeviceAttr, int> kFixedAttributes[] = {
    {cudaDevAttrGpuOverlap, 1},
    {cudaDevAttrKernelExecTimeout, 0},
    {cudaDevAttrIntegrated, 0},
    {cudaDevAttrCanMapHostMemory, 1},
    {cudaDevAttrComputeMode, 0},
    {cudaDevAttrConcurrentKernels, 1},
    {cudaDevAttrTccDriver, 0},
    {cudaDevAttrUnifiedAddressing, 1},
    {cudaDevAttrStreamPrioritiesSupported, 1},
    {cudaDevAttrGlobalL1CacheSupported, 1},
    {cudaDevAttrLocalL1CacheSupported, 1},
    {cudaDevAttrManagedMemory, 1},
    {cudaDevAttrIsMultiGpuBoard, 0},
    {cudaDevAttrHostNativeAtomicSupported, 0},
    {cudaDevAttrSingleToDoublePrecisionPerfRatio, 2},
    {cudaDevAttrPageableMemoryAccess, 0},
    {cudaDevAttrConcurrentManagedAccess, 1},
    {cudaDevAttrComputePreemptionSupported, 1},
    {cudaDevAttrCanUseHostPointerForRegisteredMem, 1},
    {cudaDevAttrCooperativeLaunch, 1},
    {cudaDevAttrCanFlushRemoteWrites, 0},
    {cudaDevAttrHostRegisterSupported, 1},
    {cudaDevAttrPageableMemoryAccessUsesHostPageTables, 0},
    {cudaDevAttrDirectManagedMemAccessFromHost, 0},
    {cudaDevAttrSparseCudaArraySupported, 1},
    {cudaDevAttrHostRegisterReadOnlySupported, 1},
    {cudaDevAttrTimelineSemaphoreInteropSupported, 1},
    {cudaDevAttrMemoryPoolsSupported, 1},
    {cudaDevAttrGPUDirectRDMASupported, 1},
    {cudaDevAttrGPUDirectRDMAFlushWritesOptions, 1},
    {cudaDevAttrGPUDirectRDMAWritesOrdering, 100},
    {cudaDevAttrMemoryPoolSupportedHandleTypes, 9},
    {cudaDevAttrDeferredMappingCudaArraySupported, 1},
    {cudaDevAttrIpcEventSupport, 1},
    {cudaDevAttrMemSyncDomainCount, 4},
    {cudaDevAttrNumaConfig, 0},
    {cudaDevAttrNumaId, -1},
    {cudaDevAttrMpsEnabled, 0},
    {cudaDevAttrHostNumaId, -1},
};

// cudaDeviceGetAttribute values; `ok` false for attributes CUDA does not define.
int attribute_value(cudaDeviceAttr attr, int device, bool* ok) {
  cudaDeviceProp p;
  fill_cuda13(&p, device);
  const SmLimits l = sm_limits();
  *ok = true;
  for (const auto& [fixed, value] : kFixedAttributes)
    if (fixed == attr) return value;
  // The rest follow the configured GPU (the properties cudaGetDeviceProperties reports).
  const std::pair<cudaDeviceAttr, int> from_properties[] = {
      {cudaDevAttrMaxThreadsPerBlock, p.maxThreadsPerBlock},
      {cudaDevAttrMaxBlockDimX, p.maxThreadsDim[0]},
      {cudaDevAttrMaxBlockDimY, p.maxThreadsDim[1]},
      {cudaDevAttrMaxBlockDimZ, p.maxThreadsDim[2]},
      {cudaDevAttrMaxGridDimX, p.maxGridSize[0]},
      {cudaDevAttrMaxGridDimY, p.maxGridSize[1]},
      {cudaDevAttrMaxGridDimZ, p.maxGridSize[2]},
      {cudaDevAttrMaxSharedMemoryPerBlock, static_cast<int>(p.sharedMemPerBlock)},
      {cudaDevAttrTotalConstantMemory, static_cast<int>(p.totalConstMem)},
      {cudaDevAttrWarpSize, p.warpSize},
      {cudaDevAttrMaxPitch, static_cast<int>(p.memPitch)},
      {cudaDevAttrMaxRegistersPerBlock, p.regsPerBlock},
      {cudaDevAttrClockRate, config().clock_mhz * 1000},  // kHz
      {cudaDevAttrTextureAlignment, static_cast<int>(p.textureAlignment)},
      {cudaDevAttrMultiProcessorCount, p.multiProcessorCount},
      {cudaDevAttrMaxTexture1DWidth, p.maxTexture1D},
      {cudaDevAttrMaxTexture2DWidth, p.maxTexture2D[0]},
      {cudaDevAttrMaxTexture2DHeight, p.maxTexture2D[1]},
      {cudaDevAttrMaxTexture3DWidth, p.maxTexture3D[0]},
      {cudaDevAttrMaxTexture3DHeight, p.maxTexture3D[1]},
      {cudaDevAttrMaxTexture3DDepth, p.maxTexture3D[2]},
      {cudaDevAttrSurfaceAlignment, static_cast<int>(p.surfaceAlignment)},
      {cudaDevAttrEccEnabled, p.ECCEnabled},
      {cudaDevAttrPciBusId, p.pciBusID},
      {cudaDevAttrPciDeviceId, p.pciDeviceID},
      {cudaDevAttrMemoryClockRate, l.memory_clock_khz},
      {cudaDevAttrGlobalMemoryBusWidth, p.memoryBusWidth},
      {cudaDevAttrL2CacheSize, p.l2CacheSize},
      {cudaDevAttrMaxThreadsPerMultiProcessor, p.maxThreadsPerMultiProcessor},
      {cudaDevAttrAsyncEngineCount, p.asyncEngineCount},
      {cudaDevAttrPciDomainId, p.pciDomainID},
      {cudaDevAttrTexturePitchAlignment, static_cast<int>(p.texturePitchAlignment)},
      {cudaDevAttrComputeCapabilityMajor, p.major},
      {cudaDevAttrComputeCapabilityMinor, p.minor},
      {cudaDevAttrMaxSharedMemoryPerMultiprocessor, static_cast<int>(p.sharedMemPerMultiprocessor)},
      {cudaDevAttrMaxRegistersPerMultiprocessor, p.regsPerMultiprocessor},
      {cudaDevAttrMultiGpuBoardGroupID, p.multiGpuBoardGroupID},
      {cudaDevAttrMaxSharedMemoryPerBlockOptin, static_cast<int>(p.sharedMemPerBlockOptin)},
      {cudaDevAttrMaxBlocksPerMultiprocessor, p.maxBlocksPerMultiProcessor},
      {cudaDevAttrMaxPersistingL2CacheSize, p.persistingL2CacheMaxSize},
      {cudaDevAttrMaxAccessPolicyWindowSize, p.accessPolicyMaxWindowSize},
      {cudaDevAttrReservedSharedMemoryPerBlock, static_cast<int>(p.reservedSharedMemPerBlock)},
      {cudaDevAttrClusterLaunch, p.clusterLaunch},
  };
  for (const auto& [known, value] : from_properties)
    if (known == attr) return value;
  // Defined but not modelled (texture/surface extents of other shapes, interop flags): 0, as a
  // device without the feature would answer. Values CUDA does not define are invalid.
  const int value = static_cast<int>(attr);
  *ok = value >= 1 && value < static_cast<int>(cudaDevAttrMax);
  return 0;
}

void record_text(const char* op, int device) {
  auto record = begin_record(op, now_ns(), device);
  end_record(record);
}

}  // namespace

SmLimits sm_limits() {
  const Config& c = config();
  SmLimits l;  // defaults: H100 (9.0), also used for newer architectures
  if (c.cc_major == 7) {
    l = SmLimits{2048, 32, 98304, 98304, 49152, 0, 65536, 6291456, 4096, 877000};
  } else if (c.cc_major == 8 && c.cc_minor == 0) {
    l = SmLimits{2048, 32, 167936, 166912, 49152, 1024, 65536, 41943040, 5120, 1593000};
  } else if (c.cc_major == 8) {
    l = SmLimits{
        1536, c.cc_minor == 9 ? 24 : 16, 102400, 101376, 49152, 1024, 65536, 6291456, 384, 7251000};
  }
  return l;
}

}  // namespace powertrain::emu::detail

namespace detail = powertrain::emu::detail;
namespace trace_schema = powertrain::trace_schema;
using detail::misuse;

PT_EXPORT cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return misuse("cudaGetDeviceCount", cudaErrorInvalidValue, "NULL");
  *count = powertrain::emu::device_count();
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return misuse("cudaGetDevice", cudaErrorInvalidValue, "NULL");
  *device = powertrain::emu::current_device();
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaSetDevice(int device) {
  const std::int64_t start = powertrain::emu::now_ns();
  if (!detail::valid_device(device)) return detail::invalid_device("cudaSetDevice", device);
  detail::ThreadState& state = detail::thread_state();
  if (state.device != device) {
    // Recorded only when the thread's device changes: device guards call this constantly.
    state.device = device;
    detail::append(detail::make_record(detail::Op::kSetDevice, start, device));
  }
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaInitDevice(int device, unsigned int deviceFlags, unsigned int flags) {
  (void)deviceFlags;
  (void)flags;
  if (!detail::valid_device(device)) return detail::invalid_device("cudaInitDevice", device);
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaSetValidDevices(int* device_arr, int len) {
  for (int i = 0; device_arr != nullptr && i < len; ++i) {
    if (!detail::valid_device(device_arr[i])) {
      return detail::invalid_device("cudaSetValidDevices", device_arr[i]);
    }
  }
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaChooseDevice(int* device, const struct cudaDeviceProp* prop) {
  if (device == nullptr || prop == nullptr) {
    return misuse("cudaChooseDevice", cudaErrorInvalidValue, "NULL");
  }
  *device = 0;  // all emulated devices are identical
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaSetDeviceFlags(unsigned int flags) {
  (void)flags;  // scheduling/mapping flags do not change emulation
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGetDeviceFlags(unsigned int* flags) {
  if (flags == nullptr) return misuse("cudaGetDeviceFlags", cudaErrorInvalidValue, "NULL");
  *flags = cudaDeviceMapHost;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* prop, int device) {
  if (prop == nullptr) return misuse("cudaGetDeviceProperties", cudaErrorInvalidValue, "NULL");
  if (!detail::valid_device(device)) {
    return detail::invalid_device("cudaGetDeviceProperties", device);
  }
  // The CUDA 12 library exported this name for the CUDA 12 layout as well.
  if (detail::cudart_abi() == 12) {
    detail::fill_cuda12(reinterpret_cast<detail::Cuda12DeviceProp*>(prop), device);
  } else {
    detail::fill_cuda13(prop, device);
  }
  return cudaSuccess;
}

// CUDA 12 headers rename cudaGetDeviceProperties to this (CUDA 12 layout).
PT_EXPORT cudaError_t cudaGetDeviceProperties_v2(void* prop, int device) {
  if (prop == nullptr) return misuse("cudaGetDeviceProperties_v2", cudaErrorInvalidValue, "NULL");
  if (!detail::valid_device(device)) {
    return detail::invalid_device("cudaGetDeviceProperties_v2", device);
  }
  detail::fill_cuda12(static_cast<detail::Cuda12DeviceProp*>(prop), device);
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device) {
  const char* api = "cudaDeviceGetAttribute";
  if (value == nullptr) return misuse(api, cudaErrorInvalidValue, "value is NULL");
  if (!detail::valid_device(device)) return detail::invalid_device(api, device);
  bool ok = false;
  const int result = detail::attribute_value(attr, device, &ok);
  if (!ok) {
    return misuse(api, cudaErrorInvalidValue,
                  "unknown attribute " + std::to_string(static_cast<int>(attr)));
  }
  *value = result;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaDeviceSynchronize() {
  const std::int64_t start = powertrain::emu::now_ns();
  detail::impl::pace_device_synchronize(powertrain::emu::current_device());
  detail::append(
      detail::make_record(detail::Op::kDeviceSync, start, powertrain::emu::current_device()));
  return cudaSuccess;
}

namespace {
// Limits set with cudaDeviceSetLimit, per (device, limit): read back as set (they change nothing
// else on an emulated device).
std::mutex g_limit_mutex;
std::map<std::pair<int, int>, size_t> g_limits;

void reset_limits(int device) {
  std::lock_guard<std::mutex> lock(g_limit_mutex);
  for (auto it = g_limits.begin(); it != g_limits.end();) {
    it = it->first.first == device ? g_limits.erase(it) : std::next(it);
  }
}
}  // namespace

namespace {
// Peer access enabled so far, as (accessing device, peer device): the driver refuses to enable a
// pair twice or to disable one that is not enabled (PyTorch clears the first of these errors).
std::mutex g_peer_mutex;
std::set<std::pair<int, int>> g_peer_access;

// A reset device's context is gone, and with it the mappings to and from its peers.
void reset_peer_access(int device) {
  std::lock_guard<std::mutex> lock(g_peer_mutex);
  for (auto it = g_peer_access.begin(); it != g_peer_access.end();) {
    it = it->first == device || it->second == device ? g_peer_access.erase(it) : std::next(it);
  }
}
}  // namespace

PT_EXPORT cudaError_t cudaDeviceReset() {
  // Destroys the device's context: its allocations, streams and events become invalid.
  const int device = powertrain::emu::current_device();
  cudaDeviceSynchronize();
  detail::release_device_allocations(device);
  detail::reset_streams_and_events(device);
  reset_limits(device);  // back to their defaults
  reset_peer_access(device);
  detail::record_text(trace_schema::op::kDeviceReset, device);
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaRuntimeGetVersion(int* runtimeVersion) {
  if (runtimeVersion == nullptr) {
    return misuse("cudaRuntimeGetVersion", cudaErrorInvalidValue, "NULL");
  }
  *runtimeVersion = detail::cudart_abi() == 12 ? 12080 : 13000;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) {
    return misuse("cudaDriverGetVersion", cudaErrorInvalidValue, "NULL");
  }
  *driverVersion = 13000;  // a CUDA 13 driver serves both runtime versions
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaDeviceGetLimit(size_t* pValue, enum cudaLimit limit) {
  if (pValue == nullptr) return misuse("cudaDeviceGetLimit", cudaErrorInvalidValue, "NULL");
  {
    std::lock_guard<std::mutex> lock(g_limit_mutex);
    const auto it = g_limits.find({powertrain::emu::current_device(), static_cast<int>(limit)});
    if (it != g_limits.end()) {
      *pValue = it->second;
      return cudaSuccess;
    }
  }
  switch (limit) {
    case cudaLimitStackSize:
      *pValue = 1024;
      break;
    case cudaLimitPrintfFifoSize:
      *pValue = 1 << 20;
      break;
    case cudaLimitMallocHeapSize:
      *pValue = 8 << 20;
      break;
    case cudaLimitDevRuntimeSyncDepth:
      *pValue = 2;
      break;
    case cudaLimitDevRuntimePendingLaunchCount:
      *pValue = 2048;
      break;
    case cudaLimitMaxL2FetchGranularity:
      *pValue = 64;
      break;
    case cudaLimitPersistingL2CacheSize:
      *pValue = 0;
      break;
    default:
      return misuse("cudaDeviceGetLimit", cudaErrorUnsupportedLimit,
                    "unknown limit " + std::to_string(static_cast<int>(limit)));
  }
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaDeviceSetLimit(enum cudaLimit limit, size_t value) {
  size_t current = 0;
  const cudaError_t error = cudaDeviceGetLimit(&current, limit);  // validates the limit
  if (error != cudaSuccess) return error;
  std::lock_guard<std::mutex> lock(g_limit_mutex);
  g_limits[{powertrain::emu::current_device(), static_cast<int>(limit)}] = value;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaDeviceGetCacheConfig(enum cudaFuncCache* pCacheConfig) {
  if (pCacheConfig == nullptr) {
    return misuse("cudaDeviceGetCacheConfig", cudaErrorInvalidValue, "NULL");
  }
  *pCacheConfig = cudaFuncCachePreferNone;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaDeviceSetCacheConfig(enum cudaFuncCache cacheConfig) {
  (void)cacheConfig;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaDeviceGetSharedMemConfig(enum cudaSharedMemConfig* pConfig) {
  if (pConfig == nullptr) {
    return misuse("cudaDeviceGetSharedMemConfig", cudaErrorInvalidValue, "NULL");
  }
  *pConfig = cudaSharedMemBankSizeFourByte;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaDeviceSetSharedMemConfig(enum cudaSharedMemConfig config) {
  (void)config;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaDeviceCanAccessPeer(int* canAccessPeer, int device, int peerDevice) {
  if (canAccessPeer == nullptr) {
    return misuse("cudaDeviceCanAccessPeer", cudaErrorInvalidValue, "NULL");
  }
  if (!detail::valid_device(device))
    return detail::invalid_device("cudaDeviceCanAccessPeer", device);
  if (!detail::valid_device(peerDevice)) {
    return detail::invalid_device("cudaDeviceCanAccessPeer", peerDevice);
  }
  *canAccessPeer = device != peerDevice ? 1 : 0;  // NVLink-connected node
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags) {
  if (!detail::valid_device(peerDevice) || peerDevice == powertrain::emu::current_device()) {
    return detail::invalid_device("cudaDeviceEnablePeerAccess", peerDevice);
  }
  if (flags != 0) return misuse("cudaDeviceEnablePeerAccess", cudaErrorInvalidValue, "flags != 0");
  std::lock_guard<std::mutex> lock(g_peer_mutex);
  if (!g_peer_access.emplace(powertrain::emu::current_device(), peerDevice).second) {
    return detail::fail(cudaErrorPeerAccessAlreadyEnabled);
  }
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaDeviceDisablePeerAccess(int peerDevice) {
  if (!detail::valid_device(peerDevice)) {
    return detail::invalid_device("cudaDeviceDisablePeerAccess", peerDevice);
  }
  std::lock_guard<std::mutex> lock(g_peer_mutex);
  if (g_peer_access.erase({powertrain::emu::current_device(), peerDevice}) == 0) {
    return detail::fail(cudaErrorPeerAccessNotEnabled);
  }
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaDeviceGetP2PAttribute(int* value, enum cudaDeviceP2PAttr attr,
                                                int srcDevice, int dstDevice) {
  if (value == nullptr) return misuse("cudaDeviceGetP2PAttribute", cudaErrorInvalidValue, "NULL");
  if (!detail::valid_device(srcDevice) || !detail::valid_device(dstDevice)) {
    return detail::invalid_device("cudaDeviceGetP2PAttribute", srcDevice);
  }
  // NVLink-connected peers, rank 0 the best; native atomics, but not every operation (float
  // min/max: see atomic_capabilities), so "only partial" is 1.
  *value = attr == cudaDevP2PAttrPerformanceRank ? 0 : 1;
  return cudaSuccess;
}

namespace {
// The native support of each atomic operation over a link, as a bitmask of
// cudaAtomicOperationCapability. Over NVLink (peers) a Hopper GPU does the integer and bitwise
// operations, exchange and compare-and-swap natively on 32- and 64-bit values (128-bit exchange
// and CAS too, sm_90), increment/decrement on unsigned 32-bit values (the only atomicInc/Dec CUDA
// has), float add on scalars and float4 vectors; float min/max are left out (no source says they
// are native over the link), so cudaDevP2PAttrOnlyPartialNativeAtomicSupported is 1. Over PCIe to
// the host nothing is native (cudaDevAttrHostNativeAtomicSupported is 0).
cudaError_t atomic_capabilities(unsigned int* capabilities, const cudaAtomicOperation* operations,
                                unsigned int count, bool native, const char* api) {
  if (capabilities == nullptr || operations == nullptr || count == 0) {
    return misuse(api, cudaErrorInvalidValue, "capabilities or operations NULL, or count 0");
  }
  constexpr unsigned int kInteger = cudaAtomicCapabilitySigned | cudaAtomicCapabilityUnsigned |
                                    cudaAtomicCapabilityScalar32 | cudaAtomicCapabilityScalar64;
  const bool hopper = powertrain::emu::detail::config().cc_major >= 9;
  for (unsigned int i = 0; i < count; ++i) {
    unsigned int mask = 0;
    switch (operations[i]) {
      case cudaAtomicOperationIntegerIncrement:
      case cudaAtomicOperationIntegerDecrement:
        mask = cudaAtomicCapabilityUnsigned | cudaAtomicCapabilityScalar32;
        break;
      case cudaAtomicOperationIntegerAdd:
      case cudaAtomicOperationIntegerMin:
      case cudaAtomicOperationIntegerMax:
      case cudaAtomicOperationAnd:
      case cudaAtomicOperationOr:
      case cudaAtomicOperationXOR:
        mask = kInteger | cudaAtomicCapabilityReduction;
        break;
      case cudaAtomicOperationExchange:
      case cudaAtomicOperationCAS:
        mask = kInteger | (hopper ? static_cast<unsigned int>(cudaAtomicCapabilityScalar128) : 0u);
        break;
      case cudaAtomicOperationFloatAdd:
        mask = cudaAtomicCapabilityScalar32 | cudaAtomicCapabilityScalar64 |
               cudaAtomicCapabilityReduction |
               (hopper ? static_cast<unsigned int>(cudaAtomicCapabilityVector32x4) : 0u);
        break;
      case cudaAtomicOperationFloatMin:
      case cudaAtomicOperationFloatMax:
        mask = 0;
        break;
      default:
        return misuse(api, cudaErrorInvalidValue,
                      "operations[" + std::to_string(i) +
                          "] = " + std::to_string(static_cast<int>(operations[i])) +
                          " is not a cudaAtomicOperation");
    }
    capabilities[i] = native ? mask : 0u;
  }
  return cudaSuccess;
}

// cudaDeviceRegisterAsyncNotification: the callbacks registered per device. An emulated device
// never runs over a memory budget, so they are kept (for unregistering) and never called.
std::mutex g_async_mutex;
std::map<cudaAsyncCallbackHandle_t, int> g_async_callbacks;  // handle → device
std::uintptr_t g_next_async_handle = 0x1000;
}  // namespace

PT_EXPORT cudaError_t cudaDeviceGetHostAtomicCapabilities(
    unsigned int* capabilities, const enum cudaAtomicOperation* operations, unsigned int count,
    int device) {
  const char* api = "cudaDeviceGetHostAtomicCapabilities";
  if (!detail::valid_device(device)) return detail::invalid_device(api, device);
  return atomic_capabilities(capabilities, operations, count, false, api);
}

PT_EXPORT cudaError_t cudaDeviceGetP2PAtomicCapabilities(unsigned int* capabilities,
                                                         const enum cudaAtomicOperation* operations,
                                                         unsigned int count, int srcDevice,
                                                         int dstDevice) {
  const char* api = "cudaDeviceGetP2PAtomicCapabilities";
  if (!detail::valid_device(srcDevice)) return detail::invalid_device(api, srcDevice);
  if (!detail::valid_device(dstDevice)) return detail::invalid_device(api, dstDevice);
  if (dstDevice == srcDevice) {
    return misuse(api, cudaErrorInvalidDevice,
                  "srcDevice and dstDevice are both device " + std::to_string(srcDevice));
  }
  return atomic_capabilities(capabilities, operations, count, true, api);
}

// The maximum width of a 1D linear texture, in elements, for a valid format: 2^28 on every
// architecture from Pascal on (cudaDeviceProp::maxTexture1DLinear, which this call replaces).
PT_EXPORT cudaError_t cudaDeviceGetTexture1DLinearMaxWidth(
    size_t* maxWidthInElements, const struct cudaChannelFormatDesc* fmtDesc, int device) {
  const char* api = "cudaDeviceGetTexture1DLinearMaxWidth";
  if (maxWidthInElements == nullptr || fmtDesc == nullptr) {
    return misuse(api, cudaErrorInvalidValue, "maxWidthInElements or fmtDesc NULL");
  }
  if (!detail::valid_device(device)) return detail::invalid_device(api, device);
  // The formats a linear texture takes (the emulator's one check of channel formats).
  const char* why = nullptr;
  if (detail::element_bytes_of(*fmtDesc, &why) == 0) {
    return misuse(api, cudaErrorInvalidValue,
                  std::string("fmtDesc is not a texture format: ") + (why != nullptr ? why : "?"));
  }
  *maxWidthInElements = std::size_t{1} << 28;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaDeviceRegisterAsyncNotification(int device,
                                                          cudaAsyncCallback callbackFunc,
                                                          void* userData,
                                                          cudaAsyncCallbackHandle_t* callback) {
  const char* api = "cudaDeviceRegisterAsyncNotification";
  (void)userData;
  if (callbackFunc == nullptr || callback == nullptr) {
    return misuse(api, cudaErrorInvalidValue, "callbackFunc or callback NULL");
  }
  if (!detail::valid_device(device)) return detail::invalid_device(api, device);
  std::lock_guard<std::mutex> lock(g_async_mutex);
  *callback = reinterpret_cast<cudaAsyncCallbackHandle_t>(g_next_async_handle);
  g_next_async_handle += 0x10;
  g_async_callbacks[*callback] = device;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaDeviceUnregisterAsyncNotification(int device,
                                                            cudaAsyncCallbackHandle_t callback) {
  const char* api = "cudaDeviceUnregisterAsyncNotification";
  if (!detail::valid_device(device)) return detail::invalid_device(api, device);
  std::lock_guard<std::mutex> lock(g_async_mutex);
  const auto it = g_async_callbacks.find(callback);
  if (it == g_async_callbacks.end() || it->second != device) {
    return misuse(api, cudaErrorInvalidValue,
                  detail::pointer_text(callback) + " is not a callback registered on device " +
                      std::to_string(device));
  }
  g_async_callbacks.erase(it);
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaDeviceGetPCIBusId(char* pciBusId, int len, int device) {
  if (pciBusId == nullptr || len <= 0) {
    return misuse("cudaDeviceGetPCIBusId", cudaErrorInvalidValue, "NULL or empty buffer");
  }
  if (!detail::valid_device(device)) return detail::invalid_device("cudaDeviceGetPCIBusId", device);
  std::snprintf(pciBusId, static_cast<size_t>(len), "00000000:%02X:00.0",
                0x18 + detail::global_index(device) % 200);
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaDeviceGetByPCIBusId(int* device, const char* pciBusId) {
  if (device == nullptr || pciBusId == nullptr) {
    return misuse("cudaDeviceGetByPCIBusId", cudaErrorInvalidValue, "NULL");
  }
  for (int d = 0; d < powertrain::emu::device_count(); ++d) {
    char id[32];
    cudaDeviceGetPCIBusId(id, sizeof id, d);
    // Accept both the 8-digit and the 4-digit domain forms.
    if (std::strcmp(id, pciBusId) == 0 || std::strcmp(id + 4, pciBusId) == 0) {
      *device = d;
      return cudaSuccess;
    }
  }
  return misuse("cudaDeviceGetByPCIBusId", cudaErrorInvalidDevice,
                std::string("no emulated device has PCI bus id ") + pciBusId);
}

PT_EXPORT cudaError_t cudaDeviceFlushGPUDirectRDMAWrites(
    enum cudaFlushGPUDirectRDMAWritesTarget target, enum cudaFlushGPUDirectRDMAWritesScope scope) {
  (void)target;
  (void)scope;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaCtxResetPersistingL2Cache() { return cudaSuccess; }

PT_EXPORT cudaError_t cudaProfilerStart() { return cudaSuccess; }

PT_EXPORT cudaError_t cudaProfilerStop() { return cudaSuccess; }

// Deprecated and without effect since CUDA 10 (no longer declared in the headers; old binaries
// still call them).
PT_EXPORT cudaError_t cudaSetDoubleForDevice(double* d) {
  (void)d;
  return cudaSuccess;
}
PT_EXPORT cudaError_t cudaSetDoubleForHost(double* d) {
  (void)d;
  return cudaSuccess;
}
PT_EXPORT cudaError_t cudaProfilerInitialize(const char* configFile, const char* outputFile,
                                             int outputMode) {
  (void)configFile;
  (void)outputFile;
  (void)outputMode;
  return cudaSuccess;
}

// Returns a struct by value (a hidden result pointer on x86-64), so it cannot be a generated
// stub; it is pure arithmetic in the real runtime too.
PT_EXPORT struct cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w,
                                                             enum cudaChannelFormatKind f) {
  return cudaChannelFormatDesc{x, y, z, w, f};
}

// ---- the CUDA 3 thread-named forms of the device calls (deprecated, still in old programs) ----

PT_EXPORT cudaError_t cudaThreadSynchronize() { return cudaDeviceSynchronize(); }
PT_EXPORT cudaError_t cudaThreadExit() { return cudaDeviceReset(); }
PT_EXPORT cudaError_t cudaThreadSetLimit(enum cudaLimit limit, size_t value) {
  return cudaDeviceSetLimit(limit, value);
}
PT_EXPORT cudaError_t cudaThreadGetLimit(size_t* pValue, enum cudaLimit limit) {
  return cudaDeviceGetLimit(pValue, limit);
}
PT_EXPORT cudaError_t cudaThreadSetCacheConfig(enum cudaFuncCache cacheConfig) {
  return cudaDeviceSetCacheConfig(cacheConfig);
}
PT_EXPORT cudaError_t cudaThreadGetCacheConfig(enum cudaFuncCache* pCacheConfig) {
  return cudaDeviceGetCacheConfig(pCacheConfig);
}
