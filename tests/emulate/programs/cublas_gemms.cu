// cuBLAS and cuBLASLt GEMMs with known shapes on a dedicated stream (after a cublasSetMatrix /
// cublasGetMatrix round trip whose data must come back): SGEMM, GemmEx with bfloat16
// inputs and float32 compute, a strided-batched SGEMM, SGEMM again under TF32 tensor-op math,
// and one cublasLtMatmul (bfloat16, A transposed, bias epilogue, batch of 2 from the layouts'
// BATCH_COUNT) with an algorithm from cublasLtMatmulAlgoGetHeuristic. Every return code is
// checked; the same binary runs on a real GPU.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "emu_cublas_check.h"

template <typename T>
T* device_alloc(size_t elements) {
  T* pointer = nullptr;
  EMU_CHECK(cudaMalloc(&pointer, elements * sizeof(T)));
  return pointer;
}

int main() {
  cudaStream_t stream;
  EMU_CHECK(cudaStreamCreate(&stream));
  cublasHandle_t handle;
  EMU_CUBLAS_CHECK(cublasCreate(&handle));
  EMU_CUBLAS_CHECK(cublasSetStream(handle, stream));
  const float one = 1.0f, zero = 0.0f;

  // 0. cublasSetMatrix / cublasGetMatrix round trip of a 3x2 block inside a 4x2 array.
  {
    const float host[8] = {1, 2, 3, -1, 4, 5, 6, -1};  // column-major, ld 4
    float back[6] = {0, 0, 0, 0, 0, 0};                // column-major, ld 3
    float* device = device_alloc<float>(6);
    EMU_CUBLAS_CHECK(cublasSetMatrix(3, 2, sizeof(float), host, 4, device, 3));
    EMU_CUBLAS_CHECK(cublasGetMatrix(3, 2, sizeof(float), device, 3, back, 3));
    const float expected[6] = {1, 2, 3, 4, 5, 6};
    for (int i = 0; i < 6; ++i) {
      if (back[i] != expected[i]) {
        std::fprintf(stderr, "cublasGetMatrix: element %d is %g, expected %g\n", i, back[i],
                     expected[i]);
        return 1;
      }
    }
    EMU_CHECK(cudaFree(device));
  }
  // 1. SGEMM 512x256x128, no transposes.
  {
    const int m = 512, n = 256, k = 128;
    float* a = device_alloc<float>(size_t(m) * k);
    float* b = device_alloc<float>(size_t(k) * n);
    float* c = device_alloc<float>(size_t(m) * n);
    EMU_CUBLAS_CHECK(
        cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a, m, b, k, &zero, c, m));
    EMU_CHECK(cudaFree(a));
    EMU_CHECK(cudaFree(b));
    EMU_CHECK(cudaFree(c));
  }
  // 2. GemmEx 1024x512x256: bfloat16 A (transposed), B and C, float32 compute.
  {
    const int m = 1024, n = 512, k = 256;
    __nv_bfloat16* a = device_alloc<__nv_bfloat16>(size_t(k) * m);
    __nv_bfloat16* b = device_alloc<__nv_bfloat16>(size_t(k) * n);
    __nv_bfloat16* c = device_alloc<__nv_bfloat16>(size_t(m) * n);
    EMU_CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, a, CUDA_R_16BF,
                                  k, b, CUDA_R_16BF, k, &zero, c, CUDA_R_16BF, m,
                                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    EMU_CHECK(cudaFree(a));
    EMU_CHECK(cudaFree(b));
    EMU_CHECK(cudaFree(c));
  }
  // 3. Strided-batched SGEMM: 12 x (128x64x32), B transposed.
  {
    const int m = 128, n = 64, k = 32, batch = 12;
    float* a = device_alloc<float>(size_t(m) * k * batch);
    float* b = device_alloc<float>(size_t(n) * k * batch);
    float* c = device_alloc<float>(size_t(m) * n * batch);
    EMU_CUBLAS_CHECK(cublasSgemmStridedBatched(
        handle, CUBLAS_OP_N, CUBLAS_OP_T, m, n, k, &one, a, m, static_cast<long long>(m) * k, b, n,
        static_cast<long long>(n) * k, &zero, c, m, static_cast<long long>(m) * n, batch));
    EMU_CHECK(cudaFree(a));
    EMU_CHECK(cudaFree(b));
    EMU_CHECK(cudaFree(c));
  }
  // 4. SGEMM 256x256x256 under TF32 tensor-op math.
  {
    const int s = 256;
    EMU_CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH));
    cublasMath_t mode;
    EMU_CUBLAS_CHECK(cublasGetMathMode(handle, &mode));
    if (mode != CUBLAS_TF32_TENSOR_OP_MATH) return 1;
    float* a = device_alloc<float>(size_t(s) * s);
    float* b = device_alloc<float>(size_t(s) * s);
    float* c = device_alloc<float>(size_t(s) * s);
    EMU_CUBLAS_CHECK(
        cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, s, s, s, &one, a, s, b, s, &zero, c, s));
    EMU_CHECK(cudaFree(a));
    EMU_CHECK(cudaFree(b));
    EMU_CHECK(cudaFree(c));
  }
  // 5. cublasLtMatmul: D = A^T B + bias, 2 x (768x384x512), bfloat16, float32 compute.
  {
    const int m = 768, n = 384, k = 512, batch = 2;
    cublasLtHandle_t lt;
    EMU_CUBLAS_CHECK(cublasLtCreate(&lt));
    cublasLtMatmulDesc_t desc;
    EMU_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const int32_t transa = CUBLAS_OP_T;
    EMU_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa));
    __nv_bfloat16* bias = device_alloc<__nv_bfloat16>(m);
    const uint32_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    EMU_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                                    sizeof epilogue));
    EMU_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                    sizeof bias));
    cublasLtMatrixLayout_t la, lb, lc;
    EMU_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, k, m, k));  // stored k x m
    EMU_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, k, n, k));
    EMU_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, m, n, m));
    const int32_t batch_count = batch;
    const int64_t strides[3] = {int64_t(k) * m, int64_t(k) * n, int64_t(m) * n};
    cublasLtMatrixLayout_t layouts[3] = {la, lb, lc};
    for (int i = 0; i < 3; ++i) {
      EMU_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
          layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch_count, sizeof batch_count));
      EMU_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
          layouts[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &strides[i], sizeof strides[i]));
    }
    int32_t read_back = 0;
    size_t written = 0;
    EMU_CUBLAS_CHECK(cublasLtMatrixLayoutGetAttribute(lc, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                      &read_back, sizeof read_back, &written));
    if (read_back != batch || written != sizeof read_back) return 1;

    cublasLtMatmulPreference_t preference;
    EMU_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
    const uint64_t workspace_bytes = 1 << 20;
    EMU_CUBLAS_CHECK(
        cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &workspace_bytes, sizeof workspace_bytes));
    cublasLtMatmulHeuristicResult_t heuristic = {};
    int found = 0;
    EMU_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, preference, 1,
                                                    &heuristic, &found));
    if (found < 1 || heuristic.workspaceSize > workspace_bytes) return 1;

    __nv_bfloat16* a = device_alloc<__nv_bfloat16>(size_t(k) * m * batch);
    __nv_bfloat16* b = device_alloc<__nv_bfloat16>(size_t(k) * n * batch);
    __nv_bfloat16* d = device_alloc<__nv_bfloat16>(size_t(m) * n * batch);
    void* workspace = device_alloc<char>(workspace_bytes);
    EMU_CUBLAS_CHECK(cublasLtMatmul(lt, desc, &one, a, la, b, lb, &zero, d, lc, d, lc,
                                    &heuristic.algo, workspace, workspace_bytes, stream));
    EMU_CHECK(cudaStreamSynchronize(stream));
    EMU_CHECK(cudaFree(workspace));
    EMU_CHECK(cudaFree(a));
    EMU_CHECK(cudaFree(b));
    EMU_CHECK(cudaFree(d));
    EMU_CHECK(cudaFree(bias));
    EMU_CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(preference));
    EMU_CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(la));
    EMU_CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(lb));
    EMU_CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(lc));
    EMU_CUBLAS_CHECK(cublasLtMatmulDescDestroy(desc));
    EMU_CUBLAS_CHECK(cublasLtDestroy(lt));
  }

  EMU_CHECK(cudaStreamSynchronize(stream));
  EMU_CUBLAS_CHECK(cublasDestroy(handle));
  EMU_CHECK(cudaStreamDestroy(stream));
  std::printf("cublas_gemms: ok\n");
  return 0;
}
