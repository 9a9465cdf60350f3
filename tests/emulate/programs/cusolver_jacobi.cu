// cuSOLVER's dense eigen/SVD solvers beyond gesvd/syevd, batched Cholesky and the auxiliary
// routines, in the style of NVIDIA's CUDALibrarySamples (cuSOLVER: gesvdj, gesvdjBatched,
// gesvdaStridedBatched, syevj, syevjBatched, sygvj, syevdx, sygvd, potrfBatched, orgqr, potri,
// sytrf): Jacobi parameters set and read back, workspace queries, each call's info checked on the
// host. Valid CUDA: the same binary runs on a real GPU. Written for the emulator's tests.
#include <cusolverDn.h>

#include <cstdio>
#include <vector>

#include "device_buffers.h"
#include "emu_check.h"
#include "library_check.h"

int main() {
  cusolverDnHandle_t handle;
  LIBRARY_CHECK(cusolverDnCreate(&handle));
  const int m = 32, n = 16, batch = 4;
  double* a = device_zeros<double>(m * m * batch);
  double* b = device_zeros<double>(m * m);
  double* s = device_zeros<double>(m * batch);
  double* u = device_zeros<double>(m * m * batch);
  double* v = device_zeros<double>(m * m * batch);
  int* info = device_zeros<int>(batch);
  int lwork = 0;

  gesvdjInfo_t svd;
  LIBRARY_CHECK(cusolverDnCreateGesvdjInfo(&svd));
  LIBRARY_CHECK(cusolverDnXgesvdjSetTolerance(svd, 1e-10));
  LIBRARY_CHECK(cusolverDnXgesvdjSetMaxSweeps(svd, 8));
  LIBRARY_CHECK(cusolverDnDgesvdj_bufferSize(handle, CUSOLVER_EIG_MODE_VECTOR, 1, m, n, a, m, s, u,
                                             m, v, n, &lwork, svd));
  double* work = device_zeros<double>(lwork);
  LIBRARY_CHECK(cusolverDnDgesvdj(handle, CUSOLVER_EIG_MODE_VECTOR, 1, m, n, a, m, s, u, m, v, n,
                                  work, lwork, info, svd));
  int sweeps = 0;
  double residual = 0;
  LIBRARY_CHECK(cusolverDnXgesvdjGetSweeps(handle, svd, &sweeps));
  LIBRARY_CHECK(cusolverDnXgesvdjGetResidual(handle, svd, &residual));
  EMU_REQUIRE(host_info(info) == 0 && sweeps >= 1 && sweeps <= 8);
  LIBRARY_CHECK(cusolverDnDgesvdjBatched(handle, CUSOLVER_EIG_MODE_NOVECTOR, n, n, a, n, s, u, n, v,
                                         n, work, lwork, info, svd, batch));
  EMU_REQUIRE(host_info(info, batch - 1) == 0);
  LIBRARY_CHECK(cusolverDnDestroyGesvdjInfo(svd));

  syevjInfo_t eig;
  LIBRARY_CHECK(cusolverDnCreateSyevjInfo(&eig));
  LIBRARY_CHECK(cusolverDnDsyevj(handle, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n, a, n,
                                 s, work, lwork, info, eig));
  LIBRARY_CHECK(cusolverDnDsyevjBatched(handle, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n,
                                        a, n, s, work, lwork, info, eig, batch));
  LIBRARY_CHECK(cusolverDnDsygvj(handle, CUSOLVER_EIG_TYPE_1, CUSOLVER_EIG_MODE_NOVECTOR,
                                 CUBLAS_FILL_MODE_UPPER, n, a, n, b, n, s, work, lwork, info, eig));
  LIBRARY_CHECK(cusolverDnDestroySyevjInfo(eig));

  int meig = 0;
  LIBRARY_CHECK(cusolverDnDsyevdx(handle, CUSOLVER_EIG_MODE_VECTOR, CUSOLVER_EIG_RANGE_I,
                                  CUBLAS_FILL_MODE_LOWER, n, a, n, 0.0, 0.0, 3, 7, &meig, s, work,
                                  lwork, info));
  EMU_REQUIRE(meig == 5);
  LIBRARY_CHECK(cusolverDnDsygvd(handle, CUSOLVER_EIG_TYPE_1, CUSOLVER_EIG_MODE_VECTOR,
                                 CUBLAS_FILL_MODE_UPPER, n, a, n, b, n, s, work, lwork, info));

  std::vector<double*> pointers(batch), rhs(batch);
  double* x = device_zeros<double>(n * batch);
  for (int i = 0; i < batch; ++i) pointers[i] = a + i * n * n, rhs[i] = x + i * n;
  double** d_pointers = device_zeros<double*>(batch);
  double** d_rhs = device_zeros<double*>(batch);
  EMU_CHECK(
      cudaMemcpy(d_pointers, pointers.data(), batch * sizeof(double*), cudaMemcpyHostToDevice));
  EMU_CHECK(cudaMemcpy(d_rhs, rhs.data(), batch * sizeof(double*), cudaMemcpyHostToDevice));
  LIBRARY_CHECK(
      cusolverDnDpotrfBatched(handle, CUBLAS_FILL_MODE_LOWER, n, d_pointers, n, info, batch));
  LIBRARY_CHECK(cusolverDnDpotrsBatched(handle, CUBLAS_FILL_MODE_LOWER, n, 1, d_pointers, n, d_rhs,
                                        n, info, batch));

  double* tau = device_zeros<double>(n);
  LIBRARY_CHECK(cusolverDnDorgqr(handle, m, n, n, a, m, tau, work, lwork, info));
  LIBRARY_CHECK(cusolverDnDpotri(handle, CUBLAS_FILL_MODE_UPPER, n, a, n, work, lwork, info));
  int* ipiv = device_zeros<int>(n);
  LIBRARY_CHECK(cusolverDnDsytrf(handle, CUBLAS_FILL_MODE_LOWER, n, a, n, ipiv, work, lwork, info));
  std::vector<double> norms(batch, -1.0);
  LIBRARY_CHECK(cusolverDnDgesvdaStridedBatched(handle, CUSOLVER_EIG_MODE_VECTOR, 4, m, n, a, m,
                                                m * n, s, 4, u, m, m * 4, v, n, n * 4, work, lwork,
                                                info, norms.data(), batch));
  EMU_REQUIRE(host_info(info) == 0 && norms[batch - 1] == 0.0);
  EMU_CHECK(cudaDeviceSynchronize());
  std::printf(
      "cusolver_jacobi: gesvdj workspace %d, sweeps %d, syevdx eigenvalues %d, every info "
      "0 (yes)\n",
      lwork, sweeps, meig);
  LIBRARY_CHECK(cusolverDnDestroy(handle));
  return 0;
}
