// cuSOLVER's low-level sparse API (cusolverSp_LOWLEVEL_PREVIEW.h) on the emulated devices, as
// NVIDIA's cuSolverSp_LowlevelCholesky, cuSolverSp_LowlevelQR and cuSolverRf samples call it:
// info objects; analysis, buffer sizes, factorization, zero pivot and solve of the sparse
// Cholesky (host and device), QR (host and device, with the shift mu of csrqrSetup) and LU (host,
// with the extraction of P, Q, L and U that cusolverRf is set up from), in S/D/C/Z.
//
// Host functions run on host memory in the real library and are computed here, on the band of the
// matrix (limited, as the high-level host solvers, to 2^25 stored elements; a larger one is
// reported unsupported by name):
//   - Cholesky: A = L·Lᴴ from the lower triangle of A (the library's convention), banded, no
//     pivoting; zero pivot: the first j with L(j,j) <= tol (a pivot that is not positive counts
//     as 0).
//   - LU: P·A = L·U by the banded LU with partial pivoting (pivot_threshold is not used: every
//     column takes its largest pivot, i.e. threshold 1); Q is the identity; L is returned
//     strictly lower (its unit diagonal implicit, as the sample's cusolverRf setup assumes), U
//     upper with its diagonal; zero pivot: the first j with |U(j,j)| <= tol.
//   - QR: m = n solves (A − mu·I)·x = b by the same banded LU (the solution a QR gives; the zero
//     pivot is the first |U(j,j)| <= tol, not |R(j,j)|); m > n (mu must be 0) solves the least
//     squares problem by the normal equations Aᴴ·A·x = Aᴴ·b (the zero pivot: a pivot <= tol²).
//   Buffer sizes: internal data = the stored band, workspace = n elements (the emulator computes
//   in its own memory and leaves the program's buffer untouched).
// Device functions are checked (live handle and info, the call order analysis → factor → solve,
// GENERAL descriptor, arrays in device memory of their sizes) and the factorizations and solves
// are written as `sparse` records with a kernel cusolversp_<routine>_csr_<dtype>; nothing is
// computed (x is left as it is, the zero pivot is -1). Model, not measured, on the envelope of A
// (see cusolver_sp_emu.cc: row i spans w_i columns left of the diagonal):
//   csrcholFactor  FLOPs Σ w_i²      csrqrFactor  4·Σ w_i²   (complex × 4)
//   bytes: A + the factor written (Σ (w_i + 1)·v)
//   csrcholSolve / csrqrSolve  FLOPs 4·Σ (w_i + 1) (a triangular pair), bytes: the factor read
//   twice + b and x; csrcholDiag  bytes n·v.
//   Buffer sizes: internal data = the factor (Σ (w_i + 1)·v), workspace = n·v.
#include <cusolverSp_LOWLEVEL_PREVIEW.h>

#include <cstring>
#include <map>
#include <memory>
#include <type_traits>

#include "interposer/cusolver_sp_internal.h"

namespace {

namespace sp = powertrain::emu::cusolver_sp;
namespace detail = powertrain::emu::detail;

// A Cholesky factor A = L·Lᴴ of a Hermitian band matrix (lower bandwidth kl) from A's lower
// triangle; a pivot that is not positive leaves its column zero (its solution component 0).
template <typename T>
class BandedCholesky {
 public:
  void factor(const sp::Pattern& a, const T* values, int kl) {
    n_ = a.rows, kl_ = kl;
    band_.assign(static_cast<std::size_t>(n_) * static_cast<std::size_t>(kl_ + 1), T(0));
    diagonal_.assign(static_cast<std::size_t>(n_), 0.0);
    for (int i = 0; i < n_; ++i) {
      for (int k = a.begin[i] - a.base; k < a.end[i] - a.base; ++k) {
        const int j = a.columns[k] - a.base;
        if (j <= i) at(i, j) += values[k];
      }
    }
    for (int j = 0; j < n_; ++j) {
      double d = std::real(at(j, j));
      for (int k = std::max(0, j - kl_); k < j; ++k)
        d -= sp::magnitude(at(j, k)) * sp::magnitude(at(j, k));
      const bool positive = d > 0;
      const double root = positive ? std::sqrt(d) : 0.0;
      diagonal_[static_cast<std::size_t>(j)] = root;
      at(j, j) = T(root);
      for (int i = j + 1; i <= std::min(n_ - 1, j + kl_); ++i) {
        T sum = at(i, j);
        for (int k = std::max(0, i - kl_); k < j; ++k) sum -= at(i, k) * sp::conj_of(at(j, k));
        at(i, j) = positive ? sum / T(root) : T(0);
      }
    }
  }
  int zero_pivot(double tol) const {
    for (int j = 0; j < n_; ++j) {
      if (diagonal_[static_cast<std::size_t>(j)] <= tol) return j;
    }
    return -1;
  }
  void solve(const T* b, T* x) {
    std::vector<T> y(b, b + n_);
    for (int i = 0; i < n_; ++i) {  // L·y = b
      T sum = y[static_cast<std::size_t>(i)];
      for (int k = std::max(0, i - kl_); k < i; ++k)
        sum -= at(i, k) * y[static_cast<std::size_t>(k)];
      y[static_cast<std::size_t>(i)] =
          diagonal_[static_cast<std::size_t>(i)] > 0 ? sum / at(i, i) : T(0);
    }
    for (int i = n_ - 1; i >= 0; --i) {  // Lᴴ·x = y
      T sum = y[static_cast<std::size_t>(i)];
      for (int k = i + 1; k <= std::min(n_ - 1, i + kl_); ++k) sum -= sp::conj_of(at(k, i)) * x[k];
      x[i] = diagonal_[static_cast<std::size_t>(i)] > 0 ? sum / at(i, i) : T(0);
    }
  }

 private:
  T& at(int i, int j) {
    return band_[static_cast<std::size_t>(i) * static_cast<std::size_t>(kl_ + 1) +
                 static_cast<std::size_t>(j - i + kl_)];
  }
  int n_ = 0, kl_ = 0;
  std::vector<T> band_;
  std::vector<double> diagonal_;
};

// The factorization a host info holds, behind one interface for the four value types.
class HostSolver {
 public:
  virtual ~HostSolver() = default;
  virtual int zero_pivot(double tol) const = 0;
  virtual void solve(const void* b, void* x) = 0;
};

template <typename T>
class CholeskySolver : public HostSolver {
 public:
  BandedCholesky<T> factor;
  int zero_pivot(double tol) const override { return factor.zero_pivot(tol); }
  void solve(const void* b, void* x) override {
    factor.solve(static_cast<const T*>(b), static_cast<T*>(x));
  }
};

// LU (and QR as the same square solve, or the normal equations of a tall system).
template <typename T>
class LuSolver : public HostSolver {
 public:
  sp::BandedLu<T> lu;
  bool squared_tol = false;  // normal equations: a pivot compares with tol²
  int m = 0;                 // rows of A (the normal equations' right-hand side needs A)
  std::vector<int> offsets, columns;
  std::vector<T> values;  // A, for Aᴴ·b (tall QR only)
  int zero_pivot(double tol) const override {
    const double limit = squared_tol ? tol * tol : tol;
    for (int j = 0; j < lu.size(); ++j) {
      if (sp::magnitude(lu.upper(j, j)) <= limit) return j;
    }
    return -1;
  }
  void solve(const void* b, void* x) override {
    const T* rhs = static_cast<const T*>(b);
    std::vector<T> normal_rhs;
    if (squared_tol) {
      normal_rhs.assign(static_cast<std::size_t>(lu.size()), T(0));
      for (int i = 0; i < m; ++i) {
        for (int k = offsets[static_cast<std::size_t>(i)];
             k < offsets[static_cast<std::size_t>(i) + 1]; ++k)
          normal_rhs[static_cast<std::size_t>(columns[static_cast<std::size_t>(k)])] +=
              sp::conj_of(values[static_cast<std::size_t>(k)]) * rhs[i];
      }
      rhs = normal_rhs.data();
    }
    lu.solve(rhs, static_cast<T*>(x));
  }
};

enum class Kind { kCholesky, kLu, kQr };

// A host info object: the pattern from the analysis, then the factorization.
struct HostInfo {
  Kind kind = Kind::kLu;
  int stage = 0;  // 0 created, 1 analysed, 2 values set (QR setup), 3 factored
  int m = 0, n = 0, nnz = 0, base = 0, kl = 0, ku = 0;
  std::vector<int> offsets, columns;        // 0-based copy of the analysed pattern
  std::vector<unsigned char> setup_values;  // QR: A's values and mu from csrqrSetupHost
  cudaDataType type = CUDA_R_64F;
  std::unique_ptr<HostSolver> solver;
};

struct HostState {
  std::mutex mutex;
  std::unordered_set<const void*> infos;
};
HostState& host_state() {
  static HostState* s = new HostState;  // never destroyed
  return *s;
}

const char* kind_name(Kind kind) {
  return kind == Kind::kCholesky ? "csrcholInfoHost"
         : kind == Kind::kLu     ? "csrluInfoHost"
                                 : "csrqrInfoHost";
}

template <typename Handle>
cusolverStatus_t create_host_info(Handle* out, Kind kind, const char* api) {
  if (out == nullptr) return sp::bad(api, "info is NULL");
  auto* info = new HostInfo;
  info->kind = kind;
  std::lock_guard<std::mutex> lock(host_state().mutex);
  host_state().infos.insert(info);
  *out = reinterpret_cast<Handle>(info);
  return CUSOLVER_STATUS_SUCCESS;
}

cusolverStatus_t destroy_host_info(const void* info, Kind kind, const char* api) {
  std::lock_guard<std::mutex> lock(host_state().mutex);
  if (host_state().infos.count(info) == 0 || static_cast<const HostInfo*>(info)->kind != kind) {
    powertrain::emu::report_misuse(api, std::string("invalid or destroyed ") + kind_name(kind) +
                                            " " + detail::pointer_text(info));
    return CUSOLVER_STATUS_INVALID_VALUE;
  }
  host_state().infos.erase(info);
  delete static_cast<const HostInfo*>(info);
  return CUSOLVER_STATUS_SUCCESS;
}

// The live host info of `kind` that has reached `stage` (reported when not).
HostInfo* host_info(const void* info, Kind kind, int stage, const char* api) {
  std::lock_guard<std::mutex> lock(host_state().mutex);
  if (host_state().infos.count(info) == 0 || static_cast<const HostInfo*>(info)->kind != kind) {
    powertrain::emu::report_misuse(api, std::string("invalid or destroyed ") + kind_name(kind) +
                                            " " + detail::pointer_text(info));
    return nullptr;
  }
  auto* i = static_cast<HostInfo*>(const_cast<void*>(info));
  if (i->stage < stage) {
    static const char* const kNeeds[] = {"", "the analysis", "the setup", "the factorization"};
    powertrain::emu::report_misuse(api, std::string(kNeeds[stage]) + " has not run on the info");
    return nullptr;
  }
  return i;
}

// The host analysis: checks and keeps the pattern (m x n; square for Cholesky and LU).
cusolverStatus_t host_analysis(cusolverSpHandle_t handle, int m, int n, int nnz, const void* descr,
                               const int* row_ptr, const int* col_ind, const void* info, Kind kind,
                               const char* api) {
  if (!sp::handle_stream(handle, api, nullptr)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  HostInfo* i = host_info(info, kind, 0, api);
  if (i == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
  sp::Pattern a;
  if (!sp::general_base(descr, api, &a.base)) return CUSOLVER_STATUS_INVALID_VALUE;
  a.rows = m, a.cols = n, a.nnz = nnz;
  a.begin = row_ptr, a.end = row_ptr != nullptr ? row_ptr + 1 : nullptr, a.columns = col_ind;
  if (!sp::valid_pattern(a, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (m < n) return sp::bad(api, "m < n (" + std::to_string(m) + " x " + std::to_string(n) + ")");
  std::vector<int> offsets(static_cast<std::size_t>(m) + 1, 0),
      columns(static_cast<std::size_t>(nnz));
  int kl = 0, ku = 0;
  for (int r = 0; r < m; ++r) {
    offsets[static_cast<std::size_t>(r) + 1] = row_ptr[r + 1] - a.base;
    for (int k = row_ptr[r] - a.base; k < row_ptr[r + 1] - a.base; ++k) {
      const int j = col_ind[k] - a.base;
      columns[static_cast<std::size_t>(k)] = j;
      kl = std::max(kl, r - j), ku = std::max(ku, j - r);
    }
  }
  offsets[0] = row_ptr[0] - a.base;
  std::lock_guard<std::mutex> lock(host_state().mutex);
  i->m = m, i->n = n, i->nnz = nnz, i->base = a.base, i->kl = kl, i->ku = ku;
  i->offsets = std::move(offsets), i->columns = std::move(columns);
  i->stage = 1;
  i->solver.reset();
  return CUSOLVER_STATUS_SUCCESS;
}

sp::Pattern pattern_of(const HostInfo& i) {
  sp::Pattern a;
  a.rows = i.m, a.cols = i.n, a.nnz = i.nnz, a.base = 0;
  a.begin = i.offsets.data(), a.end = i.offsets.data() + 1, a.columns = i.columns.data();
  return a;
}

template <typename T>
cusolverStatus_t host_buffer_info(cusolverSpHandle_t handle, int n, const void* info, Kind kind,
                                  std::size_t* internal_bytes, std::size_t* workspace_bytes,
                                  const char* api) {
  if (!sp::handle_stream(handle, api, nullptr)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  HostInfo* i = host_info(info, kind, 1, api);
  if (i == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
  if (internal_bytes == nullptr || workspace_bytes == nullptr)
    return sp::bad(api, "a size is NULL");
  if (n != i->n)
    return sp::bad(api, "n " + std::to_string(n) + " is not the analysed " + std::to_string(i->n));
  const std::int64_t width =
      kind == Kind::kCholesky ? i->kl + 1 : 2 * std::int64_t{i->kl} + i->ku + 1;
  *internal_bytes = static_cast<std::size_t>(std::int64_t{i->n} * width) * sizeof(T);
  *workspace_bytes = static_cast<std::size_t>(std::max(i->n, 1)) * sizeof(T);
  return CUSOLVER_STATUS_SUCCESS;
}

// Values given to a factorization: the same pattern as the analysis (checked) and the values.
bool same_pattern(const HostInfo& i, int m, int nnz, const void* descr, const int* row_ptr,
                  const int* col_ind, const char* api) {
  int base = 0;
  if (!sp::general_base(descr, api, &base)) return false;
  if (m != i.m || nnz != i.nnz || row_ptr == nullptr || (nnz > 0 && col_ind == nullptr)) {
    powertrain::emu::report_misuse(api, "the matrix is not the analysed one (" + std::to_string(m) +
                                            " rows, " + std::to_string(nnz) + " nonzeros)");
    return false;
  }
  for (int r = 0; r <= m; ++r) {
    if (row_ptr[r] - base != i.offsets[static_cast<std::size_t>(r)]) {
      powertrain::emu::report_misuse(
          api, "row offsets differ from the analysed pattern at row " + std::to_string(r));
      return false;
    }
  }
  for (int k = 0; k < nnz; ++k) {
    if (col_ind[k] - base != i.columns[static_cast<std::size_t>(k)]) {
      powertrain::emu::report_misuse(
          api, "column indices differ from the analysed pattern at nonzero " + std::to_string(k));
      return false;
    }
  }
  return true;
}

template <typename T>
cusolverStatus_t host_factor_chol_or_lu(cusolverSpHandle_t handle, int n, int nnz,
                                        const void* descr, const T* values, const int* row_ptr,
                                        const int* col_ind, const void* info, Kind kind,
                                        cudaDataType type, const char* api) {
  if (!sp::handle_stream(handle, api, nullptr)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  HostInfo* i = host_info(info, kind, 1, api);
  if (i == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
  if (!same_pattern(*i, n, nnz, descr, row_ptr, col_ind, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (nnz > 0 && values == nullptr) return sp::bad(api, "the values are NULL");
  const sp::Pattern a = pattern_of(*i);
  std::unique_ptr<HostSolver> solver;
  if (kind == Kind::kCholesky) {
    if (!sp::band_fits(n, i->kl + 1, api)) return CUSOLVER_STATUS_NOT_SUPPORTED;
    auto chol = std::make_unique<CholeskySolver<T>>();
    chol->factor.factor(a, values, i->kl);
    solver = std::move(chol);
  } else {
    if (!sp::band_fits(n, 2 * std::int64_t{i->kl} + i->ku + 1, api))
      return CUSOLVER_STATUS_NOT_SUPPORTED;
    auto lu = std::make_unique<LuSolver<T>>();
    lu->lu.factor(a, values, T(0), 0.0, i->kl, i->ku, /*keep_lower=*/true);
    solver = std::move(lu);
  }
  std::lock_guard<std::mutex> lock(host_state().mutex);
  i->solver = std::move(solver);
  i->type = type;
  i->stage = 3;
  return CUSOLVER_STATUS_SUCCESS;
}

// csrqrSetupHost: the values and the shift, kept for the factorization.
template <typename T>
cusolverStatus_t host_qr_setup(cusolverSpHandle_t handle, int m, int n, int nnz, const void* descr,
                               const T* values, const int* row_ptr, const int* col_ind, T mu,
                               const void* info, cudaDataType type, const char* api) {
  if (!sp::handle_stream(handle, api, nullptr)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  HostInfo* i = host_info(info, Kind::kQr, 1, api);
  if (i == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
  if (n != i->n || !same_pattern(*i, m, nnz, descr, row_ptr, col_ind, api))
    return CUSOLVER_STATUS_INVALID_VALUE;
  if (nnz > 0 && values == nullptr) return sp::bad(api, "the values are NULL");
  if (m > n && !(mu == T(0))) return sp::bad(api, "a shift mu needs a square matrix");
  std::vector<unsigned char> kept((static_cast<std::size_t>(nnz) + 1) * sizeof(T));
  if (nnz > 0) std::memcpy(kept.data(), values, static_cast<std::size_t>(nnz) * sizeof(T));
  std::memcpy(kept.data() + static_cast<std::size_t>(nnz) * sizeof(T), &mu, sizeof(T));
  std::lock_guard<std::mutex> lock(host_state().mutex);
  i->setup_values = std::move(kept);
  i->type = type;
  i->stage = 2;
  return CUSOLVER_STATUS_SUCCESS;
}

template <typename T>
cusolverStatus_t host_qr_factor(cusolverSpHandle_t handle, int m, int n, int nnz, T* b, T* x,
                                const void* info, cudaDataType type, const char* api) {
  if (!sp::handle_stream(handle, api, nullptr)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  HostInfo* i = host_info(info, Kind::kQr, 2, api);
  if (i == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
  if (i->type != type) return sp::bad(api, "the info was set up in another precision");
  if (m != i->m || n != i->n || nnz != i->nnz)
    return sp::bad(api, "the shape is not the set-up one");
  const T* values = reinterpret_cast<const T*>(i->setup_values.data());
  T mu;
  std::memcpy(static_cast<void*>(&mu),
              i->setup_values.data() + static_cast<std::size_t>(nnz) * sizeof(T), sizeof(T));
  auto solver = std::make_unique<LuSolver<T>>();
  if (m == n) {
    if (!sp::band_fits(n, 2 * std::int64_t{i->kl} + i->ku + 1, api))
      return CUSOLVER_STATUS_NOT_SUPPORTED;
    solver->lu.factor(pattern_of(*i), values, mu, 0.0, i->kl, i->ku);
  } else {
    const sp::NormalMatrix<T> normal = sp::normal_matrix(pattern_of(*i), values);
    if (!sp::band_fits(n, 2 * std::int64_t{normal.kl} + normal.ku + 1, api))
      return CUSOLVER_STATUS_NOT_SUPPORTED;
    solver->lu.factor(normal.pattern(), normal.entries.data(), T(0), 0.0, normal.kl, normal.ku);
    solver->squared_tol = true;
    solver->m = m;
    solver->offsets = i->offsets, solver->columns = i->columns;
    solver->values.assign(values, values + nnz);
  }
  if (b != nullptr && x != nullptr) solver->solve(b, x);
  std::lock_guard<std::mutex> lock(host_state().mutex);
  i->solver = std::move(solver);
  i->stage = 3;
  return CUSOLVER_STATUS_SUCCESS;
}

cusolverStatus_t host_zero_pivot(cusolverSpHandle_t handle, const void* info, Kind kind, double tol,
                                 int* position, const char* api) {
  if (!sp::handle_stream(handle, api, nullptr)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  HostInfo* i = host_info(info, kind, 3, api);
  if (i == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
  if (position == nullptr || !(tol >= 0))
    return sp::bad(api, "position is NULL or tol is negative");
  *position = i->solver->zero_pivot(tol);
  return CUSOLVER_STATUS_SUCCESS;
}

cusolverStatus_t host_solve(cusolverSpHandle_t handle, int m, int n, const void* b, void* x,
                            const void* info, Kind kind, cudaDataType type, const char* api) {
  if (!sp::handle_stream(handle, api, nullptr)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  HostInfo* i = host_info(info, kind, 3, api);
  if (i == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
  if (i->type != type) return sp::bad(api, "the info was factored in another precision");
  if (m != i->m || n != i->n) return sp::bad(api, "the shape is not the factored one");
  if (n > 0 && (b == nullptr || x == nullptr)) return sp::bad(api, "b or x is NULL");
  i->solver->solve(b, x);
  return CUSOLVER_STATUS_SUCCESS;
}

// nnz(L) below the diagonal and nnz(U) with its diagonal, of the host LU.
template <typename T>
void lu_counts(const sp::BandedLu<T>& lu, int* nnz_lower, int* nnz_upper) {
  std::int64_t lower = 0, upper = 0;
  for (int r = 0; r < lu.size(); ++r) {
    lower += static_cast<std::int64_t>(lu.lower_row(r).size());
    for (int j = r; j <= std::min(lu.size() - 1, r + lu.upper_width()); ++j) {
      if (j == r || !(lu.upper(r, j) == T(0))) ++upper;
    }
  }
  *nnz_lower = static_cast<int>(lower), *nnz_upper = static_cast<int>(upper);
}

cusolverStatus_t lu_nnz(cusolverSpHandle_t handle, int* nnz_lower, int* nnz_upper, const void* info,
                        const char* api) {
  if (!sp::handle_stream(handle, api, nullptr)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  HostInfo* i = host_info(info, Kind::kLu, 3, api);
  if (i == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
  if (nnz_lower == nullptr || nnz_upper == nullptr) return sp::bad(api, "nnzL or nnzU is NULL");
  switch (i->type) {
    case CUDA_R_32F:
      lu_counts(static_cast<LuSolver<float>*>(i->solver.get())->lu, nnz_lower, nnz_upper);
      break;
    case CUDA_C_32F:
      lu_counts(static_cast<LuSolver<std::complex<float>>*>(i->solver.get())->lu, nnz_lower,
                nnz_upper);
      break;
    case CUDA_C_64F:
      lu_counts(static_cast<LuSolver<std::complex<double>>*>(i->solver.get())->lu, nnz_lower,
                nnz_upper);
      break;
    default:
      lu_counts(static_cast<LuSolver<double>*>(i->solver.get())->lu, nnz_lower, nnz_upper);
      break;
  }
  return CUSOLVER_STATUS_SUCCESS;
}

// P·A·Qᵀ = L·U into the caller's arrays (sized by csrluNnzHost), with each descriptor's base.
template <typename T>
cusolverStatus_t lu_extract(cusolverSpHandle_t handle, int* p, int* q, const void* descr_lower,
                            T* lower_values, int* lower_offsets, int* lower_columns,
                            const void* descr_upper, T* upper_values, int* upper_offsets,
                            int* upper_columns, const void* info, cudaDataType type,
                            const char* api) {
  if (!sp::handle_stream(handle, api, nullptr)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  HostInfo* i = host_info(info, Kind::kLu, 3, api);
  if (i == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
  if (i->type != type) return sp::bad(api, "the info was factored in another precision");
  int base_lower = 0, base_upper = 0;
  if (!sp::general_base(descr_lower, api, &base_lower) ||
      !sp::general_base(descr_upper, api, &base_upper))
    return CUSOLVER_STATUS_INVALID_VALUE;
  const sp::BandedLu<T>& lu = static_cast<LuSolver<T>*>(i->solver.get())->lu;
  const int n = lu.size();
  int nnz_lower = 0, nnz_upper = 0;
  lu_counts(lu, &nnz_lower, &nnz_upper);
  if ((n > 0 &&
       (p == nullptr || q == nullptr || lower_offsets == nullptr || upper_offsets == nullptr ||
        upper_values == nullptr || upper_columns == nullptr)) ||
      (nnz_lower > 0 && (lower_values == nullptr || lower_columns == nullptr))) {
    return sp::bad(api, "an output array is NULL");
  }
  const std::vector<int> rows = lu.row_permutation();
  std::copy(rows.begin(), rows.end(), p);
  for (int j = 0; j < n; ++j) q[j] = j;
  int kl = 0, ku = 0;
  lower_offsets[0] = base_lower, upper_offsets[0] = base_upper;
  for (int r = 0; r < n; ++r) {
    std::vector<std::pair<int, T>> row = lu.lower_row(r);
    std::sort(row.begin(), row.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    for (const auto& [column, value] : row) {
      lower_columns[kl] = column + base_lower;
      lower_values[kl++] = value;
    }
    lower_offsets[r + 1] = kl + base_lower;
    for (int j = r; j <= std::min(n - 1, r + lu.upper_width()); ++j) {
      const T value = lu.upper(r, j);
      if (j != r && value == T(0)) continue;
      upper_columns[ku] = j + base_upper;
      upper_values[ku++] = value;
    }
    upper_offsets[r + 1] = ku + base_upper;
  }
  return CUSOLVER_STATUS_SUCCESS;
}

// ---- device factorizations: checked and recorded
// ----------------------------------------------------

sp::DeviceFactor* device_info(const void* info, bool cholesky, int stage, const char* api) {
  std::lock_guard<std::mutex> lock(sp::state().mutex);
  const auto& registry = cholesky ? sp::state().chol_infos : sp::state().infos;
  if (registry.count(info) == 0) {
    powertrain::emu::report_misuse(api, std::string("invalid or destroyed ") +
                                            (cholesky ? "csrcholInfo " : "csrqrInfo ") +
                                            detail::pointer_text(info));
    return nullptr;
  }
  sp::DeviceFactor* f = cholesky ? static_cast<sp::DeviceFactor*>(const_cast<void*>(info))
                                 : &static_cast<sp::QrInfo*>(const_cast<void*>(info))->low;
  if (f->stage < stage) {
    static const char* const kNeeds[] = {"", "the analysis", "the setup", "the factorization"};
    powertrain::emu::report_misuse(api, std::string(kNeeds[stage]) + " has not run on the info");
    return nullptr;
  }
  return f;
}

cusolverStatus_t device_analysis(cusolverSpHandle_t handle, int m, int n, int nnz,
                                 const void* descr, const int* row_ptr, const int* col_ind,
                                 const void* info, bool cholesky, const char* api) {
  if (!sp::handle_stream(handle, api, nullptr)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  int base = 0;
  if (!sp::general_base(descr, api, &base)) return CUSOLVER_STATUS_INVALID_VALUE;
  sp::DeviceFactor* f = device_info(info, cholesky, 0, api);
  if (f == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
  if (m < n || n < 0 || nnz < 0 || !sp::device_array(row_ptr, (std::int64_t{m} + 1) * 4) ||
      !sp::device_array(col_ind, std::int64_t{nnz} * 4)) {
    return sp::bad(api, "invalid shape " + std::to_string(m) + " x " + std::to_string(n) +
                            " (m >= n needed) or arrays not device memory of their size");
  }
  double squares = 0, cells = 0;
  sp::envelope(m, nnz, base, row_ptr, col_ind, &squares, &cells);
  std::lock_guard<std::mutex> lock(sp::state().mutex);
  *f = sp::DeviceFactor{};
  f->stage = 1, f->m = m, f->n = n, f->nnz = nnz, f->base = base;
  f->row_ptr = row_ptr, f->col_ind = col_ind, f->squares = squares, f->cells = cells;
  return CUSOLVER_STATUS_SUCCESS;
}

cusolverStatus_t device_buffer_info(cusolverSpHandle_t handle, const void* info, bool cholesky,
                                    cudaDataType type, std::size_t* internal_bytes,
                                    std::size_t* workspace_bytes, const char* api) {
  if (!sp::handle_stream(handle, api, nullptr)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  sp::DeviceFactor* f = device_info(info, cholesky, 1, api);
  if (f == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
  if (internal_bytes == nullptr || workspace_bytes == nullptr)
    return sp::bad(api, "a size is NULL");
  const int v = detail::sparse_value_bytes(type);
  *internal_bytes = static_cast<std::size_t>(f->cells * v);
  *workspace_bytes = static_cast<std::size_t>(std::max(f->n, 1)) * static_cast<std::size_t>(v);
  return CUSOLVER_STATUS_SUCCESS;
}

// Records one device factorization or solve of the info's matrix.
cusolverStatus_t record(cusolverSpHandle_t handle, const sp::DeviceFactor& f, const char* what,
                        double flops, double bytes, const char* api, std::int64_t start) {
  cudaStream_t stream = nullptr;
  if (!sp::handle_stream(handle, api, &stream)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  detail::SparseOp op;
  op.api = api;
  op.library = "cusolversp";
  op.what = what;
  op.rows = f.m, op.cols = f.n, op.nnz = f.nnz;
  op.dtype = op.compute = f.type;
  const double complex_factor = (f.type == CUDA_C_32F || f.type == CUDA_C_64F) ? 4.0 : 1.0;
  op.flops = sp::saturate(flops * complex_factor);
  op.bytes = sp::saturate(bytes);
  return detail::record_sparse_op(stream, op, start) ? CUSOLVER_STATUS_SUCCESS
                                                     : CUSOLVER_STATUS_EXECUTION_FAILED;
}

double matrix_bytes(const sp::DeviceFactor& f) {
  return static_cast<double>(f.nnz) * (detail::sparse_value_bytes(f.type) + 4) + (f.m + 1.0) * 4;
}

// csrcholFactor, or csrqrSetup's values given to csrqrFactor (b, x: the optional solve).
cusolverStatus_t device_factor(cusolverSpHandle_t handle, const void* info, bool cholesky,
                               const void* values, const int* row_ptr, const int* col_ind, int m,
                               int n, int nnz, const void* descr, cudaDataType type, const void* b,
                               const void* x, const char* api) {
  const std::int64_t start = powertrain::emu::now_ns();
  if (!sp::handle_stream(handle, api, nullptr)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  sp::DeviceFactor* f = device_info(info, cholesky, cholesky ? 1 : 2, api);
  if (f == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
  const int v = detail::sparse_value_bytes(type);
  if (cholesky) {
    int base = 0;
    if (!sp::general_base(descr, api, &base)) return CUSOLVER_STATUS_INVALID_VALUE;
    if (row_ptr != f->row_ptr || col_ind != f->col_ind) {
      // Another copy of the pattern is allowed; its size must still match.
      if (!sp::device_array(row_ptr, (std::int64_t{m} + 1) * 4) ||
          !sp::device_array(col_ind, std::int64_t{nnz} * 4))
        return sp::bad(api, "the pattern arrays are not device memory of their size");
    }
    if (!sp::device_array(values, std::int64_t{nnz} * v))
      return sp::bad(api, "the values are not device memory of nnz elements");
  } else {
    type = f->type;
  }
  if (m != f->m || n != f->n || nnz != f->nnz)
    return sp::bad(api, "the shape is not the analysed one");
  if ((b == nullptr) != (x == nullptr)) return sp::bad(api, "give both b and x, or neither");
  if (b != nullptr && (!sp::device_array(b, std::int64_t{m} * detail::sparse_value_bytes(type)) ||
                       !sp::device_array(x, std::int64_t{n} * detail::sparse_value_bytes(type))))
    return sp::bad(api, "b or x is not device memory of its size");
  {
    std::lock_guard<std::mutex> lock(sp::state().mutex);
    f->type = type;
    f->stage = 3;
  }
  const double vb = detail::sparse_value_bytes(type);
  double flops = (cholesky ? 1.0 : 4.0) * f->squares;
  double bytes = matrix_bytes(*f) + f->cells * vb;
  if (b != nullptr) flops += 4.0 * f->cells, bytes += 2.0 * f->cells * vb + (f->m + f->n) * vb;
  return record(handle, *f, cholesky ? "csrchol_factor" : "csrqr_factor", flops, bytes, api, start);
}

cusolverStatus_t device_solve_factored(cusolverSpHandle_t handle, int m, int n, const void* b,
                                       const void* x, const void* info, bool cholesky,
                                       cudaDataType type, const char* api) {
  const std::int64_t start = powertrain::emu::now_ns();
  if (!sp::handle_stream(handle, api, nullptr)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  sp::DeviceFactor* f = device_info(info, cholesky, 3, api);
  if (f == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
  if (type != f->type) return sp::bad(api, "the info was factored in another precision");
  const int v = detail::sparse_value_bytes(type);
  if (m != f->m || n != f->n || !sp::device_array(b, std::int64_t{m} * v) ||
      !sp::device_array(x, std::int64_t{n} * v))
    return sp::bad(api,
                   "the shape is not the factored one, or b or x is not device memory of its size");
  return record(handle, *f, cholesky ? "csrchol_solve" : "csrqr_solve", 4.0 * f->cells,
                2.0 * f->cells * v + (static_cast<double>(m) + n) * v, api, start);
}

cusolverStatus_t device_zero_pivot(cusolverSpHandle_t handle, const void* info, bool cholesky,
                                   double tol, int* position, const char* api) {
  if (!sp::handle_stream(handle, api, nullptr)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  if (device_info(info, cholesky, 3, api) == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
  if (position == nullptr || !(tol >= 0))
    return sp::bad(api, "position is NULL or tol is negative");
  *position = -1;  // not computed
  return CUSOLVER_STATUS_SUCCESS;
}

cusolverStatus_t device_chol_diag(cusolverSpHandle_t handle, const void* info, const void* diag,
                                  cudaDataType type, const char* api) {
  const std::int64_t start = powertrain::emu::now_ns();
  if (!sp::handle_stream(handle, api, nullptr)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  sp::DeviceFactor* f = device_info(info, true, 3, api);
  if (f == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
  const int real_bytes = (type == CUDA_R_32F || type == CUDA_C_32F) ? 4 : 8;
  if (type != f->type || !sp::device_array(diag, std::int64_t{f->n} * real_bytes))
    return sp::bad(api, "another precision, or diag is not device memory of n elements");
  return record(handle, *f, "csrchol_diag", 0.0, 2.0 * f->n * real_bytes, api, start);
}

cusolverStatus_t device_qr_setup(cusolverSpHandle_t handle, int m, int n, int nnz,
                                 const void* descr, const void* values, const int* row_ptr,
                                 const int* col_ind, const void* info, cudaDataType type,
                                 const char* api) {
  if (!sp::handle_stream(handle, api, nullptr)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  int base = 0;
  if (!sp::general_base(descr, api, &base)) return CUSOLVER_STATUS_INVALID_VALUE;
  sp::DeviceFactor* f = device_info(info, false, 1, api);
  if (f == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
  if (m != f->m || n != f->n || nnz != f->nnz)
    return sp::bad(api, "the shape is not the analysed one");
  if (!sp::device_array(row_ptr, (std::int64_t{m} + 1) * 4) ||
      !sp::device_array(col_ind, std::int64_t{nnz} * 4) ||
      !sp::device_array(values, std::int64_t{nnz} * detail::sparse_value_bytes(type)))
    return sp::bad(api, "an array is not device memory of its size");
  std::lock_guard<std::mutex> lock(sp::state().mutex);
  f->values = values, f->type = type;
  f->stage = 2;
  return CUSOLVER_STATUS_SUCCESS;
}

template <typename T>
T from_api(const void* value) {
  T out;
  std::memcpy(static_cast<void*>(&out), value, sizeof out);
  return out;
}

}  // namespace

// ---- info objects
// --------------------------------------------------------------------------------

PT_EXPORT cusolverStatus_t cusolverSpCreateCsrluInfoHost(csrluInfoHost_t* info) {
  return create_host_info(info, Kind::kLu, "cusolverSpCreateCsrluInfoHost");
}
PT_EXPORT cusolverStatus_t cusolverSpDestroyCsrluInfoHost(csrluInfoHost_t info) {
  return destroy_host_info(info, Kind::kLu, "cusolverSpDestroyCsrluInfoHost");
}
PT_EXPORT cusolverStatus_t cusolverSpCreateCsrqrInfoHost(csrqrInfoHost_t* info) {
  return create_host_info(info, Kind::kQr, "cusolverSpCreateCsrqrInfoHost");
}
PT_EXPORT cusolverStatus_t cusolverSpDestroyCsrqrInfoHost(csrqrInfoHost_t info) {
  return destroy_host_info(info, Kind::kQr, "cusolverSpDestroyCsrqrInfoHost");
}
PT_EXPORT cusolverStatus_t cusolverSpCreateCsrcholInfoHost(csrcholInfoHost_t* info) {
  return create_host_info(info, Kind::kCholesky, "cusolverSpCreateCsrcholInfoHost");
}
PT_EXPORT cusolverStatus_t cusolverSpDestroyCsrcholInfoHost(csrcholInfoHost_t info) {
  return destroy_host_info(info, Kind::kCholesky, "cusolverSpDestroyCsrcholInfoHost");
}
PT_EXPORT cusolverStatus_t cusolverSpCreateCsrcholInfo(csrcholInfo_t* info) {
  return sp::create_object<sp::DeviceFactor>(sp::state().chol_infos, info,
                                             "cusolverSpCreateCsrcholInfo", "info");
}
PT_EXPORT cusolverStatus_t cusolverSpDestroyCsrcholInfo(csrcholInfo_t info) {
  return sp::destroy_object<sp::DeviceFactor>(sp::state().chol_infos, info,
                                              "cusolverSpDestroyCsrcholInfo", "csrcholInfo",
                                              CUSOLVER_STATUS_INVALID_VALUE);
}

// ---- analyses
// ------------------------------------------------------------------------------------

PT_EXPORT cusolverStatus_t cusolverSpXcsrluAnalysisHost(cusolverSpHandle_t handle, int n, int nnz,
                                                        const cusparseMatDescr_t descr,
                                                        const int* row_ptr, const int* col_ind,
                                                        csrluInfoHost_t info) {
  return host_analysis(handle, n, n, nnz, descr, row_ptr, col_ind, info, Kind::kLu,
                       "cusolverSpXcsrluAnalysisHost");
}
PT_EXPORT cusolverStatus_t cusolverSpXcsrcholAnalysisHost(cusolverSpHandle_t handle, int n, int nnz,
                                                          const cusparseMatDescr_t descr,
                                                          const int* row_ptr, const int* col_ind,
                                                          csrcholInfoHost_t info) {
  return host_analysis(handle, n, n, nnz, descr, row_ptr, col_ind, info, Kind::kCholesky,
                       "cusolverSpXcsrcholAnalysisHost");
}
PT_EXPORT cusolverStatus_t cusolverSpXcsrqrAnalysisHost(cusolverSpHandle_t handle, int m, int n,
                                                        int nnz, const cusparseMatDescr_t descr,
                                                        const int* row_ptr, const int* col_ind,
                                                        csrqrInfoHost_t info) {
  return host_analysis(handle, m, n, nnz, descr, row_ptr, col_ind, info, Kind::kQr,
                       "cusolverSpXcsrqrAnalysisHost");
}
PT_EXPORT cusolverStatus_t cusolverSpXcsrcholAnalysis(cusolverSpHandle_t handle, int n, int nnz,
                                                      const cusparseMatDescr_t descr,
                                                      const int* row_ptr, const int* col_ind,
                                                      csrcholInfo_t info) {
  return device_analysis(handle, n, n, nnz, descr, row_ptr, col_ind, info, true,
                         "cusolverSpXcsrcholAnalysis");
}
PT_EXPORT cusolverStatus_t cusolverSpXcsrqrAnalysis(cusolverSpHandle_t handle, int m, int n,
                                                    int nnz, const cusparseMatDescr_t descr,
                                                    const int* row_ptr, const int* col_ind,
                                                    csrqrInfo_t info) {
  return device_analysis(handle, m, n, nnz, descr, row_ptr, col_ind, info, false,
                         "cusolverSpXcsrqrAnalysis");
}

PT_EXPORT cusolverStatus_t cusolverSpXcsrluNnzHost(cusolverSpHandle_t handle, int* nnz_lower,
                                                   int* nnz_upper, csrluInfoHost_t info) {
  return lu_nnz(handle, nnz_lower, nnz_upper, info, "cusolverSpXcsrluNnzHost");
}

// ---- per value type
// ------------------------------------------------------------------------------

#define PT_LOWLEVEL(P, T, REAL, CT, DTYPE)                                                         \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrluBufferInfoHost(                                   \
      cusolverSpHandle_t handle, int n, int nnz, const cusparseMatDescr_t descr, const T* values,  \
      const int* row_ptr, const int* col_ind, csrluInfoHost_t info, size_t* internal_bytes,        \
      size_t* workspace_bytes) {                                                                   \
    (void)nnz, (void)descr, (void)values, (void)row_ptr, (void)col_ind;                            \
    return host_buffer_info<CT>(handle, n, info, Kind::kLu, internal_bytes, workspace_bytes,       \
                                "cusolverSp" #P "csrluBufferInfoHost");                            \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrluFactorHost(                                       \
      cusolverSpHandle_t handle, int n, int nnz, const cusparseMatDescr_t descr, const T* values,  \
      const int* row_ptr, const int* col_ind, csrluInfoHost_t info, REAL pivot_threshold,          \
      void* buffer) {                                                                              \
    (void)buffer;                                                                                  \
    const char* api = "cusolverSp" #P "csrluFactorHost";                                           \
    if (!(pivot_threshold >= 0 && pivot_threshold <= 1))                                           \
      return sp::bad(api, "pivot_threshold outside [0, 1]");                                       \
    return host_factor_chol_or_lu<CT>(handle, n, nnz, descr, reinterpret_cast<const CT*>(values),  \
                                      row_ptr, col_ind, info, Kind::kLu, DTYPE, api);              \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrluZeroPivotHost(                                    \
      cusolverSpHandle_t handle, csrluInfoHost_t info, REAL tol, int* position) {                  \
    return host_zero_pivot(handle, info, Kind::kLu, tol, position,                                 \
                           "cusolverSp" #P "csrluZeroPivotHost");                                  \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrluSolveHost(                                        \
      cusolverSpHandle_t handle, int n, const T* b, T* x, csrluInfoHost_t info, void* buffer) {    \
    (void)buffer;                                                                                  \
    return host_solve(handle, n, n, b, x, info, Kind::kLu, DTYPE,                                  \
                      "cusolverSp" #P "csrluSolveHost");                                           \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrluExtractHost(                                      \
      cusolverSpHandle_t handle, int* p, int* q, const cusparseMatDescr_t descr_lower,             \
      T* lower_values, int* lower_offsets, int* lower_columns,                                     \
      const cusparseMatDescr_t descr_upper, T* upper_values, int* upper_offsets,                   \
      int* upper_columns, csrluInfoHost_t info, void* buffer) {                                    \
    (void)buffer;                                                                                  \
    return lu_extract<CT>(handle, p, q, descr_lower, reinterpret_cast<CT*>(lower_values),          \
                          lower_offsets, lower_columns, descr_upper,                               \
                          reinterpret_cast<CT*>(upper_values), upper_offsets, upper_columns, info, \
                          DTYPE, "cusolverSp" #P "csrluExtractHost");                              \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrcholBufferInfoHost(                                 \
      cusolverSpHandle_t handle, int n, int nnz, const cusparseMatDescr_t descr, const T* values,  \
      const int* row_ptr, const int* col_ind, csrcholInfoHost_t info, size_t* internal_bytes,      \
      size_t* workspace_bytes) {                                                                   \
    (void)nnz, (void)descr, (void)values, (void)row_ptr, (void)col_ind;                            \
    return host_buffer_info<CT>(handle, n, info, Kind::kCholesky, internal_bytes, workspace_bytes, \
                                "cusolverSp" #P "csrcholBufferInfoHost");                          \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrcholFactorHost(                                     \
      cusolverSpHandle_t handle, int n, int nnz, const cusparseMatDescr_t descr, const T* values,  \
      const int* row_ptr, const int* col_ind, csrcholInfoHost_t info, void* buffer) {              \
    (void)buffer;                                                                                  \
    return host_factor_chol_or_lu<CT>(handle, n, nnz, descr, reinterpret_cast<const CT*>(values),  \
                                      row_ptr, col_ind, info, Kind::kCholesky, DTYPE,              \
                                      "cusolverSp" #P "csrcholFactorHost");                        \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrcholZeroPivotHost(                                  \
      cusolverSpHandle_t handle, csrcholInfoHost_t info, REAL tol, int* position) {                \
    return host_zero_pivot(handle, info, Kind::kCholesky, tol, position,                           \
                           "cusolverSp" #P "csrcholZeroPivotHost");                                \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrcholSolveHost(                                      \
      cusolverSpHandle_t handle, int n, const T* b, T* x, csrcholInfoHost_t info, void* buffer) {  \
    (void)buffer;                                                                                  \
    return host_solve(handle, n, n, b, x, info, Kind::kCholesky, DTYPE,                            \
                      "cusolverSp" #P "csrcholSolveHost");                                         \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrqrBufferInfoHost(                                   \
      cusolverSpHandle_t handle, int m, int n, int nnz, const cusparseMatDescr_t descr,            \
      const T* values, const int* row_ptr, const int* col_ind, csrqrInfoHost_t info,               \
      size_t* internal_bytes, size_t* workspace_bytes) {                                           \
    (void)m, (void)nnz, (void)descr, (void)values, (void)row_ptr, (void)col_ind;                   \
    return host_buffer_info<CT>(handle, n, info, Kind::kQr, internal_bytes, workspace_bytes,       \
                                "cusolverSp" #P "csrqrBufferInfoHost");                            \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrqrSetupHost(                                        \
      cusolverSpHandle_t handle, int m, int n, int nnz, const cusparseMatDescr_t descr,            \
      const T* values, const int* row_ptr, const int* col_ind, T mu, csrqrInfoHost_t info) {       \
    return host_qr_setup<CT>(handle, m, n, nnz, descr, reinterpret_cast<const CT*>(values),        \
                             row_ptr, col_ind, from_api<CT>(&mu), info, DTYPE,                     \
                             "cusolverSp" #P "csrqrSetupHost");                                    \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrqrFactorHost(cusolverSpHandle_t handle, int m,      \
                                                            int n, int nnz, T* b, T* x,            \
                                                            csrqrInfoHost_t info, void* buffer) {  \
    (void)buffer;                                                                                  \
    return host_qr_factor<CT>(handle, m, n, nnz, reinterpret_cast<CT*>(b),                         \
                              reinterpret_cast<CT*>(x), info, DTYPE,                               \
                              "cusolverSp" #P "csrqrFactorHost");                                  \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrqrZeroPivotHost(                                    \
      cusolverSpHandle_t handle, csrqrInfoHost_t info, REAL tol, int* position) {                  \
    return host_zero_pivot(handle, info, Kind::kQr, tol, position,                                 \
                           "cusolverSp" #P "csrqrZeroPivotHost");                                  \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrqrSolveHost(                                        \
      cusolverSpHandle_t handle, int m, int n, T* b, T* x, csrqrInfoHost_t info, void* buffer) {   \
    (void)buffer;                                                                                  \
    return host_solve(handle, m, n, b, x, info, Kind::kQr, DTYPE,                                  \
                      "cusolverSp" #P "csrqrSolveHost");                                           \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrcholBufferInfo(                                     \
      cusolverSpHandle_t handle, int n, int nnz, const cusparseMatDescr_t descr, const T* values,  \
      const int* row_ptr, const int* col_ind, csrcholInfo_t info, size_t* internal_bytes,          \
      size_t* workspace_bytes) {                                                                   \
    (void)n, (void)nnz, (void)descr, (void)values, (void)row_ptr, (void)col_ind;                   \
    return device_buffer_info(handle, info, true, DTYPE, internal_bytes, workspace_bytes,          \
                              "cusolverSp" #P "csrcholBufferInfo");                                \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrcholFactor(                                         \
      cusolverSpHandle_t handle, int n, int nnz, const cusparseMatDescr_t descr, const T* values,  \
      const int* row_ptr, const int* col_ind, csrcholInfo_t info, void* buffer) {                  \
    (void)buffer;                                                                                  \
    return device_factor(handle, info, true, values, row_ptr, col_ind, n, n, nnz, descr, DTYPE,    \
                         nullptr, nullptr, "cusolverSp" #P "csrcholFactor");                       \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrcholZeroPivot(                                      \
      cusolverSpHandle_t handle, csrcholInfo_t info, REAL tol, int* position) {                    \
    return device_zero_pivot(handle, info, true, tol, position,                                    \
                             "cusolverSp" #P "csrcholZeroPivot");                                  \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrcholSolve(                                          \
      cusolverSpHandle_t handle, int n, const T* b, T* x, csrcholInfo_t info, void* buffer) {      \
    (void)buffer;                                                                                  \
    return device_solve_factored(handle, n, n, b, x, info, true, DTYPE,                            \
                                 "cusolverSp" #P "csrcholSolve");                                  \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrcholDiag(cusolverSpHandle_t handle,                 \
                                                        csrcholInfo_t info, REAL* diag) {          \
    return device_chol_diag(handle, info, diag, DTYPE, "cusolverSp" #P "csrcholDiag");             \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrqrBufferInfo(                                       \
      cusolverSpHandle_t handle, int m, int n, int nnz, const cusparseMatDescr_t descr,            \
      const T* values, const int* row_ptr, const int* col_ind, csrqrInfo_t info,                   \
      size_t* internal_bytes, size_t* workspace_bytes) {                                           \
    (void)m, (void)n, (void)nnz, (void)descr, (void)values, (void)row_ptr, (void)col_ind;          \
    return device_buffer_info(handle, info, false, DTYPE, internal_bytes, workspace_bytes,         \
                              "cusolverSp" #P "csrqrBufferInfo");                                  \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrqrSetup(                                            \
      cusolverSpHandle_t handle, int m, int n, int nnz, const cusparseMatDescr_t descr,            \
      const T* values, const int* row_ptr, const int* col_ind, T mu, csrqrInfo_t info) {           \
    (void)mu;                                                                                      \
    return device_qr_setup(handle, m, n, nnz, descr, values, row_ptr, col_ind, info, DTYPE,        \
                           "cusolverSp" #P "csrqrSetup");                                          \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrqrFactor(cusolverSpHandle_t handle, int m, int n,   \
                                                        int nnz, T* b, T* x, csrqrInfo_t info,     \
                                                        void* buffer) {                            \
    (void)buffer;                                                                                  \
    return device_factor(handle, info, false, nullptr, nullptr, nullptr, m, n, nnz, nullptr,       \
                         DTYPE, b, x, "cusolverSp" #P "csrqrFactor");                              \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrqrZeroPivot(                                        \
      cusolverSpHandle_t handle, csrqrInfo_t info, REAL tol, int* position) {                      \
    return device_zero_pivot(handle, info, false, tol, position,                                   \
                             "cusolverSp" #P "csrqrZeroPivot");                                    \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverSp##P##csrqrSolve(                                            \
      cusolverSpHandle_t handle, int m, int n, T* b, T* x, csrqrInfo_t info, void* buffer) {       \
    (void)buffer;                                                                                  \
    return device_solve_factored(handle, m, n, b, x, info, false, DTYPE,                           \
                                 "cusolverSp" #P "csrqrSolve");                                    \
  }

PT_LOWLEVEL(S, float, float, float, CUDA_R_32F)
PT_LOWLEVEL(D, double, double, double, CUDA_R_64F)
PT_LOWLEVEL(C, cuComplex, float, std::complex<float>, CUDA_C_32F)
PT_LOWLEVEL(Z, cuDoubleComplex, double, std::complex<double>, CUDA_C_64F)
#undef PT_LOWLEVEL
