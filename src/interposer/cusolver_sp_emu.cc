// cuSOLVER's sparse API (cusolverSp) on the emulated devices, as NVIDIA's cuSolverSp_LinearSolver
// and batched-QR samples call it: handle and stream; the host helpers on the matrix pattern
// (cusolverSpXcsrissymHost, the reorderings Xcsrsymrcm/symamd/symmdq/metisndHost, the
// permutation Xcsrperm_bufferSizeHost/XcsrpermHost); the linear solvers csrlsv{lu,qr,chol}Host
// and csrlsv{qr,chol} in S/D/C/Z; batched QR (csrqrInfo, XcsrqrAnalysisBatched,
// csrqrBufferInfoBatched, csrqrsvBatched in S/D/C/Z).
//
// Host functions run on host memory in the real library and are computed for real, so a
// program's own checks see sane data: the symmetry check; reverse Cuthill-McKee (George & Liu)
// on the pattern of A + Aᵀ — also the answer of symamd, symmdq and metisnd, which the emulator
// does not implement (a valid fill-reducing permutation, not theirs); the permutation
// B = A(p, q) with its map; and the host solvers, by a banded LU with partial pivoting over the
// matrix's bandwidth (any of lu/qr/chol: the same solution for a nonsingular system; the reported
// singularity is the first pivot with |u_jj| ≤ tol, else -1). The band is limited to 2^25 stored
// elements; a larger host solve is reported unsupported by name (CUSOLVER_STATUS_NOT_SUPPORTED).
//
// Device functions are validated (handle, descriptor of type GENERAL, arrays in device memory)
// and recorded as a `sparse` record and a kernel cusolversp_<routine>_csr_<dtype>; nothing is
// computed (x is left as it is, *singularity = -1). Model, not measured: the factor stays inside
// the envelope of A (row i spans w_i = i − (its first column) columns left of the diagonal,
// counted on the row offsets and column indices where they are backed, else nnz/n per row):
//   csrlsvchol  FLOPs Σ w_i²      csrlsvqr  FLOPs 4·Σ w_i²     (per system for the batched QR)
//   bytes: A + the factor written and read back (2·Σ (w_i + 1)·v) + b and x (2·n·v)
//   buffer sizes: csrperm 4·(nnz + m + 1) bytes of host scratch (unused: the emulator allocates
//   its own); batched QR internal data and workspace 0 bytes.
// The low-level preview API is in cusolver_sp_lowlevel_emu.cc, cusolverRf in cusolver_rf_emu.cc;
// every other cusolverSp function (csreigs) is a generated stub reporting its name and returning
// CUSOLVER_STATUS_NOT_SUPPORTED (9).
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "interposer/cusolver_sp_internal.h"

namespace powertrain::emu::cusolver_sp {

SpState& state() {
  static SpState* s = new SpState;  // never destroyed
  return *s;
}

cusolverStatus_t bad(const char* api, const std::string& what) {
  powertrain::emu::report_misuse(api, what);
  return CUSOLVER_STATUS_INVALID_VALUE;
}

// The handle's stream, or false after reporting the misuse (NOT_INITIALIZED).
bool handle_stream(cusolverSpHandle_t handle, const char* api, cudaStream_t* stream) {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (state().handles.count(handle) == 0) {
    powertrain::emu::report_misuse(
        api, "invalid or destroyed cuSOLVER handle " + detail::pointer_text(handle));
    return false;
  }
  if (stream != nullptr)
    *stream = static_cast<const SpHandle*>(static_cast<const void*>(handle))->stream;
  return true;
}

// The matrix descriptor's index base (0 or 1); false (reported) for an invalid descriptor or a
// matrix type other than GENERAL (as the library requires).
bool general_base(const void* descr, const char* api, int* base) {
  detail::LegacyMatDescr d;
  if (!detail::legacy_mat_descr(descr, &d)) {
    powertrain::emu::report_misuse(
        api, "invalid or destroyed matrix descriptor " + detail::pointer_text(descr));
    return false;
  }
  if (d.type != 0) {
    powertrain::emu::report_misuse(api, "the matrix type must be CUSPARSE_MATRIX_TYPE_GENERAL");
    return false;
  }
  *base = d.base;
  return true;
}

bool valid_pattern(const Pattern& p, const char* api) {
  if (p.rows < 0 || p.cols < 0 || p.nnz < 0 || p.begin == nullptr || p.end == nullptr ||
      (p.nnz > 0 && p.columns == nullptr)) {
    powertrain::emu::report_misuse(api, "invalid shape " + std::to_string(p.rows) + " x " +
                                            std::to_string(p.cols) + ", nnz " +
                                            std::to_string(p.nnz) + " or a NULL array");
    return false;
  }
  for (int i = 0; i < p.rows; ++i) {
    const int b = p.begin[i] - p.base, e = p.end[i] - p.base;
    if (b < 0 || e < b || e > p.nnz) {
      powertrain::emu::report_misuse(
          api, "row " + std::to_string(i) + " spans [" + std::to_string(b) + ", " +
                   std::to_string(e) + ") outside the " + std::to_string(p.nnz) + " nonzeros");
      return false;
    }
    for (int k = b; k < e; ++k) {
      const int j = p.columns[k] - p.base;
      if (j < 0 || j >= p.cols) {
        powertrain::emu::report_misuse(api, "row " + std::to_string(i) + " has column " +
                                                std::to_string(j) + " outside 0.." +
                                                std::to_string(p.cols - 1));
        return false;
      }
    }
  }
  return true;
}

// Reverse Cuthill-McKee on the pattern of A + Aᵀ: each connected component from a node of minimum
// degree, neighbours visited by increasing degree (ties by index), the whole order reversed.
std::vector<int> reverse_cuthill_mckee(const Pattern& a) {
  const int n = a.rows;
  std::vector<std::vector<int>> adjacent(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    for (int k = a.begin[i] - a.base; k < a.end[i] - a.base; ++k) {
      const int j = a.columns[k] - a.base;
      if (j == i || j >= n) continue;
      adjacent[static_cast<std::size_t>(i)].push_back(j);
      adjacent[static_cast<std::size_t>(j)].push_back(i);
    }
  }
  for (auto& list : adjacent) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
  auto degree = [&](int v) { return adjacent[static_cast<std::size_t>(v)].size(); };
  std::vector<int> nodes(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) nodes[static_cast<std::size_t>(i)] = i;
  std::stable_sort(nodes.begin(), nodes.end(), [&](int x, int y) { return degree(x) < degree(y); });
  std::vector<char> seen(static_cast<std::size_t>(n), 0);
  std::vector<int> order;
  order.reserve(static_cast<std::size_t>(n));
  for (int start : nodes) {
    if (seen[static_cast<std::size_t>(start)]) continue;
    seen[static_cast<std::size_t>(start)] = 1;
    std::size_t head = order.size();
    order.push_back(start);
    while (head < order.size()) {
      const int v = order[head++];
      std::vector<int> next;
      for (int w : adjacent[static_cast<std::size_t>(v)]) {
        if (!seen[static_cast<std::size_t>(w)]) {
          seen[static_cast<std::size_t>(w)] = 1;
          next.push_back(w);
        }
      }
      std::stable_sort(next.begin(), next.end(),
                       [&](int x, int y) { return degree(x) < degree(y); });
      order.insert(order.end(), next.begin(), next.end());
    }
  }
  std::reverse(order.begin(), order.end());
  return order;
}

bool band_fits(std::int64_t n, std::int64_t width, const char* api) {
  const std::int64_t band = n * width;
  if (band <= kMaxBandElements) return true;
  powertrain::emu::report_unsupported(std::string(api) + "(band of " + std::to_string(band) +
                                      " elements over the emulator's 2^25)");
  return false;
}

bool is_permutation(const int* p, int n) {
  std::vector<char> seen(static_cast<std::size_t>(n), 0);
  for (int i = 0; i < n; ++i) {
    if (p[i] < 0 || p[i] >= n || seen[static_cast<std::size_t>(p[i])]) return false;
    seen[static_cast<std::size_t>(p[i])] = 1;
  }
  return true;
}

cusolverStatus_t reorder(cusolverSpHandle_t handle, int n, int nnz, const void* descr,
                         const int* row_ptr, const int* col_ind, int* p, const char* api) {
  if (!handle_stream(handle, api, nullptr)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  Pattern a;
  if (!general_base(descr, api, &a.base)) return CUSOLVER_STATUS_INVALID_VALUE;
  a.rows = a.cols = n, a.nnz = nnz;
  a.begin = row_ptr, a.end = row_ptr != nullptr ? row_ptr + 1 : nullptr, a.columns = col_ind;
  if (!valid_pattern(a, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (p == nullptr && n > 0) return bad(api, "p is NULL");
  const std::vector<int> order = reverse_cuthill_mckee(a);
  std::copy(order.begin(), order.end(), p);
  return CUSOLVER_STATUS_SUCCESS;
}

// ---- host solve: banded LU with partial pivoting
// ---------------------------------------------------

// invalid or the band exceeds the emulator's limit.
bool host_band(cusolverSpHandle_t handle, int n, int nnz, const void* descr, const int* row_ptr,
               const int* col_ind, const char* api, Pattern* a, int* kl, int* ku,
               cusolverStatus_t* status) {
  *status = CUSOLVER_STATUS_INVALID_VALUE;
  if (!handle_stream(handle, api, nullptr)) {
    *status = CUSOLVER_STATUS_NOT_INITIALIZED;
    return false;
  }
  if (!general_base(descr, api, &a->base)) return false;
  a->rows = a->cols = n, a->nnz = nnz;
  a->begin = row_ptr, a->end = row_ptr != nullptr ? row_ptr + 1 : nullptr, a->columns = col_ind;
  if (!valid_pattern(*a, api)) return false;
  *kl = 0, *ku = 0;
  for (int i = 0; i < n; ++i) {
    for (int k = a->begin[i] - a->base; k < a->end[i] - a->base; ++k) {
      const int j = a->columns[k] - a->base;
      *kl = std::max(*kl, i - j), *ku = std::max(*ku, j - i);
    }
  }
  if (!band_fits(n, 2 * std::int64_t{*kl} + *ku + 1, api)) {
    *status = CUSOLVER_STATUS_NOT_SUPPORTED;
    return false;
  }
  return true;
}

template <typename T, typename Real>
cusolverStatus_t host_solve(cusolverSpHandle_t handle, int n, int nnz, const void* descr,
                            const T* values, const int* row_ptr, const int* col_ind, const T* b,
                            Real tol, T* x, int* singularity, const char* api) {
  Pattern a;
  int kl = 0, ku = 0;
  cusolverStatus_t status = CUSOLVER_STATUS_SUCCESS;
  if (!host_band(handle, n, nnz, descr, row_ptr, col_ind, api, &a, &kl, &ku, &status)) {
    return status;
  }
  if ((n > 0 && (b == nullptr || x == nullptr)) || (nnz > 0 && values == nullptr) ||
      singularity == nullptr || !(tol >= 0)) {
    return bad(api, "b, x, the values or singularity is NULL, or tol is negative");
  }
  BandedLu<T> lu;
  *singularity = lu.factor(a, values, T(0), static_cast<double>(tol), kl, ku);
  lu.solve(b, x);
  return CUSOLVER_STATUS_SUCCESS;
}

// Least squares min ‖A·x − b‖₂ for m ≥ n by the normal equations Aᴴ·A·x = Aᴴ·b on the banded LU
// (not the library's QR: the condition number is squared). rank is n minus the pivots at most
// tol² (a QR's |r_jj| ≤ tol), p the identity (no column pivoting), min_norm ‖A·x − b‖₂.
template <typename T, typename Real>
cusolverStatus_t host_least_squares(cusolverSpHandle_t handle, int m, int n, int nnz,
                                    const void* descr, const T* values, const int* row_ptr,
                                    const int* col_ind, const T* b, Real tol, int* rank, T* x,
                                    int* p, Real* min_norm, const char* api) {
  if (!handle_stream(handle, api, nullptr)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  Pattern a;
  if (!general_base(descr, api, &a.base)) return CUSOLVER_STATUS_INVALID_VALUE;
  a.rows = m, a.cols = n, a.nnz = nnz;
  a.begin = row_ptr, a.end = row_ptr != nullptr ? row_ptr + 1 : nullptr, a.columns = col_ind;
  if (!valid_pattern(a, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (m < n || (m > 0 && b == nullptr) || (n > 0 && (x == nullptr || p == nullptr)) ||
      (nnz > 0 && values == nullptr) || rank == nullptr || min_norm == nullptr || !(tol >= 0)) {
    return bad(api, "m < n, a NULL array or output, or a negative tol");
  }
  const NormalMatrix<T> normal = normal_matrix(a, values);
  std::vector<T> rhs(static_cast<std::size_t>(n), T(0));  // Aᴴ·b
  for (int i = 0; i < m; ++i) {
    for (int k = a.begin[i] - a.base; k < a.end[i] - a.base; ++k)
      rhs[static_cast<std::size_t>(a.columns[k] - a.base)] += conj_of(values[k]) * b[i];
  }
  if (!band_fits(n, 2 * std::int64_t{normal.kl} + normal.ku + 1, api)) {
    return CUSOLVER_STATUS_NOT_SUPPORTED;
  }
  BandedLu<T> lu;
  lu.factor(normal.pattern(), normal.entries.data(), T(0), static_cast<double>(tol) * tol,
            normal.kl, normal.ku);
  lu.solve(rhs.data(), x);
  *rank = n - lu.zero_pivots();
  for (int j = 0; j < n; ++j) p[j] = j;
  double norm = 0;
  for (int i = 0; i < m; ++i) {
    T r = -b[i];
    for (int k = a.begin[i] - a.base; k < a.end[i] - a.base; ++k) {
      r += values[k] * x[a.columns[k] - a.base];
    }
    norm += magnitude(r) * magnitude(r);
  }
  *min_norm = static_cast<Real>(std::sqrt(norm));
  return CUSOLVER_STATUS_SUCCESS;
}

// Shifted inverse iteration for the eigenvalue of A nearest mu0: A − mu0·I factored once, then
// x ← (A − mu0·I)⁻¹·x normalized and mu the Rayleigh quotient xᴴ·A·x, until mu changes by at most
// tol·|mu| or after maxite iterations.
template <typename T, typename Real>
cusolverStatus_t host_eigen(cusolverSpHandle_t handle, int n, int nnz, const void* descr,
                            const T* values, const int* row_ptr, const int* col_ind, T mu0,
                            const T* x0, int maxite, Real tol, T* mu, T* x, const char* api) {
  Pattern a;
  int kl = 0, ku = 0;
  cusolverStatus_t status = CUSOLVER_STATUS_SUCCESS;
  if (!host_band(handle, n, nnz, descr, row_ptr, col_ind, api, &a, &kl, &ku, &status)) {
    return status;
  }
  if ((n > 0 && (x0 == nullptr || x == nullptr)) || (nnz > 0 && values == nullptr) ||
      mu == nullptr || maxite < 1 || !(tol >= 0)) {
    return bad(api, "x0, x, the values or mu is NULL, maxite below 1 or tol negative");
  }
  BandedLu<T> lu;
  lu.factor(a, values, mu0, 0.0, kl, ku);
  std::vector<T> current(x0, x0 + n), next(static_cast<std::size_t>(n)),
      ax(static_cast<std::size_t>(n));
  T value = mu0;
  for (int iteration = 0; iteration < maxite; ++iteration) {
    lu.solve(current.data(), next.data());
    double norm = 0;
    for (const T& v : next) norm += magnitude(v) * magnitude(v);
    norm = std::sqrt(norm);
    if (!(norm > 0)) break;
    for (T& v : next) v /= static_cast<Real>(norm);
    T quotient = T(0);
    for (int i = 0; i < n; ++i) {
      T row = T(0);
      for (int k = a.begin[i] - a.base; k < a.end[i] - a.base; ++k) {
        row += values[k] * next[static_cast<std::size_t>(a.columns[k] - a.base)];
      }
      if constexpr (std::is_floating_point_v<T>) {
        quotient += next[static_cast<std::size_t>(i)] * row;
      } else {
        quotient += std::conj(next[static_cast<std::size_t>(i)]) * row;
      }
    }
    current.swap(next);
    const bool converged =
        magnitude(quotient - value) <= static_cast<double>(tol) * magnitude(quotient);
    value = quotient;
    if (converged) break;
  }
  *mu = value;
  std::copy(current.begin(), current.end(), x);
  return CUSOLVER_STATUS_SUCCESS;
}

// ---- device solves: validated and recorded
// ---------------------------------------------------------

bool device_array(const void* pointer, std::int64_t bytes) {
  if (bytes <= 0) return true;
  const detail::PointerInfo info = detail::lookup_pointer(pointer);
  return info.known && info.device_side && info.available >= static_cast<std::size_t>(bytes);
}

bool backed(const void* pointer, std::int64_t bytes) {
  if (bytes <= 0) return true;
  const detail::PointerInfo info = detail::lookup_pointer(pointer);
  return info.known && info.backed && info.available >= static_cast<std::size_t>(bytes);
}

// Σ w_i² and Σ (w_i + 1) over the envelope of the (device) CSR pattern: counted where backed,
// else w_i = nnz/n.
void envelope(int n, int nnz, int base, const int* row_ptr, const int* col_ind, double* squares,
              double* cells) {
  *squares = 0, *cells = 0;
  if (backed(row_ptr, (std::int64_t{n} + 1) * 4) && backed(col_ind, std::int64_t{nnz} * 4)) {
    for (int i = 0; i < n; ++i) {
      int first = i;
      for (int k = std::max(row_ptr[i] - base, 0); k < std::min(row_ptr[i + 1] - base, nnz); ++k) {
        first = std::min(first, col_ind[k] - base);
      }
      const double w = static_cast<double>(i - std::max(first, 0));
      *squares += w * w, *cells += w + 1;
    }
    return;
  }
  const double w = n > 0 ? static_cast<double>(nnz) / n : 0.0;
  *squares = n * w * w, *cells = n * (w + 1);
}

std::int64_t saturate(double v) { return v >= 9.0e18 ? INT64_MAX : static_cast<std::int64_t>(v); }

// A device solve (`what`: csrlsvqr, csrlsvchol, csrqrsvBatched) of `batch` systems m x n, or
// csreigvsi's shifted inverse iteration (`iterations` solves with one LU).
cusolverStatus_t device_solve(cusolverSpHandle_t handle, int m, int n, int nnz, const void* descr,
                              const void* values, const int* row_ptr, const int* col_ind,
                              const void* b, const void* x, int batch, cudaDataType type,
                              const char* what, int* singularity, const char* api, int iterations) {
  const std::int64_t start = powertrain::emu::now_ns();
  cudaStream_t stream = nullptr;
  if (!handle_stream(handle, api, &stream)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  int base = 0;
  if (!general_base(descr, api, &base)) return CUSOLVER_STATUS_INVALID_VALUE;
  const int v = detail::sparse_value_bytes(type);
  if (m < 0 || n < 0 || nnz < 0 || batch < 1) {
    return bad(api, "invalid shape " + std::to_string(m) + " x " + std::to_string(n) + ", nnz " +
                        std::to_string(nnz) + ", batch " + std::to_string(batch));
  }
  if (!device_array(row_ptr, (std::int64_t{m} + 1) * 4) ||
      !device_array(col_ind, std::int64_t{nnz} * 4) ||
      !device_array(values, std::int64_t{nnz} * v * batch) ||
      !device_array(b, std::int64_t{m} * v * batch) ||
      !device_array(x, std::int64_t{n} * v * batch)) {
    return bad(api, "an array is not device memory of its size (m " + std::to_string(m) + ", nnz " +
                        std::to_string(nnz) + ", batch " + std::to_string(batch) + ")");
  }
  if (singularity != nullptr) *singularity = -1;  // not computed
  double squares = 0, cells = 0;
  envelope(m, nnz, base, row_ptr, col_ind, &squares, &cells);
  const bool cholesky = std::strcmp(what, "csrlsvchol") == 0;
  const bool eigen = std::strcmp(what, "csreigvsi") == 0;
  detail::SparseOp op;
  op.api = api;
  op.library = "cusolversp";
  op.what = what;
  op.rows = m, op.cols = n, op.nnz = nnz;
  if (batch > 1) op.n = batch;
  op.dtype = op.compute = type;
  const double complex_factor = (type == CUDA_C_32F || type == CUDA_C_64F) ? 4.0 : 1.0;
  const double per_solve_flops = 4.0 * cells + 2.0 * nnz;  // a triangular pair and an SpMV
  const double per_solve_bytes = 2.0 * cells * v + static_cast<double>(nnz) * (v + 4) + 2.0 * m * v;
  op.flops = saturate(((cholesky ? 1.0
                        : eigen  ? 2.0
                                 : 4.0) *
                           squares +
                       iterations * per_solve_flops) *
                      complex_factor * batch);
  op.bytes = saturate(batch * (static_cast<double>(nnz) * (v + 4) + (m + 1.0) * 4 +
                               2.0 * cells * v + (static_cast<double>(m) + n) * v) +
                      iterations * per_solve_bytes);
  return detail::record_sparse_op(stream, op, start) ? CUSOLVER_STATUS_SUCCESS
                                                     : CUSOLVER_STATUS_EXECUTION_FAILED;
}

}  // namespace powertrain::emu::cusolver_sp

using namespace powertrain::emu::cusolver_sp;  // NOLINT: this file defines them

// ---- handle
// --------------------------------------------------------------------------------------

PT_EXPORT cusolverStatus_t cusolverSpCreate(cusolverSpHandle_t* handle) {
  return create_object<SpHandle>(state().handles, handle, "cusolverSpCreate", "handle");
}

PT_EXPORT cusolverStatus_t cusolverSpDestroy(cusolverSpHandle_t handle) {
  return destroy_object<SpHandle>(state().handles, handle, "cusolverSpDestroy", "cuSOLVER handle",
                                  CUSOLVER_STATUS_NOT_INITIALIZED);
}

PT_EXPORT cusolverStatus_t cusolverSpSetStream(cusolverSpHandle_t handle, cudaStream_t stream) {
  const char* api = "cusolverSpSetStream";
  if (!handle_stream(handle, api, nullptr)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  detail::StreamRef ref;
  if (!detail::stream_or_fail(stream, false, api, &ref)) return CUSOLVER_STATUS_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(state().mutex);
  reinterpret_cast<SpHandle*>(handle)->stream = stream;
  return CUSOLVER_STATUS_SUCCESS;
}

PT_EXPORT cusolverStatus_t cusolverSpGetStream(cusolverSpHandle_t handle, cudaStream_t* stream) {
  if (stream == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
  return handle_stream(handle, "cusolverSpGetStream", stream) ? CUSOLVER_STATUS_SUCCESS
                                                              : CUSOLVER_STATUS_NOT_INITIALIZED;
}

// ---- host helpers on the pattern
// -----------------------------------------------------------------

PT_EXPORT cusolverStatus_t cusolverSpXcsrissymHost(cusolverSpHandle_t handle, int m, int nnz,
                                                   const cusparseMatDescr_t descr,
                                                   const int* row_begin, const int* row_end,
                                                   const int* col_ind, int* issym) {
  const char* api = "cusolverSpXcsrissymHost";
  if (!handle_stream(handle, api, nullptr)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  Pattern a;
  if (!general_base(descr, api, &a.base)) return CUSOLVER_STATUS_INVALID_VALUE;
  a.rows = a.cols = m, a.nnz = nnz, a.begin = row_begin, a.end = row_end, a.columns = col_ind;
  if (!valid_pattern(a, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (issym == nullptr) return bad(api, "issym is NULL");
  std::vector<std::vector<int>> rows(static_cast<std::size_t>(m));
  for (int i = 0; i < m; ++i) {
    auto& r = rows[static_cast<std::size_t>(i)];
    for (int k = row_begin[i] - a.base; k < row_end[i] - a.base; ++k)
      r.push_back(col_ind[k] - a.base);
    std::sort(r.begin(), r.end());
  }
  int symmetric = 1;
  for (int i = 0; i < m && symmetric; ++i) {
    for (int j : rows[static_cast<std::size_t>(i)]) {
      const auto& r = rows[static_cast<std::size_t>(j)];
      if (!std::binary_search(r.begin(), r.end(), i)) {
        symmetric = 0;
        break;
      }
    }
  }
  *issym = symmetric;
  return CUSOLVER_STATUS_SUCCESS;
}

PT_EXPORT cusolverStatus_t cusolverSpXcsrsymrcmHost(cusolverSpHandle_t handle, int n, int nnz,
                                                    const cusparseMatDescr_t descr,
                                                    const int* row_ptr, const int* col_ind,
                                                    int* p) {
  return reorder(handle, n, nnz, descr, row_ptr, col_ind, p, "cusolverSpXcsrsymrcmHost");
}

PT_EXPORT cusolverStatus_t cusolverSpXcsrsymamdHost(cusolverSpHandle_t handle, int n, int nnz,
                                                    const cusparseMatDescr_t descr,
                                                    const int* row_ptr, const int* col_ind,
                                                    int* p) {
  return reorder(handle, n, nnz, descr, row_ptr, col_ind, p, "cusolverSpXcsrsymamdHost");
}

PT_EXPORT cusolverStatus_t cusolverSpXcsrsymmdqHost(cusolverSpHandle_t handle, int n, int nnz,
                                                    const cusparseMatDescr_t descr,
                                                    const int* row_ptr, const int* col_ind,
                                                    int* p) {
  return reorder(handle, n, nnz, descr, row_ptr, col_ind, p, "cusolverSpXcsrsymmdqHost");
}

PT_EXPORT cusolverStatus_t cusolverSpXcsrmetisndHost(cusolverSpHandle_t handle, int n, int nnz,
                                                     const cusparseMatDescr_t descr,
                                                     const int* row_ptr, const int* col_ind,
                                                     const int64_t* options, int* p) {
  (void)options;
  return reorder(handle, n, nnz, descr, row_ptr, col_ind, p, "cusolverSpXcsrmetisndHost");
}

PT_EXPORT cusolverStatus_t cusolverSpXcsrperm_bufferSizeHost(
    cusolverSpHandle_t handle, int m, int n, int nnz, const cusparseMatDescr_t descr,
    const int* row_ptr, const int* col_ind, const int* p, const int* q, size_t* buffer_size) {
  const char* api = "cusolverSpXcsrperm_bufferSizeHost";
  if (!handle_stream(handle, api, nullptr)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  int base = 0;
  if (!general_base(descr, api, &base)) return CUSOLVER_STATUS_INVALID_VALUE;
  (void)row_ptr, (void)col_ind, (void)p, (void)q, (void)n;
  if (buffer_size == nullptr || m < 0 || nnz < 0) return bad(api, "invalid shape or NULL size");
  *buffer_size = 4 * (static_cast<size_t>(nnz) + static_cast<size_t>(m) + 1);
  return CUSOLVER_STATUS_SUCCESS;
}

// B = A(p, q) in place: row i of B is row p[i] of A, column j of B column q[j] of A, columns
// sorted within each row; map[k] follows its nonzero (map ← map(permutation)).
PT_EXPORT cusolverStatus_t cusolverSpXcsrpermHost(cusolverSpHandle_t handle, int m, int n, int nnz,
                                                  const cusparseMatDescr_t descr, int* row_ptr,
                                                  int* col_ind, const int* p, const int* q,
                                                  int* map, void* buffer) {
  const char* api = "cusolverSpXcsrpermHost";
  (void)buffer;
  if (!handle_stream(handle, api, nullptr)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  Pattern a;
  if (!general_base(descr, api, &a.base)) return CUSOLVER_STATUS_INVALID_VALUE;
  a.rows = m, a.cols = n, a.nnz = nnz;
  a.begin = row_ptr, a.end = row_ptr != nullptr ? row_ptr + 1 : nullptr, a.columns = col_ind;
  if (!valid_pattern(a, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  if ((m > 0 && (p == nullptr || !is_permutation(p, m))) ||
      (n > 0 && (q == nullptr || !is_permutation(q, n))) || (nnz > 0 && map == nullptr)) {
    return bad(api, "p or q is not a permutation, or map is NULL");
  }
  std::vector<int> q_inverse(static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j) q_inverse[static_cast<std::size_t>(q[j])] = j;
  std::vector<int> offsets(static_cast<std::size_t>(m) + 1, 0), columns, moved;
  columns.reserve(static_cast<std::size_t>(nnz));
  moved.reserve(static_cast<std::size_t>(nnz));
  std::vector<std::pair<int, int>> row;  // (new column, old position)
  for (int i = 0; i < m; ++i) {
    const int source = p[i];
    row.clear();
    for (int k = row_ptr[source] - a.base; k < row_ptr[source + 1] - a.base; ++k) {
      row.emplace_back(q_inverse[static_cast<std::size_t>(col_ind[k] - a.base)], k);
    }
    std::sort(row.begin(), row.end());
    for (const auto& [column, k] : row) {
      columns.push_back(column + a.base);
      moved.push_back(map[k]);
    }
    offsets[static_cast<std::size_t>(i) + 1] = static_cast<int>(columns.size());
  }
  for (int i = 0; i <= m; ++i) row_ptr[i] = offsets[static_cast<std::size_t>(i)] + a.base;
  std::copy(columns.begin(), columns.end(), col_ind);
  std::copy(moved.begin(), moved.end(), map);
  return CUSOLVER_STATUS_SUCCESS;
}

// ---- linear solvers
// ------------------------------------------------------------------------------

#define PT_HOST_SOLVE(P, T, REAL, CT, name)                                                       \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrlsv##name##Host(                                   \
      cusolverSpHandle_t handle, int n, int nnz, const cusparseMatDescr_t descr, const T* values, \
      const int* row_ptr, const int* col_ind, const T* b, REAL tol, int reorder, T* x,            \
      int* singularity) {                                                                         \
    (void)reorder;                                                                                \
    return host_solve<CT, REAL>(handle, n, nnz, descr, reinterpret_cast<const CT*>(values),       \
                                row_ptr, col_ind, reinterpret_cast<const CT*>(b), tol,            \
                                reinterpret_cast<CT*>(x), singularity,                            \
                                "cusolverSp" #P "csrlsv" #name "Host");                           \
  }

#define PT_DEVICE_SOLVE(P, T, REAL, DTYPE, name)                                                   \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrlsv##name(                                          \
      cusolverSpHandle_t handle, int n, int nnz, const cusparseMatDescr_t descr, const T* values,  \
      const int* row_ptr, const int* col_ind, const T* b, REAL tol, int reorder, T* x,             \
      int* singularity) {                                                                          \
    (void)tol, (void)reorder;                                                                      \
    if (singularity == nullptr) return bad("cusolverSp" #P "csrlsv" #name, "singularity is NULL"); \
    return device_solve(handle, n, n, nnz, descr, values, row_ptr, col_ind, b, x, 1, DTYPE,        \
                        "csrlsv" #name, singularity, "cusolverSp" #P "csrlsv" #name);              \
  }

#define PT_SOLVERS(P, T, REAL, CT, DTYPE) \
  PT_HOST_SOLVE(P, T, REAL, CT, lu)       \
  PT_HOST_SOLVE(P, T, REAL, CT, qr)       \
  PT_HOST_SOLVE(P, T, REAL, CT, chol)     \
  PT_DEVICE_SOLVE(P, T, REAL, DTYPE, qr)  \
  PT_DEVICE_SOLVE(P, T, REAL, DTYPE, chol)

// csreigvsi: the host form computed (see host_eigen); the device form recorded with `mu` set to
// the shift mu0 (host or backed memory) and x left as it is.
#define PT_EIGEN(P, T, REAL, CT, DTYPE)                                                           \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csreigvsiHost(                                        \
      cusolverSpHandle_t handle, int m, int nnz, const cusparseMatDescr_t descr, const T* values, \
      const int* row_ptr, const int* col_ind, T mu0, const T* x0, int maxite, REAL tol, T* mu,    \
      T* x) {                                                                                     \
    CT shift;                                                                                     \
    std::memcpy(static_cast<void*>(&shift), &mu0, sizeof shift);                                  \
    return host_eigen<CT, REAL>(handle, m, nnz, descr, reinterpret_cast<const CT*>(values),       \
                                row_ptr, col_ind, shift, reinterpret_cast<const CT*>(x0), maxite, \
                                tol, reinterpret_cast<CT*>(mu), reinterpret_cast<CT*>(x),         \
                                "cusolverSp" #P "csreigvsiHost");                                 \
  }                                                                                               \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csreigvsi(                                            \
      cusolverSpHandle_t handle, int m, int nnz, const cusparseMatDescr_t descr, const T* values, \
      const int* row_ptr, const int* col_ind, T mu0, const T* x0, int maxite, REAL eps, T* mu,    \
      T* x) {                                                                                     \
    const char* api = "cusolverSp" #P "csreigvsi";                                                \
    (void)eps;                                                                                    \
    if (mu == nullptr || maxite < 1) return bad(api, "mu is NULL or maxite below 1");             \
    const cusolverStatus_t status =                                                               \
        device_solve(handle, m, m, nnz, descr, values, row_ptr, col_ind, x0, x, 1, DTYPE,         \
                     "csreigvsi", nullptr, api, maxite);                                          \
    const detail::PointerInfo where = detail::lookup_pointer(mu);                                 \
    if (status == CUSOLVER_STATUS_SUCCESS && (!where.known || where.backed)) *mu = mu0;           \
    return status;                                                                                \
  }

#define PT_LEAST_SQUARES(P, T, REAL, CT)                                                        \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrlsqvqrHost(                                      \
      cusolverSpHandle_t handle, int m, int n, int nnz, const cusparseMatDescr_t descr,         \
      const T* values, const int* row_ptr, const int* col_ind, const T* b, REAL tol, int* rank, \
      T* x, int* p, REAL* min_norm) {                                                           \
    return host_least_squares<CT, REAL>(                                                        \
        handle, m, n, nnz, descr, reinterpret_cast<const CT*>(values), row_ptr, col_ind,        \
        reinterpret_cast<const CT*>(b), tol, rank, reinterpret_cast<CT*>(x), p, min_norm,       \
        "cusolverSp" #P "csrlsqvqrHost");                                                       \
  }
PT_LEAST_SQUARES(S, float, float, float)
PT_LEAST_SQUARES(D, double, double, double)
PT_LEAST_SQUARES(C, cuComplex, float, std::complex<float>)
PT_LEAST_SQUARES(Z, cuDoubleComplex, double, std::complex<double>)
#undef PT_LEAST_SQUARES

PT_EIGEN(S, float, float, float, CUDA_R_32F)
PT_EIGEN(D, double, double, double, CUDA_R_64F)
PT_EIGEN(C, cuComplex, float, std::complex<float>, CUDA_C_32F)
PT_EIGEN(Z, cuDoubleComplex, double, std::complex<double>, CUDA_C_64F)
#undef PT_EIGEN

PT_SOLVERS(S, float, float, float, CUDA_R_32F)
PT_SOLVERS(D, double, double, double, CUDA_R_64F)
PT_SOLVERS(C, cuComplex, float, std::complex<float>, CUDA_C_32F)
PT_SOLVERS(Z, cuDoubleComplex, double, std::complex<double>, CUDA_C_64F)
#undef PT_SOLVERS
#undef PT_DEVICE_SOLVE
#undef PT_HOST_SOLVE

// ---- batched QR
// ----------------------------------------------------------------------------------

PT_EXPORT cusolverStatus_t cusolverSpCreateCsrqrInfo(csrqrInfo_t* info) {
  return create_object<QrInfo>(state().infos, info, "cusolverSpCreateCsrqrInfo", "info");
}

PT_EXPORT cusolverStatus_t cusolverSpDestroyCsrqrInfo(csrqrInfo_t info) {
  return destroy_object<QrInfo>(state().infos, info, "cusolverSpDestroyCsrqrInfo", "csrqrInfo",
                                CUSOLVER_STATUS_INVALID_VALUE);
}

namespace {
// The live info object (reported when not), analysed or not as `analysed` demands.
QrInfo* qr_info(csrqrInfo_t info, bool need_analysis, const char* api) {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (state().infos.count(info) == 0) {
    powertrain::emu::report_misuse(api,
                                   "invalid or destroyed csrqrInfo " + detail::pointer_text(info));
    return nullptr;
  }
  auto* i = reinterpret_cast<QrInfo*>(info);
  if (need_analysis && !i->analysed) {
    powertrain::emu::report_misuse(api, "cusolverSpXcsrqrAnalysisBatched has not run on the info");
    return nullptr;
  }
  return i;
}
}  // namespace

PT_EXPORT cusolverStatus_t cusolverSpXcsrqrAnalysisBatched(cusolverSpHandle_t handle, int m, int n,
                                                           int nnz, const cusparseMatDescr_t descr,
                                                           const int* row_ptr, const int* col_ind,
                                                           csrqrInfo_t info) {
  const char* api = "cusolverSpXcsrqrAnalysisBatched";
  if (!handle_stream(handle, api, nullptr)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  int base = 0;
  if (!general_base(descr, api, &base)) return CUSOLVER_STATUS_INVALID_VALUE;
  QrInfo* i = qr_info(info, false, api);
  if (i == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
  if (m < n || n < 0 || nnz < 0 || !device_array(row_ptr, (std::int64_t{m} + 1) * 4) ||
      !device_array(col_ind, std::int64_t{nnz} * 4)) {
    return bad(api, "invalid shape " + std::to_string(m) + " x " + std::to_string(n) +
                        " (QR needs m >= n) or arrays not in device memory");
  }
  std::lock_guard<std::mutex> lock(state().mutex);
  i->analysed = true;
  return CUSOLVER_STATUS_SUCCESS;
}

#define PT_BATCHED_QR(P, T, DTYPE)                                                              \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrqrBufferInfoBatched(                             \
      cusolverSpHandle_t handle, int m, int n, int nnz, const cusparseMatDescr_t descr,         \
      const T* values, const int* row_ptr, const int* col_ind, int batch, csrqrInfo_t info,     \
      size_t* internal_bytes, size_t* workspace_bytes) {                                        \
    const char* api = "cusolverSp" #P "csrqrBufferInfoBatched";                                 \
    (void)values, (void)row_ptr, (void)col_ind, (void)nnz, (void)m, (void)n;                    \
    if (!handle_stream(handle, api, nullptr)) return CUSOLVER_STATUS_NOT_INITIALIZED;           \
    int base = 0;                                                                               \
    if (!general_base(descr, api, &base)) return CUSOLVER_STATUS_INVALID_VALUE;                 \
    if (qr_info(info, true, api) == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;              \
    if (internal_bytes == nullptr || workspace_bytes == nullptr || batch < 1) {                 \
      return bad(api, "NULL sizes or a batch below 1");                                         \
    }                                                                                           \
    *internal_bytes = 0, *workspace_bytes = 0;                                                  \
    return CUSOLVER_STATUS_SUCCESS;                                                             \
  }                                                                                             \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrqrsvBatched(                                     \
      cusolverSpHandle_t handle, int m, int n, int nnz, const cusparseMatDescr_t descr,         \
      const T* values, const int* row_ptr, const int* col_ind, const T* b, T* x, int batch,     \
      csrqrInfo_t info, void* buffer) {                                                         \
    const char* api = "cusolverSp" #P "csrqrsvBatched";                                         \
    (void)buffer;                                                                               \
    if (qr_info(info, true, api) == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;              \
    return device_solve(handle, m, n, nnz, descr, values, row_ptr, col_ind, b, x, batch, DTYPE, \
                        "csrqrsvBatched", nullptr, api);                                        \
  }

PT_BATCHED_QR(S, float, CUDA_R_32F)
PT_BATCHED_QR(D, double, CUDA_R_64F)
PT_BATCHED_QR(C, cuComplex, CUDA_C_32F)
PT_BATCHED_QR(Z, cuDoubleComplex, CUDA_C_64F)
#undef PT_BATCHED_QR
