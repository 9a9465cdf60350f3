// Allocates 3 GiB blocks until the device is full. The failing cudaMalloc must return
// cudaErrorMemoryAllocation and set the last error; cudaMemGetInfo must agree with what was
// allocated before and after; a small allocation still fits afterwards; everything is freed.
// Exits 0 when the out-of-memory was reported properly (as on a real GPU).
#include "emu_check.h"

int main() {
  constexpr size_t kChunk = size_t{3} << 30;
  size_t free_before = 0, total = 0;
  EMU_CHECK(cudaMemGetInfo(&free_before, &total));
  EMU_REQUIRE(free_before <= total && total > 0);

  void* blocks[1024];
  int count = 0;
  cudaError_t error = cudaSuccess;
  while (count < 1024) {
    error = cudaMalloc(&blocks[count], kChunk);
    if (error != cudaSuccess) break;
    ++count;
    size_t free_now = 0;
    EMU_CHECK(cudaMemGetInfo(&free_now, &total));
    EMU_REQUIRE(free_now == free_before - count * kChunk);
  }
  EMU_REQUIRE(count < 1024);
  EMU_EXPECT_ERROR(error, cudaErrorMemoryAllocation);
  EMU_EXPECT_ERROR(cudaPeekAtLastError(), cudaErrorMemoryAllocation);
  EMU_EXPECT_ERROR(cudaGetLastError(), cudaErrorMemoryAllocation);
  EMU_CHECK(cudaGetLastError());  // reading it cleared it
  size_t free_full = 0;
  EMU_CHECK(cudaMemGetInfo(&free_full, &total));
  EMU_REQUIRE(free_full < kChunk);
  std::printf("out of memory after %d allocations of 3 GiB (%zu of %zu bytes free): %s\n", count,
              free_full, total, cudaGetErrorString(error));

  void* small = nullptr;
  EMU_CHECK(cudaMalloc(&small, 1 << 20));
  EMU_CHECK(cudaFree(small));
  for (int i = 0; i < count; ++i) EMU_CHECK(cudaFree(blocks[i]));
  size_t free_after = 0;
  EMU_CHECK(cudaMemGetInfo(&free_after, &total));
  EMU_REQUIRE(free_after == free_before);
  return 0;
}
