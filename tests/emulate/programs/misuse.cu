// API misuse that a real GPU reports with an error code, never a crash: a forged stream handle,
// a destroyed stream, a double free, freeing a host pointer, a destroyed event, an unsupported
// API (importing external memory), an invalid launch configuration, a copy to a pointer
// that is not device memory and an invalid device. Each call must fail with the runtime's error
// code; afterwards normal work still succeeds and the last error is clean. Exits 0 when every check
// held.
#include "emu_check.h"

__global__ void noop() {}

int main() {
  // Forged and destroyed streams.
  const cudaStream_t forged = reinterpret_cast<cudaStream_t>(0x1234);
  EMU_EXPECT_ERROR(cudaStreamSynchronize(forged), cudaErrorInvalidResourceHandle);
  cudaStream_t stream = nullptr;
  EMU_CHECK(cudaStreamCreate(&stream));
  EMU_CHECK(cudaStreamDestroy(stream));
  EMU_EXPECT_ERROR(cudaStreamQuery(stream), cudaErrorInvalidResourceHandle);

  // Double free and a pointer the runtime never returned.
  void* p = nullptr;
  EMU_CHECK(cudaMalloc(&p, 4096));
  EMU_CHECK(cudaFree(p));
  EMU_EXPECT_ERROR(cudaFree(p), cudaErrorInvalidValue);
  int on_stack = 0;
  EMU_EXPECT_ERROR(cudaFree(&on_stack), cudaErrorInvalidValue);

  // Destroyed event: recording and destroying it again fail.
  cudaEvent_t event = nullptr;
  EMU_CHECK(cudaEventCreate(&event));
  EMU_CHECK(cudaEventDestroy(event));
  EMU_EXPECT_ERROR(cudaEventRecord(event, nullptr), cudaErrorInvalidResourceHandle);
  EMU_EXPECT_ERROR(cudaEventDestroy(event), cudaErrorInvalidResourceHandle);

  // An API the emulator does not implement: external memory (graphics and IPC interop).
  cudaExternalMemory_t external = nullptr;
  cudaExternalMemoryHandleDesc external_desc = {};
  external_desc.type = cudaExternalMemoryHandleTypeOpaqueFd;
  external_desc.handle.fd = 0;
  external_desc.size = 4096;
  EMU_EXPECT_ERROR(cudaImportExternalMemory(&external, &external_desc), cudaErrorNotSupported);

  // Every failed call above also set the last error: the latest one is reported.
  EMU_EXPECT_ERROR(cudaGetLastError(), cudaErrorNotSupported);
  EMU_CHECK(cudaGetLastError());

  // An invalid launch configuration (2048 threads per block) is reported by cudaGetLastError.
  noop<<<1, 2048>>>();
  EMU_EXPECT_ERROR(cudaGetLastError(), cudaErrorInvalidConfiguration);

  // A host-to-device copy whose destination is not device memory.
  int host[4] = {1, 2, 3, 4};
  EMU_EXPECT_ERROR(
      cudaMemcpy(reinterpret_cast<void*>(0x10), host, sizeof host, cudaMemcpyHostToDevice),
      cudaErrorInvalidValue);

  // A device that does not exist.
  int devices = 0;
  EMU_CHECK(cudaGetDeviceCount(&devices));
  EMU_EXPECT_ERROR(cudaSetDevice(devices + 4), cudaErrorInvalidDevice);

  // The runtime still works; the last error is the latest failure until it is read.
  EMU_EXPECT_ERROR(cudaGetLastError(), cudaErrorInvalidDevice);
  noop<<<1, 32>>>();
  EMU_CHECK(cudaGetLastError());
  EMU_CHECK(cudaDeviceSynchronize());
  std::printf("misuse ok: every misuse was reported with its error code\n");
  return 0;
}
