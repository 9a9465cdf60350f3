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

#define CHECK(call, ok, what)                                                           \
  do {                                                                                  \
    if (!((call) == (ok))) {                                                            \
      std::fprintf(stderr, "%s:%d: %s failed (%s)\n", __FILE__, __LINE__, #call, what); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

int main() {
  struct Shape {
    int m, n, k;
  };
  const Shape shapes[] = {
      {8192, 8192, 8192}, {16384, 8192, 4096}, {8192, 4096, 16384}, {12288, 12288, 6144}};
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream), cudaSuccess, "stream");
  cublasHandle_t handle;
  CHECK(cublasCreate(&handle), CUBLAS_STATUS_SUCCESS, "cublas handle");
  CHECK(cublasSetStream(handle, stream), CUBLAS_STATUS_SUCCESS, "cublas stream");
  const float one = 1.0f, zero = 0.0f;
  constexpr int kGemms = sizeof(shapes) / sizeof(shapes[0]);
  __nv_bfloat16 *a[kGemms], *b[kGemms], *c[kGemms];
  for (int i = 0; i < kGemms; ++i) {
    const Shape& s = shapes[i];
    CHECK(cudaMalloc(&a[i], sizeof(__nv_bfloat16) * s.m * s.k), cudaSuccess, "A");
    CHECK(cudaMalloc(&b[i], sizeof(__nv_bfloat16) * s.k * s.n), cudaSuccess, "B");
    CHECK(cudaMalloc(&c[i], sizeof(__nv_bfloat16) * s.m * s.n), cudaSuccess, "C");
  }
  // Back to back on the stream, one synchronize at the end.
  for (int i = 0; i < kGemms; ++i) {
    const Shape& s = shapes[i];
    CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, s.m, s.n, s.k, &one, a[i], CUDA_R_16BF,
                       s.m, b[i], CUDA_R_16BF, s.k, &zero, c[i], CUDA_R_16BF, s.m,
                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          CUBLAS_STATUS_SUCCESS, "gemm");
  }
  CHECK(cudaStreamSynchronize(stream), cudaSuccess, "sync");
  for (int i = 0; i < kGemms; ++i) {
    CHECK(cudaFree(a[i]), cudaSuccess, "free");
    CHECK(cudaFree(b[i]), cudaSuccess, "free");
    CHECK(cudaFree(c[i]), cudaSuccess, "free");
  }
  CHECK(cublasDestroy(handle), CUBLAS_STATUS_SUCCESS, "destroy");
  CHECK(cudaStreamDestroy(stream), cudaSuccess, "stream destroy");
  std::printf("gemm chain: %d GEMMs\n", kGemms);
  return 0;
}
