// Times its own work with CUDA events and prints it, as benchmarks do: per iteration, event
// `start`, kLaunches launches of a memory-bound kernel, event `stop`, cudaEventSynchronize and
// cudaEventElapsedTime, printed as "iteration I elapsed_us X". argv[1] (optional): microseconds of
// busy host work between two launches (the program's own host time, e.g. to test that
// `emulate --host-time model` ignores it). Under `emulate --two-pass` the printed times are the
// prediction; on a real GPU they are measured. Valid CUDA: the same binary runs on a real GPU.
#include <chrono>
#include <cstdlib>

#include "emu_check.h"

__global__ void scale(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 1.0001f;
}

void busy_us(double us) {
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::duration<double, std::micro>(us);
  while (std::chrono::steady_clock::now() < until) {
  }
}

constexpr int kLaunches = 4;
constexpr int kIterations = 4;  // the first is a warm-up on real GPUs

int main(int argc, char** argv) {
  const double host_us = argc > 1 ? std::atof(argv[1]) : 0.0;
  const int n = 1 << 24;  // 64 MB of floats
  float* x = nullptr;
  EMU_CHECK(cudaMalloc(&x, n * sizeof(float)));
  cudaStream_t s;
  EMU_CHECK(cudaStreamCreate(&s));
  cudaEvent_t start, stop;
  EMU_CHECK(cudaEventCreate(&start));
  EMU_CHECK(cudaEventCreate(&stop));
  for (int it = 0; it < kIterations; ++it) {
    EMU_CHECK(cudaEventRecord(start, s));
    for (int k = 0; k < kLaunches; ++k) {
      if (host_us > 0.0) busy_us(host_us);
      scale<<<n / 256, 256, 0, s>>>(x, n);
    }
    EMU_CHECK(cudaGetLastError());
    EMU_CHECK(cudaEventRecord(stop, s));
    EMU_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    EMU_CHECK(cudaEventElapsedTime(&ms, start, stop));
    std::printf("iteration %d elapsed_us %.3f\n", it, ms * 1e3);
  }
  EMU_CHECK(cudaEventDestroy(start));
  EMU_CHECK(cudaEventDestroy(stop));
  EMU_CHECK(cudaStreamDestroy(s));
  EMU_CHECK(cudaFree(x));
  return 0;
}
