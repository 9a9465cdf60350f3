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
  int visible = 0;
  EMU_CHECK(cudaGetDeviceCount(&visible));
  if (visible < ndev) {
    std::fprintf(stderr, "needs %d devices, %d visible\n", ndev, visible);
    return 1;
  }
  std::vector<ncclComm_t> comms(ndev);
  NCCL_CHECK(ncclCommInitAll(comms.data(), ndev, nullptr));
  const size_t sizes[] = {8, size_t{1} << 20, size_t{256} << 20};
  const size_t max_bytes = sizes[2];
  std::vector<cudaStream_t> streams(ndev);
  std::vector<float*> bufs(ndev);
  for (int i = 0; i < ndev; ++i) {
    EMU_CHECK(cudaSetDevice(i));
    EMU_CHECK(cudaStreamCreate(&streams[i]));
    EMU_CHECK(cudaMalloc(&bufs[i], max_bytes));
  }
  EMU_CHECK(cudaSetDevice(0));
  cudaEvent_t start, stop;
  EMU_CHECK(cudaEventCreate(&start));
  EMU_CHECK(cudaEventCreate(&stop));
  const auto all_reduce = [&](size_t bytes) {
    NCCL_CHECK(ncclGroupStart());
    for (int i = 0; i < ndev; ++i) {
      NCCL_CHECK(ncclAllReduce(bufs[i], bufs[i], bytes / sizeof(float), ncclFloat32, ncclSum,
                               comms[i], streams[i]));
    }
    NCCL_CHECK(ncclGroupEnd());
  };
  for (const size_t bytes : sizes) {
    all_reduce(bytes);
    for (int i = 0; i < ndev; ++i) EMU_CHECK(cudaStreamSynchronize(streams[i]));
    EMU_CHECK(cudaEventRecord(start, streams[0]));
    for (int it = 0; it < kIters; ++it) all_reduce(bytes);
    EMU_CHECK(cudaEventRecord(stop, streams[0]));
    EMU_CHECK(cudaEventSynchronize(stop));
    for (int i = 0; i < ndev; ++i) EMU_CHECK(cudaStreamSynchronize(streams[i]));
    float ms = 0.0f;
    EMU_CHECK(cudaEventElapsedTime(&ms, start, stop));
    const double us = ms * 1e3 / kIters;
    const double algbw = static_cast<double>(bytes) / (us * 1e-6) / 1e9;
    std::printf("size %zu time_us %.2f algbw %.2f busbw %.2f\n", bytes, us, algbw,
                algbw * 2.0 * (ndev - 1) / ndev);
  }
  for (int i = 0; i < ndev; ++i) {
    EMU_CHECK(cudaSetDevice(i));
    EMU_CHECK(cudaFree(bufs[i]));
    NCCL_CHECK(ncclCommDestroy(comms[i]));
  }
  return 0;
}
