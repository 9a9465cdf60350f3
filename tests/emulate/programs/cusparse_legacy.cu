// cuSPARSE's legacy helpers as CuPy and the CUDALibrarySamples call them: nonzero counts of a
// dense matrix, CSR compression (nnz_compress + csr2csr_compress), matrix addition C = A + 2·B
// (csrgeam2 with Xcsrgeam2Nnz, the total through a device pointer), gemvi with a sparse vector,
// batched interleaved tridiagonal and pentadiagonal solves and a complex gtsv2 (every result
// checked on the host against a direct computation), BSR conversions and products (checked), the
// generic Givens rotation and SpMMOp.
// Valid CUDA: the same binary runs on a real GPU. Written for the emulator's tests.
#define DISABLE_CUSPARSE_DEPRECATED
#include <cuComplex.h>
#include <cusparse.h>

#include <cmath>
#include <complex>
#include <cstdio>
#include <vector>

#include "device_buffers.h"
#include "emu_check.h"
#include "emu_sparse_check.h"

int main() {
  cusparseHandle_t handle;
  SPARSE_CHECK(cusparseCreate(&handle));
  cusparseMatDescr_t descr;
  SPARSE_CHECK(cusparseCreateMatDescr(&descr));

  // Nonzeros per row of a dense 3 x 4 matrix (column-major): rows (1 0 4 0), (0 0 0 0), (2 3 0 5).
  const std::vector<float> dense = {1, 0, 2, 0, 0, 3, 4, 0, 0, 0, 0, 5};
  float* d_dense = to_device(dense);
  int* per_row = nullptr;
  EMU_CHECK(cudaMalloc(&per_row, 3 * sizeof(int)));
  int total = -1;
  SPARSE_CHECK(
      cusparseSnnz(handle, CUSPARSE_DIRECTION_ROW, 3, 4, descr, d_dense, 3, per_row, &total));
  const std::vector<int> rows_counted = to_host(per_row, 3);
  EMU_REQUIRE(total == 5 && rows_counted[0] == 2 && rows_counted[1] == 0 && rows_counted[2] == 3);

  // Compress a CSR matrix: values at or below 0.1 in magnitude are dropped.
  const std::vector<float> values = {1.0f, 0.05f, -2.0f, 0.1f, 3.0f, -0.01f};
  const std::vector<int> offsets = {0, 2, 4, 6}, columns = {0, 2, 1, 3, 0, 2};
  float* d_values = to_device(values);
  int *d_offsets = to_device(offsets), *d_columns = to_device(columns);
  int kept = -1;
  SPARSE_CHECK(cusparseSnnz_compress(handle, 3, descr, d_values, d_offsets, per_row, &kept, 0.1f));
  EMU_REQUIRE(kept == 3);
  float* c_values;
  int *c_columns, *c_offsets;
  EMU_CHECK(cudaMalloc(&c_values, kept * sizeof(float)));
  EMU_CHECK(cudaMalloc(&c_columns, kept * sizeof(int)));
  EMU_CHECK(cudaMalloc(&c_offsets, 4 * sizeof(int)));
  SPARSE_CHECK(cusparseScsr2csr_compress(handle, 3, 4, descr, d_values, d_columns, d_offsets, 6,
                                         per_row, c_values, c_columns, c_offsets, 0.1f));
  const std::vector<float> compressed = to_host(c_values, 3);
  const std::vector<int> compressed_offsets = to_host(c_offsets, 4);
  const bool compress_ok = compressed[0] == 1.0f && compressed[1] == -2.0f &&
                           compressed[2] == 3.0f && compressed_offsets[3] == 3 &&
                           compressed_offsets[1] == 1 && compressed_offsets[2] == 2;

  // C = A + 2·B: A rows {0:1, 2:2}, {1:3}, {}; B rows {2:1}, {0:1, 1:1}, {2:4}.
  const std::vector<double> a_values = {1, 2, 3}, b_values = {1, 1, 1, 4};
  const std::vector<int> a_offsets = {0, 2, 3, 3}, a_columns = {0, 2, 1};
  const std::vector<int> b_offsets = {0, 1, 3, 4}, b_columns = {2, 0, 1, 2};
  double *da = to_device(a_values), *db = to_device(b_values);
  int *da_off = to_device(a_offsets), *da_col = to_device(a_columns);
  int *db_off = to_device(b_offsets), *db_col = to_device(b_columns);
  int *dc_off, *dc_total;
  EMU_CHECK(cudaMalloc(&dc_off, 4 * sizeof(int)));
  EMU_CHECK(cudaMalloc(&dc_total, sizeof(int)));
  const double one = 1.0, two = 2.0;
  size_t geam_bytes = 0;
  SPARSE_CHECK(cusparseDcsrgeam2_bufferSizeExt(handle, 3, 3, &one, descr, 3, da, da_off, da_col,
                                               &two, descr, 4, db, db_off, db_col, descr, nullptr,
                                               dc_off, nullptr, &geam_bytes));
  void* geam_buffer;
  EMU_CHECK(cudaMalloc(&geam_buffer, geam_bytes));
  SPARSE_CHECK(cusparseSetPointerMode(handle, CUSPARSE_POINTER_MODE_DEVICE));
  SPARSE_CHECK(cusparseXcsrgeam2Nnz(handle, 3, 3, descr, 3, da_off, da_col, descr, 4, db_off,
                                    db_col, descr, dc_off, dc_total, geam_buffer));
  SPARSE_CHECK(cusparseSetPointerMode(handle, CUSPARSE_POINTER_MODE_HOST));
  const int nnz_c = to_host(dc_total, 1)[0];
  EMU_REQUIRE(nnz_c == 5);
  double* dc;
  int* dc_col;
  EMU_CHECK(cudaMalloc(&dc, nnz_c * sizeof(double)));
  EMU_CHECK(cudaMalloc(&dc_col, nnz_c * sizeof(int)));
  SPARSE_CHECK(cusparseDcsrgeam2(handle, 3, 3, &one, descr, 3, da, da_off, da_col, &two, descr, 4,
                                 db, db_off, db_col, descr, dc, dc_off, dc_col, geam_buffer));
  const std::vector<double> sum = to_host(dc, 5);
  const std::vector<int> sum_columns = to_host(dc_col, 5);
  // Row 0: (0, 1), (2, 2 + 2); row 1: (0, 2), (1, 3 + 2); row 2: (2, 8).
  const bool geam_ok = sum[0] == 1 && sum_columns[1] == 2 && sum[1] == 4 && sum[2] == 2 &&
                       sum[3] == 5 && sum_columns[4] == 2 && sum[4] == 8;

  // y = A·x with A dense 3 x 4 (the matrix above) and x sparse: x[1] = 2, x[3] = -1.
  const std::vector<float> x_values = {2.0f, -1.0f};
  const std::vector<int> x_indices = {1, 3};
  float* dx_values = to_device(x_values);
  int* dx_indices = to_device(x_indices);
  float* dy = to_device(std::vector<float>(3, 10.0f));
  int gemvi_bytes = 0;
  SPARSE_CHECK(
      cusparseSgemvi_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, 3, 4, 2, &gemvi_bytes));
  void* gemvi_buffer;
  EMU_CHECK(cudaMalloc(&gemvi_buffer, gemvi_bytes));
  const float onef = 1.0f, half = 0.5f;
  SPARSE_CHECK(cusparseSgemvi(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, 3, 4, &onef, d_dense, 3, 2,
                              dx_values, dx_indices, &half, dy, CUSPARSE_INDEX_BASE_ZERO,
                              gemvi_buffer));
  const std::vector<float> y = to_host(dy, 3);
  // A·x = 2·column 1 − column 3 = (0, 0, 6) − (0, 0, 5) = (0, 0, 1); plus 0.5·10.
  const bool gemvi_ok = y[0] == 5.0f && y[1] == 5.0f && y[2] == 6.0f;

  // 3 interleaved systems of 6 rows: tridiagonal (4 on the diagonal, -1 off it) and
  // pentadiagonal (6 on the diagonal, -1 and 0.5 off it), right-hand sides k + i.
  const int m = 6, batch = 3;
  std::vector<double> ds(m * batch), dl(m * batch), dd(m * batch), du(m * batch), dw(m * batch),
      rhs(m * batch);
  for (int i = 0; i < m; ++i) {
    for (int k = 0; k < batch; ++k) {
      const int at = i * batch + k;
      ds[at] = i >= 2 ? 0.5 : 0, dl[at] = i >= 1 ? -1 : 0, dd[at] = 4 + k,
      du[at] = i + 1 < m ? -1 : 0;
      dw[at] = i + 2 < m ? 0.5 : 0, rhs[at] = k + i;
    }
  }
  double *g_dl = to_device(dl), *g_d = to_device(dd), *g_du = to_device(du), *g_x = to_device(rhs);
  size_t interleaved_bytes = 0;
  SPARSE_CHECK(cusparseDgtsvInterleavedBatch_bufferSizeExt(handle, 0, m, g_dl, g_d, g_du, g_x,
                                                           batch, &interleaved_bytes));
  void* interleaved_buffer;
  EMU_CHECK(cudaMalloc(&interleaved_buffer, interleaved_bytes));
  SPARSE_CHECK(
      cusparseDgtsvInterleavedBatch(handle, 0, m, g_dl, g_d, g_du, g_x, batch, interleaved_buffer));
  const std::vector<double> tri = to_host(g_x, m * batch);
  double *p_ds = to_device(ds), *p_dl = to_device(dl), *p_d = to_device(dd), *p_du = to_device(du),
         *p_dw = to_device(dw), *p_x = to_device(rhs);
  SPARSE_CHECK(cusparseDgpsvInterleavedBatch(handle, 0, m, p_ds, p_dl, p_d, p_du, p_dw, p_x, batch,
                                             interleaved_buffer));
  const std::vector<double> penta = to_host(p_x, m * batch);
  double residual = 0;
  for (int k = 0; k < batch; ++k) {
    for (int i = 0; i < m; ++i) {
      const auto at = [&](int row) { return row * batch + k; };
      double t = dd[at(i)] * tri[at(i)], p = dd[at(i)] * penta[at(i)];
      if (i >= 1) t += dl[at(i)] * tri[at(i - 1)], p += dl[at(i)] * penta[at(i - 1)];
      if (i + 1 < m) t += du[at(i)] * tri[at(i + 1)], p += du[at(i)] * penta[at(i + 1)];
      if (i >= 2) p += ds[at(i)] * penta[at(i - 2)];
      if (i + 2 < m) p += dw[at(i)] * penta[at(i + 2)];
      residual =
          std::fmax(residual, std::fmax(std::fabs(t - rhs[at(i)]), std::fabs(p - rhs[at(i)])));
    }
  }

  // A complex tridiagonal system of 4 rows with partial pivoting (cgtsv2).
  using cf = std::complex<float>;
  const std::vector<cf> c_dl = {{0, 0}, {1, 1}, {0, 2}, {1, 0}};
  const std::vector<cf> c_d = {{1, 0}, {3, -1}, {2, 2}, {5, 0}};
  const std::vector<cf> c_du = {{2, 1}, {0, 1}, {1, -1}, {0, 0}};
  const std::vector<cf> c_b = {{1, 0}, {0, 1}, {2, 0}, {1, 1}};
  auto* g_cdl = reinterpret_cast<cuComplex*>(to_device(c_dl));
  auto* g_cd = reinterpret_cast<cuComplex*>(to_device(c_d));
  auto* g_cdu = reinterpret_cast<cuComplex*>(to_device(c_du));
  auto* g_cb = reinterpret_cast<cuComplex*>(to_device(c_b));
  size_t complex_bytes = 0;
  SPARSE_CHECK(
      cusparseCgtsv2_bufferSizeExt(handle, 4, 1, g_cdl, g_cd, g_cdu, g_cb, 4, &complex_bytes));
  void* complex_buffer;
  EMU_CHECK(cudaMalloc(&complex_buffer, complex_bytes));
  SPARSE_CHECK(cusparseCgtsv2(handle, 4, 1, g_cdl, g_cd, g_cdu, g_cb, 4, complex_buffer));
  const std::vector<cf> cx = to_host(reinterpret_cast<cf*>(g_cb), 4);
  float complex_residual = 0;
  for (int i = 0; i < 4; ++i) {
    cf ax = c_d[i] * cx[i];
    if (i > 0) ax += c_dl[i] * cx[i - 1];
    if (i < 3) ax += c_du[i] * cx[i + 1];
    complex_residual = std::fmax(complex_residual, std::abs(ax - c_b[i]));
  }
  // BSR: a 4 x 4 CSR matrix in 2 x 2 blocks (row-major inside a block), y = A·x by blocks, a
  // 2-column product, and back to CSR (every entry of every block).
  const std::vector<double> s_values = {1, 2, 3, 4, 5, 6};
  const std::vector<int> s_offsets = {0, 2, 3, 4, 6}, s_columns = {0, 3, 1, 2, 0, 3};
  double* ds_values = to_device(s_values);
  int *ds_offsets = to_device(s_offsets), *ds_columns = to_device(s_columns);
  int *db_offsets, nnzb = -1;
  EMU_CHECK(cudaMalloc(&db_offsets, 3 * sizeof(int)));
  SPARSE_CHECK(cusparseXcsr2bsrNnz(handle, CUSPARSE_DIRECTION_ROW, 4, 4, descr, ds_offsets,
                                   ds_columns, 2, descr, db_offsets, &nnzb));
  double* db_values;
  int* db_columns;
  EMU_CHECK(cudaMalloc(&db_values, nnzb * 4 * sizeof(double)));
  EMU_CHECK(cudaMalloc(&db_columns, nnzb * sizeof(int)));
  SPARSE_CHECK(cusparseDcsr2bsr(handle, CUSPARSE_DIRECTION_ROW, 4, 4, descr, ds_values, ds_offsets,
                                ds_columns, 2, descr, db_values, db_offsets, db_columns));
  double* bx = to_device(std::vector<double>{1, 2, 3, 4});
  // With beta 0, y is output only: NaN in it must not reach the result.
  double* by = to_device(std::vector<double>(4, std::nan("")));
  const double zero = 0.0;
  SPARSE_CHECK(cusparseDbsrmv(handle, CUSPARSE_DIRECTION_ROW, CUSPARSE_OPERATION_NON_TRANSPOSE, 2,
                              2, nnzb, &one, descr, db_values, db_offsets, db_columns, 2, bx, &zero,
                              by));
  // Rows: 1·1 + 2·4, 3·2, 4·3, 5·1 + 6·4.
  const std::vector<double> block_y = to_host(by, 4);
  double* bm = to_device(std::vector<double>{1, 2, 3, 4, 1, 1, 1, 1});  // 4 x 2, column-major
  double* bc = to_device(std::vector<double>(8, 0.0));
  SPARSE_CHECK(cusparseDbsrmm(handle, CUSPARSE_DIRECTION_ROW, CUSPARSE_OPERATION_NON_TRANSPOSE,
                              CUSPARSE_OPERATION_NON_TRANSPOSE, 2, 2, 2, nnzb, &one, descr,
                              db_values, db_offsets, db_columns, 2, bm, 4, &zero, bc, 4));
  const std::vector<double> block_c = to_host(bc, 8);
  double* dr_values;
  int *dr_offsets, *dr_columns;
  EMU_CHECK(cudaMalloc(&dr_values, nnzb * 4 * sizeof(double)));
  EMU_CHECK(cudaMalloc(&dr_offsets, 5 * sizeof(int)));
  EMU_CHECK(cudaMalloc(&dr_columns, nnzb * 4 * sizeof(int)));
  SPARSE_CHECK(cusparseDbsr2csr(handle, CUSPARSE_DIRECTION_ROW, 2, 2, descr, db_values, db_offsets,
                                db_columns, 2, descr, dr_values, dr_offsets, dr_columns));
  const std::vector<int> round_offsets = to_host(dr_offsets, 5);
  const bool bsr_ok_products = nnzb == 4 && block_y[0] == 9 && block_y[1] == 6 &&
                               block_y[2] == 12 && block_y[3] == 29 && block_c[0] == 9 &&
                               block_c[4] == 3 && block_c[7] == 11 && round_offsets[4] == nnzb * 4;

  // Incomplete Cholesky on the blocks, then a block triangular solve (recorded, not computed).
  bsric02Info_t ic_info;
  bsrsv2Info_t sv_info;
  SPARSE_CHECK(cusparseCreateBsric02Info(&ic_info));
  SPARSE_CHECK(cusparseCreateBsrsv2Info(&sv_info));
  int ic_bytes = -1, sv_bytes = -1;
  SPARSE_CHECK(cusparseDbsric02_bufferSize(handle, CUSPARSE_DIRECTION_ROW, 2, nnzb, descr,
                                           db_values, db_offsets, db_columns, 2, ic_info,
                                           &ic_bytes));
  SPARSE_CHECK(cusparseDbsric02_analysis(handle, CUSPARSE_DIRECTION_ROW, 2, nnzb, descr, db_values,
                                         db_offsets, db_columns, 2, ic_info,
                                         CUSPARSE_SOLVE_POLICY_NO_LEVEL, nullptr));
  SPARSE_CHECK(cusparseDbsric02(handle, CUSPARSE_DIRECTION_ROW, 2, nnzb, descr, db_values,
                                db_offsets, db_columns, 2, ic_info, CUSPARSE_SOLVE_POLICY_NO_LEVEL,
                                nullptr));
  int pivot = 0;
  SPARSE_CHECK(cusparseXbsric02_zeroPivot(handle, ic_info, &pivot));
  SPARSE_CHECK(cusparseDbsrsv2_bufferSize(
      handle, CUSPARSE_DIRECTION_ROW, CUSPARSE_OPERATION_NON_TRANSPOSE, 2, nnzb, descr, db_values,
      db_offsets, db_columns, 2, sv_info, &sv_bytes));
  SPARSE_CHECK(cusparseDbsrsv2_analysis(
      handle, CUSPARSE_DIRECTION_ROW, CUSPARSE_OPERATION_NON_TRANSPOSE, 2, nnzb, descr, db_values,
      db_offsets, db_columns, 2, sv_info, CUSPARSE_SOLVE_POLICY_NO_LEVEL, nullptr));
  SPARSE_CHECK(cusparseDbsrsv2_solve(handle, CUSPARSE_DIRECTION_ROW,
                                     CUSPARSE_OPERATION_NON_TRANSPOSE, 2, nnzb, &one, descr,
                                     db_values, db_offsets, db_columns, 2, sv_info, bx, by,
                                     CUSPARSE_SOLVE_POLICY_NO_LEVEL, nullptr));
  SPARSE_CHECK(cusparseDestroyBsric02Info(ic_info));
  SPARSE_CHECK(cusparseDestroyBsrsv2Info(sv_info));
  const bool block_solve_ok = ic_bytes >= 0 && sv_bytes >= 0 && pivot == -1;

  const bool bsr_ok = bsr_ok_products && block_solve_ok;

  // The generic Givens rotation on a sparse x (entries 0 and 2) against a dense y of 3.
  cusparseSpVecDescr_t rot_x;
  cusparseDnVecDescr_t rot_y;
  float* rot_values = to_device(std::vector<float>{1.0f, 2.0f});
  int* rot_indices = to_device(std::vector<int>{0, 2});
  float* rot_dense = to_device(std::vector<float>{3.0f, 4.0f, 5.0f});
  SPARSE_CHECK(cusparseCreateSpVec(&rot_x, 3, 2, rot_indices, rot_values, CUSPARSE_INDEX_32I,
                                   CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  SPARSE_CHECK(cusparseCreateDnVec(&rot_y, 3, rot_dense, CUDA_R_32F));
  const float cosine = 0.6f, sine = 0.8f;
  SPARSE_CHECK(cusparseRot(handle, &cosine, &sine, rot_x, rot_y));

  // SpMMOp with custom operators: the operators must be NVVM LTO buffers compiled for the GPU
  // (nvcc -dlto); these placeholder bytes are not, so a real cuSPARSE refuses the plan and the
  // program goes on without it. The emulator accepts any non-empty buffers and records the SpMM.
  cusparseSpMatDescr_t op_a;
  cusparseDnMatDescr_t op_b, op_c;
  double* op_dense_b = to_device(std::vector<double>(3 * 2, 1.0));
  double* op_dense_c = to_device(std::vector<double>(3 * 2, 0.0));
  SPARSE_CHECK(cusparseCreateCsr(&op_a, 3, 3, 3, da_off, da_col, da, CUSPARSE_INDEX_32I,
                                 CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
  SPARSE_CHECK(cusparseCreateDnMat(&op_b, 3, 2, 3, op_dense_b, CUDA_R_64F, CUSPARSE_ORDER_COL));
  SPARSE_CHECK(cusparseCreateDnMat(&op_c, 3, 2, 3, op_dense_c, CUDA_R_64F, CUSPARSE_ORDER_COL));
  const char placeholder[16] = "not an LTO IR";
  cusparseSpMMOpPlan_t plan = nullptr;
  size_t op_workspace = 0;
  const bool planned =
      cusparseSpMMOp_createPlan(handle, &plan, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                CUSPARSE_OPERATION_NON_TRANSPOSE, op_a, op_b, op_c, CUDA_R_64F,
                                CUSPARSE_SPMM_OP_ALG_DEFAULT, placeholder, sizeof(placeholder),
                                placeholder, sizeof(placeholder), placeholder, sizeof(placeholder),
                                &op_workspace) == CUSPARSE_STATUS_SUCCESS;
  if (planned) {
    void* op_buffer = nullptr;
    if (op_workspace > 0) EMU_CHECK(cudaMalloc(&op_buffer, op_workspace));
    SPARSE_CHECK(cusparseSpMMOp(plan, op_buffer));
    SPARSE_CHECK(cusparseSpMMOp_destroyPlan(plan));
  }
  // bsrxmv on the second block row only (a mask of one row).
  int* mask = to_device(std::vector<int>{1});
  SPARSE_CHECK(cusparseDbsrxmv(handle, CUSPARSE_DIRECTION_ROW, CUSPARSE_OPERATION_NON_TRANSPOSE, 1,
                               2, 2, nnzb, &one, descr, db_values, mask, db_offsets, db_offsets + 1,
                               db_columns, 2, bx, &zero, by));
  EMU_CHECK(cudaDeviceSynchronize());

  std::printf(
      "cusparse_legacy: nnz 5, compressed to %d (%s), A + 2B has %d entries (%s), gemvi (%s), "
      "interleaved residual below 1e-12 (%s), complex gtsv2 residual below 1e-5 (%s), BSR (%s)\n",
      kept, compress_ok ? "yes" : "no", nnz_c, geam_ok ? "yes" : "no", gemvi_ok ? "yes" : "no",
      residual < 1e-12 ? "yes" : "no", complex_residual < 1e-5f ? "yes" : "no",
      bsr_ok ? "yes" : "no");
  SPARSE_CHECK(cusparseDestroyMatDescr(descr));
  SPARSE_CHECK(cusparseDestroy(handle));
  return compress_ok && geam_ok && gemvi_ok && bsr_ok && residual < 1e-12 &&
                 complex_residual < 1e-5f
             ? 0
             : 1;
}
