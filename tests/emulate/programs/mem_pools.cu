// The memory-pool calls of NVIDIA's streamOrderedAllocation / streamOrderedAllocationP2P samples,
// on 2 devices (POWERTRAIN_EMU_DEVICES=2): the default pool's release threshold, a pool created
// on device 1 with cudaMemPoolCreate, peer access to it with cudaMemPoolSetAccess, a
// cudaMallocFromPoolAsync on a device-0 stream (the memory is on the pool's device), the pool's
// used/high counters and their reset, and the refused misuses. Prints one summary line.
// Valid CUDA: the same binary runs on a real machine with two GPUs.
#include <cstdint>

#include "emu_check.h"

__global__ void touch(char* p, size_t n) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) p[i] = 1;
}

int main() {
  int devices = 0;
  EMU_CHECK(cudaGetDeviceCount(&devices));
  EMU_REQUIRE(devices >= 2);
  EMU_CHECK(cudaSetDevice(0));
  cudaStream_t stream;
  EMU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  // streamOrderedAllocation: keep freed memory in the default pool.
  cudaMemPool_t default_pool;
  EMU_CHECK(cudaDeviceGetDefaultMemPool(&default_pool, 0));
  std::uint64_t threshold = UINT64_MAX;
  EMU_CHECK(cudaMemPoolSetAttribute(default_pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  std::uint64_t threshold_read = 0;
  EMU_CHECK(
      cudaMemPoolGetAttribute(default_pool, cudaMemPoolAttrReleaseThreshold, &threshold_read));
  int follow = -1;
  EMU_CHECK(
      cudaMemPoolGetAttribute(default_pool, cudaMemPoolReuseFollowEventDependencies, &follow));
  void* from_default = nullptr;
  EMU_CHECK(cudaMallocAsync(&from_default, 4096, stream));

  // A pool of its own on device 1, readable and writable from device 0.
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 1;
  cudaMemPool_t pool;
  EMU_CHECK(cudaMemPoolCreate(&pool, &props));
  cudaMemAccessDesc access = {};
  access.location.type = cudaMemLocationTypeDevice;
  access.location.id = 0;
  access.flags = cudaMemAccessFlagsProtReadWrite;
  EMU_CHECK(cudaMemPoolSetAccess(pool, &access, 1));
  cudaMemAccessFlags peer_flags = cudaMemAccessFlagsProtNone;
  cudaMemLocation where = {};
  where.type = cudaMemLocationTypeDevice;
  where.id = 0;
  EMU_CHECK(cudaMemPoolGetAccess(&peer_flags, pool, &where));
  cudaMemAccessFlags own_flags = cudaMemAccessFlagsProtNone;
  where.id = 1;
  EMU_CHECK(cudaMemPoolGetAccess(&own_flags, pool, &where));

  const size_t bytes = size_t{1} << 20;
  char* p = nullptr;
  EMU_CHECK(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&p), bytes, pool, stream));
  touch<<<static_cast<unsigned>(bytes / 256), 256, 0, stream>>>(p, bytes);
  cudaPointerAttributes attributes;
  EMU_CHECK(cudaPointerGetAttributes(&attributes, p));
  std::uint64_t used = 0, high = 0, reserved = 0;
  EMU_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  EMU_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
  EMU_CHECK(cudaFreeAsync(p, stream));
  EMU_CHECK(cudaStreamSynchronize(stream));
  std::uint64_t used_after = 1;
  EMU_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used_after));
  EMU_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high));
  std::uint64_t zero = 0;
  EMU_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero));
  std::uint64_t high_after_reset = 1;
  EMU_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high_after_reset));
  EMU_CHECK(cudaMemPoolTrimTo(pool, 0));

  // Misuse the runtime refuses: the owner's own access cannot be dropped, a default pool cannot
  // be destroyed, a destroyed pool cannot allocate.
  access.location.id = 1;
  access.flags = cudaMemAccessFlagsProtNone;
  EMU_EXPECT_ERROR(cudaMemPoolSetAccess(pool, &access, 1), cudaErrorInvalidValue);
  EMU_EXPECT_ERROR(cudaMemPoolDestroy(default_pool), cudaErrorInvalidValue);
  EMU_CHECK(cudaMemPoolDestroy(pool));
  void* after_destroy = nullptr;
  EMU_EXPECT_ERROR(cudaMallocFromPoolAsync(&after_destroy, 64, pool, stream),
                   cudaErrorInvalidValue);
  (void)cudaGetLastError();

  EMU_CHECK(cudaFreeAsync(from_default, stream));
  EMU_CHECK(cudaStreamSynchronize(stream));
  EMU_CHECK(cudaStreamDestroy(stream));
  std::printf(
      "mem_pools: threshold_max %d follow %d peer_rw %d own_rw %d device %d used %llu "
      "reserved %llu after_free %llu high %llu high_after_reset %llu\n",
      threshold_read == UINT64_MAX, follow, peer_flags == cudaMemAccessFlagsProtReadWrite,
      own_flags == cudaMemAccessFlagsProtReadWrite, attributes.device,
      static_cast<unsigned long long>(used), static_cast<unsigned long long>(reserved),
      static_cast<unsigned long long>(used_after), static_cast<unsigned long long>(high),
      static_cast<unsigned long long>(high_after_reset));
  return 0;
}
