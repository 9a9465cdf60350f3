// cuSolverSp's linear solvers in the style of NVIDIA's cuSolverSp_LinearSolver sample, on a
// generated matrix instead of a .mtx file: the 2D Laplacian (5-point, 32 x 32 grid, n = 1024) in
// CSR, base 0 (another grid side as the first argument). Host side (the real library computes these
// on the CPU, so the program checks them itself): the pattern symmetry check, the RCM reordering Q
// (checked to be a permutation), B = A(Q,Q) by Xcsrperm (checked entry by entry against A), then
// B·z = Q·b by the host Cholesky, LU and QR solvers with x = Qᵀz, each checked by its residual |b −
// A·x|∞ / (|A|∞·|x|∞ + |b|∞). Device side: csrlsvchol and csrlsvqr on A, the sample's scatter of
// the solution through a sparse vector and the residual SpMV, and a batched QR of 4 systems. Valid
// CUDA: the same binary runs on a real GPU (where the device solutions are the real ones too).
// Also least squares by csrlsqvqrHost on [A; I] (its normal-equation gradient checked), the
// smallest eigenvalue by csreigvsiHost (checked against its closed form) and the device csreigvsi.
// Written for the emulator's tests.
#define DISABLE_CUSOLVER_DEPRECATED  // cuSolverSp is deprecated in favour of cuDSS, still exported
#define DISABLE_CUSPARSE_DEPRECATED
#include <cusolverSp.h>
#include <cusparse.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "emu_check.h"
#include "laplacian.h"
#include "library_check.h"

int main(int argc, char** argv) {
  // The grid side (default 32); 100 gives the sample's lap2D_5pt_n100 size (n = 10^4).
  const int grid = argc > 1 ? std::atoi(argv[1]) : 32;
  EMU_REQUIRE(grid >= 2 && grid <= 1000);
  const int n = grid * grid, nnz = 5 * n - 4 * grid;
  std::vector<int> offsets, columns;
  std::vector<double> values;
  EMU_REQUIRE(laplacian_2d(grid, offsets, columns, values) == nnz);

  cusolverSpHandle_t solver;
  cusparseHandle_t sparse;
  cudaStream_t stream;
  LIBRARY_CHECK(cusolverSpCreate(&solver));
  LIBRARY_CHECK(cusparseCreate(&sparse));
  EMU_CHECK(cudaStreamCreate(&stream));
  LIBRARY_CHECK(cusolverSpSetStream(solver, stream));
  LIBRARY_CHECK(cusparseSetStream(sparse, stream));
  cusparseMatDescr_t descr;
  LIBRARY_CHECK(cusparseCreateMatDescr(&descr));
  LIBRARY_CHECK(cusparseSetMatType(descr, CUSPARSE_MATRIX_TYPE_GENERAL));
  LIBRARY_CHECK(cusparseSetMatIndexBase(descr, CUSPARSE_INDEX_BASE_ZERO));

  // Host: symmetry, reordering, permutation.
  int issym = 0;
  LIBRARY_CHECK(cusolverSpXcsrissymHost(solver, n, nnz, descr, offsets.data(), offsets.data() + 1,
                                        columns.data(), &issym));
  EMU_REQUIRE(issym == 1);
  std::vector<int> q(n);
  LIBRARY_CHECK(
      cusolverSpXcsrsymrcmHost(solver, n, nnz, descr, offsets.data(), columns.data(), q.data()));
  std::vector<int> sorted = q;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < n; ++i) EMU_REQUIRE(sorted[i] == i);
  std::vector<int> b_offsets = offsets, b_columns = columns, map(nnz);
  size_t perm_bytes = 0;
  LIBRARY_CHECK(cusolverSpXcsrperm_bufferSizeHost(solver, n, n, nnz, descr, b_offsets.data(),
                                                  b_columns.data(), q.data(), q.data(),
                                                  &perm_bytes));
  std::vector<char> perm_buffer(perm_bytes);
  EMU_REQUIRE(perm_bytes > 0);
  for (int j = 0; j < nnz; ++j) map[j] = j;
  LIBRARY_CHECK(cusolverSpXcsrpermHost(solver, n, n, nnz, descr, b_offsets.data(), b_columns.data(),
                                       q.data(), q.data(), map.data(), perm_buffer.data()));
  // Misuse: a "permutation" with a repeated index is refused (CUSOLVER_STATUS_INVALID_VALUE).
  std::vector<int> not_permutation(n, 0), scratch_offsets = offsets, scratch_columns = columns;
  const cusolverStatus_t bad_perm = cusolverSpXcsrpermHost(
      solver, n, n, nnz, descr, scratch_offsets.data(), scratch_columns.data(),
      not_permutation.data(), not_permutation.data(), map.data(), perm_buffer.data());
  EMU_REQUIRE(bad_perm != CUSOLVER_STATUS_SUCCESS);
  std::vector<double> b_values(nnz);
  for (int j = 0; j < nnz; ++j) b_values[j] = values[map[j]];
  // B(i, j) = A(Q[i], Q[j]) for every stored entry; the bandwidths before and after.
  std::vector<int> q_inverse(n);
  for (int i = 0; i < n; ++i) q_inverse[q[i]] = i;
  int bandwidth_a = 0, bandwidth_b = 0;
  for (int i = 0; i < n; ++i) {
    EMU_REQUIRE(b_offsets[i + 1] - b_offsets[i] == offsets[q[i] + 1] - offsets[q[i]]);
    for (int p = b_offsets[i]; p < b_offsets[i + 1]; ++p) {
      const int source = map[p];
      EMU_REQUIRE(source >= offsets[q[i]] && source < offsets[q[i] + 1]);
      EMU_REQUIRE(q_inverse[columns[source]] == b_columns[p]);
      if (p > b_offsets[i]) EMU_REQUIRE(b_columns[p - 1] < b_columns[p]);
      bandwidth_b = std::max(bandwidth_b, std::abs(b_columns[p] - i));
    }
    for (int p = offsets[i]; p < offsets[i + 1]; ++p) {
      bandwidth_a = std::max(bandwidth_a, std::abs(columns[p] - i));
    }
  }

  // Host solves of B·z = Q·b, x = Qᵀ·z.
  std::vector<double> b(n), qb(n), z(n), x(n);
  for (int i = 0; i < n; ++i) b[i] = 1.0 + static_cast<double>(i) / n;
  for (int i = 0; i < n; ++i) qb[i] = b[q[i]];
  const double tol = 1e-12;
  const int reorder = 0;
  double worst = 0;
  for (int solver_kind = 0; solver_kind < 3; ++solver_kind) {
    int singularity = 0;
    std::fill(z.begin(), z.end(), 0.0);
    if (solver_kind == 0) {
      LIBRARY_CHECK(cusolverSpDcsrlsvcholHost(solver, n, nnz, descr, b_values.data(),
                                              b_offsets.data(), b_columns.data(), qb.data(), tol,
                                              reorder, z.data(), &singularity));
    } else if (solver_kind == 1) {
      LIBRARY_CHECK(cusolverSpDcsrlsvluHost(solver, n, nnz, descr, b_values.data(),
                                            b_offsets.data(), b_columns.data(), qb.data(), tol,
                                            reorder, z.data(), &singularity));
    } else {
      LIBRARY_CHECK(cusolverSpDcsrlsvqrHost(solver, n, nnz, descr, b_values.data(),
                                            b_offsets.data(), b_columns.data(), qb.data(), tol,
                                            reorder, z.data(), &singularity));
    }
    EMU_REQUIRE(singularity == -1);
    for (int i = 0; i < n; ++i) x[q[i]] = z[i];
    const double residual = relative_residual(n, offsets, columns, values, x, b);
    EMU_REQUIRE(residual < 1e-12);
    worst = std::max(worst, residual);
  }

  // Least squares on the stacked [A; I] (2n x n) and [b; 0]: the gradient Aᵀ(A·x − b) + x of the
  // normal equations must vanish; full rank, no column permutation, min_norm = ‖[A; I]·x − [b; 0]‖.
  std::vector<int> tall_offsets(offsets), tall_columns(columns);
  std::vector<double> tall_values(values), tall_b(b);
  for (int i = 0; i < n; ++i) {
    tall_columns.push_back(i);
    tall_values.push_back(1.0);
    tall_offsets.push_back(nnz + i + 1);
    tall_b.push_back(0.0);
  }
  int rank = 0;
  std::vector<int> column_perm(n, -1);
  std::vector<double> ls_x(n);
  double min_norm = -1.0;
  LIBRARY_CHECK(cusolverSpDcsrlsqvqrHost(solver, 2 * n, n, nnz + n, descr, tall_values.data(),
                                         tall_offsets.data(), tall_columns.data(), tall_b.data(),
                                         tol, &rank, ls_x.data(), column_perm.data(), &min_norm));
  EMU_REQUIRE(rank == n);
  for (int j = 0; j < n; ++j) EMU_REQUIRE(column_perm[j] == j);
  std::vector<double> ax(n, 0.0), gradient(ls_x), atb(n, 0.0);
  double residual_norm = 0;
  for (int i = 0; i < n; ++i) {
    for (int k = offsets[i]; k < offsets[i + 1]; ++k) ax[i] += values[k] * ls_x[columns[k]];
    residual_norm += (ax[i] - b[i]) * (ax[i] - b[i]) + ls_x[i] * ls_x[i];
  }
  for (int i = 0; i < n; ++i) {
    for (int k = offsets[i]; k < offsets[i + 1]; ++k) {
      gradient[columns[k]] += values[k] * (ax[i] - b[i]);  // A is symmetric: Aᵀ = A
      atb[columns[k]] += values[k] * b[i];
    }
  }
  double gradient_inf = 0, atb_inf = 0;
  for (int j = 0; j < n; ++j) {
    gradient_inf = std::max(gradient_inf, std::fabs(gradient[j]));
    atb_inf = std::max(atb_inf, std::fabs(atb[j]));
  }
  EMU_REQUIRE(gradient_inf < 1e-9 * atb_inf);
  EMU_REQUIRE(std::fabs(min_norm - std::sqrt(residual_norm)) < 1e-9 * min_norm);

  // The smallest eigenvalue by shifted inverse iteration from mu0 = 0 on the host: the grid
  // Laplacian's is 8·sin²(π / (2·(grid + 1))).
  const double pi = 3.14159265358979323846;
  const double smallest = 8.0 * std::pow(std::sin(pi / (2.0 * (grid + 1))), 2);
  std::vector<double> x0(n, 1.0), eigenvector(n);
  double mu = 0.0;
  LIBRARY_CHECK(cusolverSpDcsreigvsiHost(solver, n, nnz, descr, values.data(), offsets.data(),
                                         columns.data(), 0.0, x0.data(), 100, 1e-12, &mu,
                                         eigenvector.data()));
  EMU_REQUIRE(std::fabs(mu - smallest) < 1e-9 * smallest);

  // Device: Cholesky and QR on A, the solution scattered back, the residual by SpMV.
  int *d_offsets, *d_columns, *d_q;
  double *d_values, *d_b, *d_z, *d_x, *d_r;
  EMU_CHECK(cudaMalloc(&d_offsets, (n + 1) * sizeof(int)));
  EMU_CHECK(cudaMalloc(&d_columns, nnz * sizeof(int)));
  EMU_CHECK(cudaMalloc(&d_q, n * sizeof(int)));
  EMU_CHECK(cudaMalloc(&d_values, nnz * sizeof(double)));
  for (double** v : {&d_b, &d_z, &d_x, &d_r}) EMU_CHECK(cudaMalloc(v, n * sizeof(double)));
  EMU_CHECK(cudaMemcpyAsync(d_offsets, offsets.data(), (n + 1) * sizeof(int),
                            cudaMemcpyHostToDevice, stream));
  EMU_CHECK(cudaMemcpyAsync(d_columns, columns.data(), nnz * sizeof(int), cudaMemcpyHostToDevice,
                            stream));
  EMU_CHECK(cudaMemcpyAsync(d_values, values.data(), nnz * sizeof(double), cudaMemcpyHostToDevice,
                            stream));
  EMU_CHECK(cudaMemcpyAsync(d_b, b.data(), n * sizeof(double), cudaMemcpyHostToDevice, stream));
  std::vector<int> identity(n);
  for (int i = 0; i < n; ++i) identity[i] = i;
  EMU_CHECK(cudaMemcpyAsync(d_q, identity.data(), n * sizeof(int), cudaMemcpyHostToDevice, stream));
  int device_singularity[2] = {0, 0};
  LIBRARY_CHECK(cusolverSpDcsrlsvchol(solver, n, nnz, descr, d_values, d_offsets, d_columns, d_b,
                                      tol, reorder, d_z, &device_singularity[0]));
  LIBRARY_CHECK(cusolverSpDcsrlsvqr(solver, n, nnz, descr, d_values, d_offsets, d_columns, d_b, tol,
                                    reorder, d_z, &device_singularity[1]));
  double device_mu = 0.0;
  LIBRARY_CHECK(cusolverSpDcsreigvsi(solver, n, nnz, descr, d_values, d_offsets, d_columns, 0.0,
                                     d_b, 100, 1e-12, &device_mu, d_z));
  EMU_CHECK(cudaStreamSynchronize(stream));
  EMU_REQUIRE(device_singularity[0] == -1 && device_singularity[1] == -1);

  cusparseSpMatDescr_t mat_a;
  LIBRARY_CHECK(cusparseCreateCsr(&mat_a, n, n, nnz, d_offsets, d_columns, d_values,
                                  CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                                  CUDA_R_64F));
  cusparseDnVecDescr_t vec_x, vec_r;
  LIBRARY_CHECK(cusparseCreateDnVec(&vec_x, n, d_x, CUDA_R_64F));
  LIBRARY_CHECK(cusparseCreateDnVec(&vec_r, n, d_r, CUDA_R_64F));
  cusparseSpVecDescr_t vec_z;
  LIBRARY_CHECK(cusparseCreateSpVec(&vec_z, n, n, d_q, d_z, CUSPARSE_INDEX_32I,
                                    CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
  LIBRARY_CHECK(cusparseScatter(sparse, vec_z, vec_x));
  LIBRARY_CHECK(cusparseDestroySpVec(vec_z));
  const double minus_one = -1.0, one = 1.0;
  size_t spmv_bytes = 0;
  LIBRARY_CHECK(cusparseSpMV_bufferSize(sparse, CUSPARSE_OPERATION_NON_TRANSPOSE, &minus_one, mat_a,
                                        vec_x, &one, vec_r, CUDA_R_64F, CUSPARSE_SPMV_ALG_DEFAULT,
                                        &spmv_bytes));
  void* spmv_buffer = nullptr;
  EMU_CHECK(cudaMalloc(&spmv_buffer, spmv_bytes > 0 ? spmv_bytes : 1));
  EMU_CHECK(cudaMemcpyAsync(d_r, d_b, n * sizeof(double), cudaMemcpyDeviceToDevice, stream));
  LIBRARY_CHECK(cusparseSpMV(sparse, CUSPARSE_OPERATION_NON_TRANSPOSE, &minus_one, mat_a, vec_x,
                             &one, vec_r, CUDA_R_64F, CUSPARSE_SPMV_ALG_DEFAULT, spmv_buffer));

  // Batched QR: 4 systems sharing A's pattern (values and right-hand sides side by side).
  const int batch = 4;
  double *d_batch_values, *d_batch_b, *d_batch_x;
  EMU_CHECK(cudaMalloc(&d_batch_values, size_t{batch} * nnz * sizeof(double)));
  EMU_CHECK(cudaMalloc(&d_batch_b, size_t{batch} * n * sizeof(double)));
  EMU_CHECK(cudaMalloc(&d_batch_x, size_t{batch} * n * sizeof(double)));
  csrqrInfo_t qr_info;
  LIBRARY_CHECK(cusolverSpCreateCsrqrInfo(&qr_info));
  LIBRARY_CHECK(
      cusolverSpXcsrqrAnalysisBatched(solver, n, n, nnz, descr, d_offsets, d_columns, qr_info));
  size_t internal_bytes = 0, workspace_bytes = 0;
  LIBRARY_CHECK(cusolverSpDcsrqrBufferInfoBatched(solver, n, n, nnz, descr, d_batch_values,
                                                  d_offsets, d_columns, batch, qr_info,
                                                  &internal_bytes, &workspace_bytes));
  void* qr_buffer = nullptr;
  EMU_CHECK(cudaMalloc(&qr_buffer, workspace_bytes > 0 ? workspace_bytes : 1));
  LIBRARY_CHECK(cusolverSpDcsrqrsvBatched(solver, n, n, nnz, descr, d_batch_values, d_offsets,
                                          d_columns, d_batch_b, d_batch_x, batch, qr_info,
                                          qr_buffer));
  EMU_CHECK(cudaStreamSynchronize(stream));

  std::printf(
      "cusolver_sp_linear: n %d nnz %d issym %d bandwidth A %d B %d host chol/lu/qr residual "
      "below 1e-12 (%s), smallest eigenvalue %.6e, device singularity %d %d\n",
      n, nnz, issym, bandwidth_a, bandwidth_b, worst < 1e-12 ? "yes" : "no", mu,
      device_singularity[0], device_singularity[1]);

  LIBRARY_CHECK(cusolverSpDestroyCsrqrInfo(qr_info));
  LIBRARY_CHECK(cusparseDestroyDnVec(vec_x));
  LIBRARY_CHECK(cusparseDestroyDnVec(vec_r));
  LIBRARY_CHECK(cusparseDestroySpMat(mat_a));
  LIBRARY_CHECK(cusparseDestroyMatDescr(descr));
  LIBRARY_CHECK(cusparseDestroy(sparse));
  LIBRARY_CHECK(cusolverSpDestroy(solver));
  for (void* p :
       {static_cast<void*>(d_offsets), static_cast<void*>(d_columns), static_cast<void*>(d_q),
        static_cast<void*>(d_values), static_cast<void*>(d_b), static_cast<void*>(d_z),
        static_cast<void*>(d_x), static_cast<void*>(d_r), static_cast<void*>(d_batch_values),
        static_cast<void*>(d_batch_b), static_cast<void*>(d_batch_x), spmv_buffer, qr_buffer}) {
    EMU_CHECK(cudaFree(p));
  }
  EMU_CHECK(cudaStreamDestroy(stream));
  return 0;
}
