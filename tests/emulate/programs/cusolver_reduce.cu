// cuSOLVER's two-sided reductions and their orthogonal factors, as an SVD or eigensolver built from
// LAPACK's building blocks calls them: gebrd (bidiagonal form of a 64 x 32 matrix) with orgbr for
// Q and P^T, sytrd (tridiagonal form of a symmetric 32 x 32 matrix) with orgtr and ormtr, sytrf +
// sytri (symmetric indefinite inverse), sygvdx (the 4 smallest generalized eigenvalues), and the
// handle's deterministic, math and emulation modes read back. Every info is checked.
// Valid CUDA: the same binary runs on a real GPU.
#include <cusolverDn.h>

#include <cstdio>
#include <vector>

#include "device_buffers.h"
#include "emu_check.h"
#include "library_check.h"

int main() {
  cusolverDnHandle_t handle;
  LIBRARY_CHECK(cusolverDnCreate(&handle));
  LIBRARY_CHECK(cusolverDnSetDeterministicMode(handle, CUSOLVER_ALLOW_NON_DETERMINISTIC_RESULTS));
  LIBRARY_CHECK(cusolverDnSetMathMode(handle, CUSOLVER_DEFAULT_MATH));
  cusolverDeterministicMode_t deterministic;
  LIBRARY_CHECK(cusolverDnGetDeterministicMode(handle, &deterministic));
  EMU_REQUIRE(deterministic == CUSOLVER_ALLOW_NON_DETERMINISTIC_RESULTS);

  const int m = 64, n = 32;
  double* a = device_zeros<double>(m * n);
  double* q = device_zeros<double>(m * n);
  double* d = device_zeros<double>(n);
  double* e = device_zeros<double>(n - 1);  // the off-diagonal: min(m, n) - 1 values
  double* tauq = device_zeros<double>(n);
  double* taup = device_zeros<double>(n);
  int* info = device_zeros<int>(1);
  int failures = 0, lwork = 0;

  LIBRARY_CHECK(cusolverDnDgebrd_bufferSize(handle, m, n, &lwork));
  double* work = device_zeros<double>(lwork);
  LIBRARY_CHECK(cusolverDnDgebrd(handle, m, n, a, m, d, e, tauq, taup, work, lwork, info));
  failures += host_info(info) != 0;
  int q_lwork = 0;
  LIBRARY_CHECK(
      cusolverDnDorgbr_bufferSize(handle, CUBLAS_SIDE_LEFT, m, n, n, q, m, tauq, &q_lwork));
  double* q_work = device_zeros<double>(q_lwork);
  LIBRARY_CHECK(
      cusolverDnDorgbr(handle, CUBLAS_SIDE_LEFT, m, n, n, q, m, tauq, q_work, q_lwork, info));
  failures += host_info(info) != 0;
  LIBRARY_CHECK(
      cusolverDnDorgbr(handle, CUBLAS_SIDE_RIGHT, n, n, m, a, m, taup, q_work, q_lwork, info));
  failures += host_info(info) != 0;

  // Tridiagonal reduction of a symmetric 32 x 32 matrix, Q formed, then applied to a 32 x 8 block.
  double* s = device_zeros<double>(n * n);
  double* c = device_zeros<double>(n * 8);
  LIBRARY_CHECK(
      cusolverDnDsytrd_bufferSize(handle, CUBLAS_FILL_MODE_LOWER, n, s, n, d, e, tauq, &lwork));
  double* t_work = device_zeros<double>(lwork);
  LIBRARY_CHECK(
      cusolverDnDsytrd(handle, CUBLAS_FILL_MODE_LOWER, n, s, n, d, e, tauq, t_work, lwork, info));
  failures += host_info(info) != 0;
  LIBRARY_CHECK(cusolverDnDormtr(handle, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, n,
                                 8, s, n, tauq, c, n, t_work, lwork, info));
  failures += host_info(info) != 0;
  LIBRARY_CHECK(
      cusolverDnDorgtr(handle, CUBLAS_FILL_MODE_LOWER, n, s, n, tauq, t_work, lwork, info));
  failures += host_info(info) != 0;

  // Symmetric indefinite inverse: sytrf, then sytri.
  int* ipiv = device_zeros<int>(n);
  LIBRARY_CHECK(
      cusolverDnDsytrf(handle, CUBLAS_FILL_MODE_UPPER, n, s, n, ipiv, t_work, lwork, info));
  LIBRARY_CHECK(cusolverDnDsytri_bufferSize(handle, CUBLAS_FILL_MODE_UPPER, n, s, n, ipiv, &lwork));
  double* i_work = device_zeros<double>(lwork);
  LIBRARY_CHECK(
      cusolverDnDsytri(handle, CUBLAS_FILL_MODE_UPPER, n, s, n, ipiv, i_work, lwork, info));
  failures += host_info(info) != 0;

  // The 4 smallest eigenvalues of A x = lambda B x.
  double* b = device_zeros<double>(n * n);
  double* w = device_zeros<double>(n);
  int meig = 0;
  LIBRARY_CHECK(cusolverDnDsygvdx_bufferSize(handle, CUSOLVER_EIG_TYPE_1, CUSOLVER_EIG_MODE_VECTOR,
                                             CUSOLVER_EIG_RANGE_I, CUBLAS_FILL_MODE_LOWER, n, s, n,
                                             b, n, 0.0, 0.0, 1, 4, &meig, w, &lwork));
  double* g_work = device_zeros<double>(lwork);
  LIBRARY_CHECK(cusolverDnDsygvdx(handle, CUSOLVER_EIG_TYPE_1, CUSOLVER_EIG_MODE_VECTOR,
                                  CUSOLVER_EIG_RANGE_I, CUBLAS_FILL_MODE_LOWER, n, s, n, b, n, 0.0,
                                  0.0, 1, 4, &meig, w, g_work, lwork, info));
  failures += host_info(info) != 0 || meig != 4;
  EMU_CHECK(cudaDeviceSynchronize());
  std::printf(
      "cusolver_reduce: gebrd, orgbr x2, sytrd, ormtr, orgtr, sytri, sygvdx found %d "
      "eigenvalues, %d failed infos\n",
      meig, failures);
  LIBRARY_CHECK(cusolverDnDestroy(handle));
  return failures == 0 ? 0 : 1;
}
