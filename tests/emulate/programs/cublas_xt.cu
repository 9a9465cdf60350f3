// cublasXt as NVIDIA's simpleCUBLASXT sample uses it (every device selected, a block size, an
// SGEMM on host memory checked against a host reference by the relative error norm), plus a
// transposed DGEMM and a ZGEMM checked the same way, an SSYRK and a DTRSM (recorded), and a
// device selection outside the machine (refused). Valid CUDA: the same binary runs on real GPUs.
// Written for the emulator's tests.
#include <cublasXt.h>

#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "emu_check.h"
#include "library_check.h"

namespace {

// ‖C − ref‖₂ / ‖ref‖₂ with ref = alpha·op(A)·B + beta·C0 (column-major, op 'N' or 'T').
template <typename T>
double relative_error(int m, int n, int k, T alpha, const std::vector<T>& a, char op_a,
                      const std::vector<T>& b, T beta, const std::vector<T>& c0,
                      const std::vector<T>& c) {
  double error = 0, norm = 0;
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      T sum = 0;
      for (int p = 0; p < k; ++p) sum += (op_a == 'N' ? a[p * m + i] : a[i * k + p]) * b[j * k + p];
      const T ref = alpha * sum + beta * c0[j * m + i];
      error += std::norm(std::complex<double>(c[j * m + i] - ref));
      norm += std::norm(std::complex<double>(ref));
    }
  }
  return std::sqrt(error / norm);
}

}  // namespace

int main() {
  int count = 0;
  EMU_CHECK(cudaGetDeviceCount(&count));
  std::vector<int> devices(count);
  for (int i = 0; i < count; ++i) devices[i] = i;
  cublasXtHandle_t handle;
  LIBRARY_CHECK(cublasXtCreate(&handle));
  LIBRARY_CHECK(cublasXtDeviceSelect(handle, count, devices.data()));
  LIBRARY_CHECK(cublasXtSetBlockDim(handle, 64));
  int block = 0;
  LIBRARY_CHECK(cublasXtGetBlockDim(handle, &block));
  EMU_REQUIRE(block == 64);

  const int n = 256;
  std::vector<float> a(n * n), b(n * n), c(n * n);
  srand(7);
  for (int i = 0; i < n * n; ++i) {
    a[i] = rand() / static_cast<float>(RAND_MAX);
    b[i] = rand() / static_cast<float>(RAND_MAX);
    c[i] = rand() / static_cast<float>(RAND_MAX);
  }
  const std::vector<float> c0 = c;
  const float alpha = 1.0f, beta = 0.5f;
  LIBRARY_CHECK(cublasXtSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a.data(), n,
                              b.data(), n, &beta, c.data(), n));
  const double sgemm_error = relative_error<float>(n, n, n, alpha, a, 'N', b, beta, c0, c);
  EMU_REQUIRE(sgemm_error < 1e-6);

  const int m = 40, k = 24, nd = 30;
  std::vector<double> da(k * m), db(k * nd), dc(m * nd, 0.0);
  for (int i = 0; i < k * m; ++i) da[i] = std::sin(i);
  for (int i = 0; i < k * nd; ++i) db[i] = std::cos(i);
  const double done = 2.0, dzero = 0.0;
  LIBRARY_CHECK(cublasXtDgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, nd, k, &done, da.data(), k,
                              db.data(), k, &dzero, dc.data(), m));
  const std::vector<double> dc0(m * nd, 0.0);
  EMU_REQUIRE(relative_error<double>(m, nd, k, 2.0, da, 'T', db, 0.0, dc0, dc) < 1e-14);

  using zd = std::complex<double>;
  std::vector<zd> za(16 * 16), zb(16 * 8), zc(16 * 8, zd(1, 1));
  for (int i = 0; i < 16 * 16; ++i) za[i] = zd(i % 5, -(i % 3));
  for (int i = 0; i < 16 * 8; ++i) zb[i] = zd(1, i % 4);
  const std::vector<zd> zc0 = zc;
  const cuDoubleComplex zalpha = make_cuDoubleComplex(0, 1), zbeta = make_cuDoubleComplex(1, 0);
  LIBRARY_CHECK(cublasXtZgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 16, 8, 16, &zalpha,
                              reinterpret_cast<cuDoubleComplex*>(za.data()), 16,
                              reinterpret_cast<cuDoubleComplex*>(zb.data()), 16, &zbeta,
                              reinterpret_cast<cuDoubleComplex*>(zc.data()), 16));
  EMU_REQUIRE(relative_error<zd>(16, 8, 16, zd(0, 1), za, 'N', zb, zd(1, 0), zc0, zc) < 1e-14);

  std::vector<float> s(n * n, 1.0f);
  LIBRARY_CHECK(cublasXtSsyrk(handle, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, n, 64, &alpha, a.data(),
                              n, &beta, s.data(), n));
  std::vector<double> tri(64 * 64, 1.0), rhs(64 * 16, 1.0);
  LIBRARY_CHECK(cublasXtDtrsm(handle, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N,
                              CUBLAS_DIAG_UNIT, 64, 16, &done, tri.data(), 64, rhs.data(), 64));
  int bad = 99;
  const cublasStatus_t refused = cublasXtDeviceSelect(handle, 1, &bad);
  EMU_REQUIRE(refused == CUBLAS_STATUS_INVALID_VALUE);
  LIBRARY_CHECK(cublasXtDestroy(handle));
  std::printf(
      "cublas_xt: %d device(s); SGEMM %dx%d relative error %.1e (below 1e-6: yes), DGEMM "
      "and ZGEMM exact (yes); device 99 -> %d\n",
      count, n, n, sgemm_error, static_cast<int>(refused));
  return 0;
}
