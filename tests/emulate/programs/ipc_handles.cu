// simpleIPC's calls: a device buffer and an interprocess event exported with cudaIpcGetMemHandle
// and cudaIpcGetEventHandle, opened (1) in the exporting process, (2) in a forked child (which
// still has the buffer at that address), (3) in a fresh process (this program run again with
// "open HEX"), which sees a stand-in of the same size; each closes what it opened. Misuse the
// runtime refuses: exporting an event without cudaEventInterprocess, closing a pointer never
// opened. Prints "ipc: ..." lines per process. Valid CUDA on a real GPU except that the runtime
// refuses handles opened in their own process (step 1 is the emulator's convenience).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "emu_check.h"

__global__ void fill(int* p, int n, int v) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = v;
}

namespace {
std::string to_hex(const void* data, size_t bytes) {
  std::string out;
  char two[3];
  for (size_t i = 0; i < bytes; ++i) {
    std::snprintf(two, sizeof two, "%02x", static_cast<const unsigned char*>(data)[i]);
    out += two;
  }
  return out;
}

bool from_hex(const char* text, void* data, size_t bytes) {
  if (std::strlen(text) != 2 * bytes) return false;
  for (size_t i = 0; i < bytes; ++i) {
    unsigned v = 0;
    if (std::sscanf(text + 2 * i, "%2x", &v) != 1) return false;
    static_cast<unsigned char*>(data)[i] = static_cast<unsigned char>(v);
  }
  return true;
}

// Opens the handles, uses them on a stream, closes them; prints what it saw.
void open_and_use(const char* who, const cudaIpcMemHandle_t& mem, const cudaIpcEventHandle_t& ev,
                  const void* original) {
  int* p = nullptr;
  EMU_CHECK(
      cudaIpcOpenMemHandle(reinterpret_cast<void**>(&p), mem, cudaIpcMemLazyEnablePeerAccess));
  cudaEvent_t event;
  EMU_CHECK(cudaIpcOpenEventHandle(&event, ev));
  cudaStream_t s;
  EMU_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  EMU_CHECK(cudaStreamWaitEvent(s, event, 0));
  fill<<<4, 256, 0, s>>>(p, 1024, 7);
  EMU_CHECK(cudaStreamSynchronize(s));
  cudaPointerAttributes attributes;
  EMU_CHECK(cudaPointerGetAttributes(&attributes, p));
  std::printf("ipc: %s same_pointer %d device_memory %d\n", who, p == original ? 1 : 0,
              attributes.type == cudaMemoryTypeDevice ? 1 : 0);
  std::fflush(stdout);
  EMU_CHECK(cudaIpcCloseMemHandle(p));
  EMU_CHECK(cudaStreamDestroy(s));
}
}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "open") == 0) {
    cudaIpcMemHandle_t mem;
    cudaIpcEventHandle_t ev;
    EMU_REQUIRE(from_hex(argv[2], &mem, sizeof mem));
    EMU_REQUIRE(from_hex(argv[3], &ev, sizeof ev));
    open_and_use("other process", mem, ev, nullptr);
    return 0;
  }
  int* buffer = nullptr;
  EMU_CHECK(cudaMalloc(&buffer, 1 << 20));
  fill<<<4, 256>>>(buffer, 1024, 1);
  cudaEvent_t event;
  EMU_CHECK(cudaEventCreateWithFlags(&event, cudaEventInterprocess | cudaEventDisableTiming));
  EMU_CHECK(cudaEventRecord(event, 0));
  cudaIpcMemHandle_t mem;
  cudaIpcEventHandle_t ev;
  EMU_CHECK(cudaIpcGetMemHandle(&mem, buffer));
  EMU_CHECK(cudaIpcGetEventHandle(&ev, event));

  cudaEvent_t plain;
  EMU_CHECK(cudaEventCreate(&plain));
  EMU_EXPECT_ERROR(cudaIpcGetEventHandle(&ev, plain), cudaErrorInvalidResourceHandle);
  EMU_EXPECT_ERROR(cudaIpcGetMemHandle(&mem, buffer + 1), cudaErrorInvalidValue);
  EMU_EXPECT_ERROR(cudaIpcCloseMemHandle(buffer), cudaErrorInvalidValue);
  (void)cudaGetLastError();
  EMU_CHECK(cudaIpcGetMemHandle(&mem, buffer));
  EMU_CHECK(cudaIpcGetEventHandle(&ev, event));

  open_and_use("same process", mem, ev, buffer);
  std::fflush(stdout);
  const pid_t forked = fork();
  if (forked == 0) {
    open_and_use("forked child", mem, ev, buffer);
    std::exit(0);  // not _exit: the child's emulator writes its trace at exit
  }
  int status = 0;
  EMU_REQUIRE(waitpid(forked, &status, 0) == forked && WIFEXITED(status) &&
              WEXITSTATUS(status) == 0);
  const pid_t spawned = fork();
  if (spawned == 0) {
    const std::string mem_hex = to_hex(&mem, sizeof mem);
    const std::string ev_hex = to_hex(&ev, sizeof ev);
    execl("/proc/self/exe", argv[0], "open", mem_hex.c_str(), ev_hex.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  EMU_REQUIRE(waitpid(spawned, &status, 0) == spawned && WIFEXITED(status) &&
              WEXITSTATUS(status) == 0);
  EMU_CHECK(cudaEventDestroy(plain));
  EMU_CHECK(cudaEventDestroy(event));
  EMU_CHECK(cudaFree(buffer));
  std::printf("ipc: parent done\n");
  return 0;
}
