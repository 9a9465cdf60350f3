// Batched copies and memory-pool selection as serving engines use them: cudaMemcpyBatchAsync
// moving KV-cache blocks host → device and device → device in one call (two attribute groups),
// CUDA 13's batched prefetch and discard hints, and a created pool made the device's current pool
// so that cudaMallocAsync draws from it (cudaDeviceSetMemPool / cudaMemGetMemPool).
// Valid CUDA: the same binary runs on a real GPU.
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "emu_check.h"

int main() {
  constexpr size_t kBlock = 64 * 1024;
  constexpr int kBlocks = 4;
  cudaStream_t stream;
  EMU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<std::vector<float>> host(kBlocks, std::vector<float>(kBlock / sizeof(float)));
  for (int b = 0; b < kBlocks; ++b) {
    for (float& f : host[b]) f = static_cast<float>(b + 1);
  }
  void* device = nullptr;
  EMU_CHECK(cudaMalloc(&device, kBlock * kBlocks));
  void* mirror = nullptr;
  EMU_CHECK(cudaMalloc(&mirror, kBlock * kBlocks));

  // Three blocks in from the host, then the first block copied on the device, in one batch with
  // two attribute groups (the host sources may be read during the call; the device copy in
  // stream order).
  void* dsts[4];
  const void* srcs[4];
  size_t sizes[4];
  for (int b = 0; b < 3; ++b) {
    dsts[b] = static_cast<char*>(device) + b * kBlock;
    srcs[b] = host[b].data();
    sizes[b] = kBlock;
  }
  dsts[3] = mirror;
  srcs[3] = device;
  sizes[3] = kBlock;
  cudaMemcpyAttributes attrs[2] = {};
  attrs[0].srcAccessOrder = cudaMemcpySrcAccessOrderDuringApiCall;
  attrs[0].srcLocHint.type = cudaMemLocationTypeHost;
  attrs[0].dstLocHint.type = cudaMemLocationTypeDevice;
  attrs[1].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  attrs[1].srcLocHint.type = cudaMemLocationTypeDevice;
  attrs[1].dstLocHint.type = cudaMemLocationTypeDevice;
  size_t attr_indices[2] = {0, 3};
  EMU_CHECK(cudaMemcpyBatchAsync(dsts, srcs, sizes, 4, attrs, attr_indices, 2, stream));
  // The legacy default stream cannot take a batch.
  EMU_REQUIRE(cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, attrs, attr_indices, 1, nullptr) ==
              cudaErrorInvalidValue);
  cudaGetLastError();
  EMU_CHECK(cudaStreamSynchronize(stream));
  std::vector<float> back(kBlock / sizeof(float));
  EMU_CHECK(cudaMemcpy(back.data(), static_cast<char*>(device) + 2 * kBlock, kBlock,
                       cudaMemcpyDeviceToHost));
  for (float f : back) EMU_REQUIRE(f == 3.0f);
  EMU_CHECK(cudaMemcpy(back.data(), mirror, kBlock, cudaMemcpyDeviceToHost));
  for (float f : back) EMU_REQUIRE(f == 1.0f);

  // Batched placement hints on the blocks.
  void* hinted[2] = {device, mirror};
  size_t hinted_sizes[2] = {kBlock, kBlock};
  cudaMemLocation to_device = {};
  to_device.type = cudaMemLocationTypeDevice;
  size_t location_indices[1] = {0};
  EMU_CHECK(cudaMemPrefetchBatchAsync(hinted, hinted_sizes, 2, &to_device, location_indices, 1, 0,
                                      stream));
  EMU_CHECK(cudaMemDiscardBatchAsync(hinted + 1, hinted_sizes + 1, 1, 0, stream));

  // A pool of our own as the device's current pool: cudaMallocAsync allocates from it.
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t pool, current, default_pool;
  EMU_CHECK(cudaMemPoolCreate(&pool, &props));
  EMU_CHECK(cudaDeviceGetDefaultMemPool(&default_pool, 0));
  EMU_CHECK(cudaDeviceSetMemPool(0, pool));
  cudaMemLocation location = {};
  location.type = cudaMemLocationTypeDevice;
  location.id = 0;
  EMU_CHECK(cudaMemGetMemPool(&current, &location, cudaMemAllocationTypePinned));
  EMU_REQUIRE(current == pool);
  void* from_pool = nullptr;
  EMU_CHECK(cudaMallocAsync(&from_pool, 3 << 20, stream));
  size_t used = 0;
  EMU_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  EMU_REQUIRE(used >= (3u << 20));
  EMU_CHECK(cudaFreeAsync(from_pool, stream));
  EMU_CHECK(cudaStreamSynchronize(stream));
  // Destroying the current pool makes the default pool current again.
  EMU_CHECK(cudaMemPoolDestroy(pool));
  EMU_CHECK(cudaDeviceGetMemPool(&current, 0));
  EMU_REQUIRE(current == default_pool);

  EMU_CHECK(cudaFree(mirror));
  EMU_CHECK(cudaFree(device));
  EMU_CHECK(cudaStreamDestroy(stream));
  std::printf("batch_copies: 4 copies in one batch, 3 MiB from the current pool\n");
  return 0;
}
