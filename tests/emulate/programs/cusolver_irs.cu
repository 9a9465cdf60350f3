// cuSOLVER's mixed-precision iterative-refinement solvers as the CUDALibrarySamples (cusolver/gesv)
// call them: DHgesv (half-precision LU refined to double accuracy), DDgesv, a complex ZKgesv, a
// DSgels least-squares solve, a singular matrix's info, and the expert interface (IRSXgesv with
// parameters, infos and the residual history; a bfloat16 factorization of a Hilbert matrix that
// cannot converge, without and with the fallback). Every solution is checked on the host.
// Valid CUDA: the same binary runs on a real GPU.
#include <cuComplex.h>
#include <cusolverDn.h>

#include <cmath>
#include <complex>
#include <cstdio>
#include <vector>

#include "device_buffers.h"
#include "emu_check.h"
#include "library_check.h"

namespace {

double next_value(unsigned& state) {  // in [-1, 1)
  state = state * 1664525u + 1013904223u;
  return static_cast<double>(state >> 8) / static_cast<double>(1u << 23) - 1.0;
}

// A diagonally dominant n x n matrix (column-major).
std::vector<double> dominant(int n, unsigned seed) {
  std::vector<double> a(static_cast<size_t>(n) * n);
  for (double& v : a) v = next_value(seed);
  for (int i = 0; i < n; ++i) a[static_cast<size_t>(i) * n + i] += n;
  return a;
}

// max |b - A x| / (|A| |x|), infinity norms, for m x n A and one right-hand side.
template <typename T>
double backward_error(const std::vector<T>& a, const std::vector<T>& b, const std::vector<T>& x,
                      int m, int n, int column) {
  double r = 0, a_norm = 0, x_norm = 0;
  for (int i = 0; i < m; ++i) {
    T sum = b[static_cast<size_t>(column) * m + i];
    double row = 0;
    for (int j = 0; j < n; ++j) {
      sum -= a[static_cast<size_t>(j) * m + i] * x[static_cast<size_t>(column) * n + j];
      row += std::abs(a[static_cast<size_t>(j) * m + i]);
    }
    r = std::fmax(r, std::abs(sum));
    a_norm = std::fmax(a_norm, row);
  }
  for (int j = 0; j < n; ++j)
    x_norm = std::fmax(x_norm, std::abs(x[static_cast<size_t>(column) * n + j]));
  return r / (a_norm * x_norm);
}

}  // namespace

int main() {
  cusolverDnHandle_t handle;
  LIBRARY_CHECK(cusolverDnCreate(&handle));
  const int n = 64, nrhs = 2;
  int failures = 0;
  int *d_info, *d_ipiv;
  EMU_CHECK(cudaMalloc(&d_info, sizeof(int)));
  EMU_CHECK(cudaMalloc(&d_ipiv, n * sizeof(int)));

  // DHgesv and DDgesv on the same system.
  const std::vector<double> a = dominant(n, 7);
  std::vector<double> b(static_cast<size_t>(n) * nrhs);
  unsigned seed = 11;
  for (double& v : b) v = next_value(seed);
  double *da = to_device(a), *db = to_device(b), *dx = to_device(std::vector<double>(b.size()));
  size_t bytes = 0;
  LIBRARY_CHECK(
      cusolverDnDHgesv_bufferSize(handle, n, nrhs, da, n, d_ipiv, db, n, dx, n, nullptr, &bytes));
  void* work;
  EMU_CHECK(cudaMalloc(&work, bytes * 4));
  int iter_half = -100, iter_double = -100;
  LIBRARY_CHECK(cusolverDnDHgesv(handle, n, nrhs, da, n, d_ipiv, db, n, dx, n, work, bytes,
                                 &iter_half, d_info));
  std::vector<double> x = to_host(dx, b.size());
  const double half_error =
      std::fmax(backward_error(a, b, x, n, n, 0), backward_error(a, b, x, n, n, 1));
  failures += to_host(d_info, 1)[0] != 0 || iter_half <= 0 || half_error > 1e-14;
  LIBRARY_CHECK(cusolverDnDDgesv(handle, n, nrhs, da, n, d_ipiv, db, n, dx, n, work, bytes,
                                 &iter_double, d_info));
  x = to_host(dx, b.size());
  failures += iter_double != 0 || backward_error(a, b, x, n, n, 0) > 1e-14;

  // A singular matrix: column 5 is zero.
  std::vector<double> singular = a;
  for (int i = 0; i < n; ++i) singular[static_cast<size_t>(5) * n + i] = 0;
  double* ds = to_device(singular);
  int iter_singular = 0;
  LIBRARY_CHECK(cusolverDnDDgesv(handle, n, 1, ds, n, d_ipiv, db, n, dx, n, work, bytes,
                                 &iter_singular, d_info));
  const int singular_info = to_host(d_info, 1)[0];
  failures += singular_info <= 0;

  // Complex, half-precision factorization.
  using cd = std::complex<double>;
  std::vector<cd> ca(static_cast<size_t>(n) * n), cb(n);
  unsigned cseed = 3;
  for (cd& v : ca) v = cd(next_value(cseed), next_value(cseed));
  for (int i = 0; i < n; ++i) ca[static_cast<size_t>(i) * n + i] += cd(n, 0);
  for (cd& v : cb) v = cd(next_value(cseed), next_value(cseed));
  cd *dca = to_device(ca), *dcb = to_device(cb), *dcx = to_device(std::vector<cd>(n));
  int iter_complex = -100;
  LIBRARY_CHECK(cusolverDnZKgesv(handle, n, 1, reinterpret_cast<cuDoubleComplex*>(dca), n, d_ipiv,
                                 reinterpret_cast<cuDoubleComplex*>(dcb), n,
                                 reinterpret_cast<cuDoubleComplex*>(dcx), n, work, bytes * 4,
                                 &iter_complex, d_info));
  const std::vector<cd> cx = to_host(dcx, n);
  failures += iter_complex <= 0 || backward_error(ca, cb, cx, n, n, 0) > 1e-14;

  // Least squares: an 80 x 40 consistent system b = A x_true, single-precision QR.
  const int m = 80, k = 40;
  std::vector<double> la(static_cast<size_t>(m) * k), x_true(k), lb(m, 0.0);
  unsigned lseed = 5;
  for (double& v : la) v = next_value(lseed);
  for (int j = 0; j < k; ++j) la[static_cast<size_t>(j) * m + j] += 4.0;
  for (double& v : x_true) v = next_value(lseed);
  for (int j = 0; j < k; ++j) {
    for (int i = 0; i < m; ++i) lb[i] += la[static_cast<size_t>(j) * m + i] * x_true[j];
  }
  double *dla = to_device(la), *dlb = to_device(lb), *dlx = to_device(std::vector<double>(k));
  size_t ls_bytes = 0;
  LIBRARY_CHECK(
      cusolverDnDSgels_bufferSize(handle, m, k, 1, dla, m, dlb, m, dlx, k, nullptr, &ls_bytes));
  void* ls_work;
  EMU_CHECK(cudaMalloc(&ls_work, ls_bytes));
  int iter_ls = -100;
  LIBRARY_CHECK(cusolverDnDSgels(handle, m, k, 1, dla, m, dlb, m, dlx, k, ls_work, ls_bytes,
                                 &iter_ls, d_info));
  const std::vector<double> lx = to_host(dlx, k);
  double ls_error = 0;
  for (int j = 0; j < k; ++j) ls_error = std::fmax(ls_error, std::fabs(lx[j] - x_true[j]));
  failures += iter_ls <= 0 || ls_error > 1e-12;

  // The expert interface: bfloat16 factorization of the 12 x 12 Hilbert matrix (condition about
  // 1e16) cannot converge in 3 refinements.
  const int h = 12;
  std::vector<double> hilbert(static_cast<size_t>(h) * h), hb(h, 1.0);
  for (int j = 0; j < h; ++j) {
    for (int i = 0; i < h; ++i) hilbert[static_cast<size_t>(j) * h + i] = 1.0 / (i + j + 1);
  }
  double *dh = to_device(hilbert), *dhb = to_device(hb), *dhx = to_device(std::vector<double>(h));
  cusolverDnIRSParams_t params;
  cusolverDnIRSInfos_t infos;
  LIBRARY_CHECK(cusolverDnIRSParamsCreate(&params));
  LIBRARY_CHECK(cusolverDnIRSInfosCreate(&infos));
  LIBRARY_CHECK(cusolverDnIRSParamsSetSolverPrecisions(params, CUSOLVER_R_64F, CUSOLVER_R_16BF));
  LIBRARY_CHECK(cusolverDnIRSParamsSetRefinementSolver(params, CUSOLVER_IRS_REFINE_CLASSICAL));
  LIBRARY_CHECK(cusolverDnIRSParamsSetMaxIters(params, 3));
  LIBRARY_CHECK(cusolverDnIRSParamsDisableFallback(params));
  LIBRARY_CHECK(cusolverDnIRSInfosRequestResidual(infos));
  int max_iters = 0;
  LIBRARY_CHECK(cusolverDnIRSParamsGetMaxIters(params, &max_iters));
  size_t irs_bytes = 0;
  LIBRARY_CHECK(cusolverDnIRSXgesv_bufferSize(handle, params, h, 1, &irs_bytes));
  void* irs_work;
  EMU_CHECK(cudaMalloc(&irs_work, irs_bytes));
  int niters_no_fallback = 0, niters_fallback = 0;
  LIBRARY_CHECK(cusolverDnIRSXgesv(handle, params, infos, h, 1, dh, h, dhb, h, dhx, h, irs_work,
                                   irs_bytes, &niters_no_fallback, d_info));
  void* history = nullptr;
  LIBRARY_CHECK(cusolverDnIRSInfosGetResidualHistory(infos, &history));
  const double first_residual = static_cast<const double*>(history)[max_iters + 1];
  LIBRARY_CHECK(cusolverDnIRSParamsEnableFallback(params));
  LIBRARY_CHECK(cusolverDnIRSXgesv(handle, params, infos, h, 1, dh, h, dhb, h, dhx, h, irs_work,
                                   irs_bytes, &niters_fallback, d_info));
  int reported = 0;
  LIBRARY_CHECK(cusolverDnIRSInfosGetNiters(infos, &reported));
  failures += max_iters != 3 || niters_no_fallback >= 0 || niters_fallback >= 0 ||
              reported != niters_fallback || !(first_residual > 0.0);

  EMU_CHECK(cudaDeviceSynchronize());
  std::printf(
      "cusolver_irs: DHgesv refined %d times (error below 1e-14: %s), DDgesv %d, singular info "
      "%d, ZKgesv refined %d times, DSgels refined %d times, Hilbert bf16 niters %d without and "
      "%d with fallback, %d failures\n",
      iter_half, half_error <= 1e-14 ? "yes" : "no", iter_double, singular_info, iter_complex,
      iter_ls, niters_no_fallback, niters_fallback, failures);
  LIBRARY_CHECK(cusolverDnIRSInfosDestroy(infos));
  LIBRARY_CHECK(cusolverDnIRSParamsDestroy(params));
  LIBRARY_CHECK(cusolverDnDestroy(handle));
  return failures == 0 ? 0 : 1;
}
