// bandwidthTest's timing, small: copies host→device (96 MiB), device→host (4 MiB; from pageable
// memory with blocking cudaMemcpy, as bandwidthTest's pageable path; from pinned memory with
// cudaMemcpyAsync) and device→device (96 MiB), each measured with a host clock (std::chrono) and
// with events around the same copies (record start, 2 copies, record stop, cudaEventSynchronize).
// Prints "MEMORY DIRECTION iteration I host_us X event_us Y". Under one emulated pass the host
// times are this machine's (the copies take no device time); under `emulate --two-pass` the
// events report the predicted device times and the blocking copies and the event waits return on
// the paced predicted schedule, so the host clock measures the prediction too.
// 96 MiB is above the emulator's backed limit (64 MiB): the device buffers are address space only,
// so host→device and device→device copies move no bytes here; a device→host copy fills the host
// buffer with zeros (real work, hence only 4 MiB). Valid CUDA on a real GPU.
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "emu_check.h"

int main() {
  const size_t bytes = size_t{96} << 20;
  void* device_a = nullptr;
  void* device_b = nullptr;
  EMU_CHECK(cudaMalloc(&device_a, bytes));
  EMU_CHECK(cudaMalloc(&device_b, bytes));
  void* pageable = std::malloc(bytes);
  EMU_REQUIRE(pageable != nullptr);
  void* pinned = nullptr;
  EMU_CHECK(cudaMallocHost(&pinned, bytes));
  cudaEvent_t start, stop;
  EMU_CHECK(cudaEventCreate(&start));
  // bandwidthTest's events use blocking sync: the same wait for the emulator.
  EMU_CHECK(cudaEventCreateWithFlags(&stop, cudaEventBlockingSync));

  struct Case {
    const char* memory;
    const char* direction;
    void* dst;
    const void* src;
    cudaMemcpyKind kind;
    bool async;
    size_t bytes;
  };
  const size_t small = size_t{4} << 20;
  const Case cases[] = {
      {"pageable", "h2d", device_a, pageable, cudaMemcpyHostToDevice, false, bytes},
      {"pageable", "d2h", pageable, device_a, cudaMemcpyDeviceToHost, false, small},
      {"pinned", "h2d", device_a, pinned, cudaMemcpyHostToDevice, true, bytes},
      {"pinned", "d2h", pinned, device_a, cudaMemcpyDeviceToHost, true, small},
      {"device", "d2d", device_b, device_a, cudaMemcpyDeviceToDevice, false, bytes},
  };
  for (const Case& c : cases) {
    for (int it = 0; it < 2; ++it) {
      const auto t0 = std::chrono::steady_clock::now();
      EMU_CHECK(cudaEventRecord(start, 0));
      for (int k = 0; k < 2; ++k) {
        if (c.async) {
          EMU_CHECK(cudaMemcpyAsync(c.dst, c.src, c.bytes, c.kind, 0));
        } else {
          EMU_CHECK(cudaMemcpy(c.dst, c.src, c.bytes, c.kind));
        }
      }
      EMU_CHECK(cudaEventRecord(stop, 0));
      EMU_CHECK(cudaEventSynchronize(stop));
      const double host_us =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      float event_ms = 0;
      EMU_CHECK(cudaEventElapsedTime(&event_ms, start, stop));
      std::printf("%s %s iteration %d host_us %.1f event_us %.3f\n", c.memory, c.direction, it,
                  host_us, event_ms * 1000.0);
    }
  }
  EMU_CHECK(cudaEventDestroy(start));
  EMU_CHECK(cudaEventDestroy(stop));
  EMU_CHECK(cudaFreeHost(pinned));
  std::free(pageable);
  EMU_CHECK(cudaFree(device_b));
  EMU_CHECK(cudaFree(device_a));
  return 0;
}
