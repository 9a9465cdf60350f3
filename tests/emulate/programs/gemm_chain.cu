// A chain of 8 naive 512x512x512 SGEMMs on one stream, each consuming the previous result
// (C1 = A·B, C2 = C1·B, ...), launched through the three launch paths: <<<>>> (CUDA 13:
// __cudaLaunchKernel), cudaLaunchKernel and cudaLaunchKernelExC; timed with events. The grid is
// 32x32 blocks of 16x16 threads (one thread per output element).
#include "emu_check.h"

constexpr int kN = 512;
constexpr int kTile = 16;
constexpr int kChain = 8;

__global__ void sgemm_naive(const float* a, const float* b, float* c, int n) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= n || col >= n) return;
  float sum = 0.0f;
  for (int k = 0; k < n; ++k) sum += a[row * n + k] * b[k * n + col];
  c[row * n + col] = sum;
}

int main() {
  const size_t bytes = size_t{kN} * kN * sizeof(float);
  float* buffers[3];
  for (float*& p : buffers) EMU_CHECK(cudaMalloc(&p, bytes));
  float* b = buffers[2];
  cudaStream_t stream = nullptr;
  EMU_CHECK(cudaStreamCreate(&stream));
  cudaEvent_t start = nullptr, stop = nullptr;
  EMU_CHECK(cudaEventCreate(&start));
  EMU_CHECK(cudaEventCreate(&stop));

  const dim3 grid(kN / kTile, kN / kTile);
  const dim3 block(kTile, kTile);
  EMU_CHECK(cudaEventRecord(start, stream));
  for (int i = 0; i < kChain; ++i) {
    const float* in = buffers[i % 2];
    float* out = buffers[(i + 1) % 2];
    int n = kN;
    if (i < kChain - 2) {
      sgemm_naive<<<grid, block, 0, stream>>>(in, b, out, n);
      EMU_CHECK(cudaGetLastError());
    } else if (i == kChain - 2) {
      void* args[] = {&in, &b, &out, &n};
      EMU_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(sgemm_naive), grid, block, args, 0,
                                 stream));
    } else {
      void* args[] = {&in, &b, &out, &n};
      cudaLaunchConfig_t config = {};
      config.gridDim = grid;
      config.blockDim = block;
      config.stream = stream;
      EMU_CHECK(cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(sgemm_naive), args));
    }
  }
  EMU_CHECK(cudaEventRecord(stop, stream));
  EMU_CHECK(cudaEventSynchronize(stop));
  float ms = -1.0f;
  EMU_CHECK(cudaEventElapsedTime(&ms, start, stop));
  EMU_REQUIRE(ms >= 0.0f);
  std::printf("gemm_chain ok: %d SGEMMs of %d^3 (%.3f ms between the events)\n", kChain, kN, ms);

  EMU_CHECK(cudaEventDestroy(start));
  EMU_CHECK(cudaEventDestroy(stop));
  EMU_CHECK(cudaStreamDestroy(stream));
  for (float* p : buffers) EMU_CHECK(cudaFree(p));
  return 0;
}
