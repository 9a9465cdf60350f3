// What the cuSOLVER sparse emulation's files share (cusolver_sp_emu.cc: handle, helpers, the
// high-level solvers; cusolver_sp_lowlevel_emu.cc: the low-level preview API; cusolver_rf_emu.cc:
// cusolverRf): the handle and info registries, argument checks, host CSR patterns, the banded LU
// the host solvers compute with, and the recorded device solve.
#pragma once
#define DISABLE_CUSOLVER_DEPRECATED  // the sparse API is deprecated in favour of cuDSS, not removed
#include <cusolverSp.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "interposer/cudart_internal.h"
#include "interposer/cusparse_internal.h"

namespace powertrain::emu::cusolver_sp {

namespace detail = powertrain::emu::detail;

struct SpHandle {
  cudaStream_t stream = nullptr;
};
// A device factorization of the low-level API (csrqrInfo_t, csrcholInfo_t): what its analysis and
// setup were given, for the factorization's record. stage: 0 created, 1 analysed, 2 values set
// (QR setup), 3 factored.
struct DeviceFactor {
  int stage = 0;
  int m = 0, n = 0, nnz = 0, base = 0;
  const int* row_ptr = nullptr;
  const int* col_ind = nullptr;
  const void* values = nullptr;
  cudaDataType type = CUDA_R_64F;
  double squares = 0, cells = 0;  // the envelope (see envelope())
};
struct QrInfo {
  bool analysed = false;  // by XcsrqrAnalysisBatched
  DeviceFactor low;       // by the low-level XcsrqrAnalysis, csrqrSetup, csrqrFactor
};

struct SpState {
  std::mutex mutex;
  std::unordered_set<const void*> handles, infos, chol_infos;
};
SpState& state();

// Reports the misuse and answers INVALID_VALUE.
cusolverStatus_t bad(const char* api, const std::string& what);

// A new T registered in `registry` and handed out as *out (`name` is the out parameter).
template <typename T, typename Handle>
cusolverStatus_t create_object(std::unordered_set<const void*>& registry, Handle* out,
                               const char* api, const char* name) {
  if (out == nullptr) return bad(api, std::string(name) + " is NULL");
  auto* object = new T;
  std::lock_guard<std::mutex> lock(state().mutex);
  registry.insert(object);
  *out = reinterpret_cast<Handle>(object);
  return CUSOLVER_STATUS_SUCCESS;
}

// Unregisters and deletes the T behind `object`; one not registered is reported as an invalid or
// destroyed `what` and answered with `failure`.
template <typename T>
cusolverStatus_t destroy_object(std::unordered_set<const void*>& registry, const void* object,
                                const char* api, const char* what, cusolverStatus_t failure) {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (registry.erase(object) == 0) {
    powertrain::emu::report_misuse(
        api, std::string("invalid or destroyed ") + what + " " + detail::pointer_text(object));
    return failure;
  }
  delete static_cast<const T*>(object);
  return CUSOLVER_STATUS_SUCCESS;
}

// The handle's stream, or false after reporting the misuse (NOT_INITIALIZED).
bool handle_stream(cusolverSpHandle_t handle, const char* api, cudaStream_t* stream);

// The matrix descriptor's index base (0 or 1); false (reported) for an invalid descriptor or a
// matrix type other than GENERAL (as the library requires).
bool general_base(const void* descr, const char* api, int* base);

// A host CSR pattern, validated: offsets nondecreasing from `base`, columns in range.
struct Pattern {
  int rows = 0, cols = 0, nnz = 0, base = 0;
  const int *begin = nullptr, *end = nullptr, *columns = nullptr;  // end: begin + 1 for CSR
};
bool valid_pattern(const Pattern& p, const char* api);

constexpr std::int64_t kMaxBandElements = std::int64_t{1} << 25;

template <typename T>
double magnitude(const T& v) {
  return std::abs(v);
}

// The LU factors (partial pivoting) of the n x n CSR matrix A − shift·I (0 or 1 based) with
// lower/upper bandwidths kl/ku, in band storage: row i holds columns i-kl .. i+kl+ku (room for
// the fill of row exchanges).
template <typename T>
class BandedLu {
 public:
  // Factors; returns the first row whose pivot is at most tol in magnitude (singular under tol),
  // else -1.
  // With `keep_lower`, the multipliers are also kept per row and moved with its row exchanges, so
  // that lower_row(i) is row i of L in P·A = L·U (the band form applies them in elimination order).
  int factor(const Pattern& a, const T* values, T shift, double tol, int kl, int ku,
             bool keep_lower = false) {
    n_ = a.rows, kl_ = kl, ku_ = ku, width_ = 2 * kl + ku + 1, tol_ = tol;
    lower_.assign(keep_lower ? static_cast<std::size_t>(n_) : 0, {});
    band_.assign(static_cast<std::size_t>(n_) * static_cast<std::size_t>(width_), T(0));
    pivots_.assign(static_cast<std::size_t>(n_), 0);
    for (int i = 0; i < n_; ++i) {
      for (int k = a.begin[i] - a.base; k < a.end[i] - a.base; ++k) {
        at(i, a.columns[k] - a.base) += values[k];
      }
      at(i, i) -= shift;
    }
    int singular = -1;
    zero_pivots_ = 0;
    for (int k = 0; k < n_; ++k) {
      const int last = std::min(n_ - 1, k + kl_);
      int pivot = k;
      for (int i = k + 1; i <= last; ++i) {
        if (magnitude(at(i, k)) > magnitude(at(pivot, k))) pivot = i;
      }
      pivots_[static_cast<std::size_t>(k)] = pivot;
      const int right = std::min(n_ - 1, k + kl_ + ku_);
      if (pivot != k) {
        for (int j = k; j <= right; ++j) std::swap(at(k, j), at(pivot, j));
        if (!lower_.empty())
          lower_[static_cast<std::size_t>(k)].swap(lower_[static_cast<std::size_t>(pivot)]);
      }
      if (magnitude(at(k, k)) <= tol_) {
        if (singular < 0) singular = k;
        ++zero_pivots_;
        continue;
      }
      for (int i = k + 1; i <= last; ++i) {
        T& l = at(i, k);
        l /= at(k, k);  // kept in place for the solves
        if (l == T(0)) continue;
        if (!lower_.empty()) lower_[static_cast<std::size_t>(i)].emplace_back(k, l);
        for (int j = k + 1; j <= right; ++j) at(i, j) -= l * at(k, j);
      }
    }
    return singular;
  }

  // Pivots at most tol in magnitude in the last factorization.
  int zero_pivots() const { return zero_pivots_; }

  // The row of A in row i of P·A (the exchanges applied in order).
  std::vector<int> row_permutation() const {
    std::vector<int> rows(static_cast<std::size_t>(n_));
    for (int i = 0; i < n_; ++i) rows[static_cast<std::size_t>(i)] = i;
    for (int k = 0; k < n_; ++k)
      std::swap(rows[static_cast<std::size_t>(k)], rows[pivots_[static_cast<std::size_t>(k)]]);
    return rows;
  }
  // Row i of L below the diagonal (column, multiplier) in P·A = L·U; factor(keep_lower) only.
  const std::vector<std::pair<int, T>>& lower_row(int i) const {
    return lower_[static_cast<std::size_t>(i)];
  }
  // U(i, j) for i <= j <= i + kl + ku (zero outside the band).
  T upper(int i, int j) const {
    return j < i || j > std::min(n_ - 1, i + kl_ + ku_)
               ? T(0)
               : band_[static_cast<std::size_t>(i) * static_cast<std::size_t>(width_) +
                       static_cast<std::size_t>(j - i + kl_)];
  }
  int size() const { return n_; }
  int upper_width() const { return kl_ + ku_; }

  // x = A⁻¹·b with the factors (a zero pivot gives a zero component).
  void solve(const T* b, T* x) {
    std::vector<T> y(b, b + n_);
    for (int k = 0; k < n_; ++k) {
      const int p = pivots_[static_cast<std::size_t>(k)];
      if (p != k) std::swap(y[static_cast<std::size_t>(k)], y[static_cast<std::size_t>(p)]);
      if (magnitude(at(k, k)) <= tol_) continue;
      for (int i = k + 1; i <= std::min(n_ - 1, k + kl_); ++i) {
        y[static_cast<std::size_t>(i)] -= at(i, k) * y[static_cast<std::size_t>(k)];
      }
    }
    for (int i = n_ - 1; i >= 0; --i) {
      T sum = y[static_cast<std::size_t>(i)];
      for (int j = i + 1; j <= std::min(n_ - 1, i + kl_ + ku_); ++j) sum -= at(i, j) * x[j];
      x[i] = magnitude(at(i, i)) > tol_ ? sum / at(i, i) : T(0);
    }
  }

 private:
  T& at(int i, int j) {
    return band_[static_cast<std::size_t>(i) * static_cast<std::size_t>(width_) +
                 static_cast<std::size_t>(j - i + kl_)];
  }
  int n_ = 0, kl_ = 0, ku_ = 0, width_ = 1, zero_pivots_ = 0;
  double tol_ = 0;
  std::vector<T> band_;
  std::vector<int> pivots_;
  std::vector<std::vector<std::pair<int, T>>> lower_;
};

template <typename T>
T conj_of(const T& v) {
  if constexpr (std::is_floating_point_v<T>) {
    return v;
  } else {
    return std::conj(v);
  }
}

// Aᴴ·A of an m x n CSR matrix as an n x n CSR matrix (0-based), with its bandwidths: the normal
// equations the host least-squares solvers use.
template <typename T>
struct NormalMatrix {
  std::vector<int> offsets, columns;
  std::vector<T> entries;
  int kl = 0, ku = 0;
  Pattern pattern() const {
    Pattern p;
    p.rows = p.cols = static_cast<int>(offsets.size()) - 1;
    p.nnz = static_cast<int>(columns.size());
    p.begin = offsets.data(), p.end = offsets.data() + 1, p.columns = columns.data();
    return p;
  }
};

template <typename T>
NormalMatrix<T> normal_matrix(const Pattern& a, const T* values) {
  // Row by row: Σ over A's rows of the outer products of their entries.
  std::vector<std::map<int, T>> rows(static_cast<std::size_t>(a.cols));
  for (int i = 0; i < a.rows; ++i) {
    for (int k1 = a.begin[i] - a.base; k1 < a.end[i] - a.base; ++k1) {
      auto& row = rows[static_cast<std::size_t>(a.columns[k1] - a.base)];
      for (int k2 = a.begin[i] - a.base; k2 < a.end[i] - a.base; ++k2)
        row[a.columns[k2] - a.base] += conj_of(values[k1]) * values[k2];
    }
  }
  NormalMatrix<T> out;
  out.offsets.assign(static_cast<std::size_t>(a.cols) + 1, 0);
  for (int i = 0; i < a.cols; ++i) {
    for (const auto& [j, v] : rows[static_cast<std::size_t>(i)]) {
      out.columns.push_back(j);
      out.entries.push_back(v);
      out.kl = std::max(out.kl, i - j), out.ku = std::max(out.ku, j - i);
    }
    out.offsets[static_cast<std::size_t>(i) + 1] = static_cast<int>(out.columns.size());
  }
  return out;
}

// n rows of `width` band elements fit the emulator's limit (2^25); reported unsupported by name
// when not.
bool band_fits(std::int64_t n, std::int64_t width, const char* api);

// A valid permutation of 0..n-1.
bool is_permutation(const int* p, int n);

// A host solver's checks and the band of A: false (reported; *status set) when the call is

// A host solver's checks and the band of A: false (reported; *status set) when the call is
// invalid or the band exceeds the emulator's limit.
bool host_band(cusolverSpHandle_t handle, int n, int nnz, const void* descr, const int* row_ptr,
               const int* col_ind, const char* api, Pattern* a, int* kl, int* ku,
               cusolverStatus_t* status);

// `pointer` is device memory with at least `bytes` behind it (or bytes <= 0).
bool device_array(const void* pointer, std::int64_t bytes);
// `pointer` is readable here (host memory or backed device memory) for `bytes`.
bool backed(const void* pointer, std::int64_t bytes);
// Σ w_i² and Σ (w_i + 1) over the envelope of the (device) CSR pattern: counted where backed,
// else w_i = nnz/n.
void envelope(int n, int nnz, int base, const int* row_ptr, const int* col_ind, double* squares,
              double* cells);
std::int64_t saturate(double v);

// A device solve (`what`: csrlsvqr, csrlsvchol, csrqrsvBatched) of `batch` systems m x n, or
// csreigvsi's shifted inverse iteration (`iterations` solves with one LU).
cusolverStatus_t device_solve(cusolverSpHandle_t handle, int m, int n, int nnz, const void* descr,
                              const void* values, const int* row_ptr, const int* col_ind,
                              const void* b, const void* x, int batch, cudaDataType type,
                              const char* what, int* singularity, const char* api,
                              int iterations = 0);

}  // namespace powertrain::emu::cusolver_sp
