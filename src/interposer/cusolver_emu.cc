// cuSOLVER's dense API (cusolverDn) on the emulated devices, as NVIDIA's cuSolverDn_LinearSolver
// sample and PyTorch's torch.linalg call it: handle, stream and params; LU (getrf/getrs),
// Cholesky (potrf/potrs), QR (geqrf, ormqr/unmqr), the symmetric/Hermitian eigensolver
// (syevd/heevd) and the SVD (gesvd) in S/D/C/Z with their _bufferSize queries, and the 64-bit
// API's Xgetrf/Xgetrs/Xpotrf/Xpotrs/Xgeqrf/Xsyevd. A call is validated (handle live, shapes and
// leading dimensions, matrices, pivots and `info` in device memory) and recorded as a `gemm`
// record — a factorization is dominated by its blocked GEMM updates, so the GEMM estimator times
// it by FLOPs and bytes — with a `solver` object naming the routine and its options. The numerics
// are not computed, except real LU and Cholesky with their solves (below, "results on the
// host"): `info` is set to 0 (success) and getrf's pivots to 1..min(m,n) (no row exchange)
// where the memory is backed, so programs that check them go on. Model, not measured
// (leading-order LAPACK operation counts, LAWN 41; Golub & Van Loan for the eigen/SVD solvers;
// complex counts are 4x the real ones):
//   getrf m x n, k = min(m,n): 2·(m·n·k − (m+n)·k²/2 + k³/3)   (2/3·n³ square)
//   getrs / potrs:             2·n²·nrhs
//   potrf:                     n³/3
//   geqrf:                     2·m·n·k − (m+n)·k² + 2/3·k³      (2mn² − 2/3 n³ for m ≥ n)
//   ormqr side L / R:          4·m·n·k − 2·n·k² / 4·m·n·k − 2·m·k²
//   syevd:                     4/3·n³ values only, 9·n³ with vectors (symmetric QR bound)
//   gesvd (m ≥ n):             4·m·n² − 4/3·n³ values only, 4·m²·n + 8·m·n² + 9·n³ with vectors
//   bytes: every matrix argument read once, outputs written once (A is read and written).
//   _bufferSize: LAPACK's workspace with a block of 64 columns (getrf/potrf/geqrf: 64·n,
//   ormqr: 64·(n or m)), dsyevd's 1 + 6n + 2n² (2n + 1 values only) and dgesvd's
//   max(3·min + max, 5·min) elements; the X API reports them in bytes on the device, 0 on the host.
// Further down, recorded the same way: the Jacobi and batched solvers, the generalized and
// selective eigensolvers, the rest of the 64-bit API (Xgesvd/p/r, Xsyevdx, XsyevBatched, Xgeev,
// Xtrtri, Xsytrs) and the two-sided reductions (gebrd, sytrd and their orthogonal factors); and
// computed where the memory is backed: the mixed-precision iterative-refinement solvers
// (<t1><t2>gesv/gels, IRSXgesv/IRSXgels). The sparse API (cusolverSp) is in cusolver_sp_emu.cc,
// cusolverRf in cusolver_rf_emu.cc, cusolverMg in cusolver_mg_emu.cc. Every other cusolver
// function (the *Host helpers, ...) is a generated stub that reports its name and returns
// CUSOLVER_STATUS_NOT_SUPPORTED (9).
#include <cusolverDn.h>

#include <Eigen/Core>
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "interposer/cublas_nccl_util.h"
#include "interposer/cudart_internal.h"
#include "interposer/trace_schema.h"

namespace trace_schema = powertrain::trace_schema;

namespace powertrain::emu::detail {
namespace {

struct SolverHandle {
  cudaStream_t stream = nullptr;
  int deterministic = 1;  // CUSOLVER_DETERMINISTIC_RESULTS
  int math = 1;           // CUSOLVER_DEFAULT_MATH
  int emulation = 0;      // CUDA_EMULATION_STRATEGY_DEFAULT
};

struct SolverState {
  std::mutex mutex;
  std::unordered_set<const void*> handles, params, irs_params, irs_infos;
};

SolverState& solver() {
  static SolverState* s = new SolverState;  // never destroyed: calls may come from atexit
  return *s;
}

bool live(std::unordered_set<const void*>& set, const void* handle) {
  std::lock_guard<std::mutex> lock(solver().mutex);
  return set.count(handle) > 0;
}

cusolverStatus_t bad(const char* api, const std::string& what) {
  report_misuse(api, what);
  return CUSOLVER_STATUS_INVALID_VALUE;
}

// The handle's stream, or false after reporting the misuse (NOT_INITIALIZED).
bool handle_stream(cusolverDnHandle_t handle, const char* api, cudaStream_t* stream) {
  std::lock_guard<std::mutex> lock(solver().mutex);
  if (solver().handles.count(handle) == 0) {
    report_misuse(api, "invalid or destroyed cuSOLVER handle " + pointer_text(handle));
    return false;
  }
  *stream = reinterpret_cast<const SolverHandle*>(handle)->stream;
  return true;
}

/// The element type of a routine: S, D, C, Z (or the X API's cudaDataType).
struct Type {
  cudaDataType dtype = CUDA_R_64F;
  int bytes = 8;       // one element
  int real_bytes = 8;  // eigen/singular values, tau of real routines
  bool complex = false;
};
constexpr Type kS{CUDA_R_32F, 4, 4, false};
constexpr Type kD{CUDA_R_64F, 8, 8, false};
constexpr Type kC{CUDA_C_32F, 8, 4, true};
constexpr Type kZ{CUDA_C_64F, 16, 8, true};

bool type_of(cudaDataType t, Type* out) {
  switch (t) {
    case CUDA_R_32F:
      *out = kS;
      return true;
    case CUDA_R_64F:
      *out = kD;
      return true;
    case CUDA_C_32F:
      *out = kC;
      return true;
    case CUDA_C_64F:
      *out = kZ;
      return true;
    default:
      return false;
  }
}

// Dimensions are at most 2^31 (int in the legacy API, checked for the X API), so the products
// below stay far from int64 overflow: 2^31 · 2^31 · 16 < 2^67 would not, hence doubles for
// FLOPs and bytes, saturated when written.
std::int64_t saturate(double value) {
  if (!(value > 0.0)) return 0;
  return value >= 9.0e18 ? static_cast<std::int64_t>(9.0e18) : std::llround(value);
}

// A column-major rows x cols matrix with leading dimension ld in device memory (NULL is fine when
// it holds nothing).
bool device_matrix(const void* pointer, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                   int element_bytes) {
  if (rows == 0 || cols == 0) return true;
  const double extent =
      (static_cast<double>(cols - 1) * static_cast<double>(ld) + static_cast<double>(rows)) *
      element_bytes;
  const PointerInfo info = lookup_pointer(pointer);
  return info.known && info.device_side && static_cast<double>(info.available) >= extent;
}

bool device_array(const void* pointer, double bytes) {
  if (bytes <= 0.0) return true;
  const PointerInfo info = lookup_pointer(pointer);
  return info.known && info.device_side && static_cast<double>(info.available) >= bytes;
}

// `info` must be device memory; set to 0 (success) where it is backed.
bool set_info(int* info, const char* api) {
  const PointerInfo p = info != nullptr ? lookup_pointer(info) : PointerInfo{};
  if (!p.known || !p.device_side || p.available < sizeof(int)) {
    report_misuse(api, "info " + pointer_text(info) + " is not device memory of an int");
    return false;
  }
  if (p.backed) std::memset(info, 0, sizeof(int));
  return true;
}

// What one call records.
struct Call {
  const char* api = "";
  const char* routine = "";
  Type type;
  std::int64_t m = 0, n = 0, k = 0;  // matrix m x n; k: nrhs, reflectors or min(m, n)
  double flops = 0.0, bytes = 0.0;
  std::string options;  // extra JSON members of the `solver` object (",\"uplo\":\"L\"", ...)
  std::int64_t start = 0;
};

cusolverStatus_t record(cusolverDnHandle_t handle, const Call& c) {
  cudaStream_t stream = nullptr;
  if (!handle_stream(handle, c.api, &stream)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  if (c.m == 0 || c.n == 0) return CUSOLVER_STATUS_SUCCESS;  // nothing launched
  int device = 0;
  const std::int64_t stream_id = emu::stream_id(stream, false, &device);
  if (stream_id == kInvalidStream) {
    report_misuse(c.api, "the handle's stream " + pointer_text(stream) +
                             " is not a live CUDA stream (destroyed after cusolverDnSetStream?)");
    return CUSOLVER_STATUS_EXECUTION_FAILED;
  }
  const char* dtype = libs::cuda_dtype_name(c.type.dtype);
  const double flops = c.type.complex ? 4.0 * c.flops : c.flops;
  auto r = begin_work(trace_schema::op::kGemm, c.start);
  r.field(trace_schema::field::kApi, std::string_view(c.api));
  r.field(trace_schema::field::kM, c.m);
  r.field(trace_schema::field::kN, c.n);
  r.field(trace_schema::field::kK, std::max<std::int64_t>(c.k, 1));
  r.field(trace_schema::field::kBatch, std::int64_t{1});
  r.field("transa", std::string_view("N"));
  r.field("transb", std::string_view("N"));
  r.field(trace_schema::field::kDtypeA, std::string_view(dtype));
  r.field(trace_schema::field::kDtypeB, std::string_view(dtype));
  r.field(trace_schema::field::kDtypeC, std::string_view(dtype));
  r.field(trace_schema::field::kCompute, std::string_view(dtype));
  r.field(trace_schema::field::kFlops, saturate(flops));
  r.field(trace_schema::field::kBytes, saturate(c.bytes));
  r.raw("solver", std::string("{\"routine\":\"") + c.routine + "\"" + c.options + "}");
  end_work(r, device, stream_id, 0);  // captured into a CUDA graph like a kernel
  return CUSOLVER_STATUS_SUCCESS;
}

bool valid_shape(std::int64_t m, std::int64_t n, std::int64_t lda) {
  const std::int64_t limit = std::int64_t{1} << 31;
  return m >= 0 && n >= 0 && m < limit && n < limit && lda >= std::max<std::int64_t>(1, m) &&
         lda < limit;
}

std::string shape_text(std::int64_t m, std::int64_t n, std::int64_t ld) {
  return std::to_string(m) + " x " + std::to_string(n) + " with leading dimension " +
         std::to_string(ld);
}

std::string option(const char* key, const char* value) {
  return std::string(",\"") + key + "\":\"" + value + "\"";
}
std::string option(const char* key, std::int64_t value) {
  return std::string(",\"") + key + "\":" + std::to_string(value);
}

const char* fill_text(cublasFillMode_t uplo) {
  return uplo == CUBLAS_FILL_MODE_LOWER ? "L" : uplo == CUBLAS_FILL_MODE_UPPER ? "U" : "full";
}
const char* op_text(cublasOperation_t op) {
  return op == CUBLAS_OP_N ? "N" : op == CUBLAS_OP_T ? "T" : "C";
}

// ---- workspace models (elements) ----------------------------------------------------------

constexpr std::int64_t kBlock = 64;
std::int64_t panel_lwork(std::int64_t n) { return std::max<std::int64_t>(1, kBlock * n); }
std::int64_t syevd_lwork(cusolverEigMode_t jobz, std::int64_t n) {
  if (jobz != CUSOLVER_EIG_MODE_VECTOR) return 2 * n + 1;
  std::int64_t square = 0;  // n < 2^31, but 2·n² can still exceed int64: saturate
  if (__builtin_mul_overflow(2 * n, n, &square) || square > (std::int64_t{1} << 58)) {
    return std::int64_t{1} << 58;
  }
  return 1 + 6 * n + square;
}
std::int64_t gesvd_lwork(std::int64_t m, std::int64_t n) {
  const std::int64_t lo = std::min(m, n), hi = std::max(m, n);
  return std::max<std::int64_t>(1, std::max(3 * lo + hi, 5 * lo));
}
cusolverStatus_t put_lwork(int* lwork, std::int64_t elements, const char* api) {
  if (lwork == nullptr) return bad(api, "the workspace size pointer is NULL");
  if (elements > 2147483647) return bad(api, "the workspace exceeds the 32-bit API's int size");
  *lwork = static_cast<int>(elements);
  return CUSOLVER_STATUS_SUCCESS;
}
// The 32-bit API's getrf, potrf and geqrf workspace queries: a panel of the m x n matrix.
cusolverStatus_t panel_buffer_size(cusolverDnHandle_t handle, int m, int n, int lda, int* lwork,
                                   const char* api) {
  if (!valid_shape(m, n, lda)) return bad(api, "invalid matrix " + shape_text(m, n, lda));
  cudaStream_t stream = nullptr;
  if (!handle_stream(handle, api, &stream)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  return put_lwork(lwork, panel_lwork(n), api);
}
cusolverStatus_t put_bytes(size_t* device, size_t* host, std::int64_t elements, const Type& t,
                           const char* api) {
  if (device == nullptr || host == nullptr) return bad(api, "a workspace size pointer is NULL");
  *device = static_cast<size_t>(elements) * static_cast<size_t>(t.bytes);
  *host = 0;
  return CUSOLVER_STATUS_SUCCESS;
}

// ---- results on the host --------------------------------------------------------------------
// Real (S, D) LU and Cholesky factorizations and their solves are computed for real where A (and
// B, the pivots, info) are backed device memory, at most 1e9 FLOPs per call, so programs that
// check a residual (cuSolverDn_LinearSolver, the CUDALibrarySamples getrf/potrf examples) get
// the GPU's answer: LAPACK's unblocked algorithms (partial pivoting by the largest magnitude,
// 1-based pivots, info = the first zero pivot / the first non-positive leading minor). Not on a
// capturing stream (a graph node), and not counted as the program's time.
constexpr double kSolverComputeFlops = 1e9;

bool backed_matrix(const void* pointer, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                   int element_bytes) {
  if (rows == 0 || cols == 0) return true;
  const PointerInfo info = lookup_pointer(pointer);
  const double extent =
      (static_cast<double>(cols - 1) * static_cast<double>(ld) + static_cast<double>(rows)) *
      element_bytes;
  return info.known && info.backed && static_cast<double>(info.available) >= extent;
}

// The factorizations computed on the host, by the address of their A: a solve computes only with
// a factor it knows is there (A as factored, its shape and kind); a factorization that was not
// computed (bounds, capture, unbacked memory) removes its A, so a later solve leaves B alone
// rather than solving with the unfactored matrix.
struct Factor {
  std::int64_t n = 0, lda = 0;
  bool cholesky = false, lower = true;
  int dtype = 0;
};
struct FactorRegistry {
  std::mutex mutex;
  std::unordered_map<const void*, Factor> factors;
};
FactorRegistry& factors() {
  static auto* r = new FactorRegistry;  // never destroyed
  return *r;
}
void remember_factor(const void* a, const Factor& f, bool computed) {
  std::lock_guard<std::mutex> lock(factors().mutex);
  if (computed) {
    factors().factors[a] = f;
  } else {
    factors().factors.erase(a);
  }
}
bool factored(const void* a, const Factor& f) {
  std::lock_guard<std::mutex> lock(factors().mutex);
  const auto it = factors().factors.find(a);
  return it != factors().factors.end() && it->second.n == f.n && it->second.lda == f.lda &&
         it->second.cholesky == f.cholesky && it->second.dtype == f.dtype &&
         (!f.cholesky || it->second.lower == f.lower);
}

bool handle_capturing(cusolverDnHandle_t handle) {
  cudaStream_t stream = nullptr;
  {
    std::lock_guard<std::mutex> lock(solver().mutex);
    if (solver().handles.count(handle) == 0) return true;  // not computed
    stream = reinterpret_cast<const SolverHandle*>(handle)->stream;
  }
  return capturing_stream(stream);
}

void write_info(int* info, int value) {
  if (info != nullptr && lookup_pointer(info).backed) *info = value;
}

std::int64_t pivot_at(const void* ipiv, int bytes, std::int64_t i) {
  return bytes == 8 ? static_cast<const std::int64_t*>(ipiv)[i] : static_cast<const int*>(ipiv)[i];
}

template <typename R>
void host_getrf(std::int64_t m, std::int64_t n, R* a, std::int64_t lda, void* ipiv, int ipiv_bytes,
                int* info) {
  auto at = [&](std::int64_t i, std::int64_t j) -> R& { return a[i + j * lda]; };
  int first_zero = 0;
  for (std::int64_t j = 0; j < std::min(m, n); ++j) {
    std::int64_t p = j;
    if (ipiv != nullptr) {
      for (std::int64_t i = j + 1; i < m; ++i) {
        if (std::abs(at(i, j)) > std::abs(at(p, j))) p = i;
      }
      if (ipiv_bytes == 8) {
        static_cast<std::int64_t*>(ipiv)[j] = p + 1;
      } else {
        static_cast<int*>(ipiv)[j] = static_cast<int>(p + 1);
      }
    }
    if (at(p, j) == R(0)) {
      if (first_zero == 0) first_zero = static_cast<int>(j + 1);
      continue;  // LAPACK goes on; U is singular
    }
    if (p != j) {
      for (std::int64_t c = 0; c < n; ++c) std::swap(at(p, c), at(j, c));
    }
    for (std::int64_t i = j + 1; i < m; ++i) at(i, j) /= at(j, j);
    for (std::int64_t c = j + 1; c < n; ++c) {
      const R u = at(j, c);
      if (u == R(0)) continue;
      for (std::int64_t i = j + 1; i < m; ++i) at(i, c) -= at(i, j) * u;
    }
  }
  write_info(info, first_zero);
}

template <typename R>
void host_getrs(bool transposed, std::int64_t n, std::int64_t nrhs, const R* a, std::int64_t lda,
                const void* ipiv, int ipiv_bytes, R* b, std::int64_t ldb) {
  auto A = [&](std::int64_t i, std::int64_t j) { return a[i + j * lda]; };
  for (std::int64_t r = 0; r < nrhs; ++r) {
    R* x = b + r * ldb;
    if (!transposed) {
      if (ipiv != nullptr) {
        for (std::int64_t i = 0; i < n; ++i) std::swap(x[i], x[pivot_at(ipiv, ipiv_bytes, i) - 1]);
      }
      for (std::int64_t i = 0; i < n; ++i) {  // L (unit diagonal)
        for (std::int64_t k = 0; k < i; ++k) x[i] -= A(i, k) * x[k];
      }
      for (std::int64_t i = n - 1; i >= 0; --i) {  // U
        for (std::int64_t k = i + 1; k < n; ++k) x[i] -= A(i, k) * x[k];
        x[i] /= A(i, i);
      }
    } else {
      for (std::int64_t i = 0; i < n; ++i) {  // Uᵀ
        for (std::int64_t k = 0; k < i; ++k) x[i] -= A(k, i) * x[k];
        x[i] /= A(i, i);
      }
      for (std::int64_t i = n - 1; i >= 0; --i) {  // Lᵀ (unit diagonal)
        for (std::int64_t k = i + 1; k < n; ++k) x[i] -= A(k, i) * x[k];
      }
      if (ipiv != nullptr) {
        for (std::int64_t i = n - 1; i >= 0; --i) {
          std::swap(x[i], x[pivot_at(ipiv, ipiv_bytes, i) - 1]);
        }
      }
    }
  }
}

template <typename R>
void host_potrf(bool lower, std::int64_t n, R* a, std::int64_t lda, int* info) {
  // The factor's entry (i, j) of the lower form: stored at (i, j) (lower) or (j, i) (upper).
  auto L = [&](std::int64_t i, std::int64_t j) -> R& {
    return lower ? a[i + j * lda] : a[j + i * lda];
  };
  for (std::int64_t j = 0; j < n; ++j) {
    R d = L(j, j);
    for (std::int64_t k = 0; k < j; ++k) d -= L(j, k) * L(j, k);
    if (!(d > R(0))) {
      write_info(info, static_cast<int>(j + 1));
      return;
    }
    const R root = std::sqrt(d);
    L(j, j) = root;
    for (std::int64_t i = j + 1; i < n; ++i) {
      R v = L(i, j);
      for (std::int64_t k = 0; k < j; ++k) v -= L(i, k) * L(j, k);
      L(i, j) = v / root;
    }
  }
  write_info(info, 0);
}

template <typename R>
void host_potrs(bool lower, std::int64_t n, std::int64_t nrhs, const R* a, std::int64_t lda, R* b,
                std::int64_t ldb) {
  auto L = [&](std::int64_t i, std::int64_t j) { return lower ? a[i + j * lda] : a[j + i * lda]; };
  for (std::int64_t r = 0; r < nrhs; ++r) {
    R* x = b + r * ldb;
    for (std::int64_t i = 0; i < n; ++i) {  // L·y = b
      for (std::int64_t k = 0; k < i; ++k) x[i] -= L(i, k) * x[k];
      x[i] /= L(i, i);
    }
    for (std::int64_t i = n - 1; i >= 0; --i) {  // Lᵀ·x = y
      for (std::int64_t k = i + 1; k < n; ++k) x[i] -= L(k, i) * x[k];
      x[i] /= L(i, i);
    }
  }
}

// Runs `f` with the element type when `t` is real single or double.
template <typename F>
void with_real(const Type& t, F&& f) {
  if (t.complex) return;
  if (t.dtype == CUDA_R_32F) f(float{});
  if (t.dtype == CUDA_R_64F) f(double{});
}

// ---- the routines (legacy and X API share these) -------------------------------------------

cusolverStatus_t getrf(cusolverDnHandle_t handle, const Type& t, std::int64_t m, std::int64_t n,
                       const void* a, std::int64_t lda, const void* work, double work_bytes,
                       void* ipiv, int ipiv_bytes, int* info, const char* api) {
  const std::int64_t start = now_ns();
  if (!valid_shape(m, n, lda)) return bad(api, "invalid matrix " + shape_text(m, n, lda));
  if (!device_matrix(a, m, n, lda, t.bytes)) {
    return bad(api, "A " + pointer_text(a) + " is not device memory of " + shape_text(m, n, lda));
  }
  const std::int64_t k = std::min(m, n);
  if (work != nullptr && !device_array(work, work_bytes)) {
    return bad(api, "the workspace " + pointer_text(work) + " is not device memory of " +
                        std::to_string(static_cast<std::int64_t>(work_bytes)) + " bytes");
  }
  if (ipiv != nullptr && !device_array(ipiv, static_cast<double>(k) * ipiv_bytes)) {
    return bad(api, "the pivots " + pointer_text(ipiv) + " are not device memory of " +
                        std::to_string(k) + " indices");
  }
  if (!set_info(info, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  bool computed = false;
  const double dm_ = static_cast<double>(m), dn_ = static_cast<double>(n);
  if (!t.complex && dm_ * dn_ * static_cast<double>(k) <= kSolverComputeFlops &&
      backed_matrix(a, m, n, lda, t.bytes) && (ipiv == nullptr || lookup_pointer(ipiv).backed) &&
      !handle_capturing(handle)) {
    const HostComputeScope host_compute;  // not the program's time
    with_real(t, [&](auto zero) {
      using R = decltype(zero);
      host_getrf<R>(m, n, static_cast<R*>(const_cast<void*>(a)), lda, ipiv, ipiv_bytes, info);
      computed = true;
    });
  }
  remember_factor(a, Factor{m == n ? n : -1, lda, false, true, t.dtype}, computed);
  // Otherwise pivots 1..k (no row exchange) where backed, so a solve with them stays in range.
  if (!computed && ipiv != nullptr && lookup_pointer(ipiv).backed) {
    for (std::int64_t i = 0; i < k; ++i) {
      if (ipiv_bytes == 8) {
        static_cast<std::int64_t*>(ipiv)[i] = i + 1;
      } else {
        static_cast<int*>(ipiv)[i] = static_cast<int>(i + 1);
      }
    }
  }
  Call c;
  c.api = api, c.routine = "getrf", c.type = t, c.m = m, c.n = n, c.k = k, c.start = start;
  const double dm = static_cast<double>(m), dn = static_cast<double>(n),
               dk = static_cast<double>(k);
  c.flops = 2.0 * (dm * dn * dk - (dm + dn) * dk * dk / 2.0 + dk * dk * dk / 3.0);
  c.bytes = 2.0 * dm * dn * t.bytes + dk * ipiv_bytes;
  c.options = option("pivoting", ipiv != nullptr ? "partial" : "none");
  return record(handle, c);
}

cusolverStatus_t solve(cusolverDnHandle_t handle, const Type& t, const char* routine,
                       const std::string& options, std::int64_t n, std::int64_t nrhs, const void* a,
                       std::int64_t lda, const void* b, std::int64_t ldb, int* info,
                       const char* api, const void* ipiv = nullptr, int ipiv_bytes = 4,
                       bool transposed = false, bool lower = true) {
  const std::int64_t start = now_ns();
  if (!valid_shape(n, n, lda) || !valid_shape(n, nrhs, ldb)) {
    return bad(api,
               "invalid system: A " + shape_text(n, n, lda) + ", B " + shape_text(n, nrhs, ldb));
  }
  if (!device_matrix(a, n, n, lda, t.bytes) || !device_matrix(b, n, nrhs, ldb, t.bytes)) {
    return bad(api, "A " + pointer_text(a) + " or B " + pointer_text(b) +
                        " is not device memory of its matrix");
  }
  if (!set_info(info, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  const std::string name(routine);
  const bool have_factor = factored(a, Factor{n, lda, name == "potrs", lower, t.dtype});
  // Pivots outside 1..n (a getrf that failed its checks left them unset) are the program's bug
  // on a GPU too; here they would index outside B, so the solve is not computed.
  bool pivots_in_range = true;
  if (name == "getrs" && ipiv != nullptr && have_factor && lookup_pointer(ipiv).backed) {
    for (std::int64_t i = 0; i < n && pivots_in_range; ++i) {
      const std::int64_t p = pivot_at(ipiv, ipiv_bytes, i);
      if (p < 1 || p > n) {
        pivots_in_range = false;
        report_misuse(api, "pivot " + std::to_string(i) + " is " + std::to_string(p) +
                               ", outside 1.." + std::to_string(n));
      }
    }
  }
  if ((name == "getrs" || name == "potrs") && !t.complex && have_factor && pivots_in_range &&
      2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(nrhs) <=
          kSolverComputeFlops &&
      backed_matrix(a, n, n, lda, t.bytes) && backed_matrix(b, n, nrhs, ldb, t.bytes) &&
      (ipiv == nullptr || lookup_pointer(ipiv).backed) && !handle_capturing(handle)) {
    const HostComputeScope host_compute;  // not the program's time
    with_real(t, [&](auto zero) {
      using R = decltype(zero);
      auto* x = static_cast<R*>(const_cast<void*>(b));
      if (name == "getrs") {
        host_getrs<R>(transposed, n, nrhs, static_cast<const R*>(a), lda, ipiv, ipiv_bytes, x, ldb);
      } else {
        host_potrs<R>(lower, n, nrhs, static_cast<const R*>(a), lda, x, ldb);
      }
    });
  }
  Call c;
  c.api = api, c.routine = routine, c.type = t, c.m = n, c.n = n, c.k = nrhs, c.start = start;
  const double dn = static_cast<double>(n), dr = static_cast<double>(nrhs);
  c.flops = 2.0 * dn * dn * dr;
  c.bytes = (dn * dn + 2.0 * dn * dr) * t.bytes;
  c.options = options + option("nrhs", nrhs);
  return record(handle, c);
}

cusolverStatus_t potrf(cusolverDnHandle_t handle, const Type& t, cublasFillMode_t uplo,
                       std::int64_t n, const void* a, std::int64_t lda, const void* work,
                       double work_bytes, int* info, const char* api) {
  const std::int64_t start = now_ns();
  if (!valid_shape(n, n, lda)) return bad(api, "invalid matrix " + shape_text(n, n, lda));
  if (uplo != CUBLAS_FILL_MODE_LOWER && uplo != CUBLAS_FILL_MODE_UPPER) {
    return bad(api, "uplo must be CUBLAS_FILL_MODE_LOWER or CUBLAS_FILL_MODE_UPPER");
  }
  if (!device_matrix(a, n, n, lda, t.bytes)) {
    return bad(api, "A " + pointer_text(a) + " is not device memory of " + shape_text(n, n, lda));
  }
  if (work != nullptr && !device_array(work, work_bytes)) {
    return bad(api, "the workspace " + pointer_text(work) + " is not device memory of " +
                        std::to_string(static_cast<std::int64_t>(work_bytes)) + " bytes");
  }
  if (!set_info(info, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  bool computed = false;
  if (!t.complex &&
      static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / 3.0 <=
          kSolverComputeFlops &&
      backed_matrix(a, n, n, lda, t.bytes) && !handle_capturing(handle)) {
    const HostComputeScope host_compute;  // not the program's time
    with_real(t, [&](auto zero) {
      using R = decltype(zero);
      host_potrf<R>(uplo == CUBLAS_FILL_MODE_LOWER, n, static_cast<R*>(const_cast<void*>(a)), lda,
                    info);
      computed = true;
    });
  }
  remember_factor(a, Factor{n, lda, true, uplo == CUBLAS_FILL_MODE_LOWER, t.dtype}, computed);
  Call c;
  c.api = api, c.routine = "potrf", c.type = t, c.m = n, c.n = n, c.k = n, c.start = start;
  const double dn = static_cast<double>(n);
  c.flops = dn * dn * dn / 3.0;
  c.bytes = dn * dn * t.bytes;  // one triangle read and written
  c.options = option("uplo", fill_text(uplo));
  return record(handle, c);
}

cusolverStatus_t geqrf(cusolverDnHandle_t handle, const Type& t, std::int64_t m, std::int64_t n,
                       const void* a, std::int64_t lda, const void* tau, const void* work,
                       double work_bytes, int* info, const char* api) {
  const std::int64_t start = now_ns();
  if (!valid_shape(m, n, lda)) return bad(api, "invalid matrix " + shape_text(m, n, lda));
  const std::int64_t k = std::min(m, n);
  if (!device_matrix(a, m, n, lda, t.bytes) ||
      !device_array(tau, static_cast<double>(k) * t.bytes)) {
    return bad(api, "A " + pointer_text(a) + " or tau " + pointer_text(tau) +
                        " is not device memory of its size");
  }
  if (work != nullptr && !device_array(work, work_bytes)) {
    return bad(api, "the workspace " + pointer_text(work) + " is not device memory of " +
                        std::to_string(static_cast<std::int64_t>(work_bytes)) + " bytes");
  }
  if (!set_info(info, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  Call c;
  c.api = api, c.routine = "geqrf", c.type = t, c.m = m, c.n = n, c.k = k, c.start = start;
  const double dm = static_cast<double>(m), dn = static_cast<double>(n),
               dk = static_cast<double>(k);
  c.flops = 2.0 * dm * dn * dk - (dm + dn) * dk * dk + 2.0 / 3.0 * dk * dk * dk;
  c.bytes = (2.0 * dm * dn + dk) * t.bytes;
  return record(handle, c);
}

cusolverStatus_t ormqr(cusolverDnHandle_t handle, const Type& t, cublasSideMode_t side,
                       cublasOperation_t trans, std::int64_t m, std::int64_t n, std::int64_t k,
                       const void* a, std::int64_t lda, const void* tau, const void* c_matrix,
                       std::int64_t ldc, const void* work, double work_bytes, int* info, bool run,
                       const char* api) {
  const std::int64_t start = now_ns();
  const bool left = side == CUBLAS_SIDE_LEFT;
  const std::int64_t order = left ? m : n;  // Q is order x order, from k reflectors
  if (!valid_shape(m, n, ldc) || k < 0 || k > order || !valid_shape(order, k, lda)) {
    return bad(api, "invalid shapes: C " + shape_text(m, n, ldc) + ", " + std::to_string(k) +
                        " reflectors of length " + std::to_string(order) + " in lda " +
                        std::to_string(lda));
  }
  if (!run) return CUSOLVER_STATUS_SUCCESS;  // size queries may pass NULL matrices
  if (!device_matrix(a, order, k, lda, t.bytes) ||
      !device_array(tau, static_cast<double>(k) * t.bytes) ||
      !device_matrix(c_matrix, m, n, ldc, t.bytes)) {
    return bad(api, "A, tau or C is not device memory of its size");
  }
  if (work != nullptr && !device_array(work, work_bytes)) {
    return bad(api, "the workspace " + pointer_text(work) + " is not device memory of " +
                        std::to_string(static_cast<std::int64_t>(work_bytes)) + " bytes");
  }
  if (!set_info(info, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  Call c;
  c.api = api, c.routine = t.complex ? "unmqr" : "ormqr", c.type = t, c.m = m, c.n = n, c.k = k;
  c.start = start;
  const double dm = static_cast<double>(m), dn = static_cast<double>(n),
               dk = static_cast<double>(k);
  c.flops =
      left ? 4.0 * dm * dn * dk - 2.0 * dn * dk * dk : 4.0 * dm * dn * dk - 2.0 * dm * dk * dk;
  c.bytes = (static_cast<double>(order) * dk + dk + 2.0 * dm * dn) * t.bytes;
  c.options = option("side", left ? "L" : "R") + option("trans", op_text(trans));
  return record(handle, c);
}

cusolverStatus_t syevd(cusolverDnHandle_t handle, const Type& t, cusolverEigMode_t jobz,
                       cublasFillMode_t uplo, std::int64_t n, const void* a, std::int64_t lda,
                       const void* w, const void* work, double work_bytes, int* info, bool run,
                       const char* api) {
  const std::int64_t start = now_ns();
  if (!valid_shape(n, n, lda)) return bad(api, "invalid matrix " + shape_text(n, n, lda));
  if (jobz != CUSOLVER_EIG_MODE_NOVECTOR && jobz != CUSOLVER_EIG_MODE_VECTOR) {
    return bad(api, "jobz must be CUSOLVER_EIG_MODE_NOVECTOR or CUSOLVER_EIG_MODE_VECTOR");
  }
  if (!run) return CUSOLVER_STATUS_SUCCESS;  // size queries may pass NULL matrices
  if (!device_matrix(a, n, n, lda, t.bytes) ||
      !device_array(w, static_cast<double>(n) * t.real_bytes)) {
    return bad(api, "A " + pointer_text(a) + " or W " + pointer_text(w) +
                        " is not device memory of its size");
  }
  if (work != nullptr && !device_array(work, work_bytes)) {
    return bad(api, "the workspace " + pointer_text(work) + " is not device memory of " +
                        std::to_string(static_cast<std::int64_t>(work_bytes)) + " bytes");
  }
  if (!set_info(info, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  const bool vectors = jobz == CUSOLVER_EIG_MODE_VECTOR;
  // Real symmetric eigenpairs computed where A and W are backed (Eigen's self-adjoint solver on
  // the uplo triangle; values ascending, unit eigenvectors in A's columns, their signs Eigen's):
  // the CUDALibrarySamples syevd example compares them with the exact values.
  const double cube = static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  if (!t.complex && (vectors ? 9.0 : 4.0 / 3.0) * cube <= kSolverComputeFlops &&
      backed_matrix(a, n, n, lda, t.bytes) && backed_matrix(w, n, 1, n, t.real_bytes) &&
      !handle_capturing(handle)) {
    const HostComputeScope host_compute;  // not the program's time
    with_real(t, [&](auto zero) {
      using R = decltype(zero);
      using Matrix = Eigen::Matrix<R, Eigen::Dynamic, Eigen::Dynamic>;
      auto* values = static_cast<R*>(const_cast<void*>(a));
      Eigen::Map<Matrix, 0, Eigen::OuterStride<>> map(values, n, n, Eigen::OuterStride<>(lda));
      const Matrix symmetric = uplo == CUBLAS_FILL_MODE_LOWER
                                   ? Matrix(map.template selfadjointView<Eigen::Lower>())
                                   : Matrix(map.template selfadjointView<Eigen::Upper>());
      const Eigen::SelfAdjointEigenSolver<Matrix> solver(
          symmetric, vectors ? Eigen::ComputeEigenvectors : Eigen::EigenvaluesOnly);
      if (solver.info() != Eigen::Success) {
        if (info != nullptr && lookup_pointer(info).backed) *info = 1;  // did not converge
        return;
      }
      auto* eigenvalues = static_cast<R*>(const_cast<void*>(w));
      for (std::int64_t i = 0; i < n; ++i) eigenvalues[i] = solver.eigenvalues()(i);
      if (vectors) map = solver.eigenvectors();
    });
  }
  Call c;
  c.api = api, c.routine = t.complex ? "heevd" : "syevd", c.type = t, c.m = n, c.n = n, c.k = n;
  c.start = start;
  const double dn = static_cast<double>(n);
  c.flops = (vectors ? 9.0 : 4.0 / 3.0) * dn * dn * dn;
  c.bytes = 2.0 * dn * dn * t.bytes + dn * t.real_bytes;
  c.options = option("jobz", vectors ? "V" : "N") + option("uplo", fill_text(uplo));
  return record(handle, c);
}

cusolverStatus_t gesvd(cusolverDnHandle_t handle, const Type& t, signed char jobu,
                       signed char jobvt, std::int64_t m, std::int64_t n, const void* a,
                       std::int64_t lda, const void* s, const void* u, std::int64_t ldu,
                       const void* vt, std::int64_t ldvt, const void* work, double work_bytes,
                       int* info, const char* api) {
  const std::int64_t start = now_ns();
  if (!valid_shape(m, n, lda)) return bad(api, "invalid matrix " + shape_text(m, n, lda));
  if (m < n)
    return bad(api, "gesvd needs m >= n (got " + std::to_string(m) + " x " + std::to_string(n) +
                        "): cuSOLVER's restriction");
  const std::string jobs = "AaSsOoNn";
  if (jobs.find(static_cast<char>(jobu)) == std::string::npos ||
      jobs.find(static_cast<char>(jobvt)) == std::string::npos) {
    return bad(api, "jobu and jobvt must be one of A, S, O, N");
  }
  const auto upper = [](signed char c) { return static_cast<char>(c & ~0x20); };
  const char ju = upper(jobu), jv = upper(jobvt);
  const std::int64_t u_cols = ju == 'A' ? m : n;  // VT is n x n for A and S alike
  const bool u_out = ju == 'A' || ju == 'S', vt_out = jv == 'A' || jv == 'S';
  if (!device_matrix(a, m, n, lda, t.bytes) ||
      !device_array(s, static_cast<double>(n) * t.real_bytes) ||
      (u_out &&
       (ldu < std::max<std::int64_t>(1, m) || !device_matrix(u, m, u_cols, ldu, t.bytes))) ||
      (vt_out &&
       (ldvt < std::max<std::int64_t>(1, n) || !device_matrix(vt, n, n, ldvt, t.bytes)))) {
    return bad(api, "A, S, U or VT is not device memory of its size");
  }
  if (work != nullptr && !device_array(work, work_bytes)) {
    return bad(api, "the workspace " + pointer_text(work) + " is not device memory of " +
                        std::to_string(static_cast<std::int64_t>(work_bytes)) + " bytes");
  }
  if (!set_info(info, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  const bool vectors = ju != 'N' || jv != 'N';
  Call c;
  c.api = api, c.routine = "gesvd", c.type = t, c.m = m, c.n = n, c.k = n, c.start = start;
  const double dm = static_cast<double>(m), dn = static_cast<double>(n);
  c.flops = vectors ? 4.0 * dm * dm * dn + 8.0 * dm * dn * dn + 9.0 * dn * dn * dn
                    : 4.0 * dm * dn * dn - 4.0 / 3.0 * dn * dn * dn;
  c.bytes = 2.0 * dm * dn * t.bytes + dn * t.real_bytes +
            (u_out ? dm * static_cast<double>(u_cols) * t.bytes : 0.0) +
            (vt_out ? dn * dn * t.bytes : 0.0);
  c.options =
      option("jobu", std::string(1, ju).c_str()) + option("jobvt", std::string(1, jv).c_str());
  return record(handle, c);
}

}  // namespace
}  // namespace powertrain::emu::detail

namespace detail = powertrain::emu::detail;
using detail::solver;

// ---- handle, params, versions ----------------------------------------------------------------

PT_EXPORT cusolverStatus_t cusolverDnCreate(cusolverDnHandle_t* handle) {
  if (handle == nullptr) return detail::bad("cusolverDnCreate", "the handle pointer is NULL");
  auto* h = new detail::SolverHandle;
  {
    std::lock_guard<std::mutex> lock(solver().mutex);
    solver().handles.insert(h);
  }
  *handle = reinterpret_cast<cusolverDnHandle_t>(h);
  return CUSOLVER_STATUS_SUCCESS;
}

PT_EXPORT cusolverStatus_t cusolverDnDestroy(cusolverDnHandle_t handle) {
  std::lock_guard<std::mutex> lock(solver().mutex);
  if (solver().handles.erase(handle) == 0) {
    powertrain::emu::report_misuse("cusolverDnDestroy", "invalid or destroyed cuSOLVER handle " +
                                                            detail::pointer_text(handle));
    return CUSOLVER_STATUS_NOT_INITIALIZED;
  }
  delete reinterpret_cast<detail::SolverHandle*>(handle);
  return CUSOLVER_STATUS_SUCCESS;
}

PT_EXPORT cusolverStatus_t cusolverDnSetStream(cusolverDnHandle_t handle, cudaStream_t stream) {
  const char* api = "cusolverDnSetStream";
  detail::StreamRef ref;
  if (!detail::stream_or_fail(stream, false, api, &ref)) return CUSOLVER_STATUS_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(solver().mutex);
  if (solver().handles.count(handle) == 0) {
    powertrain::emu::report_misuse(api, "invalid or destroyed cuSOLVER handle");
    return CUSOLVER_STATUS_NOT_INITIALIZED;
  }
  reinterpret_cast<detail::SolverHandle*>(handle)->stream = stream;
  return CUSOLVER_STATUS_SUCCESS;
}

PT_EXPORT cusolverStatus_t cusolverDnGetStream(cusolverDnHandle_t handle, cudaStream_t* stream) {
  if (stream == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
  return detail::handle_stream(handle, "cusolverDnGetStream", stream)
             ? CUSOLVER_STATUS_SUCCESS
             : CUSOLVER_STATUS_NOT_INITIALIZED;
}

PT_EXPORT cusolverStatus_t cusolverDnCreateParams(cusolverDnParams_t* params) {
  if (params == nullptr) return detail::bad("cusolverDnCreateParams", "the pointer is NULL");
  // An opaque token: the only option (cusolverDnSetAdvOptions' algorithm) changes no estimate.
  auto* p = new char(0);
  {
    std::lock_guard<std::mutex> lock(solver().mutex);
    solver().params.insert(p);
  }
  *params = reinterpret_cast<cusolverDnParams_t>(p);
  return CUSOLVER_STATUS_SUCCESS;
}

PT_EXPORT cusolverStatus_t cusolverDnDestroyParams(cusolverDnParams_t params) {
  std::lock_guard<std::mutex> lock(solver().mutex);
  if (solver().params.erase(params) == 0) {
    powertrain::emu::report_misuse("cusolverDnDestroyParams",
                                   "invalid or destroyed params " + detail::pointer_text(params));
    return CUSOLVER_STATUS_INVALID_VALUE;
  }
  delete reinterpret_cast<char*>(params);
  return CUSOLVER_STATUS_SUCCESS;
}

PT_EXPORT cusolverStatus_t cusolverDnSetAdvOptions(cusolverDnParams_t params,
                                                   cusolverDnFunction_t function,
                                                   cusolverAlgMode_t algo) {
  (void)function, (void)algo;
  return detail::live(solver().params, params) ? CUSOLVER_STATUS_SUCCESS
                                               : CUSOLVER_STATUS_INVALID_VALUE;
}

PT_EXPORT cusolverStatus_t cusolverGetProperty(libraryPropertyType type, int* value) {
  if (value == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
  switch (type) {
    case MAJOR_VERSION:
      *value = CUSOLVER_VER_MAJOR;
      return CUSOLVER_STATUS_SUCCESS;
    case MINOR_VERSION:
      *value = CUSOLVER_VER_MINOR;
      return CUSOLVER_STATUS_SUCCESS;
    case PATCH_LEVEL:
      *value = CUSOLVER_VER_PATCH;
      return CUSOLVER_STATUS_SUCCESS;
    default:
      return CUSOLVER_STATUS_INVALID_VALUE;
  }
}

PT_EXPORT cusolverStatus_t cusolverGetVersion(int* version) {
  if (version == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
  *version = CUSOLVER_VERSION;
  return CUSOLVER_STATUS_SUCCESS;
}

// ---- S/D/C/Z entry points ----------------------------------------------------------------------

// One definition per precision: P is the letter, T the element type, R the real type, TYPE the
// detail::Type, ORM the name of the Q multiplication (ormqr/unmqr) and EV the eigensolver's
// (syevd/heevd).
#define PT_SOLVER_DENSE(P, T, R, TYPE, ORM, EV)                                                    \
  PT_EXPORT cusolverStatus_t cusolverDn##P##getrf_bufferSize(cusolverDnHandle_t handle, int m,     \
                                                             int n, T* a, int lda, int* lwork) {   \
    (void)a;                                                                                       \
    return detail::panel_buffer_size(handle, m, n, lda, lwork,                                     \
                                     "cusolverDn" #P "getrf_bufferSize");                          \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##getrf(cusolverDnHandle_t handle, int m, int n, T* a,   \
                                                  int lda, T* work, int* ipiv, int* info) {        \
    return detail::getrf(handle, TYPE, m, n, a, lda, work,                                         \
                         static_cast<double>(detail::panel_lwork(n)) * sizeof(T), ipiv,            \
                         sizeof(int), info, "cusolverDn" #P "getrf");                              \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##getrs(                                                 \
      cusolverDnHandle_t handle, cublasOperation_t trans, int n, int nrhs, const T* a, int lda,    \
      const int* ipiv, T* b, int ldb, int* info) {                                                 \
    const char* api = "cusolverDn" #P "getrs";                                                     \
    if (trans != CUBLAS_OP_N && trans != CUBLAS_OP_T && trans != CUBLAS_OP_C) {                    \
      return detail::bad(api, "trans is not CUBLAS_OP_N, _T or _C");                               \
    }                                                                                              \
    if (ipiv != nullptr && !detail::device_array(ipiv, static_cast<double>(n) * sizeof(int))) {    \
      return detail::bad(api, "the pivots are not device memory of n indices");                    \
    }                                                                                              \
    return detail::solve(handle, TYPE, "getrs", detail::option("trans", detail::op_text(trans)),   \
                         n, nrhs, a, lda, b, ldb, info, api, ipiv, sizeof(int),                    \
                         trans != CUBLAS_OP_N);                                                    \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##potrf_bufferSize(                                      \
      cusolverDnHandle_t handle, cublasFillMode_t uplo, int n, T* a, int lda, int* lwork) {        \
    (void)a, (void)uplo;                                                                           \
    return detail::panel_buffer_size(handle, n, n, lda, lwork,                                     \
                                     "cusolverDn" #P "potrf_bufferSize");                          \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##potrf(cusolverDnHandle_t handle,                       \
                                                  cublasFillMode_t uplo, int n, T* a, int lda,     \
                                                  T* work, int lwork, int* info) {                 \
    return detail::potrf(handle, TYPE, uplo, n, a, lda, work,                                      \
                         static_cast<double>(std::max(lwork, 0)) * sizeof(T), info,                \
                         "cusolverDn" #P "potrf");                                                 \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##potrs(cusolverDnHandle_t handle,                       \
                                                  cublasFillMode_t uplo, int n, int nrhs,          \
                                                  const T* a, int lda, T* b, int ldb, int* info) { \
    if (uplo != CUBLAS_FILL_MODE_LOWER && uplo != CUBLAS_FILL_MODE_UPPER) {                        \
      return detail::bad("cusolverDn" #P "potrs", "uplo is not CUBLAS_FILL_MODE_LOWER or _UPPER"); \
    }                                                                                              \
    return detail::solve(handle, TYPE, "potrs", detail::option("uplo", detail::fill_text(uplo)),   \
                         n, nrhs, a, lda, b, ldb, info, "cusolverDn" #P "potrs", nullptr, 4,       \
                         false, uplo == CUBLAS_FILL_MODE_LOWER);                                   \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##geqrf_bufferSize(cusolverDnHandle_t handle, int m,     \
                                                             int n, T* a, int lda, int* lwork) {   \
    (void)a;                                                                                       \
    return detail::panel_buffer_size(handle, m, n, lda, lwork,                                     \
                                     "cusolverDn" #P "geqrf_bufferSize");                          \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##geqrf(cusolverDnHandle_t handle, int m, int n, T* a,   \
                                                  int lda, T* tau, T* work, int lwork,             \
                                                  int* info) {                                     \
    return detail::geqrf(handle, TYPE, m, n, a, lda, tau, work,                                    \
                         static_cast<double>(std::max(lwork, 0)) * sizeof(T), info,                \
                         "cusolverDn" #P "geqrf");                                                 \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##ORM##_bufferSize(                                      \
      cusolverDnHandle_t handle, cublasSideMode_t side, cublasOperation_t trans, int m, int n,     \
      int k, const T* a, int lda, const T* tau, const T* c, int ldc, int* lwork) {                 \
    const char* api = "cusolverDn" #P #ORM "_bufferSize";                                          \
    const cusolverStatus_t s = detail::ormqr(handle, TYPE, side, trans, m, n, k, a, lda, tau, c,   \
                                             ldc, nullptr, 0.0, nullptr, false, api);              \
    if (s != CUSOLVER_STATUS_SUCCESS) return s;                                                    \
    cudaStream_t stream = nullptr;                                                                 \
    if (!detail::handle_stream(handle, api, &stream)) return CUSOLVER_STATUS_NOT_INITIALIZED;      \
    return detail::put_lwork(lwork, detail::panel_lwork(side == CUBLAS_SIDE_LEFT ? n : m), api);   \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##ORM(                                                   \
      cusolverDnHandle_t handle, cublasSideMode_t side, cublasOperation_t trans, int m, int n,     \
      int k, const T* a, int lda, const T* tau, T* c, int ldc, T* work, int lwork, int* info) {    \
    return detail::ormqr(handle, TYPE, side, trans, m, n, k, a, lda, tau, c, ldc, work,            \
                         static_cast<double>(std::max(lwork, 0)) * sizeof(T), info, true,          \
                         "cusolverDn" #P #ORM);                                                    \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##EV##_bufferSize(                                       \
      cusolverDnHandle_t handle, cusolverEigMode_t jobz, cublasFillMode_t uplo, int n, const T* a, \
      int lda, const R* w, int* lwork) {                                                           \
    const char* api = "cusolverDn" #P #EV "_bufferSize";                                           \
    const cusolverStatus_t s =                                                                     \
        detail::syevd(handle, TYPE, jobz, uplo, n, a, lda, w, nullptr, 0.0, nullptr, false, api);  \
    if (s != CUSOLVER_STATUS_SUCCESS) return s;                                                    \
    cudaStream_t stream = nullptr;                                                                 \
    if (!detail::handle_stream(handle, api, &stream)) return CUSOLVER_STATUS_NOT_INITIALIZED;      \
    return detail::put_lwork(lwork, detail::syevd_lwork(jobz, n), api);                            \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##EV(cusolverDnHandle_t handle, cusolverEigMode_t jobz,  \
                                               cublasFillMode_t uplo, int n, T* a, int lda, R* w,  \
                                               T* work, int lwork, int* info) {                    \
    return detail::syevd(handle, TYPE, jobz, uplo, n, a, lda, w, work,                             \
                         static_cast<double>(std::max(lwork, 0)) * sizeof(T), info, true,          \
                         "cusolverDn" #P #EV);                                                     \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##gesvd_bufferSize(cusolverDnHandle_t handle, int m,     \
                                                             int n, int* lwork) {                  \
    const char* api = "cusolverDn" #P "gesvd_bufferSize";                                          \
    if (m < 0 || n < 0) return detail::bad(api, "negative dimensions");                            \
    cudaStream_t stream = nullptr;                                                                 \
    if (!detail::handle_stream(handle, api, &stream)) return CUSOLVER_STATUS_NOT_INITIALIZED;      \
    return detail::put_lwork(lwork, detail::gesvd_lwork(m, n), api);                               \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##gesvd(                                                 \
      cusolverDnHandle_t handle, signed char jobu, signed char jobvt, int m, int n, T* a, int lda, \
      R* s, T* u, int ldu, T* vt, int ldvt, T* work, int lwork, R* rwork, int* info) {             \
    (void)rwork;                                                                                   \
    return detail::gesvd(handle, TYPE, jobu, jobvt, m, n, a, lda, s, u, ldu, vt, ldvt, work,       \
                         static_cast<double>(std::max(lwork, 0)) * sizeof(T), info,                \
                         "cusolverDn" #P "gesvd");                                                 \
  }

PT_SOLVER_DENSE(S, float, float, detail::kS, ormqr, syevd)
PT_SOLVER_DENSE(D, double, double, detail::kD, ormqr, syevd)
PT_SOLVER_DENSE(C, cuComplex, float, detail::kC, unmqr, heevd)
PT_SOLVER_DENSE(Z, cuDoubleComplex, double, detail::kZ, unmqr, heevd)
#undef PT_SOLVER_DENSE

// ---- the 64-bit (X) API ----------------------------------------------------------------------

namespace {

// The element type of an X call (A's type; the compute type must be the same precision class),
// or false after reporting the misuse.
bool x_type(cusolverDnHandle_t handle, cusolverDnParams_t params, cudaDataType a,
            cudaDataType compute, const char* api, detail::Type* out) {
  (void)handle;
  if (params != nullptr && !detail::live(solver().params, params)) {
    powertrain::emu::report_misuse(api,
                                   "invalid or destroyed params " + detail::pointer_text(params));
    return false;
  }
  detail::Type compute_type;
  if (!detail::type_of(a, out) || !detail::type_of(compute, &compute_type)) {
    powertrain::emu::report_misuse(
        api, "data type " + std::to_string(static_cast<int>(a)) + " or compute type " +
                 std::to_string(static_cast<int>(compute)) +
                 " is not one of CUDA_R_32F, CUDA_R_64F, CUDA_C_32F, CUDA_C_64F");
    return false;
  }
  return true;
}

// The workspace query of the X factorizations (getrf, potrf, geqrf): one panel of n columns.
cusolverStatus_t x_panel_buffer_size(cusolverDnHandle_t handle, cusolverDnParams_t params,
                                     int64_t m, int64_t n, cudaDataType type_a, int64_t lda,
                                     cudaDataType compute, size_t* device_bytes, size_t* host_bytes,
                                     const char* api) {
  detail::Type t;
  if (!x_type(handle, params, type_a, compute, api, &t)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (!detail::valid_shape(m, n, lda)) {
    return detail::bad(api, "invalid matrix " + detail::shape_text(m, n, lda));
  }
  cudaStream_t stream = nullptr;
  if (!detail::handle_stream(handle, api, &stream)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  return detail::put_bytes(device_bytes, host_bytes, detail::panel_lwork(n), t, api);
}

}  // namespace

PT_EXPORT cusolverStatus_t cusolverDnXgetrf_bufferSize(
    cusolverDnHandle_t handle, cusolverDnParams_t params, int64_t m, int64_t n, cudaDataType type_a,
    const void* a, int64_t lda, cudaDataType compute, size_t* device_bytes, size_t* host_bytes) {
  (void)a;
  return x_panel_buffer_size(handle, params, m, n, type_a, lda, compute, device_bytes, host_bytes,
                             "cusolverDnXgetrf_bufferSize");
}

PT_EXPORT cusolverStatus_t cusolverDnXgetrf(cusolverDnHandle_t handle, cusolverDnParams_t params,
                                            int64_t m, int64_t n, cudaDataType type_a, void* a,
                                            int64_t lda, int64_t* ipiv, cudaDataType compute,
                                            void* device_buffer, size_t device_bytes,
                                            void* host_buffer, size_t host_bytes, int* info) {
  (void)host_buffer, (void)host_bytes;
  const char* api = "cusolverDnXgetrf";
  detail::Type t;
  if (!x_type(handle, params, type_a, compute, api, &t)) return CUSOLVER_STATUS_INVALID_VALUE;
  return detail::getrf(handle, t, m, n, a, lda, device_buffer, static_cast<double>(device_bytes),
                       ipiv, sizeof(int64_t), info, api);
}

PT_EXPORT cusolverStatus_t cusolverDnXgetrs(cusolverDnHandle_t handle, cusolverDnParams_t params,
                                            cublasOperation_t trans, int64_t n, int64_t nrhs,
                                            cudaDataType type_a, const void* a, int64_t lda,
                                            const int64_t* ipiv, cudaDataType type_b, void* b,
                                            int64_t ldb, int* info) {
  const char* api = "cusolverDnXgetrs";
  detail::Type t;
  if (!x_type(handle, params, type_a, type_b, api, &t)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (type_a != type_b) return detail::bad(api, "A's and B's data types differ");
  if (trans != CUBLAS_OP_N && trans != CUBLAS_OP_T && trans != CUBLAS_OP_C) {
    return detail::bad(api, "trans is not CUBLAS_OP_N, _T or _C");
  }
  if (ipiv != nullptr && !detail::device_array(ipiv, static_cast<double>(n) * sizeof(int64_t))) {
    return detail::bad(api, "the pivots are not device memory of n indices");
  }
  return detail::solve(handle, t, "getrs", detail::option("trans", detail::op_text(trans)), n, nrhs,
                       a, lda, b, ldb, info, api, ipiv, sizeof(int64_t), trans != CUBLAS_OP_N);
}

PT_EXPORT cusolverStatus_t cusolverDnXpotrf_bufferSize(cusolverDnHandle_t handle,
                                                       cusolverDnParams_t params,
                                                       cublasFillMode_t uplo, int64_t n,
                                                       cudaDataType type_a, const void* a,
                                                       int64_t lda, cudaDataType compute,
                                                       size_t* device_bytes, size_t* host_bytes) {
  (void)a, (void)uplo;
  return x_panel_buffer_size(handle, params, n, n, type_a, lda, compute, device_bytes, host_bytes,
                             "cusolverDnXpotrf_bufferSize");
}

PT_EXPORT cusolverStatus_t cusolverDnXpotrf(cusolverDnHandle_t handle, cusolverDnParams_t params,
                                            cublasFillMode_t uplo, int64_t n, cudaDataType type_a,
                                            void* a, int64_t lda, cudaDataType compute,
                                            void* device_buffer, size_t device_bytes,
                                            void* host_buffer, size_t host_bytes, int* info) {
  (void)host_buffer, (void)host_bytes;
  const char* api = "cusolverDnXpotrf";
  detail::Type t;
  if (!x_type(handle, params, type_a, compute, api, &t)) return CUSOLVER_STATUS_INVALID_VALUE;
  return detail::potrf(handle, t, uplo, n, a, lda, device_buffer, static_cast<double>(device_bytes),
                       info, api);
}

PT_EXPORT cusolverStatus_t cusolverDnXpotrs(cusolverDnHandle_t handle, cusolverDnParams_t params,
                                            cublasFillMode_t uplo, int64_t n, int64_t nrhs,
                                            cudaDataType type_a, const void* a, int64_t lda,
                                            cudaDataType type_b, void* b, int64_t ldb, int* info) {
  const char* api = "cusolverDnXpotrs";
  detail::Type t;
  if (!x_type(handle, params, type_a, type_b, api, &t)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (type_a != type_b) return detail::bad(api, "A's and B's data types differ");
  if (uplo != CUBLAS_FILL_MODE_LOWER && uplo != CUBLAS_FILL_MODE_UPPER) {
    return detail::bad(api, "uplo is not CUBLAS_FILL_MODE_LOWER or _UPPER");
  }
  return detail::solve(handle, t, "potrs", detail::option("uplo", detail::fill_text(uplo)), n, nrhs,
                       a, lda, b, ldb, info, api, nullptr, 4, false,
                       uplo == CUBLAS_FILL_MODE_LOWER);
}

PT_EXPORT cusolverStatus_t cusolverDnXgeqrf_bufferSize(
    cusolverDnHandle_t handle, cusolverDnParams_t params, int64_t m, int64_t n, cudaDataType type_a,
    const void* a, int64_t lda, cudaDataType type_tau, const void* tau, cudaDataType compute,
    size_t* device_bytes, size_t* host_bytes) {
  (void)a, (void)tau, (void)type_tau;
  return x_panel_buffer_size(handle, params, m, n, type_a, lda, compute, device_bytes, host_bytes,
                             "cusolverDnXgeqrf_bufferSize");
}

PT_EXPORT cusolverStatus_t cusolverDnXgeqrf(cusolverDnHandle_t handle, cusolverDnParams_t params,
                                            int64_t m, int64_t n, cudaDataType type_a, void* a,
                                            int64_t lda, cudaDataType type_tau, void* tau,
                                            cudaDataType compute, void* device_buffer,
                                            size_t device_bytes, void* host_buffer,
                                            size_t host_bytes, int* info) {
  (void)host_buffer, (void)host_bytes, (void)type_tau;
  const char* api = "cusolverDnXgeqrf";
  detail::Type t;
  if (!x_type(handle, params, type_a, compute, api, &t)) return CUSOLVER_STATUS_INVALID_VALUE;
  return detail::geqrf(handle, t, m, n, a, lda, tau, device_buffer,
                       static_cast<double>(device_bytes), info, api);
}

PT_EXPORT cusolverStatus_t cusolverDnXsyevd_bufferSize(
    cusolverDnHandle_t handle, cusolverDnParams_t params, cusolverEigMode_t jobz,
    cublasFillMode_t uplo, int64_t n, cudaDataType type_a, const void* a, int64_t lda,
    cudaDataType type_w, const void* w, cudaDataType compute, size_t* device_bytes,
    size_t* host_bytes) {
  (void)type_w;
  const char* api = "cusolverDnXsyevd_bufferSize";
  detail::Type t;
  if (!x_type(handle, params, type_a, compute, api, &t)) return CUSOLVER_STATUS_INVALID_VALUE;
  const cusolverStatus_t s =
      detail::syevd(handle, t, jobz, uplo, n, a, lda, w, nullptr, 0.0, nullptr, false, api);
  if (s != CUSOLVER_STATUS_SUCCESS) return s;
  cudaStream_t stream = nullptr;
  if (!detail::handle_stream(handle, api, &stream)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  return detail::put_bytes(device_bytes, host_bytes, detail::syevd_lwork(jobz, n), t, api);
}

PT_EXPORT cusolverStatus_t cusolverDnXsyevd(cusolverDnHandle_t handle, cusolverDnParams_t params,
                                            cusolverEigMode_t jobz, cublasFillMode_t uplo,
                                            int64_t n, cudaDataType type_a, void* a, int64_t lda,
                                            cudaDataType type_w, void* w, cudaDataType compute,
                                            void* device_buffer, size_t device_bytes,
                                            void* host_buffer, size_t host_bytes, int* info) {
  (void)host_buffer, (void)host_bytes, (void)type_w;
  const char* api = "cusolverDnXsyevd";
  detail::Type t;
  if (!x_type(handle, params, type_a, compute, api, &t)) return CUSOLVER_STATUS_INVALID_VALUE;
  return detail::syevd(handle, t, jobz, uplo, n, a, lda, w, device_buffer,
                       static_cast<double>(device_bytes), info, true, api);
}

// ---- the Jacobi eigen/SVD solvers, batched Cholesky, generalized and selective eigensolvers,
// orgqr, potri, sytrf, and the approximate strided SVD
// --------------------------------------------- As the routines above: validated, recorded as a
// `gemm` record with the routine's FLOPs (model, not measured; complex × 4), nothing computed
// (`info` 0 where backed). Jacobi sweeps are not run: a call counts min(max sweeps, 10) sweeps —
// double-precision Jacobi converges in about 6-10 (Demmel & Veselić 1992) — and reports them
// through cusolverDnX{gesvdj,syevj}GetSweeps, with the tolerance as the residual. FLOPs per sweep:
// one-sided Jacobi SVD 3·m·n² (+ 3·n³ for V), the two-sided symmetric Jacobi 4·n³ (+ 2·n³ for the
// vectors). Generalized eigenproblems add Cholesky of B (n³/3), the reduction to standard form
// (2·n³) and, with vectors, the back transform (n³). syevdx/heevdx count as syevd; orgqr 4mnk −
// 2(m+n)k² + 4/3·k³; potri 2/3·n³; sytrf n³/3; potrfBatched n³/3 and potrsBatched 2·n²·nrhs per
// matrix; gesvdaStridedBatched (rank r) the Gram matrix 2mn², its eigensolve 9n³ and U's r columns
// 2mnr per matrix. Workspaces: the Jacobi solvers m·n + n² elements (+ n² per matrix batched), the
// selective and generalized eigensolvers syevd's, orgqr/potri/sytrf a 64-column panel.

namespace powertrain::emu::detail {
namespace {

struct JacobiInfo {
  double tolerance = 1e-7;  // cuSOLVER's default is machine precision; any positive value works
  int max_sweeps = 100;
  int sort = 1;
  double residual = 0.0;
  int sweeps = 0;
};

std::mutex& jacobi_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::unordered_set<const void*>& jacobi_infos() {
  static auto* s = new std::unordered_set<const void*>;
  return *s;
}

JacobiInfo* jacobi(const void* info, const char* api) {
  std::lock_guard<std::mutex> lock(jacobi_mutex());
  if (jacobi_infos().count(info) == 0) {
    report_misuse(api, "invalid or destroyed Jacobi info " + pointer_text(info));
    return nullptr;
  }
  return static_cast<JacobiInfo*>(const_cast<void*>(info));
}

constexpr int kCountedSweeps = 10;

// The sweeps a Jacobi call counts, recorded on its info (NULL params: the defaults).
int run_sweeps(const void* params, const char* api, bool* ok) {
  *ok = true;
  if (params == nullptr) return kCountedSweeps;
  JacobiInfo* j = jacobi(params, api);
  if (j == nullptr) {
    *ok = false;
    return 0;
  }
  std::lock_guard<std::mutex> lock(jacobi_mutex());
  j->sweeps = std::min(j->max_sweeps, kCountedSweeps);
  j->residual = j->tolerance;
  return j->sweeps;
}

// `count` ints of device memory, set to 0 where backed (batched info arrays).
bool set_infos(int* info, std::int64_t count, const char* api) {
  const PointerInfo p = info != nullptr ? lookup_pointer(info) : PointerInfo{};
  if (!p.known || !p.device_side || p.available < static_cast<std::size_t>(count) * sizeof(int)) {
    report_misuse(api, "info " + pointer_text(info) + " is not device memory of " +
                           std::to_string(count) + " ints");
    return false;
  }
  if (p.backed) std::memset(info, 0, static_cast<std::size_t>(count) * sizeof(int));
  return true;
}

bool valid_jobz(cusolverEigMode_t jobz) {
  return jobz == CUSOLVER_EIG_MODE_NOVECTOR || jobz == CUSOLVER_EIG_MODE_VECTOR;
}

cusolverStatus_t checked_lwork(cusolverDnHandle_t handle, int* lwork, double elements,
                               const char* api) {
  cudaStream_t stream = nullptr;
  if (!handle_stream(handle, api, &stream)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  return put_lwork(lwork, static_cast<std::int64_t>(std::min(elements, 2147483647.0)), api);
}

// gesvdj (batch 1) and gesvdjBatched: the SVD by one-sided Jacobi.
cusolverStatus_t gesvdj(cusolverDnHandle_t handle, const Type& t, cusolverEigMode_t jobz, int econ,
                        std::int64_t m, std::int64_t n, const void* a, std::int64_t lda,
                        const void* s, const void* u, std::int64_t ldu, const void* v,
                        std::int64_t ldv, int* info, const void* params, std::int64_t batch,
                        const char* api) {
  const std::int64_t start = now_ns();
  if (!valid_shape(m, n, lda) || !valid_jobz(jobz) || batch < 1 ||
      (batch > 1 && (m > 32 || n > 32))) {
    return bad(api, "invalid matrix " + shape_text(m, n, lda) + ", jobz or batch " +
                        std::to_string(batch) + " (batched needs m, n <= 32)");
  }
  const bool vectors = jobz == CUSOLVER_EIG_MODE_VECTOR;
  const std::int64_t p = std::min(m, n), u_cols = econ != 0 ? p : m, v_cols = econ != 0 ? p : n;
  const double count = static_cast<double>(batch);
  if (!device_matrix(a, m, n * batch, lda, t.bytes) ||
      !device_array(s, static_cast<double>(p) * count * t.real_bytes) ||
      (vectors && (ldu < std::max<std::int64_t>(1, m) || ldv < std::max<std::int64_t>(1, n) ||
                   !device_matrix(u, m, u_cols * batch, ldu, t.bytes) ||
                   !device_matrix(v, n, v_cols * batch, ldv, t.bytes)))) {
    return bad(api, "A, S, U or V is not device memory of its size");
  }
  if (!set_infos(info, batch, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  bool ok = true;
  const int sweeps = run_sweeps(params, api, &ok);
  if (!ok) return CUSOLVER_STATUS_INVALID_VALUE;
  Call c;
  c.api = api, c.routine = batch > 1 ? "gesvdjBatched" : "gesvdj", c.type = t, c.m = m, c.n = n;
  c.k = p, c.start = start;
  const double dm = static_cast<double>(m), dn = static_cast<double>(n);
  c.flops = count * sweeps * (3.0 * dm * dn * dn + (vectors ? 3.0 * dn * dn * dn : 0.0));
  c.bytes =
      count *
      (2.0 * dm * dn * t.bytes + static_cast<double>(p) * t.real_bytes +
       (vectors ? (dm * static_cast<double>(u_cols) + dn * static_cast<double>(v_cols)) * t.bytes
                : 0.0));
  c.options =
      option("jobz", vectors ? "V" : "N") + option("sweeps", sweeps) + option("batch", batch);
  return record(handle, c);
}

// syevj/heevj (batch 1) and the batched form, with `generalized` for sygvj/hegvj.
cusolverStatus_t syevj(cusolverDnHandle_t handle, const Type& t, cusolverEigMode_t jobz,
                       cublasFillMode_t uplo, std::int64_t n, const void* a, std::int64_t lda,
                       const void* b, std::int64_t ldb, const void* w, int* info,
                       const void* params, std::int64_t batch, bool generalized, const char* api) {
  const std::int64_t start = now_ns();
  if (!valid_shape(n, n, lda) || !valid_jobz(jobz) || batch < 1 || (batch > 1 && n > 32) ||
      (generalized && ldb < std::max<std::int64_t>(1, n))) {
    return bad(api, "invalid matrix " + shape_text(n, n, lda) + ", jobz, ldb or batch " +
                        std::to_string(batch) + " (batched needs n <= 32)");
  }
  const double count = static_cast<double>(batch);
  if (!device_matrix(a, n, n * batch, lda, t.bytes) ||
      (generalized && !device_matrix(b, n, n, ldb, t.bytes)) ||
      !device_array(w, static_cast<double>(n) * count * t.real_bytes)) {
    return bad(api, "A, B or W is not device memory of its size");
  }
  if (!set_infos(info, batch, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  bool ok = true;
  const int sweeps = run_sweeps(params, api, &ok);
  if (!ok) return CUSOLVER_STATUS_INVALID_VALUE;
  const bool vectors = jobz == CUSOLVER_EIG_MODE_VECTOR;
  const double dn = static_cast<double>(n);
  Call c;
  c.api = api;
  c.routine = generalized ? (t.complex ? "hegvj" : "sygvj")
              : batch > 1 ? (t.complex ? "heevjBatched" : "syevjBatched")
                          : (t.complex ? "heevj" : "syevj");
  c.type = t, c.m = n, c.n = n, c.k = n, c.start = start;
  c.flops = count * sweeps * (4.0 + (vectors ? 2.0 : 0.0)) * dn * dn * dn +
            (generalized ? (1.0 / 3.0 + 2.0 + (vectors ? 1.0 : 0.0)) * dn * dn * dn : 0.0);
  c.bytes = count * (2.0 * dn * dn * t.bytes + dn * t.real_bytes) +
            (generalized ? 2.0 * dn * dn * t.bytes : 0.0);
  c.options = option("jobz", vectors ? "V" : "N") + option("uplo", fill_text(uplo)) +
              option("sweeps", sweeps) + option("batch", batch);
  return record(handle, c);
}

// syevdx/heevdx (`b` NULL) and sygvd/hegvd (`b` given: A·x = λ·B·x).
cusolverStatus_t eigen_dc(cusolverDnHandle_t handle, const Type& t, cusolverEigMode_t jobz,
                          cusolverEigRange_t range, cublasFillMode_t uplo, std::int64_t n,
                          const void* a, std::int64_t lda, const void* b, std::int64_t ldb, int il,
                          int iu, int* meig, const void* w, int* info, const char* routine,
                          const char* api) {
  const std::int64_t start = now_ns();
  if (!valid_shape(n, n, lda) || !valid_jobz(jobz) ||
      (range != CUSOLVER_EIG_RANGE_ALL && range != CUSOLVER_EIG_RANGE_I &&
       range != CUSOLVER_EIG_RANGE_V) ||
      (range == CUSOLVER_EIG_RANGE_I && (il < 1 || iu < il || iu > n)) ||
      (b != nullptr && ldb < std::max<std::int64_t>(1, n))) {
    return bad(api, "invalid matrix " + shape_text(n, n, lda) + ", jobz, range or il/iu");
  }
  if (!device_matrix(a, n, n, lda, t.bytes) ||
      (b != nullptr && !device_matrix(b, n, n, ldb, t.bytes)) ||
      !device_array(w, static_cast<double>(n) * t.real_bytes)) {
    return bad(api, "A, B or W is not device memory of its size");
  }
  if (!set_info(info, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (meig != nullptr) *meig = range == CUSOLVER_EIG_RANGE_I ? iu - il + 1 : static_cast<int>(n);
  const bool vectors = jobz == CUSOLVER_EIG_MODE_VECTOR;
  const double dn = static_cast<double>(n);
  Call c;
  c.api = api, c.routine = routine, c.type = t, c.m = n, c.n = n, c.k = n, c.start = start;
  c.flops = (vectors ? 9.0 : 4.0 / 3.0) * dn * dn * dn +
            (b != nullptr ? (1.0 / 3.0 + 2.0 + (vectors ? 1.0 : 0.0)) * dn * dn * dn : 0.0);
  c.bytes = 2.0 * dn * dn * t.bytes * (b != nullptr ? 2.0 : 1.0) + dn * t.real_bytes;
  c.options = option("jobz", vectors ? "V" : "N") + option("uplo", fill_text(uplo));
  return record(handle, c);
}

// One n × n matrix routine of known FLOPs (orgqr, potri, sytrf).
cusolverStatus_t square_routine(cusolverDnHandle_t handle, const Type& t, const char* routine,
                                std::int64_t m, std::int64_t n, std::int64_t k, const void* a,
                                std::int64_t lda, int* info, double flops,
                                const std::string& options, const char* api) {
  const std::int64_t start = now_ns();
  if (!valid_shape(m, n, lda) || k < 0 || k > n)
    return bad(api, "invalid matrix " + shape_text(m, n, lda));
  if (!device_matrix(a, m, n, lda, t.bytes)) return bad(api, "A is not device memory of its size");
  if (!set_info(info, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  Call c;
  c.api = api, c.routine = routine, c.type = t, c.m = m, c.n = n,
  c.k = std::max<std::int64_t>(k, 1);
  c.start = start, c.flops = flops, c.options = options;
  c.bytes = 2.0 * static_cast<double>(m) * static_cast<double>(n) * t.bytes;
  return record(handle, c);
}

// potrfBatched / potrsBatched: arrays of `batch` matrix pointers in device memory.
cusolverStatus_t cholesky_batched(cusolverDnHandle_t handle, const Type& t, cublasFillMode_t uplo,
                                  std::int64_t n, std::int64_t nrhs, const void* a_array,
                                  std::int64_t lda, const void* b_array, std::int64_t ldb,
                                  int* info, std::int64_t info_count, std::int64_t batch,
                                  const char* api) {
  const std::int64_t start = now_ns();
  const bool solve = b_array != nullptr;
  if (!valid_shape(n, n, lda) || batch < 1 ||
      (solve && (nrhs != 1 || ldb < std::max<std::int64_t>(1, n))) ||
      (uplo != CUBLAS_FILL_MODE_LOWER && uplo != CUBLAS_FILL_MODE_UPPER)) {
    return bad(api, "invalid matrix " + shape_text(n, n, lda) + ", uplo, nrhs (only 1) or batch");
  }
  const double pointers = static_cast<double>(batch) * sizeof(void*);
  if (!device_array(a_array, pointers) || (solve && !device_array(b_array, pointers))) {
    return bad(api, "the pointer arrays are not device memory of batchSize pointers");
  }
  if (!set_infos(info, info_count, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  const double dn = static_cast<double>(n), count = static_cast<double>(batch);
  Call c;
  c.api = api, c.routine = solve ? "potrsBatched" : "potrfBatched", c.type = t, c.m = n, c.n = n;
  c.k = solve ? nrhs : n, c.start = start;
  c.flops = count * (solve ? 2.0 * dn * dn * static_cast<double>(nrhs) : dn * dn * dn / 3.0);
  c.bytes = count *
            ((solve ? 1.0 : 2.0) * dn * dn + (solve ? 2.0 * dn * static_cast<double>(nrhs) : 0.0)) *
            t.bytes;
  c.options = option("uplo", fill_text(uplo)) + option("batch", batch);
  return record(handle, c);
}

// gesvdaStridedBatched: the rank-r approximate SVD of `batch` strided matrices.
cusolverStatus_t gesvda(cusolverDnHandle_t handle, const Type& t, cusolverEigMode_t jobz, int rank,
                        std::int64_t m, std::int64_t n, const void* a, std::int64_t lda,
                        long long stride_a, const void* s, long long stride_s, const void* u,
                        std::int64_t ldu, long long stride_u, const void* v, std::int64_t ldv,
                        long long stride_v, int* info, double* residual_norms, std::int64_t batch,
                        const char* api) {
  const std::int64_t start = now_ns();
  if (!valid_shape(m, n, lda) || !valid_jobz(jobz) || m < n || rank < 1 || rank > n || batch < 1 ||
      stride_a < lda * n || stride_s < rank) {
    return bad(api, "invalid matrix " + shape_text(m, n, lda) + ", jobz, rank " +
                        std::to_string(rank) + " (1..n, m >= n), strides or batch");
  }
  const bool vectors = jobz == CUSOLVER_EIG_MODE_VECTOR;
  const double count = static_cast<double>(batch);
  if (!device_array(
          a,
          (static_cast<double>(stride_a) * (count - 1) + static_cast<double>(lda) * n) * t.bytes) ||
      !device_array(s, (static_cast<double>(stride_s) * count) * t.real_bytes) ||
      (vectors && (!device_array(u, (static_cast<double>(stride_u) * (count - 1) +
                                     static_cast<double>(ldu) * rank) *
                                        t.bytes) ||
                   !device_array(v, (static_cast<double>(stride_v) * (count - 1) +
                                     static_cast<double>(ldv) * rank) *
                                        t.bytes)))) {
    return bad(api, "A, S, U or V is not device memory of its strided size");
  }
  if (!set_infos(info, batch, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (residual_norms != nullptr) std::fill(residual_norms, residual_norms + batch, 0.0);
  const double dm = static_cast<double>(m), dn = static_cast<double>(n), r = rank;
  Call c;
  c.api = api, c.routine = "gesvdaStridedBatched", c.type = t, c.m = m, c.n = n, c.k = rank;
  c.start = start;
  c.flops = count * (2.0 * dm * dn * dn + 9.0 * dn * dn * dn + (vectors ? 2.0 * dm * dn * r : 0.0));
  c.bytes = count * (dm * dn + r + (vectors ? (dm + dn) * r : 0.0)) * t.bytes;
  c.options = option("jobz", vectors ? "V" : "N") + option("rank", rank) + option("batch", batch);
  return record(handle, c);
}

}  // namespace
}  // namespace powertrain::emu::detail

#define PT_JACOBI_INFO(KIND, TYPE)                                                            \
  PT_EXPORT cusolverStatus_t cusolverDnCreate##KIND##Info(TYPE* info) {                       \
    if (info == nullptr) return detail::bad("cusolverDnCreate" #KIND "Info", "info is NULL"); \
    auto* j = new detail::JacobiInfo;                                                         \
    std::lock_guard<std::mutex> lock(detail::jacobi_mutex());                                 \
    detail::jacobi_infos().insert(j);                                                         \
    *info = reinterpret_cast<TYPE>(j);                                                        \
    return CUSOLVER_STATUS_SUCCESS;                                                           \
  }                                                                                           \
  PT_EXPORT cusolverStatus_t cusolverDnDestroy##KIND##Info(TYPE info) {                       \
    std::lock_guard<std::mutex> lock(detail::jacobi_mutex());                                 \
    if (detail::jacobi_infos().erase(info) == 0) {                                            \
      return detail::bad("cusolverDnDestroy" #KIND "Info",                                    \
                         "invalid or destroyed info " + detail::pointer_text(info));          \
    }                                                                                         \
    delete reinterpret_cast<detail::JacobiInfo*>(info);                                       \
    return CUSOLVER_STATUS_SUCCESS;                                                           \
  }
PT_JACOBI_INFO(Gesvdj, gesvdjInfo_t)
PT_JACOBI_INFO(Syevj, syevjInfo_t)
#undef PT_JACOBI_INFO

#define PT_JACOBI_SETTINGS(X, TYPE)                                                              \
  PT_EXPORT cusolverStatus_t cusolverDnX##X##SetTolerance(TYPE info, double tolerance) {         \
    detail::JacobiInfo* j = detail::jacobi(info, "cusolverDnX" #X "SetTolerance");               \
    if (j == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;                                      \
    if (!(tolerance > 0)) return detail::bad("cusolverDnX" #X "SetTolerance", "tolerance <= 0"); \
    j->tolerance = tolerance;                                                                    \
    return CUSOLVER_STATUS_SUCCESS;                                                              \
  }                                                                                              \
  PT_EXPORT cusolverStatus_t cusolverDnX##X##SetMaxSweeps(TYPE info, int max_sweeps) {           \
    detail::JacobiInfo* j = detail::jacobi(info, "cusolverDnX" #X "SetMaxSweeps");               \
    if (j == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;                                      \
    if (max_sweeps < 1) return detail::bad("cusolverDnX" #X "SetMaxSweeps", "max_sweeps < 1");   \
    j->max_sweeps = max_sweeps;                                                                  \
    return CUSOLVER_STATUS_SUCCESS;                                                              \
  }                                                                                              \
  PT_EXPORT cusolverStatus_t cusolverDnX##X##SetSortEig(TYPE info, int sort_eig) {               \
    detail::JacobiInfo* j = detail::jacobi(info, "cusolverDnX" #X "SetSortEig");                 \
    if (j == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;                                      \
    j->sort = sort_eig;                                                                          \
    return CUSOLVER_STATUS_SUCCESS;                                                              \
  }                                                                                              \
  PT_EXPORT cusolverStatus_t cusolverDnX##X##GetResidual(cusolverDnHandle_t handle, TYPE info,   \
                                                         double* residual) {                     \
    (void)handle;                                                                                \
    detail::JacobiInfo* j = detail::jacobi(info, "cusolverDnX" #X "GetResidual");                \
    if (j == nullptr || residual == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;               \
    *residual = j->residual;                                                                     \
    return CUSOLVER_STATUS_SUCCESS;                                                              \
  }                                                                                              \
  PT_EXPORT cusolverStatus_t cusolverDnX##X##GetSweeps(cusolverDnHandle_t handle, TYPE info,     \
                                                       int* executed_sweeps) {                   \
    (void)handle;                                                                                \
    detail::JacobiInfo* j = detail::jacobi(info, "cusolverDnX" #X "GetSweeps");                  \
    if (j == nullptr || executed_sweeps == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;        \
    *executed_sweeps = j->sweeps;                                                                \
    return CUSOLVER_STATUS_SUCCESS;                                                              \
  }
PT_JACOBI_SETTINGS(gesvdj, gesvdjInfo_t)
PT_JACOBI_SETTINGS(syevj, syevjInfo_t)
#undef PT_JACOBI_SETTINGS

// Per type: P the prefix, T the element, R its real type, EV syev/heev, GV sygv/hegv, ORG
// orgqr/ungqr.
#define PT_SOLVER_MORE(P, T, R, TYPE, EV, GV, ORG)                                                 \
  PT_EXPORT cusolverStatus_t cusolverDn##P##gesvdj_bufferSize(                                     \
      cusolverDnHandle_t handle, cusolverEigMode_t jobz, int econ, int m, int n, const T* A,       \
      int lda, const R* S, const T* U, int ldu, const T* V, int ldv, int* lwork,                   \
      gesvdjInfo_t params) {                                                                       \
    (void)jobz, (void)econ, (void)A, (void)lda, (void)S, (void)U, (void)ldu, (void)V, (void)ldv,   \
        (void)params;                                                                              \
    return detail::checked_lwork(handle, lwork, double(m) * n + double(n) * n,                     \
                                 "cusolverDn" #P "gesvdj_bufferSize");                             \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##gesvdj(                                                \
      cusolverDnHandle_t handle, cusolverEigMode_t jobz, int econ, int m, int n, T* A, int lda,    \
      R* S, T* U, int ldu, T* V, int ldv, T* work, int lwork, int* info, gesvdjInfo_t params) {    \
    (void)work, (void)lwork;                                                                       \
    return detail::gesvdj(handle, TYPE, jobz, econ, m, n, A, lda, S, U, ldu, V, ldv, info, params, \
                          1, "cusolverDn" #P "gesvdj");                                            \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##gesvdjBatched_bufferSize(                              \
      cusolverDnHandle_t handle, cusolverEigMode_t jobz, int m, int n, const T* A, int lda,        \
      const R* S, const T* U, int ldu, const T* V, int ldv, int* lwork, gesvdjInfo_t params,       \
      int batchSize) {                                                                             \
    (void)jobz, (void)A, (void)lda, (void)S, (void)U, (void)ldu, (void)V, (void)ldv, (void)params; \
    return detail::checked_lwork(handle, lwork, (double(m) * n + double(n) * n) * batchSize,       \
                                 "cusolverDn" #P "gesvdjBatched_bufferSize");                      \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##gesvdjBatched(                                         \
      cusolverDnHandle_t handle, cusolverEigMode_t jobz, int m, int n, T* A, int lda, R* S, T* U,  \
      int ldu, T* V, int ldv, T* work, int lwork, int* info, gesvdjInfo_t params, int batchSize) { \
    (void)work, (void)lwork;                                                                       \
    return detail::gesvdj(handle, TYPE, jobz, 0, m, n, A, lda, S, U, ldu, V, ldv, info, params,    \
                          batchSize, "cusolverDn" #P "gesvdjBatched");                             \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##gesvdaStridedBatched_bufferSize(                       \
      cusolverDnHandle_t handle, cusolverEigMode_t jobz, int rank, int m, int n, const T* d_A,     \
      int lda, long long int strideA, const R* d_S, long long int strideS, const T* d_U, int ldu,  \
      long long int strideU, const T* d_V, int ldv, long long int strideV, int* lwork,             \
      int batchSize) {                                                                             \
    (void)jobz, (void)rank, (void)d_A, (void)lda, (void)strideA, (void)d_S, (void)strideS,         \
        (void)d_U, (void)ldu, (void)strideU, (void)d_V, (void)ldv, (void)strideV, (void)batchSize; \
    return detail::checked_lwork(handle, lwork, double(m) * n + double(n) * n,                     \
                                 "cusolverDn" #P "gesvdaStridedBatched_bufferSize");               \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##gesvdaStridedBatched(                                  \
      cusolverDnHandle_t handle, cusolverEigMode_t jobz, int rank, int m, int n, const T* d_A,     \
      int lda, long long int strideA, R* d_S, long long int strideS, T* d_U, int ldu,              \
      long long int strideU, T* d_V, int ldv, long long int strideV, T* d_work, int lwork,         \
      int* d_info, double* h_R_nrmF, int batchSize) {                                              \
    (void)d_work, (void)lwork;                                                                     \
    return detail::gesvda(handle, TYPE, jobz, rank, m, n, d_A, lda, strideA, d_S, strideS, d_U,    \
                          ldu, strideU, d_V, ldv, strideV, d_info, h_R_nrmF, batchSize,            \
                          "cusolverDn" #P "gesvdaStridedBatched");                                 \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##EV##j_bufferSize(                                      \
      cusolverDnHandle_t handle, cusolverEigMode_t jobz, cublasFillMode_t uplo, int n, const T* A, \
      int lda, const R* W, int* lwork, syevjInfo_t params) {                                       \
    (void)jobz, (void)uplo, (void)A, (void)lda, (void)W, (void)params;                             \
    return detail::checked_lwork(handle, lwork, 2.0 * double(n) * n,                               \
                                 "cusolverDn" #P #EV "j_bufferSize");                              \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##EV##j(                                                 \
      cusolverDnHandle_t handle, cusolverEigMode_t jobz, cublasFillMode_t uplo, int n, T* A,       \
      int lda, R* W, T* work, int lwork, int* info, syevjInfo_t params) {                          \
    (void)work, (void)lwork;                                                                       \
    return detail::syevj(handle, TYPE, jobz, uplo, n, A, lda, nullptr, 1, W, info, params, 1,      \
                         false, "cusolverDn" #P #EV "j");                                          \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##EV##jBatched_bufferSize(                               \
      cusolverDnHandle_t handle, cusolverEigMode_t jobz, cublasFillMode_t uplo, int n, const T* A, \
      int lda, const R* W, int* lwork, syevjInfo_t params, int batchSize) {                        \
    (void)jobz, (void)uplo, (void)A, (void)lda, (void)W, (void)params;                             \
    return detail::checked_lwork(handle, lwork, 2.0 * double(n) * n * batchSize,                   \
                                 "cusolverDn" #P #EV "jBatched_bufferSize");                       \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##EV##jBatched(                                          \
      cusolverDnHandle_t handle, cusolverEigMode_t jobz, cublasFillMode_t uplo, int n, T* A,       \
      int lda, R* W, T* work, int lwork, int* info, syevjInfo_t params, int batchSize) {           \
    (void)work, (void)lwork;                                                                       \
    return detail::syevj(handle, TYPE, jobz, uplo, n, A, lda, nullptr, 1, W, info, params,         \
                         batchSize, false, "cusolverDn" #P #EV "jBatched");                        \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##GV##j_bufferSize(                                      \
      cusolverDnHandle_t handle, cusolverEigType_t itype, cusolverEigMode_t jobz,                  \
      cublasFillMode_t uplo, int n, const T* A, int lda, const T* B, int ldb, const R* W,          \
      int* lwork, syevjInfo_t params) {                                                            \
    (void)itype, (void)jobz, (void)uplo, (void)A, (void)lda, (void)B, (void)ldb, (void)W,          \
        (void)params;                                                                              \
    return detail::checked_lwork(handle, lwork, 2.0 * double(n) * n,                               \
                                 "cusolverDn" #P #GV "j_bufferSize");                              \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##GV##j(                                                 \
      cusolverDnHandle_t handle, cusolverEigType_t itype, cusolverEigMode_t jobz,                  \
      cublasFillMode_t uplo, int n, T* A, int lda, T* B, int ldb, R* W, T* work, int lwork,        \
      int* info, syevjInfo_t params) {                                                             \
    (void)itype, (void)work, (void)lwork;                                                          \
    return detail::syevj(handle, TYPE, jobz, uplo, n, A, lda, B, ldb, W, info, params, 1, true,    \
                         "cusolverDn" #P #GV "j");                                                 \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##EV##dx_bufferSize(                                     \
      cusolverDnHandle_t handle, cusolverEigMode_t jobz, cusolverEigRange_t range,                 \
      cublasFillMode_t uplo, int n, const T* A, int lda, R vl, R vu, int il, int iu, int* meig,    \
      const R* W, int* lwork) {                                                                    \
    (void)range, (void)uplo, (void)A, (void)lda, (void)vl, (void)vu, (void)il, (void)iu,           \
        (void)meig, (void)W;                                                                       \
    return detail::checked_lwork(handle, lwork, double(detail::syevd_lwork(jobz, n)),              \
                                 "cusolverDn" #P #EV "dx_bufferSize");                             \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##EV##dx(                                                \
      cusolverDnHandle_t handle, cusolverEigMode_t jobz, cusolverEigRange_t range,                 \
      cublasFillMode_t uplo, int n, T* A, int lda, R vl, R vu, int il, int iu, int* meig, R* W,    \
      T* work, int lwork, int* info) {                                                             \
    (void)vl, (void)vu, (void)work, (void)lwork;                                                   \
    return detail::eigen_dc(handle, TYPE, jobz, range, uplo, n, A, lda, nullptr, 1, il, iu, meig,  \
                            W, info, #EV "dx", "cusolverDn" #P #EV "dx");                          \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##GV##d_bufferSize(                                      \
      cusolverDnHandle_t handle, cusolverEigType_t itype, cusolverEigMode_t jobz,                  \
      cublasFillMode_t uplo, int n, const T* A, int lda, const T* B, int ldb, const R* W,          \
      int* lwork) {                                                                                \
    (void)itype, (void)uplo, (void)A, (void)lda, (void)B, (void)ldb, (void)W;                      \
    return detail::checked_lwork(handle, lwork, double(detail::syevd_lwork(jobz, n)),              \
                                 "cusolverDn" #P #GV "d_bufferSize");                              \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##GV##d(                                                 \
      cusolverDnHandle_t handle, cusolverEigType_t itype, cusolverEigMode_t jobz,                  \
      cublasFillMode_t uplo, int n, T* A, int lda, T* B, int ldb, R* W, T* work, int lwork,        \
      int* info) {                                                                                 \
    (void)work, (void)lwork;                                                                       \
    if (itype < CUSOLVER_EIG_TYPE_1 || itype > CUSOLVER_EIG_TYPE_3) {                              \
      return detail::bad("cusolverDn" #P #GV "d", "itype must be 1, 2 or 3");                      \
    }                                                                                              \
    return detail::eigen_dc(handle, TYPE, jobz, CUSOLVER_EIG_RANGE_ALL, uplo, n, A, lda, B, ldb,   \
                            1, n, nullptr, W, info, #GV "d", "cusolverDn" #P #GV "d");             \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##potrfBatched(                                          \
      cusolverDnHandle_t handle, cublasFillMode_t uplo, int n, T* Aarray[], int lda,               \
      int* infoArray, int batchSize) {                                                             \
    return detail::cholesky_batched(handle, TYPE, uplo, n, n, Aarray, lda, nullptr, 1, infoArray,  \
                                    batchSize, batchSize, "cusolverDn" #P "potrfBatched");         \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##potrsBatched(                                          \
      cusolverDnHandle_t handle, cublasFillMode_t uplo, int n, int nrhs, T* A[], int lda, T* B[],  \
      int ldb, int* d_info, int batchSize) {                                                       \
    return detail::cholesky_batched(handle, TYPE, uplo, n, nrhs, A, lda, B, ldb, d_info, 1,        \
                                    batchSize, "cusolverDn" #P "potrsBatched");                    \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##ORG##_bufferSize(cusolverDnHandle_t handle, int m,     \
                                                             int n, int k, const T* A, int lda,    \
                                                             const T* tau, int* lwork) {           \
    (void)A, (void)lda, (void)tau, (void)m, (void)k;                                               \
    return detail::checked_lwork(handle, lwork, double(detail::panel_lwork(n)),                    \
                                 "cusolverDn" #P #ORG "_bufferSize");                              \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##ORG(cusolverDnHandle_t handle, int m, int n, int k,    \
                                                T* A, int lda, const T* tau, T* work, int lwork,   \
                                                int* info) {                                       \
    (void)work, (void)lwork;                                                                       \
    const char* api = "cusolverDn" #P #ORG;                                                        \
    if (m < n || !detail::device_array(tau, double(std::max(k, 0)) * sizeof(T))) {                 \
      return detail::bad(api, "m < n or tau is not device memory of k elements");                  \
    }                                                                                              \
    const double dm = m, dn = n, dk = k;                                                           \
    return detail::square_routine(                                                                 \
        handle, TYPE, #ORG, m, n, k, A, lda, info,                                                 \
        4.0 * dm * dn * dk - 2.0 * (dm + dn) * dk * dk + 4.0 / 3.0 * dk * dk * dk, "", api);       \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##potri_bufferSize(                                      \
      cusolverDnHandle_t handle, cublasFillMode_t uplo, int n, T* A, int lda, int* lwork) {        \
    (void)uplo, (void)A, (void)lda;                                                                \
    return detail::checked_lwork(handle, lwork, double(detail::panel_lwork(n)),                    \
                                 "cusolverDn" #P "potri_bufferSize");                              \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##potri(cusolverDnHandle_t handle,                       \
                                                  cublasFillMode_t uplo, int n, T* A, int lda,     \
                                                  T* work, int lwork, int* devInfo) {              \
    (void)work, (void)lwork;                                                                       \
    const double dn = n;                                                                           \
    return detail::square_routine(                                                                 \
        handle, TYPE, "potri", n, n, n, A, lda, devInfo, 2.0 / 3.0 * dn * dn * dn,                 \
        detail::option("uplo", detail::fill_text(uplo)), "cusolverDn" #P "potri");                 \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##sytrf_bufferSize(cusolverDnHandle_t handle, int n,     \
                                                             T* A, int lda, int* lwork) {          \
    (void)A, (void)lda;                                                                            \
    return detail::checked_lwork(handle, lwork, double(detail::panel_lwork(n)),                    \
                                 "cusolverDn" #P "sytrf_bufferSize");                              \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##sytrf(cusolverDnHandle_t handle,                       \
                                                  cublasFillMode_t uplo, int n, T* A, int lda,     \
                                                  int* ipiv, T* work, int lwork, int* info) {      \
    (void)work, (void)lwork;                                                                       \
    const char* api = "cusolverDn" #P "sytrf";                                                     \
    if (ipiv != nullptr && !detail::device_array(ipiv, double(std::max(n, 0)) * sizeof(int))) {    \
      return detail::bad(api, "ipiv is not device memory of n indices");                           \
    }                                                                                              \
    const double dn = n;                                                                           \
    return detail::square_routine(handle, TYPE, "sytrf", n, n, n, A, lda, info,                    \
                                  dn * dn * dn / 3.0,                                              \
                                  detail::option("uplo", detail::fill_text(uplo)), api);           \
  }
PT_SOLVER_MORE(S, float, float, detail::kS, syev, sygv, orgqr)
PT_SOLVER_MORE(D, double, double, detail::kD, syev, sygv, orgqr)
PT_SOLVER_MORE(C, cuComplex, float, detail::kC, heev, hegv, ungqr)
PT_SOLVER_MORE(Z, cuDoubleComplex, double, detail::kZ, heev, hegv, ungqr)
#undef PT_SOLVER_MORE

// ---- the rest of the 64-bit (X) API: SVDs (QR-based, polar, randomized), selective and
// batched symmetric eigensolvers, the nonsymmetric eigensolver, trtri and sytrs -----------------
// Recorded like the routines above (nothing computed; infos 0 where backed). FLOPs (LAPACK
// working note 41's leading terms; complex × 4): gesvd as the 32-bit gesvd; gesvdp (QDWH polar
// decomposition, then an eigensolve of the Hermitian factor) as gesvd with vectors; gesvdr
// (rank k, oversampling p, l = k + p, q power iterations) 2mnl·(2q + 3) for the products with A,
// 2ml² for the range's QR, 4nl² + 9l³ for the small SVD and 2mlk for U; syevdx as syevd;
// syevBatched syevd's count per matrix; geev 10n³ for eigenvalues, 26.33n³ with eigenvectors
// (left, right or both); trtri n³/3; sytrs 2n²·nrhs. Workspaces: syevd's, gesvd's or a 64-column
// panel, in bytes on the device (0 on the host).

namespace {

// The n × n (or m × n) matrix routine shared by the X calls below, from its FLOPs.
cusolverStatus_t x_record(cusolverDnHandle_t handle, const detail::Type& t, const char* routine,
                          std::int64_t m, std::int64_t n, std::int64_t k, double flops,
                          double bytes, const std::string& options, std::int64_t start,
                          const char* api) {
  detail::Call c;
  c.api = api, c.routine = routine, c.type = t, c.m = m, c.n = n,
  c.k = std::max<std::int64_t>(k, 1);
  c.flops = flops, c.bytes = bytes, c.options = options, c.start = start;
  return detail::record(handle, c);
}

cusolverStatus_t x_bytes(cusolverDnHandle_t handle, const detail::Type& t, std::int64_t elements,
                         size_t* device_bytes, size_t* host_bytes, const char* api) {
  cudaStream_t stream = nullptr;
  if (!detail::handle_stream(handle, api, &stream)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  return detail::put_bytes(device_bytes, host_bytes, elements, t, api);
}

bool x_workspace(const void* buffer, size_t bytes, const char* api) {
  if (buffer == nullptr || bytes == 0 || detail::device_array(buffer, static_cast<double>(bytes)))
    return true;
  powertrain::emu::report_misuse(api, "the device workspace " + detail::pointer_text(buffer) +
                                          " is not device memory of " + std::to_string(bytes) +
                                          " bytes");
  return false;
}

double cube(std::int64_t n) {
  const double d = static_cast<double>(n);
  return d * d * d;
}
}  // namespace

PT_EXPORT cusolverStatus_t cusolverDnXgesvd_bufferSize(
    cusolverDnHandle_t handle, cusolverDnParams_t params, signed char jobu, signed char jobvt,
    int64_t m, int64_t n, cudaDataType type_a, const void* a, int64_t lda, cudaDataType type_s,
    const void* s, cudaDataType type_u, const void* u, int64_t ldu, cudaDataType type_vt,
    const void* vt, int64_t ldvt, cudaDataType compute, size_t* device_bytes, size_t* host_bytes) {
  (void)jobu, (void)jobvt, (void)a, (void)type_s, (void)s, (void)type_u, (void)u, (void)ldu,
      (void)type_vt, (void)vt, (void)ldvt;
  const char* api = "cusolverDnXgesvd_bufferSize";
  detail::Type t;
  if (!x_type(handle, params, type_a, compute, api, &t)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (!detail::valid_shape(m, n, lda))
    return detail::bad(api, "invalid matrix " + detail::shape_text(m, n, lda));
  return x_bytes(handle, t, detail::gesvd_lwork(m, n), device_bytes, host_bytes, api);
}

PT_EXPORT cusolverStatus_t cusolverDnXgesvd(cusolverDnHandle_t handle, cusolverDnParams_t params,
                                            signed char jobu, signed char jobvt, int64_t m,
                                            int64_t n, cudaDataType type_a, void* a, int64_t lda,
                                            cudaDataType type_s, void* s, cudaDataType type_u,
                                            void* u, int64_t ldu, cudaDataType type_vt, void* vt,
                                            int64_t ldvt, cudaDataType compute, void* device_buffer,
                                            size_t device_bytes, void* host_buffer,
                                            size_t host_bytes, int* info) {
  (void)type_s, (void)type_u, (void)type_vt, (void)host_buffer, (void)host_bytes;
  const char* api = "cusolverDnXgesvd";
  detail::Type t;
  if (!x_type(handle, params, type_a, compute, api, &t)) return CUSOLVER_STATUS_INVALID_VALUE;
  return detail::gesvd(handle, t, jobu, jobvt, m, n, a, lda, s, u, ldu, vt, ldvt, device_buffer,
                       static_cast<double>(device_bytes), info, api);
}

namespace {
// gesvdp: U is m × (econ ? min : m), V is n × (econ ? min : n).
cusolverStatus_t gesvdp(cusolverDnHandle_t handle, const detail::Type& t, cusolverEigMode_t jobz,
                        int econ, std::int64_t m, std::int64_t n, const void* a, std::int64_t lda,
                        const void* s, const void* u, std::int64_t ldu, const void* v,
                        std::int64_t ldv, int* info, double* err_sigma, bool run, const char* api) {
  const std::int64_t start = powertrain::emu::now_ns();
  if (!detail::valid_shape(m, n, lda) || !detail::valid_jobz(jobz))
    return detail::bad(api, "invalid matrix " + detail::shape_text(m, n, lda) + " or jobz");
  if (!run) return CUSOLVER_STATUS_SUCCESS;
  const std::int64_t lo = std::min(m, n);
  const bool vectors = jobz == CUSOLVER_EIG_MODE_VECTOR;
  const std::int64_t u_cols = econ != 0 ? lo : m, v_cols = econ != 0 ? lo : n;
  if (!detail::device_matrix(a, m, n, lda, t.bytes) ||
      !detail::device_array(s, static_cast<double>(lo) * t.real_bytes) ||
      (vectors && (ldu < std::max<std::int64_t>(1, m) || ldv < std::max<std::int64_t>(1, n) ||
                   !detail::device_matrix(u, m, u_cols, ldu, t.bytes) ||
                   !detail::device_matrix(v, n, v_cols, ldv, t.bytes))))
    return detail::bad(api, "A, S, U or V is not device memory of its size");
  if (!detail::set_info(info, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (err_sigma != nullptr) *err_sigma = 0.0;  // nothing computed: no error estimate to report
  const double dm = static_cast<double>(m), dn = static_cast<double>(n);
  return x_record(
      handle, t, "gesvdp", m, n, lo, 4.0 * dm * dm * dn + 8.0 * dm * dn * dn + 9.0 * dn * dn * dn,
      2.0 * dm * dn * t.bytes +
          (vectors ? (dm * static_cast<double>(u_cols) + dn * static_cast<double>(v_cols)) * t.bytes
                   : 0.0),
      detail::option("jobz", vectors ? "V" : "N") + detail::option("econ", econ), start, api);
}
}  // namespace

PT_EXPORT cusolverStatus_t cusolverDnXgesvdp_bufferSize(
    cusolverDnHandle_t handle, cusolverDnParams_t params, cusolverEigMode_t jobz, int econ,
    int64_t m, int64_t n, cudaDataType type_a, const void* a, int64_t lda, cudaDataType type_s,
    const void* s, cudaDataType type_u, const void* u, int64_t ldu, cudaDataType type_v,
    const void* v, int64_t ldv, cudaDataType compute, size_t* device_bytes, size_t* host_bytes) {
  (void)type_s, (void)type_u, (void)type_v;
  const char* api = "cusolverDnXgesvdp_bufferSize";
  detail::Type t;
  if (!x_type(handle, params, type_a, compute, api, &t)) return CUSOLVER_STATUS_INVALID_VALUE;
  const cusolverStatus_t st =
      gesvdp(handle, t, jobz, econ, m, n, a, lda, s, u, ldu, v, ldv, nullptr, nullptr, false, api);
  if (st != CUSOLVER_STATUS_SUCCESS) return st;
  // The polar iteration keeps A, its QR factors and the Hermitian factor: 3 m × n panels.
  return x_bytes(handle, t, 3 * std::max<std::int64_t>(1, m * n), device_bytes, host_bytes, api);
}

PT_EXPORT cusolverStatus_t cusolverDnXgesvdp(cusolverDnHandle_t handle, cusolverDnParams_t params,
                                             cusolverEigMode_t jobz, int econ, int64_t m, int64_t n,
                                             cudaDataType type_a, void* a, int64_t lda,
                                             cudaDataType type_s, void* s, cudaDataType type_u,
                                             void* u, int64_t ldu, cudaDataType type_v, void* v,
                                             int64_t ldv, cudaDataType compute, void* device_buffer,
                                             size_t device_bytes, void* host_buffer,
                                             size_t host_bytes, int* info, double* err_sigma) {
  (void)type_s, (void)type_u, (void)type_v, (void)host_buffer, (void)host_bytes;
  const char* api = "cusolverDnXgesvdp";
  detail::Type t;
  if (!x_type(handle, params, type_a, compute, api, &t)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (!x_workspace(device_buffer, device_bytes, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  return gesvdp(handle, t, jobz, econ, m, n, a, lda, s, u, ldu, v, ldv, info, err_sigma, true, api);
}

namespace {
cusolverStatus_t gesvdr(cusolverDnHandle_t handle, const detail::Type& t, signed char jobu,
                        signed char jobv, std::int64_t m, std::int64_t n, std::int64_t k,
                        std::int64_t p, std::int64_t iterations, const void* a, std::int64_t lda,
                        const void* s, const void* u, std::int64_t ldu, const void* v,
                        std::int64_t ldv, int* info, bool run, const char* api) {
  const std::int64_t start = powertrain::emu::now_ns();
  const std::int64_t lo = std::min(m, n);
  if (!detail::valid_shape(m, n, lda) || k < 1 || p < 0 || k + p > lo || iterations < 0)
    return detail::bad(api, "invalid matrix " + detail::shape_text(m, n, lda) + ", rank " +
                                std::to_string(k) + " or oversampling " + std::to_string(p) +
                                " (k + p must not exceed min(m, n))");
  const auto upper = [](signed char c) { return static_cast<char>(c & ~0x20); };
  const char ju = upper(jobu), jv = upper(jobv);
  if ((ju != 'S' && ju != 'N') || (jv != 'S' && jv != 'N'))
    return detail::bad(api, "jobu and jobv must be S or N");
  if (!run) return CUSOLVER_STATUS_SUCCESS;
  if (!detail::device_matrix(a, m, n, lda, t.bytes) ||
      !detail::device_array(s, static_cast<double>(k) * t.real_bytes) ||
      (ju == 'S' &&
       (ldu < std::max<std::int64_t>(1, m) || !detail::device_matrix(u, m, k, ldu, t.bytes))) ||
      (jv == 'S' &&
       (ldv < std::max<std::int64_t>(1, n) || !detail::device_matrix(v, n, k, ldv, t.bytes))))
    return detail::bad(api, "A, Srand, Urand or Vrand is not device memory of its size");
  if (!detail::set_info(info, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  const double dm = static_cast<double>(m), dn = static_cast<double>(n);
  const double dl = static_cast<double>(k + p), dk = static_cast<double>(k);
  const double flops = 2.0 * dm * dn * dl * (2.0 * static_cast<double>(iterations) + 3.0) +
                       2.0 * dm * dl * dl + 4.0 * dn * dl * dl + 9.0 * dl * dl * dl +
                       2.0 * dm * dl * dk;
  return x_record(handle, t, "gesvdr", m, n, k, flops,
                  (2.0 * static_cast<double>(iterations) + 3.0) * dm * dn * t.bytes,
                  detail::option("rank", k) + detail::option("oversampling", p) +
                      detail::option("iterations", iterations),
                  start, api);
}
}  // namespace

PT_EXPORT cusolverStatus_t cusolverDnXgesvdr_bufferSize(
    cusolverDnHandle_t handle, cusolverDnParams_t params, signed char jobu, signed char jobv,
    int64_t m, int64_t n, int64_t k, int64_t p, int64_t iterations, cudaDataType type_a,
    const void* a, int64_t lda, cudaDataType type_s, const void* s, cudaDataType type_u,
    const void* u, int64_t ldu, cudaDataType type_v, const void* v, int64_t ldv,
    cudaDataType compute, size_t* device_bytes, size_t* host_bytes) {
  (void)type_s, (void)type_u, (void)type_v;
  const char* api = "cusolverDnXgesvdr_bufferSize";
  detail::Type t;
  if (!x_type(handle, params, type_a, compute, api, &t)) return CUSOLVER_STATUS_INVALID_VALUE;
  const cusolverStatus_t st = gesvdr(handle, t, jobu, jobv, m, n, k, p, iterations, a, lda, s, u,
                                     ldu, v, ldv, nullptr, false, api);
  if (st != CUSOLVER_STATUS_SUCCESS) return st;
  // The sketch (m × l), its transpose product (n × l) and the small SVD's l × l factors.
  const std::int64_t l = k + p;
  return x_bytes(handle, t, (m + n) * l + 2 * l * l, device_bytes, host_bytes, api);
}

PT_EXPORT cusolverStatus_t cusolverDnXgesvdr(
    cusolverDnHandle_t handle, cusolverDnParams_t params, signed char jobu, signed char jobv,
    int64_t m, int64_t n, int64_t k, int64_t p, int64_t iterations, cudaDataType type_a, void* a,
    int64_t lda, cudaDataType type_s, void* s, cudaDataType type_u, void* u, int64_t ldu,
    cudaDataType type_v, void* v, int64_t ldv, cudaDataType compute, void* device_buffer,
    size_t device_bytes, void* host_buffer, size_t host_bytes, int* info) {
  (void)type_s, (void)type_u, (void)type_v, (void)host_buffer, (void)host_bytes;
  const char* api = "cusolverDnXgesvdr";
  detail::Type t;
  if (!x_type(handle, params, type_a, compute, api, &t)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (!x_workspace(device_buffer, device_bytes, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  return gesvdr(handle, t, jobu, jobv, m, n, k, p, iterations, a, lda, s, u, ldu, v, ldv, info,
                true, api);
}

PT_EXPORT cusolverStatus_t cusolverDnXsyevdx_bufferSize(
    cusolverDnHandle_t handle, cusolverDnParams_t params, cusolverEigMode_t jobz,
    cusolverEigRange_t range, cublasFillMode_t uplo, int64_t n, cudaDataType type_a, const void* a,
    int64_t lda, void* vl, void* vu, int64_t il, int64_t iu, int64_t* meig, cudaDataType type_w,
    const void* w, cudaDataType compute, size_t* device_bytes, size_t* host_bytes) {
  (void)range, (void)uplo, (void)a, (void)vl, (void)vu, (void)il, (void)iu, (void)meig,
      (void)type_w, (void)w;
  const char* api = "cusolverDnXsyevdx_bufferSize";
  detail::Type t;
  if (!x_type(handle, params, type_a, compute, api, &t)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (!detail::valid_shape(n, n, lda) || !detail::valid_jobz(jobz))
    return detail::bad(api, "invalid matrix " + detail::shape_text(n, n, lda) + " or jobz");
  return x_bytes(handle, t, detail::syevd_lwork(jobz, n), device_bytes, host_bytes, api);
}

PT_EXPORT cusolverStatus_t cusolverDnXsyevdx(cusolverDnHandle_t handle, cusolverDnParams_t params,
                                             cusolverEigMode_t jobz, cusolverEigRange_t range,
                                             cublasFillMode_t uplo, int64_t n, cudaDataType type_a,
                                             void* a, int64_t lda, void* vl, void* vu, int64_t il,
                                             int64_t iu, int64_t* meig, cudaDataType type_w,
                                             void* w, cudaDataType compute, void* device_buffer,
                                             size_t device_bytes, void* host_buffer,
                                             size_t host_bytes, int* info) {
  (void)vl, (void)vu, (void)type_w, (void)host_buffer, (void)host_bytes;
  const char* api = "cusolverDnXsyevdx";
  detail::Type t;
  if (!x_type(handle, params, type_a, compute, api, &t)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (!x_workspace(device_buffer, device_bytes, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (il < INT32_MIN || il > INT32_MAX || iu < INT32_MIN || iu > INT32_MAX)
    return detail::bad(api, "il or iu is outside the matrix");
  int found = 0;
  const cusolverStatus_t st =
      detail::eigen_dc(handle, t, jobz, range, uplo, n, a, lda, nullptr, 1, static_cast<int>(il),
                       static_cast<int>(iu), &found, w, info, t.complex ? "heevdx" : "syevdx", api);
  if (st == CUSOLVER_STATUS_SUCCESS && meig != nullptr) *meig = found;
  return st;
}

PT_EXPORT cusolverStatus_t cusolverDnXsyevBatched_bufferSize(
    cusolverDnHandle_t handle, cusolverDnParams_t params, cusolverEigMode_t jobz,
    cublasFillMode_t uplo, int64_t n, cudaDataType type_a, const void* a, int64_t lda,
    cudaDataType type_w, const void* w, cudaDataType compute, size_t* device_bytes,
    size_t* host_bytes, int64_t batch) {
  (void)uplo, (void)a, (void)type_w, (void)w;
  const char* api = "cusolverDnXsyevBatched_bufferSize";
  detail::Type t;
  if (!x_type(handle, params, type_a, compute, api, &t)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (!detail::valid_shape(n, n, lda) || !detail::valid_jobz(jobz) || batch < 0)
    return detail::bad(api,
                       "invalid matrix " + detail::shape_text(n, n, lda) + ", jobz or batchSize");
  return x_bytes(handle, t, std::max<std::int64_t>(1, batch) * detail::syevd_lwork(jobz, n),
                 device_bytes, host_bytes, api);
}

PT_EXPORT cusolverStatus_t cusolverDnXsyevBatched(
    cusolverDnHandle_t handle, cusolverDnParams_t params, cusolverEigMode_t jobz,
    cublasFillMode_t uplo, int64_t n, cudaDataType type_a, void* a, int64_t lda,
    cudaDataType type_w, void* w, cudaDataType compute, void* device_buffer, size_t device_bytes,
    void* host_buffer, size_t host_bytes, int* info, int64_t batch) {
  (void)type_w, (void)host_buffer, (void)host_bytes;
  const char* api = "cusolverDnXsyevBatched";
  const std::int64_t start = powertrain::emu::now_ns();
  detail::Type t;
  if (!x_type(handle, params, type_a, compute, api, &t)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (!detail::valid_shape(n, n, lda) || !detail::valid_jobz(jobz) || batch < 0)
    return detail::bad(api,
                       "invalid matrix " + detail::shape_text(n, n, lda) + ", jobz or batchSize");
  if (!x_workspace(device_buffer, device_bytes, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  const double per_matrix = static_cast<double>(lda) * static_cast<double>(n) * t.bytes;
  if (batch > 0 && (!detail::device_array(a, per_matrix * static_cast<double>(batch)) ||
                    !detail::device_array(
                        w, static_cast<double>(n) * static_cast<double>(batch) * t.real_bytes)))
    return detail::bad(api, "A or W is not device memory of batchSize matrices");
  if (batch > 0 && !detail::set_infos(info, batch, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (batch == 0) return CUSOLVER_STATUS_SUCCESS;
  const bool vectors = jobz == CUSOLVER_EIG_MODE_VECTOR;
  const double dn = static_cast<double>(n), db = static_cast<double>(batch);
  return x_record(handle, t, t.complex ? "heevBatched" : "syevBatched", n, n, n,
                  db * (vectors ? 9.0 : 4.0 / 3.0) * cube(n),
                  db * (2.0 * dn * dn * t.bytes + dn * t.real_bytes),
                  detail::option("jobz", vectors ? "V" : "N") +
                      detail::option("uplo", detail::fill_text(uplo)) +
                      detail::option("batch", batch),
                  start, api);
}

namespace {
cusolverStatus_t geev(cusolverDnHandle_t handle, const detail::Type& t, cusolverEigMode_t jobvl,
                      cusolverEigMode_t jobvr, std::int64_t n, const void* a, std::int64_t lda,
                      const void* w, const void* vl, std::int64_t ldvl, const void* vr,
                      std::int64_t ldvr, int* info, bool run, const char* api) {
  const std::int64_t start = powertrain::emu::now_ns();
  if (!detail::valid_shape(n, n, lda) || !detail::valid_jobz(jobvl) || !detail::valid_jobz(jobvr))
    return detail::bad(api, "invalid matrix " + detail::shape_text(n, n, lda) + " or jobvl/jobvr");
  if (!run) return CUSOLVER_STATUS_SUCCESS;
  const bool left = jobvl == CUSOLVER_EIG_MODE_VECTOR, right = jobvr == CUSOLVER_EIG_MODE_VECTOR;
  // Eigenvalues of a real matrix are complex: W holds n complex values either way.
  const double w_bytes = static_cast<double>(n) * 2.0 * t.real_bytes;
  if (!detail::device_matrix(a, n, n, lda, t.bytes) || !detail::device_array(w, w_bytes) ||
      (left &&
       (ldvl < std::max<std::int64_t>(1, n) || !detail::device_matrix(vl, n, n, ldvl, t.bytes))) ||
      (right &&
       (ldvr < std::max<std::int64_t>(1, n) || !detail::device_matrix(vr, n, n, ldvr, t.bytes))))
    return detail::bad(api, "A, W, VL or VR is not device memory of its size");
  if (!detail::set_info(info, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  const double dn = static_cast<double>(n);
  return x_record(
      handle, t, "geev", n, n, n, (left || right ? 26.33 : 10.0) * cube(n),
      (2.0 + (left ? 1.0 : 0.0) + (right ? 1.0 : 0.0)) * dn * dn * t.bytes + w_bytes,
      detail::option("jobvl", left ? "V" : "N") + detail::option("jobvr", right ? "V" : "N"), start,
      api);
}
}  // namespace

PT_EXPORT cusolverStatus_t cusolverDnXgeev_bufferSize(
    cusolverDnHandle_t handle, cusolverDnParams_t params, cusolverEigMode_t jobvl,
    cusolverEigMode_t jobvr, int64_t n, cudaDataType type_a, const void* a, int64_t lda,
    cudaDataType type_w, const void* w, cudaDataType type_vl, const void* vl, int64_t ldvl,
    cudaDataType type_vr, const void* vr, int64_t ldvr, cudaDataType compute, size_t* device_bytes,
    size_t* host_bytes) {
  (void)type_w, (void)type_vl, (void)type_vr;
  const char* api = "cusolverDnXgeev_bufferSize";
  detail::Type t;
  if (!x_type(handle, params, type_a, compute, api, &t)) return CUSOLVER_STATUS_INVALID_VALUE;
  const cusolverStatus_t st =
      geev(handle, t, jobvl, jobvr, n, a, lda, w, vl, ldvl, vr, ldvr, nullptr, false, api);
  if (st != CUSOLVER_STATUS_SUCCESS) return st;
  // The Hessenberg form and the Schur vectors: two n × n matrices plus a panel.
  return x_bytes(handle, t, 2 * n * n + detail::panel_lwork(n), device_bytes, host_bytes, api);
}

PT_EXPORT cusolverStatus_t cusolverDnXgeev(cusolverDnHandle_t handle, cusolverDnParams_t params,
                                           cusolverEigMode_t jobvl, cusolverEigMode_t jobvr,
                                           int64_t n, cudaDataType type_a, void* a, int64_t lda,
                                           cudaDataType type_w, void* w, cudaDataType type_vl,
                                           void* vl, int64_t ldvl, cudaDataType type_vr, void* vr,
                                           int64_t ldvr, cudaDataType compute, void* device_buffer,
                                           size_t device_bytes, void* host_buffer,
                                           size_t host_bytes, int* info) {
  (void)type_w, (void)type_vl, (void)type_vr, (void)host_buffer, (void)host_bytes;
  const char* api = "cusolverDnXgeev";
  detail::Type t;
  if (!x_type(handle, params, type_a, compute, api, &t)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (!x_workspace(device_buffer, device_bytes, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  return geev(handle, t, jobvl, jobvr, n, a, lda, w, vl, ldvl, vr, ldvr, info, true, api);
}

PT_EXPORT cusolverStatus_t cusolverDnXtrtri_bufferSize(cusolverDnHandle_t handle,
                                                       cublasFillMode_t uplo, cublasDiagType_t diag,
                                                       int64_t n, cudaDataType type_a, void* a,
                                                       int64_t lda, size_t* device_bytes,
                                                       size_t* host_bytes) {
  (void)uplo, (void)diag, (void)a;
  const char* api = "cusolverDnXtrtri_bufferSize";
  detail::Type t;
  if (!x_type(handle, nullptr, type_a, type_a, api, &t)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (!detail::valid_shape(n, n, lda))
    return detail::bad(api, "invalid matrix " + detail::shape_text(n, n, lda));
  return x_bytes(handle, t, detail::panel_lwork(n), device_bytes, host_bytes, api);
}

PT_EXPORT cusolverStatus_t cusolverDnXtrtri(cusolverDnHandle_t handle, cublasFillMode_t uplo,
                                            cublasDiagType_t diag, int64_t n, cudaDataType type_a,
                                            void* a, int64_t lda, void* device_buffer,
                                            size_t device_bytes, void* host_buffer,
                                            size_t host_bytes, int* info) {
  (void)host_buffer, (void)host_bytes;
  const char* api = "cusolverDnXtrtri";
  detail::Type t;
  if (!x_type(handle, nullptr, type_a, type_a, api, &t)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (!x_workspace(device_buffer, device_bytes, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  return detail::square_routine(handle, t, "trtri", n, n, n, a, lda, info, cube(n) / 3.0,
                                detail::option("uplo", detail::fill_text(uplo)) +
                                    detail::option("diag", diag == CUBLAS_DIAG_UNIT ? "U" : "N"),
                                api);
}

PT_EXPORT cusolverStatus_t cusolverDnXsytrs_bufferSize(
    cusolverDnHandle_t handle, cublasFillMode_t uplo, int64_t n, int64_t nrhs, cudaDataType type_a,
    const void* a, int64_t lda, const int64_t* ipiv, cudaDataType type_b, void* b, int64_t ldb,
    size_t* device_bytes, size_t* host_bytes) {
  (void)uplo, (void)a, (void)ipiv, (void)b;
  const char* api = "cusolverDnXsytrs_bufferSize";
  detail::Type t;
  if (!x_type(handle, nullptr, type_a, type_b, api, &t)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (!detail::valid_shape(n, n, lda) || !detail::valid_shape(n, nrhs, ldb))
    return detail::bad(api, "invalid A " + detail::shape_text(n, n, lda) + " or B " +
                                detail::shape_text(n, nrhs, ldb));
  return x_bytes(handle, t, std::max<std::int64_t>(1, n * nrhs), device_bytes, host_bytes, api);
}

PT_EXPORT cusolverStatus_t cusolverDnXsytrs(cusolverDnHandle_t handle, cublasFillMode_t uplo,
                                            int64_t n, int64_t nrhs, cudaDataType type_a,
                                            const void* a, int64_t lda, const int64_t* ipiv,
                                            cudaDataType type_b, void* b, int64_t ldb,
                                            void* device_buffer, size_t device_bytes,
                                            void* host_buffer, size_t host_bytes, int* info) {
  (void)host_buffer, (void)host_bytes;
  const char* api = "cusolverDnXsytrs";
  detail::Type t;
  if (!x_type(handle, nullptr, type_a, type_b, api, &t)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (!x_workspace(device_buffer, device_bytes, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (ipiv != nullptr &&
      !detail::device_array(ipiv, static_cast<double>(std::max<std::int64_t>(n, 0)) * 8.0))
    return detail::bad(api, "ipiv is not device memory of n 64-bit indices");
  return detail::solve(handle, t, "sytrs", detail::option("uplo", detail::fill_text(uplo)), n, nrhs,
                       a, lda, b, ldb, info, api);
}

// ---- mixed-precision iterative refinement: <t1><t2>gesv, <t1><t2>gels, IRSXgesv/IRSXgels ------
// Computed on the host where A, B and X are backed and n ≤ 1024: the matrix rounded to the
// factorization precision (t2: S float, H half, B bfloat16, X tf32 — 24, 11, 8 and 11 significant
// bits; half also overflows above 65504), factored there (LU with partial pivoting for gesv,
// Householder QR for gels, every stored entry rounded to that precision, arithmetic wider as on
// the GPU's tensor cores), then refined in the main precision t1: r = b − A·x, x += solve(r),
// until ‖r‖∞ ≤ ‖x‖∞·‖A‖∞·c (gels: until the correction is below c·‖x‖∞; c = ε·√n, or the
// tolerance of cusolverDnIRSParamsSetTol), at most `maxiters` (50 by default,
// cusolverDnIRSParamsSetMaxIters) times. `iter` is the number of
// refinements, or negative when it failed (then the fallback to a main-precision factorization
// runs unless disabled): −2 an entry overflowed the low precision, −3 the low-precision
// factorization broke down, −(maxiters + 1) no convergence (LAPACK's dsgesv convention).
// Same-precision pairs (DD, SS, ZZ, CC) factor and solve once (iter 0). A singular matrix gives
// info = the first zero pivot. Larger or unbacked systems are not computed (iter and info 0).
// Recorded as `gemm` records: the factorization at t2 (2/3·n³ for LU, 2mn² − 2/3·n³ for QR), and
// for the refinement 4n²·nrhs FLOPs per iteration at t1.
namespace {

enum class Low { kSame, kSingle, kHalf, kBfloat16, kTf32 };

double round_bits(double x, int bits) {
  if (x == 0.0 || !std::isfinite(x)) return x;
  int e = 0;
  const double m = std::frexp(x, &e);
  return std::ldexp(std::nearbyint(std::ldexp(m, bits)), e - bits);
}

// x rounded to `low`; `main_single`: the main precision is float (kSame then rounds to float).
// Sets *overflow when the value does not fit.
double round_low(double x, Low low, bool main_single, bool* overflow) {
  switch (low) {
    case Low::kSame:
      return main_single ? static_cast<double>(static_cast<float>(x)) : x;
    case Low::kSingle:
      return static_cast<double>(static_cast<float>(x));
    case Low::kHalf:
      if (std::fabs(x) > 65504.0) *overflow = true;
      return round_bits(x, 11);
    case Low::kBfloat16:
      return round_bits(static_cast<float>(x), 8);
    case Low::kTf32:
      return round_bits(static_cast<float>(x), 11);
  }
  return x;
}

using Cplx = std::complex<double>;
Cplx round_low(Cplx x, Low low, bool main_single, bool* overflow) {
  return {round_low(x.real(), low, main_single, overflow),
          round_low(x.imag(), low, main_single, overflow)};
}
double conj_of(double x) { return x; }
Cplx conj_of(Cplx x) { return std::conj(x); }
double round_main(double x, bool single) {
  return single ? static_cast<double>(static_cast<float>(x)) : x;
}
Cplx round_main(Cplx x, bool single) {
  return {round_main(x.real(), single), round_main(x.imag(), single)};
}

// LU with partial pivoting of the n × n column-major `a` (in place); every stored entry is
// rounded by `round`. Returns the first zero pivot (1-based) or 0.
template <typename U, typename Round>
int lu_factor(std::vector<U>& a, std::int64_t n, std::vector<int>& pivots, Round round) {
  pivots.assign(static_cast<std::size_t>(n), 0);
  int zero = 0;
  const auto at = [&](std::int64_t i, std::int64_t j) -> U& {
    return a[static_cast<std::size_t>(j * n + i)];
  };
  for (std::int64_t k = 0; k < n; ++k) {
    std::int64_t p = k;
    for (std::int64_t i = k + 1; i < n; ++i) {
      if (std::abs(at(i, k)) > std::abs(at(p, k))) p = i;
    }
    pivots[static_cast<std::size_t>(k)] = static_cast<int>(p) + 1;
    if (p != k) {
      for (std::int64_t j = 0; j < n; ++j) std::swap(at(k, j), at(p, j));
    }
    if (at(k, k) == U(0)) {
      if (zero == 0) zero = static_cast<int>(k) + 1;
      continue;
    }
    for (std::int64_t i = k + 1; i < n; ++i) at(i, k) = round(at(i, k) / at(k, k));
    for (std::int64_t j = k + 1; j < n; ++j) {
      const U factor = at(k, j);
      if (factor == U(0)) continue;
      for (std::int64_t i = k + 1; i < n; ++i) at(i, j) = round(at(i, j) - at(i, k) * factor);
    }
  }
  return zero;
}

template <typename U>
void lu_solve(const std::vector<U>& lu, std::int64_t n, const std::vector<int>& pivots,
              std::vector<U>& x) {
  for (std::int64_t k = 0; k < n; ++k) {
    const auto p = static_cast<std::size_t>(pivots[static_cast<std::size_t>(k)] - 1);
    std::swap(x[static_cast<std::size_t>(k)], x[p]);
  }
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < i; ++j)
      x[static_cast<std::size_t>(i)] -=
          lu[static_cast<std::size_t>(j * n + i)] * x[static_cast<std::size_t>(j)];
  }
  for (std::int64_t i = n - 1; i >= 0; --i) {
    for (std::int64_t j = i + 1; j < n; ++j)
      x[static_cast<std::size_t>(i)] -=
          lu[static_cast<std::size_t>(j * n + i)] * x[static_cast<std::size_t>(j)];
    x[static_cast<std::size_t>(i)] /= lu[static_cast<std::size_t>(i * n + i)];
  }
}

// Householder QR of the m × n column-major `a` (m ≥ n) in place: R above the diagonal, the
// reflectors below with their scalars in `tau`. Returns false on a zero column.
template <typename U, typename Round>
bool qr_factor(std::vector<U>& a, std::int64_t m, std::int64_t n, std::vector<U>& tau,
               Round round) {
  tau.assign(static_cast<std::size_t>(n), U(0));
  const auto at = [&](std::int64_t i, std::int64_t j) -> U& {
    return a[static_cast<std::size_t>(j * m + i)];
  };
  for (std::int64_t k = 0; k < n; ++k) {
    double norm = 0;
    for (std::int64_t i = k; i < m; ++i) norm += std::norm(at(i, k));
    norm = std::sqrt(norm);
    if (norm == 0.0) return false;
    const U head = at(k, k);
    const U alpha = std::abs(head) == 0.0 ? U(-norm) : U(-norm) * (head / std::abs(head));
    // v = x − alpha·e1, normalized so v[0] = 1; tau = 2 / (v^H v) in that scaling.
    const U v0 = head - alpha;
    for (std::int64_t i = k + 1; i < m; ++i) at(i, k) = round(at(i, k) / v0);
    double vnorm = 1.0;
    for (std::int64_t i = k + 1; i < m; ++i) vnorm += std::norm(at(i, k));
    tau[static_cast<std::size_t>(k)] = U(2.0 / vnorm);
    at(k, k) = round(alpha);
    for (std::int64_t j = k + 1; j < n; ++j) {
      U dot = at(k, j);
      for (std::int64_t i = k + 1; i < m; ++i) dot += conj_of(at(i, k)) * at(i, j);
      dot *= tau[static_cast<std::size_t>(k)];
      at(k, j) = round(at(k, j) - dot);
      for (std::int64_t i = k + 1; i < m; ++i) at(i, j) = round(at(i, j) - at(i, k) * dot);
    }
  }
  return true;
}

// The least-squares solution of the factored system for one right-hand side of m values: n
// values in x.
template <typename U>
void qr_solve(const std::vector<U>& qr, std::int64_t m, std::int64_t n, const std::vector<U>& tau,
              const std::vector<U>& b, std::vector<U>& x) {
  std::vector<U> y(b);
  for (std::int64_t k = 0; k < n; ++k) {  // y = Q^H b
    U dot = y[static_cast<std::size_t>(k)];
    for (std::int64_t i = k + 1; i < m; ++i)
      dot += conj_of(qr[static_cast<std::size_t>(k * m + i)]) * y[static_cast<std::size_t>(i)];
    dot *= tau[static_cast<std::size_t>(k)];
    y[static_cast<std::size_t>(k)] -= dot;
    for (std::int64_t i = k + 1; i < m; ++i)
      y[static_cast<std::size_t>(i)] -= qr[static_cast<std::size_t>(k * m + i)] * dot;
  }
  x.assign(static_cast<std::size_t>(n), U(0));
  for (std::int64_t i = n - 1; i >= 0; --i) {  // R x = y
    U sum = y[static_cast<std::size_t>(i)];
    for (std::int64_t j = i + 1; j < n; ++j)
      sum -= qr[static_cast<std::size_t>(j * m + i)] * x[static_cast<std::size_t>(j)];
    x[static_cast<std::size_t>(i)] = sum / qr[static_cast<std::size_t>(i * m + i)];
  }
}

struct IrsResult {
  int iter = 0;
  int info = 0;
  int iterations = 0;             // refinements performed (for the record)
  bool fell_back = false;         // a main-precision factorization followed
  std::vector<double> residuals;  // ‖r‖∞ after each step (IRS infos' history)
};

// Solves (gesv: m == n, LU) or least-squares solves (gels: QR) every right-hand side. T is the
// storage type (float, double, std::complex<float|double>), U its double-precision arithmetic.
template <typename T>
IrsResult irs_compute(std::int64_t m, std::int64_t n, std::int64_t nrhs, const T* a,
                      std::int64_t lda, const T* b, std::int64_t ldb, T* x, std::int64_t ldx,
                      int* ipiv, Low low, int max_iters, bool fallback, bool least_squares,
                      double tol) {
  using U = std::conditional_t<std::is_floating_point_v<T>, double, Cplx>;
  constexpr bool kSingle = std::is_same_v<T, float> || std::is_same_v<T, std::complex<float>>;
  const double eps = kSingle ? 5.96e-8 : 1.11e-16;
  IrsResult out;
  std::vector<U> full(static_cast<std::size_t>(m * n));
  double a_norm = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    for (std::int64_t i = 0; i < m; ++i)
      full[static_cast<std::size_t>(j * m + i)] = U(a[j * lda + i]);
  }
  for (std::int64_t i = 0; i < m; ++i) {
    double row = 0;
    for (std::int64_t j = 0; j < n; ++j) row += std::abs(full[static_cast<std::size_t>(j * m + i)]);
    a_norm = std::max(a_norm, row);
  }
  bool overflow = false;
  const auto low_round = [&](U v) { return round_low(v, low, kSingle, &overflow); };
  const auto main_round = [&](U v) { return round_main(v, kSingle); };
  std::vector<U> factors(full);
  for (U& v : factors) v = low_round(v);
  std::vector<int> pivots;
  std::vector<U> tau;
  bool broke_down = false;
  if (least_squares) {
    broke_down = !qr_factor(factors, m, n, tau, low_round);
  } else {
    const int zero = lu_factor(factors, n, pivots, low_round);
    broke_down = zero != 0;
    if (zero != 0 && low == Low::kSame) out.info = zero;
  }
  const auto solve = [&](const std::vector<U>& f, const std::vector<U>& rhs, std::vector<U>& sol) {
    if (least_squares) {
      qr_solve(f, m, n, tau, rhs, sol);
    } else {
      sol = rhs;
      lu_solve(f, n, pivots, sol);
    }
  };
  const bool refine = low != Low::kSame;
  int status = 0;  // the negative iter of a fallback
  if (overflow) status = -2;
  if (broke_down && refine) status = -3;
  for (std::int64_t c = 0; c < nrhs && out.info == 0; ++c) {
    std::vector<U> rhs(static_cast<std::size_t>(m)), sol;
    for (std::int64_t i = 0; i < m; ++i) rhs[static_cast<std::size_t>(i)] = U(b[c * ldb + i]);
    int iterations = 0;
    bool converged = status == 0;
    if (converged) {
      solve(factors, rhs, sol);
      for (U& v : sol) v = main_round(v);
      converged = !refine;
      while (refine && !converged && iterations < max_iters) {
        std::vector<U> r(rhs);
        double r_norm = 0, x_norm = 0;
        for (std::int64_t j = 0; j < n; ++j) {
          const U xj = sol[static_cast<std::size_t>(j)];
          x_norm = std::max(x_norm, std::abs(xj));
          for (std::int64_t i = 0; i < m; ++i)
            r[static_cast<std::size_t>(i)] -= full[static_cast<std::size_t>(j * m + i)] * xj;
        }
        for (U& v : r) {
          v = main_round(v);
          r_norm = std::max(r_norm, std::abs(v));
        }
        out.residuals.push_back(r_norm);
        std::vector<U> d;
        solve(factors, r, d);
        double d_norm = 0;
        for (const U& v : d) d_norm = std::max(d_norm, std::abs(v));
        const double criterion = tol > 0.0 ? tol : eps * std::sqrt(double(n));
        const bool small =
            least_squares ? d_norm <= criterion * x_norm : r_norm <= x_norm * a_norm * criterion;
        if (small) {
          converged = true;
          break;
        }
        for (std::int64_t j = 0; j < n; ++j)
          sol[static_cast<std::size_t>(j)] =
              main_round(sol[static_cast<std::size_t>(j)] + d[static_cast<std::size_t>(j)]);
        ++iterations;
      }
      if (!converged && status == 0) status = -(max_iters + 1);  // LAPACK's -(ITERMAX + 1)
    }
    out.iterations = std::max(out.iterations, iterations);
    if (!converged && !fallback) {  // X keeps the last iterate (none after a breakdown)
      if (status != -2 && status != -3) {
        for (std::int64_t j = 0; j < n; ++j) {
          const U v = main_round(sol[static_cast<std::size_t>(j)]);
          if constexpr (std::is_floating_point_v<T>) {
            x[c * ldx + j] = static_cast<T>(v);
          } else {
            x[c * ldx + j] = T(static_cast<typename T::value_type>(v.real()),
                               static_cast<typename T::value_type>(v.imag()));
          }
        }
      }
      out.iter = status;
      continue;
    }
    if (!converged) {  // the fallback: factor and solve in the main precision
      std::vector<U> main_factors(full);
      for (U& v : main_factors) v = main_round(v);
      std::vector<int> main_pivots;
      if (least_squares) {
        if (!qr_factor(main_factors, m, n, tau, main_round)) {
          out.info = 1;
          break;
        }
        qr_solve(main_factors, m, n, tau, rhs, sol);
      } else {
        const int zero = lu_factor(main_factors, n, main_pivots, main_round);
        if (zero != 0) {
          out.info = zero;
          break;
        }
        sol = rhs;
        lu_solve(main_factors, n, main_pivots, sol);
        pivots = main_pivots;
      }
      out.fell_back = true;
    }
    for (std::int64_t j = 0; j < n; ++j) {
      const U v = main_round(sol[static_cast<std::size_t>(j)]);
      if constexpr (std::is_floating_point_v<T>) {
        x[c * ldx + j] = static_cast<T>(v);
      } else {
        x[c * ldx + j] = T(static_cast<typename T::value_type>(v.real()),
                           static_cast<typename T::value_type>(v.imag()));
      }
    }
  }
  if (out.iter >= 0) out.iter = out.fell_back ? status : out.iterations;
  if (ipiv != nullptr && !least_squares) {
    for (std::int64_t k = 0; k < n && k < static_cast<std::int64_t>(pivots.size()); ++k)
      ipiv[k] = pivots[static_cast<std::size_t>(k)];
  }
  return out;
}

constexpr std::int64_t kIrsComputeLimit = 1024;  // n above this: recorded, not computed

struct IrsCall {
  const char* api = "";
  bool least_squares = false;
  detail::Type main, factor;
  const char* factor_name = "";  // "float32", "float16", "bfloat16", "tf32"
  Low low = Low::kSame;
  int max_iters = 50;
  bool fallback = true;
  double tol = 0.0;  // 0: ε·√n
};

// The common path of every IRS solver: checks, computation where possible, records.
template <typename T>
cusolverStatus_t irs_run(cusolverDnHandle_t handle, const IrsCall& call, std::int64_t m,
                         std::int64_t n, std::int64_t nrhs, const void* a, std::int64_t lda,
                         int* ipiv, const void* b, std::int64_t ldb, void* x, std::int64_t ldx,
                         const void* work, size_t work_bytes, int* iter, int* info,
                         IrsResult* result_out) {
  const std::int64_t start = powertrain::emu::now_ns();
  const char* api = call.api;
  if (!detail::valid_shape(m, n, lda) || !detail::valid_shape(m, nrhs, ldb) ||
      !detail::valid_shape(n, nrhs, ldx) || m < n || (!call.least_squares && m != n))
    return detail::bad(api, "invalid system: A " + detail::shape_text(m, n, lda) + ", B " +
                                detail::shape_text(m, nrhs, ldb) + ", X " +
                                detail::shape_text(n, nrhs, ldx));
  const int e = call.main.bytes;
  if (!detail::device_matrix(a, m, n, lda, e) || !detail::device_matrix(b, m, nrhs, ldb, e) ||
      !detail::device_matrix(x, n, nrhs, ldx, e) ||
      (ipiv != nullptr && !detail::device_array(ipiv, static_cast<double>(n) * sizeof(int))))
    return detail::bad(api, "A, B, X or the pivots are not device memory of their sizes");
  if (work != nullptr && work_bytes > 0 &&
      !detail::device_array(work, static_cast<double>(work_bytes)))
    return detail::bad(api, "the workspace is not device memory of lwork_bytes");
  if (iter == nullptr) return detail::bad(api, "iter is NULL");
  if (!detail::set_info(info, api)) return CUSOLVER_STATUS_INVALID_VALUE;
  const auto span = [](std::int64_t rows, std::int64_t cols, std::int64_t ld, int bytes) {
    return static_cast<std::size_t>(cols > 0 ? ((cols - 1) * ld + rows) * bytes : 0);
  };
  const detail::PointerInfo ai = detail::lookup_pointer(a), bi = detail::lookup_pointer(b),
                            xi = detail::lookup_pointer(x), ii = detail::lookup_pointer(info);
  IrsResult result;
  const bool computed = n <= kIrsComputeLimit && m <= 4 * kIrsComputeLimit && ai.backed &&
                        bi.backed && xi.backed && ai.available >= span(m, n, lda, e) &&
                        bi.available >= span(m, nrhs, ldb, e) &&
                        xi.available >= span(n, nrhs, ldx, e) &&
                        (ipiv == nullptr || detail::lookup_pointer(ipiv).backed);
  if (computed) {
    result = irs_compute<T>(m, n, nrhs, static_cast<const T*>(a), lda, static_cast<const T*>(b),
                            ldb, static_cast<T*>(x), ldx, ipiv, call.low, call.max_iters,
                            call.fallback, call.least_squares, call.tol);
    if (ii.backed) *info = result.info;
  }
  *iter = result.iter;
  if (result_out != nullptr) *result_out = result;
  // The factorization at the low precision, then the refinement (and a fallback) at the main one.
  const double dm = static_cast<double>(m), dn = static_cast<double>(n),
               dr = static_cast<double>(nrhs);
  const double factor_flops =
      call.least_squares ? 2.0 * dm * dn * dn - 2.0 / 3.0 * dn * dn * dn : 2.0 / 3.0 * dn * dn * dn;
  detail::Call c;
  c.api = api, c.routine = call.least_squares ? "geqrf" : "getrf", c.type = call.factor;
  c.m = m, c.n = n, c.k = n, c.start = start, c.flops = factor_flops;
  c.bytes = 2.0 * dm * dn * call.factor.bytes;
  c.options = detail::option("precision", call.factor_name) +
              detail::option("computed", computed ? "yes" : "no");
  if (const cusolverStatus_t st = detail::record(handle, c); st != CUSOLVER_STATUS_SUCCESS)
    return st;
  detail::Call refine;
  refine.api = api, refine.routine = "irs_refinement", refine.type = call.main;
  refine.m = m, refine.n = n, refine.k = nrhs, refine.start = powertrain::emu::now_ns();
  const double steps = 1.0 + result.iterations;  // the first solve and each refinement
  refine.flops = steps * 4.0 * dm * dn * dr;
  refine.bytes =
      steps * (dm * dn * (call.main.bytes + call.factor.bytes) + 3.0 * dm * dr * call.main.bytes);
  refine.options = detail::option("iterations", result.iterations);
  if (const cusolverStatus_t st = detail::record(handle, refine); st != CUSOLVER_STATUS_SUCCESS)
    return st;
  if (result.fell_back) {
    c.type = call.main, c.start = powertrain::emu::now_ns();
    c.bytes = 2.0 * dm * dn * call.main.bytes;
    c.options = detail::option("precision", "main") + detail::option("fallback", "yes");
    return detail::record(handle, c);
  }
  return CUSOLVER_STATUS_SUCCESS;
}

size_t irs_workspace(std::int64_t m, std::int64_t n, std::int64_t nrhs, const detail::Type& main,
                     const detail::Type& factor) {
  // The low-precision copy of A, the residual and correction blocks, a panel.
  return static_cast<size_t>(std::max<std::int64_t>(1, m * n)) * factor.bytes +
         static_cast<size_t>(std::max<std::int64_t>(1, 2 * m * nrhs)) * main.bytes +
         static_cast<size_t>(detail::panel_lwork(n)) * main.bytes;
}

constexpr detail::Type kHalfR{CUDA_R_16F, 2, 2, false};
constexpr detail::Type kBf16R{CUDA_R_16BF, 2, 2, false};
constexpr detail::Type kHalfC{CUDA_C_16F, 4, 2, true};
constexpr detail::Type kBf16C{CUDA_C_16BF, 4, 2, true};
}  // namespace

// <main><factor> pairs: S/D/C/Z main with S, H, B, X factors (complex: C, K, E, Y).
#define PT_IRS(NAME, T, CT, MAIN, FACTOR, FNAME, LOW)                                             \
  PT_EXPORT cusolverStatus_t cusolverDn##NAME##gesv_bufferSize(                                   \
      cusolverDnHandle_t handle, cusolver_int_t n, cusolver_int_t nrhs, T* a, cusolver_int_t lda, \
      cusolver_int_t* ipiv, T* b, cusolver_int_t ldb, T* x, cusolver_int_t ldx, void* work,       \
      size_t* bytes) {                                                                            \
    (void)a, (void)lda, (void)ipiv, (void)b, (void)ldb, (void)x, (void)ldx, (void)work;           \
    const char* api = "cusolverDn" #NAME "gesv_bufferSize";                                       \
    cudaStream_t stream = nullptr;                                                                \
    if (!detail::handle_stream(handle, api, &stream)) return CUSOLVER_STATUS_NOT_INITIALIZED;     \
    if (bytes == nullptr || n < 0 || nrhs < 0) return detail::bad(api, "invalid sizes");          \
    *bytes = irs_workspace(n, n, nrhs, MAIN, FACTOR);                                             \
    return CUSOLVER_STATUS_SUCCESS;                                                               \
  }                                                                                               \
  PT_EXPORT cusolverStatus_t cusolverDn##NAME##gesv(                                              \
      cusolverDnHandle_t handle, cusolver_int_t n, cusolver_int_t nrhs, T* a, cusolver_int_t lda, \
      cusolver_int_t* ipiv, T* b, cusolver_int_t ldb, T* x, cusolver_int_t ldx, void* work,       \
      size_t work_bytes, cusolver_int_t* iter, cusolver_int_t* info) {                            \
    const IrsCall call{"cusolverDn" #NAME "gesv", false, MAIN, FACTOR, FNAME, LOW};               \
    return irs_run<CT>(handle, call, n, n, nrhs, a, lda, ipiv, b, ldb, x, ldx, work, work_bytes,  \
                       iter, info, nullptr);                                                      \
  }                                                                                               \
  PT_EXPORT cusolverStatus_t cusolverDn##NAME##gels_bufferSize(                                   \
      cusolverDnHandle_t handle, cusolver_int_t m, cusolver_int_t n, cusolver_int_t nrhs, T* a,   \
      cusolver_int_t lda, T* b, cusolver_int_t ldb, T* x, cusolver_int_t ldx, void* work,         \
      size_t* bytes) {                                                                            \
    (void)a, (void)lda, (void)b, (void)ldb, (void)x, (void)ldx, (void)work;                       \
    const char* api = "cusolverDn" #NAME "gels_bufferSize";                                       \
    cudaStream_t stream = nullptr;                                                                \
    if (!detail::handle_stream(handle, api, &stream)) return CUSOLVER_STATUS_NOT_INITIALIZED;     \
    if (bytes == nullptr || m < 0 || n < 0 || nrhs < 0) return detail::bad(api, "invalid sizes"); \
    *bytes = irs_workspace(m, n, nrhs, MAIN, FACTOR);                                             \
    return CUSOLVER_STATUS_SUCCESS;                                                               \
  }                                                                                               \
  PT_EXPORT cusolverStatus_t cusolverDn##NAME##gels(                                              \
      cusolverDnHandle_t handle, cusolver_int_t m, cusolver_int_t n, cusolver_int_t nrhs, T* a,   \
      cusolver_int_t lda, T* b, cusolver_int_t ldb, T* x, cusolver_int_t ldx, void* work,         \
      size_t work_bytes, cusolver_int_t* iter, cusolver_int_t* info) {                            \
    const IrsCall call{"cusolverDn" #NAME "gels", true, MAIN, FACTOR, FNAME, LOW};                \
    return irs_run<CT>(handle, call, m, n, nrhs, a, lda, nullptr, b, ldb, x, ldx, work,           \
                       work_bytes, iter, info, nullptr);                                          \
  }
PT_IRS(DD, double, double, detail::kD, detail::kD, "float64", Low::kSame)
PT_IRS(DS, double, double, detail::kD, detail::kS, "float32", Low::kSingle)
PT_IRS(DH, double, double, detail::kD, kHalfR, "float16", Low::kHalf)
PT_IRS(DB, double, double, detail::kD, kBf16R, "bfloat16", Low::kBfloat16)
PT_IRS(DX, double, double, detail::kD, detail::kS, "tf32", Low::kTf32)
PT_IRS(SS, float, float, detail::kS, detail::kS, "float32", Low::kSame)
PT_IRS(SH, float, float, detail::kS, kHalfR, "float16", Low::kHalf)
PT_IRS(SB, float, float, detail::kS, kBf16R, "bfloat16", Low::kBfloat16)
PT_IRS(SX, float, float, detail::kS, detail::kS, "tf32", Low::kTf32)
PT_IRS(ZZ, cuDoubleComplex, std::complex<double>, detail::kZ, detail::kZ, "complex128", Low::kSame)
PT_IRS(ZC, cuDoubleComplex, std::complex<double>, detail::kZ, detail::kC, "complex64", Low::kSingle)
PT_IRS(ZK, cuDoubleComplex, std::complex<double>, detail::kZ, kHalfC, "complex32", Low::kHalf)
PT_IRS(ZE, cuDoubleComplex, std::complex<double>, detail::kZ, kBf16C, "complex_bfloat16",
       Low::kBfloat16)
PT_IRS(ZY, cuDoubleComplex, std::complex<double>, detail::kZ, detail::kC, "complex_tf32",
       Low::kTf32)
PT_IRS(CC, cuComplex, std::complex<float>, detail::kC, detail::kC, "complex64", Low::kSame)
PT_IRS(CK, cuComplex, std::complex<float>, detail::kC, kHalfC, "complex32", Low::kHalf)
PT_IRS(CE, cuComplex, std::complex<float>, detail::kC, kBf16C, "complex_bfloat16", Low::kBfloat16)
PT_IRS(CY, cuComplex, std::complex<float>, detail::kC, detail::kC, "complex_tf32", Low::kTf32)
#undef PT_IRS

// ---- the IRS expert interface: parameters, infos, IRSXgesv and IRSXgels ----------------------
namespace {
struct IrsParams {
  cusolverIRSRefinement_t refinement = CUSOLVER_IRS_REFINE_CLASSICAL;
  cusolverPrecType_t main = CUSOLVER_R_64F;
  cusolverPrecType_t lowest = CUSOLVER_R_64F;
  bool main_set = false, lowest_set = false;
  double tol = 0.0, tol_inner = 0.0;  // 0: cuSOLVER's default criterion
  int max_iters = 50, max_iters_inner = 50;
  bool fallback = true;
};

struct IrsInfos {
  int niters = 0, outer_niters = 0, max_iters = 50;
  bool residual_requested = false;
  std::vector<double> history;  // (maxiters + 1) x 2, column-major: iteration, ‖r‖∞
};

template <typename T>
cusolverStatus_t irs_create(std::unordered_set<const void*>& set, T** out, const char* api) {
  if (out == nullptr) return detail::bad(api, "the result pointer is NULL");
  T* object = new T;
  std::lock_guard<std::mutex> lock(detail::solver().mutex);
  set.insert(object);
  *out = object;
  return CUSOLVER_STATUS_SUCCESS;
}
template <typename T>
cusolverStatus_t irs_destroy(std::unordered_set<const void*>& set, T* object, const char* api) {
  std::lock_guard<std::mutex> lock(detail::solver().mutex);
  if (set.erase(object) == 0) {
    powertrain::emu::report_misuse(api,
                                   "invalid or destroyed object " + detail::pointer_text(object));
    return CUSOLVER_STATUS_INVALID_VALUE;
  }
  delete object;
  return CUSOLVER_STATUS_SUCCESS;
}
}  // namespace

PT_EXPORT cusolverStatus_t cusolverDnIRSParamsCreate(cusolverDnIRSParams_t* params) {
  IrsParams* p = nullptr;
  const cusolverStatus_t s =
      irs_create(detail::solver().irs_params, &p, "cusolverDnIRSParamsCreate");
  if (s == CUSOLVER_STATUS_SUCCESS) *params = reinterpret_cast<cusolverDnIRSParams_t>(p);
  return s;
}
PT_EXPORT cusolverStatus_t cusolverDnIRSParamsDestroy(cusolverDnIRSParams_t params) {
  return irs_destroy(detail::solver().irs_params, reinterpret_cast<IrsParams*>(params),
                     "cusolverDnIRSParamsDestroy");
}
PT_EXPORT cusolverStatus_t cusolverDnIRSInfosCreate(cusolverDnIRSInfos_t* infos) {
  IrsInfos* p = nullptr;
  const cusolverStatus_t s = irs_create(detail::solver().irs_infos, &p, "cusolverDnIRSInfosCreate");
  if (s == CUSOLVER_STATUS_SUCCESS) *infos = reinterpret_cast<cusolverDnIRSInfos_t>(p);
  return s;
}
PT_EXPORT cusolverStatus_t cusolverDnIRSInfosDestroy(cusolverDnIRSInfos_t infos) {
  return irs_destroy(detail::solver().irs_infos, reinterpret_cast<IrsInfos*>(infos),
                     "cusolverDnIRSInfosDestroy");
}

namespace {
bool known_precision(cusolverPrecType_t p) {
  switch (p) {
    case CUSOLVER_R_64F:
    case CUSOLVER_R_32F:
    case CUSOLVER_R_16F:
    case CUSOLVER_R_16BF:
    case CUSOLVER_R_TF32:
    case CUSOLVER_C_64F:
    case CUSOLVER_C_32F:
    case CUSOLVER_C_16F:
    case CUSOLVER_C_16BF:
    case CUSOLVER_C_TF32:
      return true;
    default:
      return false;
  }
}
// Runs `set` on live params, or refuses them.
// Runs `set` on live params under the registry's lock (a concurrent destroy waits).
template <typename Set>
cusolverStatus_t with_params(cusolverDnIRSParams_t params, const char* api, Set set) {
  {
    std::lock_guard<std::mutex> lock(detail::solver().mutex);
    if (detail::solver().irs_params.count(params) > 0)
      return set(*reinterpret_cast<IrsParams*>(params));
  }
  powertrain::emu::report_misuse(api, "invalid or destroyed IRS params");
  return CUSOLVER_STATUS_IRS_PARAMS_NOT_INITIALIZED;
}
}  // namespace

PT_EXPORT cusolverStatus_t cusolverDnIRSParamsSetRefinementSolver(
    cusolverDnIRSParams_t params, cusolverIRSRefinement_t solver_kind) {
  return with_params(params, "cusolverDnIRSParamsSetRefinementSolver", [&](IrsParams& p) {
    if (solver_kind < CUSOLVER_IRS_REFINE_NOT_SET ||
        solver_kind > CUSOLVER_IRS_REFINE_GMRES_NOPCOND)
      return CUSOLVER_STATUS_IRS_PARAMS_INVALID_REFINE;
    p.refinement = solver_kind;
    return CUSOLVER_STATUS_SUCCESS;
  });
}
PT_EXPORT cusolverStatus_t cusolverDnIRSParamsSetSolverMainPrecision(cusolverDnIRSParams_t params,
                                                                     cusolverPrecType_t main) {
  return with_params(params, "cusolverDnIRSParamsSetSolverMainPrecision", [&](IrsParams& p) {
    if (main != CUSOLVER_R_64F && main != CUSOLVER_R_32F && main != CUSOLVER_C_64F &&
        main != CUSOLVER_C_32F)
      return CUSOLVER_STATUS_IRS_PARAMS_INVALID_PREC;
    p.main = main, p.main_set = true;
    return CUSOLVER_STATUS_SUCCESS;
  });
}
PT_EXPORT cusolverStatus_t cusolverDnIRSParamsSetSolverLowestPrecision(cusolverDnIRSParams_t params,
                                                                       cusolverPrecType_t lowest) {
  return with_params(params, "cusolverDnIRSParamsSetSolverLowestPrecision", [&](IrsParams& p) {
    if (!known_precision(lowest)) return CUSOLVER_STATUS_IRS_PARAMS_INVALID_PREC;
    p.lowest = lowest, p.lowest_set = true;
    return CUSOLVER_STATUS_SUCCESS;
  });
}
PT_EXPORT cusolverStatus_t cusolverDnIRSParamsSetSolverPrecisions(cusolverDnIRSParams_t params,
                                                                  cusolverPrecType_t main,
                                                                  cusolverPrecType_t lowest) {
  const cusolverStatus_t s = cusolverDnIRSParamsSetSolverMainPrecision(params, main);
  return s != CUSOLVER_STATUS_SUCCESS ? s
                                      : cusolverDnIRSParamsSetSolverLowestPrecision(params, lowest);
}
PT_EXPORT cusolverStatus_t cusolverDnIRSParamsSetTol(cusolverDnIRSParams_t params, double value) {
  return with_params(params, "cusolverDnIRSParamsSetTol", [&](IrsParams& p) {
    if (!(value >= 0.0)) return CUSOLVER_STATUS_IRS_PARAMS_INVALID;
    p.tol = value;
    return CUSOLVER_STATUS_SUCCESS;
  });
}
PT_EXPORT cusolverStatus_t cusolverDnIRSParamsSetTolInner(cusolverDnIRSParams_t params,
                                                          double value) {
  return with_params(params, "cusolverDnIRSParamsSetTolInner", [&](IrsParams& p) {
    if (!(value >= 0.0)) return CUSOLVER_STATUS_IRS_PARAMS_INVALID;
    p.tol_inner = value;
    return CUSOLVER_STATUS_SUCCESS;
  });
}
PT_EXPORT cusolverStatus_t cusolverDnIRSParamsSetMaxIters(cusolverDnIRSParams_t params,
                                                          cusolver_int_t max_iters) {
  return with_params(params, "cusolverDnIRSParamsSetMaxIters", [&](IrsParams& p) {
    if (max_iters <= 0) return CUSOLVER_STATUS_IRS_PARAMS_INVALID_MAXITER;
    p.max_iters = max_iters;
    return CUSOLVER_STATUS_SUCCESS;
  });
}
PT_EXPORT cusolverStatus_t cusolverDnIRSParamsSetMaxItersInner(cusolverDnIRSParams_t params,
                                                               cusolver_int_t max_iters) {
  return with_params(params, "cusolverDnIRSParamsSetMaxItersInner", [&](IrsParams& p) {
    if (max_iters <= 0 || max_iters > p.max_iters)
      return CUSOLVER_STATUS_IRS_PARAMS_INVALID_MAXITER;
    p.max_iters_inner = max_iters;
    return CUSOLVER_STATUS_SUCCESS;
  });
}
PT_EXPORT cusolverStatus_t cusolverDnIRSParamsGetMaxIters(cusolverDnIRSParams_t params,
                                                          cusolver_int_t* max_iters) {
  return with_params(params, "cusolverDnIRSParamsGetMaxIters", [&](IrsParams& p) {
    if (max_iters == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
    *max_iters = p.max_iters;
    return CUSOLVER_STATUS_SUCCESS;
  });
}
PT_EXPORT cusolverStatus_t cusolverDnIRSParamsEnableFallback(cusolverDnIRSParams_t params) {
  return with_params(params, "cusolverDnIRSParamsEnableFallback", [&](IrsParams& p) {
    p.fallback = true;
    return CUSOLVER_STATUS_SUCCESS;
  });
}
PT_EXPORT cusolverStatus_t cusolverDnIRSParamsDisableFallback(cusolverDnIRSParams_t params) {
  return with_params(params, "cusolverDnIRSParamsDisableFallback", [&](IrsParams& p) {
    p.fallback = false;
    return CUSOLVER_STATUS_SUCCESS;
  });
}

namespace {
template <typename Get>
cusolverStatus_t with_infos(cusolverDnIRSInfos_t infos, const char* api, Get get) {
  {
    std::lock_guard<std::mutex> lock(detail::solver().mutex);
    if (detail::solver().irs_infos.count(infos) > 0)
      return get(*reinterpret_cast<IrsInfos*>(infos));
  }
  powertrain::emu::report_misuse(api, "invalid or destroyed IRS infos");
  return CUSOLVER_STATUS_IRS_INFOS_NOT_INITIALIZED;
}
}  // namespace

PT_EXPORT cusolverStatus_t cusolverDnIRSInfosGetNiters(cusolverDnIRSInfos_t infos,
                                                       cusolver_int_t* niters) {
  return with_infos(infos, "cusolverDnIRSInfosGetNiters", [&](IrsInfos& i) {
    if (niters == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
    *niters = i.niters;
    return CUSOLVER_STATUS_SUCCESS;
  });
}
PT_EXPORT cusolverStatus_t cusolverDnIRSInfosGetOuterNiters(cusolverDnIRSInfos_t infos,
                                                            cusolver_int_t* niters) {
  return with_infos(infos, "cusolverDnIRSInfosGetOuterNiters", [&](IrsInfos& i) {
    if (niters == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
    *niters = i.outer_niters;
    return CUSOLVER_STATUS_SUCCESS;
  });
}
PT_EXPORT cusolverStatus_t cusolverDnIRSInfosGetMaxIters(cusolverDnIRSInfos_t infos,
                                                         cusolver_int_t* max_iters) {
  return with_infos(infos, "cusolverDnIRSInfosGetMaxIters", [&](IrsInfos& i) {
    if (max_iters == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
    *max_iters = i.max_iters;
    return CUSOLVER_STATUS_SUCCESS;
  });
}
PT_EXPORT cusolverStatus_t cusolverDnIRSInfosRequestResidual(cusolverDnIRSInfos_t infos) {
  return with_infos(infos, "cusolverDnIRSInfosRequestResidual", [&](IrsInfos& i) {
    i.residual_requested = true;
    return CUSOLVER_STATUS_SUCCESS;
  });
}
PT_EXPORT cusolverStatus_t cusolverDnIRSInfosGetResidualHistory(cusolverDnIRSInfos_t infos,
                                                                void** history) {
  return with_infos(infos, "cusolverDnIRSInfosGetResidualHistory", [&](IrsInfos& i) {
    if (history == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
    if (!i.residual_requested) return CUSOLVER_STATUS_INVALID_VALUE;
    *history = i.history.data();
    return CUSOLVER_STATUS_SUCCESS;
  });
}

namespace {
// The IrsCall of a parameter set (main precision T's kind, lowest precision the factor's).
bool irs_call_of(const IrsParams& p, bool least_squares, const char* api, IrsCall* call) {
  if (!p.main_set) return false;
  const bool complex = p.main == CUSOLVER_C_64F || p.main == CUSOLVER_C_32F;
  const bool main_double = p.main == CUSOLVER_R_64F || p.main == CUSOLVER_C_64F;
  const cusolverPrecType_t lowest = p.lowest_set ? p.lowest : p.main;
  call->api = api, call->least_squares = least_squares;
  call->main =
      complex ? (main_double ? detail::kZ : detail::kC) : (main_double ? detail::kD : detail::kS);
  call->max_iters = p.max_iters, call->fallback = p.fallback, call->tol = p.tol;
  switch (lowest) {
    case CUSOLVER_R_64F:
    case CUSOLVER_C_64F:
      call->low = Low::kSame;
      call->factor = call->main, call->factor_name = main_double ? "float64" : "float32";
      return main_double || lowest == p.main;
    case CUSOLVER_R_32F:
    case CUSOLVER_C_32F:
      call->low = main_double ? Low::kSingle : Low::kSame;
      call->factor = complex ? detail::kC : detail::kS, call->factor_name = "float32";
      return true;
    case CUSOLVER_R_16F:
    case CUSOLVER_C_16F:
      call->low = Low::kHalf, call->factor = complex ? kHalfC : kHalfR;
      call->factor_name = "float16";
      return true;
    case CUSOLVER_R_16BF:
    case CUSOLVER_C_16BF:
      call->low = Low::kBfloat16, call->factor = complex ? kBf16C : kBf16R;
      call->factor_name = "bfloat16";
      return true;
    case CUSOLVER_R_TF32:
    case CUSOLVER_C_TF32:
      call->low = Low::kTf32, call->factor = complex ? detail::kC : detail::kS;
      call->factor_name = "tf32";
      return true;
    default:
      return false;
  }
}

cusolverStatus_t irs_x(cusolverDnHandle_t handle, cusolverDnIRSParams_t params,
                       cusolverDnIRSInfos_t infos, bool least_squares, std::int64_t m,
                       std::int64_t n, std::int64_t nrhs, void* a, std::int64_t lda, void* b,
                       std::int64_t ldb, void* x, std::int64_t ldx, void* work, size_t work_bytes,
                       int* niters, int* info, const char* api) {
  IrsParams settings;  // a copy: the solve runs without the registry's lock
  if (with_params(params, api, [&](IrsParams& p) {
        settings = p;
        return CUSOLVER_STATUS_SUCCESS;
      }) != CUSOLVER_STATUS_SUCCESS)
    return CUSOLVER_STATUS_IRS_PARAMS_NOT_INITIALIZED;
  if (infos != nullptr && with_infos(infos, api, [](IrsInfos&) {
                            return CUSOLVER_STATUS_SUCCESS;
                          }) != CUSOLVER_STATUS_SUCCESS)
    return CUSOLVER_STATUS_IRS_INFOS_NOT_INITIALIZED;
  const IrsParams* p = &settings;
  IrsCall call;
  if (!irs_call_of(*p, least_squares, api, &call)) {
    powertrain::emu::report_misuse(api,
                                   "the main precision is not set, or the lowest precision "
                                   "is above it");
    return CUSOLVER_STATUS_IRS_PARAMS_INVALID_PREC;
  }
  IrsResult result;
  cusolverStatus_t s = CUSOLVER_STATUS_SUCCESS;
  if (call.main.dtype == CUDA_R_64F) {
    s = irs_run<double>(handle, call, m, n, nrhs, a, lda, nullptr, b, ldb, x, ldx, work, work_bytes,
                        niters, info, &result);
  } else if (call.main.dtype == CUDA_R_32F) {
    s = irs_run<float>(handle, call, m, n, nrhs, a, lda, nullptr, b, ldb, x, ldx, work, work_bytes,
                       niters, info, &result);
  } else if (call.main.dtype == CUDA_C_64F) {
    s = irs_run<std::complex<double>>(handle, call, m, n, nrhs, a, lda, nullptr, b, ldb, x, ldx,
                                      work, work_bytes, niters, info, &result);
  } else {
    s = irs_run<std::complex<float>>(handle, call, m, n, nrhs, a, lda, nullptr, b, ldb, x, ldx,
                                     work, work_bytes, niters, info, &result);
  }
  if (s == CUSOLVER_STATUS_SUCCESS && infos != nullptr) {
    with_infos(infos, api, [&](IrsInfos& i) {
      i.niters = result.iter, i.outer_niters = result.iterations, i.max_iters = p->max_iters;
      i.history.assign(static_cast<std::size_t>(2 * (p->max_iters + 1)), 0.0);
      for (std::size_t k = 0;
           k < result.residuals.size() && k <= static_cast<std::size_t>(p->max_iters); ++k) {
        i.history[k] = static_cast<double>(k);
        i.history[static_cast<std::size_t>(p->max_iters + 1) + k] = result.residuals[k];
      }
      return CUSOLVER_STATUS_SUCCESS;
    });
  }
  return s;
}

cusolverStatus_t irs_x_buffer(cusolverDnHandle_t handle, cusolverDnIRSParams_t params,
                              std::int64_t m, std::int64_t n, std::int64_t nrhs, size_t* bytes,
                              const char* api) {
  IrsParams settings;
  if (with_params(params, api, [&](IrsParams& p) {
        settings = p;
        return CUSOLVER_STATUS_SUCCESS;
      }) != CUSOLVER_STATUS_SUCCESS)
    return CUSOLVER_STATUS_IRS_PARAMS_NOT_INITIALIZED;
  IrsCall call;
  if (!irs_call_of(settings, false, api, &call)) return CUSOLVER_STATUS_IRS_PARAMS_INVALID_PREC;
  cudaStream_t stream = nullptr;
  if (!detail::handle_stream(handle, api, &stream)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  if (bytes == nullptr || m < 0 || n < 0 || nrhs < 0) return detail::bad(api, "invalid sizes");
  *bytes = irs_workspace(m, n, nrhs, call.main, call.factor);
  return CUSOLVER_STATUS_SUCCESS;
}
}  // namespace

PT_EXPORT cusolverStatus_t cusolverDnIRSXgesv_bufferSize(cusolverDnHandle_t handle,
                                                         cusolverDnIRSParams_t params,
                                                         cusolver_int_t n, cusolver_int_t nrhs,
                                                         size_t* bytes) {
  return irs_x_buffer(handle, params, n, n, nrhs, bytes, "cusolverDnIRSXgesv_bufferSize");
}
PT_EXPORT cusolverStatus_t cusolverDnIRSXgesv(cusolverDnHandle_t handle,
                                              cusolverDnIRSParams_t params,
                                              cusolverDnIRSInfos_t infos, cusolver_int_t n,
                                              cusolver_int_t nrhs, void* a, cusolver_int_t lda,
                                              void* b, cusolver_int_t ldb, void* x,
                                              cusolver_int_t ldx, void* work, size_t work_bytes,
                                              cusolver_int_t* niters, cusolver_int_t* info) {
  return irs_x(handle, params, infos, false, n, n, nrhs, a, lda, b, ldb, x, ldx, work, work_bytes,
               niters, info, "cusolverDnIRSXgesv");
}
PT_EXPORT cusolverStatus_t cusolverDnIRSXgels_bufferSize(cusolverDnHandle_t handle,
                                                         cusolverDnIRSParams_t params,
                                                         cusolver_int_t m, cusolver_int_t n,
                                                         cusolver_int_t nrhs, size_t* bytes) {
  return irs_x_buffer(handle, params, m, n, nrhs, bytes, "cusolverDnIRSXgels_bufferSize");
}
PT_EXPORT cusolverStatus_t cusolverDnIRSXgels(
    cusolverDnHandle_t handle, cusolverDnIRSParams_t params, cusolverDnIRSInfos_t infos,
    cusolver_int_t m, cusolver_int_t n, cusolver_int_t nrhs, void* a, cusolver_int_t lda, void* b,
    cusolver_int_t ldb, void* x, cusolver_int_t ldx, void* work, size_t work_bytes,
    cusolver_int_t* niters, cusolver_int_t* info) {
  return irs_x(handle, params, infos, true, m, n, nrhs, a, lda, b, ldb, x, ldx, work, work_bytes,
               niters, info, "cusolverDnIRSXgels");
}

// ---- reductions to bidiagonal/tridiagonal form and their orthogonal factors, sytri, sygvdx, and
// the handle's modes ----------------------------------------------------------------------------
// Recorded like the routines above (nothing computed; info 0 where backed), with LAPACK working
// note 41's counts: gebrd 4mn² − 4/3·n³ (m ≥ n, as cuSOLVER requires), orgbr/ungbr as orgqr
// (4mnk − 2(m+n)k² + 4/3·k³), sytrd/hetrd 4/3·n³, orgtr/ungtr 4/3·n³, ormtr/unmtr 2m²n (left)
// or 2mn² (right), sytri 2/3·n³, sygvdx/hegvdx as sygvd with an index range. Workspaces: a
// 64-column panel ((m + n)·64 for gebrd). The deterministic, math and emulation modes are kept
// on the handle and read back (the emulator's numbers do not depend on them).
namespace {
// The m × n matrix routine with extra device arrays to check (d, e, taus: `count` elements each).
cusolverStatus_t reduction(cusolverDnHandle_t handle, const detail::Type& t, const char* routine,
                           std::int64_t m, std::int64_t n, std::int64_t k, const void* a,
                           std::int64_t lda, std::initializer_list<const void*> arrays,
                           std::int64_t count, int element_bytes, int* info, double flops,
                           const std::string& options, const char* api) {
  for (const void* p : arrays) {
    if (p != nullptr && !detail::device_array(p, static_cast<double>(count) * element_bytes))
      return detail::bad(
          api, "an output array is not device memory of " + std::to_string(count) + " elements");
  }
  return detail::square_routine(handle, t, routine, m, n, k, a, lda, info, flops, options, api);
}
double orgqr_flops(double m, double n, double k) {
  return 4.0 * m * n * k - 2.0 * (m + n) * k * k + 4.0 / 3.0 * k * k * k;
}
}  // namespace

#define PT_SOLVER_REDUCE(P, T, R, TYPE, ORGBR, SYTRD, ORGTR, ORMTR, SYGVDX)                        \
  PT_EXPORT cusolverStatus_t cusolverDn##P##gebrd_bufferSize(cusolverDnHandle_t handle, int m,     \
                                                             int n, int* lwork) {                  \
    return detail::checked_lwork(handle, lwork, double(std::max(m + n, 1)) * 64.0,                 \
                                 "cusolverDn" #P "gebrd_bufferSize");                              \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##gebrd(cusolverDnHandle_t handle, int m, int n, T* A,   \
                                                  int lda, R* D, R* E, T* TAUQ, T* TAUP, T* work,  \
                                                  int lwork, int* info) {                          \
    (void)work, (void)lwork;                                                                       \
    const char* api = "cusolverDn" #P "gebrd";                                                     \
    if (m < n) return detail::bad(api, "gebrd needs m >= n: cuSOLVER's restriction");              \
    if (n > 0 && (!detail::device_array(TAUQ, double(n) * TYPE.bytes) ||                           \
                  !detail::device_array(TAUP, double(n) * TYPE.bytes)))                            \
      return detail::bad(api, "TAUQ or TAUP is not device memory of n elements");                  \
    const double dm = m, dn = n;                                                                   \
    if (n > 1 && !detail::device_array(E, double(n - 1) * TYPE.real_bytes))                        \
      return detail::bad(api, "E is not device memory of n - 1 elements");                         \
    return reduction(handle, TYPE, "gebrd", m, n, n, A, lda, {D}, n, TYPE.real_bytes, info,        \
                     4.0 * dm * dn * dn - 4.0 / 3.0 * dn * dn * dn, "", api);                      \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##ORGBR##_bufferSize(                                    \
      cusolverDnHandle_t handle, cublasSideMode_t side, int m, int n, int k, const T* A, int lda,  \
      const T* tau, int* lwork) {                                                                  \
    (void)side, (void)m, (void)k, (void)A, (void)lda, (void)tau;                                   \
    return detail::checked_lwork(handle, lwork, double(detail::panel_lwork(n)),                    \
                                 "cusolverDn" #P #ORGBR "_bufferSize");                            \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##ORGBR(                                                 \
      cusolverDnHandle_t handle, cublasSideMode_t side, int m, int n, int k, T* A, int lda,        \
      const T* tau, T* work, int lwork, int* info) {                                               \
    (void)work, (void)lwork;                                                                       \
    const int reflectors = std::min(side == CUBLAS_SIDE_LEFT ? m : n, k);                          \
    return reduction(                                                                              \
        handle, TYPE, #ORGBR, m, n, std::min(k, n), A, lda, {tau}, std::max(reflectors, 1),        \
        TYPE.bytes, info, orgqr_flops(m, n, std::min(k, std::min(m, n))),                          \
        detail::option("side", side == CUBLAS_SIDE_LEFT ? "Q" : "P"), "cusolverDn" #P #ORGBR);     \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##SYTRD##_bufferSize(                                    \
      cusolverDnHandle_t handle, cublasFillMode_t uplo, int n, const T* A, int lda, const R* d,    \
      const R* e, const T* tau, int* lwork) {                                                      \
    (void)uplo, (void)A, (void)lda, (void)d, (void)e, (void)tau;                                   \
    return detail::checked_lwork(handle, lwork, double(detail::panel_lwork(n)),                    \
                                 "cusolverDn" #P #SYTRD "_bufferSize");                            \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##SYTRD(                                                 \
      cusolverDnHandle_t handle, cublasFillMode_t uplo, int n, T* A, int lda, R* d, R* e, T* tau,  \
      T* work, int lwork, int* info) {                                                             \
    (void)work, (void)lwork;                                                                       \
    const char* api = "cusolverDn" #P #SYTRD;                                                      \
    if (n > 0 && (!detail::device_array(d, double(n) * TYPE.real_bytes) ||                         \
                  !detail::device_array(e, double(std::max(n - 1, 1)) * TYPE.real_bytes)))         \
      return detail::bad(api, "d or e is not device memory of its size");                          \
    const double dn = n;                                                                           \
    return reduction(handle, TYPE, #SYTRD, n, n, n, A, lda, {tau}, std::max(n - 1, 1), TYPE.bytes, \
                     info, 4.0 / 3.0 * dn * dn * dn,                                               \
                     detail::option("uplo", detail::fill_text(uplo)), api);                        \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##ORGTR##_bufferSize(                                    \
      cusolverDnHandle_t handle, cublasFillMode_t uplo, int n, const T* A, int lda, const T* tau,  \
      int* lwork) {                                                                                \
    (void)uplo, (void)A, (void)lda, (void)tau;                                                     \
    return detail::checked_lwork(handle, lwork, double(detail::panel_lwork(n)),                    \
                                 "cusolverDn" #P #ORGTR "_bufferSize");                            \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##ORGTR(cusolverDnHandle_t handle,                       \
                                                  cublasFillMode_t uplo, int n, T* A, int lda,     \
                                                  const T* tau, T* work, int lwork, int* info) {   \
    (void)work, (void)lwork;                                                                       \
    const double dn = n;                                                                           \
    return reduction(handle, TYPE, #ORGTR, n, n, n, A, lda, {tau}, std::max(n - 1, 1), TYPE.bytes, \
                     info, 4.0 / 3.0 * dn * dn * dn,                                               \
                     detail::option("uplo", detail::fill_text(uplo)), "cusolverDn" #P #ORGTR);     \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##ORMTR##_bufferSize(                                    \
      cusolverDnHandle_t handle, cublasSideMode_t side, cublasFillMode_t uplo,                     \
      cublasOperation_t trans, int m, int n, const T* A, int lda, const T* tau, const T* C,        \
      int ldc, int* lwork) {                                                                       \
    (void)side, (void)uplo, (void)trans, (void)A, (void)lda, (void)tau, (void)C, (void)ldc;        \
    return detail::checked_lwork(handle, lwork, double(detail::panel_lwork(std::max(m, n))),       \
                                 "cusolverDn" #P #ORMTR "_bufferSize");                            \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##ORMTR(                                                 \
      cusolverDnHandle_t handle, cublasSideMode_t side, cublasFillMode_t uplo,                     \
      cublasOperation_t trans, int m, int n, T* A, int lda, T* tau, T* C, int ldc, T* work,        \
      int lwork, int* info) {                                                                      \
    (void)work, (void)lwork;                                                                       \
    const char* api = "cusolverDn" #P #ORMTR;                                                      \
    const bool left = side == CUBLAS_SIDE_LEFT;                                                    \
    const int order = left ? m : n; /* A is order x order */                                       \
    if (!detail::valid_shape(order, order, lda) ||                                                 \
        !detail::device_matrix(A, order, order, lda, TYPE.bytes))                                  \
      return detail::bad(api, "A is not an order x order device matrix");                          \
    const double dm = m, dn = n;                                                                   \
    return reduction(handle, TYPE, #ORMTR, m, n, std::min(order, n), C, ldc, {tau},                \
                     std::max(order - 1, 1), TYPE.bytes, info,                                     \
                     left ? 2.0 * dm * dm * dn : 2.0 * dm * dn * dn,                               \
                     detail::option("side", left ? "L" : "R") +                                    \
                         detail::option("uplo", detail::fill_text(uplo)) +                         \
                         detail::option("trans", detail::op_text(trans)),                          \
                     api);                                                                         \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##sytri_bufferSize(                                      \
      cusolverDnHandle_t handle, cublasFillMode_t uplo, int n, T* A, int lda, const int* ipiv,     \
      int* lwork) {                                                                                \
    (void)uplo, (void)A, (void)lda, (void)ipiv;                                                    \
    return detail::checked_lwork(handle, lwork, double(detail::panel_lwork(n)),                    \
                                 "cusolverDn" #P "sytri_bufferSize");                              \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##sytri(                                                 \
      cusolverDnHandle_t handle, cublasFillMode_t uplo, int n, T* A, int lda, const int* ipiv,     \
      T* work, int lwork, int* info) {                                                             \
    (void)work, (void)lwork;                                                                       \
    const double dn = n;                                                                           \
    return reduction(handle, TYPE, "sytri", n, n, n, A, lda, {ipiv}, std::max(n, 1),               \
                     static_cast<int>(sizeof(int)), info, 2.0 / 3.0 * dn * dn * dn,                \
                     detail::option("uplo", detail::fill_text(uplo)), "cusolverDn" #P "sytri");    \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##SYGVDX##_bufferSize(                                   \
      cusolverDnHandle_t handle, cusolverEigType_t itype, cusolverEigMode_t jobz,                  \
      cusolverEigRange_t range, cublasFillMode_t uplo, int n, const T* A, int lda, const T* B,     \
      int ldb, R vl, R vu, int il, int iu, int* meig, const R* W, int* lwork) {                    \
    (void)itype, (void)range, (void)uplo, (void)A, (void)lda, (void)B, (void)ldb, (void)vl,        \
        (void)vu, (void)il, (void)iu, (void)meig, (void)W;                                         \
    return detail::checked_lwork(handle, lwork, double(detail::syevd_lwork(jobz, n)),              \
                                 "cusolverDn" #P #SYGVDX "_bufferSize");                           \
  }                                                                                                \
  PT_EXPORT cusolverStatus_t cusolverDn##P##SYGVDX(                                                \
      cusolverDnHandle_t handle, cusolverEigType_t itype, cusolverEigMode_t jobz,                  \
      cusolverEigRange_t range, cublasFillMode_t uplo, int n, T* A, int lda, T* B, int ldb, R vl,  \
      R vu, int il, int iu, int* meig, R* W, T* work, int lwork, int* info) {                      \
    (void)vl, (void)vu, (void)work, (void)lwork;                                                   \
    if (itype < CUSOLVER_EIG_TYPE_1 || itype > CUSOLVER_EIG_TYPE_3)                                \
      return detail::bad("cusolverDn" #P #SYGVDX, "itype must be 1, 2 or 3");                      \
    return detail::eigen_dc(handle, TYPE, jobz, range, uplo, n, A, lda, B, ldb, il, iu, meig, W,   \
                            info, #SYGVDX, "cusolverDn" #P #SYGVDX);                               \
  }
PT_SOLVER_REDUCE(S, float, float, detail::kS, orgbr, sytrd, orgtr, ormtr, sygvdx)
PT_SOLVER_REDUCE(D, double, double, detail::kD, orgbr, sytrd, orgtr, ormtr, sygvdx)
PT_SOLVER_REDUCE(C, cuComplex, float, detail::kC, ungbr, hetrd, ungtr, unmtr, hegvdx)
PT_SOLVER_REDUCE(Z, cuDoubleComplex, double, detail::kZ, ungbr, hetrd, ungtr, unmtr, hegvdx)
#undef PT_SOLVER_REDUCE

namespace {
template <typename Update>
cusolverStatus_t with_handle(cusolverDnHandle_t handle, const char* api, Update update) {
  std::lock_guard<std::mutex> lock(detail::solver().mutex);
  if (detail::solver().handles.count(handle) == 0) {
    powertrain::emu::report_misuse(
        api, "invalid or destroyed cuSOLVER handle " + detail::pointer_text(handle));
    return CUSOLVER_STATUS_NOT_INITIALIZED;
  }
  return update(*reinterpret_cast<detail::SolverHandle*>(handle));
}
}  // namespace

PT_EXPORT cusolverStatus_t cusolverDnSetDeterministicMode(cusolverDnHandle_t handle,
                                                          cusolverDeterministicMode_t mode) {
  return with_handle(handle, "cusolverDnSetDeterministicMode", [&](detail::SolverHandle& h) {
    if (mode != CUSOLVER_DETERMINISTIC_RESULTS && mode != CUSOLVER_ALLOW_NON_DETERMINISTIC_RESULTS)
      return CUSOLVER_STATUS_INVALID_VALUE;
    h.deterministic = mode;
    return CUSOLVER_STATUS_SUCCESS;
  });
}
PT_EXPORT cusolverStatus_t cusolverDnGetDeterministicMode(cusolverDnHandle_t handle,
                                                          cusolverDeterministicMode_t* mode) {
  return with_handle(handle, "cusolverDnGetDeterministicMode", [&](detail::SolverHandle& h) {
    if (mode == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
    *mode = static_cast<cusolverDeterministicMode_t>(h.deterministic);
    return CUSOLVER_STATUS_SUCCESS;
  });
}
PT_EXPORT cusolverStatus_t cusolverDnSetMathMode(cusolverDnHandle_t handle,
                                                 cusolverMathMode_t mode) {
  return with_handle(handle, "cusolverDnSetMathMode", [&](detail::SolverHandle& h) {
    if (mode != CUSOLVER_DEFAULT_MATH && mode != CUSOLVER_FP32_EMULATED_BF16X9_MATH)
      return CUSOLVER_STATUS_INVALID_VALUE;
    h.math = mode;
    return CUSOLVER_STATUS_SUCCESS;
  });
}
PT_EXPORT cusolverStatus_t cusolverDnGetMathMode(cusolverDnHandle_t handle,
                                                 cusolverMathMode_t* mode) {
  return with_handle(handle, "cusolverDnGetMathMode", [&](detail::SolverHandle& h) {
    if (mode == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
    *mode = static_cast<cusolverMathMode_t>(h.math);
    return CUSOLVER_STATUS_SUCCESS;
  });
}
PT_EXPORT cusolverStatus_t cusolverDnSetEmulationStrategy(cusolverDnHandle_t handle,
                                                          cudaEmulationStrategy_t strategy) {
  return with_handle(handle, "cusolverDnSetEmulationStrategy", [&](detail::SolverHandle& h) {
    if (strategy < CUDA_EMULATION_STRATEGY_DEFAULT || strategy > CUDA_EMULATION_STRATEGY_EAGER)
      return CUSOLVER_STATUS_INVALID_VALUE;
    h.emulation = strategy;
    return CUSOLVER_STATUS_SUCCESS;
  });
}
PT_EXPORT cusolverStatus_t cusolverDnGetEmulationStrategy(cusolverDnHandle_t handle,
                                                          cudaEmulationStrategy_t* strategy) {
  return with_handle(handle, "cusolverDnGetEmulationStrategy", [&](detail::SolverHandle& h) {
    if (strategy == nullptr) return CUSOLVER_STATUS_INVALID_VALUE;
    *strategy = static_cast<cudaEmulationStrategy_t>(h.emulation);
    return CUSOLVER_STATUS_SUCCESS;
  });
}
