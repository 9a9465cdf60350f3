// cuBLAS level 1 and 2 as NVIDIA's conjugateGradient and simpleCUBLAS-style programs call them,
// on a stream, with values checked on the host: x = 1..n and y = 1 (n = 4096) copied in;
// cublasSdot (host pointer mode), cublasSaxpy (y = 2x + y), cublasSnrm2, cublasSscal,
// cublasScopy, cublasIsamax, a 3×2 cublasSgemv (N and T), cublasDdot, then cublasSdot with the
// result in device memory (CUBLAS_POINTER_MODE_DEVICE) copied back, a 64×64 cublasStrsm with 8
// right-hand sides, and one call on a host array
// (refused: CUBLAS_STATUS_EXECUTION_FAILED, where the GPU would fault). Prints
// "cublas_level12: dot D nrm2 N amax I gemv_n A B C gemv_t P Q device_dot E bad S".
// Valid cuBLAS: on a real GPU the same binary prints the same numbers (the refused call faults
// there instead).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "emu_cublas_check.h"

int main() {
  const int n = 4096;
  cudaStream_t stream;
  EMU_CHECK(cudaStreamCreate(&stream));
  cublasHandle_t handle;
  EMU_CUBLAS_CHECK(cublasCreate(&handle));
  EMU_CUBLAS_CHECK(cublasSetStream(handle, stream));

  std::vector<float> hx(n), hy(n, 1.0f);
  for (int i = 0; i < n; ++i) hx[i] = static_cast<float>(i + 1);
  float *x = nullptr, *y = nullptr, *z = nullptr, *result = nullptr;
  EMU_CHECK(cudaMalloc(&x, n * sizeof(float)));
  EMU_CHECK(cudaMalloc(&y, n * sizeof(float)));
  EMU_CHECK(cudaMalloc(&z, n * sizeof(float)));
  EMU_CHECK(cudaMalloc(&result, sizeof(float)));
  EMU_CUBLAS_CHECK(cublasSetVector(n, sizeof(float), hx.data(), 1, x, 1));
  EMU_CUBLAS_CHECK(cublasSetVector(n, sizeof(float), hy.data(), 1, y, 1));

  float dot = 0, nrm2 = 0;
  EMU_CUBLAS_CHECK(cublasSdot(handle, n, x, 1, y, 1, &dot));  // n(n+1)/2
  const float two = 2.0f;
  EMU_CUBLAS_CHECK(cublasSaxpy(handle, n, &two, x, 1, y, 1));  // y = 2x + 1
  const float half = 0.5f;
  EMU_CUBLAS_CHECK(cublasSscal(handle, n, &half, y, 1));  // y = x + 0.5
  EMU_CUBLAS_CHECK(cublasScopy(handle, n, y, 1, z, 1));
  EMU_CUBLAS_CHECK(cublasSnrm2(handle, 3, z, 1, &nrm2));  // |(1.5, 2.5, 3.5)|
  int amax = 0;
  EMU_CUBLAS_CHECK(cublasIsamax(handle, n, z, 1, &amax));  // n (1-based)

  // A = [1 4; 2 5; 3 6] (3×2, column-major), v = (1, 1, 1).
  const float ha[6] = {1, 2, 3, 4, 5, 6};
  float *a = nullptr, *v = nullptr, *w = nullptr;
  EMU_CHECK(cudaMalloc(&a, sizeof ha));
  EMU_CHECK(cudaMalloc(&v, 3 * sizeof(float)));
  EMU_CHECK(cudaMalloc(&w, 3 * sizeof(float)));
  EMU_CHECK(cudaMemcpy(a, ha, sizeof ha, cudaMemcpyHostToDevice));
  const float ones[3] = {1, 1, 1};
  EMU_CHECK(cudaMemcpy(v, ones, sizeof ones, cudaMemcpyHostToDevice));
  const float one = 1.0f, zero = 0.0f;
  EMU_CUBLAS_CHECK(cublasSgemv(handle, CUBLAS_OP_N, 3, 2, &one, a, 3, v, 1, &zero, w, 1));
  float gemv_n[3] = {0, 0, 0};
  EMU_CHECK(cudaMemcpyAsync(gemv_n, w, sizeof gemv_n, cudaMemcpyDeviceToHost, stream));
  EMU_CHECK(cudaStreamSynchronize(stream));
  EMU_CUBLAS_CHECK(cublasSgemv(handle, CUBLAS_OP_T, 3, 2, &one, a, 3, v, 1, &zero, w, 1));
  float gemv_t[2] = {0, 0};
  EMU_CHECK(cudaMemcpy(gemv_t, w, sizeof gemv_t, cudaMemcpyDeviceToHost));

  std::vector<double> hd(n, 2.0);
  double* d = nullptr;
  EMU_CHECK(cudaMalloc(&d, n * sizeof(double)));
  EMU_CHECK(cudaMemcpy(d, hd.data(), n * sizeof(double), cudaMemcpyHostToDevice));
  double ddot = 0;
  EMU_CUBLAS_CHECK(cublasDdot(handle, n, d, 1, d, 1, &ddot));  // 4n

  EMU_CUBLAS_CHECK(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_DEVICE));
  EMU_CUBLAS_CHECK(cublasSdot(handle, 3, v, 1, v, 1, result));  // 3, no host wait
  float device_dot = 0;
  EMU_CHECK(cudaMemcpy(&device_dot, result, sizeof device_dot, cudaMemcpyDeviceToHost));
  EMU_CUBLAS_CHECK(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST));

  // A triangular solve as cuSolverDn_LinearSolver's QR path makes (64×64 lower A, 8 right-hand
  // sides in z; values not checked).
  EMU_CUBLAS_CHECK(cublasStrsm(handle, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N,
                               CUBLAS_DIAG_NON_UNIT, 64, 8, &one, x, 64, z, 64));

  // A host array where cuBLAS wants device memory.
  const cublasStatus_t bad = cublasSscal(handle, n, &half, hx.data(), 1);

  std::printf(
      "cublas_level12: dot %.0f nrm2 %.4f amax %d gemv_n %.0f %.0f %.0f gemv_t %.0f %.0f "
      "ddot %.0f device_dot %.0f bad %s\n",
      dot, nrm2, amax, gemv_n[0], gemv_n[1], gemv_n[2], gemv_t[0], gemv_t[1], ddot, device_dot,
      cublasGetStatusName(bad));
  const bool right = dot == n * (n + 1) / 2.0f && std::fabs(nrm2 - std::sqrt(20.75f)) < 1e-4f &&
                     amax == n && gemv_n[0] == 5 && gemv_n[1] == 7 && gemv_n[2] == 9 &&
                     gemv_t[0] == 6 && gemv_t[1] == 15 && ddot == 4.0 * n && device_dot == 3 &&
                     bad == CUBLAS_STATUS_EXECUTION_FAILED;
  for (void* p : {static_cast<void*>(x), static_cast<void*>(y), static_cast<void*>(z),
                  static_cast<void*>(result), static_cast<void*>(a), static_cast<void*>(v),
                  static_cast<void*>(w), static_cast<void*>(d)}) {
    EMU_CHECK(cudaFree(p));
  }
  EMU_CUBLAS_CHECK(cublasDestroy(handle));
  EMU_CHECK(cudaStreamDestroy(stream));
  return right ? 0 : 1;
}
