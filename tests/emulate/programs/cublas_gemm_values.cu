// GEMM results under emulation, as simpleCUBLAS, matrixMulCUBLAS and batchCUBLAS check them: each
// call's output is compared with a GEMM computed here on the host. sgemm 275 x 275 (simpleCUBLAS's
// size) with alpha and beta; dgemm with both operands transposed and leading dimensions larger
// than the rows; strided-batched sgemm (3 problems); batched dgemm through device arrays of
// pointers; GemmEx with fp32 operands and compute; sgemm with alpha and beta in device memory
// (device pointer mode). Valid CUDA: the same binary runs on a real GPU (where the tolerances
// absorb the GPU's summation order).
#include <cublas_v2.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "device_buffers.h"
#include "library_check.h"

namespace {

template <typename T>
std::vector<T> filled(size_t count, int seed) {
  std::vector<T> v(count);
  for (size_t i = 0; i < count; ++i) {
    v[i] = static_cast<T>(((i * 37 + seed * 11) % 23) - 11) / static_cast<T>(8);
  }
  return v;
}

// Column-major reference: C = alpha·op(A)·op(B) + beta·C.
template <typename T>
void reference(bool ta, bool tb, int m, int n, int k, T alpha, const T* a, int lda, const T* b,
               int ldb, T beta, T* c, int ldc) {
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      double sum = 0;
      for (int p = 0; p < k; ++p) {
        const double x = ta ? a[p + i * lda] : a[i + p * lda];
        const double y = tb ? b[j + p * ldb] : b[p + j * ldb];
        sum += x * y;
      }
      c[i + j * ldc] = static_cast<T>(alpha * sum + beta * c[i + j * ldc]);
    }
  }
}

template <typename T>
double max_relative_error(const std::vector<T>& got, const std::vector<T>& want) {
  double err = 0, norm = 1e-30;
  for (size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::fabs(static_cast<double>(got[i]) - want[i]));
    norm = std::max(norm, std::fabs(static_cast<double>(want[i])));
  }
  return err / norm;
}

int failures = 0;
void report(const char* what, double error, double tolerance) {
  const bool ok = error <= tolerance;
  failures += ok ? 0 : 1;
  std::printf("cublas_gemm_values: %s relative error %.1e %s\n", what, error, ok ? "ok" : "FAILED");
}

}  // namespace

int main() {
  cublasHandle_t handle = nullptr;
  LIBRARY_CHECK(cublasCreate(&handle));

  {  // 1. simpleCUBLAS: 275 x 275 sgemm, alpha 1, beta 0.5.
    const int n = 275;
    auto a = filled<float>(n * n, 1), b = filled<float>(n * n, 2), c = filled<float>(n * n, 3);
    float *da = emu_programs::to_device(a), *db = emu_programs::to_device(b),
          *dc = emu_programs::to_device(c);
    const float alpha = 1.0f, beta = 0.5f;
    LIBRARY_CHECK(
        cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, da, n, db, n, &beta, dc, n));
    reference(false, false, n, n, n, alpha, a.data(), n, b.data(), n, beta, c.data(), n);
    report("sgemm 275", max_relative_error(emu_programs::to_host(dc, c.size()), c), 1e-5);
    for (float* p : {da, db, dc}) EMU_CHECK(cudaFree(p));
  }
  {  // 2. dgemm, both transposed, padded leading dimensions: C (30 x 20) = Aᵀ (40 x 30)ᵀ ...
    const int m = 30, n = 20, k = 40, lda = 45, ldb = 25, ldc = 33;
    auto a = filled<double>(lda * m, 4), b = filled<double>(ldb * k, 5),
         c = filled<double>(ldc * n, 6);
    double *da = emu_programs::to_device(a), *db = emu_programs::to_device(b),
           *dc = emu_programs::to_device(c);
    const double alpha = -2.0, beta = 0.25;
    LIBRARY_CHECK(cublasDgemm(handle, CUBLAS_OP_T, CUBLAS_OP_T, m, n, k, &alpha, da, lda, db, ldb,
                              &beta, dc, ldc));
    reference(true, true, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
    report("dgemm TT padded", max_relative_error(emu_programs::to_host(dc, c.size()), c), 1e-12);
    for (double* p : {da, db, dc}) EMU_CHECK(cudaFree(p));
  }
  {  // 3. strided batched sgemm: 3 problems of 16 x 12 x 8.
    const int m = 16, n = 12, k = 8, batch = 3;
    const long long sa = m * k, sb = k * n, sc = m * n;
    auto a = filled<float>(sa * batch, 7), b = filled<float>(sb * batch, 8),
         c = filled<float>(sc * batch, 9);
    float *da = emu_programs::to_device(a), *db = emu_programs::to_device(b),
          *dc = emu_programs::to_device(c);
    const float alpha = 1.5f, beta = 0.0f;
    LIBRARY_CHECK(cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, da,
                                            m, sa, db, k, sb, &beta, dc, m, sc, batch));
    for (int i = 0; i < batch; ++i) {
      reference(false, false, m, n, k, alpha, a.data() + i * sa, m, b.data() + i * sb, k, beta,
                c.data() + i * sc, m);
    }
    report("sgemm strided batch 3", max_relative_error(emu_programs::to_host(dc, c.size()), c),
           1e-5);
    for (float* p : {da, db, dc}) EMU_CHECK(cudaFree(p));
  }
  {  // 4. batched dgemm through device arrays of pointers: 2 problems of 10 x 10 x 10.
    const int n = 10, batch = 2;
    std::vector<std::vector<double>> a, b, c;
    std::vector<double*> pa, pb, pc;
    for (int i = 0; i < batch; ++i) {
      a.push_back(filled<double>(n * n, 10 + i));
      b.push_back(filled<double>(n * n, 20 + i));
      c.push_back(filled<double>(n * n, 30 + i));
      pa.push_back(emu_programs::to_device(a[i]));
      pb.push_back(emu_programs::to_device(b[i]));
      pc.push_back(emu_programs::to_device(c[i]));
    }
    double **dpa = emu_programs::to_device(pa), **dpb = emu_programs::to_device(pb),
           **dpc = emu_programs::to_device(pc);
    const double alpha = 1.0, beta = 1.0;
    LIBRARY_CHECK(cublasDgemmBatched(handle, CUBLAS_OP_N, CUBLAS_OP_T, n, n, n, &alpha, dpa, n, dpb,
                                     n, &beta, dpc, n, batch));
    double worst = 0;
    for (int i = 0; i < batch; ++i) {
      reference(false, true, n, n, n, alpha, a[i].data(), n, b[i].data(), n, beta, c[i].data(), n);
      worst = std::max(worst, max_relative_error(emu_programs::to_host(pc[i], c[i].size()), c[i]));
      for (double* p : {pa[i], pb[i], pc[i]}) EMU_CHECK(cudaFree(p));
    }
    report("dgemm batched 2", worst, 1e-12);
    for (double** p : {dpa, dpb, dpc}) EMU_CHECK(cudaFree(p));
  }
  {  // 5. GemmEx with fp32 operands and compute; 6. sgemm with device-resident alpha and beta.
    const int m = 24, n = 18, k = 9;
    auto a = filled<float>(m * k, 40), b = filled<float>(k * n, 41), c = filled<float>(m * n, 42);
    float *da = emu_programs::to_device(a), *db = emu_programs::to_device(b),
          *dc = emu_programs::to_device(c);
    const float alpha = 0.5f, beta = 2.0f;
    LIBRARY_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, da, CUDA_R_32F, m,
                               db, CUDA_R_32F, k, &beta, dc, CUDA_R_32F, m, CUBLAS_COMPUTE_32F,
                               CUBLAS_GEMM_DEFAULT));
    reference(false, false, m, n, k, alpha, a.data(), m, b.data(), k, beta, c.data(), m);
    report("GemmEx fp32", max_relative_error(emu_programs::to_host(dc, c.size()), c), 1e-5);
    float* d_scalars = emu_programs::to_device(std::vector<float>{-1.0f, 0.5f});
    LIBRARY_CHECK(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_DEVICE));
    LIBRARY_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, d_scalars, da, m, db, k,
                              d_scalars + 1, dc, m));
    LIBRARY_CHECK(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST));
    reference(false, false, m, n, k, -1.0f, a.data(), m, b.data(), k, 0.5f, c.data(), m);
    report("sgemm device scalars", max_relative_error(emu_programs::to_host(dc, c.size()), c),
           1e-5);
    for (float* p : {da, db, dc, d_scalars}) EMU_CHECK(cudaFree(p));
  }
  LIBRARY_CHECK(cublasDestroy(handle));
  std::printf("cublas_gemm_values: %s\n", failures == 0 ? "all ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}
