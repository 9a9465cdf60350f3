// Driver calls that are runtime calls under another name: managed, pitched and registered host
// memory, prefetch and advice, memory pools, pointer attributes, stream callbacks and
// attributes, peer access between contexts, occupancy, cache and shared-memory configuration.
// Each converts its handles (a CUdeviceptr is a pointer, a CUmemoryPool a cudaMemPool_t, the
// driver's structs are the runtime's under their driver names) and keeps the runtime's last
// error as it was (ErrorScope). The per-thread-default-stream forms (*_ptsz) use the calling
// thread's stream for a NULL stream, as in cuda_driver.cc.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "interposer/cuda_driver_common.h"
#include "interposer/cudart_impl.h"
#include "interposer/cudart_internal.h"

namespace detail = powertrain::emu::detail;
namespace impl = powertrain::emu::detail::impl;
using detail::as_pointer;
using detail::ErrorScope;
using detail::per_thread;
using detail::to_driver;

namespace {

cudaMemLocation to_runtime(CUmemLocation location) {
  cudaMemLocation out{};
  out.type = static_cast<cudaMemLocationType>(location.type);
  out.id = location.id;
  return out;
}

// The CUDA 12 forms name a device, or CU_DEVICE_CPU (-1) for the host.
cudaMemLocation device_location(CUdevice device) { return detail::legacy_location(device); }

// Through impl and detail, not cudaMemPrefetchAsync/cudaMemAdvise, whose arguments depend on the
// runtime ABI.
CUresult prefetch(CUdeviceptr pointer, size_t bytes, const cudaMemLocation& location,
                  CUstream stream, const char* api) {
  ErrorScope scope;
  return to_driver(
      detail::prefetch_managed(api, as_pointer(pointer), bytes, location, stream, false));
}

CUresult advise(CUdeviceptr pointer, size_t bytes, CUmem_advise advice,
                const cudaMemLocation& location) {
  ErrorScope scope;
  return to_driver(
      detail::advise_managed("cuMemAdvise", as_pointer(pointer), bytes, advice, location));
}

// Allocations whose CU_POINTER_ATTRIBUTE_SYNC_MEMOPS was set (by base address).
std::mutex g_sync_memops_mutex;
std::set<std::uintptr_t> g_sync_memops;

}  // namespace

// ---- memory ------------------------------------------------------------------------------------

PT_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* pointer, size_t bytes, unsigned int flags) {
  ErrorScope scope;
  return to_driver(cudaMallocManaged(reinterpret_cast<void**>(pointer), bytes, flags));
}

PT_EXPORT CUresult cuMemAllocPitch(CUdeviceptr* pointer, size_t* pitch, size_t width_bytes,
                                   size_t height, unsigned int element_bytes) {
  if (element_bytes != 4 && element_bytes != 8 && element_bytes != 16) {
    powertrain::emu::report_misuse(
        "cuMemAllocPitch_v2",
        "ElementSizeBytes " + std::to_string(element_bytes) + " is not 4, 8 or 16");
    return CUDA_ERROR_INVALID_VALUE;
  }
  ErrorScope scope;
  return to_driver(cudaMallocPitch(reinterpret_cast<void**>(pointer), pitch, width_bytes, height));
}

PT_EXPORT CUresult cuMemHostRegister(void* pointer, size_t bytes, unsigned int flags) {
  ErrorScope scope;  // CU_MEMHOSTREGISTER_* and cudaHostRegister* share their values
  return to_driver(cudaHostRegister(pointer, bytes, flags));
}

PT_EXPORT CUresult cuMemHostUnregister(void* pointer) {
  ErrorScope scope;
  return to_driver(cudaHostUnregister(pointer));
}

PT_EXPORT CUresult cuMemHostGetDevicePointer(CUdeviceptr* device_pointer, void* host,
                                             unsigned int flags) {
  ErrorScope scope;
  return to_driver(cudaHostGetDevicePointer(reinterpret_cast<void**>(device_pointer), host, flags));
}

PT_EXPORT CUresult cuMemHostGetFlags(unsigned int* flags, void* pointer) {
  ErrorScope scope;
  return to_driver(cudaHostGetFlags(flags, pointer));
}

// A prefetch is a placement hint with no effect on an emulated device's timing: the stream is
// checked, and a managed range remembers the destination.
PT_EXPORT CUresult cuMemPrefetchAsync(CUdeviceptr pointer, size_t bytes, CUmemLocation location,
                                      unsigned int /*flags*/, CUstream stream) {
  return prefetch(pointer, bytes, to_runtime(location), stream, "cuMemPrefetchAsync_v2");
}

PT_EXPORT CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr pointer, size_t bytes,
                                              CUmemLocation location, unsigned int flags,
                                              CUstream stream) {
  return cuMemPrefetchAsync(pointer, bytes, location, flags, per_thread(stream));
}

PT_EXPORT CUresult cuMemAdvise(CUdeviceptr pointer, size_t bytes, CUmem_advise advice,
                               CUmemLocation location) {
  return advise(pointer, bytes, advice, to_runtime(location));
}

PT_EXPORT CUresult cuMemRangeGetAttribute(void* data, size_t data_size,
                                          CUmem_range_attribute attribute, CUdeviceptr pointer,
                                          size_t bytes) {
  ErrorScope scope;
  return to_driver(detail::managed_range_attribute("cuMemRangeGetAttribute", data, data_size,
                                                   attribute, as_pointer(pointer), bytes));
}

PT_EXPORT CUresult cuMemRangeGetAttributes(void** data, size_t* data_sizes,
                                           CUmem_range_attribute* attributes,
                                           size_t attribute_count, CUdeviceptr pointer,
                                           size_t bytes) {
  ErrorScope scope;
  if (attribute_count == 0 || data == nullptr || data_sizes == nullptr || attributes == nullptr) {
    return to_driver(detail::misuse("cuMemRangeGetAttributes", cudaErrorInvalidValue,
                                    "numAttributes is 0 or data/dataSizes/attributes is NULL"));
  }
  for (size_t i = 0; i < attribute_count; ++i) {
    const cudaError_t status =
        detail::managed_range_attribute("cuMemRangeGetAttributes", data[i], data_sizes[i],
                                        attributes[i], as_pointer(pointer), bytes);
    if (status != cudaSuccess) return to_driver(status);
  }
  return CUDA_SUCCESS;
}

// ---- memory pools
// --------------------------------------------------------------------------------

PT_EXPORT CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  ErrorScope scope;
  return to_driver(cudaMemPoolCreate(reinterpret_cast<cudaMemPool_t*>(pool),
                                     reinterpret_cast<const cudaMemPoolProps*>(props)));
}

PT_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  ErrorScope scope;
  return to_driver(cudaMemPoolDestroy(reinterpret_cast<cudaMemPool_t>(pool)));
}

PT_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attribute,
                                         void* value) {
  ErrorScope scope;
  return to_driver(cudaMemPoolSetAttribute(reinterpret_cast<cudaMemPool_t>(pool),
                                           static_cast<cudaMemPoolAttr>(attribute), value));
}

PT_EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attribute,
                                         void* value) {
  ErrorScope scope;
  return to_driver(cudaMemPoolGetAttribute(reinterpret_cast<cudaMemPool_t>(pool),
                                           static_cast<cudaMemPoolAttr>(attribute), value));
}

PT_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep_bytes) {
  ErrorScope scope;
  return to_driver(cudaMemPoolTrimTo(reinterpret_cast<cudaMemPool_t>(pool), keep_bytes));
}

PT_EXPORT CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map, size_t count) {
  ErrorScope scope;
  return to_driver(cudaMemPoolSetAccess(reinterpret_cast<cudaMemPool_t>(pool),
                                        reinterpret_cast<const cudaMemAccessDesc*>(map), count));
}

PT_EXPORT CUresult cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool pool,
                                      CUmemLocation* location) {
  if (location == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ErrorScope scope;
  cudaMemLocation where = to_runtime(*location);
  return to_driver(cudaMemPoolGetAccess(reinterpret_cast<cudaMemAccessFlags*>(flags),
                                        reinterpret_cast<cudaMemPool_t>(pool), &where));
}

PT_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* pointer, size_t bytes, CUmemoryPool pool,
                                           CUstream stream) {
  ErrorScope scope;
  return to_driver(cudaMallocFromPoolAsync(reinterpret_cast<void**>(pointer), bytes,
                                           reinterpret_cast<cudaMemPool_t>(pool), stream));
}

PT_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* pointer, size_t bytes,
                                                CUmemoryPool pool, CUstream stream) {
  return cuMemAllocFromPoolAsync(pointer, bytes, pool, per_thread(stream));
}

PT_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice device) {
  ErrorScope scope;
  return to_driver(cudaDeviceGetDefaultMemPool(reinterpret_cast<cudaMemPool_t*>(pool), device));
}

PT_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice device) {
  ErrorScope scope;
  return to_driver(cudaDeviceGetMemPool(reinterpret_cast<cudaMemPool_t*>(pool), device));
}

PT_EXPORT CUresult cuMemPoolExportToShareableHandle(void* handle, CUmemoryPool pool,
                                                    CUmemAllocationHandleType type,
                                                    unsigned long long flags) {
  ErrorScope scope;  // the handle types share their values
  return to_driver(cudaMemPoolExportToShareableHandle(
      handle, reinterpret_cast<cudaMemPool_t>(pool), static_cast<cudaMemAllocationHandleType>(type),
      static_cast<unsigned>(flags)));
}

PT_EXPORT CUresult cuMemPoolImportFromShareableHandle(CUmemoryPool* pool, void* handle,
                                                      CUmemAllocationHandleType type,
                                                      unsigned long long flags) {
  ErrorScope scope;
  return to_driver(cudaMemPoolImportFromShareableHandle(
      reinterpret_cast<cudaMemPool_t*>(pool), handle,
      static_cast<cudaMemAllocationHandleType>(type), static_cast<unsigned>(flags)));
}

PT_EXPORT CUresult cuMemPoolExportPointer(CUmemPoolPtrExportData* data, CUdeviceptr pointer) {
  ErrorScope scope;  // the same 64 bytes
  return to_driver(cudaMemPoolExportPointer(reinterpret_cast<cudaMemPoolPtrExportData*>(data),
                                            as_pointer(pointer)));
}

PT_EXPORT CUresult cuMemPoolImportPointer(CUdeviceptr* pointer, CUmemoryPool pool,
                                          CUmemPoolPtrExportData* data) {
  ErrorScope scope;
  return to_driver(cudaMemPoolImportPointer(reinterpret_cast<void**>(pointer),
                                            reinterpret_cast<cudaMemPool_t>(pool),
                                            reinterpret_cast<cudaMemPoolPtrExportData*>(data)));
}

PT_EXPORT CUresult cuDeviceSetMemPool(CUdevice device, CUmemoryPool pool) {
  ErrorScope scope;
  return to_driver(cudaDeviceSetMemPool(device, reinterpret_cast<cudaMemPool_t>(pool)));
}

PT_EXPORT CUresult cuMemGetDefaultMemPool(CUmemoryPool* pool, CUmemLocation* location,
                                          CUmemAllocationType type) {
  ErrorScope scope;
  cudaMemLocation where = location != nullptr ? to_runtime(*location) : cudaMemLocation{};
  return to_driver(cudaMemGetDefaultMemPool(reinterpret_cast<cudaMemPool_t*>(pool),
                                            location != nullptr ? &where : nullptr,
                                            static_cast<cudaMemAllocationType>(type)));
}

PT_EXPORT CUresult cuMemGetMemPool(CUmemoryPool* pool, CUmemLocation* location,
                                   CUmemAllocationType type) {
  ErrorScope scope;
  cudaMemLocation where = location != nullptr ? to_runtime(*location) : cudaMemLocation{};
  return to_driver(cudaMemGetMemPool(reinterpret_cast<cudaMemPool_t*>(pool),
                                     location != nullptr ? &where : nullptr,
                                     static_cast<cudaMemAllocationType>(type)));
}

PT_EXPORT CUresult cuMemSetMemPool(CUmemLocation* location, CUmemAllocationType type,
                                   CUmemoryPool pool) {
  ErrorScope scope;
  cudaMemLocation where = location != nullptr ? to_runtime(*location) : cudaMemLocation{};
  return to_driver(cudaMemSetMemPool(location != nullptr ? &where : nullptr,
                                     static_cast<cudaMemAllocationType>(type),
                                     reinterpret_cast<cudaMemPool_t>(pool)));
}

// ---- pointer attributes
// --------------------------------------------------------------------------

namespace {

// The attributes cuPointerGetAttribute (cuda_driver.cc) does not answer, for memory the
// emulator allocated. False when `attribute` is not one of them.
bool extra_attribute(CUpointer_attribute attribute, const detail::PointerInfo& info, void* data) {
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      *static_cast<int*>(data) = info.kind == powertrain::emu::detail::AllocKind::kManaged ? 1 : 0;
      return true;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:  // unique per live allocation: its base address
      *static_cast<unsigned long long*>(data) = info.base;
      return true;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: {
      std::lock_guard<std::mutex> lock(g_sync_memops_mutex);
      *static_cast<int*>(data) = g_sync_memops.count(info.base) > 0 ? 1 : 0;
      return true;
    }
    case CU_POINTER_ATTRIBUTE_MAPPED:
      *static_cast<int*>(data) = 1;
      return true;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
      *static_cast<int*>(data) = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
      return true;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
      *static_cast<int*>(data) = info.kind == powertrain::emu::detail::AllocKind::kDevice ? 1 : 0;
      return true;
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
      *static_cast<int*>(data) = 0;
      return true;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      *static_cast<CUmemoryPool*>(data) = nullptr;
      return true;
    default:
      return false;
  }
}

// The size of an attribute's value, for the zero cuPointerGetAttributes writes for memory that
// is not CUDA's.
std::size_t attribute_bytes(CUpointer_attribute attribute) {
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      return 8;
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS:
      return sizeof(CUDA_POINTER_ATTRIBUTE_P2P_TOKENS);
    default:
      return 4;
  }
}

}  // namespace

PT_EXPORT CUresult cuPointerGetAttributes(unsigned int count, CUpointer_attribute* attributes,
                                          void** data, CUdeviceptr pointer) {
  if (count == 0 || attributes == nullptr || data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const detail::PointerInfo info = detail::lookup_pointer(as_pointer(pointer));
  for (unsigned i = 0; i < count; ++i) {
    if (data[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
    // Memory that is not CUDA's reads as zeros (memory type 0: not a CUDA pointer), without
    // an error, as the driver documents.
    if (!info.known) {
      std::memset(data[i], 0, attribute_bytes(attributes[i]));
      if (attributes[i] == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) *static_cast<int*>(data[i]) = -2;
      continue;
    }
    if (extra_attribute(attributes[i], info, data[i])) continue;
    if (const CUresult r = cuPointerGetAttribute(data[i], attributes[i], pointer);
        r != CUDA_SUCCESS) {
      return r;
    }
  }
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuPointerSetAttribute(const void* value, CUpointer_attribute attribute,
                                         CUdeviceptr pointer) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const detail::PointerInfo info = detail::lookup_pointer(as_pointer(pointer));
  if (!info.known || !info.device_side) {
    powertrain::emu::report_misuse(
        "cuPointerSetAttribute", "not device memory: " + detail::pointer_text(as_pointer(pointer)));
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (attribute != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS) {
    return CUDA_ERROR_INVALID_VALUE;  // the only settable attribute
  }
  std::lock_guard<std::mutex> lock(g_sync_memops_mutex);
  if (*static_cast<const int*>(value) != 0) {
    g_sync_memops.insert(info.base);
  } else {
    g_sync_memops.erase(info.base);
  }
  return CUDA_SUCCESS;
}

// ---- streams
// -------------------------------------------------------------------------------------

PT_EXPORT CUresult cuStreamAddCallback(CUstream stream, CUstreamCallback callback, void* user,
                                       unsigned int flags) {
  ErrorScope scope;
  return to_driver(impl::stream_add_callback(stream,
                                             reinterpret_cast<cudaStreamCallback_t>(callback), user,
                                             flags, false, "cuStreamAddCallback"));
}

PT_EXPORT CUresult cuStreamAddCallback_ptsz(CUstream stream, CUstreamCallback callback, void* user,
                                            unsigned int flags) {
  ErrorScope scope;
  return to_driver(impl::stream_add_callback(stream,
                                             reinterpret_cast<cudaStreamCallback_t>(callback), user,
                                             flags, true, "cuStreamAddCallback_ptsz"));
}

PT_EXPORT CUresult cuStreamGetAttribute(CUstream stream, CUstreamAttrID attribute,
                                        CUstreamAttrValue* value) {
  ErrorScope scope;
  return to_driver(cudaStreamGetAttribute(stream, static_cast<cudaStreamAttrID>(attribute),
                                          reinterpret_cast<cudaStreamAttrValue*>(value)));
}

PT_EXPORT CUresult cuStreamGetAttribute_ptsz(CUstream stream, CUstreamAttrID attribute,
                                             CUstreamAttrValue* value) {
  return cuStreamGetAttribute(per_thread(stream), attribute, value);
}

PT_EXPORT CUresult cuStreamSetAttribute(CUstream stream, CUstreamAttrID attribute,
                                        const CUstreamAttrValue* value) {
  ErrorScope scope;
  return to_driver(cudaStreamSetAttribute(stream, static_cast<cudaStreamAttrID>(attribute),
                                          reinterpret_cast<const cudaStreamAttrValue*>(value)));
}

PT_EXPORT CUresult cuStreamSetAttribute_ptsz(CUstream stream, CUstreamAttrID attribute,
                                             const CUstreamAttrValue* value) {
  return cuStreamSetAttribute(per_thread(stream), attribute, value);
}

PT_EXPORT CUresult cuStreamCopyAttributes(CUstream destination, CUstream source) {
  ErrorScope scope;
  return to_driver(cudaStreamCopyAttributes(destination, source));
}

PT_EXPORT CUresult cuStreamCopyAttributes_ptsz(CUstream destination, CUstream source) {
  return cuStreamCopyAttributes(per_thread(destination), per_thread(source));
}

PT_EXPORT CUresult cuStreamGetDevice(CUstream stream, CUdevice* device) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ErrorScope scope;
  return to_driver(impl::stream_get_device(stream, device, false, "cuStreamGetDevice"));
}

PT_EXPORT CUresult cuStreamGetDevice_ptsz(CUstream stream, CUdevice* device) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ErrorScope scope;
  return to_driver(impl::stream_get_device(stream, device, true, "cuStreamGetDevice_ptsz"));
}

// ---- contexts and devices
// ------------------------------------------------------------------------

PT_EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags) {
  const int device = detail::driver_context_device(peer);
  if (device < 0) return CUDA_ERROR_INVALID_CONTEXT;
  ErrorScope scope;
  return to_driver(cudaDeviceEnablePeerAccess(device, flags));
}

PT_EXPORT CUresult cuCtxDisablePeerAccess(CUcontext peer) {
  const int device = detail::driver_context_device(peer);
  if (device < 0) return CUDA_ERROR_INVALID_CONTEXT;
  ErrorScope scope;
  return to_driver(cudaDeviceDisablePeerAccess(device));
}

PT_EXPORT CUresult cuCtxGetCacheConfig(CUfunc_cache* config) {
  ErrorScope scope;
  return to_driver(cudaDeviceGetCacheConfig(reinterpret_cast<cudaFuncCache*>(config)));
}

PT_EXPORT CUresult cuCtxSetCacheConfig(CUfunc_cache config) {
  ErrorScope scope;
  return to_driver(cudaDeviceSetCacheConfig(static_cast<cudaFuncCache>(config)));
}

PT_EXPORT CUresult cuCtxGetSharedMemConfig(CUsharedconfig* config) {
  ErrorScope scope;
  return to_driver(cudaDeviceGetSharedMemConfig(reinterpret_cast<cudaSharedMemConfig*>(config)));
}

PT_EXPORT CUresult cuCtxSetSharedMemConfig(CUsharedconfig config) {
  ErrorScope scope;
  return to_driver(cudaDeviceSetSharedMemConfig(static_cast<cudaSharedMemConfig>(config)));
}

PT_EXPORT CUresult cuCtxResetPersistingL2Cache() {
  ErrorScope scope;
  return to_driver(cudaCtxResetPersistingL2Cache());
}

PT_EXPORT CUresult cuDeviceGetP2PAttribute(int* value, CUdevice_P2PAttribute attribute,
                                           CUdevice source, CUdevice destination) {
  ErrorScope scope;
  return to_driver(cudaDeviceGetP2PAttribute(value, static_cast<cudaDeviceP2PAttr>(attribute),
                                             source, destination));
}

PT_EXPORT CUresult cuDeviceGetByPCIBusId(CUdevice* device, const char* bus_id) {
  ErrorScope scope;
  return to_driver(cudaDeviceGetByPCIBusId(device, bus_id));
}

PT_EXPORT CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attribute,
                                                void* value) {
  ErrorScope scope;
  return to_driver(cudaDeviceGetGraphMemAttribute(
      device, static_cast<cudaGraphMemAttributeType>(attribute), value));
}

PT_EXPORT CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attribute,
                                                void* value) {
  ErrorScope scope;
  return to_driver(cudaDeviceSetGraphMemAttribute(
      device, static_cast<cudaGraphMemAttributeType>(attribute), value));
}

PT_EXPORT CUresult cuDeviceGraphMemTrim(CUdevice device) {
  ErrorScope scope;
  return to_driver(cudaDeviceGraphMemTrim(device));
}

// ---- functions and occupancy
// ---------------------------------------------------------------------

PT_EXPORT CUresult cuFuncSetSharedMemConfig(CUfunction function, CUsharedconfig config) {
  ErrorScope scope;
  return to_driver(cudaFuncSetSharedMemConfig(reinterpret_cast<const void*>(function),
                                              static_cast<cudaSharedMemConfig>(config)));
}

PT_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int* blocks, CUfunction function, int block_size, size_t dynamic_shared, unsigned int flags) {
  ErrorScope scope;
  return to_driver(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
      blocks, reinterpret_cast<const void*>(function), block_size, dynamic_shared, flags));
}

PT_EXPORT CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t* dynamic_shared,
                                                           CUfunction function, int blocks,
                                                           int block_size) {
  ErrorScope scope;
  return to_driver(cudaOccupancyAvailableDynamicSMemPerBlock(
      dynamic_shared, reinterpret_cast<const void*>(function), blocks, block_size));
}

// The block size with the most resident warps per SM (the largest on ties) and the grid that
// fills the device with it, by the search cudaOccupancyMaxPotentialBlockSize's header template
// does: every multiple of the warp size up to the kernel's and the caller's limit.
PT_EXPORT CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(
    int* min_grid, int* block_size, CUfunction function, CUoccupancyB2DSize shared_for_block,
    size_t dynamic_shared, int block_size_limit, unsigned int flags) {
  if (min_grid == nullptr || block_size == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int max_threads = 0;
  if (const CUresult r =
          cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function);
      r != CUDA_SUCCESS) {
    return r;
  }
  CUdevice device = 0;
  int sms = 0;
  int warp = 32;
  if (cuCtxGetDevice(&device) != CUDA_SUCCESS ||
      cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device) !=
          CUDA_SUCCESS ||
      cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, device) != CUDA_SUCCESS) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  const int limit = block_size_limit > 0 ? std::min(block_size_limit, max_threads) : max_threads;
  int best_block = 0;
  int best_blocks_per_sm = 0;
  int best_warps = -1;
  for (int candidate = (limit / warp) * warp; candidate > 0; candidate -= warp) {
    const size_t shared =
        shared_for_block != nullptr ? shared_for_block(candidate) : dynamic_shared;
    int blocks = 0;
    if (const CUresult r = cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
            &blocks, function, candidate, shared, flags);
        r != CUDA_SUCCESS) {
      return r;
    }
    const int warps = blocks * (candidate / warp);
    if (warps > best_warps) {
      best_warps = warps;
      best_block = candidate;
      best_blocks_per_sm = blocks;
    }
  }
  *block_size = best_block;
  *min_grid = best_blocks_per_sm * sms;
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuOccupancyMaxPotentialBlockSize(int* min_grid, int* block_size,
                                                    CUfunction function,
                                                    CUoccupancyB2DSize shared_for_block,
                                                    size_t dynamic_shared, int block_size_limit) {
  return cuOccupancyMaxPotentialBlockSizeWithFlags(min_grid, block_size, function, shared_for_block,
                                                   dynamic_shared, block_size_limit,
                                                   CU_OCCUPANCY_DEFAULT);
}

namespace {
// A driver launch configuration as the runtime's (CUlaunchAttribute and cudaLaunchAttribute
// share their layout and ids).
cudaLaunchConfig_t runtime_config(const CUlaunchConfig& c) {
  cudaLaunchConfig_t out{};
  out.gridDim = dim3(c.gridDimX, c.gridDimY, c.gridDimZ);
  out.blockDim = dim3(c.blockDimX, c.blockDimY, c.blockDimZ);
  out.dynamicSmemBytes = c.sharedMemBytes;
  out.stream = c.hStream;
  out.attrs = reinterpret_cast<cudaLaunchAttribute*>(c.attrs);
  out.numAttrs = c.numAttrs;
  return out;
}
}  // namespace

PT_EXPORT CUresult cuOccupancyMaxActiveClusters(int* clusters, CUfunction function,
                                                const CUlaunchConfig* config) {
  if (config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ErrorScope scope;
  const cudaLaunchConfig_t c = runtime_config(*config);
  return to_driver(
      cudaOccupancyMaxActiveClusters(clusters, reinterpret_cast<const void*>(function), &c));
}

PT_EXPORT CUresult cuOccupancyMaxPotentialClusterSize(int* cluster_size, CUfunction function,
                                                      const CUlaunchConfig* config) {
  if (config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ErrorScope scope;
  const cudaLaunchConfig_t c = runtime_config(*config);
  return to_driver(cudaOccupancyMaxPotentialClusterSize(
      cluster_size, reinterpret_cast<const void*>(function), &c));
}

// ---- the CUDA 12 forms of renamed functions
// --------------------------------------------------------

#undef cuMemPrefetchAsync
#undef cuMemAdvise
PT_EXPORT CUresult cuMemPrefetchAsync(CUdeviceptr pointer, size_t bytes, CUdevice device,
                                      CUstream stream) {
  return prefetch(pointer, bytes, device_location(device), stream, "cuMemPrefetchAsync");
}

PT_EXPORT CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr pointer, size_t bytes, CUdevice device,
                                           CUstream stream) {
  return cuMemPrefetchAsync(pointer, bytes, device, per_thread(stream));
}

PT_EXPORT CUresult cuMemAdvise(CUdeviceptr pointer, size_t bytes, CUmem_advise advice,
                               CUdevice device) {
  return advise(pointer, bytes, advice, device_location(device));
}

// ---- the driver's twins of CUDA 12.x/13 runtime queries (cudart_device.cc) -------------------

PT_EXPORT CUresult cuDeviceGetHostAtomicCapabilities(unsigned int* capabilities,
                                                     const CUatomicOperation* operations,
                                                     unsigned int count, CUdevice dev) {
  ErrorScope scope;
  return to_driver(cudaDeviceGetHostAtomicCapabilities(
      capabilities, reinterpret_cast<const cudaAtomicOperation*>(operations), count, dev));
}

PT_EXPORT CUresult cuDeviceGetP2PAtomicCapabilities(unsigned int* capabilities,
                                                    const CUatomicOperation* operations,
                                                    unsigned int count, CUdevice srcDevice,
                                                    CUdevice dstDevice) {
  ErrorScope scope;
  return to_driver(cudaDeviceGetP2PAtomicCapabilities(
      capabilities, reinterpret_cast<const cudaAtomicOperation*>(operations), count, srcDevice,
      dstDevice));
}

// 2^28 elements for any array format of 1, 2 or 4 channels (as the runtime's form answers).
PT_EXPORT CUresult cuDeviceGetTexture1DLinearMaxWidth(size_t* maxWidthInElements,
                                                      CUarray_format format, unsigned numChannels,
                                                      CUdevice dev) {
  if (maxWidthInElements == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!detail::valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  const bool known_format =
      (format >= CU_AD_FORMAT_UNSIGNED_INT8 && format <= CU_AD_FORMAT_SIGNED_INT32) ||
      format == CU_AD_FORMAT_HALF || format == CU_AD_FORMAT_FLOAT;
  if (!known_format || (numChannels != 1 && numChannels != 2 && numChannels != 4)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *maxWidthInElements = std::size_t{1} << 28;
  return CUDA_SUCCESS;
}

PT_EXPORT CUresult cuDeviceRegisterAsyncNotification(CUdevice device, CUasyncCallback callbackFunc,
                                                     void* userData,
                                                     CUasyncCallbackHandle* callback) {
  ErrorScope scope;  // the callback is kept and never called, as the runtime's form
  return to_driver(cudaDeviceRegisterAsyncNotification(
      device, reinterpret_cast<cudaAsyncCallback>(callbackFunc), userData,
      reinterpret_cast<cudaAsyncCallbackHandle_t*>(callback)));
}

PT_EXPORT CUresult cuDeviceUnregisterAsyncNotification(CUdevice device,
                                                       CUasyncCallbackHandle callback) {
  ErrorScope scope;
  return to_driver(cudaDeviceUnregisterAsyncNotification(
      device, reinterpret_cast<cudaAsyncCallbackHandle_t>(callback)));
}

PT_EXPORT CUresult cuFlushGPUDirectRDMAWrites(CUflushGPUDirectRDMAWritesTarget target,
                                              CUflushGPUDirectRDMAWritesScope scope_of_flush) {
  ErrorScope scope;
  return to_driver(cudaDeviceFlushGPUDirectRDMAWrites(
      static_cast<cudaFlushGPUDirectRDMAWritesTarget>(target),
      static_cast<cudaFlushGPUDirectRDMAWritesScope>(scope_of_flush)));
}

// A hint, like cuFuncSetCacheConfig: checked and kept nowhere (the device model has no L1
// split).
PT_EXPORT CUresult cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev) {
  if (!detail::valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  return cuFuncSetCacheConfig(reinterpret_cast<CUfunction>(kernel), config);
}
