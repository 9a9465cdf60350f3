// An all_reduce_perf-style benchmark in one process driving 8 GPUs (ncclCommInitAll): per size,
// one warm-up, then kIters grouped all-reduces (one per device) timed with CUDA events on device
// 0's stream; prints "size B time_us T algbw A busbw B" with nccl-tests' definitions (algbw =
// size / time, busbw = algbw × 2(n−1)/n). Under `emulate --two-pass` the table is the prediction.
// Valid CUDA/NCCL: the same binary runs on a real 8-GPU machine.
#include <vector>

#include "emu_check.h"
#include "nccl_program_util.h"

constexpr int kIters = 5;

int main() {
  const int ndev = 8;
  const size_t sizes[] = {8, size_t{1} << 20, size_t{256} << 20};
  const SingleProcessDevices devices = init_all_devices(ndev, sizes[2], cudaStreamDefault);
  EMU_CHECK(cudaSetDevice(0));
  cudaEvent_t start, stop;
  EMU_CHECK(cudaEventCreate(&start));
  EMU_CHECK(cudaEventCreate(&stop));
  for (const size_t bytes : sizes) {
    all_reduce_all(devices, bytes);
    for (int i = 0; i < ndev; ++i) EMU_CHECK(cudaStreamSynchronize(devices.streams[i]));
    EMU_CHECK(cudaEventRecord(start, devices.streams[0]));
    for (int it = 0; it < kIters; ++it) all_reduce_all(devices, bytes);
    EMU_CHECK(cudaEventRecord(stop, devices.streams[0]));
    EMU_CHECK(cudaEventSynchronize(stop));
    for (int i = 0; i < ndev; ++i) EMU_CHECK(cudaStreamSynchronize(devices.streams[i]));
    float ms = 0.0f;
    EMU_CHECK(cudaEventElapsedTime(&ms, start, stop));
    print_bandwidth(bytes, ms * 1e3 / kIters, ndev);
  }
  destroy_all_devices(devices);
  return 0;
}
