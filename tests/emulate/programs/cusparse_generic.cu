// The rest of cuSPARSE's generic API on a small matrix, each result the program can see checked
// against a host computation: the 1D Laplacian T (n = 64, tridiagonal, CSR) as COO, CSC, BSR
// (2 x 2 blocks) and Blocked-ELL descriptors (sizes and formats read back); SpGEMM C = T·T (the
// pentadiagonal pattern: nnz(C) and C's row offsets and column indices checked); Csr2cscEx2 (the
// CSC arrays of T checked); DenseToSparse of a dense matrix with a known number of nonzeros;
// Gather, Scatter and SpVV on a sparse vector; SDDMM, SpSM (analysis and solve), Axpby and
// SparseToDense recorded. Values written by cuSPARSE kernels are not checked (the emulator does not
// compute them). T as Sliced ELL with an SpMV. Then a solve before its analysis (misuse) and one
// function the emulator does not implement (cusparseCreateColorInfo), reported by name. Valid CUDA:
// the same binary runs on a real GPU. Written for the emulator's tests.
#define DISABLE_CUSPARSE_DEPRECATED  // the legacy ILU API and SpVV/Axpby are deprecated, still
                                     // exported
#include <cusparse.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "emu_sparse_check.h"
#include "laplacian.h"

template <typename T>
T* device_copy(const std::vector<T>& host) {
  T* d = nullptr;
  EMU_CHECK(cudaMalloc(&d, host.size() * sizeof(T) + 1));
  EMU_CHECK(cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

template <typename T>
std::vector<T> host_copy(const T* d, size_t count) {
  std::vector<T> host(count);
  EMU_CHECK(cudaMemcpy(host.data(), d, count * sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

int main() {
  const int n = 64, nnz = 3 * n - 2;
  std::vector<int> offsets, columns;
  std::vector<float> values;
  EMU_REQUIRE(laplacian_1d(n, offsets, columns, values) == nnz);
  std::vector<int> coo_rows(nnz);
  for (int row = 0; row < n; ++row) {
    for (int i = offsets[row]; i < offsets[row + 1]; ++i) coo_rows[i] = row;
  }
  int k = 0;
  int* d_offsets = device_copy(offsets);
  int* d_columns = device_copy(columns);
  int* d_coo_rows = device_copy(coo_rows);
  float* d_values = device_copy(values);

  cusparseHandle_t handle;
  SPARSE_CHECK(cusparseCreate(&handle));
  cusparseSpMatDescr_t t_csr, t_coo, t_csc, t_bsr, t_ell;
  SPARSE_CHECK(cusparseCreateCsr(&t_csr, n, n, nnz, d_offsets, d_columns, d_values,
                                 CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                                 CUDA_R_32F));
  SPARSE_CHECK(cusparseCreateCoo(&t_coo, n, n, nnz, d_coo_rows, d_columns, d_values,
                                 CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  // T is symmetric: its CSR arrays are also its CSC arrays.
  SPARSE_CHECK(cusparseCreateCsc(&t_csc, n, n, nnz, d_offsets, d_columns, d_values,
                                 CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                                 CUDA_R_32F));
  // 2 x 2 blocks: block row i holds blocks (i, i-1), (i, i), (i, i+1) where they exist.
  const int nb = n / 2, bnnz = 3 * nb - 2;
  float* d_block_values = nullptr;
  EMU_CHECK(cudaMalloc(&d_block_values, bnnz * 4 * sizeof(float)));
  std::vector<int> block_offsets(nb + 1), block_columns(bnnz);
  k = 0;
  for (int i = 0; i < nb; ++i) {
    block_offsets[i] = k;
    for (int j = i - 1; j <= i + 1; ++j) {
      if (j >= 0 && j < nb) block_columns[k++] = j;
    }
  }
  block_offsets[nb] = k;
  int* d_block_offsets = device_copy(block_offsets);
  int* d_block_columns = device_copy(block_columns);
  SPARSE_CHECK(cusparseCreateBsr(&t_bsr, nb, nb, bnnz, 2, 2, d_block_offsets, d_block_columns,
                                 d_block_values, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                 CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F, CUSPARSE_ORDER_ROW));
  // Blocked-ELL with 4 x 4 blocks and 3 block columns per block row (12 columns).
  std::vector<int> ell_columns((n / 4) * 3);
  for (int i = 0; i < n / 4; ++i) {
    for (int j = 0; j < 3; ++j)
      ell_columns[i * 3 + j] = (i + j - 1 >= 0 && i + j - 1 < n / 4) ? i + j - 1 : -1;
  }
  int* d_ell_columns = device_copy(ell_columns);
  float* d_ell_values = nullptr;
  EMU_CHECK(cudaMalloc(&d_ell_values, n * 12 * sizeof(float)));
  SPARSE_CHECK(cusparseCreateBlockedEll(&t_ell, n, n, 4, 12, d_ell_columns, d_ell_values,
                                        CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  int64_t rows = 0, cols = 0, count = 0;
  SPARSE_CHECK(cusparseSpMatGetSize(t_bsr, &rows, &cols, &count));
  EMU_REQUIRE(rows == nb && cols == nb && count == bnnz);
  SPARSE_CHECK(cusparseSpMatGetSize(t_ell, &rows, &cols, &count));
  EMU_REQUIRE(rows == n && cols == n && count == n * 12);
  cusparseFormat_t format;
  SPARSE_CHECK(cusparseSpMatGetFormat(t_coo, &format));
  EMU_REQUIRE(format == CUSPARSE_FORMAT_COO);
  SPARSE_CHECK(cusparseSpMatGetFormat(t_csc, &format));
  EMU_REQUIRE(format == CUSPARSE_FORMAT_CSC);
  void *read_offsets = nullptr, *read_columns = nullptr, *read_values = nullptr;
  cusparseIndexType_t offset_type, index_type;
  cusparseIndexBase_t base;
  cudaDataType value_type;
  SPARSE_CHECK(cusparseCsrGet(t_csr, &rows, &cols, &count, &read_offsets, &read_columns,
                              &read_values, &offset_type, &index_type, &base, &value_type));
  EMU_REQUIRE(read_offsets == d_offsets && read_columns == d_columns && read_values == d_values &&
              count == nnz && value_type == CUDA_R_32F);

  // SpMV on COO and BSR: recorded with their formats.
  float *d_x = nullptr, *d_y = nullptr;
  EMU_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  EMU_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  cusparseDnVecDescr_t vec_x, vec_y;
  SPARSE_CHECK(cusparseCreateDnVec(&vec_x, n, d_x, CUDA_R_32F));
  SPARSE_CHECK(cusparseCreateDnVec(&vec_y, n, d_y, CUDA_R_32F));
  const float one = 1.0f, zero = 0.0f;
  for (cusparseSpMatDescr_t m : {t_coo, t_bsr}) {
    SPARSE_CHECK(cusparseSpMV(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, m, vec_x, &zero,
                              vec_y, CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, nullptr));
  }

  // SpGEMM C = T·T: the structure is pentadiagonal.
  cusparseSpMatDescr_t c;
  int* d_c_offsets = nullptr;
  EMU_CHECK(cudaMalloc(&d_c_offsets, (n + 1) * sizeof(int)));
  SPARSE_CHECK(cusparseCreateCsr(&c, n, n, 0, d_c_offsets, nullptr, nullptr, CUSPARSE_INDEX_32I,
                                 CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  cusparseSpGEMMDescr_t spgemm;
  SPARSE_CHECK(cusparseSpGEMM_createDescr(&spgemm));
  size_t size1 = 0, size2 = 0;
  SPARSE_CHECK(cusparseSpGEMM_workEstimation(
      handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, t_csr,
      t_csr, &zero, c, CUDA_R_32F, CUSPARSE_SPGEMM_DEFAULT, spgemm, &size1, nullptr));
  void *buffer1 = nullptr, *buffer2 = nullptr;
  EMU_CHECK(cudaMalloc(&buffer1, size1));
  SPARSE_CHECK(cusparseSpGEMM_workEstimation(
      handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, t_csr,
      t_csr, &zero, c, CUDA_R_32F, CUSPARSE_SPGEMM_DEFAULT, spgemm, &size1, buffer1));
  SPARSE_CHECK(cusparseSpGEMM_compute(
      handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, t_csr,
      t_csr, &zero, c, CUDA_R_32F, CUSPARSE_SPGEMM_DEFAULT, spgemm, &size2, nullptr));
  EMU_CHECK(cudaMalloc(&buffer2, size2));
  SPARSE_CHECK(cusparseSpGEMM_compute(
      handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, t_csr,
      t_csr, &zero, c, CUDA_R_32F, CUSPARSE_SPGEMM_DEFAULT, spgemm, &size2, buffer2));
  int64_t c_rows = 0, c_cols = 0, c_nnz = 0;
  SPARSE_CHECK(cusparseSpMatGetSize(c, &c_rows, &c_cols, &c_nnz));
  EMU_REQUIRE(c_nnz == 5 * n - 6);
  int* d_c_columns = nullptr;
  float* d_c_values = nullptr;
  EMU_CHECK(cudaMalloc(&d_c_columns, c_nnz * sizeof(int)));
  EMU_CHECK(cudaMalloc(&d_c_values, c_nnz * sizeof(float)));
  SPARSE_CHECK(cusparseCsrSetPointers(c, d_c_offsets, d_c_columns, d_c_values));
  SPARSE_CHECK(cusparseSpGEMM_copy(handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                   CUSPARSE_OPERATION_NON_TRANSPOSE, &one, t_csr, t_csr, &zero, c,
                                   CUDA_R_32F, CUSPARSE_SPGEMM_DEFAULT, spgemm));
  EMU_CHECK(cudaDeviceSynchronize());
  const std::vector<int> c_offsets = host_copy(d_c_offsets, n + 1);
  const std::vector<int> c_columns = host_copy(d_c_columns, c_nnz);
  k = 0;
  for (int row = 0; row < n; ++row) {
    EMU_REQUIRE(c_offsets[row] == k);
    for (int col = row - 2; col <= row + 2; ++col) {
      if (col < 0 || col >= n) continue;
      EMU_REQUIRE(c_columns[k] == col);
      ++k;
    }
  }
  EMU_REQUIRE(c_offsets[n] == k);

  // Csr2cscEx2 of C (pentadiagonal, symmetric pattern): the CSC arrays equal C's CSR arrays.
  int *d_csc_offsets = nullptr, *d_csc_rows = nullptr;
  float* d_csc_values = nullptr;
  EMU_CHECK(cudaMalloc(&d_csc_offsets, (n + 1) * sizeof(int)));
  EMU_CHECK(cudaMalloc(&d_csc_rows, c_nnz * sizeof(int)));
  EMU_CHECK(cudaMalloc(&d_csc_values, c_nnz * sizeof(float)));
  size_t csc_size = 0;
  SPARSE_CHECK(cusparseCsr2cscEx2_bufferSize(
      handle, n, n, static_cast<int>(c_nnz), d_c_values, d_c_offsets, d_c_columns, d_csc_values,
      d_csc_offsets, d_csc_rows, CUDA_R_32F, CUSPARSE_ACTION_NUMERIC, CUSPARSE_INDEX_BASE_ZERO,
      CUSPARSE_CSR2CSC_ALG1, &csc_size));
  SPARSE_CHECK(cusparseCsr2cscEx2(handle, n, n, static_cast<int>(c_nnz), d_c_values, d_c_offsets,
                                  d_c_columns, d_csc_values, d_csc_offsets, d_csc_rows, CUDA_R_32F,
                                  CUSPARSE_ACTION_NUMERIC, CUSPARSE_INDEX_BASE_ZERO,
                                  CUSPARSE_CSR2CSC_ALG1, nullptr));
  EMU_CHECK(cudaDeviceSynchronize());
  EMU_REQUIRE(host_copy(d_csc_offsets, n + 1) == c_offsets);
  EMU_REQUIRE(host_copy(d_csc_rows, c_nnz) == c_columns);

  // DenseToSparse: an 8 x 8 column-major matrix with 10 nonzeros.
  std::vector<float> dense(64, 0.0f);
  for (int i = 0; i < 10; ++i) dense[(i * 7) % 64] = 1.0f + i;
  float* d_dense = device_copy(dense);
  cusparseDnMatDescr_t mat_dense;
  SPARSE_CHECK(cusparseCreateDnMat(&mat_dense, 8, 8, 8, d_dense, CUDA_R_32F, CUSPARSE_ORDER_COL));
  int* d_sparse_offsets = nullptr;
  EMU_CHECK(cudaMalloc(&d_sparse_offsets, 9 * sizeof(int)));
  cusparseSpMatDescr_t mat_sparse;
  SPARSE_CHECK(cusparseCreateCsr(&mat_sparse, 8, 8, 0, d_sparse_offsets, nullptr, nullptr,
                                 CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                                 CUDA_R_32F));
  size_t d2s_size = 0;
  SPARSE_CHECK(cusparseDenseToSparse_bufferSize(handle, mat_dense, mat_sparse,
                                                CUSPARSE_DENSETOSPARSE_ALG_DEFAULT, &d2s_size));
  SPARSE_CHECK(cusparseDenseToSparse_analysis(handle, mat_dense, mat_sparse,
                                              CUSPARSE_DENSETOSPARSE_ALG_DEFAULT, nullptr));
  int64_t d2s_nnz = 0;
  SPARSE_CHECK(cusparseSpMatGetSize(mat_sparse, &rows, &cols, &d2s_nnz));
  EMU_REQUIRE(d2s_nnz == 10);
  int* d_sparse_columns = nullptr;
  float* d_sparse_values = nullptr;
  EMU_CHECK(cudaMalloc(&d_sparse_columns, d2s_nnz * sizeof(int)));
  EMU_CHECK(cudaMalloc(&d_sparse_values, d2s_nnz * sizeof(float)));
  SPARSE_CHECK(
      cusparseCsrSetPointers(mat_sparse, d_sparse_offsets, d_sparse_columns, d_sparse_values));
  SPARSE_CHECK(cusparseDenseToSparse_convert(handle, mat_dense, mat_sparse,
                                             CUSPARSE_DENSETOSPARSE_ALG_DEFAULT, nullptr));
  SPARSE_CHECK(cusparseSparseToDense(handle, mat_sparse, mat_dense,
                                     CUSPARSE_SPARSETODENSE_ALG_DEFAULT, nullptr));

  // Gather, Scatter and SpVV on the sparse vector of entries 0, 5, 10, ..., 60 of x.
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = 0.5f * i;
  EMU_CHECK(cudaMemcpy(d_x, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  const int sparse_nnz = 13;
  std::vector<int> indices(sparse_nnz);
  for (int i = 0; i < sparse_nnz; ++i) indices[i] = 5 * i;
  int* d_indices = device_copy(indices);
  float* d_sparse = nullptr;
  EMU_CHECK(cudaMalloc(&d_sparse, sparse_nnz * sizeof(float)));
  cusparseSpVecDescr_t vec_sparse;
  SPARSE_CHECK(cusparseCreateSpVec(&vec_sparse, n, sparse_nnz, d_indices, d_sparse,
                                   CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  SPARSE_CHECK(cusparseGather(handle, vec_x, vec_sparse));
  EMU_CHECK(cudaDeviceSynchronize());
  const std::vector<float> gathered = host_copy(d_sparse, sparse_nnz);
  for (int i = 0; i < sparse_nnz; ++i) EMU_REQUIRE(gathered[i] == x[indices[i]]);
  float spvv = 0.0f, expected_spvv = 0.0f;
  for (int i = 0; i < sparse_nnz; ++i) expected_spvv += x[indices[i]] * x[indices[i]];
  size_t spvv_size = 0;
  SPARSE_CHECK(cusparseSpVV_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, vec_sparse, vec_x,
                                       &spvv, CUDA_R_32F, &spvv_size));
  SPARSE_CHECK(cusparseSpVV(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, vec_sparse, vec_x, &spvv,
                            CUDA_R_32F, nullptr));
  EMU_REQUIRE(spvv == expected_spvv);
  EMU_CHECK(cudaMemset(d_y, 0, n * sizeof(float)));
  SPARSE_CHECK(cusparseScatter(handle, vec_sparse, vec_y));
  EMU_CHECK(cudaDeviceSynchronize());
  const std::vector<float> scattered = host_copy(d_y, n);
  for (int i = 0; i < n; ++i) EMU_REQUIRE(scattered[i] == (i % 5 == 0 ? x[i] : 0.0f));
  const float two = 2.0f;
  SPARSE_CHECK(cusparseAxpby(handle, &two, vec_sparse, &one, vec_y));

  // SDDMM C = (A·B) ∘ spy(T) with dense A (n x 8), B (8 x n); SpSM with 8 right-hand sides.
  float *d_a = nullptr, *d_b = nullptr, *d_rhs = nullptr, *d_solution = nullptr;
  EMU_CHECK(cudaMalloc(&d_a, n * 8 * sizeof(float)));
  EMU_CHECK(cudaMalloc(&d_b, n * 8 * sizeof(float)));
  EMU_CHECK(cudaMalloc(&d_rhs, n * 8 * sizeof(float)));
  EMU_CHECK(cudaMalloc(&d_solution, n * 8 * sizeof(float)));
  cusparseDnMatDescr_t mat_a, mat_b, mat_rhs, mat_solution;
  SPARSE_CHECK(cusparseCreateDnMat(&mat_a, n, 8, n, d_a, CUDA_R_32F, CUSPARSE_ORDER_COL));
  SPARSE_CHECK(cusparseCreateDnMat(&mat_b, 8, n, 8, d_b, CUDA_R_32F, CUSPARSE_ORDER_COL));
  SPARSE_CHECK(cusparseCreateDnMat(&mat_rhs, n, 8, n, d_rhs, CUDA_R_32F, CUSPARSE_ORDER_COL));
  SPARSE_CHECK(
      cusparseCreateDnMat(&mat_solution, n, 8, n, d_solution, CUDA_R_32F, CUSPARSE_ORDER_COL));
  size_t sddmm_size = 0;
  SPARSE_CHECK(cusparseSDDMM_bufferSize(
      handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mat_a,
      mat_b, &zero, t_csr, CUDA_R_32F, CUSPARSE_SDDMM_ALG_DEFAULT, &sddmm_size));
  SPARSE_CHECK(cusparseSDDMM_preprocess(handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                        CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mat_a, mat_b, &zero,
                                        t_csr, CUDA_R_32F, CUSPARSE_SDDMM_ALG_DEFAULT, nullptr));
  SPARSE_CHECK(cusparseSDDMM(handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                             CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mat_a, mat_b, &zero, t_csr,
                             CUDA_R_32F, CUSPARSE_SDDMM_ALG_DEFAULT, nullptr));
  cusparseSpSMDescr_t spsm;
  SPARSE_CHECK(cusparseSpSM_createDescr(&spsm));
  size_t spsm_size = 0;
  SPARSE_CHECK(cusparseSpSM_bufferSize(
      handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, t_csr,
      mat_rhs, mat_solution, CUDA_R_32F, CUSPARSE_SPSM_ALG_DEFAULT, spsm, &spsm_size));
  SPARSE_CHECK(cusparseSpSM_analysis(
      handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, t_csr,
      mat_rhs, mat_solution, CUDA_R_32F, CUSPARSE_SPSM_ALG_DEFAULT, spsm, nullptr));
  SPARSE_CHECK(cusparseSpSM_solve(handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                  CUSPARSE_OPERATION_NON_TRANSPOSE, &one, t_csr, mat_rhs,
                                  mat_solution, CUDA_R_32F, CUSPARSE_SPSM_ALG_DEFAULT, spsm));
  EMU_CHECK(cudaDeviceSynchronize());

  // Misuse: a triangular solve whose descriptor has not been through the analysis (the emulator
  // reports it and returns CUSPARSE_STATUS_INVALID_VALUE).
  cusparseSpSVDescr_t unanalysed;
  SPARSE_CHECK(cusparseSpSV_createDescr(&unanalysed));
  const cusparseStatus_t unanalysed_status =
      cusparseSpSV_solve(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, t_csr, vec_x, vec_y,
                         CUDA_R_32F, CUSPARSE_SPSV_ALG_DEFAULT, unanalysed);
  SPARSE_CHECK(cusparseSpSV_destroyDescr(unanalysed));

  // T as Sliced ELL (2 slices of 32 rows, each padded to 3 values per row: 192 stored), and an
  // SpMV with it.
  const int sell_values = 2 * 32 * 3;
  int* d_slice_offsets = nullptr;
  int* d_sell_columns = nullptr;
  float* d_sell_values = nullptr;
  const int slice_offsets[3] = {0, sell_values / 2, sell_values};
  EMU_CHECK(cudaMalloc(&d_slice_offsets, sizeof slice_offsets));
  EMU_CHECK(
      cudaMemcpy(d_slice_offsets, slice_offsets, sizeof slice_offsets, cudaMemcpyHostToDevice));
  EMU_CHECK(cudaMalloc(&d_sell_columns, sell_values * sizeof(int)));
  EMU_CHECK(cudaMalloc(&d_sell_values, sell_values * sizeof(float)));
  cusparseSpMatDescr_t sliced;
  SPARSE_CHECK(cusparseCreateSlicedEll(&sliced, n, n, nnz, sell_values, 32, d_slice_offsets,
                                       d_sell_columns, d_sell_values, CUSPARSE_INDEX_32I,
                                       CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  SPARSE_CHECK(cusparseSpMV(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, sliced, vec_x, &zero,
                            vec_y, CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, nullptr));
  SPARSE_CHECK(cusparseDestroySpMat(sliced));

  // SpGEMM C = T·T again with the memory-saving ALG3 (CUDALibrarySamples spgemm_mem): work
  // estimation, estimateMemory (its own buffer, then the compute buffer for a quarter-size
  // chunk), compute, copy.
  cusparseSpMatDescr_t c3;
  int* d_c3_offsets = nullptr;
  EMU_CHECK(cudaMalloc(&d_c3_offsets, (n + 1) * sizeof(int)));
  SPARSE_CHECK(cusparseCreateCsr(&c3, n, n, 0, d_c3_offsets, nullptr, nullptr, CUSPARSE_INDEX_32I,
                                 CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  cusparseSpGEMMDescr_t spgemm3;
  SPARSE_CHECK(cusparseSpGEMM_createDescr(&spgemm3));
  const auto alg3 = CUSPARSE_SPGEMM_ALG3;
  const auto no_op = CUSPARSE_OPERATION_NON_TRANSPOSE;
  size_t work3 = 0, estimate3 = 0, compute3 = 0;
  SPARSE_CHECK(cusparseSpGEMM_workEstimation(handle, no_op, no_op, &one, t_csr, t_csr, &zero, c3,
                                             CUDA_R_32F, alg3, spgemm3, &work3, nullptr));
  void *work3_buffer = nullptr, *estimate3_buffer = nullptr, *compute3_buffer = nullptr;
  EMU_CHECK(cudaMalloc(&work3_buffer, work3));
  SPARSE_CHECK(cusparseSpGEMM_workEstimation(handle, no_op, no_op, &one, t_csr, t_csr, &zero, c3,
                                             CUDA_R_32F, alg3, spgemm3, &work3, work3_buffer));
  SPARSE_CHECK(cusparseSpGEMM_estimateMemory(handle, no_op, no_op, &one, t_csr, t_csr, &zero, c3,
                                             CUDA_R_32F, alg3, spgemm3, 0.25f, &estimate3, nullptr,
                                             nullptr));
  EMU_CHECK(cudaMalloc(&estimate3_buffer, estimate3));
  SPARSE_CHECK(cusparseSpGEMM_estimateMemory(handle, no_op, no_op, &one, t_csr, t_csr, &zero, c3,
                                             CUDA_R_32F, alg3, spgemm3, 0.25f, &estimate3,
                                             estimate3_buffer, &compute3));
  EMU_CHECK(cudaFree(estimate3_buffer));
  EMU_CHECK(cudaMalloc(&compute3_buffer, compute3));
  SPARSE_CHECK(cusparseSpGEMM_compute(handle, no_op, no_op, &one, t_csr, t_csr, &zero, c3,
                                      CUDA_R_32F, alg3, spgemm3, &compute3, compute3_buffer));
  int64_t c3_rows = 0, c3_cols = 0, c3_nnz = 0;
  SPARSE_CHECK(cusparseSpMatGetSize(c3, &c3_rows, &c3_cols, &c3_nnz));
  EMU_REQUIRE(c3_nnz == c_nnz);
  int* d_c3_columns = nullptr;
  float* d_c3_values = nullptr;
  EMU_CHECK(cudaMalloc(&d_c3_columns, c3_nnz * sizeof(int)));
  EMU_CHECK(cudaMalloc(&d_c3_values, c3_nnz * sizeof(float)));
  SPARSE_CHECK(cusparseCsrSetPointers(c3, d_c3_offsets, d_c3_columns, d_c3_values));
  SPARSE_CHECK(cusparseSpGEMM_copy(handle, no_op, no_op, &one, t_csr, t_csr, &zero, c3, CUDA_R_32F,
                                   alg3, spgemm3));
  // C's values: T² of the 1-D Laplacian (from the host arrays of T), entry by entry.
  const std::vector<int> c3_offsets = host_copy(d_c3_offsets, n + 1);
  const std::vector<int> c3_columns = host_copy(d_c3_columns, c3_nnz);
  const std::vector<float> c3_values = host_copy(d_c3_values, c3_nnz);
  float spgemm_error = 0.0f;
  for (int row = 0; row < n; ++row) {
    for (int q = c3_offsets[row]; q < c3_offsets[row + 1]; ++q) {
      float want = 0.0f;
      for (int p = offsets[row]; p < offsets[row + 1]; ++p) {
        for (int r = offsets[columns[p]]; r < offsets[columns[p] + 1]; ++r) {
          if (columns[r] == c3_columns[q]) want += values[p] * values[r];
        }
      }
      spgemm_error = std::max(spgemm_error, std::fabs(want - c3_values[q]));
    }
  }
  EMU_REQUIRE(spgemm_error == 0.0f);
  SPARSE_CHECK(cusparseSpGEMM_destroyDescr(spgemm3));
  SPARSE_CHECK(cusparseDestroySpMat(c3));
  for (void* p : {work3_buffer, compute3_buffer, static_cast<void*>(d_c3_offsets),
                  static_cast<void*>(d_c3_columns), static_cast<void*>(d_c3_values)}) {
    EMU_CHECK(cudaFree(p));
  }
  std::printf("cusparse_generic: SpGEMM ALG3 buffers %zu %zu %zu, values of T² exact\n", work3,
              estimate3, compute3);

  // Not emulated (the legacy coloring API): reported by name.
  cusparseColorInfo_t color;
  const cusparseStatus_t color_status = cusparseCreateColorInfo(&color);

  std::printf(
      "cusparse_generic: SpGEMM nnz(C) %lld, DenseToSparse nnz %lld, SpVV %.2f, "
      "cusparseCreateColorInfo -> %s, SpSV solve before its analysis -> %s\n",
      static_cast<long long>(c_nnz), static_cast<long long>(d2s_nnz), spvv,
      cusparseGetErrorName(color_status), cusparseGetErrorName(unanalysed_status));

  SPARSE_CHECK(cusparseSpSM_destroyDescr(spsm));
  SPARSE_CHECK(cusparseSpGEMM_destroyDescr(spgemm));
  SPARSE_CHECK(cusparseDestroySpVec(vec_sparse));
  for (cusparseDnMatDescr_t m : {mat_dense, mat_a, mat_b, mat_rhs, mat_solution}) {
    SPARSE_CHECK(cusparseDestroyDnMat(m));
  }
  for (cusparseSpMatDescr_t m : {t_csr, t_coo, t_csc, t_bsr, t_ell, c, mat_sparse}) {
    SPARSE_CHECK(cusparseDestroySpMat(m));
  }
  SPARSE_CHECK(cusparseDestroyDnVec(vec_x));
  SPARSE_CHECK(cusparseDestroyDnVec(vec_y));
  SPARSE_CHECK(cusparseDestroy(handle));
  return 0;
}
