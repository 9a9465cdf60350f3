// The rest of cuBLAS's level 3 and its batched extensions, beyond cublas_emu.cc's GEMM family and
// TRSM: the complex GEMM family (C/Z, 3m, Ex), SYMM/HEMM, SYRK/HERK, SYR2K/HER2K, SYRKX/HERKX,
// TRMM, complex TRSM, batched TRSM; GEAM, DGMM, TPTTR/TRTTP; the batched LU (getrf, getrs, getri),
// inverse (matinv), QR (geqrf) and least squares (gels). Every routine is validated as cuBLAS
// validates it (enums, sizes, leading dimensions; a misuse record and CUBLAS_STATUS_INVALID_VALUE
// otherwise).
//
// Level-3 routines are written as `gemm` records of the GEMM with the same FLOPs (the GEMM
// estimator times them; a triangle computes about half of the full product), nothing computed:
//   SYMM/HEMM   m×n×(m or n, the side's order): 2·m·n·order FLOPs
//   SYRK/HERK, SYRKX/HERKX   n × ⌈(n+1)/2⌉ × k: n(n+1)k FLOPs (the triangle of C)
//   SYR2K/HER2K  n × ⌈(n+1)/2⌉ × 2k
//   TRMM, TRSM  m × n × ⌈order/2⌉: m²n (left) or mn² (right) FLOPs
//   complex types: the record's dtype is complex64/complex128 and its FLOPs are 4× (a complex
//   multiply-add is 8 real FLOPs, cublas_common.h).
// GEAM, DGMM, TPTTR and TRTTP are memory-bound kernels `cublas_<op>_<dtype>` with their bytes,
// computed where every operand is backed memory. The batched factorizations are kernels
// `cublas_<op>_batched_<dtype>` with the LAPACK FLOPs (×4 complex) and the bytes of their matrices:
//   getrf 2n³/3, getrs 2n²·nrhs, getri 4n³/3, matinv 2n³, geqrf 2mn² − 2n³/3,
//   gels 2mn² − 2n³/3 + 4mn·nrhs (per matrix);
// getrf, getrs, getri and matinv are computed where the pointer arrays and every matrix are
// backed memory (partial pivoting as cuBLAS, 1-based pivots, info the first zero pivot), up to
// 10^9 FLOPs per call (beyond it only recorded); geqrf and gels are recorded, not computed (their
// info is set to 0).
#include <complex>
#include <cstring>
#include <type_traits>
#include <vector>

#include "interposer/cublas_typed.h"

namespace {

using namespace powertrain::emu::cublas_detail;  // NOLINT: the shared cuBLAS pieces

// The equivalent GEMM m × n × k (batch) of a level-3 routine.
template <typename T>
cublasStatus_t equivalent_gemm(const char* api, cublasHandle_t handle, std::int64_t m,
                               std::int64_t n, std::int64_t k, std::int64_t batch,
                               std::int64_t start_ns) {
  Gemm g = with_type<T>(make(api, handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, at_least_1(m),
                             at_least_1(k), at_least_1(m)));
  g.batch = batch;
  return run_gemm(g, start_ns);
}

// ---- level 3 ------------------------------------------------------------------------------

template <typename T>
cublasStatus_t symm(const char* api, cublasHandle_t handle, cublasSideMode_t side,
                    cublasFillMode_t uplo, std::int64_t m, std::int64_t n, std::int64_t lda,
                    std::int64_t ldb, std::int64_t ldc) {
  const std::int64_t start = emu::now_ns();
  const std::int64_t order = side == CUBLAS_SIDE_LEFT ? m : n;
  if (!valid_side(side) || !valid_fill(uplo) || m < 0 || n < 0 || lda < at_least_1(order) ||
      ldb < at_least_1(m) || ldc < at_least_1(m)) {
    return refuse(api, handle,
                  "invalid side/uplo or sizes (" +
                      sizes_text({{"m", m}, {"n", n}, {"lda", lda}, {"ldb", ldb}, {"ldc", ldc}}) +
                      ")");
  }
  return equivalent_gemm<T>(api, handle, m, n, order, 1, start);
}

// SYRK/HERK (two = false) and SYR2K/HER2K/SYRKX/HERKX (two = true; `factor` 2 for the 2k forms,
// 1 for the x forms, which compute one product).
template <typename T>
cublasStatus_t rank_k(const char* api, cublasHandle_t handle, cublasFillMode_t uplo,
                      cublasOperation_t trans, std::int64_t n, std::int64_t k, std::int64_t lda,
                      std::int64_t ldb, std::int64_t ldc, bool two, int factor) {
  const std::int64_t start = emu::now_ns();
  const std::int64_t rows = trans == CUBLAS_OP_N ? n : k;
  if (!valid_fill(uplo) || !valid_op(trans) || n < 0 || k < 0 || lda < at_least_1(rows) ||
      (two && ldb < at_least_1(rows)) || ldc < at_least_1(n)) {
    return refuse(api, handle,
                  "invalid uplo/trans or sizes (" +
                      sizes_text({{"n", n}, {"k", k}, {"lda", lda}, {"ldb", ldb}, {"ldc", ldc}}) +
                      ")");
  }
  return equivalent_gemm<T>(api, handle, n, (n + 2) / 2, factor * k, 1, start);
}

// TRMM and TRSM (with `batch` for trsmBatched).
template <typename T>
cublasStatus_t triangular(const char* api, cublasHandle_t handle, cublasSideMode_t side,
                          cublasFillMode_t uplo, cublasOperation_t trans, cublasDiagType_t diag,
                          std::int64_t m, std::int64_t n, std::int64_t lda, std::int64_t ldb,
                          std::int64_t ldc, std::int64_t batch) {
  const std::int64_t start = emu::now_ns();
  const std::int64_t order = side == CUBLAS_SIDE_LEFT ? m : n;
  if (!valid_side(side) || !valid_fill(uplo) || !valid_op(trans) || !valid_diag(diag) || m < 0 ||
      n < 0 || batch < 0 || lda < at_least_1(order) || ldb < at_least_1(m) || ldc < at_least_1(m)) {
    return refuse(api, handle,
                  "invalid side/uplo/trans/diag or sizes (" +
                      sizes_text({{"m", m},
                                  {"n", n},
                                  {"lda", lda},
                                  {"ldb", ldb},
                                  {"ldc", ldc},
                                  {"batchCount", batch}}) +
                      ")");
  }
  return equivalent_gemm<T>(api, handle, m, n, (order + 1) / 2, batch, start);
}

template <typename T>
cublasStatus_t complex_gemm(const char* api, cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, std::int64_t m, std::int64_t n,
                            std::int64_t k, std::int64_t lda, std::int64_t ldb, std::int64_t ldc,
                            std::int64_t batch) {
  const std::int64_t start = emu::now_ns();
  Gemm g = with_type<T>(make(api, handle, transa, transb, m, n, k, lda, ldb, ldc));
  g.batch = batch;
  return run_gemm(g, start);
}

cublasStatus_t complex_gemm_ex(const char* api, cublasHandle_t handle, cublasOperation_t transa,
                               cublasOperation_t transb, std::int64_t m, std::int64_t n,
                               std::int64_t k, cudaDataType a, std::int64_t lda, cudaDataType b,
                               std::int64_t ldb, cudaDataType c, std::int64_t ldc) {
  const std::int64_t start = emu::now_ns();
  return run_gemm(
      ex(make(api, handle, transa, transb, m, n, k, lda, ldb, ldc), a, b, c, CUDA_C_32F), start);
}

// ---- memory-bound matrix routines (GEAM, DGMM, packed <-> full) -------------------------------

// C = alpha·op(A) + beta·op(B)
template <typename T>
cublasStatus_t geam(Blas1 c, cublasOperation_t transa, cublasOperation_t transb, std::int64_t m,
                    std::int64_t n, const T* alpha, const T* A, std::int64_t lda, const T* beta,
                    const T* B, std::int64_t ldb, T* C, std::int64_t ldc) {
  if (!open_call(c)) return CUBLAS_STATUS_NOT_INITIALIZED;
  const std::int64_t a_rows = transa == CUBLAS_OP_N ? m : n, b_rows = transb == CUBLAS_OP_N ? m : n;
  if (!valid_op(transa) || !valid_op(transb) || m < 0 || n < 0 || lda < at_least_1(a_rows) ||
      ldb < at_least_1(b_rows) || ldc < at_least_1(m)) {
    return misuse(c.api,
                  "invalid trans or sizes (" +
                      sizes_text({{"m", m}, {"n", n}, {"lda", lda}, {"ldb", ldb}, {"ldc", ldc}}) +
                      ")",
                  CUBLAS_STATUS_INVALID_VALUE);
  }
  using V = typename Blas<T>::Value;
  V a, b;
  if (!scalar<T>(alpha, c, "alpha", &a) || !scalar<T>(beta, c, "beta", &b))
    return CUBLAS_STATUS_INVALID_VALUE;
  const std::int64_t a_cols = transa == CUBLAS_OP_N ? n : m, b_cols = transb == CUBLAS_OP_N ? n : m;
  Vec va = matrix(A, a_rows, a_cols, lda, sizeof(T)),
      vb = matrix(B, b_rows, b_cols, ldb, sizeof(T)), vc = matrix(C, m, n, ldc, sizeof(T));
  if (!device_vector(va, c.api, "A") || !device_vector(vb, c.api, "B") ||
      !device_vector(vc, c.api, "C"))
    return CUBLAS_STATUS_EXECUTION_FAILED;
  if ((va.backed && vb.backed && vc.backed) && !detail::capturing_stream(c.stream)) {
    const powertrain::emu::HostComputeScope host_compute;  // not the program's time
    std::vector<V> out(static_cast<std::size_t>(m * n));
    for (std::int64_t j = 0; j < n; ++j) {
      for (std::int64_t i = 0; i < m; ++i) {
        const V x =
            apply_op(value_at<T>(A, transa == CUBLAS_OP_N ? j * lda + i : i * lda + j), transa);
        const V y =
            apply_op(value_at<T>(B, transb == CUBLAS_OP_N ? j * ldb + i : i * ldb + j), transb);
        out[static_cast<std::size_t>(j * m + i)] = a * x + b * y;
      }
    }
    for (std::int64_t j = 0; j < n; ++j) {
      for (std::int64_t i = 0; i < m; ++i)
        store_at<T>(C, j * ldc + i, out[static_cast<std::size_t>(j * m + i)]);
    }
  }
  const std::int64_t elements = sat_mul(m, n);
  return finish(c, "geam", Blas<T>::kName, sat_mul(3 * Blas<T>::kFlopFactor, elements),
                sat_mul(sat_mul(3, elements), sizeof(T)), false);
}

// C = A·diag(x) (right) or diag(x)·A (left)
template <typename T>
cublasStatus_t dgmm(Blas1 c, cublasSideMode_t mode, std::int64_t m, std::int64_t n, const T* A,
                    std::int64_t lda, const T* x, std::int64_t incx, T* C, std::int64_t ldc) {
  if (!open_call(c)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!valid_side(mode) || m < 0 || n < 0 || lda < at_least_1(m) || ldc < at_least_1(m)) {
    return misuse(c.api,
                  "invalid mode or sizes (" +
                      sizes_text({{"m", m}, {"n", n}, {"lda", lda}, {"ldc", ldc}}) + ")",
                  CUBLAS_STATUS_INVALID_VALUE);
  }
  const std::int64_t xn = mode == CUBLAS_SIDE_LEFT ? m : n;
  Vec va = matrix(A, m, n, lda, sizeof(T)), vc = matrix(C, m, n, ldc, sizeof(T));
  Vec vx{x, xn, incx == 0 ? 1 : incx, sizeof(T)};
  if (!device_vector(va, c.api, "A") || !device_vector(vx, c.api, "x") ||
      !device_vector(vc, c.api, "C"))
    return CUBLAS_STATUS_EXECUTION_FAILED;
  if ((va.backed && vx.backed && vc.backed) && !detail::capturing_stream(c.stream)) {
    const powertrain::emu::HostComputeScope host_compute;  // not the program's time
    for (std::int64_t j = 0; j < n; ++j) {
      for (std::int64_t i = 0; i < m; ++i) {
        // incx = 0 is allowed: every element scales by x[0].
        const std::int64_t xi = mode == CUBLAS_SIDE_LEFT ? i : j;
        const auto scale = value_at<T>(x, incx == 0 ? 0 : vx.offset(xi));
        store_at<T>(C, j * ldc + i, value_at<T>(A, j * lda + i) * scale);
      }
    }
  }
  const std::int64_t elements = sat_mul(m, n);
  return finish(c, "dgmm", Blas<T>::kName, sat_mul(Blas<T>::kFlopFactor, elements),
                sat_mul(sat_add(sat_mul(2, elements), xn), sizeof(T)), false);
}

// Packed ↔ full triangle (to_full: TPTTR, else TRTTP), column-major packing as LAPACK.
template <typename T>
cublasStatus_t packed(Blas1 c, bool to_full, cublasFillMode_t uplo, std::int64_t n, const T* from,
                      T* to, std::int64_t lda) {
  if (!open_call(c)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!valid_fill(uplo) || n < 0 || lda < at_least_1(n)) {
    return misuse(c.api, "invalid uplo or sizes (" + sizes_text({{"n", n}, {"lda", lda}}) + ")",
                  CUBLAS_STATUS_INVALID_VALUE);
  }
  const std::int64_t triangle = n * (n + 1) / 2;
  Vec vp{to_full ? static_cast<const void*>(from) : static_cast<const void*>(to), triangle, 1,
         sizeof(T)};
  Vec vf = matrix(to_full ? static_cast<const void*>(to) : static_cast<const void*>(from), n, n,
                  lda, sizeof(T));
  if (!device_vector(vp, c.api, "AP") || !device_vector(vf, c.api, "A"))
    return CUBLAS_STATUS_EXECUTION_FAILED;
  if ((vp.backed && vf.backed) && !detail::capturing_stream(c.stream)) {
    const powertrain::emu::HostComputeScope host_compute;  // not the program's time
    std::int64_t k = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      const std::int64_t first = uplo == CUBLAS_FILL_MODE_UPPER ? 0 : j;
      const std::int64_t last = uplo == CUBLAS_FILL_MODE_UPPER ? j : n - 1;
      for (std::int64_t i = first; i <= last; ++i, ++k) {
        if (to_full) {
          store_at<T>(to, j * lda + i, value_at<T>(from, k));
        } else {
          store_at<T>(to, k, value_at<T>(from, j * lda + i));
        }
      }
    }
  }
  return finish(c, to_full ? "tpttr" : "trttp", Blas<T>::kName, 0,
                sat_mul(sat_mul(2, triangle), sizeof(T)), false);
}

// ---- batched factorizations -----------------------------------------------------------------

constexpr double kComputeLimitFlops = 1e9;

// The `batch` pointers of a device pointer array, or an empty list when it is not readable here
// (false: not device memory of batch pointers, reported).
bool pointer_array(const void* array, std::int64_t batch, const char* api, const char* what,
                   std::vector<void*>* pointers) {
  pointers->clear();
  if (batch <= 0) return true;
  const detail::PointerInfo info = detail::lookup_pointer(array);
  const std::int64_t bytes = sat_mul(batch, sizeof(void*));
  if (!info.known || !info.device_side || info.available < static_cast<std::size_t>(bytes)) {
    emu::report_misuse(api, std::string(what) + " " + detail::pointer_text(array) +
                                " is not device memory of " + std::to_string(batch) + " pointers");
    return false;
  }
  if (info.backed) {
    pointers->resize(static_cast<std::size_t>(batch));
    std::memcpy(pointers->data(), array, static_cast<std::size_t>(bytes));
  }
  return true;
}

// Every matrix of a pointer list is backed device memory of rows × cols at ld.
bool all_backed(const std::vector<void*>& pointers, std::int64_t rows, std::int64_t cols,
                std::int64_t ld, std::size_t elem) {
  if (pointers.empty()) return false;
  for (void* p : pointers) {
    Vec v = matrix(p, rows, cols, ld, elem);
    const detail::PointerInfo info = detail::lookup_pointer(p);
    if (!info.known || !info.backed || info.available < static_cast<std::size_t>(v.span_bytes()))
      return false;
  }
  return true;
}

// A device (or host, `host` true) int array of `count` that can be written here.
int* writable_ints(int* p, std::int64_t count, bool host) {
  if (p == nullptr || count <= 0) return nullptr;
  if (host) return p;
  const detail::PointerInfo info = detail::lookup_pointer(p);
  return info.known && info.backed && info.available >= static_cast<std::size_t>(count * 4)
             ? p
             : nullptr;
}

template <typename V>
double magnitude(const V& v) {
  return std::abs(v);
}

// In-place LU with partial pivoting (pivots 1-based; nullptr: no pivoting); returns info (the
// 1-based first zero pivot, else 0).
template <typename V>
int lu_factor(V* a, std::int64_t n, std::int64_t lda, int* pivots) {
  int info = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    std::int64_t p = j;
    if (pivots != nullptr) {
      for (std::int64_t i = j + 1; i < n; ++i) {
        if (magnitude(a[j * lda + i]) > magnitude(a[j * lda + p])) p = i;
      }
      pivots[j] = static_cast<int>(p + 1);
      if (p != j) {
        for (std::int64_t k = 0; k < n; ++k) std::swap(a[k * lda + j], a[k * lda + p]);
      }
    }
    if (a[j * lda + j] == V(0)) {
      if (info == 0) info = static_cast<int>(j + 1);
      continue;
    }
    for (std::int64_t i = j + 1; i < n; ++i) {
      a[j * lda + i] /= a[j * lda + j];
      for (std::int64_t k = j + 1; k < n; ++k) a[k * lda + i] -= a[j * lda + i] * a[k * lda + j];
    }
  }
  return info;
}

// Solves op(A)·X = B with A's LU (lu, pivots as lu_factor left them), B n × nrhs at ldb.
template <typename V>
void lu_solve(const V* lu, std::int64_t n, std::int64_t lda, const int* pivots,
              cublasOperation_t trans, V* b, std::int64_t nrhs, std::int64_t ldb) {
  auto element = [&](std::int64_t i, std::int64_t j) { return apply_op(lu[j * lda + i], trans); };
  for (std::int64_t r = 0; r < nrhs; ++r) {
    V* x = b + r * ldb;
    if (trans == CUBLAS_OP_N) {
      if (pivots != nullptr) {
        for (std::int64_t i = 0; i < n; ++i) std::swap(x[i], x[pivots[i] - 1]);
      }
      for (std::int64_t i = 0; i < n; ++i) {  // L (unit)
        for (std::int64_t k = 0; k < i; ++k) x[i] -= lu[k * lda + i] * x[k];
      }
      for (std::int64_t i = n - 1; i >= 0; --i) {  // U
        for (std::int64_t k = i + 1; k < n; ++k) x[i] -= lu[k * lda + i] * x[k];
        x[i] /= lu[i * lda + i];
      }
    } else {  // op(A) = op(U)·op(L)·P: Uᵀ, then Lᵀ (unit), then the exchanges backwards
      for (std::int64_t i = 0; i < n; ++i) {
        for (std::int64_t k = 0; k < i; ++k) x[i] -= element(k, i) * x[k];
        x[i] /= element(i, i);
      }
      for (std::int64_t i = n - 1; i >= 0; --i) {
        for (std::int64_t k = i + 1; k < n; ++k) x[i] -= element(k, i) * x[k];
      }
      if (pivots != nullptr) {
        for (std::int64_t i = n - 1; i >= 0; --i) std::swap(x[i], x[pivots[i] - 1]);
      }
    }
  }
}

template <typename T>
std::vector<typename Blas<T>::Value> load_matrix(const void* p, std::int64_t rows,
                                                 std::int64_t cols, std::int64_t ld) {
  std::vector<typename Blas<T>::Value> out(static_cast<std::size_t>(ld * (cols - 1) + rows));
  std::memcpy(static_cast<void*>(out.data()), p, out.size() * sizeof(T));
  return out;
}

template <typename T>
void save_matrix(void* p, const std::vector<typename Blas<T>::Value>& values) {
  std::memcpy(p, static_cast<const void*>(values.data()), values.size() * sizeof(T));
}

enum class Factorization { kGetrf, kGetrs, kGetri, kMatinv, kGeqrf, kGels };

struct BatchedCall {
  Factorization what;
  cublasOperation_t trans = CUBLAS_OP_N;
  std::int64_t m = 0, n = 0, nrhs = 0, lda = 0, ldc = 0, batch = 0;
  const void* a = nullptr;  // device array of batch matrix pointers
  void* c = nullptr;        // B (getrs), C (getri, gels), Ainv (matinv), Tau (geqrf)
  int* pivots = nullptr;    // device (getrf may pass NULL: no pivoting)
  int* info = nullptr;      // device for getrf/getri/matinv, host for getrs/geqrf/gels
  int* dev_info = nullptr;  // gels only
};

double lapack_flops(const BatchedCall& b) {
  const double m = static_cast<double>(b.m), n = static_cast<double>(b.n),
               r = static_cast<double>(b.nrhs);
  switch (b.what) {
    case Factorization::kGetrf:
      return 2.0 * n * n * n / 3.0;
    case Factorization::kGetrs:
      return 2.0 * n * n * r;
    case Factorization::kGetri:
      return 4.0 * n * n * n / 3.0;
    case Factorization::kMatinv:
      return 2.0 * n * n * n;
    case Factorization::kGeqrf:
      return 2.0 * m * n * n - 2.0 * n * n * n / 3.0;
    case Factorization::kGels:
      return 2.0 * m * n * n - 2.0 * n * n * n / 3.0 + 4.0 * m * n * r;
  }
  return 0;
}

const char* factorization_name(Factorization f) {
  switch (f) {
    case Factorization::kGetrf:
      return "getrf_batched";
    case Factorization::kGetrs:
      return "getrs_batched";
    case Factorization::kGetri:
      return "getri_batched";
    case Factorization::kMatinv:
      return "matinv_batched";
    case Factorization::kGeqrf:
      return "geqrf_batched";
    case Factorization::kGels:
      return "gels_batched";
  }
  return "";
}

template <typename T>
cublasStatus_t batched_factorization(Blas1 c, const BatchedCall& b) {
  if (!open_call(c)) return CUBLAS_STATUS_NOT_INITIALIZED;
  const bool square = b.what != Factorization::kGeqrf && b.what != Factorization::kGels;
  const std::int64_t rows = square ? b.n : b.m;
  const bool bad_shape =
      b.n < 0 || b.m < 0 || b.nrhs < 0 || b.batch < 0 || b.lda < at_least_1(rows) ||
      (b.what == Factorization::kMatinv && b.n > 32) ||
      (b.what == Factorization::kGels && (b.m < b.n || b.trans != CUBLAS_OP_N)) ||
      ((b.what == Factorization::kGetrs || b.what == Factorization::kGetri ||
        b.what == Factorization::kMatinv || b.what == Factorization::kGels) &&
       b.ldc < at_least_1(rows)) ||
      (b.what == Factorization::kGetrs && !valid_op(b.trans));
  if (bad_shape) {
    if (b.info != nullptr && !square) *b.info = -1;  // host info: the first bad argument
    return misuse(c.api,
                  "invalid sizes (" +
                      sizes_text({{"m", b.m},
                                  {"n", b.n},
                                  {"nrhs", b.nrhs},
                                  {"lda", b.lda},
                                  {"ldc", b.ldc},
                                  {"batchSize", b.batch}}) +
                      (b.what == Factorization::kMatinv ? "; matinvBatched needs n <= 32"
                       : b.what == Factorization::kGels ? "; gelsBatched needs m >= n and "
                                                          "CUBLAS_OP_N"
                                                        : "") +
                      ")",
                  CUBLAS_STATUS_INVALID_VALUE);
  }
  std::vector<void*> as, cs;
  if (!pointer_array(b.a, b.batch, c.api, "Aarray", &as)) return CUBLAS_STATUS_EXECUTION_FAILED;
  if (b.what != Factorization::kGetrf &&
      !pointer_array(b.c, b.batch, c.api, "the second array", &cs))
    return CUBLAS_STATUS_EXECUTION_FAILED;
  using V = typename Blas<T>::Value;
  const double flops = lapack_flops(b) * static_cast<double>(b.batch);
  const std::int64_t n = b.n;
  const bool host_info = b.what == Factorization::kGetrs || b.what == Factorization::kGeqrf ||
                         b.what == Factorization::kGels;
  if (host_info && b.info == nullptr)
    return misuse(c.api, "info is NULL", CUBLAS_STATUS_INVALID_VALUE);
  int* info = writable_ints(b.info, host_info ? 1 : b.batch, host_info);
  int* pivots = writable_ints(b.pivots, sat_mul(n, b.batch), false);
  const bool pivoting = b.pivots != nullptr;
  if (info != nullptr) std::fill(info, info + (host_info ? 1 : b.batch), 0);
  const bool computable =
      flops <= kComputeLimitFlops && all_backed(as, rows, square ? n : b.n, b.lda, sizeof(T)) &&
      (b.what == Factorization::kGetrf ||
       all_backed(cs, rows, b.what == Factorization::kGetrs ? b.nrhs : n, b.ldc, sizeof(T))) &&
      (!pivoting || pivots != nullptr || b.what == Factorization::kMatinv);
  if (computable && b.what != Factorization::kGeqrf && b.what != Factorization::kGels && n > 0) {
    for (std::int64_t k = 0; k < b.batch; ++k) {
      std::vector<V> a = load_matrix<T>(as[static_cast<std::size_t>(k)], n, n, b.lda);
      int* p = pivoting && pivots != nullptr ? pivots + k * n : nullptr;
      switch (b.what) {
        case Factorization::kGetrf: {
          const int result = lu_factor(a.data(), n, b.lda, p);
          save_matrix<T>(as[static_cast<std::size_t>(k)], a);
          if (info != nullptr) info[k] = result;
          break;
        }
        case Factorization::kGetrs: {
          std::vector<V> x = load_matrix<T>(cs[static_cast<std::size_t>(k)], n, b.nrhs, b.ldc);
          lu_solve(a.data(), n, b.lda, p, b.trans, x.data(), b.nrhs, b.ldc);
          save_matrix<T>(cs[static_cast<std::size_t>(k)], x);
          break;
        }
        case Factorization::kGetri:
        case Factorization::kMatinv: {
          std::vector<int> own(static_cast<std::size_t>(n));
          int result = 0;
          if (b.what == Factorization::kMatinv) {
            result = lu_factor(a.data(), n, b.lda, own.data());
            p = own.data();
          } else {
            for (std::int64_t j = 0; j < n; ++j) {
              if (a[static_cast<std::size_t>(j * b.lda + j)] == V(0) && result == 0)
                result = static_cast<int>(j + 1);
            }
          }
          std::vector<V> inverse = load_matrix<T>(cs[static_cast<std::size_t>(k)], n, n, b.ldc);
          if (result == 0) {
            for (std::int64_t j = 0; j < n; ++j) {
              for (std::int64_t i = 0; i < n; ++i)
                inverse[static_cast<std::size_t>(j * b.ldc + i)] = i == j ? V(1) : V(0);
            }
            lu_solve(a.data(), n, b.lda, p, CUBLAS_OP_N, inverse.data(), n, b.ldc);
            save_matrix<T>(cs[static_cast<std::size_t>(k)], inverse);
          }
          if (info != nullptr) info[k] = result;
          break;
        }
        default:
          break;
      }
    }
  }
  if (b.what == Factorization::kGels && b.dev_info != nullptr) {
    if (int* d = writable_ints(b.dev_info, b.batch, false); d != nullptr)
      std::fill(d, d + b.batch, 0);
  }
  const std::int64_t matrices = sat_mul(b.batch, sat_mul(rows, n));
  const std::int64_t second =
      b.what == Factorization::kGetrf || b.what == Factorization::kGeqrf
          ? 0
          : sat_mul(b.batch,
                    sat_mul(rows, b.what == Factorization::kGetrs || b.what == Factorization::kGels
                                      ? b.nrhs
                                      : n));
  const std::int64_t bytes =
      sat_add(sat_mul(sat_add(sat_mul(2, matrices), sat_mul(2, second)), sizeof(T)),
              sat_mul(sat_mul(b.batch, n + 1), 4));
  return finish(c, factorization_name(b.what), Blas<T>::kName,
                static_cast<std::int64_t>(std::min(flops * Blas<T>::kFlopFactor, 9.0e18)), bytes,
                false);
}

}  // namespace

// ===== exported entry points ===================================================================

// -- complex GEMM family (C/Z), including the 3m (Gauss) forms, which take the same arguments
#define PT_COMPLEX_GEMM(NAME, T, INT)                                                          \
  PT_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa,               \
                                cublasOperation_t transb, INT m, INT n, INT k, const T* alpha, \
                                const T* A, INT lda, const T* B, INT ldb, const T* beta, T* C, \
                                INT ldc) {                                                     \
    (void)alpha, (void)A, (void)B, (void)beta, (void)C;                                        \
    return complex_gemm<T>(#NAME, handle, transa, transb, m, n, k, lda, ldb, ldc, 1);          \
  }
#define PT_COMPLEX_GEMM_STRIDED(NAME, T, INT)                                                    \
  PT_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa,                 \
                                cublasOperation_t transb, INT m, INT n, INT k, const T* alpha,   \
                                const T* A, INT lda, long long int strideA, const T* B, INT ldb, \
                                long long int strideB, const T* beta, T* C, INT ldc,             \
                                long long int strideC, INT batchCount) {                         \
    (void)alpha, (void)A, (void)B, (void)beta, (void)C, (void)strideA, (void)strideB,            \
        (void)strideC;                                                                           \
    return complex_gemm<T>(#NAME, handle, transa, transb, m, n, k, lda, ldb, ldc, batchCount);   \
  }
#define PT_COMPLEX_GEMM_BATCHED(NAME, T, INT)                                                    \
  PT_EXPORT cublasStatus_t NAME(                                                                 \
      cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, INT m, INT n,   \
      INT k, const T* alpha, const T* const Aarray[], INT lda, const T* const Barray[], INT ldb, \
      const T* beta, T* const Carray[], INT ldc, INT batchCount) {                               \
    (void)alpha, (void)Aarray, (void)Barray, (void)beta, (void)Carray;                           \
    return complex_gemm<T>(#NAME, handle, transa, transb, m, n, k, lda, ldb, ldc, batchCount);   \
  }
PT_COMPLEX_GEMM(cublasCgemm_v2, cuComplex, int)
PT_COMPLEX_GEMM(cublasCgemm_v2_64, cuComplex, int64_t)
PT_COMPLEX_GEMM(cublasZgemm_v2, cuDoubleComplex, int)
PT_COMPLEX_GEMM(cublasZgemm_v2_64, cuDoubleComplex, int64_t)
PT_COMPLEX_GEMM(cublasCgemm3m, cuComplex, int)
PT_COMPLEX_GEMM(cublasCgemm3m_64, cuComplex, int64_t)
PT_COMPLEX_GEMM(cublasZgemm3m, cuDoubleComplex, int)
PT_COMPLEX_GEMM(cublasZgemm3m_64, cuDoubleComplex, int64_t)
PT_COMPLEX_GEMM_STRIDED(cublasCgemmStridedBatched, cuComplex, int)
PT_COMPLEX_GEMM_STRIDED(cublasCgemmStridedBatched_64, cuComplex, int64_t)
PT_COMPLEX_GEMM_STRIDED(cublasZgemmStridedBatched, cuDoubleComplex, int)
PT_COMPLEX_GEMM_STRIDED(cublasZgemmStridedBatched_64, cuDoubleComplex, int64_t)
PT_COMPLEX_GEMM_STRIDED(cublasCgemm3mStridedBatched, cuComplex, int)
PT_COMPLEX_GEMM_STRIDED(cublasCgemm3mStridedBatched_64, cuComplex, int64_t)
PT_COMPLEX_GEMM_BATCHED(cublasCgemmBatched, cuComplex, int)
PT_COMPLEX_GEMM_BATCHED(cublasCgemmBatched_64, cuComplex, int64_t)
PT_COMPLEX_GEMM_BATCHED(cublasZgemmBatched, cuDoubleComplex, int)
PT_COMPLEX_GEMM_BATCHED(cublasZgemmBatched_64, cuDoubleComplex, int64_t)
PT_COMPLEX_GEMM_BATCHED(cublasCgemm3mBatched, cuComplex, int)
PT_COMPLEX_GEMM_BATCHED(cublasCgemm3mBatched_64, cuComplex, int64_t)
#undef PT_COMPLEX_GEMM
#undef PT_COMPLEX_GEMM_STRIDED
#undef PT_COMPLEX_GEMM_BATCHED

#define PT_COMPLEX_GEMM_EX(NAME, INT)                                                             \
  PT_EXPORT cublasStatus_t NAME(                                                                  \
      cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, INT m, INT n,    \
      INT k, const cuComplex* alpha, const void* A, cudaDataType Atype, INT lda, const void* B,   \
      cudaDataType Btype, INT ldb, const cuComplex* beta, void* C, cudaDataType Ctype, INT ldc) { \
    (void)alpha, (void)A, (void)B, (void)beta, (void)C;                                           \
    return complex_gemm_ex(#NAME, handle, transa, transb, m, n, k, Atype, lda, Btype, ldb, Ctype, \
                           ldc);                                                                  \
  }
PT_COMPLEX_GEMM_EX(cublasCgemmEx, int)
PT_COMPLEX_GEMM_EX(cublasCgemmEx_64, int64_t)
PT_COMPLEX_GEMM_EX(cublasCgemm3mEx, int)
PT_COMPLEX_GEMM_EX(cublasCgemm3mEx_64, int64_t)
#undef PT_COMPLEX_GEMM_EX

// -- SYMM / HEMM
#define PT_SYMM(NAME, T, INT)                                                                    \
  PT_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasSideMode_t side,                    \
                                cublasFillMode_t uplo, INT m, INT n, const T* alpha, const T* A, \
                                INT lda, const T* B, INT ldb, const T* beta, T* C, INT ldc) {    \
    (void)alpha, (void)A, (void)B, (void)beta, (void)C;                                          \
    return symm<T>(#NAME, handle, side, uplo, m, n, lda, ldb, ldc);                              \
  }
#define PT_SYMM_ALL(P, T)             \
  PT_SYMM(cublas##P##symm_v2, T, int) \
  PT_SYMM(cublas##P##symm_v2_64, T, int64_t)
PT_SYMM_ALL(S, float)
PT_SYMM_ALL(D, double)
PT_SYMM_ALL(C, cuComplex)
PT_SYMM_ALL(Z, cuDoubleComplex)
PT_SYMM(cublasChemm_v2, cuComplex, int)
PT_SYMM(cublasChemm_v2_64, cuComplex, int64_t)
PT_SYMM(cublasZhemm_v2, cuDoubleComplex, int)
PT_SYMM(cublasZhemm_v2_64, cuDoubleComplex, int64_t)
#undef PT_SYMM_ALL
#undef PT_SYMM

// -- SYRK / HERK (HERK's alpha and beta are real: R)
#define PT_SYRK(NAME, T, R, INT)                                                                   \
  PT_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasFillMode_t uplo,                      \
                                cublasOperation_t trans, INT n, INT k, const R* alpha, const T* A, \
                                INT lda, const R* beta, T* C, INT ldc) {                           \
    (void)alpha, (void)A, (void)beta, (void)C;                                                     \
    return rank_k<T>(#NAME, handle, uplo, trans, n, k, lda, lda, ldc, false, 1);                   \
  }
PT_SYRK(cublasSsyrk_v2, float, float, int)
PT_SYRK(cublasSsyrk_v2_64, float, float, int64_t)
PT_SYRK(cublasDsyrk_v2, double, double, int)
PT_SYRK(cublasDsyrk_v2_64, double, double, int64_t)
PT_SYRK(cublasCsyrk_v2, cuComplex, cuComplex, int)
PT_SYRK(cublasCsyrk_v2_64, cuComplex, cuComplex, int64_t)
PT_SYRK(cublasZsyrk_v2, cuDoubleComplex, cuDoubleComplex, int)
PT_SYRK(cublasZsyrk_v2_64, cuDoubleComplex, cuDoubleComplex, int64_t)
PT_SYRK(cublasCherk_v2, cuComplex, float, int)
PT_SYRK(cublasCherk_v2_64, cuComplex, float, int64_t)
PT_SYRK(cublasZherk_v2, cuDoubleComplex, double, int)
PT_SYRK(cublasZherk_v2_64, cuDoubleComplex, double, int64_t)
#undef PT_SYRK

// -- SYR2K / HER2K (2k) and SYRKX / HERKX (one product); A is alpha's type, B beta's (R)
#define PT_SYR2K(NAME, T, R, INT, FACTOR)                                                          \
  PT_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasFillMode_t uplo,                      \
                                cublasOperation_t trans, INT n, INT k, const T* alpha, const T* A, \
                                INT lda, const T* B, INT ldb, const R* beta, T* C, INT ldc) {      \
    (void)alpha, (void)A, (void)B, (void)beta, (void)C;                                            \
    return rank_k<T>(#NAME, handle, uplo, trans, n, k, lda, ldb, ldc, true, FACTOR);               \
  }
#define PT_SYR2K_ALL(P, T)                           \
  PT_SYR2K(cublas##P##syr2k_v2, T, T, int, 2)        \
  PT_SYR2K(cublas##P##syr2k_v2_64, T, T, int64_t, 2) \
  PT_SYR2K(cublas##P##syrkx, T, T, int, 1)           \
  PT_SYR2K(cublas##P##syrkx_64, T, T, int64_t, 1)
PT_SYR2K_ALL(S, float)
PT_SYR2K_ALL(D, double)
PT_SYR2K_ALL(C, cuComplex)
PT_SYR2K_ALL(Z, cuDoubleComplex)
PT_SYR2K(cublasCher2k_v2, cuComplex, float, int, 2)
PT_SYR2K(cublasCher2k_v2_64, cuComplex, float, int64_t, 2)
PT_SYR2K(cublasZher2k_v2, cuDoubleComplex, double, int, 2)
PT_SYR2K(cublasZher2k_v2_64, cuDoubleComplex, double, int64_t, 2)
PT_SYR2K(cublasCherkx, cuComplex, float, int, 1)
PT_SYR2K(cublasCherkx_64, cuComplex, float, int64_t, 1)
PT_SYR2K(cublasZherkx, cuDoubleComplex, double, int, 1)
PT_SYR2K(cublasZherkx_64, cuDoubleComplex, double, int64_t, 1)
#undef PT_SYR2K_ALL
#undef PT_SYR2K

// -- TRMM (out of place into C), complex TRSM, batched TRSM
#define PT_TRMM(NAME, T, INT)                                                                    \
  PT_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasSideMode_t side,                    \
                                cublasFillMode_t uplo, cublasOperation_t trans,                  \
                                cublasDiagType_t diag, INT m, INT n, const T* alpha, const T* A, \
                                INT lda, const T* B, INT ldb, T* C, INT ldc) {                   \
    (void)alpha, (void)A, (void)B, (void)C;                                                      \
    return triangular<T>(#NAME, handle, side, uplo, trans, diag, m, n, lda, ldb, ldc, 1);        \
  }
#define PT_TRSM_C(NAME, T, INT)                                                                  \
  PT_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasSideMode_t side,                    \
                                cublasFillMode_t uplo, cublasOperation_t trans,                  \
                                cublasDiagType_t diag, INT m, INT n, const T* alpha, const T* A, \
                                INT lda, T* B, INT ldb) {                                        \
    (void)alpha, (void)A, (void)B;                                                               \
    return triangular<T>(#NAME, handle, side, uplo, trans, diag, m, n, lda, ldb, ldb, 1);        \
  }
#define PT_TRSM_BATCHED(NAME, T, INT)                                                              \
  PT_EXPORT cublasStatus_t NAME(                                                                   \
      cublasHandle_t handle, cublasSideMode_t side, cublasFillMode_t uplo,                         \
      cublasOperation_t trans, cublasDiagType_t diag, INT m, INT n, const T* alpha,                \
      const T* const A[], INT lda, T* const B[], INT ldb, INT batchCount) {                        \
    (void)alpha, (void)A, (void)B;                                                                 \
    return triangular<T>(#NAME, handle, side, uplo, trans, diag, m, n, lda, ldb, ldb, batchCount); \
  }
#define PT_TRIANGULAR_ALL(P, T)                   \
  PT_TRMM(cublas##P##trmm_v2, T, int)             \
  PT_TRMM(cublas##P##trmm_v2_64, T, int64_t)      \
  PT_TRSM_BATCHED(cublas##P##trsmBatched, T, int) \
  PT_TRSM_BATCHED(cublas##P##trsmBatched_64, T, int64_t)
PT_TRIANGULAR_ALL(S, float)
PT_TRIANGULAR_ALL(D, double)
PT_TRIANGULAR_ALL(C, cuComplex)
PT_TRIANGULAR_ALL(Z, cuDoubleComplex)
PT_TRSM_C(cublasCtrsm_v2, cuComplex, int)
PT_TRSM_C(cublasCtrsm_v2_64, cuComplex, int64_t)
PT_TRSM_C(cublasZtrsm_v2, cuDoubleComplex, int)
PT_TRSM_C(cublasZtrsm_v2_64, cuDoubleComplex, int64_t)
#undef PT_TRIANGULAR_ALL
#undef PT_TRSM_BATCHED
#undef PT_TRSM_C
#undef PT_TRMM

// -- GEAM, DGMM, TPTTR, TRTTP
#define PT_MATRIX_OPS(P, T)                                                                        \
  PT_EXPORT cublasStatus_t cublas##P##geam(                                                        \
      cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,     \
      const T* alpha, const T* A, int lda, const T* beta, const T* B, int ldb, T* C, int ldc) {    \
    return geam<T>({"cublas" #P "geam", handle}, transa, transb, m, n, alpha, A, lda, beta, B,     \
                   ldb, C, ldc);                                                                   \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##P##geam_64(                                                     \
      cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m,        \
      int64_t n, const T* alpha, const T* A, int64_t lda, const T* beta, const T* B, int64_t ldb,  \
      T* C, int64_t ldc) {                                                                         \
    return geam<T>({"cublas" #P "geam_64", handle}, transa, transb, m, n, alpha, A, lda, beta, B,  \
                   ldb, C, ldc);                                                                   \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##P##dgmm(cublasHandle_t handle, cublasSideMode_t mode, int m,    \
                                           int n, const T* A, int lda, const T* x, int incx, T* C, \
                                           int ldc) {                                              \
    return dgmm<T>({"cublas" #P "dgmm", handle}, mode, m, n, A, lda, x, incx, C, ldc);             \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##P##dgmm_64(cublasHandle_t handle, cublasSideMode_t mode,        \
                                              int64_t m, int64_t n, const T* A, int64_t lda,       \
                                              const T* x, int64_t incx, T* C, int64_t ldc) {       \
    return dgmm<T>({"cublas" #P "dgmm_64", handle}, mode, m, n, A, lda, x, incx, C, ldc);          \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##P##tpttr(cublasHandle_t handle, cublasFillMode_t uplo, int n,   \
                                            const T* AP, T* A, int lda) {                          \
    return packed<T>({"cublas" #P "tpttr", handle}, true, uplo, n, AP, A, lda);                    \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##P##trttp(cublasHandle_t handle, cublasFillMode_t uplo, int n,   \
                                            const T* A, int lda, T* AP) {                          \
    return packed<T>({"cublas" #P "trttp", handle}, false, uplo, n, A, AP, lda);                   \
  }
PT_MATRIX_OPS(S, float)
PT_MATRIX_OPS(D, double)
PT_MATRIX_OPS(C, cuComplex)
PT_MATRIX_OPS(Z, cuDoubleComplex)
#undef PT_MATRIX_OPS

// -- batched LU, inverse, QR, least squares
#define PT_BATCHED_LAPACK(P, T)                                                                   \
  PT_EXPORT cublasStatus_t cublas##P##getrfBatched(cublasHandle_t handle, int n, T* const A[],    \
                                                   int lda, int* P_, int* info, int batchSize) {  \
    BatchedCall b{Factorization::kGetrf};                                                         \
    b.n = n, b.lda = lda, b.batch = batchSize, b.a = A, b.pivots = P_, b.info = info;             \
    return batched_factorization<T>({"cublas" #P "getrfBatched", handle}, b);                     \
  }                                                                                               \
  PT_EXPORT cublasStatus_t cublas##P##getrsBatched(                                               \
      cublasHandle_t handle, cublasOperation_t trans, int n, int nrhs, const T* const Aarray[],   \
      int lda, const int* devIpiv, T* const Barray[], int ldb, int* info, int batchSize) {        \
    BatchedCall b{Factorization::kGetrs};                                                         \
    b.trans = trans, b.n = n, b.nrhs = nrhs, b.lda = lda, b.ldc = ldb, b.batch = batchSize;       \
    b.a = Aarray, b.c = const_cast<T**>(Barray), b.pivots = const_cast<int*>(devIpiv),            \
    b.info = info;                                                                                \
    return batched_factorization<T>({"cublas" #P "getrsBatched", handle}, b);                     \
  }                                                                                               \
  PT_EXPORT cublasStatus_t cublas##P##getriBatched(                                               \
      cublasHandle_t handle, int n, const T* const A[], int lda, const int* P_, T* const C[],     \
      int ldc, int* info, int batchSize) {                                                        \
    BatchedCall b{Factorization::kGetri};                                                         \
    b.n = n, b.lda = lda, b.ldc = ldc, b.batch = batchSize, b.a = A, b.c = const_cast<T**>(C),    \
    b.pivots = const_cast<int*>(P_), b.info = info;                                               \
    return batched_factorization<T>({"cublas" #P "getriBatched", handle}, b);                     \
  }                                                                                               \
  PT_EXPORT cublasStatus_t cublas##P##matinvBatched(cublasHandle_t handle, int n,                 \
                                                    const T* const A[], int lda, T* const Ainv[], \
                                                    int lda_inv, int* info, int batchSize) {      \
    BatchedCall b{Factorization::kMatinv};                                                        \
    b.n = n, b.lda = lda, b.ldc = lda_inv, b.batch = batchSize, b.a = A,                          \
    b.c = const_cast<T**>(Ainv), b.info = info;                                                   \
    return batched_factorization<T>({"cublas" #P "matinvBatched", handle}, b);                    \
  }                                                                                               \
  PT_EXPORT cublasStatus_t cublas##P##geqrfBatched(                                               \
      cublasHandle_t handle, int m, int n, T* const Aarray[], int lda, T* const TauArray[],       \
      int* info, int batchSize) {                                                                 \
    BatchedCall b{Factorization::kGeqrf};                                                         \
    b.m = m, b.n = n, b.lda = lda, b.batch = batchSize, b.a = Aarray,                             \
    b.c = const_cast<T**>(TauArray), b.info = info;                                               \
    return batched_factorization<T>({"cublas" #P "geqrfBatched", handle}, b);                     \
  }                                                                                               \
  PT_EXPORT cublasStatus_t cublas##P##gelsBatched(                                                \
      cublasHandle_t handle, cublasOperation_t trans, int m, int n, int nrhs, T* const Aarray[],  \
      int lda, T* const Carray[], int ldc, int* info, int* devInfoArray, int batchSize) {         \
    BatchedCall b{Factorization::kGels};                                                          \
    b.trans = trans, b.m = m, b.n = n, b.nrhs = nrhs, b.lda = lda, b.ldc = ldc,                   \
    b.batch = batchSize, b.a = Aarray, b.c = const_cast<T**>(Carray), b.info = info,              \
    b.dev_info = devInfoArray;                                                                    \
    return batched_factorization<T>({"cublas" #P "gelsBatched", handle}, b);                      \
  }
PT_BATCHED_LAPACK(S, float)
PT_BATCHED_LAPACK(D, double)
PT_BATCHED_LAPACK(C, cuComplex)
PT_BATCHED_LAPACK(Z, cuDoubleComplex)
#undef PT_BATCHED_LAPACK

// -- CSYRK/CHERK with typed operands (Ex, 3mEx): A's and C's cudaDataType, complex-float compute
namespace {
cublasStatus_t rank_k_ex(const char* api, cublasHandle_t handle, cublasFillMode_t uplo,
                         cublasOperation_t trans, std::int64_t n, std::int64_t k,
                         cudaDataType a_type, std::int64_t lda, cudaDataType c_type,
                         std::int64_t ldc) {
  const std::int64_t start = emu::now_ns();
  const std::int64_t rows = trans == CUBLAS_OP_N ? n : k;
  if (!valid_fill(uplo) || !valid_op(trans) || n < 0 || k < 0 || lda < at_least_1(rows) ||
      ldc < at_least_1(n)) {
    return refuse(api, handle,
                  "invalid uplo/trans or sizes (" +
                      sizes_text({{"n", n}, {"k", k}, {"lda", lda}, {"ldc", ldc}}) + ")");
  }
  return run_gemm(ex(make(api, handle, CUBLAS_OP_N, CUBLAS_OP_N, n, (n + 2) / 2, k, at_least_1(n),
                          at_least_1(k), at_least_1(n)),
                     a_type, a_type, c_type, CUDA_C_32F),
                  start);
}
}  // namespace

#define PT_RANK_K_EX(NAME, R, INT)                                                         \
  PT_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasFillMode_t uplo,              \
                                cublasOperation_t trans, INT n, INT k, const R* alpha,     \
                                const void* A, cudaDataType Atype, INT lda, const R* beta, \
                                void* C, cudaDataType Ctype, INT ldc) {                    \
    (void)alpha, (void)A, (void)beta, (void)C;                                             \
    return rank_k_ex(#NAME, handle, uplo, trans, n, k, Atype, lda, Ctype, ldc);            \
  }
PT_RANK_K_EX(cublasCsyrkEx, cuComplex, int)
PT_RANK_K_EX(cublasCsyrkEx_64, cuComplex, int64_t)
PT_RANK_K_EX(cublasCsyrk3mEx, cuComplex, int)
PT_RANK_K_EX(cublasCsyrk3mEx_64, cuComplex, int64_t)
PT_RANK_K_EX(cublasCherkEx, float, int)
PT_RANK_K_EX(cublasCherkEx_64, float, int64_t)
PT_RANK_K_EX(cublasCherk3mEx, float, int)
PT_RANK_K_EX(cublasCherk3mEx_64, float, int64_t)
#undef PT_RANK_K_EX
