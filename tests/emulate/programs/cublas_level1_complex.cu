// cuBLAS level 1 in complex and the rotations, in the style of NVIDIA's CUDALibrarySamples
// (cuBLAS/Level-1: axpy, scal, copy, swap, dotu/dotc, nrm2, asum, amax/amin, rot, rotg, rotm,
// rotmg) and the Ex forms. Each result is checked here against its definition on the host (the
// emulator computes level 1 on backed memory; half vectors are recorded, not computed). Valid CUDA:
// the same binary runs on a real GPU. Written for the emulator's tests.
#include <cublas_v2.h>

#include <cmath>
#include <complex>
#include <cstdio>
#include <vector>

#include "device_buffers.h"
#include "emu_check.h"
#include "library_check.h"

namespace {

using zd = std::complex<double>;

bool near(zd a, zd b, double tolerance = 1e-12) { return std::abs(a - b) <= tolerance; }

}  // namespace

int main() {
  cublasHandle_t handle;
  LIBRARY_CHECK(cublasCreate(&handle));
  const int n = 5;
  std::vector<zd> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = zd(i + 1, -i), y[i] = zd(0.5 * i, 2.0);
  auto* d_x = reinterpret_cast<cuDoubleComplex*>(to_device(x));
  auto* d_y = reinterpret_cast<cuDoubleComplex*>(to_device(y));

  // dotu, dotc, nrm2, asum, amax, amin on the original vectors.
  cuDoubleComplex dotu, dotc;
  double nrm2 = 0, asum = 0;
  int amax = 0, amin = 0;
  LIBRARY_CHECK(cublasZdotu(handle, n, d_x, 1, d_y, 1, &dotu));
  LIBRARY_CHECK(cublasZdotc(handle, n, d_x, 1, d_y, 1, &dotc));
  LIBRARY_CHECK(cublasDznrm2(handle, n, d_x, 1, &nrm2));
  LIBRARY_CHECK(cublasDzasum(handle, n, d_x, 1, &asum));
  LIBRARY_CHECK(cublasIzamax(handle, n, d_x, 1, &amax));
  LIBRARY_CHECK(cublasIzamin(handle, n, d_x, 1, &amin));
  zd want_dotu = 0, want_dotc = 0;
  double want_nrm2 = 0, want_asum = 0;
  for (int i = 0; i < n; ++i) {
    want_dotu += x[i] * y[i], want_dotc += std::conj(x[i]) * y[i];
    want_nrm2 += std::norm(x[i]), want_asum += std::abs(x[i].real()) + std::abs(x[i].imag());
  }
  EMU_REQUIRE(near(zd(dotu.x, dotu.y), want_dotu) && near(zd(dotc.x, dotc.y), want_dotc));
  EMU_REQUIRE(near(nrm2, std::sqrt(want_nrm2)) && near(asum, want_asum));
  EMU_REQUIRE(amax == n && amin == 1);  // |re| + |im|: 1, 3, 5, 7, 9

  // axpy (alpha 1 + i), Zdscal (0.5), rot (c 0.6, s 0.8i), swap.
  const cuDoubleComplex alpha = make_cuDoubleComplex(1, 1);
  LIBRARY_CHECK(cublasZaxpy(handle, n, &alpha, d_x, 1, d_y, 1));
  const double half = 0.5;
  LIBRARY_CHECK(cublasZdscal(handle, n, &half, d_y, 1));
  const double c = 0.6;
  const cuDoubleComplex s = make_cuDoubleComplex(0, 0.8);
  LIBRARY_CHECK(cublasZrot(handle, n, d_x, 1, d_y, 1, &c, &s));
  std::vector<zd> wx = x, wy = y;
  for (int i = 0; i < n; ++i) {
    wy[i] = 0.5 * (wy[i] + zd(1, 1) * wx[i]);
    const zd xi = wx[i], yi = wy[i];
    wx[i] = c * xi + zd(0, 0.8) * yi;
    wy[i] = c * yi - std::conj(zd(0, 0.8)) * xi;
  }
  const std::vector<zd> gx = to_host(reinterpret_cast<zd*>(d_x), n);
  const std::vector<zd> gy = to_host(reinterpret_cast<zd*>(d_y), n);
  for (int i = 0; i < n; ++i) EMU_REQUIRE(near(gx[i], wx[i]) && near(gy[i], wy[i]));
  LIBRARY_CHECK(cublasZswap(handle, n, d_x, 1, d_y, 1));
  EMU_REQUIRE(to_host(reinterpret_cast<zd*>(d_x), n) == gy);

  // Single-precision complex with a stride: Caxpy on every other element, Icamax.
  std::vector<std::complex<float>> fx = {{1, 0}, {9, 9}, {-2, 3}, {9, 9}, {0, -1}};
  auto* d_fx = reinterpret_cast<cuComplex*>(to_device(fx));
  int famax = 0;
  LIBRARY_CHECK(cublasIcamax(handle, 3, d_fx, 2, &famax));
  EMU_REQUIRE(famax == 2);  // |re| + |im|: 1, 5, 1

  // Real rotations: rot, rotg (host mode), rotm (flag −1), rotmg's defining property.
  std::vector<double> rx = {1, 2, 3}, ry = {4, 5, 6};
  double* d_rx = to_device(rx);
  double* d_ry = to_device(ry);
  const double rc = 0.8, rs = 0.6;
  LIBRARY_CHECK(cublasDrot(handle, 3, d_rx, 1, d_ry, 1, &rc, &rs));
  const std::vector<double> gx2 = to_host(d_rx, 3), gy2 = to_host(d_ry, 3);
  for (int i = 0; i < 3; ++i) {
    EMU_REQUIRE(near(gx2[i], rc * rx[i] + rs * ry[i]) && near(gy2[i], rc * ry[i] - rs * rx[i]));
  }
  double a = 3, b = 4, gc = 0, gs = 0;
  LIBRARY_CHECK(cublasDrotg(handle, &a, &b, &gc, &gs));
  EMU_REQUIRE(near(a, 5) && near(gc, 0.6) && near(gs, 0.8) && near(b, 1 / 0.6));
  cuDoubleComplex ca = make_cuDoubleComplex(3, 0), cb = make_cuDoubleComplex(0, 4), cs;
  double cc = 0;
  LIBRARY_CHECK(cublasZrotg(handle, &ca, &cb, &cc, &cs));
  EMU_REQUIRE(near(zd(ca.x, ca.y), 5) && near(cc, 0.6) && near(zd(cs.x, cs.y), zd(0, -0.8)));
  const std::vector<double> param = {-1, 2, 3, 4, 5};  // H = [[2, 4], [3, 5]]
  double* d_param = to_device(param);
  LIBRARY_CHECK(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_DEVICE));
  LIBRARY_CHECK(cublasDrotm(handle, 3, d_rx, 1, d_ry, 1, d_param));
  LIBRARY_CHECK(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST));
  const std::vector<double> hx = to_host(d_rx, 3), hy = to_host(d_ry, 3);
  for (int i = 0; i < 3; ++i) {
    EMU_REQUIRE(near(hx[i], 2 * gx2[i] + 4 * gy2[i]) && near(hy[i], 3 * gx2[i] + 5 * gy2[i]));
  }
  double d1 = 2, d2 = 3, x1 = 1.5;
  const double y1 = 0.5, d1_in = d1, d2_in = d2, x1_in = x1;
  double mg[5] = {0, 0, 0, 0, 0};
  LIBRARY_CHECK(cublasDrotmg(handle, &d1, &d2, &x1, &y1, mg));
  double h11 = mg[1], h21 = mg[2], h12 = mg[3], h22 = mg[4];
  if (mg[0] == 0) h11 = 1, h22 = 1;
  if (mg[0] == 1) h12 = 1, h21 = -1;
  EMU_REQUIRE(mg[0] >= -1 && mg[0] <= 1);
  EMU_REQUIRE(near(h21 * x1_in + h22 * y1, 0));                              // y zeroed
  EMU_REQUIRE(near(h11 * x1_in + h12 * y1, x1));                             // x1 updated
  EMU_REQUIRE(near(d1 * x1 * x1, d1_in * x1_in * x1_in + d2_in * y1 * y1));  // weighted norm kept

  // The Ex forms: AxpyEx and DotcEx (double, complex double) computed, Nrm2Ex on half recorded.
  std::vector<double> ex = {1, 2, 3}, ey = {10, 20, 30};
  double* d_ex = to_device(ex);
  double* d_ey = to_device(ey);
  const double two = 2;
  LIBRARY_CHECK(cublasAxpyEx(handle, 3, &two, CUDA_R_64F, d_ex, CUDA_R_64F, 1, d_ey, CUDA_R_64F, 1,
                             CUDA_R_64F));
  EMU_REQUIRE(to_host(d_ey, 3) == (std::vector<double>{12, 24, 36}));
  cuDoubleComplex ex_dot;
  LIBRARY_CHECK(cublasDotcEx(handle, n, d_x, CUDA_C_64F, 1, d_y, CUDA_C_64F, 1, &ex_dot, CUDA_C_64F,
                             CUDA_C_64F));
  zd want_ex = 0;
  const std::vector<zd> ex_x = to_host(reinterpret_cast<zd*>(d_x), n);
  const std::vector<zd> ex_y = to_host(reinterpret_cast<zd*>(d_y), n);
  for (int i = 0; i < n; ++i) want_ex += std::conj(ex_x[i]) * ex_y[i];
  EMU_REQUIRE(near(zd(ex_dot.x, ex_dot.y), want_ex, 1e-9));
  void* d_half = nullptr;
  EMU_CHECK(cudaMalloc(&d_half, 64 * 2));
  EMU_CHECK(cudaMemset(d_half, 0, 64 * 2));
  float half_norm = -1;
  LIBRARY_CHECK(
      cublasNrm2Ex(handle, 64, d_half, CUDA_R_16F, 1, &half_norm, CUDA_R_32F, CUDA_R_32F));
  EMU_REQUIRE(half_norm == 0);

  EMU_CHECK(cudaDeviceSynchronize());
  std::printf(
      "cublas_level1_complex: dotu/dotc/nrm2/asum/amax/amin, axpy/scal/rot/swap, "
      "rot/rotg/rotm/rotmg match their definitions (yes); rotmg flag %.0f\n",
      mg[0]);
  LIBRARY_CHECK(cublasDestroy(handle));
  return 0;
}
