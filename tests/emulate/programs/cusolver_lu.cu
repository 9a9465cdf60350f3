// cuSOLVER's dense API as NVIDIA's cuSolverDn_LinearSolver sample and torch.linalg use it: an LU
// solve of a small system (Dgetrf_bufferSize, Dgetrf with pivots, Dgetrs; info checked on the
// host), a Cholesky solve in single precision (Spotrf/Spotrs), a QR factorization with Q applied
// (Dgeqrf, Dormqr), a symmetric eigensolve (Dsyevd) and an SVD (Dgesvd), then the 64-bit API
// (params, Xgetrf/Xgetrs on an 8192 x 8192 float matrix), one call the emulator does not implement
// (the triangular product's cusolverDnDlauum_bufferSize, reported by name) and one
// invalid call (ldb < n). Valid CUDA:
// the same binary runs on a real GPU. Written for the emulator's tests.
#include <cusolverDn.h>

#include <vector>

#include "emu_check.h"

#define SOLVER_CHECK(call)                                                      \
  do {                                                                          \
    const cusolverStatus_t solver_status = (call);                              \
    if (solver_status != CUSOLVER_STATUS_SUCCESS) {                             \
      std::fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, \
                   static_cast<int>(solver_status));                            \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)

// Reads the device-side info and requires success.
static void require_info(const int* d_info, const char* what) {
  int info = -1;
  EMU_CHECK(cudaMemcpy(&info, d_info, sizeof info, cudaMemcpyDeviceToHost));
  if (info != 0) {
    std::fprintf(stderr, "%s: info = %d\n", what, info);
    std::exit(1);
  }
}

int main() {
  const int n = 64;
  // A diagonally dominant system (the sample reads one from a file).
  std::vector<double> a(n * n);
  std::vector<double> b(n, 1.0);
  for (int col = 0; col < n; ++col) {
    for (int row = 0; row < n; ++row) a[col * n + row] = row == col ? 4.0 * n : 1.0;
  }
  cusolverDnHandle_t handle;
  SOLVER_CHECK(cusolverDnCreate(&handle));
  cudaStream_t stream;
  EMU_CHECK(cudaStreamCreate(&stream));
  SOLVER_CHECK(cusolverDnSetStream(handle, stream));

  double *d_a = nullptr, *d_b = nullptr, *d_work = nullptr;
  int *d_ipiv = nullptr, *d_info = nullptr;
  EMU_CHECK(cudaMalloc(&d_a, sizeof(double) * n * n));
  EMU_CHECK(cudaMalloc(&d_b, sizeof(double) * n));
  EMU_CHECK(cudaMalloc(&d_ipiv, sizeof(int) * n));
  EMU_CHECK(cudaMalloc(&d_info, sizeof(int)));
  EMU_CHECK(cudaMemcpy(d_a, a.data(), sizeof(double) * n * n, cudaMemcpyHostToDevice));
  EMU_CHECK(cudaMemcpy(d_b, b.data(), sizeof(double) * n, cudaMemcpyHostToDevice));

  // LU with partial pivoting, then the solve.
  int lwork = 0;
  SOLVER_CHECK(cusolverDnDgetrf_bufferSize(handle, n, n, d_a, n, &lwork));
  EMU_CHECK(cudaMalloc(&d_work, sizeof(double) * lwork));
  SOLVER_CHECK(cusolverDnDgetrf(handle, n, n, d_a, n, d_work, d_ipiv, d_info));
  require_info(d_info, "getrf");
  std::vector<int> pivots(n);
  EMU_CHECK(cudaMemcpy(pivots.data(), d_ipiv, sizeof(int) * n, cudaMemcpyDeviceToHost));
  for (int p : pivots) EMU_REQUIRE(p >= 1 && p <= n);
  SOLVER_CHECK(cusolverDnDgetrs(handle, CUBLAS_OP_N, n, 1, d_a, n, d_ipiv, d_b, n, d_info));
  require_info(d_info, "getrs");

  // Cholesky in single precision with 4 right-hand sides.
  float *d_s = nullptr, *d_sb = nullptr, *d_swork = nullptr;
  EMU_CHECK(cudaMalloc(&d_s, sizeof(float) * n * n));
  EMU_CHECK(cudaMalloc(&d_sb, sizeof(float) * n * 4));
  int slwork = 0;
  SOLVER_CHECK(cusolverDnSpotrf_bufferSize(handle, CUBLAS_FILL_MODE_LOWER, n, d_s, n, &slwork));
  EMU_CHECK(cudaMalloc(&d_swork, sizeof(float) * slwork));
  SOLVER_CHECK(
      cusolverDnSpotrf(handle, CUBLAS_FILL_MODE_LOWER, n, d_s, n, d_swork, slwork, d_info));
  SOLVER_CHECK(cusolverDnSpotrs(handle, CUBLAS_FILL_MODE_LOWER, n, 4, d_s, n, d_sb, n, d_info));
  require_info(d_info, "potrs");

  // QR of a 128 x 64 matrix, Q^T applied to a 128 x 8 block.
  const int m = 128, rhs = 8;
  double *d_q = nullptr, *d_tau = nullptr, *d_c = nullptr, *d_qwork = nullptr;
  EMU_CHECK(cudaMalloc(&d_q, sizeof(double) * m * n));
  EMU_CHECK(cudaMalloc(&d_tau, sizeof(double) * n));
  EMU_CHECK(cudaMalloc(&d_c, sizeof(double) * m * rhs));
  int qlwork = 0, olwork = 0;
  SOLVER_CHECK(cusolverDnDgeqrf_bufferSize(handle, m, n, d_q, m, &qlwork));
  SOLVER_CHECK(cusolverDnDormqr_bufferSize(handle, CUBLAS_SIDE_LEFT, CUBLAS_OP_T, m, rhs, n, d_q, m,
                                           d_tau, d_c, m, &olwork));
  EMU_CHECK(cudaMalloc(&d_qwork, sizeof(double) * (qlwork > olwork ? qlwork : olwork)));
  SOLVER_CHECK(cusolverDnDgeqrf(handle, m, n, d_q, m, d_tau, d_qwork, qlwork, d_info));
  SOLVER_CHECK(cusolverDnDormqr(handle, CUBLAS_SIDE_LEFT, CUBLAS_OP_T, m, rhs, n, d_q, m, d_tau,
                                d_c, m, d_qwork, olwork, d_info));
  require_info(d_info, "ormqr");

  // Eigenvalues and vectors of the symmetric 64 x 64 matrix, then its SVD (values only).
  double *d_w = nullptr, *d_ework = nullptr;
  EMU_CHECK(cudaMalloc(&d_w, sizeof(double) * n));
  int elwork = 0;
  SOLVER_CHECK(cusolverDnDsyevd_bufferSize(handle, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER,
                                           n, d_a, n, d_w, &elwork));
  EMU_CHECK(cudaMalloc(&d_ework, sizeof(double) * elwork));
  SOLVER_CHECK(cusolverDnDsyevd(handle, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n, d_a, n,
                                d_w, d_ework, elwork, d_info));
  int vlwork = 0;
  SOLVER_CHECK(cusolverDnDgesvd_bufferSize(handle, m, n, &vlwork));
  double* d_vwork = nullptr;
  EMU_CHECK(cudaMalloc(&d_vwork, sizeof(double) * vlwork));
  SOLVER_CHECK(cusolverDnDgesvd(handle, 'N', 'N', m, n, d_q, m, d_w, nullptr, m, nullptr, n,
                                d_vwork, vlwork, nullptr, d_info));
  require_info(d_info, "gesvd");

  // The 64-bit API on a large float system (not backed by host memory: no numbers, only shapes).
  const int64_t big = 8192;
  cusolverDnParams_t params;
  SOLVER_CHECK(cusolverDnCreateParams(&params));
  float *d_big = nullptr, *d_bigb = nullptr;
  int64_t* d_ipiv64 = nullptr;
  void* d_xwork = nullptr;
  EMU_CHECK(cudaMalloc(&d_big, sizeof(float) * big * big));
  EMU_CHECK(cudaMalloc(&d_bigb, sizeof(float) * big));
  EMU_CHECK(cudaMalloc(&d_ipiv64, sizeof(int64_t) * big));
  size_t device_bytes = 0, host_bytes = 0;
  SOLVER_CHECK(cusolverDnXgetrf_bufferSize(handle, params, big, big, CUDA_R_32F, d_big, big,
                                           CUDA_R_32F, &device_bytes, &host_bytes));
  EMU_CHECK(cudaMalloc(&d_xwork, device_bytes));
  SOLVER_CHECK(cusolverDnXgetrf(handle, params, big, big, CUDA_R_32F, d_big, big, d_ipiv64,
                                CUDA_R_32F, d_xwork, device_bytes, nullptr, host_bytes, d_info));
  SOLVER_CHECK(cusolverDnXgetrs(handle, params, CUBLAS_OP_N, big, 1, CUDA_R_32F, d_big, big,
                                d_ipiv64, CUDA_R_32F, d_bigb, big, d_info));
  EMU_CHECK(cudaStreamSynchronize(stream));
  require_info(d_info, "Xgetrs");

  // Not emulated (the triangular product U·U^T), reported by name; then an invalid leading
  // dimension.
  int lauum_lwork = 0;
  const cusolverStatus_t unsupported =
      cusolverDnDlauum_bufferSize(handle, CUBLAS_FILL_MODE_UPPER, n, d_a, n, &lauum_lwork);
  const cusolverStatus_t invalid =
      cusolverDnDgetrs(handle, CUBLAS_OP_N, n, 1, d_a, n, d_ipiv, d_b, n / 2, d_info);

  std::printf(
      "cusolver_lu: %dx%d LU solve, info 0, workspaces getrf %d potrf %d geqrf %d ormqr %d syevd "
      "%d gesvd %d elements, Xgetrf %zu bytes; Dlauum -> %d, ldb < n -> %d\n",
      n, n, lwork, slwork, qlwork, olwork, elwork, vlwork, device_bytes,
      static_cast<int>(unsupported), static_cast<int>(invalid));

  SOLVER_CHECK(cusolverDnDestroyParams(params));
  SOLVER_CHECK(cusolverDnDestroy(handle));
  for (void* p : {static_cast<void*>(d_a), static_cast<void*>(d_b), static_cast<void*>(d_work),
                  static_cast<void*>(d_ipiv), static_cast<void*>(d_info), static_cast<void*>(d_s),
                  static_cast<void*>(d_sb), static_cast<void*>(d_swork), static_cast<void*>(d_q),
                  static_cast<void*>(d_tau), static_cast<void*>(d_c), static_cast<void*>(d_qwork),
                  static_cast<void*>(d_w), static_cast<void*>(d_ework), static_cast<void*>(d_vwork),
                  static_cast<void*>(d_big), static_cast<void*>(d_bigb),
                  static_cast<void*>(d_ipiv64), d_xwork}) {
    EMU_CHECK(cudaFree(p));
  }
  EMU_CHECK(cudaStreamDestroy(stream));
  return 0;
}
