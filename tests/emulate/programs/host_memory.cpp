// A host-only C++ program (no device code; nvcc -cudart shared compiles it with the host
// compiler) that calls the runtime: it must not be taken for a static-runtime program. Checks
// the memory figures of a fresh device: cudaMemGetInfo's free is below the total by what the
// context holds, pinned host memory is bounded (10 TB of cudaMallocHost fails with
// cudaErrorMemoryAllocation), and a pinned buffer that fits really is host memory.
#include <cstring>

#include "emu_check.h"

int main() {
  size_t free_bytes = 0, total = 0;
  EMU_CHECK(cudaMemGetInfo(&free_bytes, &total));
  EMU_REQUIRE(free_bytes < total);
  std::printf("fresh device: %zu of %zu bytes free (%zu held by the context)\n", free_bytes, total,
              total - free_bytes);

  void* huge = nullptr;
  const size_t ten_tb = size_t{10} * 1000 * 1000 * 1000 * 1000;
  EMU_EXPECT_ERROR(cudaMallocHost(&huge, ten_tb), cudaErrorMemoryAllocation);
  EMU_EXPECT_ERROR(cudaGetLastError(), cudaErrorMemoryAllocation);
  EMU_EXPECT_ERROR(cudaHostAlloc(&huge, ten_tb, cudaHostAllocDefault), cudaErrorMemoryAllocation);
  (void)cudaGetLastError();

  void* pinned = nullptr;
  EMU_CHECK(cudaMallocHost(&pinned, 1 << 20));
  std::memset(pinned, 7, 1 << 20);  // real host memory
  EMU_CHECK(cudaFreeHost(pinned));

  void* device = nullptr;
  EMU_CHECK(cudaMalloc(&device, 1 << 20));
  size_t free_now = 0;
  EMU_CHECK(cudaMemGetInfo(&free_now, &total));
  EMU_REQUIRE(free_bytes - free_now == (1u << 20));
  EMU_CHECK(cudaFree(device));
  std::printf("pinned 10 TB refused: out of memory\n");
  return 0;
}
