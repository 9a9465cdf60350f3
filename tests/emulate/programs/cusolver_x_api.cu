// cuSOLVER's 64-bit (X) API beyond getrf/potrf/geqrf/syevd, as PyTorch's linalg and the
// CUDALibrarySamples call it: Xgesvd, Xgesvdp (polar SVD), Xgesvdr (randomized SVD), Xsyevdx
// (an index range), XsyevBatched, Xgeev (nonsymmetric eigenvalues with right vectors), Xtrtri and
// Xsytrs, each after its workspace query, every info checked on the host.
// Valid CUDA: the same binary runs on a real GPU. Written for the emulator's tests.
#include <cusolverDn.h>

#include <cstdio>
#include <vector>

#include "device_buffers.h"
#include "emu_check.h"
#include "library_check.h"

namespace {

void* workspace(size_t bytes) { return bytes > 0 ? device_zeros<char>(bytes) : nullptr; }

}  // namespace

int main() {
  cusolverDnHandle_t handle;
  LIBRARY_CHECK(cusolverDnCreate(&handle));
  cusolverDnParams_t params;
  LIBRARY_CHECK(cusolverDnCreateParams(&params));
  const int64_t m = 64, n = 32, batch = 3;
  double* a = device_zeros<double>(m * m * batch);
  double* s = device_zeros<double>(m * batch);
  double* u = device_zeros<double>(m * m);
  double* v = device_zeros<double>(m * m);
  double* w = device_zeros<double>(2 * m * batch);  // room for complex eigenvalues
  int* info = device_zeros<int>(batch);
  int failures = 0;
  size_t device_bytes = 0, host_bytes = 0;

  // QR-based SVD of the 64 x 32 matrix with U and VT.
  LIBRARY_CHECK(cusolverDnXgesvd_bufferSize(handle, params, 'S', 'S', m, n, CUDA_R_64F, a, m,
                                            CUDA_R_64F, s, CUDA_R_64F, u, m, CUDA_R_64F, v, n,
                                            CUDA_R_64F, &device_bytes, &host_bytes));
  void* work = workspace(device_bytes);
  LIBRARY_CHECK(cusolverDnXgesvd(handle, params, 'S', 'S', m, n, CUDA_R_64F, a, m, CUDA_R_64F, s,
                                 CUDA_R_64F, u, m, CUDA_R_64F, v, n, CUDA_R_64F, work, device_bytes,
                                 nullptr, 0, info));
  failures += host_info(info) != 0;

  // Polar-decomposition SVD, economy size.
  LIBRARY_CHECK(cusolverDnXgesvdp_bufferSize(
      handle, params, CUSOLVER_EIG_MODE_VECTOR, 1, m, n, CUDA_R_64F, a, m, CUDA_R_64F, s,
      CUDA_R_64F, u, m, CUDA_R_64F, v, n, CUDA_R_64F, &device_bytes, &host_bytes));
  void* work_p = workspace(device_bytes);
  double err_sigma = -1;
  LIBRARY_CHECK(cusolverDnXgesvdp(handle, params, CUSOLVER_EIG_MODE_VECTOR, 1, m, n, CUDA_R_64F, a,
                                  m, CUDA_R_64F, s, CUDA_R_64F, u, m, CUDA_R_64F, v, n, CUDA_R_64F,
                                  work_p, device_bytes, nullptr, 0, info, &err_sigma));
  failures += host_info(info) != 0 || err_sigma < 0;

  // Randomized SVD: rank 8, oversampling 4, 2 power iterations.
  LIBRARY_CHECK(cusolverDnXgesvdr_bufferSize(handle, params, 'S', 'S', m, n, 8, 4, 2, CUDA_R_64F, a,
                                             m, CUDA_R_64F, s, CUDA_R_64F, u, m, CUDA_R_64F, v, n,
                                             CUDA_R_64F, &device_bytes, &host_bytes));
  void* work_r = workspace(device_bytes);
  LIBRARY_CHECK(cusolverDnXgesvdr(handle, params, 'S', 'S', m, n, 8, 4, 2, CUDA_R_64F, a, m,
                                  CUDA_R_64F, s, CUDA_R_64F, u, m, CUDA_R_64F, v, n, CUDA_R_64F,
                                  work_r, device_bytes, nullptr, 0, info));
  failures += host_info(info) != 0;

  // The 5 smallest eigenvalues of a symmetric 32 x 32 matrix with their vectors.
  int64_t meig = 0;
  LIBRARY_CHECK(cusolverDnXsyevdx_bufferSize(
      handle, params, CUSOLVER_EIG_MODE_VECTOR, CUSOLVER_EIG_RANGE_I, CUBLAS_FILL_MODE_LOWER, n,
      CUDA_R_64F, a, n, nullptr, nullptr, 1, 5, &meig, CUDA_R_64F, w, CUDA_R_64F, &device_bytes,
      &host_bytes));
  void* work_x = workspace(device_bytes);
  LIBRARY_CHECK(cusolverDnXsyevdx(handle, params, CUSOLVER_EIG_MODE_VECTOR, CUSOLVER_EIG_RANGE_I,
                                  CUBLAS_FILL_MODE_LOWER, n, CUDA_R_64F, a, n, nullptr, nullptr, 1,
                                  5, &meig, CUDA_R_64F, w, CUDA_R_64F, work_x, device_bytes,
                                  nullptr, 0, info));
  failures += host_info(info) != 0 || meig != 5;

  // 3 symmetric 32 x 32 matrices at once.
  LIBRARY_CHECK(cusolverDnXsyevBatched_bufferSize(
      handle, params, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, n, CUDA_R_64F, a, n,
      CUDA_R_64F, w, CUDA_R_64F, &device_bytes, &host_bytes, batch));
  void* work_b = workspace(device_bytes);
  LIBRARY_CHECK(cusolverDnXsyevBatched(handle, params, CUSOLVER_EIG_MODE_VECTOR,
                                       CUBLAS_FILL_MODE_UPPER, n, CUDA_R_64F, a, n, CUDA_R_64F, w,
                                       CUDA_R_64F, work_b, device_bytes, nullptr, 0, info, batch));
  for (int i = 0; i < batch; ++i) failures += host_info(info, i) != 0;

  // Nonsymmetric eigenvalues (complex W) with right eigenvectors.
  LIBRARY_CHECK(cusolverDnXgeev_bufferSize(handle, params, CUSOLVER_EIG_MODE_NOVECTOR,
                                           CUSOLVER_EIG_MODE_VECTOR, n, CUDA_R_64F, a, n,
                                           CUDA_C_64F, w, CUDA_R_64F, nullptr, 1, CUDA_R_64F, v, n,
                                           CUDA_R_64F, &device_bytes, &host_bytes));
  void* work_g = workspace(device_bytes);
  LIBRARY_CHECK(cusolverDnXgeev(handle, params, CUSOLVER_EIG_MODE_NOVECTOR,
                                CUSOLVER_EIG_MODE_VECTOR, n, CUDA_R_64F, a, n, CUDA_C_64F, w,
                                CUDA_R_64F, nullptr, 1, CUDA_R_64F, v, n, CUDA_R_64F, work_g,
                                device_bytes, nullptr, 0, info));
  failures += host_info(info) != 0;

  // Triangular inverse, then a symmetric-indefinite solve with 4 right-hand sides.
  LIBRARY_CHECK(cusolverDnXtrtri_bufferSize(handle, CUBLAS_FILL_MODE_UPPER, CUBLAS_DIAG_NON_UNIT, n,
                                            CUDA_R_64F, a, n, &device_bytes, &host_bytes));
  void* work_t = workspace(device_bytes);
  LIBRARY_CHECK(cusolverDnXtrtri(handle, CUBLAS_FILL_MODE_UPPER, CUBLAS_DIAG_NON_UNIT, n,
                                 CUDA_R_64F, a, n, work_t, device_bytes, nullptr, 0, info));
  failures += host_info(info) != 0;
  int64_t* ipiv = device_zeros<int64_t>(n);
  LIBRARY_CHECK(cusolverDnXsytrs_bufferSize(handle, CUBLAS_FILL_MODE_LOWER, n, 4, CUDA_R_64F, a, n,
                                            ipiv, CUDA_R_64F, u, n, &device_bytes, &host_bytes));
  void* work_s = workspace(device_bytes);
  LIBRARY_CHECK(cusolverDnXsytrs(handle, CUBLAS_FILL_MODE_LOWER, n, 4, CUDA_R_64F, a, n, ipiv,
                                 CUDA_R_64F, u, n, work_s, device_bytes, nullptr, 0, info));
  failures += host_info(info) != 0;

  EMU_CHECK(cudaDeviceSynchronize());
  std::printf("cusolver_x_api: 8 routines, syevdx found %lld eigenvalues, %d failed infos\n",
              static_cast<long long>(meig), failures);
  for (void* p : {(void*)a, (void*)s, (void*)u, (void*)v, (void*)w, (void*)info, work, work_p,
                  work_r, work_x, work_b, work_g, work_t, work_s, (void*)ipiv}) {
    if (p != nullptr) EMU_CHECK(cudaFree(p));
  }
  LIBRARY_CHECK(cusolverDnDestroyParams(params));
  LIBRARY_CHECK(cusolverDnDestroy(handle));
  return failures == 0 ? 0 : 1;
}
