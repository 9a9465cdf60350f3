// Waits for its work by polling an event, as benchmarks and spin-waiting host loops do: per
// iteration, one launch of a kernel, cudaEventRecord, then `while (cudaEventQuery(done) ==
// cudaErrorNotReady) ++polls;`, printed as "iteration I polls N". Then the same after
// cudaEventSynchronize (nothing left to poll: "after sync polls N"). On a real GPU the counts
// depend on the machine; under `emulate --two-pass` the second pass answers "not ready" while the
// modelled host clock is before the predicted completion (one answer per 2 µs poll), under a
// single pass every query answers "ready" at once. Valid CUDA: the same binary runs on a real GPU.
#include "emu_check.h"

__global__ void spin(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.5f + 1.0f;
}

// Polls until the event is reached; any other answer than "not ready" or success fails.
static long long poll(cudaEvent_t event) {
  long long polls = 0;
  cudaError_t status;
  while ((status = cudaEventQuery(event)) == cudaErrorNotReady) ++polls;
  EMU_CHECK(status);
  return polls;
}

int main() {
  const int n = 1 << 20;
  float* x = nullptr;
  EMU_CHECK(cudaMalloc(&x, n * sizeof(float)));
  cudaStream_t s;
  EMU_CHECK(cudaStreamCreate(&s));
  cudaEvent_t done;
  EMU_CHECK(cudaEventCreate(&done));
  for (int it = 0; it < 3; ++it) {
    spin<<<n / 256, 256, 0, s>>>(x, n);
    EMU_CHECK(cudaEventRecord(done, s));
    const long long polls = poll(done);
    std::printf("iteration %d polls %lld\n", it, polls);
  }
  // "Not ready" is an answer, not an error: the last error stays clear.
  EMU_CHECK(cudaGetLastError());
  spin<<<n / 256, 256, 0, s>>>(x, n);
  EMU_CHECK(cudaEventRecord(done, s));
  EMU_CHECK(cudaEventSynchronize(done));
  std::printf("after sync polls %lld\n", poll(done));
  EMU_CHECK(cudaEventDestroy(done));
  EMU_CHECK(cudaStreamDestroy(s));
  EMU_CHECK(cudaFree(x));
  return 0;
}
