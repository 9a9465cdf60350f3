// The driver API's forms of runtime calls, as JAX/XLA, CuPy, Numba and CUDA-aware MPI make them:
// managed memory with advice and prefetch, pitched and registered host memory, pointer
// attributes (one at a time and in bulk, also for memory that is not CUDA's), memory pools,
// stream callbacks and attributes, occupancy (also of thread-block clusters), cache
// configuration, the runtime's deprecated cudaThread* calls and CUDA 12.x names, and peer access
// between two
// devices' contexts (run with 2 devices).
// Valid CUDA: the same binary runs on a real GPU.
#include <cuda.h>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "emu_driver_check.h"

const char* kPtx = R"(
.version 8.0
.target sm_90
.address_size 64

.visible .entry stencil(
	.param .u64 stencil_param_0,
	.param .u32 stencil_param_1
)
{
	ret;
}
)";

// CUDA 12-only runtime names (CUDA 13's libcudart no longer has them; programs built with 12.x
// call them): the location-based prefetch and advice of 12.2–12.9, and CUDA 3's thread-named
// device calls. Looked up at run time, so the program also runs on a CUDA 13 runtime.
using PrefetchV2 = cudaError_t (*)(const void*, size_t, cudaMemLocation, unsigned, cudaStream_t);
using AdviseV2 = cudaError_t (*)(const void*, size_t, cudaMemoryAdvise, cudaMemLocation);
using ThreadSetLimit = cudaError_t (*)(cudaLimit, size_t);
using ThreadGetLimit = cudaError_t (*)(size_t*, cudaLimit);
using ThreadSynchronize = cudaError_t (*)();

template <typename F>
F runtime_function(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

void CUDA_CB on_done(CUstream, CUresult status, void* user) {
  *static_cast<int*>(user) = status == CUDA_SUCCESS ? 1 : -1;
}

int main() {
  CU_CHECK(cuInit(0));
  int devices = 0;
  CU_CHECK(cuDeviceGetCount(&devices));
  EMU_REQUIRE(devices >= 2);
  CUdevice device, peer;
  CU_CHECK(cuDeviceGet(&device, 0));
  CU_CHECK(cuDeviceGet(&peer, 1));
  CUcontext ctx, peer_ctx;
  CU_CHECK(cuDevicePrimaryCtxRetain(&ctx, device));
  CU_CHECK(cuDevicePrimaryCtxRetain(&peer_ctx, peer));
  CU_CHECK(cuCtxSetCurrent(ctx));
  CUstream stream;
  CU_CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

  // Managed memory: advice, prefetch, and its pointer attributes in one call.
  const size_t managed_bytes = 1 << 20;
  CUdeviceptr managed;
  CU_CHECK(cuMemAllocManaged(&managed, managed_bytes, CU_MEM_ATTACH_GLOBAL));
  CUmemLocation on_device = {};
  on_device.type = CU_MEM_LOCATION_TYPE_DEVICE;
  on_device.id = device;
  CU_CHECK(cuMemAdvise(managed, managed_bytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, on_device));
  CU_CHECK(cuMemPrefetchAsync(managed, managed_bytes, on_device, 0, stream));
  CUpointer_attribute attributes[] = {
      CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
      CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
      CU_POINTER_ATTRIBUTE_BUFFER_ID};
  unsigned memory_type = 99;
  int is_managed = -1, ordinal = -1;
  size_t range = 0;
  unsigned long long buffer_id = 0;
  void* values[] = {&memory_type, &is_managed, &ordinal, &range, &buffer_id};
  CU_CHECK(cuPointerGetAttributes(5, attributes, values, managed + 4096));
  EMU_REQUIRE(memory_type == CU_MEMORYTYPE_DEVICE && is_managed == 1 && ordinal == 0);
  EMU_REQUIRE(range == managed_bytes && buffer_id != 0);
  // Memory that is not CUDA's: zeros and ordinal -2, no error (as CUDA-aware MPI relies on).
  std::vector<char> plain(4096);
  CU_CHECK(
      cuPointerGetAttributes(5, attributes, values, reinterpret_cast<CUdeviceptr>(plain.data())));
  EMU_REQUIRE(memory_type == 0 && is_managed == 0 && ordinal == -2 && buffer_id == 0);

  // Pitched memory; an element size the driver does not take is refused.
  CUdeviceptr pitched;
  size_t pitch = 0;
  CU_CHECK(cuMemAllocPitch(&pitched, &pitch, 1000, 64, 4));
  EMU_REQUIRE(pitch >= 1000);
  CUdeviceptr refused;
  EMU_REQUIRE(cuMemAllocPitch(&refused, &pitch, 1000, 64, 3) == CUDA_ERROR_INVALID_VALUE);
  int sync_memops = 1;
  CU_CHECK(cuPointerSetAttribute(&sync_memops, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, pitched));
  sync_memops = 0;
  CUpointer_attribute sync_attribute = CU_POINTER_ATTRIBUTE_SYNC_MEMOPS;
  void* sync_value = &sync_memops;
  CU_CHECK(cuPointerGetAttributes(1, &sync_attribute, &sync_value, pitched));
  EMU_REQUIRE(sync_memops == 1);

  // Registered host memory, mapped, used as the source of a copy.
  const size_t host_bytes = 64 << 10;
  void* host = std::aligned_alloc(4096, host_bytes);
  std::memset(host, 7, host_bytes);
  CU_CHECK(cuMemHostRegister(host, host_bytes, CU_MEMHOSTREGISTER_DEVICEMAP));
  unsigned host_flags = 0;
  CU_CHECK(cuMemHostGetFlags(&host_flags, host));
  EMU_REQUIRE((host_flags & CU_MEMHOSTALLOC_DEVICEMAP) != 0);
  CUdeviceptr host_mapped;
  CU_CHECK(cuMemHostGetDevicePointer(&host_mapped, host, 0));
  CU_CHECK(cuMemcpyHtoDAsync(pitched, host, host_bytes / 4, stream));
  CU_CHECK(cuStreamSynchronize(stream));
  CU_CHECK(cuMemHostUnregister(host));
  std::free(host);

  // Memory pools: the device's default pool and a created one, allocated from on the stream.
  CUmemoryPool default_pool;
  CU_CHECK(cuDeviceGetDefaultMemPool(&default_pool, device));
  cuuint64_t threshold = 64 << 20;
  CU_CHECK(cuMemPoolSetAttribute(default_pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
  CUmemPoolProps props = {};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = device;
  CUmemoryPool pool;
  CU_CHECK(cuMemPoolCreate(&pool, &props));
  CUdeviceptr from_pool;
  CU_CHECK(cuMemAllocFromPoolAsync(&from_pool, 3 << 20, pool, stream));
  cuuint64_t used = 0;
  CU_CHECK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
  EMU_REQUIRE(used == (3u << 20));
  CU_CHECK(cuMemsetD8Async(from_pool, 0, 3 << 20, stream));
  CU_CHECK(cuMemFreeAsync(from_pool, stream));
  CU_CHECK(cuStreamSynchronize(stream));
  CU_CHECK(cuMemPoolTrimTo(pool, 0));
  CU_CHECK(cuMemPoolDestroy(pool));

  // Stream callbacks and attributes.
  int called = 0;
  CU_CHECK(cuStreamAddCallback(stream, on_done, &called, 0));
  CU_CHECK(cuStreamSynchronize(stream));
  EMU_REQUIRE(called == 1);
  CUstreamAttrValue priority = {};
  priority.priority = 0;
  CU_CHECK(cuStreamSetAttribute(stream, CU_LAUNCH_ATTRIBUTE_PRIORITY, &priority));
  CU_CHECK(cuStreamGetAttribute(stream, CU_LAUNCH_ATTRIBUTE_PRIORITY, &priority));
  CU_CHECK(cuStreamCopyAttributes(stream, nullptr));
  CUdevice stream_device = -1;
  CU_CHECK(cuStreamGetDevice(stream, &stream_device));
  EMU_REQUIRE(stream_device == device);

  // Occupancy of a module kernel, then a launch with the suggested shape.
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, kPtx));
  CUfunction stencil;
  CU_CHECK(cuModuleGetFunction(&stencil, module, "stencil"));
  int min_grid = 0, block = 0;
  CU_CHECK(cuOccupancyMaxPotentialBlockSize(&min_grid, &block, stencil, nullptr, 0, 512));
  int sms = 0;
  CU_CHECK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device));
  EMU_REQUIRE(block > 0 && block <= 512 && block % 32 == 0 && min_grid >= sms);
  size_t dynamic_shared = 0;
  CU_CHECK(cuOccupancyAvailableDynamicSMemPerBlock(&dynamic_shared, stencil, 2, block));
  EMU_REQUIRE(dynamic_shared > 0);
  CU_CHECK(cuCtxSetCacheConfig(CU_FUNC_CACHE_PREFER_SHARED));
  CUfunc_cache cache;
  CU_CHECK(cuCtxGetCacheConfig(&cache));
  // Thread-block clusters of 2 blocks of 128 threads.
  CUlaunchAttribute cluster = {};
  cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  cluster.value.clusterDim.x = 2;
  cluster.value.clusterDim.y = 1;
  cluster.value.clusterDim.z = 1;
  CUlaunchConfig cluster_config = {};
  cluster_config.gridDimX = 64;
  cluster_config.gridDimY = cluster_config.gridDimZ = 1;
  cluster_config.blockDimX = 128;
  cluster_config.blockDimY = cluster_config.blockDimZ = 1;
  cluster_config.attrs = &cluster;
  cluster_config.numAttrs = 1;
  int blocks_per_sm = 0, clusters = 0, cluster_size = 0;
  CU_CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, stencil, 128, 0));
  CU_CHECK(cuOccupancyMaxActiveClusters(&clusters, stencil, &cluster_config));
  EMU_REQUIRE(clusters == sms * blocks_per_sm / 2);
  CU_CHECK(cuOccupancyMaxPotentialClusterSize(&cluster_size, stencil, &cluster_config));
  EMU_REQUIRE(cluster_size == 8);
  int n = 1 << 20;
  void* args[] = {&managed, &n};
  CU_CHECK(cuLaunchKernel(stencil, min_grid, 1, 1, block, 1, 1, 0, stream, args, nullptr));
  CU_CHECK(cuStreamSynchronize(stream));

  // Peer access from device 0's context to device 1's.
  int can_access = 0;
  CU_CHECK(
      cuDeviceGetP2PAttribute(&can_access, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, device, peer));
  EMU_REQUIRE(can_access == 1);
  CU_CHECK(cuCtxEnablePeerAccess(peer_ctx, 0));
  EMU_REQUIRE(cuCtxEnablePeerAccess(peer_ctx, 0) == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
  CU_CHECK(cuCtxDisablePeerAccess(peer_ctx));

  // The CUDA 12-only runtime calls, where the runtime has them (the emulator's does).
  const auto set_limit = runtime_function<ThreadSetLimit>("cudaThreadSetLimit");
  const auto get_limit = runtime_function<ThreadGetLimit>("cudaThreadGetLimit");
  const auto thread_sync = runtime_function<ThreadSynchronize>("cudaThreadSynchronize");
  const auto advise = runtime_function<AdviseV2>("cudaMemAdvise_v2");
  const auto prefetch = runtime_function<PrefetchV2>("cudaMemPrefetchAsync_v2");
  int legacy_calls = 0;
  if (set_limit != nullptr && get_limit != nullptr && thread_sync != nullptr && advise != nullptr &&
      prefetch != nullptr) {
    size_t stack = 0;
    EMU_CHECK(set_limit(cudaLimitStackSize, 4096));
    EMU_CHECK(get_limit(&stack, cudaLimitStackSize));
    EMU_REQUIRE(stack == 4096);
    cudaMemLocation runtime_device = {};
    runtime_device.type = cudaMemLocationTypeDevice;
    runtime_device.id = device;
    EMU_CHECK(advise(reinterpret_cast<void*>(managed), managed_bytes, cudaMemAdviseSetReadMostly,
                     runtime_device));
    EMU_CHECK(prefetch(reinterpret_cast<void*>(managed), managed_bytes, runtime_device, 0, stream));
    EMU_CHECK(thread_sync());
    legacy_calls = 5;
  }

  CU_CHECK(cuModuleUnload(module));
  CU_CHECK(cuMemFree(pitched));
  CU_CHECK(cuMemFree(managed));
  CU_CHECK(cuStreamDestroy(stream));
  std::printf("driver_memory_streams: pitch %zu, block %d x grid %d, %d CUDA 12-only calls\n",
              pitch, block, min_grid, legacy_calls);
  return 0;
}
