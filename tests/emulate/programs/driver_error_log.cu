// CUDA's error log (cudaLogs* / cuLogs*, CUDA 12.9+): the emulator's misuse and unsupported
// reports reach registered callbacks (on a delivery thread of the emulator's, so the program waits
// for them) and the dump calls, through the runtime and the driver.
#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "emu_check.h"
#include "emu_driver_check.h"

namespace {

std::mutex g_mutex;  // the callbacks run on another thread
std::vector<std::string> g_runtime_messages;
int g_driver_calls = 0;
void* g_device_memory = nullptr;

void CUDART_CB on_runtime_log(void* data, cudaLogLevel level, char* message, size_t length) {
  EMU_REQUIRE(data == &g_runtime_messages);
  EMU_REQUIRE(level == cudaLogLevelError);
  EMU_REQUIRE(std::strlen(message) == length);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_runtime_messages.emplace_back(message, length);
}

// Misuses the API itself: its own message is logged but does not call it again.
void CUDA_CB on_driver_log(void* /*data*/, CUlogLevel /*level*/, char* /*message*/,
                           size_t /*length*/) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    ++g_driver_calls;
  }
  cudaMemLocation device0 = {};
  device0.type = cudaMemLocationTypeDevice;
  EMU_REQUIRE(cudaMemAdvise(g_device_memory, 64, cudaMemAdviseSetReadMostly, device0) ==
              cudaErrorInvalidValue);
}

// Waits (up to 10 s) until the runtime callback has seen `messages` and the driver callback
// `driver_calls`; returns the runtime messages.
std::vector<std::string> wait_for(size_t messages, int driver_calls) {
  for (int i = 0; i < 10000; ++i) {
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      if (g_runtime_messages.size() >= messages && g_driver_calls >= driver_calls) {
        return g_runtime_messages;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::fprintf(stderr, "callbacks not called within 10 s\n");
  std::exit(1);
}

bool contains(const std::string& text, const char* part) {
  return text.find(part) != std::string::npos;
}

// A call the emulator refuses as misuse: advice on memory that is not managed.
void misuse_once() {
  cudaMemLocation device0 = {};
  device0.type = cudaMemLocationTypeDevice;
  EMU_REQUIRE(cudaMemAdvise(g_device_memory, 4096, cudaMemAdviseSetReadMostly, device0) ==
              cudaErrorInvalidValue);
  cudaGetLastError();
}

}  // namespace

int main() {
  EMU_CHECK(cudaMalloc(&g_device_memory, 4096));
  cudaLogsCallbackHandle runtime_handle = nullptr;
  EMU_CHECK(cudaLogsRegisterCallback(on_runtime_log, &g_runtime_messages, &runtime_handle));
  cudaLogIterator iterator = 0;
  EMU_CHECK(cudaLogsCurrent(&iterator, 0));

  // A misuse and an unsupported call: both logged, both seen by the callback.
  misuse_once();
  cudaExternalMemory_t external = nullptr;
  cudaExternalMemoryHandleDesc external_desc = {};
  external_desc.type = cudaExternalMemoryHandleTypeOpaqueFd;
  external_desc.size = 4096;
  EMU_REQUIRE(cudaImportExternalMemory(&external, &external_desc) != cudaSuccess);
  cudaGetLastError();
  std::vector<std::string> seen = wait_for(2, 0);
  EMU_REQUIRE(seen.size() == 2);
  EMU_REQUIRE(contains(seen[0], "cudaMemAdvise: "));
  EMU_REQUIRE(contains(seen[0], "is not inside managed memory"));
  EMU_REQUIRE(contains(seen[1], "cudaImportExternalMemory is not supported"));

  // Both messages from the iterator on, newline after each; the iterator moves past them.
  char buffer[4096];
  size_t size = sizeof buffer;
  EMU_CHECK(cudaLogsDumpToMemory(&iterator, buffer, &size, 0));
  const std::string dumped(buffer);
  EMU_REQUIRE(size == dumped.size());
  EMU_REQUIRE(dumped == seen[0] + "\n" + seen[1] + "\n");
  size = sizeof buffer;
  EMU_CHECK(cudaLogsDumpToMemory(&iterator, buffer, &size, 0));
  EMU_REQUIRE(size == 0 && buffer[0] == '\0');

  // Three more; a buffer with room for one keeps the newest after a notice; none fits in 8 bytes.
  for (int i = 0; i < 3; ++i) misuse_once();
  const std::string newest = wait_for(5, 0).back() + "\n";
  size = newest.size() + 100;
  cudaLogIterator from_small = iterator;
  EMU_CHECK(cudaLogsDumpToMemory(&from_small, buffer, &size, 0));
  const std::string small(buffer);
  EMU_REQUIRE(size == small.size());
  EMU_REQUIRE(contains(small, "did not all fit"));
  EMU_REQUIRE(small.size() >= newest.size() &&
              small.compare(small.size() - newest.size(), newest.size(), newest) == 0);
  // None fits in 8 bytes: refused, and the iterator stays where it was (a retry with a larger
  // buffer reads the same messages).
  size = 8;
  cudaLogIterator from_tiny = iterator;
  EMU_REQUIRE(cudaLogsDumpToMemory(&from_tiny, buffer, &size, 0) == cudaErrorInvalidValue);
  EMU_REQUIRE(size == 0);
  EMU_REQUIRE(from_tiny == iterator);
  cudaGetLastError();
  size = sizeof buffer;
  EMU_CHECK(cudaLogsDumpToMemory(&from_tiny, buffer, &size, 0));
  EMU_REQUIRE(std::count(buffer, buffer + size, '\n') == 4);  // 3 misuses and the refusal

  // The whole log to a file (a NULL iterator dumps everything kept).
  char path[] = "/tmp/powertrain-error-log-XXXXXX";
  const int fd = mkstemp(path);
  EMU_REQUIRE(fd >= 0);
  close(fd);
  EMU_CHECK(cudaLogsDumpToFile(nullptr, path, 0));
  std::ifstream file(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(file, line);) lines.push_back(line);
  std::remove(path);
  // 1 + 3 misuses, the unsupported call, and the 8-byte dump's own refusal.
  EMU_REQUIRE(lines.size() == 6);
  EMU_REQUIRE(contains(lines[5], "cudaLogsDumpToMemory: size 8 holds no log message"));

  // The runtime callback unregistered: nothing more reaches it. The driver's callback is called
  // once per message, not again for the message its own misuse logs.
  const size_t runtime_seen = wait_for(6, 0).size();
  EMU_CHECK(cudaLogsUnregisterCallback(runtime_handle));
  EMU_REQUIRE(cudaLogsUnregisterCallback(runtime_handle) == cudaErrorInvalidValue);
  cudaGetLastError();
  CU_CHECK(cuInit(0));
  CUlogsCallbackHandle driver_handle = nullptr;
  CU_CHECK(cuLogsRegisterCallback(on_driver_log, nullptr, &driver_handle));
  CUlogIterator driver_iterator = 0;
  CU_CHECK(cuLogsCurrent(&driver_iterator, 0));
  misuse_once();
  wait_for(runtime_seen, 1);
  // The callback's own misuse is logged once the callback ran; it does not call it again.
  for (int i = 0; i < 10000; ++i) {
    size = sizeof buffer;
    cudaLogIterator peek = driver_iterator;
    CU_CHECK(cuLogsDumpToMemory(&peek, buffer, &size, 0));
    if (std::count(buffer, buffer + size, '\n') == 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EMU_REQUIRE(std::count(buffer, buffer + size, '\n') == 2);  // the misuse and the callback's
  CU_CHECK(cuLogsUnregisterCallback(driver_handle));
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    EMU_REQUIRE(g_driver_calls == 1);
    EMU_REQUIRE(g_runtime_messages.size() == runtime_seen);
  }
  EMU_REQUIRE(cuLogsUnregisterCallback(driver_handle) == CUDA_ERROR_INVALID_VALUE);
  EMU_REQUIRE(cuLogsCurrent(&driver_iterator, 1) == CUDA_ERROR_INVALID_VALUE);

  EMU_CHECK(cudaFree(g_device_memory));
  std::printf("driver_error_log: %zu messages to the runtime callback, %d to the driver's\n",
              runtime_seen, 1);
  return 0;
}
