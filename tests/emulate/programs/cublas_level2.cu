// cuBLAS level 2 in the style of NVIDIA's CUDALibrarySamples (cuBLAS/Level-2): every storage
// (full, band, packed), every matrix kind (general, symmetric, Hermitian, triangular) and the
// batched GEMVs, on small matrices. Each result is computed on the host from the dense logical
// matrix and compared (the emulator computes level 2 on backed memory). Valid CUDA: the same
// binary runs on a real GPU. Written for the emulator's tests.
#include <cublas_v2.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <vector>

#include "device_buffers.h"
#include "emu_check.h"
#include "library_check.h"

namespace {

using zd = std::complex<double>;
using zf = std::complex<float>;

double worst = 0;  // the largest |device − host| over every check
int checks = 0;

template <typename A, typename B>
void expect_near(const std::vector<A>& got, const std::vector<B>& want, double tolerance) {
  EMU_REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const double error = std::abs(zd(got[i]) - zd(want[i]));
    worst = std::max(worst, error);
    if (error > tolerance) {
      std::fprintf(stderr, "check %d: element %zu off by %g\n", checks, i, error);
      std::exit(1);
    }
  }
  ++checks;
}

// Dense column-major n × n (or m × n) test matrices.
std::vector<zd> dense(int m, int n, int seed, bool complex_values) {
  std::vector<zd> a(m * n);
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      const double re = 1.0 + ((i * 7 + j * 3 + seed) % 11) / 4.0;
      const double im = complex_values ? ((i * 5 + j + seed) % 7) / 3.0 - 1.0 : 0.0;
      a[j * m + i] = zd(re, im) + (i == j ? zd(n, 0) : zd(0));
    }
  }
  return a;
}

std::vector<zd> hermitian(int n, int seed) {
  std::vector<zd> a = dense(n, n, seed, true);
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < j; ++i) a[i * n + j] = std::conj(a[j * n + i]);
    a[j * n + j] = zd(a[j * n + j].real(), 0);
  }
  return a;
}

// y = A·x for dense A (m × n), op: 'N', 'T' or 'C'.
std::vector<zd> multiply(const std::vector<zd>& a, int m, int n, const std::vector<zd>& x,
                         char op) {
  const int rows = op == 'N' ? m : n, cols = op == 'N' ? n : m;
  std::vector<zd> y(rows, 0.0);
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) {
      const zd e = op == 'N' ? a[j * m + i] : op == 'T' ? a[i * m + j] : std::conj(a[i * m + j]);
      y[i] += e * x[j];
    }
  }
  return y;
}

template <typename T>
std::vector<T> cast(const std::vector<zd>& v) {
  std::vector<T> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if constexpr (std::is_same_v<T, zd> || std::is_same_v<T, zf>) {
      out[i] = T(v[i]);
    } else {
      out[i] = static_cast<T>(v[i].real());
    }
  }
  return out;
}

// Packed column-major triangle (upper or lower) of dense n × n.
std::vector<zd> pack(const std::vector<zd>& a, int n, bool upper) {
  std::vector<zd> p;
  for (int j = 0; j < n; ++j) {
    for (int i = upper ? 0 : j; i <= (upper ? j : n - 1); ++i) p.push_back(a[j * n + i]);
  }
  return p;
}

// Band storage (ld rows) of dense m × n with kl sub- and ku super-diagonals.
std::vector<zd> to_band(const std::vector<zd>& a, int m, int n, int kl, int ku, int ld) {
  std::vector<zd> b(ld * n, zd(-99));
  for (int j = 0; j < n; ++j) {
    for (int i = std::max(0, j - ku); i <= std::min(m - 1, j + kl); ++i)
      b[j * ld + ku + i - j] = a[j * m + i];
  }
  return b;
}

// Keeps the band (|i − j| within kl below / ku above) of dense a, zero elsewhere.
std::vector<zd> band_of(std::vector<zd> a, int m, int n, int kl, int ku) {
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      if (i - j > kl || j - i > ku) a[j * m + i] = 0;
    }
  }
  return a;
}

}  // namespace

int main() {
  cublasHandle_t handle;
  LIBRARY_CHECK(cublasCreate(&handle));
  const double tight = 1e-10, single = 1e-3;

  // GBMV (D): 6 × 5, kl 1, ku 2: y = 2·A·x + 0.5·y.
  {
    const int m = 6, n = 5, kl = 1, ku = 2, ld = kl + ku + 1;
    const std::vector<zd> a = band_of(dense(m, n, 1, false), m, n, kl, ku);
    const std::vector<zd> x = dense(n, 1, 2, false), y0 = dense(m, 1, 3, false);
    double* d_a = to_device(cast<double>(to_band(a, m, n, kl, ku, ld)));
    double* d_x = to_device(cast<double>(x));
    double* d_y = to_device(cast<double>(y0));
    const double alpha = 2.0, beta = 0.5;
    LIBRARY_CHECK(
        cublasDgbmv(handle, CUBLAS_OP_N, m, n, kl, ku, &alpha, d_a, ld, d_x, 1, &beta, d_y, 1));
    std::vector<zd> want = multiply(a, m, n, x, 'N');
    for (int i = 0; i < m; ++i) want[i] = 2.0 * want[i] + 0.5 * y0[i];
    expect_near(to_host(d_y, m), want, tight);
  }
  // GEMV (C, conjugate transpose) and HEMV (C, upper stored, the lower triangle garbage).
  {
    const int n = 4;
    const std::vector<zd> a = dense(n, n, 4, true), h = hermitian(n, 5), x = dense(n, 1, 6, true);
    std::vector<zd> h_upper = h;
    for (int j = 0; j < n; ++j) {
      for (int i = j + 1; i < n; ++i) h_upper[j * n + i] = zd(99, 99);
    }
    cuComplex* d_a = reinterpret_cast<cuComplex*>(to_device(cast<zf>(a)));
    cuComplex* d_h = reinterpret_cast<cuComplex*>(to_device(cast<zf>(h_upper)));
    cuComplex* d_x = reinterpret_cast<cuComplex*>(to_device(cast<zf>(x)));
    cuComplex* d_y = reinterpret_cast<cuComplex*>(to_device(std::vector<zf>(n)));
    const cuComplex one = make_cuComplex(1, 0), zero = make_cuComplex(0, 0);
    LIBRARY_CHECK(cublasCgemv(handle, CUBLAS_OP_C, n, n, &one, d_a, n, d_x, 1, &zero, d_y, 1));
    expect_near(to_host(reinterpret_cast<zf*>(d_y), n), multiply(a, n, n, x, 'C'), single);
    LIBRARY_CHECK(
        cublasChemv(handle, CUBLAS_FILL_MODE_UPPER, n, &one, d_h, n, d_x, 1, &zero, d_y, 1));
    expect_near(to_host(reinterpret_cast<zf*>(d_y), n), multiply(h, n, n, x, 'N'), single);
  }
  // HBMV (Z, lower, k 1) and SPMV (S, lower packed).
  {
    const int n = 5, k = 1;
    const std::vector<zd> h = band_of(hermitian(n, 7), n, n, k, k), x = dense(n, 1, 8, true);
    std::vector<zd> stored(2 * n, zd(-5));  // lower band storage: row 0 the diagonal
    for (int j = 0; j < n; ++j) {
      for (int i = j; i <= std::min(n - 1, j + k); ++i) stored[j * 2 + i - j] = h[j * n + i];
    }
    cuDoubleComplex* d_h = reinterpret_cast<cuDoubleComplex*>(to_device(stored));
    cuDoubleComplex* d_x = reinterpret_cast<cuDoubleComplex*>(to_device(x));
    cuDoubleComplex* d_y = reinterpret_cast<cuDoubleComplex*>(to_device(std::vector<zd>(n)));
    const cuDoubleComplex one = make_cuDoubleComplex(1, 0), zero = make_cuDoubleComplex(0, 0);
    LIBRARY_CHECK(
        cublasZhbmv(handle, CUBLAS_FILL_MODE_LOWER, n, k, &one, d_h, 2, d_x, 1, &zero, d_y, 1));
    expect_near(to_host(reinterpret_cast<zd*>(d_y), n), multiply(h, n, n, x, 'N'), tight);

    std::vector<zd> s = dense(n, n, 9, false);
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < j; ++i) s[j * n + i] = s[i * n + j];
    }
    float* d_sp = to_device(cast<float>(pack(s, n, false)));
    float* d_sx = to_device(cast<float>(x));
    float* d_sy = to_device(std::vector<float>(n, 0.0f));
    const float fone = 1, fzero = 0;
    LIBRARY_CHECK(
        cublasSspmv(handle, CUBLAS_FILL_MODE_LOWER, n, &fone, d_sp, d_sx, 1, &fzero, d_sy, 1));
    std::vector<zd> xr = x;
    for (auto& v : xr) v = v.real();
    expect_near(to_host(d_sy, n), multiply(s, n, n, xr, 'N'), single);
  }
  // TRMV then TRSV (D, upper): back to x; TBSV (Z, lower, k 1, conjugate transpose); TPMV (Z,
  // upper packed, transpose).
  {
    const int n = 6;
    std::vector<zd> t = dense(n, n, 10, false);
    for (int j = 0; j < n; ++j) {
      for (int i = j + 1; i < n; ++i) t[j * n + i] = 0;
    }
    const std::vector<zd> x = dense(n, 1, 11, false);
    double* d_t = to_device(cast<double>(t));
    double* d_x = to_device(cast<double>(x));
    LIBRARY_CHECK(cublasDtrmv(handle, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, n,
                              d_t, n, d_x, 1));
    expect_near(to_host(d_x, n), multiply(t, n, n, x, 'N'), tight);
    LIBRARY_CHECK(cublasDtrsv(handle, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, n,
                              d_t, n, d_x, 1));
    expect_near(to_host(d_x, n), x, tight);

    std::vector<zd> l = band_of(dense(n, n, 12, true), n, n, 1, 0);
    std::vector<zd> stored(2 * n, zd(-7));
    for (int j = 0; j < n; ++j) {
      for (int i = j; i <= std::min(n - 1, j + 1); ++i) stored[j * 2 + i - j] = l[j * n + i];
    }
    const std::vector<zd> zx = dense(n, 1, 13, true), b = multiply(l, n, n, zx, 'C');
    cuDoubleComplex* d_l = reinterpret_cast<cuDoubleComplex*>(to_device(stored));
    cuDoubleComplex* d_b = reinterpret_cast<cuDoubleComplex*>(to_device(b));
    LIBRARY_CHECK(cublasZtbsv(handle, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_C, CUBLAS_DIAG_NON_UNIT, n,
                              1, d_l, 2, d_b, 1));
    expect_near(to_host(reinterpret_cast<zd*>(d_b), n), zx, tight);

    std::vector<zd> u = dense(n, n, 14, true);
    for (int j = 0; j < n; ++j) {
      for (int i = j + 1; i < n; ++i) u[j * n + i] = 0;
    }
    cuDoubleComplex* d_up = reinterpret_cast<cuDoubleComplex*>(to_device(pack(u, n, true)));
    cuDoubleComplex* d_ux = reinterpret_cast<cuDoubleComplex*>(to_device(zx));
    LIBRARY_CHECK(cublasZtpmv(handle, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, CUBLAS_DIAG_NON_UNIT, n,
                              d_up, d_ux, 1));
    expect_near(to_host(reinterpret_cast<zd*>(d_ux), n), multiply(u, n, n, zx, 'T'), tight);
  }
  // Updates: GER (S), GERC (C), SYR (D, upper), HER (Z, lower), HER2 (C, upper), SPR2 (D, lower
  // packed), HPR (C, upper packed).
  {
    const int m = 4, n = 3;
    const std::vector<zd> a = dense(m, n, 15, false), x = dense(m, 1, 16, false),
                          y = dense(n, 1, 17, false);
    float* d_a = to_device(cast<float>(a));
    float* d_x = to_device(cast<float>(x));
    float* d_y = to_device(cast<float>(y));
    const float two = 2;
    LIBRARY_CHECK(cublasSger(handle, m, n, &two, d_x, 1, d_y, 1, d_a, m));
    std::vector<zd> want = a;
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < m; ++i) want[j * m + i] += 2.0 * x[i] * y[j];
    }
    expect_near(to_host(d_a, m * n), want, single);

    const std::vector<zd> ca = dense(m, n, 18, true), cx = dense(m, 1, 19, true),
                          cy = dense(n, 1, 20, true);
    cuComplex* d_ca = reinterpret_cast<cuComplex*>(to_device(cast<zf>(ca)));
    cuComplex* d_cx = reinterpret_cast<cuComplex*>(to_device(cast<zf>(cx)));
    cuComplex* d_cy = reinterpret_cast<cuComplex*>(to_device(cast<zf>(cy)));
    const cuComplex calpha = make_cuComplex(1, 1);
    LIBRARY_CHECK(cublasCgerc(handle, m, n, &calpha, d_cx, 1, d_cy, 1, d_ca, m));
    want = ca;
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < m; ++i) want[j * m + i] += zd(1, 1) * cx[i] * std::conj(cy[j]);
    }
    expect_near(to_host(reinterpret_cast<zf*>(d_ca), m * n), want, single);

    const int s = 4;
    const std::vector<zd> sym = dense(s, s, 21, false), sx = dense(s, 1, 22, false);
    double* d_sym = to_device(cast<double>(sym));
    double* d_sx = to_device(cast<double>(sx));
    const double three = 3;
    LIBRARY_CHECK(cublasDsyr(handle, CUBLAS_FILL_MODE_UPPER, s, &three, d_sx, 1, d_sym, s));
    want = sym;
    for (int j = 0; j < s; ++j) {
      for (int i = 0; i <= j; ++i) want[j * s + i] += 3.0 * sx[i] * sx[j];
    }
    expect_near(to_host(d_sym, s * s), want, tight);

    const std::vector<zd> h = hermitian(s, 23), hx = dense(s, 1, 24, true),
                          hy = dense(s, 1, 25, true);
    cuDoubleComplex* d_h = reinterpret_cast<cuDoubleComplex*>(to_device(h));
    cuDoubleComplex* d_hx = reinterpret_cast<cuDoubleComplex*>(to_device(hx));
    const double half = 0.5;
    LIBRARY_CHECK(cublasZher(handle, CUBLAS_FILL_MODE_LOWER, s, &half, d_hx, 1, d_h, s));
    want = h;
    for (int j = 0; j < s; ++j) {
      for (int i = j; i < s; ++i) want[j * s + i] += 0.5 * hx[i] * std::conj(hx[j]);
      want[j * s + j] = want[j * s + j].real();
    }
    expect_near(to_host(reinterpret_cast<zd*>(d_h), s * s), want, tight);

    cuComplex* d_ch = reinterpret_cast<cuComplex*>(to_device(cast<zf>(h)));
    cuComplex* d_chx = reinterpret_cast<cuComplex*>(to_device(cast<zf>(hx)));
    cuComplex* d_chy = reinterpret_cast<cuComplex*>(to_device(cast<zf>(hy)));
    LIBRARY_CHECK(
        cublasCher2(handle, CUBLAS_FILL_MODE_UPPER, s, &calpha, d_chx, 1, d_chy, 1, d_ch, s));
    want = h;
    for (int j = 0; j < s; ++j) {
      for (int i = 0; i <= j; ++i) {
        want[j * s + i] +=
            zd(1, 1) * hx[i] * std::conj(hy[j]) + zd(1, -1) * hy[i] * std::conj(hx[j]);
      }
      want[j * s + j] = want[j * s + j].real();
    }
    expect_near(to_host(reinterpret_cast<zf*>(d_ch), s * s), want, single);

    double* d_sp = to_device(cast<double>(pack(sym, s, false)));
    double* d_sy = to_device(cast<double>(hy));
    LIBRARY_CHECK(cublasDspr2(handle, CUBLAS_FILL_MODE_LOWER, s, &three, d_sx, 1, d_sy, 1, d_sp));
    want = sym;
    for (int j = 0; j < s; ++j) {
      for (int i = j; i < s; ++i)
        want[j * s + i] += 3.0 * (sx[i] * hy[j].real() + hy[i].real() * sx[j]);
    }
    expect_near(to_host(d_sp, s * (s + 1) / 2), pack(want, s, false), tight);

    cuComplex* d_hp = reinterpret_cast<cuComplex*>(to_device(cast<zf>(pack(h, s, true))));
    const float fhalf = 0.5f;
    LIBRARY_CHECK(cublasChpr(handle, CUBLAS_FILL_MODE_UPPER, s, &fhalf, d_chx, 1, d_hp));
    want = h;
    for (int j = 0; j < s; ++j) {
      for (int i = 0; i <= j; ++i) want[j * s + i] += 0.5 * hx[i] * std::conj(hx[j]);
      want[j * s + j] = want[j * s + j].real();
    }
    expect_near(to_host(reinterpret_cast<zf*>(d_hp), s * (s + 1) / 2), pack(want, s, true), single);
  }
  // Batched GEMV: S with pointer arrays (3 problems), Z strided (2, transposed); HSH recorded.
  {
    const int m = 3, n = 4, batch = 3;
    std::vector<zd> all_a, all_x;
    for (int b = 0; b < batch; ++b) {
      const std::vector<zd> a = dense(m, n, 30 + b, false), x = dense(n, 1, 40 + b, false);
      all_a.insert(all_a.end(), a.begin(), a.end());
      all_x.insert(all_x.end(), x.begin(), x.end());
    }
    float* d_a = to_device(cast<float>(all_a));
    float* d_x = to_device(cast<float>(all_x));
    float* d_y = to_device(std::vector<float>(m * batch, 0.0f));
    std::vector<const float*> ap, xp;
    std::vector<float*> yp;
    for (int b = 0; b < batch; ++b)
      ap.push_back(d_a + b * m * n), xp.push_back(d_x + b * n), yp.push_back(d_y + b * m);
    const float** d_ap = to_device(ap);
    const float** d_xp = to_device(xp);
    float** d_yp = to_device(yp);
    const float one = 1, zero = 0;
    LIBRARY_CHECK(cublasSgemvBatched(handle, CUBLAS_OP_N, m, n, &one, d_ap, m, d_xp, 1, &zero, d_yp,
                                     1, batch));
    std::vector<zd> want;
    for (int b = 0; b < batch; ++b) {
      const std::vector<zd> a(all_a.begin() + b * m * n, all_a.begin() + (b + 1) * m * n);
      const std::vector<zd> x(all_x.begin() + b * n, all_x.begin() + (b + 1) * n);
      const std::vector<zd> y = multiply(a, m, n, x, 'N');
      want.insert(want.end(), y.begin(), y.end());
    }
    expect_near(to_host(d_y, m * batch), want, single);

    cuDoubleComplex* d_za = reinterpret_cast<cuDoubleComplex*>(to_device(all_a));
    cuDoubleComplex* d_zx = reinterpret_cast<cuDoubleComplex*>(
        to_device(std::vector<zd>(all_x.begin(), all_x.begin() + 2 * m)));
    cuDoubleComplex* d_zy = reinterpret_cast<cuDoubleComplex*>(to_device(std::vector<zd>(2 * n)));
    const cuDoubleComplex zone = make_cuDoubleComplex(1, 0), zzero = make_cuDoubleComplex(0, 0);
    LIBRARY_CHECK(cublasZgemvStridedBatched(handle, CUBLAS_OP_T, m, n, &zone, d_za, m, m * n, d_zx,
                                            1, m, &zzero, d_zy, 1, n, 2));
    want.clear();
    for (int b = 0; b < 2; ++b) {
      const std::vector<zd> a(all_a.begin() + b * m * n, all_a.begin() + (b + 1) * m * n);
      const std::vector<zd> x(all_x.begin() + b * m, all_x.begin() + (b + 1) * m);
      const std::vector<zd> y = multiply(a, m, n, x, 'T');
      want.insert(want.end(), y.begin(), y.end());
    }
    expect_near(to_host(reinterpret_cast<zd*>(d_zy), 2 * n), want, tight);

    __half* d_h = to_device(std::vector<__half>(m * n * batch, __float2half(1.0f)));
    std::vector<const __half*> hp(batch, d_h), hx(batch, d_h);
    std::vector<__half*> hy(batch, d_h);
    const __half** d_hp = to_device(hp);
    const __half** d_hx = to_device(hx);
    __half** d_hy = to_device(hy);
    LIBRARY_CHECK(cublasHSHgemvBatched(handle, CUBLAS_OP_N, m, n, &one, d_hp, m, d_hx, 1, &zero,
                                       d_hy, 1, batch));
  }
  EMU_CHECK(cudaDeviceSynchronize());
  std::printf("cublas_level2: %d results match the host within tolerance (largest error %.1e)\n",
              checks, worst);
  LIBRARY_CHECK(cublasDestroy(handle));
  return 0;
}
