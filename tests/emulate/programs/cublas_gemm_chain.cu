// A compute-bound chain of large bfloat16 GEMMs (float32 compute) through cublasGemmEx on one
// stream, then a stream synchronize: under emulation its predicted time is the device model's
// roofline (tests/cli/emulate_programs_cli_test.cc). Shapes: M×N×K = 8192³, 16384×8192×4096,
// 8192×4096×16384, 12288×12288×6144. Every return code is checked; the same binary runs on a
// real GPU (it needs about 1.5 GiB of device memory).
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "emu_cublas_check.h"

int main() {
  struct Shape {
    int m, n, k;
  };
  const Shape shapes[] = {
      {8192, 8192, 8192}, {16384, 8192, 4096}, {8192, 4096, 16384}, {12288, 12288, 6144}};
  cudaStream_t stream;
  EMU_CHECK(cudaStreamCreate(&stream));
  cublasHandle_t handle;
  EMU_CUBLAS_CHECK(cublasCreate(&handle));
  EMU_CUBLAS_CHECK(cublasSetStream(handle, stream));
  const float one = 1.0f, zero = 0.0f;
  constexpr int kGemms = sizeof(shapes) / sizeof(shapes[0]);
  __nv_bfloat16 *a[kGemms], *b[kGemms], *c[kGemms];
  for (int i = 0; i < kGemms; ++i) {
    const Shape& s = shapes[i];
    EMU_CHECK(cudaMalloc(&a[i], sizeof(__nv_bfloat16) * s.m * s.k));
    EMU_CHECK(cudaMalloc(&b[i], sizeof(__nv_bfloat16) * s.k * s.n));
    EMU_CHECK(cudaMalloc(&c[i], sizeof(__nv_bfloat16) * s.m * s.n));
  }
  // Back to back on the stream, one synchronize at the end.
  for (int i = 0; i < kGemms; ++i) {
    const Shape& s = shapes[i];
    EMU_CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, s.m, s.n, s.k, &one, a[i],
                                  CUDA_R_16BF, s.m, b[i], CUDA_R_16BF, s.k, &zero, c[i],
                                  CUDA_R_16BF, s.m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
  EMU_CHECK(cudaStreamSynchronize(stream));
  for (int i = 0; i < kGemms; ++i) {
    EMU_CHECK(cudaFree(a[i]));
    EMU_CHECK(cudaFree(b[i]));
    EMU_CHECK(cudaFree(c[i]));
  }
  EMU_CUBLAS_CHECK(cublasDestroy(handle));
  EMU_CHECK(cudaStreamDestroy(stream));
  std::printf("gemm chain: %d GEMMs\n", kGemms);
  return 0;
}
