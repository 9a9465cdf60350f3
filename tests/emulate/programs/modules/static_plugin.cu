// A "vendor plugin": a shared library built with nvcc's default static CUDA runtime, so its CUDA
// calls go to its own copy of the runtime, never to the emulated one. static_plugin_host.cu calls
// it; the emulator names this library when its runtime asks the driver for its export tables.
#include <cuda_runtime.h>

extern "C" int static_plugin_allocate(void) {
  void* pointer = nullptr;
  const cudaError_t status = cudaMalloc(&pointer, 256);
  if (status == cudaSuccess) cudaFree(pointer);
  return static_cast<int>(status);
}
