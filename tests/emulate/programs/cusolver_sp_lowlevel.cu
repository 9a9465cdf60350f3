// cuSOLVER's low-level sparse API and cusolverRf in the style of NVIDIA's
// cuSolverSp_LowlevelCholesky, cuSolverSp_LowlevelQR and cuSolverRf samples, on generated matrices
// instead of .mtx files. Valid CUDA: the same binary runs on a real GPU.
//   1. Cholesky of the 2D Laplacian (32 x 32 grid, n = 1024, base 0): host info (analysis, buffer
//      sizes, factor, zero pivot, solve; the residual checked here) and device info (the same
//      steps on device arrays, then csrcholDiag).
//   2. QR of the same matrix: host (mu = 0, then a shift mu = 0.5 checked on (A − mu·I)·x = b, then
//      the tall [A; I] least squares checked by its normal-equation gradient) and device (setup,
//      factor, zero pivot, solve).
//   3. LU of a tridiagonal matrix that needs row exchanges (n = 200: 2 on the diagonal, −3 below,
//      1 above): host analysis, factor with pivot threshold 1, zero pivot, solve (residual), the
//      nnz of L and U and their extraction, checked as P·A·Qᵀ = L·U entry by entry (L with an
//      implicit unit diagonal); then cusolverRf as the sample uses it: settings, setup from the
//      host factors, analysis, reset from device arrays, refactor, solve, the bundled factor on
//      the device and the split factors on the host; then the same factors in CSC to a second
//      handle, whose bundled factor comes back as the transpose of the first's arrays.
//   4. Misuse: a device Cholesky factor on an info that was never analysed is refused.
// Written for the emulator's tests.
#define DISABLE_CUSOLVER_DEPRECATED
#define DISABLE_CUSPARSE_DEPRECATED
#include <cusolverRf.h>
#include <cusolverSp.h>
#include <cusolverSp_LOWLEVEL_PREVIEW.h>
#include <cusparse.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "device_buffers.h"
#include "emu_check.h"
#include "laplacian.h"
#include "library_check.h"

int main() {
  const int grid = 32, n = grid * grid;
  std::vector<int> offsets, columns;
  std::vector<double> values;
  const int nnz = laplacian_2d(grid, offsets, columns, values);
  std::vector<double> b(n), x(n);
  for (int i = 0; i < n; ++i) b[i] = 1.0 + static_cast<double>(i) / n;
  const double tol = 1e-12;

  cusolverSpHandle_t solver;
  cudaStream_t stream;
  LIBRARY_CHECK(cusolverSpCreate(&solver));
  EMU_CHECK(cudaStreamCreate(&stream));
  LIBRARY_CHECK(cusolverSpSetStream(solver, stream));
  cusparseMatDescr_t descr;
  LIBRARY_CHECK(cusparseCreateMatDescr(&descr));
  LIBRARY_CHECK(cusparseSetMatType(descr, CUSPARSE_MATRIX_TYPE_GENERAL));
  LIBRARY_CHECK(cusparseSetMatIndexBase(descr, CUSPARSE_INDEX_BASE_ZERO));
  int* d_offsets = to_device(offsets);
  int* d_columns = to_device(columns);
  double* d_values = to_device(values);
  double* d_b = to_device(b);
  double* d_x = to_device(x);

  // 1. Cholesky, host then device.
  csrcholInfoHost_t chol_host;
  size_t internal_bytes = 0, workspace_bytes = 0;
  int singularity = 0;
  LIBRARY_CHECK(cusolverSpCreateCsrcholInfoHost(&chol_host));
  LIBRARY_CHECK(cusolverSpXcsrcholAnalysisHost(solver, n, nnz, descr, offsets.data(),
                                               columns.data(), chol_host));
  LIBRARY_CHECK(cusolverSpDcsrcholBufferInfoHost(solver, n, nnz, descr, values.data(),
                                                 offsets.data(), columns.data(), chol_host,
                                                 &internal_bytes, &workspace_bytes));
  std::vector<char> host_buffer(workspace_bytes);
  LIBRARY_CHECK(cusolverSpDcsrcholFactorHost(solver, n, nnz, descr, values.data(), offsets.data(),
                                             columns.data(), chol_host, host_buffer.data()));
  LIBRARY_CHECK(cusolverSpDcsrcholZeroPivotHost(solver, chol_host, tol, &singularity));
  EMU_REQUIRE(singularity == -1);
  LIBRARY_CHECK(
      cusolverSpDcsrcholSolveHost(solver, n, b.data(), x.data(), chol_host, host_buffer.data()));
  const double chol_residual = relative_residual(n, offsets, columns, values, x, b);
  EMU_REQUIRE(chol_residual < 1e-12);
  LIBRARY_CHECK(cusolverSpDestroyCsrcholInfoHost(chol_host));

  csrcholInfo_t chol_device;
  LIBRARY_CHECK(cusolverSpCreateCsrcholInfo(&chol_device));
  LIBRARY_CHECK(
      cusolverSpXcsrcholAnalysis(solver, n, nnz, descr, d_offsets, d_columns, chol_device));
  LIBRARY_CHECK(cusolverSpDcsrcholBufferInfo(solver, n, nnz, descr, d_values, d_offsets, d_columns,
                                             chol_device, &internal_bytes, &workspace_bytes));
  void* device_buffer = nullptr;
  EMU_CHECK(cudaMalloc(&device_buffer, std::max<size_t>(workspace_bytes, 1)));
  LIBRARY_CHECK(cusolverSpDcsrcholFactor(solver, n, nnz, descr, d_values, d_offsets, d_columns,
                                         chol_device, device_buffer));
  LIBRARY_CHECK(cusolverSpDcsrcholZeroPivot(solver, chol_device, tol, &singularity));
  const int device_chol_singularity = singularity;
  LIBRARY_CHECK(cusolverSpDcsrcholSolve(solver, n, d_b, d_x, chol_device, device_buffer));
  double* d_diag = nullptr;
  EMU_CHECK(cudaMalloc(&d_diag, n * sizeof(double)));
  LIBRARY_CHECK(cusolverSpDcsrcholDiag(solver, chol_device, d_diag));
  LIBRARY_CHECK(cusolverSpDestroyCsrcholInfo(chol_device));

  // 2. QR: host (plain, shifted, tall), then device.
  csrqrInfoHost_t qr_host;
  LIBRARY_CHECK(cusolverSpCreateCsrqrInfoHost(&qr_host));
  LIBRARY_CHECK(cusolverSpXcsrqrAnalysisHost(solver, n, n, nnz, descr, offsets.data(),
                                             columns.data(), qr_host));
  LIBRARY_CHECK(cusolverSpDcsrqrBufferInfoHost(solver, n, n, nnz, descr, values.data(),
                                               offsets.data(), columns.data(), qr_host,
                                               &internal_bytes, &workspace_bytes));
  host_buffer.assign(workspace_bytes, 0);
  double worst_qr = 0;
  for (double mu : {0.0, 0.5}) {
    std::vector<double> rhs = b;
    LIBRARY_CHECK(cusolverSpDcsrqrSetupHost(solver, n, n, nnz, descr, values.data(), offsets.data(),
                                            columns.data(), mu, qr_host));
    LIBRARY_CHECK(cusolverSpDcsrqrFactorHost(solver, n, n, nnz, nullptr, nullptr, qr_host,
                                             host_buffer.data()));
    LIBRARY_CHECK(cusolverSpDcsrqrZeroPivotHost(solver, qr_host, tol, &singularity));
    EMU_REQUIRE(singularity == -1);
    LIBRARY_CHECK(
        cusolverSpDcsrqrSolveHost(solver, n, n, rhs.data(), x.data(), qr_host, host_buffer.data()));
    worst_qr = std::max(worst_qr, relative_residual(n, offsets, columns, values, x, b, mu));
  }
  EMU_REQUIRE(worst_qr < 1e-12);
  LIBRARY_CHECK(cusolverSpDestroyCsrqrInfoHost(qr_host));
  // [A; I] (2n x n): min ‖[A; I]·x − [b; 0]‖, whose gradient Aᵀ(A·x − b) + x vanishes.
  std::vector<int> tall_offsets = offsets, tall_columns = columns;
  std::vector<double> tall_values = values, tall_b = b;
  for (int i = 0; i < n; ++i) {
    tall_columns.push_back(i);
    tall_values.push_back(1.0);
    tall_offsets.push_back(static_cast<int>(tall_columns.size()));
    tall_b.push_back(0.0);
  }
  const int tall_nnz = static_cast<int>(tall_columns.size());
  LIBRARY_CHECK(cusolverSpCreateCsrqrInfoHost(&qr_host));
  LIBRARY_CHECK(cusolverSpXcsrqrAnalysisHost(solver, 2 * n, n, tall_nnz, descr, tall_offsets.data(),
                                             tall_columns.data(), qr_host));
  LIBRARY_CHECK(cusolverSpDcsrqrSetupHost(solver, 2 * n, n, tall_nnz, descr, tall_values.data(),
                                          tall_offsets.data(), tall_columns.data(), 0.0, qr_host));
  LIBRARY_CHECK(cusolverSpDcsrqrFactorHost(solver, 2 * n, n, tall_nnz, nullptr, nullptr, qr_host,
                                           host_buffer.data()));
  LIBRARY_CHECK(cusolverSpDcsrqrSolveHost(solver, 2 * n, n, tall_b.data(), x.data(), qr_host,
                                          host_buffer.data()));
  std::vector<double> ax(n, 0.0), gradient(x);
  for (int i = 0; i < n; ++i) {
    for (int k = offsets[i]; k < offsets[i + 1]; ++k) ax[i] += values[k] * x[columns[k]];
  }
  double gradient_inf = 0;
  for (int i = 0; i < n; ++i) {
    for (int k = offsets[i]; k < offsets[i + 1]; ++k)
      gradient[columns[k]] += values[k] * (ax[i] - b[i]);
  }
  for (double g : gradient) gradient_inf = std::max(gradient_inf, std::fabs(g));
  EMU_REQUIRE(gradient_inf < 1e-10);
  LIBRARY_CHECK(cusolverSpDestroyCsrqrInfoHost(qr_host));

  csrqrInfo_t qr_device;
  LIBRARY_CHECK(cusolverSpCreateCsrqrInfo(&qr_device));
  LIBRARY_CHECK(
      cusolverSpXcsrqrAnalysis(solver, n, n, nnz, descr, d_offsets, d_columns, qr_device));
  LIBRARY_CHECK(cusolverSpDcsrqrBufferInfo(solver, n, n, nnz, descr, d_values, d_offsets, d_columns,
                                           qr_device, &internal_bytes, &workspace_bytes));
  EMU_CHECK(cudaFree(device_buffer));
  EMU_CHECK(cudaMalloc(&device_buffer, std::max<size_t>(workspace_bytes, 1)));
  LIBRARY_CHECK(cusolverSpDcsrqrSetup(solver, n, n, nnz, descr, d_values, d_offsets, d_columns, 0.0,
                                      qr_device));
  LIBRARY_CHECK(
      cusolverSpDcsrqrFactor(solver, n, n, nnz, nullptr, nullptr, qr_device, device_buffer));
  LIBRARY_CHECK(cusolverSpDcsrqrZeroPivot(solver, qr_device, tol, &singularity));
  const int device_qr_singularity = singularity;
  LIBRARY_CHECK(cusolverSpDcsrqrSolve(solver, n, n, d_b, d_x, qr_device, device_buffer));
  LIBRARY_CHECK(cusolverSpDestroyCsrqrInfo(qr_device));

  // 3. LU with row exchanges, extracted, then cusolverRf.
  const int m = 200;
  std::vector<int> lu_offsets(1, 0), lu_columns;
  std::vector<double> lu_values;
  for (int i = 0; i < m; ++i) {
    for (int j = i - 1; j <= i + 1; ++j) {
      if (j < 0 || j >= m) continue;
      lu_columns.push_back(j);
      lu_values.push_back(j == i ? 2.0 : j < i ? -3.0 : 1.0);
    }
    lu_offsets.push_back(static_cast<int>(lu_columns.size()));
  }
  const int lu_nnz = static_cast<int>(lu_columns.size());
  std::vector<double> lu_b(m, 1.0), lu_x(m);
  csrluInfoHost_t lu_host;
  LIBRARY_CHECK(cusolverSpCreateCsrluInfoHost(&lu_host));
  LIBRARY_CHECK(cusolverSpXcsrluAnalysisHost(solver, m, lu_nnz, descr, lu_offsets.data(),
                                             lu_columns.data(), lu_host));
  LIBRARY_CHECK(cusolverSpDcsrluBufferInfoHost(solver, m, lu_nnz, descr, lu_values.data(),
                                               lu_offsets.data(), lu_columns.data(), lu_host,
                                               &internal_bytes, &workspace_bytes));
  host_buffer.assign(workspace_bytes, 0);
  LIBRARY_CHECK(cusolverSpDcsrluFactorHost(solver, m, lu_nnz, descr, lu_values.data(),
                                           lu_offsets.data(), lu_columns.data(), lu_host, 1.0,
                                           host_buffer.data()));
  LIBRARY_CHECK(cusolverSpDcsrluZeroPivotHost(solver, lu_host, tol, &singularity));
  EMU_REQUIRE(singularity == -1);
  LIBRARY_CHECK(
      cusolverSpDcsrluSolveHost(solver, m, lu_b.data(), lu_x.data(), lu_host, host_buffer.data()));
  const double lu_residual = relative_residual(m, lu_offsets, lu_columns, lu_values, lu_x, lu_b);
  EMU_REQUIRE(lu_residual < 1e-12);
  int nnz_l = 0, nnz_u = 0;
  LIBRARY_CHECK(cusolverSpXcsrluNnzHost(solver, &nnz_l, &nnz_u, lu_host));
  std::vector<int> p(m), q(m), l_offsets(m + 1), l_columns(nnz_l), u_offsets(m + 1),
      u_columns(nnz_u);
  std::vector<double> l_values(nnz_l), u_values(nnz_u);
  LIBRARY_CHECK(cusolverSpDcsrluExtractHost(
      solver, p.data(), q.data(), descr, l_values.data(), l_offsets.data(), l_columns.data(), descr,
      u_values.data(), u_offsets.data(), u_columns.data(), lu_host, host_buffer.data()));
  // P·A·Qᵀ = L·U, dense (m = 200).
  std::vector<double> dense_l(m * m, 0.0), dense_u(m * m, 0.0);
  int exchanges = 0;
  for (int i = 0; i < m; ++i) {
    dense_l[i * m + i] = 1.0;
    for (int k = l_offsets[i]; k < l_offsets[i + 1]; ++k) {
      EMU_REQUIRE(l_columns[k] < i);
      dense_l[i * m + l_columns[k]] = l_values[k];
    }
    for (int k = u_offsets[i]; k < u_offsets[i + 1]; ++k) {
      EMU_REQUIRE(u_columns[k] >= i);
      dense_u[i * m + u_columns[k]] = u_values[k];
    }
    if (p[i] != i) ++exchanges;
  }
  double factor_error = 0;
  for (int i = 0; i < m; ++i) {
    std::vector<double> row(m, 0.0);  // row p[i] of A, columns through Q
    for (int k = lu_offsets[p[i]]; k < lu_offsets[p[i] + 1]; ++k) row[lu_columns[k]] = lu_values[k];
    for (int j = 0; j < m; ++j) {
      double lu = 0;
      for (int k = 0; k < m; ++k) lu += dense_l[i * m + k] * dense_u[k * m + j];
      factor_error = std::max(factor_error, std::fabs(lu - row[q[j]]));
    }
  }
  EMU_REQUIRE(factor_error < 1e-12);
  EMU_REQUIRE(exchanges > 0);
  LIBRARY_CHECK(cusolverSpDestroyCsrluInfoHost(lu_host));

  cusolverRfHandle_t rf;
  LIBRARY_CHECK(cusolverRfCreate(&rf));
  LIBRARY_CHECK(cusolverRfSetNumericProperties(rf, 0.0, 0.0));
  LIBRARY_CHECK(
      cusolverRfSetAlgs(rf, CUSOLVERRF_FACTORIZATION_ALG0, CUSOLVERRF_TRIANGULAR_SOLVE_ALG1));
  LIBRARY_CHECK(cusolverRfSetMatrixFormat(rf, CUSOLVERRF_MATRIX_FORMAT_CSR,
                                          CUSOLVERRF_UNIT_DIAGONAL_ASSUMED_L));
  LIBRARY_CHECK(cusolverRfSetResetValuesFastMode(rf, CUSOLVERRF_RESET_VALUES_FAST_MODE_ON));
  LIBRARY_CHECK(cusolverRfSetupHost(m, lu_nnz, lu_offsets.data(), lu_columns.data(),
                                    lu_values.data(), nnz_l, l_offsets.data(), l_columns.data(),
                                    l_values.data(), nnz_u, u_offsets.data(), u_columns.data(),
                                    u_values.data(), p.data(), q.data(), rf));
  EMU_CHECK(cudaDeviceSynchronize());
  LIBRARY_CHECK(cusolverRfAnalyze(rf));
  int* d_lu_offsets = to_device(lu_offsets);
  int* d_lu_columns = to_device(lu_columns);
  double* d_lu_values = to_device(lu_values);
  int* d_p = to_device(p);
  int* d_q = to_device(q);
  double* d_lu_x = to_device(lu_b);
  double* d_temp = to_device(std::vector<double>(m, 0.0));
  LIBRARY_CHECK(
      cusolverRfResetValues(m, lu_nnz, d_lu_offsets, d_lu_columns, d_lu_values, d_p, d_q, rf));
  LIBRARY_CHECK(cusolverRfRefactor(rf));
  LIBRARY_CHECK(cusolverRfSolve(rf, d_p, d_q, 1, d_temp, m, d_lu_x, m));
  EMU_CHECK(cudaDeviceSynchronize());
  int nnz_m = 0, *d_m_offsets = nullptr, *d_m_columns = nullptr;
  double* d_m_values = nullptr;
  LIBRARY_CHECK(
      cusolverRfAccessBundledFactorsDevice(rf, &nnz_m, &d_m_offsets, &d_m_columns, &d_m_values));
  EMU_REQUIRE(nnz_m == nnz_l + nnz_u && d_m_offsets != nullptr && d_m_values != nullptr);
  int split_l = 0, split_u = 0, *h_l_offsets = nullptr, *h_l_columns = nullptr,
      *h_u_offsets = nullptr, *h_u_columns = nullptr;
  double *h_l_values = nullptr, *h_u_values = nullptr;
  LIBRARY_CHECK(cusolverRfExtractSplitFactorsHost(rf, &split_l, &h_l_offsets, &h_l_columns,
                                                  &h_l_values, &split_u, &h_u_offsets, &h_u_columns,
                                                  &h_u_values));
  EMU_REQUIRE(split_l == nnz_l + m && split_u == nnz_u);
  for (void* pointer : {static_cast<void*>(h_l_offsets), static_cast<void*>(h_l_columns),
                        static_cast<void*>(h_l_values), static_cast<void*>(h_u_offsets),
                        static_cast<void*>(h_u_columns), static_cast<void*>(h_u_values)}) {
    std::free(pointer);
  }
  // The bundled factor on the host, then the same factors given in CSC to a second handle: its
  // bundle comes back in CSC, the transpose of the first's CSR arrays.
  int bundled_nnz = 0, *h_m_offsets = nullptr, *h_m_columns = nullptr;
  double* h_m_values = nullptr;
  LIBRARY_CHECK(cusolverRfExtractBundledFactorsHost(rf, &bundled_nnz, &h_m_offsets, &h_m_columns,
                                                    &h_m_values));
  EMU_REQUIRE(bundled_nnz == nnz_m);
  std::vector<double> dense_m(m * m, 0.0);
  for (int i = 0; i < m; ++i) {
    for (int k = h_m_offsets[i]; k < h_m_offsets[i + 1]; ++k)
      dense_m[i * m + h_m_columns[k]] = h_m_values[k];
  }
  LIBRARY_CHECK(cusolverRfDestroy(rf));
  // CSR arrays of the transpose = CSC arrays of the matrix.
  auto transpose = [m](const std::vector<int>& offsets, const std::vector<int>& columns,
                       const std::vector<double>& values, std::vector<int>& t_offsets,
                       std::vector<int>& t_columns, std::vector<double>& t_values) {
    t_offsets.assign(m + 1, 0);
    t_columns.assign(columns.size(), 0);
    t_values.assign(values.size(), 0.0);
    for (int c : columns) ++t_offsets[c + 1];
    for (int i = 0; i < m; ++i) t_offsets[i + 1] += t_offsets[i];
    std::vector<int> next(t_offsets.begin(), t_offsets.end() - 1);
    for (int i = 0; i < m; ++i) {
      for (int k = offsets[i]; k < offsets[i + 1]; ++k) {
        t_columns[next[columns[k]]] = i;
        t_values[next[columns[k]]++] = values[k];
      }
    }
  };
  std::vector<int> a_csc_offsets, a_csc_rows, l_csc_offsets, l_csc_rows, u_csc_offsets, u_csc_rows;
  std::vector<double> a_csc_values, l_csc_values, u_csc_values;
  transpose(lu_offsets, lu_columns, lu_values, a_csc_offsets, a_csc_rows, a_csc_values);
  transpose(l_offsets, l_columns, l_values, l_csc_offsets, l_csc_rows, l_csc_values);
  transpose(u_offsets, u_columns, u_values, u_csc_offsets, u_csc_rows, u_csc_values);
  LIBRARY_CHECK(cusolverRfCreate(&rf));
  LIBRARY_CHECK(cusolverRfSetMatrixFormat(rf, CUSOLVERRF_MATRIX_FORMAT_CSC,
                                          CUSOLVERRF_UNIT_DIAGONAL_ASSUMED_L));
  LIBRARY_CHECK(cusolverRfSetupHost(
      m, lu_nnz, a_csc_offsets.data(), a_csc_rows.data(), a_csc_values.data(), nnz_l,
      l_csc_offsets.data(), l_csc_rows.data(), l_csc_values.data(), nnz_u, u_csc_offsets.data(),
      u_csc_rows.data(), u_csc_values.data(), p.data(), q.data(), rf));
  std::free(h_m_offsets), std::free(h_m_columns), std::free(h_m_values);
  LIBRARY_CHECK(cusolverRfExtractBundledFactorsHost(rf, &bundled_nnz, &h_m_offsets, &h_m_columns,
                                                    &h_m_values));
  EMU_REQUIRE(bundled_nnz == nnz_m);
  for (int j = 0; j < m; ++j) {  // CSC: column j holds rows h_m_columns[k]
    for (int k = h_m_offsets[j]; k < h_m_offsets[j + 1]; ++k) {
      EMU_REQUIRE(dense_m[h_m_columns[k] * m + j] == h_m_values[k]);
    }
  }
  std::free(h_m_offsets), std::free(h_m_columns), std::free(h_m_values);
  LIBRARY_CHECK(cusolverRfDestroy(rf));

  // 4. Misuse: a factorization before its analysis.
  LIBRARY_CHECK(cusolverSpCreateCsrcholInfo(&chol_device));
  const cusolverStatus_t early = cusolverSpDcsrcholFactor(
      solver, n, nnz, descr, d_values, d_offsets, d_columns, chol_device, device_buffer);
  EMU_REQUIRE(early != CUSOLVER_STATUS_SUCCESS);
  LIBRARY_CHECK(cusolverSpDestroyCsrcholInfo(chol_device));

  std::printf(
      "cusolver_sp_lowlevel: n %d nnz %d, host chol/qr residual below 1e-12 (yes), tall qr "
      "gradient below 1e-10 (yes), device zero pivot %d %d; lu n %d row exchanges %d nnz L %d U "
      "%d, "
      "P*A*Q' = L*U within 1e-12 (yes); cusolverRf nnz M %d\n",
      n, nnz, device_chol_singularity, device_qr_singularity, m, exchanges, nnz_l, nnz_u, nnz_m);
  for (void* pointer :
       {static_cast<void*>(d_offsets), static_cast<void*>(d_columns), static_cast<void*>(d_values),
        static_cast<void*>(d_b), static_cast<void*>(d_x), static_cast<void*>(d_diag), device_buffer,
        static_cast<void*>(d_lu_offsets), static_cast<void*>(d_lu_columns),
        static_cast<void*>(d_lu_values), static_cast<void*>(d_p), static_cast<void*>(d_q),
        static_cast<void*>(d_lu_x), static_cast<void*>(d_temp)}) {
    EMU_CHECK(cudaFree(pointer));
  }
  LIBRARY_CHECK(cusparseDestroyMatDescr(descr));
  LIBRARY_CHECK(cusolverSpDestroy(solver));
  EMU_CHECK(cudaStreamDestroy(stream));
  return 0;
}
