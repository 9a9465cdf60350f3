// cuBLAS level 2 beyond S/D GEMV (cublas_emu.cc), in S/D/C/Z: complex GEMV, GBMV, SYMV/HEMV,
// SBMV/HBMV, SPMV/HPMV, TRMV/TBMV/TPMV, TRSV/TBSV/TPSV, GER/GERU/GERC, SYR/HER, SYR2/HER2,
// SPR/HPR, SPR2/HPR2, and the batched GEMVs (pointer arrays and strided).
//
// Each call is validated as cuBLAS validates it (enums, sizes, leading dimensions, increments;
// misuse and CUBLAS_STATUS_INVALID_VALUE), its operands checked to be device memory of their
// span (else misuse and CUBLAS_STATUS_EXECUTION_FAILED), and it is one memory-bound kernel
// `cublas_<op>_<dtype>` carrying its FLOPs (2 per multiply-add of the matrix's nonzero structure;
// complex × 4) and the bytes it moves (the stored matrix, read, and written for the updates; x;
// y read when beta ≠ 0, and written). As for S/D GEMV, the operation is computed for real where
// every operand is backed memory (the logical matrix from its full, band or packed storage, the
// stored triangle of a symmetric, Hermitian or triangular one) and the matrix has at most 2^26
// elements; otherwise only recorded. The batched GEMVs with half or bfloat16 operands (HSH, HSS,
// TST, TSS) are recorded, not computed.
#include <complex>
#include <cstring>
#include <vector>

#include "interposer/cublas_typed.h"

namespace {

using namespace powertrain::emu::cublas_detail;  // NOLINT: the shared cuBLAS pieces

enum class Storage { kFull, kBand, kSymBand, kPacked };
enum class Kind { kGeneral, kSymmetric, kHermitian, kTriangular };

// A matrix operand of a level-2 routine: its logical shape and how it is stored.
struct MatrixArg {
  const void* p = nullptr;
  Storage storage = Storage::kFull;
  Kind kind = Kind::kGeneral;
  bool lower = false, unit = false;
  std::int64_t rows = 0, cols = 0, ld = 0;
  std::int64_t kl = 0, ku = 0;  // band: sub- and super-diagonals (SymBand: k in both)

  // Stored element count (the span checked to be device memory).
  std::int64_t span() const {
    switch (storage) {
      case Storage::kFull:
        return rows > 0 && cols > 0 ? sat_add(sat_mul(cols - 1, ld), rows) : 0;
      case Storage::kBand:
      case Storage::kSymBand:
        return cols > 0
                   ? sat_add(sat_mul(cols - 1, ld), (storage == Storage::kBand ? kl + ku : kl) + 1)
                   : 0;
      case Storage::kPacked:
        return sat_mul(rows, rows + 1) / 2;
    }
    return 0;
  }
  // Elements of the logical matrix that are not structurally zero (the work).
  std::int64_t nonzeros() const {
    const std::int64_t n = cols;
    switch (kind) {
      case Kind::kGeneral:
        return storage == Storage::kBand ? std::min(rows, n) * (kl + ku + 1) : sat_mul(rows, n);
      case Kind::kSymmetric:
      case Kind::kHermitian:
        return storage == Storage::kSymBand ? n * (2 * kl + 1) : sat_mul(n, n);
      case Kind::kTriangular:
        return storage == Storage::kSymBand ? n * (kl + 1) : sat_mul(n, n + 1) / 2;
    }
    return 0;
  }
  // Where stored element (i, j) lives, or -1 outside the storage.
  std::int64_t index(std::int64_t i, std::int64_t j) const {
    switch (storage) {
      case Storage::kFull:
        if (kind != Kind::kGeneral && (lower ? i < j : i > j)) return -1;
        return j * ld + i;
      case Storage::kBand:
        return i - j <= kl && j - i <= ku ? j * ld + (ku + i - j) : -1;
      case Storage::kSymBand:
        if (lower) return i >= j && i - j <= kl ? j * ld + (i - j) : -1;
        return j >= i && j - i <= kl ? j * ld + (kl + i - j) : -1;
      case Storage::kPacked:
        if (lower) return i >= j ? i + (2 * cols - j - 1) * j / 2 : -1;
        return j >= i ? i + j * (j + 1) / 2 : -1;
    }
    return -1;
  }
};

template <typename V>
V conj_if(V v, bool conjugate) {
  if constexpr (std::is_floating_point_v<V>) {
    return v;
  } else {
    return conjugate ? std::conj(v) : v;
  }
}

// Element (i, j) of the logical matrix.
template <typename T>
Val<T> element(const MatrixArg& a, std::int64_t i, std::int64_t j) {
  using V = Val<T>;
  if (a.kind == Kind::kTriangular && i == j && a.unit) return V(1);
  std::int64_t at = a.index(i, j);
  if (at >= 0) {
    V v = value_at<T>(a.p, at);
    if (a.kind == Kind::kHermitian && i == j) v = V(std::real(v));
    return v;
  }
  if (a.kind == Kind::kSymmetric || a.kind == Kind::kHermitian) {
    at = a.index(j, i);
    if (at >= 0) return conj_if(value_at<T>(a.p, at), a.kind == Kind::kHermitian);
  }
  return V(0);
}

// op(A)(i, j)
template <typename T>
Val<T> op_element(const MatrixArg& a, cublasOperation_t op, std::int64_t i, std::int64_t j) {
  return op == CUBLAS_OP_N ? element<T>(a, i, j) : conj_if(element<T>(a, j, i), op == CUBLAS_OP_C);
}

constexpr std::int64_t kComputeLimit = std::int64_t{1} << 26;

bool check_matrix(MatrixArg& a, const char* api, std::size_t elem, bool* backed) {
  Vec v{a.p, a.span(), 1, elem};
  if (!device_vector(v, api, "A")) return false;
  *backed = v.backed;
  return true;
}

std::string shape_text(const MatrixArg& a, std::int64_t incx, std::int64_t incy) {
  return sizes_text({{"rows", a.rows},
                     {"cols", a.cols},
                     {"ld", a.ld},
                     {"kl", a.kl},
                     {"ku", a.ku},
                     {"incx", incx},
                     {"incy", incy}});
}

// The leading-dimension rule of the storage (full: rows; band: the stored diagonals).
bool ld_ok(const MatrixArg& a) {
  switch (a.storage) {
    case Storage::kFull:
      return a.ld >= at_least_1(a.rows);
    case Storage::kBand:
      return a.kl >= 0 && a.ku >= 0 && a.ld >= a.kl + a.ku + 1;
    case Storage::kSymBand:
      return a.kl >= 0 && a.ld >= a.kl + 1;
    case Storage::kPacked:
      return true;
  }
  return false;
}

// y = alpha·op(A)·x + beta·y (GEMV, GBMV, SYMV/HEMV, SBMV/HBMV, SPMV/HPMV).
template <typename T>
cublasStatus_t matrix_vector(Blas1 c, const char* op_name, MatrixArg a, cublasOperation_t op,
                             const T* alpha, const T* x, std::int64_t incx, const T* beta, T* y,
                             std::int64_t incy) {
  if (!open_call(c)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!valid_op(op) || a.rows < 0 || a.cols < 0 || !ld_ok(a) || incx == 0 || incy == 0 ||
      (a.kind != Kind::kGeneral &&
       !valid_fill(a.lower ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER))) {
    return misuse(c.api, "invalid trans or sizes (" + shape_text(a, incx, incy) + ")",
                  CUBLAS_STATUS_INVALID_VALUE);
  }
  if (a.rows == 0 || a.cols == 0) return CUBLAS_STATUS_SUCCESS;
  Val<T> alpha_value, beta_value;
  if (!scalar<T>(alpha, c, "alpha", &alpha_value) || !scalar<T>(beta, c, "beta", &beta_value))
    return CUBLAS_STATUS_INVALID_VALUE;
  const bool t = op != CUBLAS_OP_N;
  const std::int64_t xs = t ? a.rows : a.cols, ys = t ? a.cols : a.rows;
  bool a_backed = false;
  Vec vx{x, xs, incx, sizeof(T)}, vy{y, ys, incy, sizeof(T)};
  if (!check_matrix(a, c.api, sizeof(T), &a_backed) || !device_vector(vx, c.api, "x") ||
      !device_vector(vy, c.api, "y"))
    return CUBLAS_STATUS_EXECUTION_FAILED;
  if ((a_backed && vx.backed && vy.backed && sat_mul(a.rows, a.cols) <= kComputeLimit) &&
      !detail::capturing_stream(c.stream)) {
    const powertrain::emu::HostComputeScope host_compute;  // not the program's time
    std::vector<Val<T>> out(static_cast<std::size_t>(ys));
    for (std::int64_t i = 0; i < ys; ++i) {
      Val<T> sum(0);
      for (std::int64_t j = 0; j < xs; ++j)
        sum += op_element<T>(a, op, i, j) * value_at<T>(x, vx.offset(j));
      out[static_cast<std::size_t>(i)] = sum;
    }
    for (std::int64_t i = 0; i < ys; ++i) {
      const Val<T> old = beta_value == Val<T>(0) ? Val<T>(0) : value_at<T>(y, vy.offset(i));
      store_at<T>(y, vy.offset(i),
                  alpha_value * out[static_cast<std::size_t>(i)] + beta_value * old);
    }
  }
  const bool reads_y = !(beta_value == Val<T>(0));
  const std::int64_t bytes =
      sat_mul(sat_add(sat_add(a.span(), xs), sat_mul(reads_y ? 2 : 1, ys)), sizeof(T));
  return finish(c, op_name, Blas<T>::kName, sat_mul(2 * Blas<T>::kFlopFactor, a.nonzeros()), bytes,
                false);
}

// x = op(A)·x (TRMV, TBMV, TPMV) or the solve op(A)·x = b in place (TRSV, TBSV, TPSV).
template <typename T>
cublasStatus_t triangular_vector(Blas1 c, const char* op_name, bool solve, MatrixArg a,
                                 cublasFillMode_t uplo, cublasOperation_t op, cublasDiagType_t diag,
                                 T* x, std::int64_t incx) {
  if (!open_call(c)) return CUBLAS_STATUS_NOT_INITIALIZED;
  a.kind = Kind::kTriangular;
  a.lower = uplo == CUBLAS_FILL_MODE_LOWER;
  a.unit = diag == CUBLAS_DIAG_UNIT;
  if (!valid_fill(uplo) || !valid_op(op) || !valid_diag(diag) || a.cols < 0 || !ld_ok(a) ||
      incx == 0) {
    return misuse(c.api, "invalid uplo/trans/diag or sizes (" + shape_text(a, incx, 0) + ")",
                  CUBLAS_STATUS_INVALID_VALUE);
  }
  const std::int64_t n = a.cols;
  if (n == 0) return CUBLAS_STATUS_SUCCESS;
  bool a_backed = false;
  Vec vx{x, n, incx, sizeof(T)};
  if (!check_matrix(a, c.api, sizeof(T), &a_backed) || !device_vector(vx, c.api, "x"))
    return CUBLAS_STATUS_EXECUTION_FAILED;
  if ((a_backed && vx.backed && sat_mul(n, n) <= kComputeLimit) &&
      !detail::capturing_stream(c.stream)) {
    const powertrain::emu::HostComputeScope host_compute;  // not the program's time
    std::vector<Val<T>> v(static_cast<std::size_t>(n)), out(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i)
      v[static_cast<std::size_t>(i)] = value_at<T>(x, vx.offset(i));
    if (!solve) {
      for (std::int64_t i = 0; i < n; ++i) {
        Val<T> sum(0);
        for (std::int64_t j = 0; j < n; ++j)
          sum += op_element<T>(a, op, i, j) * v[static_cast<std::size_t>(j)];
        out[static_cast<std::size_t>(i)] = sum;
      }
    } else {
      // op(A) is lower triangular when A is lower and not transposed, or upper and transposed.
      const bool forward = a.lower == (op == CUBLAS_OP_N);
      for (std::int64_t step = 0; step < n; ++step) {
        const std::int64_t i = forward ? step : n - 1 - step;
        Val<T> sum = v[static_cast<std::size_t>(i)];
        for (std::int64_t s = 0; s < step; ++s) {
          const std::int64_t j = forward ? s : n - 1 - s;
          sum -= op_element<T>(a, op, i, j) * out[static_cast<std::size_t>(j)];
        }
        const Val<T> d = op_element<T>(a, op, i, i);
        out[static_cast<std::size_t>(i)] = d == Val<T>(0) ? sum : sum / d;
      }
    }
    for (std::int64_t i = 0; i < n; ++i)
      store_at<T>(x, vx.offset(i), out[static_cast<std::size_t>(i)]);
  }
  return finish(c, op_name, Blas<T>::kName, sat_mul(2 * Blas<T>::kFlopFactor, a.nonzeros()),
                sat_mul(sat_add(a.span(), sat_mul(2, n)), sizeof(T)), false);
}

// Rank-1 and rank-2 updates: A += alpha·x·op(y) (GER/GERU/GERC), the stored triangle of
// alpha·x·xᵀ/ᴴ (SYR/HER, SPR/HPR) or alpha·x·yᵀ/ᴴ + alpha'·y·xᵀ/ᴴ (SYR2/HER2, SPR2/HPR2).
template <typename T>
cublasStatus_t update(Blas1 c, const char* op_name, MatrixArg a, bool conjugate, bool two,
                      Val<T> alpha_value, const T* x, std::int64_t incx, const T* y,
                      std::int64_t incy) {
  const std::int64_t m = a.rows, n = a.cols;
  bool a_backed = false;
  Vec vx{x, m, incx, sizeof(T)}, vy{y, (a.kind == Kind::kGeneral || two) ? n : 0, incy, sizeof(T)};
  if (!check_matrix(a, c.api, sizeof(T), &a_backed) || !device_vector(vx, c.api, "x") ||
      !device_vector(vy, c.api, "y"))
    return CUBLAS_STATUS_EXECUTION_FAILED;
  using V = Val<T>;
  if ((a_backed && vx.backed && (vy.n == 0 || vy.backed) && sat_mul(m, n) <= kComputeLimit) &&
      !detail::capturing_stream(c.stream)) {
    const powertrain::emu::HostComputeScope host_compute;   // not the program's time
    const V alpha_other = conj_if(alpha_value, conjugate);  // HER2's second term takes conj(alpha)
    for (std::int64_t j = 0; j < n; ++j) {
      for (std::int64_t i = 0; i < m; ++i) {
        const std::int64_t at = a.index(i, j);
        if (at < 0) continue;
        const V xi = value_at<T>(x, vx.offset(i));
        V delta;
        if (a.kind == Kind::kGeneral) {
          delta = alpha_value * xi * conj_if(value_at<T>(y, vy.offset(j)), conjugate);
        } else if (!two) {
          delta = alpha_value * xi * conj_if(value_at<T>(x, vx.offset(j)), conjugate);
        } else {
          delta = alpha_value * xi * conj_if(value_at<T>(y, vy.offset(j)), conjugate) +
                  alpha_other * value_at<T>(y, vy.offset(i)) *
                      conj_if(value_at<T>(x, vx.offset(j)), conjugate);
        }
        V updated = value_at<T>(a.p, at) + delta;
        if (a.kind == Kind::kHermitian && i == j) updated = V(std::real(updated));
        store_at<T>(const_cast<void*>(a.p), at, updated);
      }
    }
  }
  const std::int64_t touched = a.kind == Kind::kGeneral ? sat_mul(m, n) : sat_mul(n, n + 1) / 2;
  return finish(
      c, op_name, Blas<T>::kName, sat_mul((two ? 4 : 2) * Blas<T>::kFlopFactor, touched),
      sat_mul(sat_add(sat_mul(2, a.span()), sat_add(m, two || a.kind == Kind::kGeneral ? n : 0)),
              sizeof(T)),
      false);
}

template <typename T, typename R>
cublasStatus_t update_call(Blas1 c, const char* op_name, MatrixArg a, cublasFillMode_t uplo,
                           bool conjugate, bool two, const R* alpha, const T* x, std::int64_t incx,
                           const T* y, std::int64_t incy) {
  if (!open_call(c)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (a.kind != Kind::kGeneral) a.lower = uplo == CUBLAS_FILL_MODE_LOWER;
  if ((a.kind != Kind::kGeneral && !valid_fill(uplo)) || a.rows < 0 || a.cols < 0 || !ld_ok(a) ||
      incx == 0 || ((a.kind == Kind::kGeneral || two) && incy == 0)) {
    return misuse(c.api, "invalid uplo or sizes (" + shape_text(a, incx, incy) + ")",
                  CUBLAS_STATUS_INVALID_VALUE);
  }
  if (a.rows == 0 || a.cols == 0) return CUBLAS_STATUS_SUCCESS;
  Val<R> alpha_value;
  if (!scalar<R>(alpha, c, "alpha", &alpha_value)) return CUBLAS_STATUS_INVALID_VALUE;
  return update<T>(c, op_name, a, conjugate, two, Val<T>(alpha_value), x, incx, y, incy);
}

MatrixArg full(const void* p, std::int64_t rows, std::int64_t cols, std::int64_t ld, Kind kind,
               cublasFillMode_t uplo) {
  MatrixArg a;
  a.p = p, a.rows = rows, a.cols = cols, a.ld = ld, a.kind = kind;
  a.lower = uplo == CUBLAS_FILL_MODE_LOWER;
  return a;
}
MatrixArg band(const void* p, std::int64_t n, std::int64_t k, std::int64_t ld, Kind kind,
               cublasFillMode_t uplo) {
  MatrixArg a = full(p, n, n, ld, kind, uplo);
  a.storage = Storage::kSymBand, a.kl = a.ku = k;
  return a;
}
MatrixArg packed_matrix(const void* p, std::int64_t n, Kind kind, cublasFillMode_t uplo) {
  MatrixArg a = full(p, n, n, 1, kind, uplo);
  a.storage = Storage::kPacked;
  return a;
}

// The batched GEMVs: `batch` problems, computed one by one where everything is backed.
template <typename T>
cublasStatus_t gemv_batched(Blas1 c, cublasOperation_t op, std::int64_t m, std::int64_t n,
                            const T* alpha, const void* const* a_list, std::int64_t lda,
                            std::int64_t stride_a, const void* const* x_list, std::int64_t incx,
                            std::int64_t stride_x, const T* beta, void* const* y_list,
                            std::int64_t incy, std::int64_t stride_y, std::int64_t batch,
                            const void* a_base, const void* x_base, void* y_base) {
  if (!open_call(c)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!valid_op(op) || m < 0 || n < 0 || lda < at_least_1(m) || incx == 0 || incy == 0 ||
      batch < 0) {
    return misuse(c.api,
                  "invalid trans or sizes (" +
                      sizes_text({{"m", m},
                                  {"n", n},
                                  {"lda", lda},
                                  {"incx", incx},
                                  {"incy", incy},
                                  {"batchCount", batch}}) +
                      ")",
                  CUBLAS_STATUS_INVALID_VALUE);
  }
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  Val<T> alpha_value, beta_value;
  if (!scalar<T>(alpha, c, "alpha", &alpha_value) || !scalar<T>(beta, c, "beta", &beta_value))
    return CUBLAS_STATUS_INVALID_VALUE;
  const bool t = op != CUBLAS_OP_N;
  const std::int64_t xs = t ? m : n, ys = t ? n : m;
  const bool strided = a_list == nullptr;
  std::vector<const void*> as(static_cast<std::size_t>(batch)), xv(static_cast<std::size_t>(batch));
  std::vector<void*> yv(static_cast<std::size_t>(batch));
  bool readable = true;
  if (strided) {
    for (std::int64_t b = 0; b < batch; ++b) {
      as[static_cast<std::size_t>(b)] = static_cast<const char*>(a_base) + b * stride_a * sizeof(T);
      xv[static_cast<std::size_t>(b)] = static_cast<const char*>(x_base) + b * stride_x * sizeof(T);
      yv[static_cast<std::size_t>(b)] = static_cast<char*>(y_base) + b * stride_y * sizeof(T);
    }
  } else {
    for (const void* list : {static_cast<const void*>(a_list), static_cast<const void*>(x_list),
                             static_cast<const void*>(y_list)}) {
      const detail::PointerInfo info = detail::lookup_pointer(list);
      if (!info.known || !info.device_side ||
          info.available < static_cast<std::size_t>(batch) * sizeof(void*)) {
        emu::report_misuse(c.api, "pointer array " + detail::pointer_text(list) +
                                      " is not device memory of batchCount pointers");
        return CUBLAS_STATUS_EXECUTION_FAILED;
      }
      readable = readable && info.backed;
    }
    if (readable) {
      std::memcpy(as.data(), a_list, as.size() * sizeof(void*));
      std::memcpy(xv.data(), x_list, xv.size() * sizeof(void*));
      std::memcpy(yv.data(), y_list, yv.size() * sizeof(void*));
    }
  }
  if (readable) {
    for (std::int64_t b = 0; b < batch; ++b) {
      MatrixArg a =
          full(as[static_cast<std::size_t>(b)], m, n, lda, Kind::kGeneral, CUBLAS_FILL_MODE_UPPER);
      bool a_backed = false;
      Vec vx{xv[static_cast<std::size_t>(b)], xs, incx, sizeof(T)},
          vy{yv[static_cast<std::size_t>(b)], ys, incy, sizeof(T)};
      if (!check_matrix(a, c.api, sizeof(T), &a_backed) || !device_vector(vx, c.api, "x") ||
          !device_vector(vy, c.api, "y"))
        return CUBLAS_STATUS_EXECUTION_FAILED;
      if (!a_backed || !vx.backed || !vy.backed || sat_mul(m, n) > kComputeLimit) continue;
      std::vector<Val<T>> out(static_cast<std::size_t>(ys));
      for (std::int64_t i = 0; i < ys; ++i) {
        Val<T> sum(0);
        for (std::int64_t j = 0; j < xs; ++j)
          sum += op_element<T>(a, op, i, j) * value_at<T>(vx.p, vx.offset(j));
        out[static_cast<std::size_t>(i)] = sum;
      }
      for (std::int64_t i = 0; i < ys; ++i) {
        const Val<T> old = beta_value == Val<T>(0) ? Val<T>(0) : value_at<T>(vy.p, vy.offset(i));
        store_at<T>(const_cast<void*>(vy.p), vy.offset(i),
                    alpha_value * out[static_cast<std::size_t>(i)] + beta_value * old);
      }
    }
  }
  const std::int64_t per = sat_add(sat_add(sat_mul(m, n), xs), sat_mul(2, ys));
  return finish(c, "gemv_batched", Blas<T>::kName,
                sat_mul(sat_mul(2 * Blas<T>::kFlopFactor, sat_mul(m, n)), batch),
                sat_mul(sat_mul(per, batch), sizeof(T)), false);
}

// The half/bfloat16 batched GEMVs: validated and recorded (element bytes `in`/`out`).
cublasStatus_t gemv_batched_mixed(Blas1 c, const char* dtype, int in_bytes, int out_bytes,
                                  cublasOperation_t op, std::int64_t m, std::int64_t n,
                                  std::int64_t lda, std::int64_t incx, std::int64_t incy,
                                  std::int64_t batch) {
  if (!open_call(c)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!valid_op(op) || m < 0 || n < 0 || lda < at_least_1(m) || incx == 0 || incy == 0 ||
      batch < 0) {
    return misuse(c.api,
                  "invalid trans or sizes (" +
                      sizes_text({{"m", m}, {"n", n}, {"lda", lda}, {"batchCount", batch}}) + ")",
                  CUBLAS_STATUS_INVALID_VALUE);
  }
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  const bool t = op != CUBLAS_OP_N;
  const std::int64_t xs = t ? m : n, ys = t ? n : m;
  const std::int64_t per =
      sat_add(sat_mul(sat_add(sat_mul(m, n), xs), in_bytes), sat_mul(2 * ys, out_bytes));
  return finish(c, "gemv_batched", dtype, sat_mul(sat_mul(2, sat_mul(m, n)), batch),
                sat_mul(per, batch), false);
}

}  // namespace

// ===== exported entry points ===================================================================

// -- complex GEMV, and GBMV
#define PT_GEMV_C(NAME, T, INT)                                                                \
  PT_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t trans, INT m, INT n,  \
                                const T* alpha, const T* A, INT lda, const T* x, INT incx,     \
                                const T* beta, T* y, INT incy) {                               \
    return matrix_vector<T>({#NAME, handle}, "gemv",                                           \
                            full(A, m, n, lda, Kind::kGeneral, CUBLAS_FILL_MODE_UPPER), trans, \
                            alpha, x, incx, beta, y, incy);                                    \
  }
#define PT_GBMV(NAME, T, INT)                                                                    \
  PT_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t trans, INT m, INT n,    \
                                INT kl, INT ku, const T* alpha, const T* A, INT lda, const T* x, \
                                INT incx, const T* beta, T* y, INT incy) {                       \
    MatrixArg a = full(A, m, n, lda, Kind::kGeneral, CUBLAS_FILL_MODE_UPPER);                    \
    a.storage = Storage::kBand, a.kl = kl, a.ku = ku;                                            \
    return matrix_vector<T>({#NAME, handle}, "gbmv", a, trans, alpha, x, incx, beta, y, incy);   \
  }
PT_GEMV_C(cublasCgemv_v2, cuComplex, int)
PT_GEMV_C(cublasCgemv_v2_64, cuComplex, int64_t)
PT_GEMV_C(cublasZgemv_v2, cuDoubleComplex, int)
PT_GEMV_C(cublasZgemv_v2_64, cuDoubleComplex, int64_t)
#define PT_GBMV_ALL(P, T)             \
  PT_GBMV(cublas##P##gbmv_v2, T, int) \
  PT_GBMV(cublas##P##gbmv_v2_64, T, int64_t)
PT_GBMV_ALL(S, float)
PT_GBMV_ALL(D, double)
PT_GBMV_ALL(C, cuComplex)
PT_GBMV_ALL(Z, cuDoubleComplex)
#undef PT_GBMV_ALL
#undef PT_GBMV
#undef PT_GEMV_C

// -- SYMV/HEMV (full), SBMV/HBMV (band), SPMV/HPMV (packed)
#define PT_SYMV(NAME, OP, T, INT, KIND)                                                       \
  PT_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasFillMode_t uplo, INT n,          \
                                const T* alpha, const T* A, INT lda, const T* x, INT incx,    \
                                const T* beta, T* y, INT incy) {                              \
    if (!valid_fill(uplo)) return refuse(#NAME, handle, "invalid uplo");                      \
    return matrix_vector<T>({#NAME, handle}, OP, full(A, n, n, lda, KIND, uplo), CUBLAS_OP_N, \
                            alpha, x, incx, beta, y, incy);                                   \
  }
#define PT_SBMV(NAME, OP, T, INT, KIND)                                                       \
  PT_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasFillMode_t uplo, INT n, INT k,   \
                                const T* alpha, const T* A, INT lda, const T* x, INT incx,    \
                                const T* beta, T* y, INT incy) {                              \
    if (!valid_fill(uplo)) return refuse(#NAME, handle, "invalid uplo");                      \
    return matrix_vector<T>({#NAME, handle}, OP, band(A, n, k, lda, KIND, uplo), CUBLAS_OP_N, \
                            alpha, x, incx, beta, y, incy);                                   \
  }
#define PT_SPMV(NAME, OP, T, INT, KIND)                                                           \
  PT_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasFillMode_t uplo, INT n,              \
                                const T* alpha, const T* AP, const T* x, INT incx, const T* beta, \
                                T* y, INT incy) {                                                 \
    if (!valid_fill(uplo)) return refuse(#NAME, handle, "invalid uplo");                          \
    return matrix_vector<T>({#NAME, handle}, OP, packed_matrix(AP, n, KIND, uplo), CUBLAS_OP_N,   \
                            alpha, x, incx, beta, y, incy);                                       \
  }
#define PT_SYMMETRIC_MV(P, T, KIND, SY, SB, SP)         \
  PT_SYMV(cublas##P##SY##_v2, #SY, T, int, KIND)        \
  PT_SYMV(cublas##P##SY##_v2_64, #SY, T, int64_t, KIND) \
  PT_SBMV(cublas##P##SB##_v2, #SB, T, int, KIND)        \
  PT_SBMV(cublas##P##SB##_v2_64, #SB, T, int64_t, KIND) \
  PT_SPMV(cublas##P##SP##_v2, #SP, T, int, KIND)        \
  PT_SPMV(cublas##P##SP##_v2_64, #SP, T, int64_t, KIND)
PT_SYMMETRIC_MV(S, float, Kind::kSymmetric, symv, sbmv, spmv)
PT_SYMMETRIC_MV(D, double, Kind::kSymmetric, symv, sbmv, spmv)
PT_SYMMETRIC_MV(C, cuComplex, Kind::kHermitian, hemv, hbmv, hpmv)
PT_SYMMETRIC_MV(Z, cuDoubleComplex, Kind::kHermitian, hemv, hbmv, hpmv)
PT_SYMV(cublasCsymv_v2, "symv", cuComplex, int, Kind::kSymmetric)
PT_SYMV(cublasCsymv_v2_64, "symv", cuComplex, int64_t, Kind::kSymmetric)
PT_SYMV(cublasZsymv_v2, "symv", cuDoubleComplex, int, Kind::kSymmetric)
PT_SYMV(cublasZsymv_v2_64, "symv", cuDoubleComplex, int64_t, Kind::kSymmetric)
#undef PT_SYMMETRIC_MV
#undef PT_SPMV
#undef PT_SBMV
#undef PT_SYMV

// -- TRMV/TRSV (full), TBMV/TBSV (band), TPMV/TPSV (packed)
#define PT_TRV(NAME, OP, SOLVE, T, INT)                                                            \
  PT_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasFillMode_t uplo,                      \
                                cublasOperation_t trans, cublasDiagType_t diag, INT n, const T* A, \
                                INT lda, T* x, INT incx) {                                         \
    return triangular_vector<T>({#NAME, handle}, OP, SOLVE,                                        \
                                full(A, n, n, lda, Kind::kTriangular, uplo), uplo, trans, diag, x, \
                                incx);                                                             \
  }
#define PT_TBV(NAME, OP, SOLVE, T, INT)                                                            \
  PT_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasFillMode_t uplo,                      \
                                cublasOperation_t trans, cublasDiagType_t diag, INT n, INT k,      \
                                const T* A, INT lda, T* x, INT incx) {                             \
    return triangular_vector<T>({#NAME, handle}, OP, SOLVE,                                        \
                                band(A, n, k, lda, Kind::kTriangular, uplo), uplo, trans, diag, x, \
                                incx);                                                             \
  }
#define PT_TPV(NAME, OP, SOLVE, T, INT)                                                           \
  PT_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasFillMode_t uplo,                     \
                                cublasOperation_t trans, cublasDiagType_t diag, INT n,            \
                                const T* AP, T* x, INT incx) {                                    \
    return triangular_vector<T>({#NAME, handle}, OP, SOLVE,                                       \
                                packed_matrix(AP, n, Kind::kTriangular, uplo), uplo, trans, diag, \
                                x, incx);                                                         \
  }
#define PT_TRIANGULAR_V(P, T)                              \
  PT_TRV(cublas##P##trmv_v2, "trmv", false, T, int)        \
  PT_TRV(cublas##P##trmv_v2_64, "trmv", false, T, int64_t) \
  PT_TRV(cublas##P##trsv_v2, "trsv", true, T, int)         \
  PT_TRV(cublas##P##trsv_v2_64, "trsv", true, T, int64_t)  \
  PT_TBV(cublas##P##tbmv_v2, "tbmv", false, T, int)        \
  PT_TBV(cublas##P##tbmv_v2_64, "tbmv", false, T, int64_t) \
  PT_TBV(cublas##P##tbsv_v2, "tbsv", true, T, int)         \
  PT_TBV(cublas##P##tbsv_v2_64, "tbsv", true, T, int64_t)  \
  PT_TPV(cublas##P##tpmv_v2, "tpmv", false, T, int)        \
  PT_TPV(cublas##P##tpmv_v2_64, "tpmv", false, T, int64_t) \
  PT_TPV(cublas##P##tpsv_v2, "tpsv", true, T, int)         \
  PT_TPV(cublas##P##tpsv_v2_64, "tpsv", true, T, int64_t)
PT_TRIANGULAR_V(S, float)
PT_TRIANGULAR_V(D, double)
PT_TRIANGULAR_V(C, cuComplex)
PT_TRIANGULAR_V(Z, cuDoubleComplex)
#undef PT_TRIANGULAR_V
#undef PT_TPV
#undef PT_TBV
#undef PT_TRV

// -- GER/GERU/GERC
#define PT_GER(NAME, T, INT, CONJ)                                                               \
  PT_EXPORT cublasStatus_t NAME(cublasHandle_t handle, INT m, INT n, const T* alpha, const T* x, \
                                INT incx, const T* y, INT incy, T* A, INT lda) {                 \
    return update_call<T, T>({#NAME, handle}, CONJ ? "gerc" : "ger",                             \
                             full(A, m, n, lda, Kind::kGeneral, CUBLAS_FILL_MODE_UPPER),         \
                             CUBLAS_FILL_MODE_UPPER, CONJ, false, alpha, x, incx, y, incy);      \
  }
PT_GER(cublasSger_v2, float, int, false)
PT_GER(cublasSger_v2_64, float, int64_t, false)
PT_GER(cublasDger_v2, double, int, false)
PT_GER(cublasDger_v2_64, double, int64_t, false)
PT_GER(cublasCgeru_v2, cuComplex, int, false)
PT_GER(cublasCgeru_v2_64, cuComplex, int64_t, false)
PT_GER(cublasZgeru_v2, cuDoubleComplex, int, false)
PT_GER(cublasZgeru_v2_64, cuDoubleComplex, int64_t, false)
PT_GER(cublasCgerc_v2, cuComplex, int, true)
PT_GER(cublasCgerc_v2_64, cuComplex, int64_t, true)
PT_GER(cublasZgerc_v2, cuDoubleComplex, int, true)
PT_GER(cublasZgerc_v2_64, cuDoubleComplex, int64_t, true)
#undef PT_GER

// -- SYR/HER, SYR2/HER2 (full), SPR/HPR, SPR2/HPR2 (packed); R: alpha's type (real for HER/HPR)
#define PT_SYR(NAME, OP, T, R, INT, KIND)                                                  \
  PT_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasFillMode_t uplo, INT n,       \
                                const R* alpha, const T* x, INT incx, T* A, INT lda) {     \
    return update_call<T, R>({#NAME, handle}, OP, full(A, n, n, lda, KIND, uplo), uplo,    \
                             KIND == Kind::kHermitian, false, alpha, x, incx, nullptr, 1); \
  }
#define PT_SYR2(NAME, OP, T, INT, KIND)                                                           \
  PT_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasFillMode_t uplo, INT n,              \
                                const T* alpha, const T* x, INT incx, const T* y, INT incy, T* A, \
                                INT lda) {                                                        \
    return update_call<T, T>({#NAME, handle}, OP, full(A, n, n, lda, KIND, uplo), uplo,           \
                             KIND == Kind::kHermitian, true, alpha, x, incx, y, incy);            \
  }
#define PT_SPR(NAME, OP, T, R, INT, KIND)                                                  \
  PT_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasFillMode_t uplo, INT n,       \
                                const R* alpha, const T* x, INT incx, T* AP) {             \
    return update_call<T, R>({#NAME, handle}, OP, packed_matrix(AP, n, KIND, uplo), uplo,  \
                             KIND == Kind::kHermitian, false, alpha, x, incx, nullptr, 1); \
  }
#define PT_SPR2(NAME, OP, T, INT, KIND)                                                     \
  PT_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasFillMode_t uplo, INT n,        \
                                const T* alpha, const T* x, INT incx, const T* y, INT incy, \
                                T* AP) {                                                    \
    return update_call<T, T>({#NAME, handle}, OP, packed_matrix(AP, n, KIND, uplo), uplo,   \
                             KIND == Kind::kHermitian, true, alpha, x, incx, y, incy);      \
  }
#define PT_SYMMETRIC_UPDATES(P, T, R, KIND, SYR, SYR2, SPR, SPR2) \
  PT_SYR(cublas##P##SYR##_v2, #SYR, T, R, int, KIND)              \
  PT_SYR(cublas##P##SYR##_v2_64, #SYR, T, R, int64_t, KIND)       \
  PT_SYR2(cublas##P##SYR2##_v2, #SYR2, T, int, KIND)              \
  PT_SYR2(cublas##P##SYR2##_v2_64, #SYR2, T, int64_t, KIND)       \
  PT_SPR(cublas##P##SPR##_v2, #SPR, T, R, int, KIND)              \
  PT_SPR(cublas##P##SPR##_v2_64, #SPR, T, R, int64_t, KIND)       \
  PT_SPR2(cublas##P##SPR2##_v2, #SPR2, T, int, KIND)              \
  PT_SPR2(cublas##P##SPR2##_v2_64, #SPR2, T, int64_t, KIND)
PT_SYMMETRIC_UPDATES(S, float, float, Kind::kSymmetric, syr, syr2, spr, spr2)
PT_SYMMETRIC_UPDATES(D, double, double, Kind::kSymmetric, syr, syr2, spr, spr2)
PT_SYMMETRIC_UPDATES(C, cuComplex, float, Kind::kHermitian, her, her2, hpr, hpr2)
PT_SYMMETRIC_UPDATES(Z, cuDoubleComplex, double, Kind::kHermitian, her, her2, hpr, hpr2)
PT_SYR(cublasCsyr_v2, "syr", cuComplex, cuComplex, int, Kind::kSymmetric)
PT_SYR(cublasCsyr_v2_64, "syr", cuComplex, cuComplex, int64_t, Kind::kSymmetric)
PT_SYR(cublasZsyr_v2, "syr", cuDoubleComplex, cuDoubleComplex, int, Kind::kSymmetric)
PT_SYR(cublasZsyr_v2_64, "syr", cuDoubleComplex, cuDoubleComplex, int64_t, Kind::kSymmetric)
PT_SYR2(cublasCsyr2_v2, "syr2", cuComplex, int, Kind::kSymmetric)
PT_SYR2(cublasCsyr2_v2_64, "syr2", cuComplex, int64_t, Kind::kSymmetric)
PT_SYR2(cublasZsyr2_v2, "syr2", cuDoubleComplex, int, Kind::kSymmetric)
PT_SYR2(cublasZsyr2_v2_64, "syr2", cuDoubleComplex, int64_t, Kind::kSymmetric)
#undef PT_SYMMETRIC_UPDATES
#undef PT_SPR2
#undef PT_SPR
#undef PT_SYR2
#undef PT_SYR

// -- batched GEMV
#define PT_GEMV_BATCHED(NAME, T, INT)                                                              \
  PT_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t trans, INT m, INT n,      \
                                const T* alpha, const T* const Aarray[], INT lda,                  \
                                const T* const xarray[], INT incx, const T* beta,                  \
                                T* const yarray[], INT incy, INT batchCount) {                     \
    return gemv_batched<T>(                                                                        \
        {#NAME, handle}, trans, m, n, alpha, reinterpret_cast<const void* const*>(Aarray), lda, 0, \
        reinterpret_cast<const void* const*>(xarray), incx, 0, beta,                               \
        reinterpret_cast<void* const*>(yarray), incy, 0, batchCount, nullptr, nullptr, nullptr);   \
  }
#define PT_GEMV_STRIDED(NAME, T, INT)                                                             \
  PT_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t trans, INT m, INT n,     \
                                const T* alpha, const T* A, INT lda, long long int strideA,       \
                                const T* x, INT incx, long long int stridex, const T* beta, T* y, \
                                INT incy, long long int stridey, INT batchCount) {                \
    return gemv_batched<T>({#NAME, handle}, trans, m, n, alpha, nullptr, lda, strideA, nullptr,   \
                           incx, stridex, beta, nullptr, incy, stridey, batchCount, A, x, y);     \
  }
#define PT_GEMV_BATCHED_ALL(P, T)                        \
  PT_GEMV_BATCHED(cublas##P##gemvBatched, T, int)        \
  PT_GEMV_BATCHED(cublas##P##gemvBatched_64, T, int64_t) \
  PT_GEMV_STRIDED(cublas##P##gemvStridedBatched, T, int) \
  PT_GEMV_STRIDED(cublas##P##gemvStridedBatched_64, T, int64_t)
PT_GEMV_BATCHED_ALL(S, float)
PT_GEMV_BATCHED_ALL(D, double)
PT_GEMV_BATCHED_ALL(C, cuComplex)
PT_GEMV_BATCHED_ALL(Z, cuDoubleComplex)
#undef PT_GEMV_BATCHED_ALL
#undef PT_GEMV_STRIDED
#undef PT_GEMV_BATCHED

// Half/bfloat16 batched GEMV (HSH: half in and out, float compute; HSS: half in, float out; TST:
// bfloat16 in and out; TSS: bfloat16 in, float out).
#define PT_GEMV_MIXED(NAME, IN, OUT, DTYPE, INB, OUTB, INT)                                    \
  PT_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t trans, INT m, INT n,  \
                                const float* alpha, const IN* const Aarray[], INT lda,         \
                                const IN* const xarray[], INT incx, const float* beta,         \
                                OUT* const yarray[], INT incy, INT batchCount) {               \
    (void)alpha, (void)Aarray, (void)xarray, (void)beta, (void)yarray;                         \
    return gemv_batched_mixed({#NAME, handle}, DTYPE, INB, OUTB, trans, m, n, lda, incx, incy, \
                              batchCount);                                                     \
  }
#define PT_GEMV_MIXED_STRIDED(NAME, IN, OUT, DTYPE, INB, OUTB, INT)                              \
  PT_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t trans, INT m, INT n,    \
                                const float* alpha, const IN* A, INT lda, long long int strideA, \
                                const IN* x, INT incx, long long int stridex, const float* beta, \
                                OUT* y, INT incy, long long int stridey, INT batchCount) {       \
    (void)alpha, (void)A, (void)x, (void)beta, (void)y, (void)strideA, (void)stridex,            \
        (void)stridey;                                                                           \
    return gemv_batched_mixed({#NAME, handle}, DTYPE, INB, OUTB, trans, m, n, lda, incx, incy,   \
                              batchCount);                                                       \
  }
#define PT_GEMV_MIXED_ALL(P, IN, OUT, DTYPE, INB, OUTB)                                \
  PT_GEMV_MIXED(cublas##P##gemvBatched, IN, OUT, DTYPE, INB, OUTB, int)                \
  PT_GEMV_MIXED(cublas##P##gemvBatched_64, IN, OUT, DTYPE, INB, OUTB, int64_t)         \
  PT_GEMV_MIXED_STRIDED(cublas##P##gemvStridedBatched, IN, OUT, DTYPE, INB, OUTB, int) \
  PT_GEMV_MIXED_STRIDED(cublas##P##gemvStridedBatched_64, IN, OUT, DTYPE, INB, OUTB, int64_t)
PT_GEMV_MIXED_ALL(HSH, __half, __half, "float16", 2, 2)
PT_GEMV_MIXED_ALL(HSS, __half, float, "float16", 2, 4)
PT_GEMV_MIXED_ALL(TST, __nv_bfloat16, __nv_bfloat16, "bfloat16", 2, 2)
PT_GEMV_MIXED_ALL(TSS, __nv_bfloat16, float, "bfloat16", 2, 4)
#undef PT_GEMV_MIXED_ALL
#undef PT_GEMV_MIXED_STRIDED
#undef PT_GEMV_MIXED
