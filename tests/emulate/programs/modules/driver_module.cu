// Device code the driver_api test program loads at run time as a cubin file (cuModuleLoad) and as
// a fat binary in memory (cuModuleLoadData), built by nvcc -cubin / -fatbin (not a program).
__device__ int counter;
__constant__ float coeffs[16];

extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i] + coeffs[i % 16];
  if (i == 0) atomicAdd(&counter, 1);
}

__global__ void templated_scale(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}
