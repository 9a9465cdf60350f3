// cuSOLVER dense factorizations with results, as cuSolverDn_LinearSolver and the
// CUDALibrarySamples getrf/potrf examples check them: LU with partial pivoting (getrf) and its
// solves (getrs, plain and transposed), Cholesky of both triangles (potrf) and its solve (potrs)
// in double precision, an LU in single precision, the 64-bit API's Xgetrf/Xgetrs, symmetric
// eigenpairs (syevd), and the info
// of a singular and of an indefinite matrix. Every residual max |A·x − b| is checked here.
// Valid CUDA: the same binary runs on a real GPU.
#include <cusolverDn.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "device_buffers.h"
#include "library_check.h"

namespace {

// A general (nonsymmetric) n x n matrix whose largest entries are off the diagonal, so partial
// pivoting must exchange rows; column-major.
template <typename T>
std::vector<T> general(int n) {
  std::vector<T> a(static_cast<size_t>(n) * n);
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < n; ++i) {
      a[i + j * n] = static_cast<T>(((i * 7 + j * 13) % 17) - 8) / 4 + (i == (j + 1) % n ? 9 : 0);
    }
  }
  return a;
}

// A symmetric positive definite n x n matrix (diagonally dominant).
std::vector<double> spd(int n) {
  std::vector<double> a(static_cast<size_t>(n) * n);
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < n; ++i) a[i + j * n] = i == j ? n + 2.0 : 1.0 / (1 + std::abs(i - j));
  }
  return a;
}

template <typename T>
double residual(const std::vector<T>& a, int n, bool transposed, const std::vector<T>& x,
                const std::vector<T>& b) {
  double worst = 0;
  for (int i = 0; i < n; ++i) {
    double sum = 0;
    for (int j = 0; j < n; ++j) sum += (transposed ? a[j + i * n] : a[i + j * n]) * x[j];
    worst = std::max(worst, std::fabs(sum - b[i]));
  }
  return worst;
}

int failures = 0;
void report(const char* what, double value, double tolerance) {
  const bool ok = value <= tolerance;
  failures += ok ? 0 : 1;
  std::printf("cusolver_values: %s %.1e %s\n", what, value, ok ? "ok" : "FAILED");
}

}  // namespace

int main() {
  cusolverDnHandle_t handle = nullptr;
  LIBRARY_CHECK(cusolverDnCreate(&handle));
  const int n = 60;
  int* d_info = nullptr;
  EMU_CHECK(cudaMalloc(&d_info, sizeof(int)));
  std::vector<double> b(n);
  for (int i = 0; i < n; ++i) b[i] = 1.0 + i % 3;

  {  // LU in double, solved plain and transposed.
    const std::vector<double> a = general<double>(n);
    double* d_a = emu_programs::to_device(a);
    int* d_ipiv = nullptr;
    EMU_CHECK(cudaMalloc(&d_ipiv, sizeof(int) * n));
    int lwork = 0;
    LIBRARY_CHECK(cusolverDnDgetrf_bufferSize(handle, n, n, d_a, n, &lwork));
    double* d_work = nullptr;
    EMU_CHECK(cudaMalloc(&d_work, sizeof(double) * lwork));
    LIBRARY_CHECK(cusolverDnDgetrf(handle, n, n, d_a, n, d_work, d_ipiv, d_info));
    const int info = emu_programs::to_host(d_info, 1)[0];
    const std::vector<int> pivots = emu_programs::to_host(d_ipiv, n);
    int exchanges = 0;
    for (int i = 0; i < n; ++i) exchanges += pivots[i] != i + 1;
    for (bool transposed : {false, true}) {
      double* d_b = emu_programs::to_device(b);
      LIBRARY_CHECK(cusolverDnDgetrs(handle, transposed ? CUBLAS_OP_T : CUBLAS_OP_N, n, 1, d_a, n,
                                     d_ipiv, d_b, n, d_info));
      report(transposed ? "dgetrs T residual" : "dgetrs N residual",
             residual(a, n, transposed, emu_programs::to_host(d_b, n), b), 1e-10);
      EMU_CHECK(cudaFree(d_b));
    }
    std::printf("cusolver_values: dgetrf info %d, %s\n", info,
                exchanges > 0 ? "rows exchanged" : "no exchange");
    for (void* p :
         {static_cast<void*>(d_a), static_cast<void*>(d_ipiv), static_cast<void*>(d_work)}) {
      EMU_CHECK(cudaFree(p));
    }
  }
  {  // Cholesky of either triangle, then potrs.
    const std::vector<double> a = spd(n);
    for (cublasFillMode_t uplo : {CUBLAS_FILL_MODE_LOWER, CUBLAS_FILL_MODE_UPPER}) {
      double* d_a = emu_programs::to_device(a);
      int lwork = 0;
      LIBRARY_CHECK(cusolverDnDpotrf_bufferSize(handle, uplo, n, d_a, n, &lwork));
      double* d_work = nullptr;
      EMU_CHECK(cudaMalloc(&d_work, sizeof(double) * lwork));
      LIBRARY_CHECK(cusolverDnDpotrf(handle, uplo, n, d_a, n, d_work, lwork, d_info));
      double* d_b = emu_programs::to_device(b);
      LIBRARY_CHECK(cusolverDnDpotrs(handle, uplo, n, 1, d_a, n, d_b, n, d_info));
      report(uplo == CUBLAS_FILL_MODE_LOWER ? "dpotrs lower residual" : "dpotrs upper residual",
             residual(a, n, false, emu_programs::to_host(d_b, n), b), 1e-10);
      for (double* p : {d_a, d_work, d_b}) EMU_CHECK(cudaFree(p));
    }
  }
  {  // LU in single precision.
    const std::vector<float> a = general<float>(n);
    std::vector<float> bf(b.begin(), b.end());
    float* d_a = emu_programs::to_device(a);
    float* d_b = emu_programs::to_device(bf);
    int* d_ipiv = nullptr;
    EMU_CHECK(cudaMalloc(&d_ipiv, sizeof(int) * n));
    int lwork = 0;
    LIBRARY_CHECK(cusolverDnSgetrf_bufferSize(handle, n, n, d_a, n, &lwork));
    float* d_work = nullptr;
    EMU_CHECK(cudaMalloc(&d_work, sizeof(float) * lwork));
    LIBRARY_CHECK(cusolverDnSgetrf(handle, n, n, d_a, n, d_work, d_ipiv, d_info));
    LIBRARY_CHECK(cusolverDnSgetrs(handle, CUBLAS_OP_N, n, 1, d_a, n, d_ipiv, d_b, n, d_info));
    report("sgetrs residual", residual(a, n, false, emu_programs::to_host(d_b, n), bf), 1e-3);
    for (void* p : {static_cast<void*>(d_a), static_cast<void*>(d_b), static_cast<void*>(d_ipiv),
                    static_cast<void*>(d_work)}) {
      EMU_CHECK(cudaFree(p));
    }
  }
  {  // The 64-bit API: Xgetrf / Xgetrs with 64-bit pivots.
    const std::vector<double> a = general<double>(n);
    double* d_a = emu_programs::to_device(a);
    double* d_b = emu_programs::to_device(b);
    int64_t* d_ipiv = nullptr;
    EMU_CHECK(cudaMalloc(&d_ipiv, sizeof(int64_t) * n));
    cusolverDnParams_t params = nullptr;
    LIBRARY_CHECK(cusolverDnCreateParams(&params));
    size_t device_bytes = 0, host_bytes = 0;
    LIBRARY_CHECK(cusolverDnXgetrf_bufferSize(handle, params, n, n, CUDA_R_64F, d_a, n, CUDA_R_64F,
                                              &device_bytes, &host_bytes));
    void* d_work = nullptr;
    EMU_CHECK(cudaMalloc(&d_work, device_bytes > 0 ? device_bytes : 1));
    std::vector<char> h_work(host_bytes > 0 ? host_bytes : 1);
    LIBRARY_CHECK(cusolverDnXgetrf(handle, params, n, n, CUDA_R_64F, d_a, n, d_ipiv, CUDA_R_64F,
                                   d_work, device_bytes, h_work.data(), host_bytes, d_info));
    LIBRARY_CHECK(cusolverDnXgetrs(handle, params, CUBLAS_OP_N, n, 1, CUDA_R_64F, d_a, n, d_ipiv,
                                   CUDA_R_64F, d_b, n, d_info));
    report("Xgetrs residual", residual(a, n, false, emu_programs::to_host(d_b, n), b), 1e-10);
    LIBRARY_CHECK(cusolverDnDestroyParams(params));
    for (void* p :
         {static_cast<void*>(d_a), static_cast<void*>(d_b), static_cast<void*>(d_ipiv), d_work}) {
      EMU_CHECK(cudaFree(p));
    }
  }
  {  // A solve with no factorization before it: on a GPU the result is meaningless; the
     // emulator leaves B as it was (it never solves with an unfactored matrix).
    const std::vector<double> a = general<double>(4);
    std::vector<double> b4 = {1, 2, 3, 4};
    double* d_a = emu_programs::to_device(a);
    double* d_b = emu_programs::to_device(b4);
    int* d_ipiv = emu_programs::to_device(std::vector<int>{1, 2, 3, 4});
    LIBRARY_CHECK(cusolverDnDgetrs(handle, CUBLAS_OP_N, 4, 1, d_a, 4, d_ipiv, d_b, 4, d_info));
    const std::vector<double> after = emu_programs::to_host(d_b, 4);
    const bool unchanged = after == b4;
    std::printf("cusolver_values: getrs without getrf leaves B %s\n",
                unchanged ? "unchanged" : "CHANGED");
    failures += unchanged ? 0 : 1;
    for (void* p : {static_cast<void*>(d_a), static_cast<void*>(d_b), static_cast<void*>(d_ipiv)}) {
      EMU_CHECK(cudaFree(p));
    }
  }
  {  // Symmetric eigenpairs (syevd with vectors, lower triangle): the values 2, 3, 4 of the
     // CUDALibrarySamples example's matrix, and A·v = λ·v for each vector.
    const std::vector<double> a = {3.5, 0.5, 0.0, 0.5, 3.5, 0.0, 0.0, 0.0, 2.0};
    double* d_a = emu_programs::to_device(a);
    double* d_w = nullptr;
    EMU_CHECK(cudaMalloc(&d_w, sizeof(double) * 3));
    int lwork = 0;
    LIBRARY_CHECK(cusolverDnDsyevd_bufferSize(handle, CUSOLVER_EIG_MODE_VECTOR,
                                              CUBLAS_FILL_MODE_LOWER, 3, d_a, 3, d_w, &lwork));
    double* d_work = nullptr;
    EMU_CHECK(cudaMalloc(&d_work, sizeof(double) * lwork));
    LIBRARY_CHECK(cusolverDnDsyevd(handle, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, 3, d_a,
                                   3, d_w, d_work, lwork, d_info));
    const std::vector<double> w = emu_programs::to_host(d_w, 3), v = emu_programs::to_host(d_a, 9);
    double value_error = std::fabs(w[0] - 2) + std::fabs(w[1] - 3) + std::fabs(w[2] - 4);
    double vector_error = 0;
    for (int k = 0; k < 3; ++k) {
      for (int i = 0; i < 3; ++i) {
        double av = 0;
        for (int j = 0; j < 3; ++j) av += a[i + j * 3] * v[j + k * 3];
        vector_error = std::max(vector_error, std::fabs(av - w[k] * v[i + k * 3]));
      }
    }
    report("dsyevd eigenvalue error", value_error, 1e-12);
    report("dsyevd |A v - lambda v|", vector_error, 1e-12);
    for (double* p : {d_a, d_w, d_work}) EMU_CHECK(cudaFree(p));
  }
  {  // info: a singular matrix (zero third column) and an indefinite one (negative pivot 2).
    std::vector<double> singular = general<double>(4);
    for (int i = 0; i < 4; ++i) singular[i + 2 * 4] = 0.0;
    double* d_a = emu_programs::to_device(singular);
    int* d_ipiv = nullptr;
    EMU_CHECK(cudaMalloc(&d_ipiv, sizeof(int) * 4));
    double* d_work = nullptr;
    EMU_CHECK(cudaMalloc(&d_work, sizeof(double) * 4 * 64));
    LIBRARY_CHECK(cusolverDnDgetrf(handle, 4, 4, d_a, 4, d_work, d_ipiv, d_info));
    const int singular_info = emu_programs::to_host(d_info, 1)[0];
    std::vector<double> indefinite = {4, 2, 0, 2, -1, 0, 0, 0, 3};  // leading 2x2 minor −8
    double* d_c = emu_programs::to_device(indefinite);
    LIBRARY_CHECK(cusolverDnDpotrf(handle, CUBLAS_FILL_MODE_LOWER, 3, d_c, 3, d_work, 256, d_info));
    const int indefinite_info = emu_programs::to_host(d_info, 1)[0];
    std::printf("cusolver_values: singular getrf info %d, indefinite potrf info %d\n",
                singular_info, indefinite_info);
    failures += singular_info == 3 && indefinite_info == 2 ? 0 : 1;
    for (void* p : {static_cast<void*>(d_a), static_cast<void*>(d_ipiv), static_cast<void*>(d_work),
                    static_cast<void*>(d_c)}) {
      EMU_CHECK(cudaFree(p));
    }
  }
  EMU_CHECK(cudaFree(d_info));
  LIBRARY_CHECK(cusolverDnDestroy(handle));
  std::printf("cusolver_values: %s\n", failures == 0 ? "all ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}
