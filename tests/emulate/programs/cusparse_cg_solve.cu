// The conjugate-gradient solve of NVIDIA's conjugateGradient sample, written for the emulator's
// tests: a random diagonally dominant symmetric tridiagonal matrix of 2^20 rows in CSR, b = 1,
// x0 = 0, and the CG loop of cusparseSpMV (A·p) with cuBLAS saxpy/sdot/sscal/scopy until the
// residual norm is below 1e-5. Under emulation the SpMV and the level-1 calls are computed on the
// host where their memory is backed, so the loop converges as on a GPU; the program then checks
// max |A·x − b| on the host; then a small SpMM (row-major B, column-major C, α and β) and a
// transposed COO SpMV in double precision, each checked against the host. Valid CUDA: the same
// binary runs on a real GPU.
#include <cublas_v2.h>
#include <cusparse.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "emu_check.h"
#include "library_check.h"

int main() {
  const int n = 1 << 20;
  const int nnz = 3 * n - 2;
  std::vector<int> offsets(n + 1), columns(nnz);
  std::vector<float> values(nnz);
  std::uint64_t state = 12345;
  auto uniform = [&] {  // a fixed LCG: the same matrix on every machine
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<float>((state >> 40) & 0xFFFFFF) / 16777216.0f;
  };
  std::vector<float> upper(n, 0.0f);
  for (int i = 0; i + 1 < n; ++i) upper[i] = uniform();
  int k = 0;
  for (int i = 0; i < n; ++i) {
    offsets[i] = k;
    if (i > 0) columns[k] = i - 1, values[k++] = upper[i - 1];
    columns[k] = i, values[k++] = 10.0f + uniform();
    if (i + 1 < n) columns[k] = i + 1, values[k++] = upper[i];
  }
  offsets[n] = k;

  cublasHandle_t blas = nullptr;
  cusparseHandle_t sparse = nullptr;
  LIBRARY_CHECK(cublasCreate(&blas));
  LIBRARY_CHECK(cusparseCreate(&sparse));
  int *d_offsets = nullptr, *d_columns = nullptr;
  float *d_values = nullptr, *d_x = nullptr, *d_r = nullptr, *d_p = nullptr, *d_ax = nullptr;
  EMU_CHECK(cudaMalloc(&d_offsets, sizeof(int) * (n + 1)));
  EMU_CHECK(cudaMalloc(&d_columns, sizeof(int) * nnz));
  EMU_CHECK(cudaMalloc(&d_values, sizeof(float) * nnz));
  for (float** v : {&d_x, &d_r, &d_p, &d_ax}) EMU_CHECK(cudaMalloc(v, sizeof(float) * n));
  EMU_CHECK(cudaMemcpy(d_offsets, offsets.data(), sizeof(int) * (n + 1), cudaMemcpyHostToDevice));
  EMU_CHECK(cudaMemcpy(d_columns, columns.data(), sizeof(int) * nnz, cudaMemcpyHostToDevice));
  EMU_CHECK(cudaMemcpy(d_values, values.data(), sizeof(float) * nnz, cudaMemcpyHostToDevice));
  const std::vector<float> zeros(n, 0.0f), ones(n, 1.0f);
  EMU_CHECK(cudaMemcpy(d_x, zeros.data(), sizeof(float) * n, cudaMemcpyHostToDevice));
  EMU_CHECK(cudaMemcpy(d_r, ones.data(), sizeof(float) * n, cudaMemcpyHostToDevice));

  cusparseSpMatDescr_t a = nullptr;
  cusparseDnVecDescr_t vec_x = nullptr, vec_p = nullptr, vec_ax = nullptr;
  LIBRARY_CHECK(cusparseCreateCsr(&a, n, n, nnz, d_offsets, d_columns, d_values, CUSPARSE_INDEX_32I,
                                  CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  LIBRARY_CHECK(cusparseCreateDnVec(&vec_x, n, d_x, CUDA_R_32F));
  LIBRARY_CHECK(cusparseCreateDnVec(&vec_p, n, d_p, CUDA_R_32F));
  LIBRARY_CHECK(cusparseCreateDnVec(&vec_ax, n, d_ax, CUDA_R_32F));
  const float one = 1.0f, minus_one = -1.0f, zero = 0.0f;
  size_t buffer_size = 0;
  LIBRARY_CHECK(cusparseSpMV_bufferSize(sparse, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a, vec_x,
                                        &zero, vec_ax, CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT,
                                        &buffer_size));
  void* buffer = nullptr;
  EMU_CHECK(cudaMalloc(&buffer, buffer_size > 0 ? buffer_size : 1));

  // r = b − A·x0, then CG.
  LIBRARY_CHECK(cusparseSpMV(sparse, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a, vec_x, &zero,
                             vec_ax, CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, buffer));
  LIBRARY_CHECK(cublasSaxpy(blas, n, &minus_one, d_ax, 1, d_r, 1));
  float r1 = 0.0f, r0 = 0.0f;
  LIBRARY_CHECK(cublasSdot(blas, n, d_r, 1, d_r, 1, &r1));
  const float tolerance = 1e-5f;
  int iteration = 1;
  for (; r1 > tolerance * tolerance && iteration <= 10000; ++iteration) {
    if (iteration > 1) {
      const float b = r1 / r0;
      LIBRARY_CHECK(cublasSscal(blas, n, &b, d_p, 1));
      LIBRARY_CHECK(cublasSaxpy(blas, n, &one, d_r, 1, d_p, 1));
    } else {
      LIBRARY_CHECK(cublasScopy(blas, n, d_r, 1, d_p, 1));
    }
    LIBRARY_CHECK(cusparseSpMV(sparse, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a, vec_p, &zero,
                               vec_ax, CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, buffer));
    float dot = 0.0f;
    LIBRARY_CHECK(cublasSdot(blas, n, d_p, 1, d_ax, 1, &dot));
    const float step = r1 / dot, minus_step = -step;
    LIBRARY_CHECK(cublasSaxpy(blas, n, &step, d_p, 1, d_x, 1));
    LIBRARY_CHECK(cublasSaxpy(blas, n, &minus_step, d_ax, 1, d_r, 1));
    r0 = r1;
    LIBRARY_CHECK(cublasSdot(blas, n, d_r, 1, d_r, 1, &r1));
  }
  std::vector<float> x(n);
  EMU_CHECK(cudaMemcpy(x.data(), d_x, sizeof(float) * n, cudaMemcpyDeviceToHost));
  double error = 0.0;
  for (int i = 0; i < n; ++i) {
    double row = 0.0;
    for (int p = offsets[i]; p < offsets[i + 1]; ++p) row += values[p] * x[columns[p]];
    error = std::max(error, std::fabs(row - 1.0));
  }
  std::printf("cusparse_cg_solve: %d iterations, residual %.3e, max |A x - b| %.3e %s\n",
              iteration - 1, std::sqrt(r1), error, error < 1e-4 ? "ok" : "FAILED");

  // Small products checked on the host: SpMM C = 2·A·B + 0.5·C (A 5 x 4 CSR, B 4 x 3 row-major,
  // C 5 x 3 column-major) and a transposed COO SpMV in double precision, y = Aᵀ·x.
  const int sm_offsets[6] = {0, 2, 3, 5, 6, 8};
  const int sm_columns[8] = {0, 3, 1, 0, 2, 3, 1, 2};
  const float sm_values[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const int coo_rows[8] = {0, 0, 1, 2, 2, 3, 4, 4};
  const double coo_values[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> b_host(12), c_host(15);
  for (int i = 0; i < 12; ++i) b_host[i] = static_cast<float>(i % 5) - 1.0f;
  for (int i = 0; i < 15; ++i) c_host[i] = static_cast<float>(i);
  const double x5[5] = {1, -1, 2, 0.5, 3};
  int *d_sm_offsets = nullptr, *d_sm_columns = nullptr, *d_coo_rows = nullptr;
  float *d_sm_values = nullptr, *d_b = nullptr, *d_c = nullptr;
  double *d_coo_values = nullptr, *d_x5 = nullptr, *d_y4 = nullptr;
  EMU_CHECK(cudaMalloc(&d_sm_offsets, sizeof sm_offsets));
  EMU_CHECK(cudaMalloc(&d_sm_columns, sizeof sm_columns));
  EMU_CHECK(cudaMalloc(&d_coo_rows, sizeof coo_rows));
  EMU_CHECK(cudaMalloc(&d_sm_values, sizeof sm_values));
  EMU_CHECK(cudaMalloc(&d_coo_values, sizeof coo_values));
  EMU_CHECK(cudaMalloc(&d_b, sizeof(float) * 12));
  EMU_CHECK(cudaMalloc(&d_c, sizeof(float) * 15));
  EMU_CHECK(cudaMalloc(&d_x5, sizeof x5));
  EMU_CHECK(cudaMalloc(&d_y4, sizeof(double) * 4));
  EMU_CHECK(cudaMemcpy(d_sm_offsets, sm_offsets, sizeof sm_offsets, cudaMemcpyHostToDevice));
  EMU_CHECK(cudaMemcpy(d_sm_columns, sm_columns, sizeof sm_columns, cudaMemcpyHostToDevice));
  EMU_CHECK(cudaMemcpy(d_coo_rows, coo_rows, sizeof coo_rows, cudaMemcpyHostToDevice));
  EMU_CHECK(cudaMemcpy(d_sm_values, sm_values, sizeof sm_values, cudaMemcpyHostToDevice));
  EMU_CHECK(cudaMemcpy(d_coo_values, coo_values, sizeof coo_values, cudaMemcpyHostToDevice));
  EMU_CHECK(cudaMemcpy(d_b, b_host.data(), sizeof(float) * 12, cudaMemcpyHostToDevice));
  EMU_CHECK(cudaMemcpy(d_c, c_host.data(), sizeof(float) * 15, cudaMemcpyHostToDevice));
  EMU_CHECK(cudaMemcpy(d_x5, x5, sizeof x5, cudaMemcpyHostToDevice));
  cusparseSpMatDescr_t small = nullptr, coo = nullptr;
  cusparseDnMatDescr_t mat_b = nullptr, mat_c = nullptr;
  cusparseDnVecDescr_t vec_x5 = nullptr, vec_y4 = nullptr;
  LIBRARY_CHECK(cusparseCreateCsr(&small, 5, 4, 8, d_sm_offsets, d_sm_columns, d_sm_values,
                                  CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                                  CUDA_R_32F));
  LIBRARY_CHECK(cusparseCreateDnMat(&mat_b, 4, 3, 3, d_b, CUDA_R_32F, CUSPARSE_ORDER_ROW));
  LIBRARY_CHECK(cusparseCreateDnMat(&mat_c, 5, 3, 5, d_c, CUDA_R_32F, CUSPARSE_ORDER_COL));
  const float two = 2.0f, half = 0.5f;
  size_t spmm_size = 0;
  LIBRARY_CHECK(cusparseSpMM_bufferSize(sparse, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                        CUSPARSE_OPERATION_NON_TRANSPOSE, &two, small, mat_b, &half,
                                        mat_c, CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, &spmm_size));
  LIBRARY_CHECK(cusparseSpMM(sparse, CUSPARSE_OPERATION_NON_TRANSPOSE,
                             CUSPARSE_OPERATION_NON_TRANSPOSE, &two, small, mat_b, &half, mat_c,
                             CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, buffer));
  std::vector<float> c_got(15);
  EMU_CHECK(cudaMemcpy(c_got.data(), d_c, sizeof(float) * 15, cudaMemcpyDeviceToHost));
  double spmm_error = 0.0;
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 3; ++j) {
      double sum = 0.0;
      for (int p = sm_offsets[i]; p < sm_offsets[i + 1]; ++p) {
        sum += sm_values[p] * b_host[sm_columns[p] * 3 + j];
      }
      const double want = 2.0 * sum + 0.5 * c_host[i + j * 5];
      spmm_error = std::max(spmm_error, std::fabs(want - c_got[i + j * 5]));
    }
  }
  LIBRARY_CHECK(cusparseCreateCoo(&coo, 5, 4, 8, d_coo_rows, d_sm_columns, d_coo_values,
                                  CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
  LIBRARY_CHECK(cusparseCreateDnVec(&vec_x5, 5, d_x5, CUDA_R_64F));
  LIBRARY_CHECK(cusparseCreateDnVec(&vec_y4, 4, d_y4, CUDA_R_64F));
  const double one_d = 1.0, zero_d = 0.0;
  LIBRARY_CHECK(cusparseSpMV(sparse, CUSPARSE_OPERATION_TRANSPOSE, &one_d, coo, vec_x5, &zero_d,
                             vec_y4, CUDA_R_64F, CUSPARSE_SPMV_ALG_DEFAULT, buffer));
  double y4[4] = {0, 0, 0, 0}, want4[4] = {0, 0, 0, 0};
  EMU_CHECK(cudaMemcpy(y4, d_y4, sizeof y4, cudaMemcpyDeviceToHost));
  for (int p = 0; p < 8; ++p) want4[sm_columns[p]] += coo_values[p] * x5[coo_rows[p]];
  double spmv_error = 0.0;
  for (int j = 0; j < 4; ++j) spmv_error = std::max(spmv_error, std::fabs(want4[j] - y4[j]));
  std::printf("cusparse_cg_solve: SpMM error %.1e, transposed COO SpMV error %.1e %s\n", spmm_error,
              spmv_error, spmm_error < 1e-4 && spmv_error < 1e-12 ? "ok" : "FAILED");
  LIBRARY_CHECK(cusparseDestroySpMat(small));
  LIBRARY_CHECK(cusparseDestroySpMat(coo));
  LIBRARY_CHECK(cusparseDestroyDnMat(mat_b));
  LIBRARY_CHECK(cusparseDestroyDnMat(mat_c));
  LIBRARY_CHECK(cusparseDestroyDnVec(vec_x5));
  LIBRARY_CHECK(cusparseDestroyDnVec(vec_y4));
  for (void* p : {static_cast<void*>(d_sm_offsets), static_cast<void*>(d_sm_columns),
                  static_cast<void*>(d_coo_rows), static_cast<void*>(d_sm_values),
                  static_cast<void*>(d_coo_values), static_cast<void*>(d_b),
                  static_cast<void*>(d_c), static_cast<void*>(d_x5), static_cast<void*>(d_y4)}) {
    EMU_CHECK(cudaFree(p));
  }

  LIBRARY_CHECK(cusparseDestroySpMat(a));
  for (cusparseDnVecDescr_t v : {vec_x, vec_p, vec_ax}) LIBRARY_CHECK(cusparseDestroyDnVec(v));
  LIBRARY_CHECK(cusparseDestroy(sparse));
  LIBRARY_CHECK(cublasDestroy(blas));
  for (void* p : {static_cast<void*>(d_offsets), static_cast<void*>(d_columns),
                  static_cast<void*>(d_values), static_cast<void*>(d_x), static_cast<void*>(d_r),
                  static_cast<void*>(d_p), static_cast<void*>(d_ax), buffer}) {
    EMU_CHECK(cudaFree(p));
  }
  return error < 1e-4 && spmm_error < 1e-4 && spmv_error < 1e-12 ? 0 : 1;
}
