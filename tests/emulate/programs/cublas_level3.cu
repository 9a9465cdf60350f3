// cuBLAS level 3 beyond the real GEMMs and the batched extensions, in the style of NVIDIA's
// CUDALibrarySamples (cuBLAS/Level-3, Extensions) and the simpleCUBLAS_LU sample. Valid CUDA: the
// same binary runs on a real GPU.
//   - complex GEMM (C), strided batched Z GEMM, Cgemm3m; SYMM (S, left), HEMM (C, right), SYRK
//     (D), HERK (Z), SYR2K (S), SYRKX (C), TRMM (D), TRSM (Z), batched TRSM (S): recorded;
//   - GEAM (C = 2·Aᵀ + B), DGMM (diag scaling), TPTTR/TRTTP (packed round trip): computed on the
//     copied-in data and checked here;
//   - batched LU as simpleCUBLAS_LU does it (10 diagonally dominant 4 × 4 matrices, pivoting):
//     P·A = L·U checked per matrix, then getrs (A·x = b checked), getri (A·A⁻¹ = I checked),
//     matinv (the same), and geqrf / gels (recorded; host info 0);
//   - misuse: SYMM with lda < m is refused.
// Written for the emulator's tests.
#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "device_buffers.h"
#include "emu_check.h"
#include "library_check.h"

int main() {
  cublasHandle_t handle;
  cudaStream_t stream;
  LIBRARY_CHECK(cublasCreate(&handle));
  EMU_CHECK(cudaStreamCreate(&stream));
  LIBRARY_CHECK(cublasSetStream(handle, stream));

  // Level 3, recorded.
  const int m = 64, n = 32, k = 16;
  const std::vector<cuComplex> cz(m * m, make_cuComplex(1.0f, 0.5f));
  const std::vector<cuDoubleComplex> zz(m * m * 2, make_cuDoubleComplex(1.0, 0.0));
  const std::vector<float> sz(m * m * 4, 1.0f);
  const std::vector<double> dz(m * m, 1.0);
  cuComplex* ca = to_device(cz);
  cuComplex* cb = to_device(cz);
  cuComplex* cc = to_device(cz);
  cuDoubleComplex* za = to_device(zz);
  cuDoubleComplex* zb = to_device(zz);
  cuDoubleComplex* zc = to_device(zz);
  float* sa = to_device(sz);
  float* sb = to_device(sz);
  float* sc = to_device(sz);
  double* da = to_device(dz);
  double* db = to_device(dz);
  double* dc = to_device(dz);
  const cuComplex c_one = make_cuComplex(1.0f, 0.0f);
  const cuDoubleComplex z_one = make_cuDoubleComplex(1.0, 0.0);
  const float s_one = 1.0f, s_two = 2.0f;
  const double d_one = 1.0;
  LIBRARY_CHECK(
      cublasCgemm(handle, CUBLAS_OP_N, CUBLAS_OP_C, m, n, k, &c_one, ca, m, cb, n, &c_one, cc, m));
  LIBRARY_CHECK(cublasZgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, 16, 16, 16, &z_one, za,
                                          16, 256, zb, 16, 256, &z_one, zc, 16, 256, 4));
  LIBRARY_CHECK(cublasCgemm3m(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &c_one, ca, m, cb, k,
                              &c_one, cc, m));
  LIBRARY_CHECK(cublasSsymm(handle, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, m, n, &s_one, sa, m,
                            sb, m, &s_one, sc, m));
  LIBRARY_CHECK(cublasChemm(handle, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, m, n, &c_one, ca, n,
                            cb, m, &c_one, cc, m));
  LIBRARY_CHECK(
      cublasDsyrk(handle, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, n, k, &d_one, da, n, &d_one, dc, n));
  const double d_zero = 0.0;
  LIBRARY_CHECK(cublasZherk(handle, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_C, n, k, &d_one, za, k,
                            &d_zero, zc, n));
  LIBRARY_CHECK(cublasSsyr2k(handle, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, n, k, &s_one, sa, k, sb,
                             k, &s_one, sc, n));
  LIBRARY_CHECK(cublasCsyrkx(handle, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, n, k, &c_one, ca, n, cb,
                             n, &c_one, cc, n));
  LIBRARY_CHECK(cublasDtrmm(handle, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
                            CUBLAS_DIAG_NON_UNIT, n, 16, &d_one, da, n, db, n, dc, n));
  LIBRARY_CHECK(cublasZtrsm(handle, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T,
                            CUBLAS_DIAG_UNIT, 16, n, &z_one, za, n, zb, 16));
  const std::vector<float*> s_pointers = {sa, sa + 1024, sa + 2048};
  const std::vector<float*> s_rhs = {sb, sb + 1024, sb + 2048};
  float** d_s_pointers = to_device(s_pointers);
  float** d_s_rhs = to_device(s_rhs);
  LIBRARY_CHECK(cublasStrsmBatched(handle, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N,
                                   CUBLAS_DIAG_NON_UNIT, 32, 8, &s_one, d_s_pointers, 32, d_s_rhs,
                                   32, 3));
  const cublasStatus_t refused = cublasSsymm(handle, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, m, n,
                                             &s_one, sa, m - 1, sb, m, &s_one, sc, m);
  EMU_REQUIRE(refused == CUBLAS_STATUS_INVALID_VALUE);

  // GEAM: C = 2·Aᵀ + B (A 3 × 5, C 5 × 3); DGMM: C = A·diag(x); TPTTR/TRTTP round trip.
  std::vector<float> a35(15), b53(15), x3 = {1.0f, 10.0f, 100.0f};
  for (int i = 0; i < 15; ++i) a35[i] = static_cast<float>(i), b53[i] = static_cast<float>(100 + i);
  float* d_a35 = to_device(a35);
  float* d_b53 = to_device(b53);
  float* d_c53 = to_device(std::vector<float>(15, 0.0f));
  float* d_x3 = to_device(x3);
  LIBRARY_CHECK(cublasSgeam(handle, CUBLAS_OP_T, CUBLAS_OP_N, 5, 3, &s_two, d_a35, 3, &s_one, d_b53,
                            5, d_c53, 5));
  std::vector<float> c53 = to_host(d_c53, 15);
  for (int j = 0; j < 3; ++j) {
    for (int i = 0; i < 5; ++i)
      EMU_REQUIRE(c53[j * 5 + i] == 2.0f * a35[i * 3 + j] + b53[j * 5 + i]);
  }
  LIBRARY_CHECK(cublasSdgmm(handle, CUBLAS_SIDE_RIGHT, 5, 3, d_b53, 5, d_x3, 1, d_c53, 5));
  c53 = to_host(d_c53, 15);
  for (int j = 0; j < 3; ++j) {
    for (int i = 0; i < 5; ++i) EMU_REQUIRE(c53[j * 5 + i] == b53[j * 5 + i] * x3[j]);
  }
  std::vector<double> packed(10);
  for (int i = 0; i < 10; ++i) packed[i] = i + 1;
  double* d_packed = to_device(packed);
  double* d_full = to_device(std::vector<double>(16, 0.0));
  double* d_back = to_device(std::vector<double>(10, 0.0));
  LIBRARY_CHECK(cublasDtpttr(handle, CUBLAS_FILL_MODE_UPPER, 4, d_packed, d_full, 4));
  LIBRARY_CHECK(cublasDtrttp(handle, CUBLAS_FILL_MODE_UPPER, 4, d_full, 4, d_back));
  const std::vector<double> full = to_host(d_full, 16), back = to_host(d_back, 10);
  EMU_REQUIRE(full[3 * 4 + 3] == 10.0 && full[1 * 4 + 0] == 2.0 && full[0 * 4 + 1] == 0.0);
  EMU_REQUIRE(back == packed);

  // Batched LU, simpleCUBLAS_LU style.
  const int N = 4, batch = 10;
  std::vector<double> a(N * N * batch);
  srand(12345);
  for (int b = 0; b < batch; ++b) {
    for (int i = 0; i < N * N; ++i) a[b * N * N + i] = 1.0 + static_cast<double>(rand()) / RAND_MAX;
    for (int i = 0; i < N; ++i) a[b * N * N + i * N + i] += N;
  }
  double* d_a = to_device(a);
  std::vector<double*> pointers(batch);
  for (int b = 0; b < batch; ++b) pointers[b] = d_a + b * N * N;
  double** d_pointers = to_device(pointers);
  int* d_pivots = to_device(std::vector<int>(N * batch, 0));
  int* d_info = to_device(std::vector<int>(batch, -7));
  LIBRARY_CHECK(cublasDgetrfBatched(handle, N, d_pointers, N, d_pivots, d_info, batch));
  const std::vector<double> lu = to_host(d_a, N * N * batch);
  const std::vector<int> pivots = to_host(d_pivots, N * batch), info = to_host(d_info, batch);
  double worst_lu = 0;
  for (int b = 0; b < batch; ++b) {
    EMU_REQUIRE(info[b] == 0);
    const double* in = a.data() + b * N * N;
    const double* f = lu.data() + b * N * N;
    int order[N];
    for (int i = 0; i < N; ++i) order[i] = i;
    for (int i = 0; i < N; ++i) std::swap(order[i], order[pivots[b * N + i] - 1]);
    for (int i = 0; i < N; ++i) {
      for (int j = 0; j < N; ++j) {
        double product = 0;  // (L·U)(i, j), L unit lower, U upper, column-major
        for (int t = 0; t <= std::min(i, j); ++t)
          product += (t == i ? 1.0 : f[t * N + i]) * f[j * N + t];
        worst_lu = std::max(worst_lu, std::fabs(product - in[j * N + order[i]]));
      }
    }
  }
  EMU_REQUIRE(worst_lu < 1e-12);
  // getrs: A·x = b for b = (1, 2, 3, 4) in each system.
  std::vector<double> rhs(N * batch);
  for (int i = 0; i < N * batch; ++i) rhs[i] = 1 + i % N;
  double* d_rhs = to_device(rhs);
  std::vector<double*> rhs_pointers(batch);
  for (int b = 0; b < batch; ++b) rhs_pointers[b] = d_rhs + b * N;
  double** d_rhs_pointers = to_device(rhs_pointers);
  int host_info = -7;
  LIBRARY_CHECK(cublasDgetrsBatched(handle, CUBLAS_OP_N, N, 1, d_pointers, N, d_pivots,
                                    d_rhs_pointers, N, &host_info, batch));
  EMU_REQUIRE(host_info == 0);
  const std::vector<double> x = to_host(d_rhs, N * batch);
  double worst_solve = 0;
  for (int b = 0; b < batch; ++b) {
    for (int i = 0; i < N; ++i) {
      double ax = 0;
      for (int j = 0; j < N; ++j) ax += a[b * N * N + j * N + i] * x[b * N + j];
      worst_solve = std::max(worst_solve, std::fabs(ax - (1 + i)));
    }
  }
  EMU_REQUIRE(worst_solve < 1e-12);
  // getri from the LU, and matinv from the original matrices: A·A⁻¹ = I.
  double* d_inverse = to_device(std::vector<double>(N * N * batch, 0.0));
  std::vector<double*> inverse_pointers(batch);
  for (int b = 0; b < batch; ++b) inverse_pointers[b] = d_inverse + b * N * N;
  double** d_inverse_pointers = to_device(inverse_pointers);
  double worst_inverse = 0;
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 0) {
      LIBRARY_CHECK(cublasDgetriBatched(handle, N, d_pointers, N, d_pivots, d_inverse_pointers, N,
                                        d_info, batch));
    } else {
      EMU_CHECK(cudaMemcpy(d_a, a.data(), a.size() * sizeof(double), cudaMemcpyHostToDevice));
      LIBRARY_CHECK(
          cublasDmatinvBatched(handle, N, d_pointers, N, d_inverse_pointers, N, d_info, batch));
    }
    const std::vector<double> inverse = to_host(d_inverse, N * N * batch);
    for (int b = 0; b < batch; ++b) {
      for (int i = 0; i < N; ++i) {
        for (int j = 0; j < N; ++j) {
          double product = 0;
          for (int t = 0; t < N; ++t)
            product += a[b * N * N + t * N + i] * inverse[b * N * N + j * N + t];
          worst_inverse = std::max(worst_inverse, std::fabs(product - (i == j ? 1.0 : 0.0)));
        }
      }
    }
  }
  EMU_REQUIRE(worst_inverse < 1e-12);
  // QR and least squares on 8 × 4 matrices: recorded, host info 0.
  double* d_tall = to_device(std::vector<double>(8 * 4 * batch, 1.0));
  double* d_tau = to_device(std::vector<double>(4 * batch, 0.0));
  double* d_c = to_device(std::vector<double>(8 * batch, 1.0));
  std::vector<double*> tall(batch), tau(batch), cs(batch);
  for (int b = 0; b < batch; ++b)
    tall[b] = d_tall + b * 32, tau[b] = d_tau + b * 4, cs[b] = d_c + b * 8;
  double** d_tall_pointers = to_device(tall);
  double** d_tau_pointers = to_device(tau);
  double** d_c_pointers = to_device(cs);
  host_info = -7;
  LIBRARY_CHECK(
      cublasDgeqrfBatched(handle, 8, 4, d_tall_pointers, 8, d_tau_pointers, &host_info, batch));
  EMU_REQUIRE(host_info == 0);
  host_info = -7;
  LIBRARY_CHECK(cublasDgelsBatched(handle, CUBLAS_OP_N, 8, 4, 1, d_tall_pointers, 8, d_c_pointers,
                                   8, &host_info, nullptr, batch));
  EMU_REQUIRE(host_info == 0);
  EMU_CHECK(cudaStreamSynchronize(stream));

  std::printf(
      "cublas_level3: geam/dgmm/tpttr/trttp computed (yes); getrf %d x %dx%d P*A = L*U "
      "within 1e-12 (yes), getrs/getri/matinv within 1e-12 (yes); symm lda < m -> %d\n",
      batch, N, N, static_cast<int>(refused));
  LIBRARY_CHECK(cublasDestroy(handle));
  EMU_CHECK(cudaStreamDestroy(stream));
  return 0;
}
