// Four host threads, each with its own stream and event, launch 20000 kernels concurrently and
// record an event every 1000 launches (84000+ records: the trace is written in several chunks
// while the threads run). Checks that the interposer loses nothing and keeps ids unique under
// contention.
#include <thread>
#include <vector>

#include "emu_check.h"

constexpr int kThreads = 4;
constexpr int kLaunches = 20000;

__global__ void step(float* x, int i) {
  if (threadIdx.x == 0 && x != nullptr) x[0] = static_cast<float>(i);
}

static void worker() {
  cudaStream_t stream = nullptr;
  cudaEvent_t event = nullptr;
  EMU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  EMU_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  for (int i = 0; i < kLaunches; ++i) {
    step<<<1, 32, 0, stream>>>(nullptr, i);
    if (i % 1000 == 999) EMU_CHECK(cudaEventRecord(event, stream));
  }
  EMU_CHECK(cudaGetLastError());
  EMU_CHECK(cudaStreamSynchronize(stream));
  EMU_CHECK(cudaEventDestroy(event));
  EMU_CHECK(cudaStreamDestroy(stream));
}

int main() {
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();
  std::printf("concurrent_launch ok: %d threads x %d launches\n", kThreads, kLaunches);
  return 0;
}
