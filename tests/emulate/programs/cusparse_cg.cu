// cuSPARSE's generic API as NVIDIA's conjugateGradient sample uses it: a symmetric positive
// definite tridiagonal matrix (the 1D Laplacian, N = 2^20 rows) in CSR, dense vectors, the SpMV
// buffer-size query and 5 conjugate-gradient iterations, each an SpMV (A·p) and an update kernel;
// then an SpMM with 8 right-hand sides and a COO descriptor of the same matrix. The iteration count
// is fixed (the sample iterates to a tolerance, which needs the kernels' results). Valid CUDA: the
// same binary runs on a real GPU. Written for the emulator's tests.
#include <cusparse.h>

#include <vector>

#include "emu_sparse_check.h"
#include "laplacian.h"

// x += alpha·p, r -= alpha·Ap, p = r + beta·p (one fused CG update, fixed coefficients).
__global__ void cg_update(float* x, float* r, float* p, const float* ap, int n, float alpha,
                          float beta) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    x[i] += alpha * p[i];
    r[i] -= alpha * ap[i];
    p[i] = r[i] + beta * p[i];
  }
}

int main() {
  const int n = 1 << 20;
  const int nnz = 3 * n - 2;
  std::vector<int> offsets, columns;
  std::vector<float> values;
  EMU_REQUIRE(laplacian_1d(n, offsets, columns, values) == nnz);

  int *d_offsets = nullptr, *d_columns = nullptr;
  float *d_values = nullptr, *d_x = nullptr, *d_r = nullptr, *d_p = nullptr, *d_ap = nullptr;
  EMU_CHECK(cudaMalloc(&d_offsets, (n + 1) * sizeof(int)));
  EMU_CHECK(cudaMalloc(&d_columns, nnz * sizeof(int)));
  EMU_CHECK(cudaMalloc(&d_values, nnz * sizeof(float)));
  for (float** v : {&d_x, &d_r, &d_p, &d_ap}) EMU_CHECK(cudaMalloc(v, n * sizeof(float)));
  EMU_CHECK(cudaMemcpy(d_offsets, offsets.data(), (n + 1) * sizeof(int), cudaMemcpyHostToDevice));
  EMU_CHECK(cudaMemcpy(d_columns, columns.data(), nnz * sizeof(int), cudaMemcpyHostToDevice));
  EMU_CHECK(cudaMemcpy(d_values, values.data(), nnz * sizeof(float), cudaMemcpyHostToDevice));
  EMU_CHECK(cudaMemset(d_x, 0, n * sizeof(float)));

  cusparseHandle_t handle;
  SPARSE_CHECK(cusparseCreate(&handle));
  cudaStream_t stream;
  EMU_CHECK(cudaStreamCreate(&stream));
  SPARSE_CHECK(cusparseSetStream(handle, stream));
  cusparseSpMatDescr_t a;
  SPARSE_CHECK(cusparseCreateCsr(&a, n, n, nnz, d_offsets, d_columns, d_values, CUSPARSE_INDEX_32I,
                                 CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  cusparseDnVecDescr_t vec_p, vec_ap;
  SPARSE_CHECK(cusparseCreateDnVec(&vec_p, n, d_p, CUDA_R_32F));
  SPARSE_CHECK(cusparseCreateDnVec(&vec_ap, n, d_ap, CUDA_R_32F));
  const float one = 1.0f, zero = 0.0f;
  size_t buffer_size = 0;
  SPARSE_CHECK(cusparseSpMV_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a, vec_p,
                                       &zero, vec_ap, CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT,
                                       &buffer_size));
  void* buffer = nullptr;
  EMU_CHECK(cudaMalloc(&buffer, buffer_size > 0 ? buffer_size : 1));

  const int iterations = 5;
  for (int it = 0; it < iterations; ++it) {
    SPARSE_CHECK(cusparseSpMV(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a, vec_p, &zero,
                              vec_ap, CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, buffer));
    cg_update<<<n / 256, 256, 0, stream>>>(d_x, d_r, d_p, d_ap, n, 0.5f, 0.25f);
    EMU_CHECK(cudaGetLastError());
  }

  // A block of 8 right-hand sides at once (column-major n x 8).
  const int rhs = 8;
  float *d_b = nullptr, *d_c = nullptr;
  EMU_CHECK(cudaMalloc(&d_b, size_t{n} * rhs * sizeof(float)));
  EMU_CHECK(cudaMalloc(&d_c, size_t{n} * rhs * sizeof(float)));
  cusparseDnMatDescr_t mat_b, mat_c;
  SPARSE_CHECK(cusparseCreateDnMat(&mat_b, n, rhs, n, d_b, CUDA_R_32F, CUSPARSE_ORDER_COL));
  SPARSE_CHECK(cusparseCreateDnMat(&mat_c, n, rhs, n, d_c, CUDA_R_32F, CUSPARSE_ORDER_COL));
  size_t spmm_buffer = 0;
  SPARSE_CHECK(cusparseSpMM_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                       CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a, mat_b, &zero,
                                       mat_c, CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, &spmm_buffer));
  SPARSE_CHECK(cusparseSpMM(handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                            CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a, mat_b, &zero, mat_c,
                            CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, buffer));
  EMU_CHECK(cudaStreamSynchronize(stream));

  // A COO descriptor (the row indices stand in: only the descriptor is made).
  cusparseSpMatDescr_t coo;
  const cusparseStatus_t coo_status =
      cusparseCreateCoo(&coo, n, n, nnz, d_columns, d_columns, d_values, CUSPARSE_INDEX_32I,
                        CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F);
  if (coo_status == CUSPARSE_STATUS_SUCCESS) SPARSE_CHECK(cusparseDestroySpMat(coo));

  std::printf(
      "cusparse_cg: %d rows, %d nonzeros, %d CG iterations, SpMM with %d columns, "
      "cusparseCreateCoo -> %s\n",
      n, nnz, iterations, rhs, cusparseGetErrorName(coo_status));
  SPARSE_CHECK(cusparseDestroyDnMat(mat_b));
  SPARSE_CHECK(cusparseDestroyDnMat(mat_c));
  SPARSE_CHECK(cusparseDestroyDnVec(vec_p));
  SPARSE_CHECK(cusparseDestroyDnVec(vec_ap));
  SPARSE_CHECK(cusparseDestroySpMat(a));
  SPARSE_CHECK(cusparseDestroy(handle));
  for (void* p :
       {static_cast<void*>(d_offsets), static_cast<void*>(d_columns), static_cast<void*>(d_values),
        static_cast<void*>(d_x), static_cast<void*>(d_r), static_cast<void*>(d_p),
        static_cast<void*>(d_ap), static_cast<void*>(d_b), static_cast<void*>(d_c), buffer}) {
    EMU_CHECK(cudaFree(p));
  }
  EMU_CHECK(cudaStreamDestroy(stream));
  return 0;
}
