// The iteration that graph_capture.cu and graph_explicit.cu build in their two ways: branch A
// (kernel branch_a on x) and branch B (branch_b on y) in parallel, kKernels kernels each, then
// tail_c after both; count_call is their host-function node. One definition, so both programs
// emulate the same kernels.
#pragma once

#include <cuda_runtime.h>

__global__ void branch_a(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}

__global__ void branch_b(float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] *= 2.0f;
}

__global__ void tail_c(float* x, const float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += y[i];
}

void count_call(void* counter) { ++*static_cast<int*>(counter); }

constexpr int kKernels = 8;     // per branch
constexpr int kIterations = 5;  // after one warm-up
