// Conjugate gradient with and without an ILU(0) preconditioner, in the style of NVIDIA's
// conjugateGradient and conjugateGradientPrecond samples: the 2D Laplacian (5-point, 128 x 128
// grid, N = 16384 rows) in CSR; plain CG with cuSPARSE SpMV and cuBLAS dot/axpy/scal/copy; then
// the legacy matrix descriptor and csrilu02 info, csrilu02 analysis and factorization with the
// zero-pivot check, lower (unit) and upper triangular matrices by SpMatSetAttribute, SpSV
// descriptors, buffer sizes and analyses, and preconditioned CG (two SpSV solves per iteration).
// Both loops run a fixed 5 iterations (the samples iterate to a tolerance, which needs the
// kernels' results). Valid CUDA: the same binary runs on a real GPU.
// Written for the emulator's tests.
#define DISABLE_CUSPARSE_DEPRECATED  // the legacy ILU API and SpVV/Axpby are deprecated, still
                                     // exported
#include <cusparse.h>

#include <vector>

#include "emu_cublas_check.h"
#include "emu_sparse_check.h"
#include "laplacian.h"

int main() {
  const int grid = 128, n = grid * grid, nnz = 5 * n - 4 * grid;
  std::vector<int> offsets, columns;
  std::vector<float> values, rhs(n, 1.0f);
  EMU_REQUIRE(laplacian_2d(grid, offsets, columns, values) == nnz);

  int *d_row = nullptr, *d_col = nullptr;
  float *d_val = nullptr, *d_ilu = nullptr;
  float *d_x, *d_y, *d_r, *d_p, *d_omega, *d_zm1, *d_zm2, *d_rm2;
  EMU_CHECK(cudaMalloc(&d_row, (n + 1) * sizeof(int)));
  EMU_CHECK(cudaMalloc(&d_col, nnz * sizeof(int)));
  EMU_CHECK(cudaMalloc(&d_val, nnz * sizeof(float)));
  EMU_CHECK(cudaMalloc(&d_ilu, nnz * sizeof(float)));
  for (float** v : {&d_x, &d_y, &d_r, &d_p, &d_omega, &d_zm1, &d_zm2, &d_rm2}) {
    EMU_CHECK(cudaMalloc(v, n * sizeof(float)));
  }
  EMU_CHECK(cudaMemcpy(d_row, offsets.data(), (n + 1) * sizeof(int), cudaMemcpyHostToDevice));
  EMU_CHECK(cudaMemcpy(d_col, columns.data(), nnz * sizeof(int), cudaMemcpyHostToDevice));
  EMU_CHECK(cudaMemcpy(d_val, values.data(), nnz * sizeof(float), cudaMemcpyHostToDevice));
  EMU_CHECK(cudaMemcpy(d_ilu, d_val, nnz * sizeof(float), cudaMemcpyDeviceToDevice));
  EMU_CHECK(cudaMemcpy(d_r, rhs.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  EMU_CHECK(cudaMemset(d_x, 0, n * sizeof(float)));

  cublasHandle_t blas;
  EMU_CUBLAS_CHECK(cublasCreate(&blas));
  cusparseHandle_t handle;
  SPARSE_CHECK(cusparseCreate(&handle));

  cusparseSpMatDescr_t mat_a, mat_lower, mat_upper;
  SPARSE_CHECK(cusparseCreateCsr(&mat_a, n, n, nnz, d_row, d_col, d_val, CUSPARSE_INDEX_32I,
                                 CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  SPARSE_CHECK(cusparseCreateCsr(&mat_lower, n, n, nnz, d_row, d_col, d_ilu, CUSPARSE_INDEX_32I,
                                 CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  SPARSE_CHECK(cusparseCreateCsr(&mat_upper, n, n, nnz, d_row, d_col, d_ilu, CUSPARSE_INDEX_32I,
                                 CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  cusparseFillMode_t fill_lower = CUSPARSE_FILL_MODE_LOWER, fill_upper = CUSPARSE_FILL_MODE_UPPER;
  cusparseDiagType_t diag_unit = CUSPARSE_DIAG_TYPE_UNIT,
                     diag_non_unit = CUSPARSE_DIAG_TYPE_NON_UNIT;
  SPARSE_CHECK(cusparseSpMatSetAttribute(mat_lower, CUSPARSE_SPMAT_FILL_MODE, &fill_lower,
                                         sizeof(fill_lower)));
  SPARSE_CHECK(cusparseSpMatSetAttribute(mat_lower, CUSPARSE_SPMAT_DIAG_TYPE, &diag_unit,
                                         sizeof(diag_unit)));
  SPARSE_CHECK(cusparseSpMatSetAttribute(mat_upper, CUSPARSE_SPMAT_FILL_MODE, &fill_upper,
                                         sizeof(fill_upper)));
  SPARSE_CHECK(cusparseSpMatSetAttribute(mat_upper, CUSPARSE_SPMAT_DIAG_TYPE, &diag_non_unit,
                                         sizeof(diag_non_unit)));
  cusparseFillMode_t fill_read = CUSPARSE_FILL_MODE_LOWER;
  SPARSE_CHECK(cusparseSpMatGetAttribute(mat_upper, CUSPARSE_SPMAT_FILL_MODE, &fill_read,
                                         sizeof(fill_read)));
  EMU_REQUIRE(fill_read == CUSPARSE_FILL_MODE_UPPER);
  int64_t rows_read = 0, cols_read = 0, nnz_read = 0;
  SPARSE_CHECK(cusparseSpMatGetSize(mat_a, &rows_read, &cols_read, &nnz_read));
  EMU_REQUIRE(rows_read == n && cols_read == n && nnz_read == nnz);

  cusparseDnVecDescr_t vec_p, vec_x, vec_y, vec_r, vec_zm1, vec_omega;
  SPARSE_CHECK(cusparseCreateDnVec(&vec_p, n, d_p, CUDA_R_32F));
  SPARSE_CHECK(cusparseCreateDnVec(&vec_x, n, d_x, CUDA_R_32F));
  SPARSE_CHECK(cusparseCreateDnVec(&vec_y, n, d_y, CUDA_R_32F));
  SPARSE_CHECK(cusparseCreateDnVec(&vec_r, n, d_r, CUDA_R_32F));
  SPARSE_CHECK(cusparseCreateDnVec(&vec_zm1, n, d_zm1, CUDA_R_32F));
  SPARSE_CHECK(cusparseCreateDnVec(&vec_omega, n, d_omega, CUDA_R_32F));

  cusparseMatDescr_t descr_lu;
  SPARSE_CHECK(cusparseCreateMatDescr(&descr_lu));
  SPARSE_CHECK(cusparseSetMatType(descr_lu, CUSPARSE_MATRIX_TYPE_GENERAL));
  SPARSE_CHECK(cusparseSetMatIndexBase(descr_lu, CUSPARSE_INDEX_BASE_ZERO));
  EMU_REQUIRE(cusparseGetMatType(descr_lu) == CUSPARSE_MATRIX_TYPE_GENERAL);
  csrilu02Info_t info_ilu;
  SPARSE_CHECK(cusparseCreateCsrilu02Info(&info_ilu));

  const float one = 1.0f, zero = 0.0f;
  size_t size_mv = 0, size_l = 0, size_u = 0;
  int size_lu = 0;
  SPARSE_CHECK(cusparseSpMV_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mat_a, vec_p,
                                       &zero, vec_omega, CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT,
                                       &size_mv));
  SPARSE_CHECK(cusparseScsrilu02_bufferSize(handle, n, nnz, descr_lu, d_val, d_row, d_col, info_ilu,
                                            &size_lu));
  cusparseSpSVDescr_t spsv_lower, spsv_upper;
  SPARSE_CHECK(cusparseSpSV_createDescr(&spsv_lower));
  SPARSE_CHECK(cusparseSpSV_createDescr(&spsv_upper));
  SPARSE_CHECK(cusparseSpSV_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mat_lower,
                                       vec_r, vec_x, CUDA_R_32F, CUSPARSE_SPSV_ALG_DEFAULT,
                                       spsv_lower, &size_l));
  SPARSE_CHECK(cusparseSpSV_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mat_upper,
                                       vec_r, vec_x, CUDA_R_32F, CUSPARSE_SPSV_ALG_DEFAULT,
                                       spsv_upper, &size_u));
  void *buffer_mv, *buffer_lu, *buffer_l, *buffer_u;
  EMU_CHECK(cudaMalloc(&buffer_mv, size_mv > 0 ? size_mv : 1));
  EMU_CHECK(cudaMalloc(&buffer_lu, size_lu > 0 ? size_lu : 1));
  EMU_CHECK(cudaMalloc(&buffer_l, size_l > 0 ? size_l : 1));
  EMU_CHECK(cudaMalloc(&buffer_u, size_u > 0 ? size_u : 1));

  // Plain CG (Golub & Van Loan 10.2.6), a fixed number of iterations.
  const int iterations = 5;
  float r0 = 0.0f, r1 = 0.0f, dot = 0.0f;
  EMU_CUBLAS_CHECK(cublasSdot(blas, n, d_r, 1, d_r, 1, &r1));
  for (int it = 1; it <= iterations; ++it) {
    if (it == 1) {
      EMU_CUBLAS_CHECK(cublasScopy(blas, n, d_r, 1, d_p, 1));
    } else {
      const float beta = r1 / r0;
      EMU_CUBLAS_CHECK(cublasSscal(blas, n, &beta, d_p, 1));
      EMU_CUBLAS_CHECK(cublasSaxpy(blas, n, &one, d_r, 1, d_p, 1));
    }
    SPARSE_CHECK(cusparseSpMV(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mat_a, vec_p, &zero,
                              vec_omega, CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, buffer_mv));
    EMU_CUBLAS_CHECK(cublasSdot(blas, n, d_p, 1, d_omega, 1, &dot));
    const float alpha = r1 / dot, minus_alpha = -alpha;
    EMU_CUBLAS_CHECK(cublasSaxpy(blas, n, &alpha, d_p, 1, d_x, 1));
    EMU_CUBLAS_CHECK(cublasSaxpy(blas, n, &minus_alpha, d_omega, 1, d_r, 1));
    r0 = r1;
    EMU_CUBLAS_CHECK(cublasSdot(blas, n, d_r, 1, d_r, 1, &r1));
  }

  // ILU(0) factors and the triangular solves' analyses.
  SPARSE_CHECK(cusparseScsrilu02_analysis(handle, n, nnz, descr_lu, d_ilu, d_row, d_col, info_ilu,
                                          CUSPARSE_SOLVE_POLICY_USE_LEVEL, buffer_lu));
  int zero_pivot = 0;
  SPARSE_CHECK(cusparseXcsrilu02_zeroPivot(handle, info_ilu, &zero_pivot));
  SPARSE_CHECK(cusparseScsrilu02(handle, n, nnz, descr_lu, d_ilu, d_row, d_col, info_ilu,
                                 CUSPARSE_SOLVE_POLICY_USE_LEVEL, buffer_lu));
  SPARSE_CHECK(cusparseXcsrilu02_zeroPivot(handle, info_ilu, &zero_pivot));
  EMU_REQUIRE(zero_pivot == -1);  // the Laplacian has none
  SPARSE_CHECK(cusparseSpSV_analysis(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mat_lower,
                                     vec_r, vec_x, CUDA_R_32F, CUSPARSE_SPSV_ALG_DEFAULT,
                                     spsv_lower, buffer_l));
  SPARSE_CHECK(cusparseSpSV_analysis(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mat_upper,
                                     vec_r, vec_x, CUDA_R_32F, CUSPARSE_SPSV_ALG_DEFAULT,
                                     spsv_upper, buffer_u));

  // Preconditioned CG (Golub & Van Loan 10.3.1).
  EMU_CHECK(cudaMemcpy(d_r, rhs.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  EMU_CHECK(cudaMemset(d_x, 0, n * sizeof(float)));
  float numerator = 0.0f, denominator = 0.0f;
  for (int it = 1; it <= iterations; ++it) {
    SPARSE_CHECK(cusparseSpSV_solve(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mat_lower,
                                    vec_r, vec_y, CUDA_R_32F, CUSPARSE_SPSV_ALG_DEFAULT,
                                    spsv_lower));
    SPARSE_CHECK(cusparseSpSV_solve(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mat_upper,
                                    vec_y, vec_zm1, CUDA_R_32F, CUSPARSE_SPSV_ALG_DEFAULT,
                                    spsv_upper));
    if (it == 1) {
      EMU_CUBLAS_CHECK(cublasScopy(blas, n, d_zm1, 1, d_p, 1));
    } else {
      EMU_CUBLAS_CHECK(cublasSdot(blas, n, d_r, 1, d_zm1, 1, &numerator));
      EMU_CUBLAS_CHECK(cublasSdot(blas, n, d_rm2, 1, d_zm2, 1, &denominator));
      const float beta = numerator / denominator;
      EMU_CUBLAS_CHECK(cublasSscal(blas, n, &beta, d_p, 1));
      EMU_CUBLAS_CHECK(cublasSaxpy(blas, n, &one, d_zm1, 1, d_p, 1));
    }
    SPARSE_CHECK(cusparseSpMV(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mat_a, vec_p, &zero,
                              vec_omega, CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, buffer_mv));
    EMU_CUBLAS_CHECK(cublasSdot(blas, n, d_r, 1, d_zm1, 1, &numerator));
    EMU_CUBLAS_CHECK(cublasSdot(blas, n, d_p, 1, d_omega, 1, &denominator));
    const float alpha = numerator / denominator, minus_alpha = -alpha;
    EMU_CUBLAS_CHECK(cublasSaxpy(blas, n, &alpha, d_p, 1, d_x, 1));
    EMU_CUBLAS_CHECK(cublasScopy(blas, n, d_r, 1, d_rm2, 1));
    EMU_CUBLAS_CHECK(cublasScopy(blas, n, d_zm1, 1, d_zm2, 1));
    EMU_CUBLAS_CHECK(cublasSaxpy(blas, n, &minus_alpha, d_omega, 1, d_r, 1));
    EMU_CUBLAS_CHECK(cublasSdot(blas, n, d_r, 1, d_r, 1, &r1));
  }
  EMU_CHECK(cudaDeviceSynchronize());
  std::printf("cusparse_pcg: %d rows, %d nonzeros, %d CG and %d PCG iterations, zero pivot %d\n", n,
              nnz, iterations, iterations, zero_pivot);

  SPARSE_CHECK(cusparseDestroyCsrilu02Info(info_ilu));
  SPARSE_CHECK(cusparseDestroyMatDescr(descr_lu));
  SPARSE_CHECK(cusparseSpSV_destroyDescr(spsv_lower));
  SPARSE_CHECK(cusparseSpSV_destroyDescr(spsv_upper));
  for (cusparseSpMatDescr_t m : {mat_a, mat_lower, mat_upper})
    SPARSE_CHECK(cusparseDestroySpMat(m));
  for (cusparseDnVecDescr_t v : {vec_p, vec_x, vec_y, vec_r, vec_zm1, vec_omega}) {
    SPARSE_CHECK(cusparseDestroyDnVec(v));
  }
  SPARSE_CHECK(cusparseDestroy(handle));
  EMU_CUBLAS_CHECK(cublasDestroy(blas));
  for (void* p : {static_cast<void*>(d_row), static_cast<void*>(d_col), static_cast<void*>(d_val),
                  static_cast<void*>(d_ilu), static_cast<void*>(d_x), static_cast<void*>(d_y),
                  static_cast<void*>(d_r), static_cast<void*>(d_p), static_cast<void*>(d_omega),
                  static_cast<void*>(d_zm1), static_cast<void*>(d_zm2), static_cast<void*>(d_rm2),
                  buffer_mv, buffer_lu, buffer_l, buffer_u}) {
    EMU_CHECK(cudaFree(p));
  }
  return 0;
}
