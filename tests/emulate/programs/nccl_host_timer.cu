// nccl-tests' timing, reproduced: all_reduce_perf -g 8 in one process (ncclCommInitAll), per
// size one warm-up, then kIters grouped all-reduces timed with a host clock (std::chrono) and
// waited for as nccl-tests' testStreamSynchronize does — a loop polling cudaStreamQuery on every
// device's stream (and ncclCommGetAsyncError while not ready), yielding when idle. Prints
// "size B time_us T algbw A busbw B" with nccl-tests' definitions (algbw = size / time,
// busbw = algbw × 2(n−1)/n). Under `emulate --two-pass` the waits are paced to the prediction.
// Valid CUDA/NCCL: the same binary runs on a real 8-GPU machine.
#include <sched.h>

#include <chrono>
#include <vector>

#include "emu_check.h"
#include "nccl_program_util.h"

constexpr int kIters = 20;

// nccl-tests' testStreamSynchronize (common.cu), without its timeout.
static void stream_synchronize(const std::vector<cudaStream_t>& streams,
                               const std::vector<ncclComm_t>& comms) {
  std::vector<bool> done(streams.size(), false);
  std::size_t remaining = streams.size();
  while (remaining > 0) {
    bool idle = true;
    for (std::size_t i = 0; i < streams.size(); ++i) {
      if (done[i]) continue;
      const cudaError_t status = cudaStreamQuery(streams[i]);
      if (status == cudaSuccess) {
        done[i] = true;
        --remaining;
        idle = false;
        continue;
      }
      if (status != cudaErrorNotReady) EMU_CHECK(status);
      ncclResult_t async = ncclSuccess;
      NCCL_CHECK(ncclCommGetAsyncError(comms[i], &async));
      NCCL_CHECK(async);
    }
    if (idle) sched_yield();
  }
}

int main() {
  const int ndev = 8;
  const size_t sizes[] = {8, size_t{1} << 20, size_t{256} << 20};
  const SingleProcessDevices devices = init_all_devices(ndev, sizes[2], cudaStreamNonBlocking);
  for (const size_t bytes : sizes) {
    all_reduce_all(devices, bytes);
    stream_synchronize(devices.streams, devices.comms);
    const auto start = std::chrono::steady_clock::now();
    for (int it = 0; it < kIters; ++it) all_reduce_all(devices, bytes);
    stream_synchronize(devices.streams, devices.comms);
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count() /
        kIters;
    print_bandwidth(bytes, us, ndev);
  }
  destroy_all_devices(devices);
  return 0;
}
