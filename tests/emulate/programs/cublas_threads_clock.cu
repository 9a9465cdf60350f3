// Two host threads and the emulator's clock: thread A runs cuBLAS GEMMs that the emulator
// computes on the host (time it takes out of the trace clock), while thread B keeps launching
// kernels and then records an event; only after B has recorded it (an atomic handshake) does A
// wait on the event. In the trace, A's wait must not carry an earlier time than B's record, or
// the predictor (which orders records by time) would lose the dependency. Valid CUDA: the same
// binary runs on a real GPU.
#include <cublas_v2.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "emu_check.h"

__global__ void touch(float* p) {
  if (p != nullptr) p[threadIdx.x] += 1.0f;
}

int main() {
  EMU_CHECK(cudaFree(nullptr));
  cudaStream_t stream_a = nullptr, stream_b = nullptr;
  EMU_CHECK(cudaStreamCreate(&stream_a));
  EMU_CHECK(cudaStreamCreate(&stream_b));
  cudaEvent_t event = nullptr;
  EMU_CHECK(cudaEventCreate(&event));
  const int n = 640;  // 5.2e8 FLOPs per GEMM: computed on the host, under the per-call bound
  const std::vector<double> ones(static_cast<size_t>(n) * n, 1.0);
  double *a = nullptr, *b = nullptr, *c = nullptr;
  for (double** p : {&a, &b, &c}) EMU_CHECK(cudaMalloc(p, sizeof(double) * n * n));
  EMU_CHECK(cudaMemcpy(a, ones.data(), sizeof(double) * n * n, cudaMemcpyHostToDevice));
  EMU_CHECK(cudaMemcpy(b, ones.data(), sizeof(double) * n * n, cudaMemcpyHostToDevice));
  cublasHandle_t handle = nullptr;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return 1;
  if (cublasSetStream(handle, stream_a) != CUBLAS_STATUS_SUCCESS) return 1;

  std::atomic<bool> started{false}, a_done{false}, b_recorded{false};
  int launches = 0;
  std::thread thread_b([&] {
    EMU_CHECK(cudaSetDevice(0));
    while (!started.load()) std::this_thread::yield();
    while (!a_done.load()) {
      touch<<<1, 32, 0, stream_b>>>(nullptr);
      ++launches;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EMU_CHECK(cudaEventRecord(event, stream_b));
    b_recorded.store(true);
  });
  const double alpha = 1.0, beta = 0.0;
  started.store(true);
  for (int i = 0; i < 3; ++i) {
    if (cublasDgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, n, b, n, &beta, c, n) !=
        CUBLAS_STATUS_SUCCESS) {
      return 1;
    }
  }
  a_done.store(true);
  while (!b_recorded.load()) std::this_thread::yield();
  EMU_CHECK(cudaStreamWaitEvent(stream_a, event, 0));  // after B's record, in real time
  touch<<<1, 32, 0, stream_a>>>(nullptr);
  EMU_CHECK(cudaStreamSynchronize(stream_a));
  thread_b.join();
  double c0 = 0;
  EMU_CHECK(cudaMemcpy(&c0, c, sizeof c0, cudaMemcpyDeviceToHost));
  std::printf("cublas_threads_clock: C[0] = %.0f, thread B launched %s\n", c0,
              launches > 0 ? "during the GEMMs" : "nothing");
  cublasDestroy(handle);
  for (double* p : {a, b, c}) EMU_CHECK(cudaFree(p));
  return 0;
}
