// cuSPARSE beyond SpMV/SpMM/SpSV/SpGEMM, in the style of NVIDIA's CUDALibrarySamples (cuSPARSE:
// coosort, gtsv2_strided_batch, spmm_csr_batched, spgemm_reuse): pointer mode, COO <-> CSR
// conversion and sorting (checked), tridiagonal solves with and without pivoting and
// strided-batched (residuals checked on the host), a batched SpMM through strided-batch
// descriptors, SpMV preprocessing, SpGEMMreuse (C's structure checked, its values computed twice)
// with its product count, value setters and getters. Valid CUDA: the same binary runs on a real
// GPU. Written for the emulator's tests.
#define DISABLE_CUSPARSE_DEPRECATED  // coo2csr, csrsort, gtsv2 and the identity permutation
#include <cusparse.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "device_buffers.h"
#include "emu_check.h"
#include "emu_sparse_check.h"

namespace {

// max |A·x − b| for the tridiagonal (dl, d, du).
double tridiagonal_residual(const std::vector<double>& dl, const std::vector<double>& d,
                            const std::vector<double>& du, const std::vector<double>& x,
                            const std::vector<double>& b, int offset, int m) {
  double worst = 0;
  for (int i = 0; i < m; ++i) {
    double ax = d[offset + i] * x[offset + i];
    if (i > 0) ax += dl[offset + i] * x[offset + i - 1];
    if (i + 1 < m) ax += du[offset + i] * x[offset + i + 1];
    worst = std::max(worst, std::fabs(ax - b[offset + i]));
  }
  return worst;
}

}  // namespace

int main() {
  cusparseHandle_t handle;
  SPARSE_CHECK(cusparseCreate(&handle));
  SPARSE_CHECK(cusparseSetPointerMode(handle, CUSPARSE_POINTER_MODE_DEVICE));
  cusparsePointerMode_t mode;
  SPARSE_CHECK(cusparseGetPointerMode(handle, &mode));
  EMU_REQUIRE(mode == CUSPARSE_POINTER_MODE_DEVICE);
  SPARSE_CHECK(cusparseSetPointerMode(handle, CUSPARSE_POINTER_MODE_HOST));

  // COO (unsorted) → sorted by row with its permutation → CSR → COO again.
  const std::vector<int> rows0 = {2, 0, 1, 0, 2, 1}, cols0 = {1, 2, 0, 0, 0, 2};
  int* d_rows = to_device(rows0);
  int* d_cols = to_device(cols0);
  int* d_perm = to_device(std::vector<int>(6, -1));
  int* d_offsets = to_device(std::vector<int>(4, -1));
  size_t sort_bytes = 0;
  SPARSE_CHECK(cusparseXcoosort_bufferSizeExt(handle, 3, 3, 6, d_rows, d_cols, &sort_bytes));
  void* sort_buffer = nullptr;
  EMU_CHECK(cudaMalloc(&sort_buffer, sort_bytes));
  SPARSE_CHECK(cusparseCreateIdentityPermutation(handle, 6, d_perm));
  SPARSE_CHECK(cusparseXcoosortByRow(handle, 3, 3, 6, d_rows, d_cols, d_perm, sort_buffer));
  EMU_REQUIRE(to_host(d_rows, 6) == (std::vector<int>{0, 0, 1, 1, 2, 2}));
  EMU_REQUIRE(to_host(d_cols, 6) == (std::vector<int>{0, 2, 0, 2, 0, 1}));
  EMU_REQUIRE(to_host(d_perm, 6) == (std::vector<int>{3, 1, 2, 5, 4, 0}));
  SPARSE_CHECK(cusparseXcoo2csr(handle, d_rows, 6, 3, d_offsets, CUSPARSE_INDEX_BASE_ZERO));
  EMU_REQUIRE(to_host(d_offsets, 4) == (std::vector<int>{0, 2, 4, 6}));
  int* d_back = to_device(std::vector<int>(6, -1));
  SPARSE_CHECK(cusparseXcsr2coo(handle, d_offsets, 6, 3, d_back, CUSPARSE_INDEX_BASE_ZERO));
  EMU_REQUIRE(to_host(d_back, 6) == to_host(d_rows, 6));

  // Tridiagonal systems: 8 rows, 2 right-hand sides with and without pivoting, then 3 strided
  // systems.
  const int m = 8;
  std::vector<double> dl(3 * m), d(3 * m), du(3 * m), b(3 * m);
  for (int i = 0; i < 3 * m; ++i) {
    dl[i] = i % m == 0 ? 0.0 : 1.0 + (i % 3);
    du[i] = i % m == m - 1 ? 0.0 : -1.0 - (i % 2);
    d[i] = (i % 5 == 0) ? 0.5 : 4.0 + (i % 4);  // some small pivots: gtsv2 exchanges rows
    b[i] = 1.0 + i;
  }
  double* d_dl = to_device(dl);
  double* d_d = to_device(d);
  double* d_du = to_device(du);
  double* d_x = to_device(b);
  size_t gtsv_bytes = 0;
  SPARSE_CHECK(cusparseDgtsv2_bufferSizeExt(handle, m, 2, d_dl, d_d, d_du, d_x, m, &gtsv_bytes));
  void* gtsv_buffer = nullptr;
  EMU_CHECK(cudaMalloc(&gtsv_buffer, gtsv_bytes));
  SPARSE_CHECK(cusparseDgtsv2(handle, m, 2, d_dl, d_d, d_du, d_x, m, gtsv_buffer));
  std::vector<double> x = to_host(d_x, 3 * m);
  std::vector<double> dl0(dl.begin(), dl.begin() + m), d0(d.begin(), d.begin() + m),
      du0(du.begin(), du.begin() + m);
  double worst = 0;
  for (int j = 0; j < 2; ++j) {
    std::vector<double> xj(x.begin() + j * m, x.begin() + (j + 1) * m),
        bj(b.begin() + j * m, b.begin() + (j + 1) * m);
    worst = std::max(worst, tridiagonal_residual(dl0, d0, du0, xj, bj, 0, m));
  }
  EMU_CHECK(cudaMemcpy(d_x, b.data(), b.size() * sizeof(double), cudaMemcpyHostToDevice));
  SPARSE_CHECK(cusparseDgtsv2_nopivot(handle, m, 1, d_dl, d_d, d_du, d_x, m, gtsv_buffer));
  x = to_host(d_x, m);
  worst = std::max(worst, tridiagonal_residual(dl0, d0, du0, x, b, 0, m));
  EMU_CHECK(cudaMemcpy(d_x, b.data(), b.size() * sizeof(double), cudaMemcpyHostToDevice));
  SPARSE_CHECK(cusparseDgtsv2StridedBatch(handle, m, d_dl, d_d, d_du, d_x, 3, m, gtsv_buffer));
  x = to_host(d_x, 3 * m);
  for (int j = 0; j < 3; ++j)
    worst = std::max(worst, tridiagonal_residual(dl, d, du, x, b, j * m, m));
  EMU_REQUIRE(worst < 1e-12);

  // A batch of 4 CSR matrices (3 × 3, the sorted pattern above) times 4 dense 3 × 2 matrices.
  float* d_values = to_device(std::vector<float>(6 * 4, 1.0f));
  int* d_batch_offsets = to_device(std::vector<int>{0, 2, 4, 6});
  cusparseSpMatDescr_t a;
  SPARSE_CHECK(cusparseCreateCsr(&a, 3, 3, 6, d_batch_offsets, d_cols, d_values, CUSPARSE_INDEX_32I,
                                 CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  SPARSE_CHECK(cusparseCsrSetStridedBatch(a, 4, 0, 6));
  float* d_b = to_device(std::vector<float>(3 * 2 * 4, 1.0f));
  float* d_c = to_device(std::vector<float>(3 * 2 * 4, 0.0f));
  cusparseDnMatDescr_t mb, mc;
  SPARSE_CHECK(cusparseCreateDnMat(&mb, 3, 2, 3, d_b, CUDA_R_32F, CUSPARSE_ORDER_COL));
  SPARSE_CHECK(cusparseCreateDnMat(&mc, 3, 2, 3, d_c, CUDA_R_32F, CUSPARSE_ORDER_COL));
  SPARSE_CHECK(cusparseDnMatSetStridedBatch(mb, 4, 6));
  SPARSE_CHECK(cusparseDnMatSetStridedBatch(mc, 4, 6));
  int batch = 0;
  int64_t stride = 0;
  SPARSE_CHECK(cusparseDnMatGetStridedBatch(mc, &batch, &stride));
  EMU_REQUIRE(batch == 4 && stride == 6);
  const float one = 1.0f, zero = 0.0f;
  size_t spmm_bytes = 0;
  SPARSE_CHECK(cusparseSpMM_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                       CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a, mb, &zero, mc,
                                       CUDA_R_32F, CUSPARSE_SPMM_CSR_ALG1, &spmm_bytes));
  SPARSE_CHECK(cusparseSpMM(handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                            CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a, mb, &zero, mc, CUDA_R_32F,
                            CUSPARSE_SPMM_CSR_ALG1, nullptr));
  void* values = nullptr;
  SPARSE_CHECK(cusparseDnMatGetValues(mc, &values));
  EMU_REQUIRE(values == d_c);

  // SpMV preprocessing on the first matrix.
  float* d_vx = to_device(std::vector<float>(3, 1.0f));
  float* d_vy = to_device(std::vector<float>(3, 0.0f));
  cusparseSpMatDescr_t a1;
  SPARSE_CHECK(cusparseCreateCsr(&a1, 3, 3, 6, d_batch_offsets, d_cols, d_values,
                                 CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                                 CUDA_R_32F));
  cusparseDnVecDescr_t vx, vy;
  SPARSE_CHECK(cusparseCreateDnVec(&vx, 3, d_vx, CUDA_R_32F));
  SPARSE_CHECK(cusparseCreateDnVec(&vy, 3, d_vy, CUDA_R_32F));
  SPARSE_CHECK(cusparseSpMV_preprocess(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a1, vx,
                                       &zero, vy, CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, nullptr));
  SPARSE_CHECK(cusparseSpMV(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a1, vx, &zero, vy,
                            CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, nullptr));
  // SpGEMMreuse: C = A·A (the 3 × 3 pattern: 12 products, nnz(C) 8), structure once, values twice.
  cusparseSpMatDescr_t c;
  int* d_c_offsets = to_device(std::vector<int>(4, 0));
  SPARSE_CHECK(cusparseCreateCsr(&c, 3, 3, 0, d_c_offsets, nullptr, nullptr, CUSPARSE_INDEX_32I,
                                 CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  cusparseSpGEMMDescr_t gemm;
  SPARSE_CHECK(cusparseSpGEMM_createDescr(&gemm));
  size_t size1 = 0, size2 = 0, size3 = 0, size4 = 0, size5 = 0;
  const auto N = CUSPARSE_OPERATION_NON_TRANSPOSE;
  SPARSE_CHECK(cusparseSpGEMMreuse_workEstimation(handle, N, N, a1, a1, c, CUSPARSE_SPGEMM_DEFAULT,
                                                  gemm, &size1, nullptr));
  void *buffer1 = nullptr, *buffer2 = nullptr, *buffer3 = nullptr, *buffer4 = nullptr,
       *buffer5 = nullptr;
  EMU_CHECK(cudaMalloc(&buffer1, size1));
  SPARSE_CHECK(cusparseSpGEMMreuse_workEstimation(handle, N, N, a1, a1, c, CUSPARSE_SPGEMM_DEFAULT,
                                                  gemm, &size1, buffer1));
  SPARSE_CHECK(cusparseSpGEMMreuse_nnz(handle, N, N, a1, a1, c, CUSPARSE_SPGEMM_DEFAULT, gemm,
                                       &size2, nullptr, &size3, nullptr, &size4, nullptr));
  EMU_CHECK(cudaMalloc(&buffer2, size2));
  EMU_CHECK(cudaMalloc(&buffer3, size3));
  EMU_CHECK(cudaMalloc(&buffer4, size4));
  SPARSE_CHECK(cusparseSpGEMMreuse_nnz(handle, N, N, a1, a1, c, CUSPARSE_SPGEMM_DEFAULT, gemm,
                                       &size2, buffer2, &size3, buffer3, &size4, buffer4));
  int64_t c_rows = 0, c_cols = 0, c_nnz = 0, products = 0;
  SPARSE_CHECK(cusparseSpMatGetSize(c, &c_rows, &c_cols, &c_nnz));
  SPARSE_CHECK(cusparseSpGEMM_getNumProducts(gemm, &products));
  EMU_REQUIRE(c_nnz == 8 && products == 12);
  int* d_c_columns = to_device(std::vector<int>(c_nnz, -1));
  float* d_c_values = to_device(std::vector<float>(c_nnz, 0.0f));
  SPARSE_CHECK(cusparseCsrSetPointers(c, d_c_offsets, d_c_columns, d_c_values));
  SPARSE_CHECK(cusparseSpGEMMreuse_copy(handle, N, N, a1, a1, c, CUSPARSE_SPGEMM_DEFAULT, gemm,
                                        &size5, nullptr));
  EMU_CHECK(cudaMalloc(&buffer5, size5));
  SPARSE_CHECK(cusparseSpGEMMreuse_copy(handle, N, N, a1, a1, c, CUSPARSE_SPGEMM_DEFAULT, gemm,
                                        &size5, buffer5));
  EMU_REQUIRE(to_host(d_c_offsets, 4) == (std::vector<int>{0, 3, 6, 8}));
  EMU_REQUIRE(to_host(d_c_columns, 8) == (std::vector<int>{0, 1, 2, 0, 1, 2, 0, 2}));
  for (int pass = 0; pass < 2; ++pass) {
    SPARSE_CHECK(cusparseSpGEMMreuse_compute(handle, N, N, &one, a1, a1, &zero, c, CUDA_R_32F,
                                             CUSPARSE_SPGEMM_DEFAULT, gemm));
  }
  SPARSE_CHECK(cusparseSpGEMM_destroyDescr(gemm));
  SPARSE_CHECK(cusparseDestroySpMat(c));
  EMU_CHECK(cudaDeviceSynchronize());

  SPARSE_CHECK(cusparseDestroySpMat(a));
  SPARSE_CHECK(cusparseDestroySpMat(a1));
  SPARSE_CHECK(cusparseDestroyDnMat(mb));
  SPARSE_CHECK(cusparseDestroyDnMat(mc));
  SPARSE_CHECK(cusparseDestroyDnVec(vx));
  SPARSE_CHECK(cusparseDestroyDnVec(vy));
  std::printf(
      "cusparse_more: coosort/coo2csr/csr2coo checked (yes), tridiagonal residual %.1e "
      "(below 1e-12: yes), batched SpMM of %d\n",
      worst, batch);
  SPARSE_CHECK(cusparseDestroy(handle));
  return 0;
}
