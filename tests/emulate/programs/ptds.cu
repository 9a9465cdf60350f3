// nvcc-flags: --default-stream per-thread
// Built with --default-stream per-thread: the NULL stream is each host thread's own default
// stream and the runtime calls are the *_ptds / *_ptsz entry points. Two threads each launch two
// kernels and a copy round trip on their default stream; then the main thread uses the legacy
// default stream explicitly (cudaStreamLegacy).
#include <cstring>
#include <thread>

#include "emu_check.h"

__global__ void fill(int* x, int n, int value) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = value;
}

static void worker(int id) {
  int* d = nullptr;
  EMU_CHECK(cudaMalloc(&d, 1024 * sizeof(int)));
  fill<<<4, 256>>>(d, 1024, id);
  fill<<<8, 128>>>(d, 1024, id + 1);
  EMU_CHECK(cudaGetLastError());
  int sent[16], received[16];
  for (int i = 0; i < 16; ++i) sent[i] = id * 100 + i;
  EMU_CHECK(cudaMemcpyAsync(d, sent, sizeof sent, cudaMemcpyHostToDevice, nullptr));
  EMU_CHECK(cudaStreamSynchronize(nullptr));
  EMU_CHECK(cudaMemcpy(received, d, sizeof received, cudaMemcpyDeviceToHost));
  EMU_REQUIRE(std::memcmp(sent, received, sizeof sent) == 0);
  EMU_CHECK(cudaFree(d));
}

int main() {
  // Sequential threads: thread indexes (and so per-thread stream ids) are deterministic.
  std::thread first(worker, 1);
  first.join();
  std::thread second(worker, 2);
  second.join();
  int* d = nullptr;
  EMU_CHECK(cudaMalloc(&d, 256 * sizeof(int)));
  fill<<<1, 256, 0, cudaStreamLegacy>>>(d, 256, 7);
  EMU_CHECK(cudaGetLastError());
  EMU_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  EMU_CHECK(cudaFree(d));
  std::printf("ptds ok\n");
  return 0;
}
