// Times its work with a host clock, as nccl-tests' *_perf and many CUDA samples do (std::chrono
// around the launches and the wait, no CUDA events). Per mode and iteration: start the clock,
// 4 launches of a kernel on a stream, wait, stop the clock, print "MODE iteration I host_us X
// polls N". Modes: "query" waits as nccl-tests' testStreamSynchronize does (poll cudaStreamQuery
// until it stops answering cudaErrorNotReady), "stream" with cudaStreamSynchronize, "device" with
// cudaDeviceSynchronize. Under a single emulated pass the times are this machine's host time (µs);
// under `emulate --two-pass` the second pass paces these waits to the predicted schedule, so the
// printed times are the prediction. Valid CUDA: the same binary runs on a real GPU.
#include <chrono>
#include <cstring>

#include "emu_check.h"

__global__ void spin(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.5f + 1.0f;
}

int main() {
  const int n = 1 << 20;
  float* x = nullptr;
  EMU_CHECK(cudaMalloc(&x, n * sizeof(float)));
  cudaStream_t s;
  EMU_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (const char* mode : {"query", "stream", "device"}) {
    for (int it = 0; it < 3; ++it) {
      const auto start = std::chrono::steady_clock::now();
      for (int k = 0; k < 4; ++k) spin<<<n / 256, 256, 0, s>>>(x, n);
      long long polls = 0;
      if (std::strcmp(mode, "query") == 0) {
        cudaError_t status;
        while ((status = cudaStreamQuery(s)) == cudaErrorNotReady) ++polls;
        EMU_CHECK(status);
      } else if (std::strcmp(mode, "stream") == 0) {
        EMU_CHECK(cudaStreamSynchronize(s));
      } else {
        EMU_CHECK(cudaDeviceSynchronize());
      }
      const double us =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
              .count();
      std::printf("%s iteration %d host_us %.1f polls %lld\n", mode, it, us, polls);
    }
  }
  // "Not ready" is an answer, not an error: the last error stays clear.
  EMU_CHECK(cudaGetLastError());
  EMU_CHECK(cudaStreamDestroy(s));
  EMU_CHECK(cudaFree(x));
  return 0;
}
