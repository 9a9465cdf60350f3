// nvcc-flags: -cudart static
// Linked with the static CUDA runtime on purpose: no interposer can see its calls, so under
// emulation it fails (error 35 on a machine without a GPU) and the interposer explains why.
#include <cuda_runtime.h>

#include <cstdio>

__global__ void noop() {}

int main() {
  void* p = nullptr;
  const cudaError_t error = cudaMalloc(&p, 1024);
  std::printf("cudaMalloc: %s\n", cudaGetErrorString(error));
  return error == cudaSuccess ? 0 : 1;
}
