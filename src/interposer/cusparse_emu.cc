// cuSPARSE on the emulated devices, as NVIDIA's conjugateGradient/conjugateGradientPrecond and
// cuSolverSp samples and PyTorch's sparse ops call it. Generic API: handle and stream; sparse
// matrices in CSR, CSC, COO, BSR and Blocked-ELL (create, const create, destroy, size, format,
// index base, fill-mode/diag-type attributes, CSR/COO/CSC get and set pointers, values), sparse
// and dense vectors, dense matrices; SpMV, SpMM, SpSV and SpSM (descriptor, buffer size, analysis,
// solve), SpGEMM (descriptor, work estimation, compute, copy), SDDMM, Axpby, Gather, Scatter,
// SpVV, DenseToSparse, SparseToDense and Csr2cscEx2. Legacy API: matrix descriptors and the
// incomplete factorizations csrilu02, csric02, bsrilu02 and bsric02 and the BSR triangular
// solves bsrsv2/bsrsm2 (info objects, buffer size, analysis, factorization or solve, zero pivot)
// in S/D/C/Z; further down, the index conversions, tridiagonal and pentadiagonal solvers, CuPy's
// helpers (nnz, compression, csrgeam2, gemvi) and the BSR conversions and products.
//
// A call is validated (handle and descriptors live, shapes agree, arrays in device memory) and
// recorded as a `sparse` record (api, format, rows, cols, nnz, dtypes, FLOPs, bytes) followed by a
// kernel cusparse_<what>_<format>_<dtype> carrying the same FLOPs and bytes, timed by their
// roofline (memory-bound for every operation here but SpMM/SpSM with many columns). Values are not
// computed (the kernels' data is not there), except where a program needs the structure to go on
// and the arrays are backed host memory (POWERTRAIN_EMU_BACKED_LIMIT): SpGEMM's nnz(C) and C's
// row offsets and column indices, DenseToSparse's nnz, Csr2cscEx2's CSC arrays, Gather and
// Scatter (copies of values), SpVV's result (float/double); zero pivots are never found (-1).
// Model, not measured (v: value bytes, i: index bytes, o: offset bytes; "matrix": its values and
// index arrays, e.g. CSR nnz·(v+i) + (rows+1)·o, COO nnz·(v+2i), BSR bnnz·(rb·cb·v+i) +
// (brows+1)·o, Blocked-ELL rows·ellCols·v + (rows/b)·(ellCols/b)·i):
//   SpMV    FLOPs 2·nnz           bytes matrix + |x|·v + 2·|y|·v (y read and written)
//   SpMM    FLOPs 2·nnz·n         bytes matrix + |B|·v + 2·|C|·v
//   SpSV    solve: FLOPs 2·nnz, bytes matrix + |x|·v + |y|·v (the whole stored matrix is read:
//           an upper bound where the descriptor holds both triangles, as the ILU samples do);
//           analysis: FLOPs 0, bytes the index arrays (the level schedule reads the structure)
//   SpSM    solve: FLOPs 2·nnz·n, bytes matrix + |B|·v + |C|·v; analysis as SpSV
//   SpGEMM  products p = Σ over A's nonzeros (i,k) of nnz(B row k) (counted when backed, else
//           nnz(A)·nnz(B)/k for uniformly spread nonzeros), nnz(C) counted when backed, else
//           min(m·n, p); work estimation: FLOPs 0, bytes A's and B's index arrays; compute:
//           FLOPs 2·p, bytes A + B + C; copy: bytes 2·C (moved from the work buffer)
//   SDDMM   FLOPs 2·nnz(C)·k      bytes |A|·v + |B|·v + C + nnz(C)·v (C's values read, written)
//   Axpby   FLOPs 2·nnz + |y|     bytes nnz·(v+i) + 2·|y|·v
//   Gather / Scatter              bytes nnz·(i + 2v)
//   SpVV    FLOPs 2·nnz           bytes nnz·(i + 2v)
//   DenseToSparse  analysis: bytes rows·cols·v; convert: rows·cols·v + B
//   SparseToDense  bytes A + rows·cols·v (the zeros are written too)
//   Csr2cscEx2     bytes 2·(nnz·i + nnz·v if numeric) + (m+1)·4 + (n+1)·4
//   csrilu02 / csric02 (m rows): FLOPs nnz²/m (ILU(0): each nonzero updated by about nnz/m
//           others; half for IC(0)), bytes nnz·(2v+i) + (m+1)·4; analysis bytes nnz·i + (m+1)·4
//   bsrilu02 (mb block rows of b×b): FLOPs 2·nnzb²/mb·b³, bytes nnzb·(2·b²·v+4) + (mb+1)·4
//   work buffers: 0 bytes, except SpGEMM's (a token 8 bytes per row of A, so its
//   query-then-run protocol can tell the calls apart; nothing is stored there)
// Every other function of libcusparse is a generated stub that reports its name and returns
// CUSPARSE_STATUS_NOT_SUPPORTED (10).
// The legacy incomplete factorizations are deprecated in the header; they are still exported.
#define DISABLE_CUSPARSE_DEPRECATED
#include <cusparse.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "interposer/cublas_nccl_util.h"
#include "interposer/cudart_internal.h"
#include "interposer/cusparse_internal.h"
#include "interposer/trace_schema.h"

namespace trace_schema = powertrain::trace_schema;

namespace powertrain::emu::detail {
namespace {

struct SparseHandle {
  cudaStream_t stream = nullptr;
  cusparsePointerMode_t pointer_mode = CUSPARSE_POINTER_MODE_HOST;
};

// A sparse matrix of any format. rows/cols/nnz are what cusparseSpMatGetSize reports (block rows,
// block columns and blocks for BSR); `offsets` is CSR's row offsets, CSC's column offsets, COO's
// row indices and BSR's block-row offsets; `columns` holds CSR/COO/BSR column indices, CSC's row
// indices and Blocked-ELL's block-column indices.
struct SpMat {
  cusparseFormat_t format = CUSPARSE_FORMAT_CSR;
  std::int64_t rows = 0, cols = 0, nnz = 0;
  std::int64_t block_rows = 1, block_cols = 1;   // BSR block size; Blocked-ELL block size
  std::int64_t ell_cols = 0;                     // Blocked-ELL columns (in elements)
  std::int64_t sell_values = 0, slice_size = 0;  // Sliced ELL: padded values, rows per slice
  void *offsets = nullptr, *columns = nullptr, *values = nullptr;
  int offset_bytes = 4, index_bytes = 4;
  cusparseIndexType_t offset_type = CUSPARSE_INDEX_32I, index_type = CUSPARSE_INDEX_32I;
  cusparseIndexBase_t base = CUSPARSE_INDEX_BASE_ZERO;
  cudaDataType value_type = CUDA_R_32F;
  cusparseFillMode_t fill = CUSPARSE_FILL_MODE_LOWER;
  cusparseDiagType_t diag = CUSPARSE_DIAG_TYPE_NON_UNIT;
  int batch = 1;  // cusparse{Csr,Coo,Bsr}SetStridedBatch
};

struct SpVec {
  std::int64_t size = 0, nnz = 0;
  void *indices = nullptr, *values = nullptr;
  cusparseIndexType_t index_type = CUSPARSE_INDEX_32I;
  int index_bytes = 4;
  cusparseIndexBase_t base = CUSPARSE_INDEX_BASE_ZERO;
  cudaDataType value_type = CUDA_R_32F;
};

struct DnVec {
  std::int64_t size = 0;
  void* values = nullptr;
  cudaDataType value_type = CUDA_R_32F;
};

struct DnMat {
  std::int64_t rows = 0, cols = 0, ld = 0;
  void* values = nullptr;
  cudaDataType value_type = CUDA_R_32F;
  cusparseOrder_t order = CUSPARSE_ORDER_COL;
  int batch = 1;  // cusparseDnMatSetStridedBatch
  std::int64_t batch_stride = 0;
};

// SpSV/SpSM/SpGEMM descriptors: which phase they have been through.
struct OpDescr {
  bool analysed = false;                           // SpSV/SpSM analysis done
  std::int64_t products = 0, c_nnz = 0;            // SpGEMM work estimation
  bool estimated = false, computed = false;        // SpGEMM phases
  std::vector<std::int64_t> c_offsets, c_columns;  // SpGEMM's C structure when backed
};

struct FactorInfo {  // csrilu02Info_t, csric02Info_t, bsrilu02Info_t, bsric02Info_t, bsrsv2/sm2
  bool analysed = false;
};

struct SparseState {
  std::mutex mutex;
  std::unordered_set<const void*> handles, matrices_sparse, vectors, matrices, sparse_vectors,
      op_descrs, mat_descrs, infos, spmm_op_plans;
};

SparseState& sparse() {
  static SparseState* s = new SparseState;  // never destroyed
  return *s;
}

// The live object behind `handle` in `set`, or null. Objects are created by `create` (new T), so
// the caller may modify them under the state's mutex.
template <typename T>
T* live(std::unordered_set<const void*>& set, const void* handle) {
  std::lock_guard<std::mutex> lock(sparse().mutex);
  return set.count(handle) > 0 ? static_cast<T*>(const_cast<void*>(handle)) : nullptr;
}

template <typename T, typename H>
cusparseStatus_t create(std::unordered_set<const void*>& set, H* out, const T& value,
                        const char* api) {
  if (out == nullptr) {
    report_misuse(api, "the result pointer is NULL");
    return CUSPARSE_STATUS_INVALID_VALUE;
  }
  T* object = new T(value);
  {
    std::lock_guard<std::mutex> lock(sparse().mutex);
    set.insert(object);
  }
  *out = reinterpret_cast<H>(object);
  return CUSPARSE_STATUS_SUCCESS;
}

template <typename T>
cusparseStatus_t destroy(std::unordered_set<const void*>& set, const void* handle,
                         const char* api) {
  {
    std::lock_guard<std::mutex> lock(sparse().mutex);
    if (set.erase(handle) > 0) {
      delete static_cast<const T*>(handle);
      return CUSPARSE_STATUS_SUCCESS;
    }
  }
  if (handle == nullptr) return CUSPARSE_STATUS_SUCCESS;
  report_misuse(api, "invalid or destroyed descriptor " + pointer_text(handle));
  return CUSPARSE_STATUS_INVALID_VALUE;
}

// The handle's state, or null after reporting the misuse (the caller returns NOT_INITIALIZED).
const SparseHandle* live_handle(cusparseHandle_t handle, const char* api) {
  const auto* h = live<SparseHandle>(sparse().handles, handle);
  if (h == nullptr) {
    report_misuse(api, "invalid or destroyed cuSPARSE handle " + pointer_text(handle));
  }
  return h;
}

cusparseStatus_t bad(const char* api, const std::string& what) {
  report_misuse(api, what);
  return CUSPARSE_STATUS_INVALID_VALUE;
}

int index_bytes(cusparseIndexType_t t) {
  switch (t) {
    case CUSPARSE_INDEX_16U:
      return 2;
    case CUSPARSE_INDEX_32I:
      return 4;
    case CUSPARSE_INDEX_64I:
      return 8;
  }
  return 0;
}

int value_bytes(cudaDataType t) { return sparse_value_bytes(t); }

// Saturating arithmetic for FLOP and byte counts (never signed overflow).
std::int64_t mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}
std::int64_t add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

constexpr std::int64_t kMaxExtent = std::int64_t{1} << 40;

// A device array of at least `bytes` (NULL is fine when it holds nothing).
bool device_array(const void* pointer, std::int64_t bytes) {
  if (bytes == 0) return true;
  const PointerInfo info = lookup_pointer(pointer);
  return info.known && info.device_side && info.available >= static_cast<std::size_t>(bytes);
}

// Real host memory of at least `bytes` behind a device pointer (computations may read it).
bool backed(const void* pointer, std::int64_t bytes) {
  if (bytes == 0) return true;
  if (pointer == nullptr) return false;
  const PointerInfo info = lookup_pointer(pointer);
  return info.known && info.backed && info.available >= static_cast<std::size_t>(bytes);
}

// Reads index `k` of an index array of `bytes`-wide integers (16U, 32I or 64I).
std::int64_t read_index(const void* array, int bytes, std::int64_t k) {
  switch (bytes) {
    case 2:
      return static_cast<const std::uint16_t*>(array)[k];
    case 4:
      return static_cast<const std::int32_t*>(array)[k];
    default:
      return static_cast<const std::int64_t*>(array)[k];
  }
}
void write_index(void* array, int bytes, std::int64_t k, std::int64_t value) {
  switch (bytes) {
    case 2:
      static_cast<std::uint16_t*>(array)[k] = static_cast<std::uint16_t>(value);
      return;
    case 4:
      static_cast<std::int32_t*>(array)[k] = static_cast<std::int32_t>(value);
      return;
    default:
      static_cast<std::int64_t*>(array)[k] = value;
  }
}

const char* op_text(cusparseOperation_t op) {
  return op == CUSPARSE_OPERATION_NON_TRANSPOSE ? "N"
         : op == CUSPARSE_OPERATION_TRANSPOSE   ? "T"
                                                : "C";
}

const char* format_name(cusparseFormat_t f) {
  switch (f) {
    case CUSPARSE_FORMAT_CSR:
      return "csr";
    case CUSPARSE_FORMAT_CSC:
      return "csc";
    case CUSPARSE_FORMAT_COO:
      return "coo";
    case CUSPARSE_FORMAT_BSR:
      return "bsr";
    case CUSPARSE_FORMAT_BLOCKED_ELL:
      return "blocked_ell";
    case CUSPARSE_FORMAT_SLICED_ELLPACK:
      return "sliced_ell";
    default:
      return "unknown";
  }
}

// Element rows and columns (BSR's are blocks times the block size).
std::int64_t element_rows(const SpMat& a) {
  return a.format == CUSPARSE_FORMAT_BSR ? mul(a.rows, a.block_rows) : a.rows;
}
std::int64_t element_cols(const SpMat& a) {
  return a.format == CUSPARSE_FORMAT_BSR ? mul(a.cols, a.block_cols) : a.cols;
}

// Stored values (a BSR block holds rb·cb of them).
std::int64_t stored_values(const SpMat& a) {
  if (a.format == CUSPARSE_FORMAT_SLICED_ELLPACK) return a.sell_values;  // padding included
  return a.format == CUSPARSE_FORMAT_BSR ? mul(a.nnz, mul(a.block_rows, a.block_cols)) : a.nnz;
}

std::int64_t slices(const SpMat& a) {
  return a.slice_size > 0 ? (a.rows + a.slice_size - 1) / a.slice_size : 0;
}

// Bytes of the index arrays.
std::int64_t index_array_bytes(const SpMat& a) {
  switch (a.format) {
    case CUSPARSE_FORMAT_CSC:
      return a.nnz * a.index_bytes + (a.cols + 1) * a.offset_bytes;
    case CUSPARSE_FORMAT_COO:
      return 2 * a.nnz * a.index_bytes;
    case CUSPARSE_FORMAT_BLOCKED_ELL:
      return (a.rows / a.block_rows) * (a.ell_cols / a.block_rows) * a.index_bytes;
    case CUSPARSE_FORMAT_SLICED_ELLPACK:
      return a.sell_values * a.index_bytes + (slices(a) + 1) * a.offset_bytes;
    default:  // CSR, BSR
      return a.nnz * a.index_bytes + (a.rows + 1) * a.offset_bytes;
  }
}

std::int64_t matrix_bytes(const SpMat& a) {
  return add(mul(stored_values(a), value_bytes(a.value_type)), index_array_bytes(a));
}

std::int64_t dense_bytes(const DnMat& m) {
  return mul(mul(m.rows, m.cols), value_bytes(m.value_type));
}

SparseOp op_on(const char* api, const char* what, const SpMat& a, cudaDataType compute) {
  SparseOp op;
  op.api = api;
  op.what = what;
  op.format = format_name(a.format);
  op.rows = element_rows(a);
  op.cols = element_cols(a);
  op.nnz = stored_values(a);
  op.dtype = a.value_type;
  op.compute = compute;
  return op;
}

cusparseStatus_t run(const SparseHandle& h, const SparseOp& op, std::int64_t start) {
  return record_sparse_op(h.stream, op, start) ? CUSPARSE_STATUS_SUCCESS
                                               : CUSPARSE_STATUS_EXECUTION_FAILED;
}

// Live matrix/vector descriptors for an operation, or a misuse naming which one is not.
template <typename T>
T* need(std::unordered_set<const void*>& set, const void* handle, const char* what,
        const char* api) {
  T* object = live<T>(set, handle);
  if (object == nullptr) {
    report_misuse(api, std::string(what) + " " + pointer_text(handle) +
                           " is not a live descriptor of its kind");
  }
  return object;
}

// The handle and the operands A, x and y of SpMV and SpSV.
struct MatVec {
  const SparseHandle* h = nullptr;
  const SpMat* a = nullptr;
  const DnVec* x = nullptr;
  const DnVec* y = nullptr;
};

// Looks up every operand (reporting each one that is not live) before answering: NOT_INITIALIZED
// for a dead handle, INVALID_VALUE for a dead descriptor.
cusparseStatus_t mat_vec(cusparseHandle_t handle, const void* mat_a, const void* vec_x,
                         const void* vec_y, const char* api, MatVec* out) {
  out->h = live_handle(handle, api);
  if (out->h == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  out->a = need<SpMat>(sparse().matrices_sparse, mat_a, "matA", api);
  out->x = need<DnVec>(sparse().vectors, vec_x, "vecX", api);
  out->y = need<DnVec>(sparse().vectors, vec_y, "vecY", api);
  if (out->a == nullptr || out->x == nullptr || out->y == nullptr) {
    return CUSPARSE_STATUS_INVALID_VALUE;
  }
  return CUSPARSE_STATUS_SUCCESS;
}

// ---- values computed on the host (SpMV, SpMM, SpGEMM) -----------------------------------------
// Where every array an operation reads and writes is backed, CSR, CSC and COO products are
// computed for real in the value type (fp32, fp64 and their complex forms, the compute type
// equal to it, no batch), so programs that check their results or iterate on them (the
// conjugateGradient sample) see the GPU's numbers. Bounded: at most 2·10^9 multiply-adds and
// 1 GiB of scratch, else recorded only.
constexpr double kComputeOps = 2e9;
constexpr double kComputeScratchBytes = 1024.0 * 1024.0 * 1024.0;

template <typename T>
T conj_if(T v, bool conjugate) {
  if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
    return conjugate ? std::conj(v) : v;
  } else {
    (void)conjugate;
    return v;
  }
}

// The bytes of A's index arrays, by format (0 for the formats not computed).
std::int64_t index_bytes_of(const SpMat& a) {
  switch (a.format) {
    case CUSPARSE_FORMAT_CSR:
      return (a.rows + 1) * a.offset_bytes + a.nnz * a.index_bytes;
    case CUSPARSE_FORMAT_CSC:
      return (a.cols + 1) * a.offset_bytes + a.nnz * a.index_bytes;
    case CUSPARSE_FORMAT_COO:
      return a.nnz * (a.offset_bytes + a.index_bytes);
    default:
      return -1;
  }
}

// A's arrays are all readable here and its format is one the host products handle.
bool computable(const SpMat& a, int value_bytes) {
  if (a.batch != 1 || index_bytes_of(a) < 0) return false;
  const bool offsets_ok =
      a.format == CUSPARSE_FORMAT_COO
          ? backed(a.offsets, a.nnz * a.offset_bytes)
          : backed(a.offsets,
                   ((a.format == CUSPARSE_FORMAT_CSR ? a.rows : a.cols) + 1) * a.offset_bytes);
  return offsets_ok && backed(a.columns, a.nnz * a.index_bytes) &&
         backed(a.values, a.nnz * value_bytes);
}

// Calls f(row, col, k) for every stored entry of A (k its value's index), skipping indices out
// of range (where the GPU would read garbage).
template <typename F>
void for_each_entry(const SpMat& a, F&& f) {
  const std::int64_t base = a.base == CUSPARSE_INDEX_BASE_ONE ? 1 : 0;
  auto in_range = [&](std::int64_t r, std::int64_t c) {
    return r >= 0 && r < a.rows && c >= 0 && c < a.cols;
  };
  if (a.format == CUSPARSE_FORMAT_COO) {
    for (std::int64_t k = 0; k < a.nnz; ++k) {
      const std::int64_t r = read_index(a.offsets, a.offset_bytes, k) - base;
      const std::int64_t c = read_index(a.columns, a.index_bytes, k) - base;
      if (in_range(r, c)) f(r, c, k);
    }
    return;
  }
  const bool csr = a.format == CUSPARSE_FORMAT_CSR;
  const std::int64_t outer = csr ? a.rows : a.cols;
  for (std::int64_t i = 0; i < outer; ++i) {
    const std::int64_t k0 =
        std::max<std::int64_t>(read_index(a.offsets, a.offset_bytes, i) - base, 0);
    const std::int64_t k1 = std::min(read_index(a.offsets, a.offset_bytes, i + 1) - base, a.nnz);
    for (std::int64_t k = k0; k < k1; ++k) {
      const std::int64_t j = read_index(a.columns, a.index_bytes, k) - base;
      const std::int64_t r = csr ? i : j, c = csr ? j : i;
      if (in_range(r, c)) f(r, c, k);
    }
  }
}

// Reads a scalar argument (alpha, beta) through the pointer mode; false when unreadable.
template <typename U>
bool read_scalar(const SparseHandle& h, const U* p, U* out) {
  if (p == nullptr) return false;
  if (h.pointer_mode == CUSPARSE_POINTER_MODE_DEVICE) {
    if (!backed(p, sizeof(U))) return false;
  }
  *out = *p;
  return true;
}

// y = α·op(A)·x + β·y.
template <typename T>
void spmv_values(const SparseHandle& h, const SpMat& a, cusparseOperation_t op, const void* alpha_p,
                 const DnVec& x, const void* beta_p, const DnVec& y) {
  T alpha{}, beta{};
  if (!read_scalar(h, static_cast<const T*>(alpha_p), &alpha) ||
      !read_scalar(h, static_cast<const T*>(beta_p), &beta)) {
    return;
  }
  const auto* xv = static_cast<const T*>(x.values);
  auto* yv = static_cast<T*>(y.values);
  std::vector<T> acc(static_cast<std::size_t>(y.size), T{});
  const bool transposed = op != CUSPARSE_OPERATION_NON_TRANSPOSE;
  const bool conjugate = op == CUSPARSE_OPERATION_CONJUGATE_TRANSPOSE;
  const auto* values = static_cast<const T*>(a.values);
  for_each_entry(a, [&](std::int64_t r, std::int64_t c, std::int64_t k) {
    const T v = conj_if(values[k], conjugate);
    if (transposed) {
      acc[static_cast<std::size_t>(c)] += v * xv[r];
    } else {
      acc[static_cast<std::size_t>(r)] += v * xv[c];
    }
  });
  const bool beta_zero = beta == T{};
  for (std::int64_t i = 0; i < y.size; ++i) {
    yv[i] = alpha * acc[static_cast<std::size_t>(i)] + (beta_zero ? T{} : beta * yv[i]);
  }
}

// Calls f.template operator()<T>() for the value type when it is one the host products handle.
template <typename F>
bool by_value_type(cudaDataType type, F&& f) {
  switch (type) {
    case CUDA_R_32F:
      f(float{});
      return true;
    case CUDA_R_64F:
      f(double{});
      return true;
    case CUDA_C_32F:
      f(std::complex<float>{});
      return true;
    case CUDA_C_64F:
      f(std::complex<double>{});
      return true;
    default:
      return false;
  }
}

void compute_spmv(const SparseHandle& h, const SpMat& a, cusparseOperation_t op, const void* alpha,
                  const DnVec& x, const void* beta, const DnVec& y, cudaDataType compute) {
  if (a.value_type != compute || x.value_type != compute || y.value_type != compute) return;
  const int bytes = value_bytes(compute);
  if (!computable(a, bytes) || !backed(x.values, x.size * bytes) ||
      !backed(y.values, y.size * bytes) || static_cast<double>(a.nnz) > kComputeOps ||
      static_cast<double>(y.size) * bytes > kComputeScratchBytes) {
    return;
  }
  const powertrain::emu::HostComputeScope host_compute;  // not the program's time
  by_value_type(compute,
                [&](auto zero) { spmv_values<decltype(zero)>(h, a, op, alpha, x, beta, y); });
}

// C = α·op(A)·op(B) + β·C for dense B and C (either order, leading dimension ld).
template <typename T>
void spmm_values(const SparseHandle& h, const SpMat& a, cusparseOperation_t op_a,
                 cusparseOperation_t op_b, const void* alpha_p, const DnMat& b, const void* beta_p,
                 const DnMat& c) {
  T alpha{}, beta{};
  if (!read_scalar(h, static_cast<const T*>(alpha_p), &alpha) ||
      !read_scalar(h, static_cast<const T*>(beta_p), &beta)) {
    return;
  }
  auto at = [](const DnMat& m, std::int64_t i, std::int64_t j) {
    return m.order == CUSPARSE_ORDER_COL ? i + j * m.ld : i * m.ld + j;
  };
  const auto* bv = static_cast<const T*>(b.values);
  auto* cv = static_cast<T*>(c.values);
  const bool ta = op_a != CUSPARSE_OPERATION_NON_TRANSPOSE;
  const bool tb = op_b != CUSPARSE_OPERATION_NON_TRANSPOSE;
  const bool conj_a = op_a == CUSPARSE_OPERATION_CONJUGATE_TRANSPOSE;
  const bool conj_b = op_b == CUSPARSE_OPERATION_CONJUGATE_TRANSPOSE;
  const std::int64_t n = c.cols;
  std::vector<T> acc(static_cast<std::size_t>(c.rows * n), T{});
  const auto* values = static_cast<const T*>(a.values);
  for_each_entry(a, [&](std::int64_t r, std::int64_t col, std::int64_t k) {
    const T v = conj_if(values[k], conj_a);
    const std::int64_t i = ta ? col : r, inner = ta ? r : col;
    for (std::int64_t j = 0; j < n; ++j) {
      const T bij = tb ? conj_if(bv[at(b, j, inner)], conj_b) : bv[at(b, inner, j)];
      acc[static_cast<std::size_t>(i * n + j)] += v * bij;
    }
  });
  const bool beta_zero = beta == T{};
  for (std::int64_t i = 0; i < c.rows; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      T& out = cv[at(c, i, j)];
      out = alpha * acc[static_cast<std::size_t>(i * n + j)] + (beta_zero ? T{} : beta * out);
    }
  }
}

// The elements a dense matrix's layout spans (ld x cols or rows x ld).
std::int64_t dense_span(const DnMat& m) {
  if (m.rows == 0 || m.cols == 0) return 0;
  return m.order == CUSPARSE_ORDER_COL ? m.ld * (m.cols - 1) + m.rows
                                       : m.ld * (m.rows - 1) + m.cols;
}

void compute_spmm(const SparseHandle& h, const SpMat& a, cusparseOperation_t op_a,
                  cusparseOperation_t op_b, const void* alpha, const DnMat& b, const void* beta,
                  const DnMat& c, cudaDataType compute) {
  if (a.value_type != compute || b.value_type != compute || c.value_type != compute ||
      b.batch != 1 || c.batch != 1) {
    return;
  }
  const int bytes = value_bytes(compute);
  if (!computable(a, bytes) || !backed(b.values, dense_span(b) * bytes) ||
      !backed(c.values, dense_span(c) * bytes) ||
      static_cast<double>(a.nnz) * static_cast<double>(c.cols) > kComputeOps ||
      static_cast<double>(c.rows) * static_cast<double>(c.cols) * bytes > kComputeScratchBytes) {
    return;
  }
  const powertrain::emu::HostComputeScope host_compute;  // not the program's time
  by_value_type(compute, [&](auto zero) {
    spmm_values<decltype(zero)>(h, a, op_a, op_b, alpha, b, beta, c);
  });
}

// SpMV (record = false: only the checks, for the buffer-size query).
cusparseStatus_t spmv(cusparseHandle_t handle, cusparseOperation_t op_a, const void* mat_a,
                      const void* vec_x, const void* vec_y, cudaDataType compute, bool record,
                      const char* api, const void* alpha = nullptr, const void* beta = nullptr) {
  const std::int64_t start = now_ns();
  MatVec v;
  const cusparseStatus_t status = mat_vec(handle, mat_a, vec_x, vec_y, api, &v);
  if (status != CUSPARSE_STATUS_SUCCESS) return status;
  const bool transposed = op_a != CUSPARSE_OPERATION_NON_TRANSPOSE;
  const std::int64_t x_len = transposed ? element_rows(*v.a) : element_cols(*v.a);
  const std::int64_t y_len = transposed ? element_cols(*v.a) : element_rows(*v.a);
  if (v.x->size != x_len || v.y->size != y_len) {
    return bad(api, "vector sizes " + std::to_string(v.x->size) + " and " +
                        std::to_string(v.y->size) + " do not match op(A) of " +
                        std::to_string(y_len) + " x " + std::to_string(x_len));
  }
  if (!record) return CUSPARSE_STATUS_SUCCESS;
  SparseOp op = op_on(api, "spmv", *v.a, compute);
  op.op_a = op_text(op_a);
  op.flops = mul(2, stored_values(*v.a));
  op.bytes = add(matrix_bytes(*v.a),
                 x_len * value_bytes(v.x->value_type) + 2 * y_len * value_bytes(v.y->value_type));
  const cusparseStatus_t status_run = run(*v.h, op, start);
  if (status_run == CUSPARSE_STATUS_SUCCESS && alpha != nullptr && !capturing_stream(v.h->stream)) {
    compute_spmv(*v.h, *v.a, op_a, alpha, *v.x, beta, *v.y, compute);
  }
  return status_run;
}

// op(A)·op(B) shapes against C (m x n, inner k), or a misuse.
bool product_shape(const char* api, std::int64_t a_rows, std::int64_t a_cols,
                   cusparseOperation_t op_a, std::int64_t b_rows, std::int64_t b_cols,
                   cusparseOperation_t op_b, std::int64_t c_rows, std::int64_t c_cols,
                   std::int64_t* k_out) {
  const bool ta = op_a != CUSPARSE_OPERATION_NON_TRANSPOSE;
  const bool tb = op_b != CUSPARSE_OPERATION_NON_TRANSPOSE;
  const std::int64_t m = ta ? a_cols : a_rows, k = ta ? a_rows : a_cols;
  const std::int64_t kb = tb ? b_cols : b_rows, n = tb ? b_rows : b_cols;
  if (kb != k || c_rows != m || c_cols != n) {
    report_misuse(api, "shapes op(A) " + std::to_string(m) + " x " + std::to_string(k) +
                           ", op(B) " + std::to_string(kb) + " x " + std::to_string(n) + " and C " +
                           std::to_string(c_rows) + " x " + std::to_string(c_cols) +
                           " do not agree");
    return false;
  }
  *k_out = k;
  return true;
}

// SpMM C = α·op(A)·op(B) + β·C, and SpSM C = α·op(A)⁻¹·op(B) (what = "spmm" or "spsm_solve").
cusparseStatus_t spmm(cusparseHandle_t handle, cusparseOperation_t op_a, cusparseOperation_t op_b,
                      const void* mat_a, const void* mat_b, const void* mat_c, cudaDataType compute,
                      bool record, const char* what, const char* api, const void* alpha = nullptr,
                      const void* beta = nullptr) {
  const std::int64_t start = now_ns();
  const SparseHandle* h = live_handle(handle, api);
  if (h == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  const auto* a = need<SpMat>(sparse().matrices_sparse, mat_a, "matA", api);
  const auto* b = need<DnMat>(sparse().matrices, mat_b, "matB", api);
  const auto* c = need<DnMat>(sparse().matrices, mat_c, "matC", api);
  if (a == nullptr || b == nullptr || c == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  std::int64_t k = 0;
  if (!product_shape(api, element_rows(*a), element_cols(*a), op_a, b->rows, b->cols, op_b, c->rows,
                     c->cols, &k)) {
    return CUSPARSE_STATUS_INVALID_VALUE;
  }
  if (!record) return CUSPARSE_STATUS_SUCCESS;
  const bool solve = std::strcmp(what, "spmm") != 0;
  SparseOp op = op_on(api, what, *a, compute);
  op.op_a = op_text(op_a);
  op.n = c->cols;
  op.flops = mul(mul(2, stored_values(*a)), c->cols);
  op.bytes = add(add(matrix_bytes(*a), dense_bytes(*b)), mul(solve ? 1 : 2, dense_bytes(*c)));
  // A strided batch (spmm_csr_batched): every matrix of the batch once.
  const int batch = std::max({a->batch, b->batch, c->batch});
  op.flops = mul(op.flops, batch), op.bytes = mul(op.bytes, batch);
  const cusparseStatus_t status = run(*h, op, start);
  if (status == CUSPARSE_STATUS_SUCCESS && !solve && alpha != nullptr &&
      !capturing_stream(h->stream)) {
    compute_spmm(*h, *a, op_a, op_b, alpha, *b, beta, *c, compute);
  }
  return status;
}

// SpSV solve/analysis (what: "spsv_solve", "spsv_analysis"; record = false for the buffer size).
cusparseStatus_t spsv(cusparseHandle_t handle, cusparseOperation_t op_a, const void* mat_a,
                      const void* vec_x, const void* vec_y, cudaDataType compute, const void* descr,
                      const char* what, bool record, const char* api) {
  const std::int64_t start = now_ns();
  MatVec v;
  const cusparseStatus_t status = mat_vec(handle, mat_a, vec_x, vec_y, api, &v);
  if (status == CUSPARSE_STATUS_NOT_INITIALIZED) return status;
  auto* d = need<OpDescr>(sparse().op_descrs, descr, "spsvDescr", api);
  if (status != CUSPARSE_STATUS_SUCCESS || d == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  if (element_rows(*v.a) != element_cols(*v.a) || v.x->size != element_rows(*v.a) ||
      v.y->size != element_rows(*v.a)) {
    return bad(api, "a triangular solve needs a square matrix and vectors of its size (A " +
                        std::to_string(element_rows(*v.a)) + " x " +
                        std::to_string(element_cols(*v.a)) + ", x " + std::to_string(v.x->size) +
                        ", y " + std::to_string(v.y->size) + ")");
  }
  if (!record) return CUSPARSE_STATUS_SUCCESS;
  const bool analysis = std::strcmp(what, "spsv_analysis") == 0;
  {
    std::lock_guard<std::mutex> lock(sparse().mutex);
    if (analysis) {
      d->analysed = true;
    } else if (!d->analysed) {
      report_misuse(api, "the SpSV descriptor has not been through cusparseSpSV_analysis");
      return CUSPARSE_STATUS_INVALID_VALUE;
    }
  }
  SparseOp op = op_on(api, what, *v.a, compute);
  op.op_a = op_text(op_a);
  if (analysis) {
    op.bytes = index_array_bytes(*v.a);
  } else {
    op.flops = mul(2, stored_values(*v.a));
    op.bytes = add(matrix_bytes(*v.a), 2 * v.x->size * value_bytes(v.x->value_type));
  }
  return run(*v.h, op, start);
}

}  // namespace

bool legacy_mat_descr(const void* descr, LegacyMatDescr* out) {
  const auto* d = live<LegacyMatDescr>(sparse().mat_descrs, descr);
  if (d == nullptr) return false;
  std::lock_guard<std::mutex> lock(sparse().mutex);
  *out = *d;
  return true;
}

int sparse_value_bytes(cudaDataType t) {
  switch (t) {
    case CUDA_R_16F:
    case CUDA_R_16BF:
      return 2;
    case CUDA_R_32F:
    case CUDA_C_16F:
    case CUDA_C_16BF:
      return 4;
    case CUDA_R_64F:
    case CUDA_C_32F:
      return 8;
    case CUDA_C_64F:
      return 16;
    case CUDA_R_8I:
      return 1;
    case CUDA_R_32I:
      return 4;
    default:
      return 0;
  }
}

bool record_sparse_op(cudaStream_t stream, const SparseOp& op, std::int64_t start) {
  StreamRef ref;
  if (!stream_or_fail(stream, false, op.api, &ref)) return false;
  const char* dtype = libs::cuda_dtype_name(op.dtype);
  const char* compute_name = libs::cuda_dtype_name(op.compute);
  auto r = begin_record(trace_schema::op::kSparse, start, ref.device);
  r.field(trace_schema::field::kApi, std::string_view(op.api));
  r.field("format", std::string_view(op.format));
  if (op.op_a != nullptr) r.field("op_a", std::string_view(op.op_a));
  r.field("rows", op.rows);
  r.field("cols", op.cols);
  r.field("nnz", op.nnz);
  if (op.n > 0) r.field(trace_schema::field::kN, op.n);
  r.field(trace_schema::field::kDtype, std::string_view(dtype != nullptr ? dtype : "unknown"));
  r.field(trace_schema::field::kCompute,
          std::string_view(compute_name != nullptr ? compute_name : "unknown"));
  r.field(trace_schema::field::kFlops, op.flops);
  r.field(trace_schema::field::kBytes, op.bytes);
  r.field(trace_schema::field::kStream, ref.id);
  end_record(r);
  std::string name = std::string(op.library) + "_" + op.what + "_" + op.format + "_";
  name += dtype != nullptr ? dtype : "unknown";
  return append_sized_kernel(name, static_cast<std::size_t>(std::max<std::int64_t>(op.bytes, 1)),
                             stream, op.api, start, std::max<std::int64_t>(op.flops, 1));
}

}  // namespace powertrain::emu::detail

namespace detail = powertrain::emu::detail;
using detail::sparse;

// ---- handle, versions, errors ---------------------------------------------------------------

PT_EXPORT cusparseStatus_t cusparseCreate(cusparseHandle_t* handle) {
  return detail::create(sparse().handles, handle, detail::SparseHandle{}, "cusparseCreate");
}

PT_EXPORT cusparseStatus_t cusparseDestroy(cusparseHandle_t handle) {
  return detail::destroy<detail::SparseHandle>(sparse().handles, handle, "cusparseDestroy");
}

PT_EXPORT cusparseStatus_t cusparseSetStream(cusparseHandle_t handle, cudaStream_t stream) {
  const char* api = "cusparseSetStream";
  if (detail::live<detail::SparseHandle>(sparse().handles, handle) == nullptr) {
    powertrain::emu::report_misuse(api, "invalid or destroyed cuSPARSE handle");
    return CUSPARSE_STATUS_NOT_INITIALIZED;
  }
  detail::StreamRef ref;
  if (!detail::stream_or_fail(stream, false, api, &ref)) return CUSPARSE_STATUS_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(sparse().mutex);
  reinterpret_cast<detail::SparseHandle*>(handle)->stream = stream;
  return CUSPARSE_STATUS_SUCCESS;
}

PT_EXPORT cusparseStatus_t cusparseGetStream(cusparseHandle_t handle, cudaStream_t* stream) {
  const auto* h = detail::live<detail::SparseHandle>(sparse().handles, handle);
  if (h == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  if (stream == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(sparse().mutex);
  *stream = h->stream;
  return CUSPARSE_STATUS_SUCCESS;
}

PT_EXPORT cusparseStatus_t cusparseGetVersion(cusparseHandle_t handle, int* version) {
  (void)handle;
  if (version == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  *version = CUSPARSE_VERSION;
  return CUSPARSE_STATUS_SUCCESS;
}

PT_EXPORT cusparseStatus_t cusparseGetProperty(libraryPropertyType type, int* value) {
  if (value == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  switch (type) {
    case MAJOR_VERSION:
      *value = CUSPARSE_VER_MAJOR;
      return CUSPARSE_STATUS_SUCCESS;
    case MINOR_VERSION:
      *value = CUSPARSE_VER_MINOR;
      return CUSPARSE_STATUS_SUCCESS;
    case PATCH_LEVEL:
      *value = CUSPARSE_VER_PATCH;
      return CUSPARSE_STATUS_SUCCESS;
    default:
      return CUSPARSE_STATUS_INVALID_VALUE;
  }
}

PT_EXPORT const char* cusparseGetErrorName(cusparseStatus_t status) {
  switch (status) {
    case CUSPARSE_STATUS_SUCCESS:
      return "CUSPARSE_STATUS_SUCCESS";
    case CUSPARSE_STATUS_NOT_INITIALIZED:
      return "CUSPARSE_STATUS_NOT_INITIALIZED";
    case CUSPARSE_STATUS_ALLOC_FAILED:
      return "CUSPARSE_STATUS_ALLOC_FAILED";
    case CUSPARSE_STATUS_INVALID_VALUE:
      return "CUSPARSE_STATUS_INVALID_VALUE";
    case CUSPARSE_STATUS_EXECUTION_FAILED:
      return "CUSPARSE_STATUS_EXECUTION_FAILED";
    case CUSPARSE_STATUS_NOT_SUPPORTED:
      return "CUSPARSE_STATUS_NOT_SUPPORTED";
    default:
      return "CUSPARSE_STATUS_UNKNOWN (emulated cuSPARSE)";
  }
}

PT_EXPORT const char* cusparseGetErrorString(cusparseStatus_t status) {
  return cusparseGetErrorName(status);
}

// ---- sparse matrices, vectors, dense matrices ------------------------------------------------

namespace {

// Checks a new sparse matrix and registers it (arrays may be NULL, set later by SetPointers).
cusparseStatus_t create_sparse(void* out, detail::SpMat a, const char* api) {
  const int v = detail::value_bytes(a.value_type);
  const bool blocked = a.format == CUSPARSE_FORMAT_BSR || a.format == CUSPARSE_FORMAT_BLOCKED_ELL;
  if (a.rows < 0 || a.cols < 0 || a.nnz < 0 || a.offset_bytes == 0 || a.index_bytes == 0 ||
      v == 0 || (a.base != CUSPARSE_INDEX_BASE_ZERO && a.base != CUSPARSE_INDEX_BASE_ONE) ||
      a.rows > detail::kMaxExtent || a.cols > detail::kMaxExtent || a.nnz > detail::kMaxExtent ||
      (blocked &&
       (a.block_rows <= 0 || a.block_cols <= 0 || a.block_rows > 65536 || a.block_cols > 65536)) ||
      (a.format == CUSPARSE_FORMAT_BLOCKED_ELL &&
       (a.rows % a.block_rows != 0 || a.ell_cols % a.block_rows != 0 || a.ell_cols > a.cols)) ||
      (a.format == CUSPARSE_FORMAT_SLICED_ELLPACK &&
       (a.slice_size <= 0 || a.sell_values < a.nnz || a.sell_values > detail::kMaxExtent))) {
    return detail::bad(api, std::string("invalid ") + detail::format_name(a.format) +
                                " shape or types: " + std::to_string(a.rows) + " x " +
                                std::to_string(a.cols) + ", nnz " + std::to_string(a.nnz));
  }
  std::int64_t offsets_bytes = 0, columns_bytes = 0;
  switch (a.format) {
    case CUSPARSE_FORMAT_CSC:
      offsets_bytes = (a.cols + 1) * a.offset_bytes, columns_bytes = a.nnz * a.index_bytes;
      break;
    case CUSPARSE_FORMAT_COO:
      offsets_bytes = columns_bytes = a.nnz * a.index_bytes;
      break;
    case CUSPARSE_FORMAT_BLOCKED_ELL:
      columns_bytes = detail::index_array_bytes(a);
      break;
    case CUSPARSE_FORMAT_SLICED_ELLPACK:
      offsets_bytes = (detail::slices(a) + 1) * a.offset_bytes;
      columns_bytes = a.sell_values * a.index_bytes;
      break;
    default:
      offsets_bytes = (a.rows + 1) * a.offset_bytes, columns_bytes = a.nnz * a.index_bytes;
  }
  if ((a.offsets != nullptr && !detail::device_array(a.offsets, offsets_bytes)) ||
      (a.columns != nullptr && !detail::device_array(a.columns, columns_bytes)) ||
      (a.values != nullptr &&
       !detail::device_array(a.values, detail::mul(detail::stored_values(a), v)))) {
    return detail::bad(api, std::string("a ") + detail::format_name(a.format) +
                                " array is not device memory of its size");
  }
  return detail::create(sparse().matrices_sparse, static_cast<cusparseSpMatDescr_t*>(out), a, api);
}

detail::SpMat compressed(cusparseFormat_t format, int64_t rows, int64_t cols, int64_t nnz,
                         const void* offsets, const void* indices, const void* values,
                         cusparseIndexType_t offset_type, cusparseIndexType_t index_type,
                         cusparseIndexBase_t base, cudaDataType value_type) {
  detail::SpMat a;
  a.format = format;
  a.rows = rows, a.cols = cols, a.nnz = nnz;
  a.offsets = const_cast<void*>(offsets), a.columns = const_cast<void*>(indices);
  a.values = const_cast<void*>(values);
  a.offset_type = offset_type, a.index_type = index_type;
  a.offset_bytes = detail::index_bytes(offset_type),
  a.index_bytes = detail::index_bytes(index_type);
  a.base = base;
  a.value_type = value_type;
  return a;
}

cusparseStatus_t create_vector(void* out, int64_t size, const void* values, cudaDataType type,
                               const char* api) {
  if (size < 0 || detail::value_bytes(type) == 0 || size > detail::kMaxExtent) {
    return detail::bad(api, "invalid dense vector of " + std::to_string(size) + " values");
  }
  if (values != nullptr && !detail::device_array(values, size * detail::value_bytes(type))) {
    return detail::bad(api, detail::pointer_text(values) + " is not device memory of " +
                                std::to_string(size) + " values");
  }
  detail::DnVec v;
  v.size = size, v.values = const_cast<void*>(values), v.value_type = type;
  return detail::create(sparse().vectors, static_cast<cusparseDnVecDescr_t*>(out), v, api);
}

cusparseStatus_t create_sparse_vector(void* out, int64_t size, int64_t nnz, const void* indices,
                                      const void* values, cusparseIndexType_t index_type,
                                      cusparseIndexBase_t base, cudaDataType type,
                                      const char* api) {
  detail::SpVec v;
  v.size = size, v.nnz = nnz;
  v.indices = const_cast<void*>(indices), v.values = const_cast<void*>(values);
  v.index_type = index_type, v.index_bytes = detail::index_bytes(index_type);
  v.base = base, v.value_type = type;
  if (size < 0 || nnz < 0 || nnz > size || size > detail::kMaxExtent || v.index_bytes == 0 ||
      detail::value_bytes(type) == 0 ||
      (base != CUSPARSE_INDEX_BASE_ZERO && base != CUSPARSE_INDEX_BASE_ONE)) {
    return detail::bad(api, "invalid sparse vector: size " + std::to_string(size) + ", nnz " +
                                std::to_string(nnz));
  }
  if ((indices != nullptr && !detail::device_array(indices, nnz * v.index_bytes)) ||
      (values != nullptr && !detail::device_array(values, nnz * detail::value_bytes(type)))) {
    return detail::bad(api, "a sparse vector array is not device memory of its size");
  }
  return detail::create(sparse().sparse_vectors, static_cast<cusparseSpVecDescr_t*>(out), v, api);
}

cusparseStatus_t create_matrix(void* out, int64_t rows, int64_t cols, int64_t ld,
                               const void* values, cudaDataType type, cusparseOrder_t order,
                               const char* api) {
  const std::int64_t inner = order == CUSPARSE_ORDER_COL ? rows : cols;
  const std::int64_t outer = order == CUSPARSE_ORDER_COL ? cols : rows;
  if (rows < 0 || cols < 0 || ld < inner || detail::value_bytes(type) == 0 ||
      rows > (std::int64_t{1} << 31) || cols > (std::int64_t{1} << 31) ||
      ld > (std::int64_t{1} << 31) || ld * outer > detail::kMaxExtent) {
    return detail::bad(api, "invalid dense matrix " + std::to_string(rows) + " x " +
                                std::to_string(cols) + " with ld " + std::to_string(ld));
  }
  if (values != nullptr && !detail::device_array(values, ld * outer * detail::value_bytes(type))) {
    return detail::bad(api, detail::pointer_text(values) + " is not device memory of the matrix");
  }
  detail::DnMat m;
  m.rows = rows, m.cols = cols, m.ld = ld, m.values = const_cast<void*>(values);
  m.value_type = type, m.order = order;
  return detail::create(sparse().matrices, static_cast<cusparseDnMatDescr_t*>(out), m, api);
}

// The live sparse matrix behind a descriptor (reported when it is not).
detail::SpMat* sparse_matrix(const void* descr, const char* api) {
  return detail::need<detail::SpMat>(sparse().matrices_sparse, descr, "spMatDescr", api);
}

}  // namespace

PT_EXPORT cusparseStatus_t cusparseCreateCsr(cusparseSpMatDescr_t* descr, int64_t rows,
                                             int64_t cols, int64_t nnz, void* offsets,
                                             void* columns, void* values,
                                             cusparseIndexType_t offset_type,
                                             cusparseIndexType_t index_type,
                                             cusparseIndexBase_t base, cudaDataType value_type) {
  return create_sparse(descr,
                       compressed(CUSPARSE_FORMAT_CSR, rows, cols, nnz, offsets, columns, values,
                                  offset_type, index_type, base, value_type),
                       "cusparseCreateCsr");
}

PT_EXPORT cusparseStatus_t cusparseCreateConstCsr(
    cusparseConstSpMatDescr_t* descr, int64_t rows, int64_t cols, int64_t nnz, const void* offsets,
    const void* columns, const void* values, cusparseIndexType_t offset_type,
    cusparseIndexType_t index_type, cusparseIndexBase_t base, cudaDataType value_type) {
  return create_sparse(descr,
                       compressed(CUSPARSE_FORMAT_CSR, rows, cols, nnz, offsets, columns, values,
                                  offset_type, index_type, base, value_type),
                       "cusparseCreateConstCsr");
}

PT_EXPORT cusparseStatus_t cusparseCreateCsc(cusparseSpMatDescr_t* descr, int64_t rows,
                                             int64_t cols, int64_t nnz, void* offsets,
                                             void* rows_ind, void* values,
                                             cusparseIndexType_t offset_type,
                                             cusparseIndexType_t index_type,
                                             cusparseIndexBase_t base, cudaDataType value_type) {
  return create_sparse(descr,
                       compressed(CUSPARSE_FORMAT_CSC, rows, cols, nnz, offsets, rows_ind, values,
                                  offset_type, index_type, base, value_type),
                       "cusparseCreateCsc");
}

PT_EXPORT cusparseStatus_t cusparseCreateConstCsc(
    cusparseConstSpMatDescr_t* descr, int64_t rows, int64_t cols, int64_t nnz, const void* offsets,
    const void* rows_ind, const void* values, cusparseIndexType_t offset_type,
    cusparseIndexType_t index_type, cusparseIndexBase_t base, cudaDataType value_type) {
  return create_sparse(descr,
                       compressed(CUSPARSE_FORMAT_CSC, rows, cols, nnz, offsets, rows_ind, values,
                                  offset_type, index_type, base, value_type),
                       "cusparseCreateConstCsc");
}

PT_EXPORT cusparseStatus_t cusparseCreateCoo(cusparseSpMatDescr_t* descr, int64_t rows,
                                             int64_t cols, int64_t nnz, void* row_ind,
                                             void* col_ind, void* values,
                                             cusparseIndexType_t index_type,
                                             cusparseIndexBase_t base, cudaDataType value_type) {
  return create_sparse(descr,
                       compressed(CUSPARSE_FORMAT_COO, rows, cols, nnz, row_ind, col_ind, values,
                                  index_type, index_type, base, value_type),
                       "cusparseCreateCoo");
}

PT_EXPORT cusparseStatus_t cusparseCreateConstCoo(cusparseConstSpMatDescr_t* descr, int64_t rows,
                                                  int64_t cols, int64_t nnz, const void* row_ind,
                                                  const void* col_ind, const void* values,
                                                  cusparseIndexType_t index_type,
                                                  cusparseIndexBase_t base,
                                                  cudaDataType value_type) {
  return create_sparse(descr,
                       compressed(CUSPARSE_FORMAT_COO, rows, cols, nnz, row_ind, col_ind, values,
                                  index_type, index_type, base, value_type),
                       "cusparseCreateConstCoo");
}

namespace {
detail::SpMat bsr(int64_t brows, int64_t bcols, int64_t bnnz, int64_t rb, int64_t cb,
                  const void* offsets, const void* columns, const void* values,
                  cusparseIndexType_t offset_type, cusparseIndexType_t index_type,
                  cusparseIndexBase_t base, cudaDataType value_type) {
  detail::SpMat a = compressed(CUSPARSE_FORMAT_BSR, brows, bcols, bnnz, offsets, columns, values,
                               offset_type, index_type, base, value_type);
  a.block_rows = rb, a.block_cols = cb;
  return a;
}
detail::SpMat blocked_ell(int64_t rows, int64_t cols, int64_t block, int64_t ell_cols,
                          const void* columns, const void* values, cusparseIndexType_t index_type,
                          cusparseIndexBase_t base, cudaDataType value_type) {
  detail::SpMat a = compressed(CUSPARSE_FORMAT_BLOCKED_ELL, rows, cols, detail::mul(rows, ell_cols),
                               nullptr, columns, values, index_type, index_type, base, value_type);
  a.block_rows = a.block_cols = block;
  a.ell_cols = ell_cols;
  return a;
}
}  // namespace

PT_EXPORT cusparseStatus_t cusparseCreateBsr(cusparseSpMatDescr_t* descr, int64_t brows,
                                             int64_t bcols, int64_t bnnz, int64_t rb, int64_t cb,
                                             void* offsets, void* columns, void* values,
                                             cusparseIndexType_t offset_type,
                                             cusparseIndexType_t index_type,
                                             cusparseIndexBase_t base, cudaDataType value_type,
                                             cusparseOrder_t order) {
  (void)order;  // the layout inside a block moves the same bytes
  return create_sparse(descr,
                       bsr(brows, bcols, bnnz, rb, cb, offsets, columns, values, offset_type,
                           index_type, base, value_type),
                       "cusparseCreateBsr");
}

PT_EXPORT cusparseStatus_t cusparseCreateConstBsr(
    cusparseConstSpMatDescr_t* descr, int64_t brows, int64_t bcols, int64_t bnnz, int64_t rb,
    int64_t cb, const void* offsets, const void* columns, const void* values,
    cusparseIndexType_t offset_type, cusparseIndexType_t index_type, cusparseIndexBase_t base,
    cudaDataType value_type, cusparseOrder_t order) {
  (void)order;
  return create_sparse(descr,
                       bsr(brows, bcols, bnnz, rb, cb, offsets, columns, values, offset_type,
                           index_type, base, value_type),
                       "cusparseCreateConstBsr");
}

PT_EXPORT cusparseStatus_t cusparseCreateBlockedEll(cusparseSpMatDescr_t* descr, int64_t rows,
                                                    int64_t cols, int64_t block, int64_t ell_cols,
                                                    void* columns, void* values,
                                                    cusparseIndexType_t index_type,
                                                    cusparseIndexBase_t base,
                                                    cudaDataType value_type) {
  return create_sparse(
      descr,
      blocked_ell(rows, cols, block, ell_cols, columns, values, index_type, base, value_type),
      "cusparseCreateBlockedEll");
}

PT_EXPORT cusparseStatus_t cusparseCreateConstBlockedEll(
    cusparseConstSpMatDescr_t* descr, int64_t rows, int64_t cols, int64_t block, int64_t ell_cols,
    const void* columns, const void* values, cusparseIndexType_t index_type,
    cusparseIndexBase_t base, cudaDataType value_type) {
  return create_sparse(
      descr,
      blocked_ell(rows, cols, block, ell_cols, columns, values, index_type, base, value_type),
      "cusparseCreateConstBlockedEll");
}

// Sliced ELL: slices of `slice_size` rows, each padded to its longest row; sell_values counts the
// padded values (what the arrays hold and SpMV reads).
namespace {
detail::SpMat sliced_ell(int64_t rows, int64_t cols, int64_t nnz, int64_t sell_values,
                         int64_t slice_size, const void* slice_offsets, const void* columns,
                         const void* values, cusparseIndexType_t offsets_type,
                         cusparseIndexType_t columns_type, cusparseIndexBase_t base,
                         cudaDataType value_type) {
  detail::SpMat a = compressed(CUSPARSE_FORMAT_SLICED_ELLPACK, rows, cols, nnz, slice_offsets,
                               columns, values, offsets_type, columns_type, base, value_type);
  a.sell_values = sell_values, a.slice_size = slice_size;
  return a;
}
}  // namespace

PT_EXPORT cusparseStatus_t cusparseCreateSlicedEll(
    cusparseSpMatDescr_t* descr, int64_t rows, int64_t cols, int64_t nnz, int64_t sell_values,
    int64_t slice_size, void* slice_offsets, void* columns, void* values,
    cusparseIndexType_t offsets_type, cusparseIndexType_t columns_type, cusparseIndexBase_t base,
    cudaDataType value_type) {
  return create_sparse(descr,
                       sliced_ell(rows, cols, nnz, sell_values, slice_size, slice_offsets, columns,
                                  values, offsets_type, columns_type, base, value_type),
                       "cusparseCreateSlicedEll");
}

PT_EXPORT cusparseStatus_t cusparseCreateConstSlicedEll(
    cusparseConstSpMatDescr_t* descr, int64_t rows, int64_t cols, int64_t nnz, int64_t sell_values,
    int64_t slice_size, const void* slice_offsets, const void* columns, const void* values,
    cusparseIndexType_t offsets_type, cusparseIndexType_t columns_type, cusparseIndexBase_t base,
    cudaDataType value_type) {
  return create_sparse(descr,
                       sliced_ell(rows, cols, nnz, sell_values, slice_size, slice_offsets, columns,
                                  values, offsets_type, columns_type, base, value_type),
                       "cusparseCreateConstSlicedEll");
}

PT_EXPORT cusparseStatus_t cusparseDestroySpMat(cusparseConstSpMatDescr_t descr) {
  return detail::destroy<detail::SpMat>(sparse().matrices_sparse, descr, "cusparseDestroySpMat");
}

PT_EXPORT cusparseStatus_t cusparseSpMatGetSize(cusparseConstSpMatDescr_t descr, int64_t* rows,
                                                int64_t* cols, int64_t* nnz) {
  const detail::SpMat* a = sparse_matrix(descr, "cusparseSpMatGetSize");
  if (a == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  if (rows == nullptr || cols == nullptr || nnz == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(sparse().mutex);
  *rows = a->rows, *cols = a->cols, *nnz = a->nnz;
  return CUSPARSE_STATUS_SUCCESS;
}

PT_EXPORT cusparseStatus_t cusparseSpMatGetFormat(cusparseConstSpMatDescr_t descr,
                                                  cusparseFormat_t* format) {
  const detail::SpMat* a = sparse_matrix(descr, "cusparseSpMatGetFormat");
  if (a == nullptr || format == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  *format = a->format;
  return CUSPARSE_STATUS_SUCCESS;
}

PT_EXPORT cusparseStatus_t cusparseSpMatGetIndexBase(cusparseConstSpMatDescr_t descr,
                                                     cusparseIndexBase_t* base) {
  const detail::SpMat* a = sparse_matrix(descr, "cusparseSpMatGetIndexBase");
  if (a == nullptr || base == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  *base = a->base;
  return CUSPARSE_STATUS_SUCCESS;
}

PT_EXPORT cusparseStatus_t cusparseSpMatGetValues(cusparseSpMatDescr_t descr, void** values) {
  const detail::SpMat* a = sparse_matrix(descr, "cusparseSpMatGetValues");
  if (a == nullptr || values == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(sparse().mutex);
  *values = a->values;
  return CUSPARSE_STATUS_SUCCESS;
}

PT_EXPORT cusparseStatus_t cusparseSpMatSetValues(cusparseSpMatDescr_t descr, void* values) {
  const char* api = "cusparseSpMatSetValues";
  detail::SpMat* a = sparse_matrix(descr, api);
  if (a == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  if (!detail::device_array(
          values, detail::mul(detail::stored_values(*a), detail::value_bytes(a->value_type)))) {
    return detail::bad(api, detail::pointer_text(values) + " is not device memory of the values");
  }
  std::lock_guard<std::mutex> lock(sparse().mutex);
  a->values = values;
  return CUSPARSE_STATUS_SUCCESS;
}

// The fill mode and diagonal type (the only attributes): 4-byte enums, sizes checked.
PT_EXPORT cusparseStatus_t cusparseSpMatGetAttribute(cusparseConstSpMatDescr_t descr,
                                                     cusparseSpMatAttribute_t attribute, void* data,
                                                     size_t size) {
  const char* api = "cusparseSpMatGetAttribute";
  const detail::SpMat* a = sparse_matrix(descr, api);
  if (a == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  if (data == nullptr || size != sizeof(int) ||
      (attribute != CUSPARSE_SPMAT_FILL_MODE && attribute != CUSPARSE_SPMAT_DIAG_TYPE)) {
    return detail::bad(api, "attribute " + std::to_string(static_cast<int>(attribute)) + " with " +
                                std::to_string(size) + " bytes of data");
  }
  std::lock_guard<std::mutex> lock(sparse().mutex);
  const int value =
      attribute == CUSPARSE_SPMAT_FILL_MODE ? static_cast<int>(a->fill) : static_cast<int>(a->diag);
  std::memcpy(data, &value, sizeof value);
  return CUSPARSE_STATUS_SUCCESS;
}

PT_EXPORT cusparseStatus_t cusparseSpMatSetAttribute(cusparseSpMatDescr_t descr,
                                                     cusparseSpMatAttribute_t attribute, void* data,
                                                     size_t size) {
  const char* api = "cusparseSpMatSetAttribute";
  detail::SpMat* a = sparse_matrix(descr, api);
  if (a == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  int value = -1;
  if (data != nullptr && size == sizeof(int)) std::memcpy(&value, data, sizeof value);
  const bool fill = attribute == CUSPARSE_SPMAT_FILL_MODE;
  if ((!fill && attribute != CUSPARSE_SPMAT_DIAG_TYPE) || value < 0 || value > 1) {
    return detail::bad(api, "attribute " + std::to_string(static_cast<int>(attribute)) +
                                " with value " + std::to_string(value) + " (" +
                                std::to_string(size) + " bytes)");
  }
  std::lock_guard<std::mutex> lock(sparse().mutex);
  if (fill) {
    a->fill = static_cast<cusparseFillMode_t>(value);
  } else {
    a->diag = static_cast<cusparseDiagType_t>(value);
  }
  return CUSPARSE_STATUS_SUCCESS;
}

namespace {
// CSR/CSC/COO getters: the descriptor must be of `format`.
cusparseStatus_t compressed_get(const void* descr, cusparseFormat_t format, int64_t* rows,
                                int64_t* cols, int64_t* nnz, void** offsets, void** indices,
                                void** values, cusparseIndexType_t* offset_type,
                                cusparseIndexType_t* index_type, cusparseIndexBase_t* base,
                                cudaDataType* value_type, const char* api) {
  const detail::SpMat* a = sparse_matrix(descr, api);
  if (a == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  if (a->format != format) {
    return detail::bad(api, std::string("the matrix is ") + detail::format_name(a->format) +
                                ", not " + detail::format_name(format));
  }
  std::lock_guard<std::mutex> lock(sparse().mutex);
  if (rows != nullptr) *rows = a->rows;
  if (cols != nullptr) *cols = a->cols;
  if (nnz != nullptr) *nnz = a->nnz;
  if (offsets != nullptr) *offsets = a->offsets;
  if (indices != nullptr) *indices = a->columns;
  if (values != nullptr) *values = a->values;
  if (offset_type != nullptr) *offset_type = a->offset_type;
  if (index_type != nullptr) *index_type = a->index_type;
  if (base != nullptr) *base = a->base;
  if (value_type != nullptr) *value_type = a->value_type;
  return CUSPARSE_STATUS_SUCCESS;
}

cusparseStatus_t compressed_set(void* descr, cusparseFormat_t format, void* offsets, void* indices,
                                void* values, const char* api) {
  detail::SpMat* a = sparse_matrix(descr, api);
  if (a == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  if (a->format != format) {
    return detail::bad(api, std::string("the matrix is ") + detail::format_name(a->format) +
                                ", not " + detail::format_name(format));
  }
  const std::int64_t offsets_bytes = format == CUSPARSE_FORMAT_COO ? a->nnz * a->index_bytes
                                     : format == CUSPARSE_FORMAT_CSC
                                         ? (a->cols + 1) * a->offset_bytes
                                         : (a->rows + 1) * a->offset_bytes;
  if (!detail::device_array(offsets, offsets_bytes) ||
      !detail::device_array(indices, a->nnz * a->index_bytes) ||
      !detail::device_array(values, a->nnz * detail::value_bytes(a->value_type))) {
    return detail::bad(
        api, "an array is not device memory of its size (nnz " + std::to_string(a->nnz) + ")");
  }
  std::lock_guard<std::mutex> lock(sparse().mutex);
  a->offsets = offsets, a->columns = indices, a->values = values;
  return CUSPARSE_STATUS_SUCCESS;
}
}  // namespace

PT_EXPORT cusparseStatus_t cusparseCsrGet(cusparseSpMatDescr_t descr, int64_t* rows, int64_t* cols,
                                          int64_t* nnz, void** offsets, void** columns,
                                          void** values, cusparseIndexType_t* offset_type,
                                          cusparseIndexType_t* index_type,
                                          cusparseIndexBase_t* base, cudaDataType* value_type) {
  return compressed_get(descr, CUSPARSE_FORMAT_CSR, rows, cols, nnz, offsets, columns, values,
                        offset_type, index_type, base, value_type, "cusparseCsrGet");
}

PT_EXPORT cusparseStatus_t cusparseConstCsrGet(cusparseConstSpMatDescr_t descr, int64_t* rows,
                                               int64_t* cols, int64_t* nnz, const void** offsets,
                                               const void** columns, const void** values,
                                               cusparseIndexType_t* offset_type,
                                               cusparseIndexType_t* index_type,
                                               cusparseIndexBase_t* base,
                                               cudaDataType* value_type) {
  return compressed_get(descr, CUSPARSE_FORMAT_CSR, rows, cols, nnz, const_cast<void**>(offsets),
                        const_cast<void**>(columns), const_cast<void**>(values), offset_type,
                        index_type, base, value_type, "cusparseConstCsrGet");
}

PT_EXPORT cusparseStatus_t cusparseCscGet(cusparseSpMatDescr_t descr, int64_t* rows, int64_t* cols,
                                          int64_t* nnz, void** offsets, void** rows_ind,
                                          void** values, cusparseIndexType_t* offset_type,
                                          cusparseIndexType_t* index_type,
                                          cusparseIndexBase_t* base, cudaDataType* value_type) {
  return compressed_get(descr, CUSPARSE_FORMAT_CSC, rows, cols, nnz, offsets, rows_ind, values,
                        offset_type, index_type, base, value_type, "cusparseCscGet");
}

PT_EXPORT cusparseStatus_t cusparseCooGet(cusparseSpMatDescr_t descr, int64_t* rows, int64_t* cols,
                                          int64_t* nnz, void** row_ind, void** col_ind,
                                          void** values, cusparseIndexType_t* index_type,
                                          cusparseIndexBase_t* base, cudaDataType* value_type) {
  return compressed_get(descr, CUSPARSE_FORMAT_COO, rows, cols, nnz, row_ind, col_ind, values,
                        nullptr, index_type, base, value_type, "cusparseCooGet");
}

PT_EXPORT cusparseStatus_t cusparseCsrSetPointers(cusparseSpMatDescr_t descr, void* offsets,
                                                  void* columns, void* values) {
  return compressed_set(descr, CUSPARSE_FORMAT_CSR, offsets, columns, values,
                        "cusparseCsrSetPointers");
}

PT_EXPORT cusparseStatus_t cusparseCscSetPointers(cusparseSpMatDescr_t descr, void* offsets,
                                                  void* rows_ind, void* values) {
  return compressed_set(descr, CUSPARSE_FORMAT_CSC, offsets, rows_ind, values,
                        "cusparseCscSetPointers");
}

PT_EXPORT cusparseStatus_t cusparseCooSetPointers(cusparseSpMatDescr_t descr, void* row_ind,
                                                  void* col_ind, void* values) {
  return compressed_set(descr, CUSPARSE_FORMAT_COO, row_ind, col_ind, values,
                        "cusparseCooSetPointers");
}

PT_EXPORT cusparseStatus_t cusparseCreateSpVec(cusparseSpVecDescr_t* descr, int64_t size,
                                               int64_t nnz, void* indices, void* values,
                                               cusparseIndexType_t index_type,
                                               cusparseIndexBase_t base, cudaDataType type) {
  return create_sparse_vector(descr, size, nnz, indices, values, index_type, base, type,
                              "cusparseCreateSpVec");
}

PT_EXPORT cusparseStatus_t cusparseCreateConstSpVec(cusparseConstSpVecDescr_t* descr, int64_t size,
                                                    int64_t nnz, const void* indices,
                                                    const void* values,
                                                    cusparseIndexType_t index_type,
                                                    cusparseIndexBase_t base, cudaDataType type) {
  return create_sparse_vector(descr, size, nnz, indices, values, index_type, base, type,
                              "cusparseCreateConstSpVec");
}

PT_EXPORT cusparseStatus_t cusparseDestroySpVec(cusparseConstSpVecDescr_t descr) {
  return detail::destroy<detail::SpVec>(sparse().sparse_vectors, descr, "cusparseDestroySpVec");
}

PT_EXPORT cusparseStatus_t cusparseSpVecGet(cusparseSpVecDescr_t descr, int64_t* size, int64_t* nnz,
                                            void** indices, void** values,
                                            cusparseIndexType_t* index_type,
                                            cusparseIndexBase_t* base, cudaDataType* type) {
  const auto* v =
      detail::need<detail::SpVec>(sparse().sparse_vectors, descr, "spVecDescr", "cusparseSpVecGet");
  if (v == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  if (size != nullptr) *size = v->size;
  if (nnz != nullptr) *nnz = v->nnz;
  if (indices != nullptr) *indices = v->indices;
  if (values != nullptr) *values = v->values;
  if (index_type != nullptr) *index_type = v->index_type;
  if (base != nullptr) *base = v->base;
  if (type != nullptr) *type = v->value_type;
  return CUSPARSE_STATUS_SUCCESS;
}

PT_EXPORT cusparseStatus_t cusparseCreateDnVec(cusparseDnVecDescr_t* descr, int64_t size,
                                               void* values, cudaDataType type) {
  return create_vector(descr, size, values, type, "cusparseCreateDnVec");
}

PT_EXPORT cusparseStatus_t cusparseCreateConstDnVec(cusparseConstDnVecDescr_t* descr, int64_t size,
                                                    const void* values, cudaDataType type) {
  return create_vector(descr, size, values, type, "cusparseCreateConstDnVec");
}

PT_EXPORT cusparseStatus_t cusparseDestroyDnVec(cusparseConstDnVecDescr_t descr) {
  return detail::destroy<detail::DnVec>(sparse().vectors, descr, "cusparseDestroyDnVec");
}

PT_EXPORT cusparseStatus_t cusparseDnVecGet(cusparseDnVecDescr_t descr, int64_t* size,
                                            void** values, cudaDataType* type) {
  const auto* v =
      detail::need<detail::DnVec>(sparse().vectors, descr, "dnVecDescr", "cusparseDnVecGet");
  if (v == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  if (size != nullptr) *size = v->size;
  if (values != nullptr) *values = v->values;
  if (type != nullptr) *type = v->value_type;
  return CUSPARSE_STATUS_SUCCESS;
}

PT_EXPORT cusparseStatus_t cusparseDnVecGetValues(cusparseDnVecDescr_t descr, void** values) {
  return cusparseDnVecGet(descr, nullptr, values, nullptr);
}

PT_EXPORT cusparseStatus_t cusparseDnVecSetValues(cusparseDnVecDescr_t descr, void* values) {
  const char* api = "cusparseDnVecSetValues";
  auto* v = detail::need<detail::DnVec>(sparse().vectors, descr, "dnVecDescr", api);
  if (v == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  if (!detail::device_array(values, v->size * detail::value_bytes(v->value_type))) {
    return detail::bad(api, detail::pointer_text(values) + " is not device memory of the vector");
  }
  std::lock_guard<std::mutex> lock(sparse().mutex);
  v->values = values;
  return CUSPARSE_STATUS_SUCCESS;
}

PT_EXPORT cusparseStatus_t cusparseCreateDnMat(cusparseDnMatDescr_t* descr, int64_t rows,
                                               int64_t cols, int64_t ld, void* values,
                                               cudaDataType type, cusparseOrder_t order) {
  return create_matrix(descr, rows, cols, ld, values, type, order, "cusparseCreateDnMat");
}

PT_EXPORT cusparseStatus_t cusparseCreateConstDnMat(cusparseConstDnMatDescr_t* descr, int64_t rows,
                                                    int64_t cols, int64_t ld, const void* values,
                                                    cudaDataType type, cusparseOrder_t order) {
  return create_matrix(descr, rows, cols, ld, values, type, order, "cusparseCreateConstDnMat");
}

PT_EXPORT cusparseStatus_t cusparseDestroyDnMat(cusparseConstDnMatDescr_t descr) {
  return detail::destroy<detail::DnMat>(sparse().matrices, descr, "cusparseDestroyDnMat");
}

PT_EXPORT cusparseStatus_t cusparseDnMatGet(cusparseDnMatDescr_t descr, int64_t* rows,
                                            int64_t* cols, int64_t* ld, void** values,
                                            cudaDataType* type, cusparseOrder_t* order) {
  const auto* m =
      detail::need<detail::DnMat>(sparse().matrices, descr, "dnMatDescr", "cusparseDnMatGet");
  if (m == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  if (rows != nullptr) *rows = m->rows;
  if (cols != nullptr) *cols = m->cols;
  if (ld != nullptr) *ld = m->ld;
  if (values != nullptr) *values = m->values;
  if (type != nullptr) *type = m->value_type;
  if (order != nullptr) *order = m->order;
  return CUSPARSE_STATUS_SUCCESS;
}

// ---- SpMV, SpMM --------------------------------------------------------------------------------

PT_EXPORT cusparseStatus_t cusparseSpMV_bufferSize(
    cusparseHandle_t handle, cusparseOperation_t op_a, const void* alpha,
    cusparseConstSpMatDescr_t mat_a, cusparseConstDnVecDescr_t vec_x, const void* beta,
    cusparseDnVecDescr_t vec_y, cudaDataType compute, cusparseSpMVAlg_t alg, size_t* buffer_size) {
  (void)alpha, (void)beta, (void)alg;
  if (buffer_size == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  const cusparseStatus_t s =
      detail::spmv(handle, op_a, mat_a, vec_x, vec_y, compute, false, "cusparseSpMV_bufferSize");
  if (s == CUSPARSE_STATUS_SUCCESS) *buffer_size = 0;
  return s;
}

PT_EXPORT cusparseStatus_t cusparseSpMV(cusparseHandle_t handle, cusparseOperation_t op_a,
                                        const void* alpha, cusparseConstSpMatDescr_t mat_a,
                                        cusparseConstDnVecDescr_t vec_x, const void* beta,
                                        cusparseDnVecDescr_t vec_y, cudaDataType compute,
                                        cusparseSpMVAlg_t alg, void* buffer) {
  (void)alg, (void)buffer;
  if (alpha == nullptr || beta == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  return detail::spmv(handle, op_a, mat_a, vec_x, vec_y, compute, true, "cusparseSpMV", alpha,
                      beta);
}

PT_EXPORT cusparseStatus_t cusparseSpMM_bufferSize(
    cusparseHandle_t handle, cusparseOperation_t op_a, cusparseOperation_t op_b, const void* alpha,
    cusparseConstSpMatDescr_t mat_a, cusparseConstDnMatDescr_t mat_b, const void* beta,
    cusparseDnMatDescr_t mat_c, cudaDataType compute, cusparseSpMMAlg_t alg, size_t* buffer_size) {
  (void)alpha, (void)beta, (void)alg;
  if (buffer_size == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  const cusparseStatus_t s = detail::spmm(handle, op_a, op_b, mat_a, mat_b, mat_c, compute, false,
                                          "spmm", "cusparseSpMM_bufferSize");
  if (s == CUSPARSE_STATUS_SUCCESS) *buffer_size = 0;
  return s;
}

PT_EXPORT cusparseStatus_t cusparseSpMM(cusparseHandle_t handle, cusparseOperation_t op_a,
                                        cusparseOperation_t op_b, const void* alpha,
                                        cusparseConstSpMatDescr_t mat_a,
                                        cusparseConstDnMatDescr_t mat_b, const void* beta,
                                        cusparseDnMatDescr_t mat_c, cudaDataType compute,
                                        cusparseSpMMAlg_t alg, void* buffer) {
  (void)alg, (void)buffer;
  if (alpha == nullptr || beta == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  return detail::spmm(handle, op_a, op_b, mat_a, mat_b, mat_c, compute, true, "spmm",
                      "cusparseSpMM", alpha, beta);
}

// ---- SpSV, SpSM (triangular solves)
// --------------------------------------------------------------

PT_EXPORT cusparseStatus_t cusparseSpSV_createDescr(cusparseSpSVDescr_t* descr) {
  return detail::create(sparse().op_descrs, descr, detail::OpDescr{}, "cusparseSpSV_createDescr");
}

PT_EXPORT cusparseStatus_t cusparseSpSV_destroyDescr(cusparseSpSVDescr_t descr) {
  return detail::destroy<detail::OpDescr>(sparse().op_descrs, descr, "cusparseSpSV_destroyDescr");
}

PT_EXPORT cusparseStatus_t cusparseSpSV_bufferSize(
    cusparseHandle_t handle, cusparseOperation_t op_a, const void* alpha,
    cusparseConstSpMatDescr_t mat_a, cusparseConstDnVecDescr_t vec_x, cusparseDnVecDescr_t vec_y,
    cudaDataType compute, cusparseSpSVAlg_t alg, cusparseSpSVDescr_t descr, size_t* buffer_size) {
  (void)alpha, (void)alg;
  if (buffer_size == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  const cusparseStatus_t s = detail::spsv(handle, op_a, mat_a, vec_x, vec_y, compute, descr, "spsv",
                                          false, "cusparseSpSV_bufferSize");
  if (s == CUSPARSE_STATUS_SUCCESS) *buffer_size = 0;
  return s;
}

PT_EXPORT cusparseStatus_t cusparseSpSV_analysis(cusparseHandle_t handle, cusparseOperation_t op_a,
                                                 const void* alpha, cusparseConstSpMatDescr_t mat_a,
                                                 cusparseConstDnVecDescr_t vec_x,
                                                 cusparseDnVecDescr_t vec_y, cudaDataType compute,
                                                 cusparseSpSVAlg_t alg, cusparseSpSVDescr_t descr,
                                                 void* buffer) {
  (void)alpha, (void)alg, (void)buffer;
  return detail::spsv(handle, op_a, mat_a, vec_x, vec_y, compute, descr, "spsv_analysis", true,
                      "cusparseSpSV_analysis");
}

PT_EXPORT cusparseStatus_t cusparseSpSV_solve(cusparseHandle_t handle, cusparseOperation_t op_a,
                                              const void* alpha, cusparseConstSpMatDescr_t mat_a,
                                              cusparseConstDnVecDescr_t vec_x,
                                              cusparseDnVecDescr_t vec_y, cudaDataType compute,
                                              cusparseSpSVAlg_t alg, cusparseSpSVDescr_t descr) {
  (void)alg;
  if (alpha == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  return detail::spsv(handle, op_a, mat_a, vec_x, vec_y, compute, descr, "spsv_solve", true,
                      "cusparseSpSV_solve");
}

PT_EXPORT cusparseStatus_t cusparseSpSM_createDescr(cusparseSpSMDescr_t* descr) {
  return detail::create(sparse().op_descrs, descr, detail::OpDescr{}, "cusparseSpSM_createDescr");
}

PT_EXPORT cusparseStatus_t cusparseSpSM_destroyDescr(cusparseSpSMDescr_t descr) {
  return detail::destroy<detail::OpDescr>(sparse().op_descrs, descr, "cusparseSpSM_destroyDescr");
}

namespace {
// SpSM's phases: the shape checks of SpMM (square A), the analysis state of SpSV.
cusparseStatus_t spsm(cusparseHandle_t handle, cusparseOperation_t op_a, cusparseOperation_t op_b,
                      const void* mat_a, const void* mat_b, const void* mat_c, cudaDataType compute,
                      const void* descr, int phase, const char* api) {
  const std::int64_t start = powertrain::emu::now_ns();
  auto* d = detail::need<detail::OpDescr>(sparse().op_descrs, descr, "spsmDescr", api);
  if (d == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  const auto* a = detail::need<detail::SpMat>(sparse().matrices_sparse, mat_a, "matA", api);
  if (a != nullptr && detail::element_rows(*a) != detail::element_cols(*a)) {
    return detail::bad(api, "a triangular solve needs a square matrix");
  }
  // 0: buffer size, 1: analysis, 2: solve.
  const cusparseStatus_t checked =
      detail::spmm(handle, op_a, op_b, mat_a, mat_b, mat_c, compute, false, "spsm", api);
  if (checked != CUSPARSE_STATUS_SUCCESS || phase == 0) return checked;
  {
    std::lock_guard<std::mutex> lock(sparse().mutex);
    if (phase == 1) {
      d->analysed = true;
    } else if (!d->analysed) {
      return detail::bad(api, "the SpSM descriptor has not been through cusparseSpSM_analysis");
    }
  }
  if (phase == 2) {
    return detail::spmm(handle, op_a, op_b, mat_a, mat_b, mat_c, compute, true, "spsm_solve", api);
  }
  const detail::SparseHandle* h = detail::live_handle(handle, api);
  if (h == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  detail::SparseOp op = detail::op_on(api, "spsm_analysis", *a, compute);
  op.op_a = detail::op_text(op_a);
  op.bytes = detail::index_array_bytes(*a);
  return detail::run(*h, op, start);
}
}  // namespace

PT_EXPORT cusparseStatus_t cusparseSpSM_bufferSize(
    cusparseHandle_t handle, cusparseOperation_t op_a, cusparseOperation_t op_b, const void* alpha,
    cusparseConstSpMatDescr_t mat_a, cusparseConstDnMatDescr_t mat_b, cusparseDnMatDescr_t mat_c,
    cudaDataType compute, cusparseSpSMAlg_t alg, cusparseSpSMDescr_t descr, size_t* buffer_size) {
  (void)alpha, (void)alg;
  if (buffer_size == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  const cusparseStatus_t s =
      spsm(handle, op_a, op_b, mat_a, mat_b, mat_c, compute, descr, 0, "cusparseSpSM_bufferSize");
  if (s == CUSPARSE_STATUS_SUCCESS) *buffer_size = 0;
  return s;
}

PT_EXPORT cusparseStatus_t cusparseSpSM_analysis(
    cusparseHandle_t handle, cusparseOperation_t op_a, cusparseOperation_t op_b, const void* alpha,
    cusparseConstSpMatDescr_t mat_a, cusparseConstDnMatDescr_t mat_b, cusparseDnMatDescr_t mat_c,
    cudaDataType compute, cusparseSpSMAlg_t alg, cusparseSpSMDescr_t descr, void* buffer) {
  (void)alpha, (void)alg, (void)buffer;
  return spsm(handle, op_a, op_b, mat_a, mat_b, mat_c, compute, descr, 1, "cusparseSpSM_analysis");
}

PT_EXPORT cusparseStatus_t cusparseSpSM_solve(cusparseHandle_t handle, cusparseOperation_t op_a,
                                              cusparseOperation_t op_b, const void* alpha,
                                              cusparseConstSpMatDescr_t mat_a,
                                              cusparseConstDnMatDescr_t mat_b,
                                              cusparseDnMatDescr_t mat_c, cudaDataType compute,
                                              cusparseSpSMAlg_t alg, cusparseSpSMDescr_t descr) {
  (void)alg;
  if (alpha == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  return spsm(handle, op_a, op_b, mat_a, mat_b, mat_c, compute, descr, 2, "cusparseSpSM_solve");
}

// ---- SpGEMM ------------------------------------------------------------------------------------

PT_EXPORT cusparseStatus_t cusparseSpGEMM_createDescr(cusparseSpGEMMDescr_t* descr) {
  return detail::create(sparse().op_descrs, descr, detail::OpDescr{}, "cusparseSpGEMM_createDescr");
}

PT_EXPORT cusparseStatus_t cusparseSpGEMM_destroyDescr(cusparseSpGEMMDescr_t descr) {
  return detail::destroy<detail::OpDescr>(sparse().op_descrs, descr, "cusparseSpGEMM_destroyDescr");
}

namespace {

// C = A·B's structure from backed CSR arrays (row by row with a marker per column of C):
// products, C's row offsets and column indices (sorted within each row).
void spgemm_structure(const detail::SpMat& a, const detail::SpMat& b, detail::OpDescr* d) {
  const std::int64_t m = a.rows, n = b.cols;
  std::vector<std::int64_t> marker(static_cast<std::size_t>(n), -1);
  d->products = 0;
  d->c_offsets.assign(static_cast<std::size_t>(m + 1), 0);
  d->c_columns.clear();
  const std::int64_t base_a = a.base == CUSPARSE_INDEX_BASE_ONE ? 1 : 0;
  const std::int64_t base_b = b.base == CUSPARSE_INDEX_BASE_ONE ? 1 : 0;
  for (std::int64_t i = 0; i < m; ++i) {
    const std::size_t row_start = d->c_columns.size();
    const std::int64_t a0 = detail::read_index(a.offsets, a.offset_bytes, i) - base_a;
    const std::int64_t a1 = detail::read_index(a.offsets, a.offset_bytes, i + 1) - base_a;
    for (std::int64_t p = std::max<std::int64_t>(a0, 0); p < std::min(a1, a.nnz); ++p) {
      const std::int64_t k = detail::read_index(a.columns, a.index_bytes, p) - base_a;
      if (k < 0 || k >= b.rows) continue;  // out of range: the GPU would read garbage
      const std::int64_t b0 = detail::read_index(b.offsets, b.offset_bytes, k) - base_b;
      const std::int64_t b1 = detail::read_index(b.offsets, b.offset_bytes, k + 1) - base_b;
      for (std::int64_t q = std::max<std::int64_t>(b0, 0); q < std::min(b1, b.nnz); ++q) {
        const std::int64_t j = detail::read_index(b.columns, b.index_bytes, q) - base_b;
        if (j < 0 || j >= n) continue;
        ++d->products;
        if (marker[static_cast<std::size_t>(j)] != i) {
          marker[static_cast<std::size_t>(j)] = i;
          d->c_columns.push_back(j);
        }
      }
    }
    std::sort(d->c_columns.begin() + static_cast<std::ptrdiff_t>(row_start), d->c_columns.end());
    d->c_offsets[static_cast<std::size_t>(i + 1)] = static_cast<std::int64_t>(d->c_columns.size());
  }
  d->c_nnz = static_cast<std::int64_t>(d->c_columns.size());
}

bool csr_backed(const detail::SpMat& a) {
  return a.format == CUSPARSE_FORMAT_CSR &&
         detail::backed(a.offsets, (a.rows + 1) * a.offset_bytes) &&
         detail::backed(a.columns, a.nnz * a.index_bytes);
}

// The operands of an SpGEMM call, each looked up and checked (CSR, no transposition, shapes that
// agree), or the status to return.
struct SpgemmOperands {
  const detail::SparseHandle* h = nullptr;
  const detail::SpMat *a = nullptr, *b = nullptr;
  detail::SpMat* c = nullptr;
  detail::OpDescr* d = nullptr;
  std::int64_t k = 0;
};
cusparseStatus_t spgemm_operands(cusparseHandle_t handle, cusparseOperation_t op_a,
                                 cusparseOperation_t op_b, const void* mat_a, const void* mat_b,
                                 const void* mat_c, const void* descr, const char* api,
                                 SpgemmOperands* o) {
  o->h = detail::live_handle(handle, api);
  if (o->h == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  o->a = detail::need<detail::SpMat>(sparse().matrices_sparse, mat_a, "matA", api);
  o->b = detail::need<detail::SpMat>(sparse().matrices_sparse, mat_b, "matB", api);
  o->c = detail::need<detail::SpMat>(sparse().matrices_sparse, mat_c, "matC", api);
  o->d = detail::need<detail::OpDescr>(sparse().op_descrs, descr, "spgemmDescr", api);
  if (o->a == nullptr || o->b == nullptr || o->c == nullptr || o->d == nullptr) {
    return CUSPARSE_STATUS_INVALID_VALUE;
  }
  if (o->a->format != CUSPARSE_FORMAT_CSR || o->b->format != CUSPARSE_FORMAT_CSR ||
      o->c->format != CUSPARSE_FORMAT_CSR || op_a != CUSPARSE_OPERATION_NON_TRANSPOSE ||
      op_b != CUSPARSE_OPERATION_NON_TRANSPOSE) {
    return detail::bad(api, "SpGEMM takes CSR matrices without transposition (as cuSPARSE)");
  }
  if (!detail::product_shape(api, o->a->rows, o->a->cols, op_a, o->b->rows, o->b->cols, op_b,
                             o->c->rows, o->c->cols, &o->k)) {
    return CUSPARSE_STATUS_INVALID_VALUE;
  }
  return CUSPARSE_STATUS_SUCCESS;
}

// phase 0: work estimation, 1: compute (SpGEMMreuse: the nnz, structure only), 2: copy, 3: the
// SpGEMMreuse numeric compute (values only, the structure kept from phases 0-2).
cusparseStatus_t spgemm(cusparseHandle_t handle, cusparseOperation_t op_a, cusparseOperation_t op_b,
                        const void* mat_a, const void* mat_b, void* mat_c, cudaDataType compute,
                        const void* descr, int phase, size_t* buffer_size, const void* buffer,
                        const char* api, bool reuse = false) {
  const std::int64_t start = powertrain::emu::now_ns();
  SpgemmOperands o;
  if (const cusparseStatus_t status =
          spgemm_operands(handle, op_a, op_b, mat_a, mat_b, mat_c, descr, api, &o);
      status != CUSPARSE_STATUS_SUCCESS) {
    return status;
  }
  const detail::SparseHandle* h = o.h;
  const detail::SpMat *a = o.a, *b = o.b;
  detail::SpMat* c = o.c;
  detail::OpDescr* d = o.d;
  const std::int64_t k = o.k;
  if (phase < 2 || (reuse && phase == 2)) {
    if (buffer_size == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
    if (buffer == nullptr) {  // the size query
      *buffer_size = static_cast<size_t>(8 * (a->rows + 1));
      return CUSPARSE_STATUS_SUCCESS;
    }
  }
  static const char* const kPhases[] = {"spgemm_work_estimation", "spgemm_compute", "spgemm_copy",
                                        "spgemm_reuse_compute"};
  detail::SparseOp op =
      detail::op_on(api, reuse && phase == 1 ? "spgemm_reuse_nnz" : kPhases[phase], *a, compute);
  op.op_a = detail::op_text(op_a);
  {
    std::lock_guard<std::mutex> lock(sparse().mutex);
    if (phase == 0) {
      if (csr_backed(*a) && csr_backed(*b)) {
        spgemm_structure(*a, *b, d);
      } else {
        d->c_offsets.clear(), d->c_columns.clear();
        d->products = k > 0 ? detail::mul(a->nnz, b->nnz) / k : 0;
        d->c_nnz = std::min(detail::mul(c->rows, c->cols), d->products);
      }
      d->estimated = true;
      op.bytes = detail::add(detail::index_array_bytes(*a), detail::index_array_bytes(*b));
    } else if (!d->estimated || (phase >= 2 && !d->computed)) {
      powertrain::emu::report_misuse(api, phase == 1
                                              ? "the work estimation has not run"
                                              : (reuse ? "cusparseSpGEMMreuse_nnz has not run"
                                                       : "cusparseSpGEMM_compute has not run"));
      return CUSPARSE_STATUS_INVALID_VALUE;
    } else if (phase == 1) {
      d->computed = true;
      c->nnz = d->c_nnz;  // what cusparseSpMatGetSize(matC) now reports
      if (reuse) {        // the structure only: the index arrays read, C's offsets written
        op.bytes =
            detail::add(detail::add(detail::index_array_bytes(*a), detail::index_array_bytes(*b)),
                        (c->rows + 1) * c->offset_bytes);
      } else {
        op.flops = detail::mul(2, d->products);
        op.bytes = detail::add(detail::add(detail::matrix_bytes(*a), detail::matrix_bytes(*b)),
                               detail::matrix_bytes(*c));
      }
    } else if (phase == 3) {
      op.flops = detail::mul(2, d->products);
      op.bytes = detail::add(detail::add(detail::matrix_bytes(*a), detail::matrix_bytes(*b)),
                             detail::matrix_bytes(*c));
    } else {
      op.bytes = detail::mul(2, detail::matrix_bytes(*c));
      if (!d->c_offsets.empty() && detail::backed(c->offsets, (c->rows + 1) * c->offset_bytes) &&
          detail::backed(c->columns, c->nnz * c->index_bytes)) {
        const std::int64_t base = c->base == CUSPARSE_INDEX_BASE_ONE ? 1 : 0;
        for (std::int64_t i = 0; i <= c->rows; ++i) {
          detail::write_index(c->offsets, c->offset_bytes, i,
                              d->c_offsets[static_cast<std::size_t>(i)] + base);
        }
        for (std::int64_t p = 0; p < d->c_nnz; ++p) {
          detail::write_index(c->columns, c->index_bytes, p,
                              d->c_columns[static_cast<std::size_t>(p)] + base);
        }
      }
    }
  }
  if (phase >= 2 && !detail::device_array(c->offsets, (c->rows + 1) * c->offset_bytes)) {
    return detail::bad(api, "matC's arrays are not set (cusparseCsrSetPointers)");
  }
  return detail::run(*h, op, start);
}
}  // namespace

namespace {
// C's values of C = α·A·B over the structure C's arrays hold (written by _copy), computed where
// A's, B's and C's arrays are backed and the products are at most 2·10^9 (values the GPU would
// compute; programs such as the spgemm samples check them).
template <typename T>
void spgemm_values(const detail::SparseHandle& h, const detail::SpMat& a, const detail::SpMat& b,
                   const detail::SpMat& c, const void* alpha_p) {
  T alpha{};
  if (!detail::read_scalar(h, static_cast<const T*>(alpha_p), &alpha)) return;
  const std::int64_t base_b = b.base == CUSPARSE_INDEX_BASE_ONE ? 1 : 0;
  const std::int64_t base_c = c.base == CUSPARSE_INDEX_BASE_ONE ? 1 : 0;
  const auto* av = static_cast<const T*>(a.values);
  const auto* bv = static_cast<const T*>(b.values);
  auto* cv = static_cast<T*>(c.values);
  std::vector<std::int64_t> position(static_cast<std::size_t>(c.cols), -1);
  std::vector<std::pair<std::int64_t, std::int64_t>> row_entries;  // (value index, column)
  // Rows of A in order: for_each_entry visits CSR row by row. Only the columns a row set are
  // reset, so the work is O(nnz(C) + products), never rows x cols.
  std::int64_t row = -1;
  auto finish_row = [&] {
    for (const auto& [q, j] : row_entries) {
      cv[q] *= alpha;
      position[static_cast<std::size_t>(j)] = -1;
    }
    row_entries.clear();
  };
  auto start_row = [&](std::int64_t i) {
    const std::int64_t c0 = detail::read_index(c.offsets, c.offset_bytes, i) - base_c;
    const std::int64_t c1 = detail::read_index(c.offsets, c.offset_bytes, i + 1) - base_c;
    for (std::int64_t q = std::max<std::int64_t>(c0, 0); q < std::min(c1, c.nnz); ++q) {
      const std::int64_t j = detail::read_index(c.columns, c.index_bytes, q) - base_c;
      if (j < 0 || j >= c.cols) continue;
      position[static_cast<std::size_t>(j)] = q;
      cv[q] = T{};
      row_entries.emplace_back(q, j);
    }
  };
  for (std::int64_t i = 0; i < c.rows; ++i) {  // rows without entries in A still zero C's row
    start_row(i);
    finish_row();
  }
  detail::for_each_entry(a, [&](std::int64_t i, std::int64_t k, std::int64_t p) {
    if (i != row) {
      if (row >= 0) finish_row();
      row = i;
      start_row(i);
    }
    const std::int64_t b0 = detail::read_index(b.offsets, b.offset_bytes, k) - base_b;
    const std::int64_t b1 = detail::read_index(b.offsets, b.offset_bytes, k + 1) - base_b;
    for (std::int64_t q = std::max<std::int64_t>(b0, 0); q < std::min(b1, b.nnz); ++q) {
      const std::int64_t j = detail::read_index(b.columns, b.index_bytes, q) - base_b;
      if (j < 0 || j >= c.cols) continue;
      const std::int64_t at = position[static_cast<std::size_t>(j)];
      if (at >= 0) cv[at] += av[p] * bv[q];
    }
  });
  if (row >= 0) finish_row();
}

void compute_spgemm(const detail::SparseHandle& h, const void* mat_a, const void* mat_b,
                    const void* mat_c, const void* descr, const void* alpha, cudaDataType compute) {
  const detail::SpMat *a = nullptr, *b = nullptr, *c = nullptr;
  std::int64_t products = 0;
  {
    std::lock_guard<std::mutex> lock(sparse().mutex);
    a = static_cast<const detail::SpMat*>(mat_a);
    b = static_cast<const detail::SpMat*>(mat_b);
    c = static_cast<const detail::SpMat*>(mat_c);
    if (sparse().matrices_sparse.count(mat_a) == 0 || sparse().matrices_sparse.count(mat_b) == 0 ||
        sparse().matrices_sparse.count(mat_c) == 0 || sparse().op_descrs.count(descr) == 0) {
      return;
    }
    products = static_cast<const detail::OpDescr*>(descr)->products;
  }
  if (a->value_type != compute || b->value_type != compute || c->value_type != compute) return;
  const int bytes = detail::value_bytes(compute);
  if (a->format != CUSPARSE_FORMAT_CSR || b->format != CUSPARSE_FORMAT_CSR ||
      c->format != CUSPARSE_FORMAT_CSR || !detail::computable(*a, bytes) ||
      !detail::computable(*b, bytes) || !detail::computable(*c, bytes) ||
      static_cast<double>(products) > detail::kComputeOps ||
      static_cast<double>(c->cols) * 8.0 > detail::kComputeScratchBytes) {
    return;
  }
  const powertrain::emu::HostComputeScope host_compute;  // not the program's time
  detail::by_value_type(compute,
                        [&](auto zero) { spgemm_values<decltype(zero)>(h, *a, *b, *c, alpha); });
}
}  // namespace

PT_EXPORT cusparseStatus_t cusparseSpGEMM_workEstimation(
    cusparseHandle_t handle, cusparseOperation_t op_a, cusparseOperation_t op_b, const void* alpha,
    cusparseConstSpMatDescr_t mat_a, cusparseConstSpMatDescr_t mat_b, const void* beta,
    cusparseSpMatDescr_t mat_c, cudaDataType compute, cusparseSpGEMMAlg_t alg,
    cusparseSpGEMMDescr_t descr, size_t* buffer_size, void* buffer) {
  (void)alpha, (void)beta, (void)alg;
  return spgemm(handle, op_a, op_b, mat_a, mat_b, mat_c, compute, descr, 0, buffer_size, buffer,
                "cusparseSpGEMM_workEstimation");
}

PT_EXPORT cusparseStatus_t cusparseSpGEMM_compute(
    cusparseHandle_t handle, cusparseOperation_t op_a, cusparseOperation_t op_b, const void* alpha,
    cusparseConstSpMatDescr_t mat_a, cusparseConstSpMatDescr_t mat_b, const void* beta,
    cusparseSpMatDescr_t mat_c, cudaDataType compute, cusparseSpGEMMAlg_t alg,
    cusparseSpGEMMDescr_t descr, size_t* buffer_size, void* buffer) {
  (void)alpha, (void)beta, (void)alg;
  return spgemm(handle, op_a, op_b, mat_a, mat_b, mat_c, compute, descr, 1, buffer_size, buffer,
                "cusparseSpGEMM_compute");
}

PT_EXPORT cusparseStatus_t cusparseSpGEMM_copy(cusparseHandle_t handle, cusparseOperation_t op_a,
                                               cusparseOperation_t op_b, const void* alpha,
                                               cusparseConstSpMatDescr_t mat_a,
                                               cusparseConstSpMatDescr_t mat_b, const void* beta,
                                               cusparseSpMatDescr_t mat_c, cudaDataType compute,
                                               cusparseSpGEMMAlg_t alg,
                                               cusparseSpGEMMDescr_t descr) {
  (void)beta, (void)alg;
  const cusparseStatus_t status = spgemm(handle, op_a, op_b, mat_a, mat_b, mat_c, compute, descr, 2,
                                         nullptr, nullptr, "cusparseSpGEMM_copy");
  const auto* h = status == CUSPARSE_STATUS_SUCCESS
                      ? detail::live<detail::SparseHandle>(sparse().handles, handle)
                      : nullptr;
  if (h != nullptr && !detail::capturing_stream(h->stream)) {
    compute_spgemm(*h, mat_a, mat_b, mat_c, descr, alpha, compute);
  }
  return status;
}

// The memory-saving algorithms (ALG2, ALG3) between work estimation and compute: with no buffer
// the size of the estimation's own buffer (8 bytes per row of A, as work estimation's); with one,
// the estimation runs (A's and B's index arrays read) and reports the buffer compute needs: 16
// bytes per estimated nonzero of C — ALG3 only chunk_fraction of them, its chunk — plus 8 per row
// (a model, not cuSPARSE's figure).
PT_EXPORT cusparseStatus_t cusparseSpGEMM_estimateMemory(
    cusparseHandle_t handle, cusparseOperation_t op_a, cusparseOperation_t op_b, const void* alpha,
    cusparseConstSpMatDescr_t mat_a, cusparseConstSpMatDescr_t mat_b, const void* beta,
    cusparseSpMatDescr_t mat_c, cudaDataType compute, cusparseSpGEMMAlg_t alg,
    cusparseSpGEMMDescr_t descr, float chunk_fraction, size_t* buffer_size3, void* buffer3,
    size_t* buffer_size2) {
  (void)alpha, (void)beta;
  const char* api = "cusparseSpGEMM_estimateMemory";
  const std::int64_t start = powertrain::emu::now_ns();
  SpgemmOperands o;
  if (const cusparseStatus_t status =
          spgemm_operands(handle, op_a, op_b, mat_a, mat_b, mat_c, descr, api, &o);
      status != CUSPARSE_STATUS_SUCCESS) {
    return status;
  }
  const detail::SparseHandle* h = o.h;
  const detail::SpMat *a = o.a, *b = o.b;
  const detail::OpDescr* d = o.d;
  if (alg != CUSPARSE_SPGEMM_ALG2 && alg != CUSPARSE_SPGEMM_ALG3) {
    return detail::bad(api, "estimateMemory belongs to CUSPARSE_SPGEMM_ALG2 and ALG3, not " +
                                std::to_string(static_cast<int>(alg)));
  }
  if (alg == CUSPARSE_SPGEMM_ALG3 && !(chunk_fraction > 0.0f && chunk_fraction <= 1.0f)) {
    return detail::bad(api,
                       "chunk_fraction " + std::to_string(chunk_fraction) + " is not in (0, 1]");
  }
  if (buffer_size3 == nullptr) return detail::bad(api, "bufferSize3 is NULL");
  if (buffer3 == nullptr) {
    *buffer_size3 = static_cast<size_t>(8 * (a->rows + 1));
    return CUSPARSE_STATUS_SUCCESS;
  }
  if (buffer_size2 == nullptr) return detail::bad(api, "bufferSize2 is NULL");
  if (!detail::device_array(buffer3, static_cast<std::int64_t>(*buffer_size3))) {
    return detail::bad(api, "externalBuffer3 " + detail::pointer_text(buffer3) +
                                " is not device memory of bufferSize3 bytes");
  }
  std::int64_t c_nnz = 0;
  {
    std::lock_guard<std::mutex> lock(sparse().mutex);
    if (!d->estimated) {
      powertrain::emu::report_misuse(api, "the work estimation has not run");
      return CUSPARSE_STATUS_INVALID_VALUE;
    }
    c_nnz = d->c_nnz;
  }
  const double share = alg == CUSPARSE_SPGEMM_ALG3 ? static_cast<double>(chunk_fraction) : 1.0;
  *buffer_size2 = static_cast<size_t>(std::ceil(share * 16.0 * static_cast<double>(c_nnz))) +
                  static_cast<size_t>(8 * (a->rows + 1));
  detail::SparseOp op = detail::op_on(api, "spgemm_estimate_memory", *a, compute);
  op.op_a = detail::op_text(op_a);
  op.bytes = detail::add(detail::index_array_bytes(*a), detail::index_array_bytes(*b));
  return detail::run(*h, op, start);
}

// SpGEMMreuse: the structure once (work estimation, nnz, copy), then the values any number of
// times (compute).
PT_EXPORT cusparseStatus_t cusparseSpGEMMreuse_workEstimation(
    cusparseHandle_t handle, cusparseOperation_t op_a, cusparseOperation_t op_b,
    cusparseConstSpMatDescr_t mat_a, cusparseConstSpMatDescr_t mat_b, cusparseSpMatDescr_t mat_c,
    cusparseSpGEMMAlg_t alg, cusparseSpGEMMDescr_t descr, size_t* buffer_size1, void* buffer1) {
  (void)alg;
  return spgemm(handle, op_a, op_b, mat_a, mat_b, mat_c, CUDA_R_32F, descr, 0, buffer_size1,
                buffer1, "cusparseSpGEMMreuse_workEstimation", true);
}

PT_EXPORT cusparseStatus_t cusparseSpGEMMreuse_nnz(
    cusparseHandle_t handle, cusparseOperation_t op_a, cusparseOperation_t op_b,
    cusparseConstSpMatDescr_t mat_a, cusparseConstSpMatDescr_t mat_b, cusparseSpMatDescr_t mat_c,
    cusparseSpGEMMAlg_t alg, cusparseSpGEMMDescr_t descr, size_t* buffer_size2, void* buffer2,
    size_t* buffer_size3, void* buffer3, size_t* buffer_size4, void* buffer4) {
  (void)alg, (void)buffer3, (void)buffer4;
  const cusparseStatus_t s = spgemm(handle, op_a, op_b, mat_a, mat_b, mat_c, CUDA_R_32F, descr, 1,
                                    buffer_size2, buffer2, "cusparseSpGEMMreuse_nnz", true);
  if (s == CUSPARSE_STATUS_SUCCESS && buffer2 == nullptr) {  // the query sizes all three
    if (buffer_size3 == nullptr || buffer_size4 == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
    *buffer_size3 = *buffer_size4 = *buffer_size2;
  }
  return s;
}

PT_EXPORT cusparseStatus_t cusparseSpGEMMreuse_copy(
    cusparseHandle_t handle, cusparseOperation_t op_a, cusparseOperation_t op_b,
    cusparseConstSpMatDescr_t mat_a, cusparseConstSpMatDescr_t mat_b, cusparseSpMatDescr_t mat_c,
    cusparseSpGEMMAlg_t alg, cusparseSpGEMMDescr_t descr, size_t* buffer_size5, void* buffer5) {
  (void)alg;
  return spgemm(handle, op_a, op_b, mat_a, mat_b, mat_c, CUDA_R_32F, descr, 2, buffer_size5,
                buffer5, "cusparseSpGEMMreuse_copy", true);
}

PT_EXPORT cusparseStatus_t cusparseSpGEMMreuse_compute(
    cusparseHandle_t handle, cusparseOperation_t op_a, cusparseOperation_t op_b, const void* alpha,
    cusparseConstSpMatDescr_t mat_a, cusparseConstSpMatDescr_t mat_b, const void* beta,
    cusparseSpMatDescr_t mat_c, cudaDataType compute, cusparseSpGEMMAlg_t alg,
    cusparseSpGEMMDescr_t descr) {
  (void)beta, (void)alg;
  const cusparseStatus_t status = spgemm(handle, op_a, op_b, mat_a, mat_b, mat_c, compute, descr, 3,
                                         nullptr, nullptr, "cusparseSpGEMMreuse_compute", true);
  const auto* h = status == CUSPARSE_STATUS_SUCCESS
                      ? detail::live<detail::SparseHandle>(sparse().handles, handle)
                      : nullptr;
  if (h != nullptr && !detail::capturing_stream(h->stream)) {
    compute_spgemm(*h, mat_a, mat_b, mat_c, descr, alpha, compute);
  }
  return status;
}

// ---- SDDMM -------------------------------------------------------------------------------------

namespace {
cusparseStatus_t sddmm(cusparseHandle_t handle, cusparseOperation_t op_a, cusparseOperation_t op_b,
                       const void* mat_a, const void* mat_b, const void* mat_c,
                       cudaDataType compute, bool record, const char* api) {
  const std::int64_t start = powertrain::emu::now_ns();
  const detail::SparseHandle* h = detail::live_handle(handle, api);
  if (h == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  const auto* a = detail::need<detail::DnMat>(sparse().matrices, mat_a, "matA", api);
  const auto* b = detail::need<detail::DnMat>(sparse().matrices, mat_b, "matB", api);
  const auto* c = detail::need<detail::SpMat>(sparse().matrices_sparse, mat_c, "matC", api);
  if (a == nullptr || b == nullptr || c == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  std::int64_t k = 0;
  if (!detail::product_shape(api, a->rows, a->cols, op_a, b->rows, b->cols, op_b,
                             detail::element_rows(*c), detail::element_cols(*c), &k)) {
    return CUSPARSE_STATUS_INVALID_VALUE;
  }
  if (!record) return CUSPARSE_STATUS_SUCCESS;
  detail::SparseOp op = detail::op_on(api, "sddmm", *c, compute);
  op.n = k;
  op.flops = detail::mul(detail::mul(2, detail::stored_values(*c)), k);
  op.bytes = detail::add(
      detail::add(detail::dense_bytes(*a), detail::dense_bytes(*b)),
      detail::add(detail::matrix_bytes(*c),
                  detail::mul(detail::stored_values(*c), detail::value_bytes(c->value_type))));
  return detail::run(*h, op, start);
}
}  // namespace

PT_EXPORT cusparseStatus_t cusparseSDDMM_bufferSize(
    cusparseHandle_t handle, cusparseOperation_t op_a, cusparseOperation_t op_b, const void* alpha,
    cusparseConstDnMatDescr_t mat_a, cusparseConstDnMatDescr_t mat_b, const void* beta,
    cusparseSpMatDescr_t mat_c, cudaDataType compute, cusparseSDDMMAlg_t alg, size_t* buffer_size) {
  (void)alpha, (void)beta, (void)alg;
  if (buffer_size == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  const cusparseStatus_t s =
      sddmm(handle, op_a, op_b, mat_a, mat_b, mat_c, compute, false, "cusparseSDDMM_bufferSize");
  if (s == CUSPARSE_STATUS_SUCCESS) *buffer_size = 0;
  return s;
}

PT_EXPORT cusparseStatus_t cusparseSDDMM_preprocess(
    cusparseHandle_t handle, cusparseOperation_t op_a, cusparseOperation_t op_b, const void* alpha,
    cusparseConstDnMatDescr_t mat_a, cusparseConstDnMatDescr_t mat_b, const void* beta,
    cusparseSpMatDescr_t mat_c, cudaDataType compute, cusparseSDDMMAlg_t alg, void* buffer) {
  (void)alpha, (void)beta, (void)alg, (void)buffer;
  return sddmm(handle, op_a, op_b, mat_a, mat_b, mat_c, compute, false, "cusparseSDDMM_preprocess");
}

PT_EXPORT cusparseStatus_t cusparseSDDMM(cusparseHandle_t handle, cusparseOperation_t op_a,
                                         cusparseOperation_t op_b, const void* alpha,
                                         cusparseConstDnMatDescr_t mat_a,
                                         cusparseConstDnMatDescr_t mat_b, const void* beta,
                                         cusparseSpMatDescr_t mat_c, cudaDataType compute,
                                         cusparseSDDMMAlg_t alg, void* buffer) {
  (void)alg, (void)buffer;
  if (alpha == nullptr || beta == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  return sddmm(handle, op_a, op_b, mat_a, mat_b, mat_c, compute, true, "cusparseSDDMM");
}

// ---- sparse vectors: Axpby, Gather, Scatter, SpVV
// ------------------------------------------------

namespace {

// The sparse and dense vector of a level-1 call (same value type, indices within the size).
struct VecPair {
  const detail::SparseHandle* h = nullptr;
  detail::SpVec* x = nullptr;
  detail::DnVec* y = nullptr;
};
cusparseStatus_t vec_pair(cusparseHandle_t handle, const void* sparse_vec, const void* dense_vec,
                          const char* api, VecPair* out) {
  out->h = detail::live_handle(handle, api);
  if (out->h == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  out->x = detail::need<detail::SpVec>(sparse().sparse_vectors, sparse_vec, "spVec", api);
  out->y = detail::need<detail::DnVec>(sparse().vectors, dense_vec, "dnVec", api);
  if (out->x == nullptr || out->y == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  if (out->x->size != out->y->size || out->x->value_type != out->y->value_type) {
    return detail::bad(api, "the sparse vector (size " + std::to_string(out->x->size) +
                                ") and the dense vector (size " + std::to_string(out->y->size) +
                                ") differ in size or value type");
  }
  return CUSPARSE_STATUS_SUCCESS;
}

detail::SparseOp vector_op(const char* api, const char* what, const detail::SpVec& x) {
  detail::SparseOp op;
  op.api = api;
  op.what = what;
  op.format = "vector";
  op.rows = x.size;
  op.cols = 1;
  op.nnz = x.nnz;
  op.dtype = op.compute = x.value_type;
  op.bytes = detail::mul(x.nnz, x.index_bytes + 2 * detail::value_bytes(x.value_type));
  return op;
}

// Copies between the sparse vector's values and the dense vector's entries where all arrays are
// backed and the indices in range (gather: dense → sparse; scatter: sparse → dense).
void move_values(const detail::SpVec& x, const detail::DnVec& y, bool gather) {
  const int v = detail::value_bytes(x.value_type);
  if (!detail::backed(x.indices, x.nnz * x.index_bytes) || !detail::backed(x.values, x.nnz * v) ||
      !detail::backed(y.values, y.size * v)) {
    return;
  }
  const std::int64_t base = x.base == CUSPARSE_INDEX_BASE_ONE ? 1 : 0;
  auto* xv = static_cast<unsigned char*>(x.values);
  auto* yv = static_cast<unsigned char*>(y.values);
  for (std::int64_t p = 0; p < x.nnz; ++p) {
    const std::int64_t i = detail::read_index(x.indices, x.index_bytes, p) - base;
    if (i < 0 || i >= y.size) continue;
    if (gather) {
      std::memcpy(xv + p * v, yv + i * v, static_cast<std::size_t>(v));
    } else {
      std::memcpy(yv + i * v, xv + p * v, static_cast<std::size_t>(v));
    }
  }
}

template <typename T>
T sparse_dot(const detail::SpVec& x, const detail::DnVec& y) {
  const std::int64_t base = x.base == CUSPARSE_INDEX_BASE_ONE ? 1 : 0;
  T sum = 0;
  for (std::int64_t p = 0; p < x.nnz; ++p) {
    const std::int64_t i = detail::read_index(x.indices, x.index_bytes, p) - base;
    if (i >= 0 && i < y.size)
      sum += static_cast<const T*>(x.values)[p] * static_cast<const T*>(y.values)[i];
  }
  return sum;
}

}  // namespace

PT_EXPORT cusparseStatus_t cusparseAxpby(cusparseHandle_t handle, const void* alpha,
                                         cusparseConstSpVecDescr_t vec_x, const void* beta,
                                         cusparseDnVecDescr_t vec_y) {
  const char* api = "cusparseAxpby";
  const std::int64_t start = powertrain::emu::now_ns();
  if (alpha == nullptr || beta == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  VecPair v;
  const cusparseStatus_t s = vec_pair(handle, vec_x, vec_y, api, &v);
  if (s != CUSPARSE_STATUS_SUCCESS) return s;
  detail::SparseOp op = vector_op(api, "axpby", *v.x);
  op.flops = detail::add(detail::mul(2, v.x->nnz), v.y->size);
  op.bytes =
      detail::add(detail::mul(v.x->nnz, v.x->index_bytes + detail::value_bytes(v.x->value_type)),
                  detail::mul(2 * v.y->size, detail::value_bytes(v.y->value_type)));
  return detail::run(*v.h, op, start);
}

namespace {
// cusparseGather (dense → sparse) or cusparseScatter (sparse → dense).
cusparseStatus_t gather_or_scatter(cusparseHandle_t handle, const void* vec_x, const void* vec_y,
                                   bool gather, const char* api) {
  const std::int64_t start = powertrain::emu::now_ns();
  VecPair v;
  const cusparseStatus_t s = vec_pair(handle, vec_x, vec_y, api, &v);
  if (s != CUSPARSE_STATUS_SUCCESS) return s;
  move_values(*v.x, *v.y, gather);
  return detail::run(*v.h, vector_op(api, gather ? "gather" : "scatter", *v.x), start);
}
}  // namespace

PT_EXPORT cusparseStatus_t cusparseGather(cusparseHandle_t handle, cusparseConstDnVecDescr_t vec_y,
                                          cusparseSpVecDescr_t vec_x) {
  return gather_or_scatter(handle, vec_x, vec_y, true, "cusparseGather");
}

PT_EXPORT cusparseStatus_t cusparseScatter(cusparseHandle_t handle, cusparseConstSpVecDescr_t vec_x,
                                           cusparseDnVecDescr_t vec_y) {
  return gather_or_scatter(handle, vec_x, vec_y, false, "cusparseScatter");
}

PT_EXPORT cusparseStatus_t cusparseSpVV_bufferSize(cusparseHandle_t handle,
                                                   cusparseOperation_t op_x,
                                                   cusparseConstSpVecDescr_t vec_x,
                                                   cusparseConstDnVecDescr_t vec_y,
                                                   const void* result, cudaDataType compute,
                                                   size_t* buffer_size) {
  (void)op_x, (void)result, (void)compute;
  if (buffer_size == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  VecPair v;
  const cusparseStatus_t s = vec_pair(handle, vec_x, vec_y, "cusparseSpVV_bufferSize", &v);
  if (s == CUSPARSE_STATUS_SUCCESS) *buffer_size = 0;
  return s;
}

// The result is written where it lies (host memory, or backed device memory): the dot product of
// the copied-in data for float/double where the vectors are backed, else 0.
PT_EXPORT cusparseStatus_t cusparseSpVV(cusparseHandle_t handle, cusparseOperation_t op_x,
                                        cusparseConstSpVecDescr_t vec_x,
                                        cusparseConstDnVecDescr_t vec_y, void* result,
                                        cudaDataType compute, void* buffer) {
  (void)op_x, (void)buffer;
  const char* api = "cusparseSpVV";
  const std::int64_t start = powertrain::emu::now_ns();
  if (result == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  VecPair v;
  const cusparseStatus_t s = vec_pair(handle, vec_x, vec_y, api, &v);
  if (s != CUSPARSE_STATUS_SUCCESS) return s;
  const int vb = detail::value_bytes(v.x->value_type);
  const int rb = detail::value_bytes(compute);
  const detail::PointerInfo where = detail::lookup_pointer(result);
  const bool writable = !where.known || where.backed;
  const bool data = detail::backed(v.x->indices, v.x->nnz * v.x->index_bytes) &&
                    detail::backed(v.x->values, v.x->nnz * vb) &&
                    detail::backed(v.y->values, v.y->size * vb);
  if (writable && rb > 0) {
    if (compute == CUDA_R_32F && v.x->value_type == CUDA_R_32F) {
      const float dot = data ? sparse_dot<float>(*v.x, *v.y) : 0.0f;
      std::memcpy(result, &dot, sizeof dot);
    } else if (compute == CUDA_R_64F && v.x->value_type == CUDA_R_64F) {
      const double dot = data ? sparse_dot<double>(*v.x, *v.y) : 0.0;
      std::memcpy(result, &dot, sizeof dot);
    } else {
      std::memset(result, 0, static_cast<std::size_t>(rb));
    }
  }
  detail::SparseOp op = vector_op(api, "spvv", *v.x);
  op.compute = compute;
  op.flops = detail::mul(2, v.x->nnz);
  return detail::run(*v.h, op, start);
}

// ---- conversions -------------------------------------------------------------------------------

namespace {
// phase 0: buffer size, 1: analysis (counts B's nnz), 2: convert.
cusparseStatus_t dense_to_sparse(cusparseHandle_t handle, const void* mat_a, void* mat_b, int phase,
                                 const char* api) {
  const std::int64_t start = powertrain::emu::now_ns();
  const detail::SparseHandle* h = detail::live_handle(handle, api);
  if (h == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  const auto* a = detail::need<detail::DnMat>(sparse().matrices, mat_a, "matA", api);
  auto* b = detail::need<detail::SpMat>(sparse().matrices_sparse, mat_b, "matB", api);
  if (a == nullptr || b == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  if (detail::element_rows(*b) != a->rows || detail::element_cols(*b) != a->cols ||
      b->value_type != a->value_type) {
    return detail::bad(api, "the dense " + std::to_string(a->rows) + " x " +
                                std::to_string(a->cols) + " and the sparse " +
                                std::to_string(detail::element_rows(*b)) + " x " +
                                std::to_string(detail::element_cols(*b)) +
                                " matrices differ in shape or value type");
  }
  if (phase == 0) return CUSPARSE_STATUS_SUCCESS;
  detail::SparseOp op = detail::op_on(
      api, phase == 1 ? "dense_to_sparse_analysis" : "dense_to_sparse_convert", *b, a->value_type);
  op.bytes = detail::dense_bytes(*a);
  if (phase == 1) {
    // B's nnz: counted on backed data (bytes not all zero), else every entry (an upper bound).
    const int v = detail::value_bytes(a->value_type);
    const std::int64_t outer = a->order == CUSPARSE_ORDER_COL ? a->cols : a->rows;
    const std::int64_t inner = a->order == CUSPARSE_ORDER_COL ? a->rows : a->cols;
    std::int64_t count = detail::mul(a->rows, a->cols);
    if (detail::backed(a->values, detail::mul(detail::mul(a->ld, outer), v))) {
      count = 0;
      const auto* bytes = static_cast<const unsigned char*>(a->values);
      for (std::int64_t o = 0; o < outer; ++o) {
        for (std::int64_t i = 0; i < inner; ++i) {
          const unsigned char* e = bytes + (o * a->ld + i) * v;
          count += std::any_of(e, e + v, [](unsigned char c) { return c != 0; }) ? 1 : 0;
        }
      }
    }
    std::lock_guard<std::mutex> lock(sparse().mutex);
    b->nnz = count;
    op.nnz = count;
  } else {
    op.bytes = detail::add(op.bytes, detail::matrix_bytes(*b));
  }
  return detail::run(*h, op, start);
}
}  // namespace

PT_EXPORT cusparseStatus_t cusparseDenseToSparse_bufferSize(cusparseHandle_t handle,
                                                            cusparseConstDnMatDescr_t mat_a,
                                                            cusparseSpMatDescr_t mat_b,
                                                            cusparseDenseToSparseAlg_t alg,
                                                            size_t* buffer_size) {
  (void)alg;
  if (buffer_size == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  const cusparseStatus_t s =
      dense_to_sparse(handle, mat_a, mat_b, 0, "cusparseDenseToSparse_bufferSize");
  if (s == CUSPARSE_STATUS_SUCCESS) *buffer_size = 0;
  return s;
}

PT_EXPORT cusparseStatus_t cusparseDenseToSparse_analysis(cusparseHandle_t handle,
                                                          cusparseConstDnMatDescr_t mat_a,
                                                          cusparseSpMatDescr_t mat_b,
                                                          cusparseDenseToSparseAlg_t alg,
                                                          void* buffer) {
  (void)alg, (void)buffer;
  return dense_to_sparse(handle, mat_a, mat_b, 1, "cusparseDenseToSparse_analysis");
}

PT_EXPORT cusparseStatus_t cusparseDenseToSparse_convert(cusparseHandle_t handle,
                                                         cusparseConstDnMatDescr_t mat_a,
                                                         cusparseSpMatDescr_t mat_b,
                                                         cusparseDenseToSparseAlg_t alg,
                                                         void* buffer) {
  (void)alg, (void)buffer;
  return dense_to_sparse(handle, mat_a, mat_b, 2, "cusparseDenseToSparse_convert");
}

namespace {
cusparseStatus_t sparse_to_dense(cusparseHandle_t handle, const void* mat_a, const void* mat_b,
                                 bool record, const char* api) {
  const std::int64_t start = powertrain::emu::now_ns();
  const detail::SparseHandle* h = detail::live_handle(handle, api);
  if (h == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  const auto* a = detail::need<detail::SpMat>(sparse().matrices_sparse, mat_a, "matA", api);
  const auto* b = detail::need<detail::DnMat>(sparse().matrices, mat_b, "matB", api);
  if (a == nullptr || b == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  if (detail::element_rows(*a) != b->rows || detail::element_cols(*a) != b->cols ||
      b->value_type != a->value_type) {
    return detail::bad(api, "the sparse and dense matrices differ in shape or value type");
  }
  if (!record) return CUSPARSE_STATUS_SUCCESS;
  detail::SparseOp op = detail::op_on(api, "sparse_to_dense", *a, a->value_type);
  op.bytes = detail::add(detail::matrix_bytes(*a), detail::dense_bytes(*b));
  return detail::run(*h, op, start);
}
}  // namespace

PT_EXPORT cusparseStatus_t cusparseSparseToDense_bufferSize(cusparseHandle_t handle,
                                                            cusparseConstSpMatDescr_t mat_a,
                                                            cusparseDnMatDescr_t mat_b,
                                                            cusparseSparseToDenseAlg_t alg,
                                                            size_t* buffer_size) {
  (void)alg;
  if (buffer_size == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  const cusparseStatus_t s =
      sparse_to_dense(handle, mat_a, mat_b, false, "cusparseSparseToDense_bufferSize");
  if (s == CUSPARSE_STATUS_SUCCESS) *buffer_size = 0;
  return s;
}

PT_EXPORT cusparseStatus_t cusparseSparseToDense(cusparseHandle_t handle,
                                                 cusparseConstSpMatDescr_t mat_a,
                                                 cusparseDnMatDescr_t mat_b,
                                                 cusparseSparseToDenseAlg_t alg, void* buffer) {
  (void)alg, (void)buffer;
  return sparse_to_dense(handle, mat_a, mat_b, true, "cusparseSparseToDense");
}

namespace {
// CSR → CSC (a transpose of the structure): checks, and on backed arrays the CSC arrays for real
// (values too for CUSPARSE_ACTION_NUMERIC), sorted by row within each column.
cusparseStatus_t csr2csc(cusparseHandle_t handle, int m, int n, int nnz, const void* csr_val,
                         const int* csr_row_ptr, const int* csr_col_ind, void* csc_val,
                         int* csc_col_ptr, int* csc_row_ind, cudaDataType type,
                         cusparseAction_t action, cusparseIndexBase_t base, bool record,
                         const char* api) {
  const std::int64_t start = powertrain::emu::now_ns();
  const detail::SparseHandle* h = detail::live_handle(handle, api);
  if (h == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  const int v = detail::value_bytes(type);
  const bool numeric = action == CUSPARSE_ACTION_NUMERIC;
  if (m < 0 || n < 0 || nnz < 0 || v == 0 || (action != CUSPARSE_ACTION_SYMBOLIC && !numeric) ||
      (base != CUSPARSE_INDEX_BASE_ZERO && base != CUSPARSE_INDEX_BASE_ONE)) {
    return detail::bad(api, "invalid shape " + std::to_string(m) + " x " + std::to_string(n) +
                                ", nnz " + std::to_string(nnz) + ", type or action");
  }
  const std::int64_t idx = std::int64_t{nnz} * 4, vals = numeric ? std::int64_t{nnz} * v : 0;
  if (!detail::device_array(csr_row_ptr, (std::int64_t{m} + 1) * 4) ||
      !detail::device_array(csr_col_ind, idx) || !detail::device_array(csr_val, vals) ||
      !detail::device_array(csc_col_ptr, (std::int64_t{n} + 1) * 4) ||
      !detail::device_array(csc_row_ind, idx) || !detail::device_array(csc_val, vals)) {
    return detail::bad(api, "an array is not device memory of its size");
  }
  if (!record) return CUSPARSE_STATUS_SUCCESS;
  if (detail::backed(csr_row_ptr, (std::int64_t{m} + 1) * 4) && detail::backed(csr_col_ind, idx) &&
      detail::backed(csc_col_ptr, (std::int64_t{n} + 1) * 4) && detail::backed(csc_row_ind, idx) &&
      (!numeric || (detail::backed(csr_val, vals) && detail::backed(csc_val, vals)))) {
    const int b = base == CUSPARSE_INDEX_BASE_ONE ? 1 : 0;
    std::vector<std::int64_t> count(static_cast<std::size_t>(n) + 1, 0);
    for (int p = 0; p < nnz; ++p) {
      const int j = csr_col_ind[p] - b;
      if (j >= 0 && j < n) ++count[static_cast<std::size_t>(j) + 1];
    }
    for (int j = 0; j < n; ++j) count[j + 1] += count[j];
    for (int j = 0; j <= n; ++j) csc_col_ptr[j] = static_cast<int>(count[j]) + b;
    // Each column's slots end where the next begins: malformed (overlapping) row offsets that
    // visit an entry twice must not write past them.
    const std::vector<std::int64_t> column_end(count.begin() + 1, count.end());
    for (int i = 0; i < m; ++i) {
      for (int p = std::max(csr_row_ptr[i] - b, 0); p < std::min(csr_row_ptr[i + 1] - b, nnz);
           ++p) {
        const int j = csr_col_ind[p] - b;
        if (j < 0 || j >= n ||
            count[static_cast<std::size_t>(j)] >= column_end[static_cast<std::size_t>(j)]) {
          continue;
        }
        const std::int64_t q = count[static_cast<std::size_t>(j)]++;
        csc_row_ind[q] = i + b;
        if (numeric) {
          std::memcpy(static_cast<unsigned char*>(csc_val) + q * v,
                      static_cast<const unsigned char*>(csr_val) + std::int64_t{p} * v,
                      static_cast<std::size_t>(v));
        }
      }
    }
  }
  detail::SparseOp op;
  op.api = api;
  op.what = "csr2csc";
  op.rows = m, op.cols = n, op.nnz = nnz;
  op.dtype = op.compute = type;
  op.bytes = 2 * (idx + vals) + (std::int64_t{m} + 1) * 4 + (std::int64_t{n} + 1) * 4;
  return detail::run(*h, op, start);
}
}  // namespace

PT_EXPORT cusparseStatus_t cusparseCsr2cscEx2_bufferSize(
    cusparseHandle_t handle, int m, int n, int nnz, const void* csr_val, const int* csr_row_ptr,
    const int* csr_col_ind, void* csc_val, int* csc_col_ptr, int* csc_row_ind, cudaDataType type,
    cusparseAction_t action, cusparseIndexBase_t base, cusparseCsr2CscAlg_t alg,
    size_t* buffer_size) {
  (void)alg;
  if (buffer_size == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  const cusparseStatus_t s =
      csr2csc(handle, m, n, nnz, csr_val, csr_row_ptr, csr_col_ind, csc_val, csc_col_ptr,
              csc_row_ind, type, action, base, false, "cusparseCsr2cscEx2_bufferSize");
  if (s == CUSPARSE_STATUS_SUCCESS) *buffer_size = 0;
  return s;
}

PT_EXPORT cusparseStatus_t cusparseCsr2cscEx2(cusparseHandle_t handle, int m, int n, int nnz,
                                              const void* csr_val, const int* csr_row_ptr,
                                              const int* csr_col_ind, void* csc_val,
                                              int* csc_col_ptr, int* csc_row_ind, cudaDataType type,
                                              cusparseAction_t action, cusparseIndexBase_t base,
                                              cusparseCsr2CscAlg_t alg, void* buffer) {
  (void)alg, (void)buffer;
  return csr2csc(handle, m, n, nnz, csr_val, csr_row_ptr, csr_col_ind, csc_val, csc_col_ptr,
                 csc_row_ind, type, action, base, true, "cusparseCsr2cscEx2");
}

// ---- legacy API: matrix descriptors, incomplete factorizations
// ------------------------------------

PT_EXPORT cusparseStatus_t cusparseCreateMatDescr(cusparseMatDescr_t* descr) {
  return detail::create(sparse().mat_descrs, descr, detail::LegacyMatDescr{},
                        "cusparseCreateMatDescr");
}

PT_EXPORT cusparseStatus_t cusparseDestroyMatDescr(cusparseMatDescr_t descr) {
  return detail::destroy<detail::LegacyMatDescr>(sparse().mat_descrs, descr,
                                                 "cusparseDestroyMatDescr");
}

namespace {
// Sets one field of a legacy descriptor to `value` in [0, max].
cusparseStatus_t set_descr(cusparseMatDescr_t descr, int detail::LegacyMatDescr::*field, int value,
                           int max, const char* api) {
  auto* d = detail::need<detail::LegacyMatDescr>(sparse().mat_descrs, descr, "descrA", api);
  if (d == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  if (value < 0 || value > max) {
    return detail::bad(api, "value " + std::to_string(value) + " is out of range");
  }
  std::lock_guard<std::mutex> lock(sparse().mutex);
  d->*field = value;
  return CUSPARSE_STATUS_SUCCESS;
}
// A field of a legacy descriptor (0, the default, for an invalid one, after reporting it).
int get_descr(const cusparseMatDescr_t descr, int detail::LegacyMatDescr::*field, const char* api) {
  detail::LegacyMatDescr d;
  if (!detail::legacy_mat_descr(descr, &d)) {
    powertrain::emu::report_misuse(
        api, "invalid or destroyed matrix descriptor " + detail::pointer_text(descr));
    return 0;
  }
  return d.*field;
}
}  // namespace

PT_EXPORT cusparseStatus_t cusparseSetMatType(cusparseMatDescr_t descr, cusparseMatrixType_t type) {
  return set_descr(descr, &detail::LegacyMatDescr::type, type, CUSPARSE_MATRIX_TYPE_TRIANGULAR,
                   "cusparseSetMatType");
}
PT_EXPORT cusparseMatrixType_t cusparseGetMatType(const cusparseMatDescr_t descr) {
  return static_cast<cusparseMatrixType_t>(
      get_descr(descr, &detail::LegacyMatDescr::type, "cusparseGetMatType"));
}
PT_EXPORT cusparseStatus_t cusparseSetMatIndexBase(cusparseMatDescr_t descr,
                                                   cusparseIndexBase_t base) {
  return set_descr(descr, &detail::LegacyMatDescr::base, base, CUSPARSE_INDEX_BASE_ONE,
                   "cusparseSetMatIndexBase");
}
PT_EXPORT cusparseIndexBase_t cusparseGetMatIndexBase(const cusparseMatDescr_t descr) {
  return static_cast<cusparseIndexBase_t>(
      get_descr(descr, &detail::LegacyMatDescr::base, "cusparseGetMatIndexBase"));
}
PT_EXPORT cusparseStatus_t cusparseSetMatFillMode(cusparseMatDescr_t descr,
                                                  cusparseFillMode_t fill) {
  return set_descr(descr, &detail::LegacyMatDescr::fill, fill, CUSPARSE_FILL_MODE_UPPER,
                   "cusparseSetMatFillMode");
}
PT_EXPORT cusparseFillMode_t cusparseGetMatFillMode(const cusparseMatDescr_t descr) {
  return static_cast<cusparseFillMode_t>(
      get_descr(descr, &detail::LegacyMatDescr::fill, "cusparseGetMatFillMode"));
}
PT_EXPORT cusparseStatus_t cusparseSetMatDiagType(cusparseMatDescr_t descr,
                                                  cusparseDiagType_t diag) {
  return set_descr(descr, &detail::LegacyMatDescr::diag, diag, CUSPARSE_DIAG_TYPE_UNIT,
                   "cusparseSetMatDiagType");
}
PT_EXPORT cusparseDiagType_t cusparseGetMatDiagType(const cusparseMatDescr_t descr) {
  return static_cast<cusparseDiagType_t>(
      get_descr(descr, &detail::LegacyMatDescr::diag, "cusparseGetMatDiagType"));
}

#define PT_FACTOR_INFO(Name, Type)                                              \
  PT_EXPORT cusparseStatus_t cusparseCreate##Name##Info(Type* info) {           \
    return detail::create(sparse().infos, info, detail::FactorInfo{},           \
                          "cusparseCreate" #Name "Info");                       \
  }                                                                             \
  PT_EXPORT cusparseStatus_t cusparseDestroy##Name##Info(Type info) {           \
    return detail::destroy<detail::FactorInfo>(sparse().infos, info,            \
                                               "cusparseDestroy" #Name "Info"); \
  }
PT_FACTOR_INFO(Csrilu02, csrilu02Info_t)
PT_FACTOR_INFO(Csric02, csric02Info_t)
PT_FACTOR_INFO(Bsrilu02, bsrilu02Info_t)
PT_FACTOR_INFO(Bsric02, bsric02Info_t)
PT_FACTOR_INFO(Bsrsv2, bsrsv2Info_t)
PT_FACTOR_INFO(Bsrsm2, bsrsm2Info_t)
#undef PT_FACTOR_INFO

namespace {

enum class Factor { kIlu, kIc, kBsrIlu, kBsrIc };
enum class Phase { kBufferSize, kAnalysis, kFactor };

const char* factor_name(Factor f) {
  switch (f) {
    case Factor::kIlu:
      return "csrilu02";
    case Factor::kIc:
      return "csric02";
    case Factor::kBsrIlu:
      return "bsrilu02";
    default:
      return "bsric02";
  }
}

// One legacy incomplete-factorization call: m (block) rows, nnz (blocks), block size `block`
// (1 for CSR), values of `type`.
cusparseStatus_t factor(cusparseHandle_t handle, Factor kind, Phase phase, int m, int nnz,
                        int block, const void* descr, const void* values, const int* row_ptr,
                        const int* col_ind, const void* info, cudaDataType type, int* buffer_size,
                        const char* api) {
  const std::int64_t start = powertrain::emu::now_ns();
  const detail::SparseHandle* h = detail::live_handle(handle, api);
  if (h == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  detail::LegacyMatDescr d;
  if (!detail::legacy_mat_descr(descr, &d)) {
    return detail::bad(api,
                       "invalid or destroyed matrix descriptor " + detail::pointer_text(descr));
  }
  auto* fi = detail::need<detail::FactorInfo>(sparse().infos, info, "info", api);
  if (fi == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  const int v = detail::value_bytes(type);
  const std::int64_t block_values = std::int64_t{block} * block;
  if (m < 0 || nnz < 0 || block <= 0 || block > 65536 || d.type != CUSPARSE_MATRIX_TYPE_GENERAL) {
    return detail::bad(api, "invalid m " + std::to_string(m) + ", nnz " + std::to_string(nnz) +
                                ", block " + std::to_string(block) +
                                " or a matrix type other than GENERAL");
  }
  if (!detail::device_array(row_ptr, (std::int64_t{m} + 1) * 4) ||
      !detail::device_array(col_ind, std::int64_t{nnz} * 4) ||
      !detail::device_array(values, detail::mul(std::int64_t{nnz} * block_values, v))) {
    return detail::bad(api, "an array is not device memory of its size (m " + std::to_string(m) +
                                ", nnz " + std::to_string(nnz) + ")");
  }
  if (phase == Phase::kBufferSize) {
    if (buffer_size == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
    *buffer_size = 0;
    return CUSPARSE_STATUS_SUCCESS;
  }
  {
    std::lock_guard<std::mutex> lock(sparse().mutex);
    if (phase == Phase::kAnalysis) {
      fi->analysed = true;
    } else if (!fi->analysed) {
      return detail::bad(api, "the info object has not been through the analysis");
    }
  }
  const std::string what =
      std::string(factor_name(kind)) + (phase == Phase::kAnalysis ? "_analysis" : "");
  detail::SparseOp op;
  op.api = api;
  op.what = what.c_str();
  const bool blocked = kind == Factor::kBsrIlu || kind == Factor::kBsrIc;
  op.format = blocked ? "bsr" : "csr";
  op.rows = op.cols = std::int64_t{m} * block;
  op.nnz = std::int64_t{nnz} * block_values;
  op.dtype = op.compute = type;
  const std::int64_t structure = std::int64_t{nnz} * 4 + (std::int64_t{m} + 1) * 4;
  if (phase == Phase::kAnalysis) {
    op.bytes = structure;
  } else {
    // Model: each (block) nonzero is updated by about nnz/m others of its row.
    const double per_row = m > 0 ? static_cast<double>(nnz) / m : 0.0;
    double flops = static_cast<double>(nnz) * per_row;  // ILU(0): nnz²/m
    if (kind == Factor::kIc || kind == Factor::kBsrIc) flops /= 2;
    if (blocked) flops *= 2.0 * static_cast<double>(block_values) * block;
    op.flops = flops >= 9.0e18 ? INT64_MAX : static_cast<std::int64_t>(flops);
    op.bytes =
        detail::add(detail::mul(detail::mul(std::int64_t{nnz}, block_values), 2 * v), structure);
  }
  return detail::run(*h, op, start);
}

cusparseStatus_t zero_pivot(cusparseHandle_t handle, const void* info, int* position,
                            const char* api) {
  if (detail::live_handle(handle, api) == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  if (detail::need<detail::FactorInfo>(sparse().infos, info, "info", api) == nullptr) {
    return CUSPARSE_STATUS_INVALID_VALUE;
  }
  if (position == nullptr) return detail::bad(api, "position is NULL");
  // The factors are not computed, so no zero pivot is found: -1 (host or backed device memory).
  const detail::PointerInfo where = detail::lookup_pointer(position);
  if (!where.known || where.backed) *position = -1;
  return CUSPARSE_STATUS_SUCCESS;
}

}  // namespace

PT_EXPORT cusparseStatus_t cusparseXcsrilu02_zeroPivot(cusparseHandle_t handle, csrilu02Info_t info,
                                                       int* position) {
  return zero_pivot(handle, info, position, "cusparseXcsrilu02_zeroPivot");
}
PT_EXPORT cusparseStatus_t cusparseXcsric02_zeroPivot(cusparseHandle_t handle, csric02Info_t info,
                                                      int* position) {
  return zero_pivot(handle, info, position, "cusparseXcsric02_zeroPivot");
}
PT_EXPORT cusparseStatus_t cusparseXbsrilu02_zeroPivot(cusparseHandle_t handle, bsrilu02Info_t info,
                                                       int* position) {
  return zero_pivot(handle, info, position, "cusparseXbsrilu02_zeroPivot");
}
PT_EXPORT cusparseStatus_t cusparseXbsric02_zeroPivot(cusparseHandle_t handle, bsric02Info_t info,
                                                      int* position) {
  return zero_pivot(handle, info, position, "cusparseXbsric02_zeroPivot");
}
PT_EXPORT cusparseStatus_t cusparseXbsrsv2_zeroPivot(cusparseHandle_t handle, bsrsv2Info_t info,
                                                     int* position) {
  return zero_pivot(handle, info, position, "cusparseXbsrsv2_zeroPivot");
}
PT_EXPORT cusparseStatus_t cusparseXbsrsm2_zeroPivot(cusparseHandle_t handle, bsrsm2Info_t info,
                                                     int* position) {
  return zero_pivot(handle, info, position, "cusparseXbsrsm2_zeroPivot");
}

// csrilu02 / csric02 in S/D/C/Z: _bufferSize, _analysis and the factorization.
#define PT_CSR_FACTOR(P, T, DTYPE, name, Info, KIND)                                              \
  PT_EXPORT cusparseStatus_t cusparse##P##name##_bufferSize(                                      \
      cusparseHandle_t handle, int m, int nnz, const cusparseMatDescr_t descr, T* values,         \
      const int* row_ptr, const int* col_ind, Info info, int* buffer_size) {                      \
    return factor(handle, KIND, Phase::kBufferSize, m, nnz, 1, descr, values, row_ptr, col_ind,   \
                  info, DTYPE, buffer_size, "cusparse" #P #name "_bufferSize");                   \
  }                                                                                               \
  PT_EXPORT cusparseStatus_t cusparse##P##name##_analysis(                                        \
      cusparseHandle_t handle, int m, int nnz, const cusparseMatDescr_t descr, const T* values,   \
      const int* row_ptr, const int* col_ind, Info info, cusparseSolvePolicy_t policy,            \
      void* buffer) {                                                                             \
    (void)policy, (void)buffer;                                                                   \
    return factor(handle, KIND, Phase::kAnalysis, m, nnz, 1, descr, values, row_ptr, col_ind,     \
                  info, DTYPE, nullptr, "cusparse" #P #name "_analysis");                         \
  }                                                                                               \
  PT_EXPORT cusparseStatus_t cusparse##P##name(cusparseHandle_t handle, int m, int nnz,           \
                                               const cusparseMatDescr_t descr, T* values,         \
                                               const int* row_ptr, const int* col_ind, Info info, \
                                               cusparseSolvePolicy_t policy, void* buffer) {      \
    (void)policy, (void)buffer;                                                                   \
    return factor(handle, KIND, Phase::kFactor, m, nnz, 1, descr, values, row_ptr, col_ind, info, \
                  DTYPE, nullptr, "cusparse" #P #name);                                           \
  }

#define PT_BSR_FACTOR(P, T, DTYPE)                                                             \
  PT_EXPORT cusparseStatus_t cusparse##P##bsrilu02_bufferSize(                                 \
      cusparseHandle_t handle, cusparseDirection_t dir, int mb, int nnzb,                      \
      const cusparseMatDescr_t descr, T* values, const int* row_ptr, const int* col_ind,       \
      int block, bsrilu02Info_t info, int* buffer_size) {                                      \
    (void)dir;                                                                                 \
    return factor(handle, Factor::kBsrIlu, Phase::kBufferSize, mb, nnzb, block, descr, values, \
                  row_ptr, col_ind, info, DTYPE, buffer_size,                                  \
                  "cusparse" #P "bsrilu02_bufferSize");                                        \
  }                                                                                            \
  PT_EXPORT cusparseStatus_t cusparse##P##bsrilu02_analysis(                                   \
      cusparseHandle_t handle, cusparseDirection_t dir, int mb, int nnzb,                      \
      const cusparseMatDescr_t descr, T* values, const int* row_ptr, const int* col_ind,       \
      int block, bsrilu02Info_t info, cusparseSolvePolicy_t policy, void* buffer) {            \
    (void)dir, (void)policy, (void)buffer;                                                     \
    return factor(handle, Factor::kBsrIlu, Phase::kAnalysis, mb, nnzb, block, descr, values,   \
                  row_ptr, col_ind, info, DTYPE, nullptr, "cusparse" #P "bsrilu02_analysis");  \
  }                                                                                            \
  PT_EXPORT cusparseStatus_t cusparse##P##bsrilu02(                                            \
      cusparseHandle_t handle, cusparseDirection_t dir, int mb, int nnzb,                      \
      const cusparseMatDescr_t descr, T* values, const int* row_ptr, const int* col_ind,       \
      int block, bsrilu02Info_t info, cusparseSolvePolicy_t policy, void* buffer) {            \
    (void)dir, (void)policy, (void)buffer;                                                     \
    return factor(handle, Factor::kBsrIlu, Phase::kFactor, mb, nnzb, block, descr, values,     \
                  row_ptr, col_ind, info, DTYPE, nullptr, "cusparse" #P "bsrilu02");           \
  }

#define PT_BSR_IC(P, T, DTYPE)                                                                     \
  PT_EXPORT cusparseStatus_t cusparse##P##bsric02_bufferSize(                                      \
      cusparseHandle_t handle, cusparseDirection_t dir, int mb, int nnzb,                          \
      const cusparseMatDescr_t descr, T* values, const int* row_ptr, const int* col_ind,           \
      int block, bsric02Info_t info, int* buffer_size) {                                           \
    (void)dir;                                                                                     \
    return factor(handle, Factor::kBsrIc, Phase::kBufferSize, mb, nnzb, block, descr, values,      \
                  row_ptr, col_ind, info, DTYPE, buffer_size, "cusparse" #P "bsric02_bufferSize"); \
  }                                                                                                \
  PT_EXPORT cusparseStatus_t cusparse##P##bsric02_analysis(                                        \
      cusparseHandle_t handle, cusparseDirection_t dir, int mb, int nnzb,                          \
      const cusparseMatDescr_t descr, const T* values, const int* row_ptr, const int* col_ind,     \
      int block, bsric02Info_t info, cusparseSolvePolicy_t policy, void* buffer) {                 \
    (void)dir, (void)policy, (void)buffer;                                                         \
    return factor(handle, Factor::kBsrIc, Phase::kAnalysis, mb, nnzb, block, descr, values,        \
                  row_ptr, col_ind, info, DTYPE, nullptr, "cusparse" #P "bsric02_analysis");       \
  }                                                                                                \
  PT_EXPORT cusparseStatus_t cusparse##P##bsric02(                                                 \
      cusparseHandle_t handle, cusparseDirection_t dir, int mb, int nnzb,                          \
      const cusparseMatDescr_t descr, T* values, const int* row_ptr, const int* col_ind,           \
      int block, bsric02Info_t info, cusparseSolvePolicy_t policy, void* buffer) {                 \
    (void)dir, (void)policy, (void)buffer;                                                         \
    return factor(handle, Factor::kBsrIc, Phase::kFactor, mb, nnzb, block, descr, values, row_ptr, \
                  col_ind, info, DTYPE, nullptr, "cusparse" #P "bsric02");                         \
  }

#define PT_ALL_FACTORS(P, T, DTYPE)                                  \
  PT_CSR_FACTOR(P, T, DTYPE, csrilu02, csrilu02Info_t, Factor::kIlu) \
  PT_CSR_FACTOR(P, T, DTYPE, csric02, csric02Info_t, Factor::kIc)    \
  PT_BSR_FACTOR(P, T, DTYPE)                                         \
  PT_BSR_IC(P, T, DTYPE)

PT_ALL_FACTORS(S, float, CUDA_R_32F)
PT_ALL_FACTORS(D, double, CUDA_R_64F)
PT_ALL_FACTORS(C, cuComplex, CUDA_C_32F)
PT_ALL_FACTORS(Z, cuDoubleComplex, CUDA_C_64F)
#undef PT_ALL_FACTORS
#undef PT_BSR_IC
#undef PT_BSR_FACTOR
#undef PT_CSR_FACTOR

// ---- pointer mode, descriptor accessors, strided batches, preprocess and matrix updates,
// index-array conversions and sorting, tridiagonal solvers, the logger
// ----------------------------- The accessors answer from the descriptors. A strided batch
// multiplies SpMM's FLOPs and bytes by its count. SpMV/SpMM preprocessing reads the matrix
// structure once (a kernel of the index arrays' bytes); SpSV/SpSM_updateMatrix swap in new values
// (checked as device memory). The index-array routines (coo2csr, csr2coo, coosort, csrsort,
// identity permutation) and the tridiagonal solvers (gtsv2, gtsv2_nopivot, gtsv2StridedBatch:
// Thomas's algorithm, with partial pivoting for gtsv2) are computed where
// their arrays are backed and are one kernel each: the index routines move their arrays (sorting:
// n·log2 n comparisons as FLOPs), a tridiagonal system of m rows costs 8m FLOPs per right-hand side
// and moves its three diagonals and right-hand sides, read and written. Work buffers: 0 bytes,
// except the sorts' and gtsv2's (a token m·8 bytes). The logger calls are accepted: the emulator
// writes no cuSPARSE log.

namespace {

template <typename T>
T* need_sparse(const void* d, const char* api) {
  return detail::need<T>(sparse().matrices_sparse, d, "spMatDescr", api);
}

cusparseStatus_t index_kernel(cusparseHandle_t handle, const char* api, const char* what,
                              std::int64_t n, std::int64_t flops, std::int64_t bytes,
                              cudaDataType dtype = CUDA_R_32I) {
  const std::int64_t start = powertrain::emu::now_ns();
  const detail::SparseHandle* h = detail::live_handle(handle, api);
  if (h == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  detail::SparseOp op;
  op.api = api, op.what = what, op.format = "vector";
  op.rows = n, op.cols = 1, op.nnz = n;
  op.dtype = op.compute = dtype;
  op.flops = flops, op.bytes = bytes;
  return detail::run(*h, op, start);
}

bool int_array(const void* p, std::int64_t count) {
  return detail::device_array(p, detail::mul(count, 4));
}

// Sorts `keys` (with `second` as the tie-breaker) and applies the order to `second` and `p`.
void sort_pairs(int* keys, int* second, int* p, std::int64_t n) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t x, std::int64_t y) {
    return keys[x] != keys[y] ? keys[x] < keys[y] : second[x] < second[y];
  });
  std::vector<int> k(keys, keys + n), s(second, second + n), q(p, p + n);
  for (std::int64_t i = 0; i < n; ++i) {
    const auto from = static_cast<std::size_t>(order[static_cast<std::size_t>(i)]);
    keys[i] = k[from], second[i] = s[from], p[i] = q[from];
  }
}

std::int64_t sort_flops(std::int64_t n) {
  return n > 1
             ? static_cast<std::int64_t>(static_cast<double>(n) * std::log2(static_cast<double>(n)))
             : 0;
}

// Solves the tridiagonal systems (dl, d, du: m values each, dl[0] and du[m−1] unused) for the
// `count` right-hand sides at `rhs` + j·stride, with partial pivoting when `pivot`.
template <typename T>
void tridiagonal_solve(std::int64_t m, const T* dl, const T* d, const T* du, T* rhs,
                       std::int64_t count, std::int64_t stride, bool pivot) {
  if (m <= 0) return;
  for (std::int64_t j = 0; j < count; ++j) {
    T* x = rhs + j * stride;
    if (!pivot) {  // Thomas
      std::vector<T> c(static_cast<std::size_t>(m)), y(static_cast<std::size_t>(m));
      T denom = d[0];
      c[0] = m > 1 ? du[0] / denom : T(0);
      y[0] = x[0] / denom;
      for (std::int64_t i = 1; i < m; ++i) {
        denom = d[i] - dl[i] * c[static_cast<std::size_t>(i - 1)];
        c[static_cast<std::size_t>(i)] = i + 1 < m ? du[i] / denom : T(0);
        y[static_cast<std::size_t>(i)] =
            (x[i] - dl[i] * y[static_cast<std::size_t>(i - 1)]) / denom;
      }
      x[m - 1] = y[static_cast<std::size_t>(m - 1)];
      for (std::int64_t i = m - 2; i >= 0; --i)
        x[i] = y[static_cast<std::size_t>(i)] - c[static_cast<std::size_t>(i)] * x[i + 1];
      continue;
    }
    // Gaussian elimination with partial pivoting on the band (LAPACK gtsv): row i holds
    // (a, b, c2) = (diagonal, first and second super-diagonal after exchanges).
    std::vector<T> a(d, d + m), b(static_cast<std::size_t>(m), T(0)),
        c2(static_cast<std::size_t>(m), T(0)), lower(dl, dl + m);
    for (std::int64_t i = 0; i + 1 < m; ++i) b[static_cast<std::size_t>(i)] = du[i];
    for (std::int64_t i = 0; i + 1 < m; ++i) {
      const std::size_t k = static_cast<std::size_t>(i);
      T sub = lower[k + 1];
      if (std::abs(sub) > std::abs(a[k])) {  // exchange rows i and i+1
        std::swap(a[k], sub);
        std::swap(b[k], a[k + 1]);
        if (i + 2 < m) std::swap(c2[k], b[k + 1]);
        std::swap(x[i], x[i + 1]);
      }
      const T factor = a[k] != T(0) ? sub / a[k] : T(0);
      a[k + 1] -= factor * b[k];
      if (i + 2 < m) b[k + 1] -= factor * c2[k];
      x[i + 1] -= factor * x[i];
    }
    for (std::int64_t i = m - 1; i >= 0; --i) {
      const std::size_t k = static_cast<std::size_t>(i);
      T sum = x[i];
      if (i + 1 < m) sum -= b[k] * x[i + 1];
      if (i + 2 < m) sum -= c2[k] * x[i + 2];
      x[i] = a[k] != T(0) ? sum / a[k] : T(0);
    }
  }
}

// The record's data type and the real operations per arithmetic operation of a value type.
template <typename T>
cudaDataType value_type() {
  if constexpr (std::is_same_v<T, float>) return CUDA_R_32F;
  if constexpr (std::is_same_v<T, double>) return CUDA_R_64F;
  if constexpr (std::is_same_v<T, std::complex<float>>) return CUDA_C_32F;
  return CUDA_C_64F;
}
template <typename T>
std::int64_t flop_scale() {  // a complex multiply-add is 4 real multiply-adds
  return std::is_same_v<T, float> || std::is_same_v<T, double> ? 1 : 4;
}

template <typename T>
cusparseStatus_t gtsv(cusparseHandle_t handle, std::int64_t m, std::int64_t count, const T* dl,
                      const T* d, const T* du, T* x, std::int64_t stride, bool pivot,
                      std::int64_t rhs_rows, const char* api) {
  if (m < 3 || count < 0 || stride < rhs_rows) {
    if (detail::live_handle(handle, api) == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
    return detail::bad(api, "m " + std::to_string(m) + " (at least 3), n or ldb/batchStride " +
                                std::to_string(stride) + " invalid");
  }
  const bool batched_diagonals = rhs_rows < 0;  // StridedBatch: one system per batch member
  const std::int64_t diag_span = batched_diagonals ? (count - 1) * stride + m : m;
  const std::int64_t x_span = count > 0 ? (count - 1) * stride + m : 0;
  const std::int64_t v = sizeof(T);
  if (!detail::device_array(dl, diag_span * v) || !detail::device_array(d, diag_span * v) ||
      !detail::device_array(du, diag_span * v) || !detail::device_array(x, x_span * v)) {
    if (detail::live_handle(handle, api) == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
    return detail::bad(api, "a diagonal or the right-hand side is not device memory of its size");
  }
  if (detail::backed(dl, diag_span * v) && detail::backed(d, diag_span * v) &&
      detail::backed(du, diag_span * v) && detail::backed(x, x_span * v)) {
    if (batched_diagonals) {
      for (std::int64_t j = 0; j < count; ++j)
        tridiagonal_solve(m, dl + j * stride, d + j * stride, du + j * stride, x + j * stride, 1,
                          stride, pivot);
    } else {
      tridiagonal_solve(m, dl, d, du, x, count, stride, pivot);
    }
  }
  const std::int64_t systems = batched_diagonals ? count : 1;
  return index_kernel(
      handle, api, "gtsv", m, detail::mul(8 * m * flop_scale<T>(), count),
      detail::mul(detail::add(detail::mul(3 * m, systems), detail::mul(2 * m, count)), v),
      value_type<T>());
}

}  // namespace

PT_EXPORT cusparseStatus_t cusparseSetPointerMode(cusparseHandle_t handle,
                                                  cusparsePointerMode_t mode) {
  const char* api = "cusparseSetPointerMode";
  auto* h = detail::live<detail::SparseHandle>(sparse().handles, handle);
  if (h == nullptr) {
    powertrain::emu::report_misuse(
        api, "invalid or destroyed cuSPARSE handle " + detail::pointer_text(handle));
    return CUSPARSE_STATUS_NOT_INITIALIZED;
  }
  if (mode != CUSPARSE_POINTER_MODE_HOST && mode != CUSPARSE_POINTER_MODE_DEVICE)
    return detail::bad(api, "unknown pointer mode");
  std::lock_guard<std::mutex> lock(sparse().mutex);
  h->pointer_mode = mode;
  return CUSPARSE_STATUS_SUCCESS;
}

PT_EXPORT cusparseStatus_t cusparseGetPointerMode(cusparseHandle_t handle,
                                                  cusparsePointerMode_t* mode) {
  const detail::SparseHandle* h = detail::live_handle(handle, "cusparseGetPointerMode");
  if (h == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  if (mode == nullptr) return detail::bad("cusparseGetPointerMode", "mode is NULL");
  *mode = h->pointer_mode;
  return CUSPARSE_STATUS_SUCCESS;
}

PT_EXPORT cusparseStatus_t cusparseConstSpMatGetValues(cusparseConstSpMatDescr_t descr,
                                                       const void** values) {
  return cusparseSpMatGetValues(const_cast<cusparseSpMatDescr_t>(descr),
                                const_cast<void**>(values));
}

PT_EXPORT cusparseStatus_t cusparseConstCscGet(cusparseConstSpMatDescr_t descr, int64_t* rows,
                                               int64_t* cols, int64_t* nnz, const void** offsets,
                                               const void** rows_ind, const void** values,
                                               cusparseIndexType_t* offsets_type,
                                               cusparseIndexType_t* index_type,
                                               cusparseIndexBase_t* base,
                                               cudaDataType* value_type) {
  return cusparseCscGet(const_cast<cusparseSpMatDescr_t>(descr), rows, cols, nnz,
                        const_cast<void**>(offsets), const_cast<void**>(rows_ind),
                        const_cast<void**>(values), offsets_type, index_type, base, value_type);
}

PT_EXPORT cusparseStatus_t cusparseConstCooGet(cusparseConstSpMatDescr_t descr, int64_t* rows,
                                               int64_t* cols, int64_t* nnz, const void** row_ind,
                                               const void** col_ind, const void** values,
                                               cusparseIndexType_t* index_type,
                                               cusparseIndexBase_t* base,
                                               cudaDataType* value_type) {
  return cusparseCooGet(const_cast<cusparseSpMatDescr_t>(descr), rows, cols, nnz,
                        const_cast<void**>(row_ind), const_cast<void**>(col_ind),
                        const_cast<void**>(values), index_type, base, value_type);
}

PT_EXPORT cusparseStatus_t cusparseBlockedEllGet(cusparseSpMatDescr_t descr, int64_t* rows,
                                                 int64_t* cols, int64_t* block, int64_t* ell_cols,
                                                 void** col_ind, void** values,
                                                 cusparseIndexType_t* index_type,
                                                 cusparseIndexBase_t* base,
                                                 cudaDataType* value_type) {
  const char* api = "cusparseBlockedEllGet";
  const auto* a = need_sparse<detail::SpMat>(descr, api);
  if (a == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  if (a->format != CUSPARSE_FORMAT_BLOCKED_ELL)
    return detail::bad(api, "the matrix is not Blocked-ELL");
  if (rows != nullptr) *rows = a->rows;
  if (cols != nullptr) *cols = a->cols;
  if (block != nullptr) *block = a->block_rows;
  if (ell_cols != nullptr) *ell_cols = a->ell_cols;
  if (col_ind != nullptr) *col_ind = a->columns;
  if (values != nullptr) *values = a->values;
  if (index_type != nullptr) *index_type = a->index_type;
  if (base != nullptr) *base = a->base;
  if (value_type != nullptr) *value_type = a->value_type;
  return CUSPARSE_STATUS_SUCCESS;
}

PT_EXPORT cusparseStatus_t cusparseConstBlockedEllGet(
    cusparseConstSpMatDescr_t descr, int64_t* rows, int64_t* cols, int64_t* block,
    int64_t* ell_cols, const void** col_ind, const void** values, cusparseIndexType_t* index_type,
    cusparseIndexBase_t* base, cudaDataType* value_type) {
  return cusparseBlockedEllGet(const_cast<cusparseSpMatDescr_t>(descr), rows, cols, block, ell_cols,
                               const_cast<void**>(col_ind), const_cast<void**>(values), index_type,
                               base, value_type);
}

PT_EXPORT cusparseStatus_t cusparseConstSpVecGet(cusparseConstSpVecDescr_t descr, int64_t* size,
                                                 int64_t* nnz, const void** indices,
                                                 const void** values,
                                                 cusparseIndexType_t* index_type,
                                                 cusparseIndexBase_t* base,
                                                 cudaDataType* value_type) {
  return cusparseSpVecGet(const_cast<cusparseSpVecDescr_t>(descr), size, nnz,
                          const_cast<void**>(indices), const_cast<void**>(values), index_type, base,
                          value_type);
}

PT_EXPORT cusparseStatus_t cusparseSpVecGetIndexBase(cusparseConstSpVecDescr_t descr,
                                                     cusparseIndexBase_t* base) {
  return cusparseSpVecGet(const_cast<cusparseSpVecDescr_t>(descr), nullptr, nullptr, nullptr,
                          nullptr, nullptr, base, nullptr);
}

PT_EXPORT cusparseStatus_t cusparseSpVecGetValues(cusparseSpVecDescr_t descr, void** values) {
  return cusparseSpVecGet(descr, nullptr, nullptr, nullptr, values, nullptr, nullptr, nullptr);
}

PT_EXPORT cusparseStatus_t cusparseConstSpVecGetValues(cusparseConstSpVecDescr_t descr,
                                                       const void** values) {
  return cusparseSpVecGetValues(const_cast<cusparseSpVecDescr_t>(descr),
                                const_cast<void**>(values));
}

PT_EXPORT cusparseStatus_t cusparseSpVecSetValues(cusparseSpVecDescr_t descr, void* values) {
  const char* api = "cusparseSpVecSetValues";
  auto* v = detail::need<detail::SpVec>(sparse().sparse_vectors, descr, "spVecDescr", api);
  if (v == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  if (!detail::device_array(values, v->nnz * detail::value_bytes(v->value_type)))
    return detail::bad(api, detail::pointer_text(values) + " is not device memory of nnz values");
  std::lock_guard<std::mutex> lock(sparse().mutex);
  v->values = values;
  return CUSPARSE_STATUS_SUCCESS;
}

PT_EXPORT cusparseStatus_t cusparseConstDnVecGet(cusparseConstDnVecDescr_t descr, int64_t* size,
                                                 const void** values, cudaDataType* value_type) {
  return cusparseDnVecGet(const_cast<cusparseDnVecDescr_t>(descr), size, const_cast<void**>(values),
                          value_type);
}

PT_EXPORT cusparseStatus_t cusparseConstDnVecGetValues(cusparseConstDnVecDescr_t descr,
                                                       const void** values) {
  return cusparseDnVecGetValues(const_cast<cusparseDnVecDescr_t>(descr),
                                const_cast<void**>(values));
}

PT_EXPORT cusparseStatus_t cusparseConstDnMatGet(cusparseConstDnMatDescr_t descr, int64_t* rows,
                                                 int64_t* cols, int64_t* ld, const void** values,
                                                 cudaDataType* type, cusparseOrder_t* order) {
  return cusparseDnMatGet(const_cast<cusparseDnMatDescr_t>(descr), rows, cols, ld,
                          const_cast<void**>(values), type, order);
}

PT_EXPORT cusparseStatus_t cusparseDnMatGetValues(cusparseDnMatDescr_t descr, void** values) {
  return cusparseDnMatGet(descr, nullptr, nullptr, nullptr, values, nullptr, nullptr);
}

PT_EXPORT cusparseStatus_t cusparseConstDnMatGetValues(cusparseConstDnMatDescr_t descr,
                                                       const void** values) {
  return cusparseDnMatGetValues(const_cast<cusparseDnMatDescr_t>(descr),
                                const_cast<void**>(values));
}

PT_EXPORT cusparseStatus_t cusparseDnMatSetValues(cusparseDnMatDescr_t descr, void* values) {
  const char* api = "cusparseDnMatSetValues";
  auto* m = detail::need<detail::DnMat>(sparse().matrices, descr, "dnMatDescr", api);
  if (m == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  if (!detail::device_array(values, detail::dense_bytes(*m)))
    return detail::bad(api, detail::pointer_text(values) + " is not device memory of the matrix");
  std::lock_guard<std::mutex> lock(sparse().mutex);
  m->values = values;
  return CUSPARSE_STATUS_SUCCESS;
}

PT_EXPORT cusparseStatus_t cusparseDnMatSetStridedBatch(cusparseDnMatDescr_t descr, int count,
                                                        int64_t stride) {
  const char* api = "cusparseDnMatSetStridedBatch";
  auto* m = detail::need<detail::DnMat>(sparse().matrices, descr, "dnMatDescr", api);
  if (m == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  const std::int64_t one = m->order == CUSPARSE_ORDER_COL ? m->ld * m->cols : m->ld * m->rows;
  if (count < 1 || stride < one)
    return detail::bad(api, "batchCount < 1 or a stride below one matrix");
  std::lock_guard<std::mutex> lock(sparse().mutex);
  m->batch = count, m->batch_stride = stride;
  return CUSPARSE_STATUS_SUCCESS;
}

PT_EXPORT cusparseStatus_t cusparseDnMatGetStridedBatch(cusparseConstDnMatDescr_t descr, int* count,
                                                        int64_t* stride) {
  const auto* m = detail::need<detail::DnMat>(sparse().matrices, descr, "dnMatDescr",
                                              "cusparseDnMatGetStridedBatch");
  if (m == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  if (count != nullptr) *count = m->batch;
  if (stride != nullptr) *stride = m->batch_stride;
  return CUSPARSE_STATUS_SUCCESS;
}

namespace {
cusparseStatus_t set_sparse_batch(const void* descr, int count, cusparseFormat_t format,
                                  const char* api) {
  auto* a = need_sparse<detail::SpMat>(descr, api);
  if (a == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  if (a->format != format) return detail::bad(api, "the matrix is not of this call's format");
  if (count < 1) return detail::bad(api, "batchCount < 1");
  std::lock_guard<std::mutex> lock(sparse().mutex);
  a->batch = count;
  return CUSPARSE_STATUS_SUCCESS;
}
}  // namespace

PT_EXPORT cusparseStatus_t cusparseCsrSetStridedBatch(cusparseSpMatDescr_t descr, int count,
                                                      int64_t offsets_stride,
                                                      int64_t columns_values_stride) {
  (void)offsets_stride, (void)columns_values_stride;
  return set_sparse_batch(descr, count, CUSPARSE_FORMAT_CSR, "cusparseCsrSetStridedBatch");
}

PT_EXPORT cusparseStatus_t cusparseCooSetStridedBatch(cusparseSpMatDescr_t descr, int count,
                                                      int64_t stride) {
  (void)stride;
  return set_sparse_batch(descr, count, CUSPARSE_FORMAT_COO, "cusparseCooSetStridedBatch");
}

PT_EXPORT cusparseStatus_t cusparseBsrSetStridedBatch(cusparseSpMatDescr_t descr, int count,
                                                      int64_t offsets_stride,
                                                      int64_t columns_stride,
                                                      int64_t values_stride) {
  (void)offsets_stride, (void)columns_stride, (void)values_stride;
  return set_sparse_batch(descr, count, CUSPARSE_FORMAT_BSR, "cusparseBsrSetStridedBatch");
}

PT_EXPORT cusparseStatus_t cusparseSpMatGetStridedBatch(cusparseConstSpMatDescr_t descr,
                                                        int* count) {
  const auto* a = need_sparse<detail::SpMat>(descr, "cusparseSpMatGetStridedBatch");
  if (a == nullptr || count == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  *count = a->batch;
  return CUSPARSE_STATUS_SUCCESS;
}

PT_EXPORT cusparseStatus_t cusparseSpMV_preprocess(
    cusparseHandle_t handle, cusparseOperation_t op_a, const void* alpha,
    cusparseConstSpMatDescr_t mat_a, cusparseConstDnVecDescr_t vec_x, const void* beta,
    cusparseDnVecDescr_t vec_y, cudaDataType compute, cusparseSpMVAlg_t alg, void* buffer) {
  (void)alpha, (void)beta, (void)alg, (void)buffer;
  const char* api = "cusparseSpMV_preprocess";
  const cusparseStatus_t s = detail::spmv(handle, op_a, mat_a, vec_x, vec_y, compute, false, api);
  if (s != CUSPARSE_STATUS_SUCCESS) return s;
  const auto* a = need_sparse<detail::SpMat>(mat_a, api);
  return index_kernel(handle, api, "spmv_preprocess", a->rows, 0, detail::index_array_bytes(*a));
}

PT_EXPORT cusparseStatus_t cusparseSpMM_preprocess(
    cusparseHandle_t handle, cusparseOperation_t op_a, cusparseOperation_t op_b, const void* alpha,
    cusparseConstSpMatDescr_t mat_a, cusparseConstDnMatDescr_t mat_b, const void* beta,
    cusparseDnMatDescr_t mat_c, cudaDataType compute, cusparseSpMMAlg_t alg, void* buffer) {
  (void)alpha, (void)beta, (void)alg, (void)buffer;
  const char* api = "cusparseSpMM_preprocess";
  const cusparseStatus_t s =
      detail::spmm(handle, op_a, op_b, mat_a, mat_b, mat_c, compute, false, "spmm", api);
  if (s != CUSPARSE_STATUS_SUCCESS) return s;
  const auto* a = need_sparse<detail::SpMat>(mat_a, api);
  return index_kernel(handle, api, "spmm_preprocess", a->rows, 0, detail::index_array_bytes(*a));
}

namespace {
cusparseStatus_t update_matrix(cusparseHandle_t handle, const void* descr, void* values,
                               const char* what, const char* api) {
  if (detail::live_handle(handle, api) == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  auto* d = detail::need<detail::OpDescr>(sparse().op_descrs, descr, what, api);
  if (d == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  if (!d->analysed) return detail::bad(api, std::string("the ") + what + " has not been analysed");
  const detail::PointerInfo info = detail::lookup_pointer(values);
  if (!info.known || !info.device_side) return detail::bad(api, "newValues is not device memory");
  return CUSPARSE_STATUS_SUCCESS;  // the structure (and so the analysis) stays valid
}
}  // namespace

PT_EXPORT cusparseStatus_t cusparseSpSV_updateMatrix(cusparseHandle_t handle,
                                                     cusparseSpSVDescr_t descr, void* values,
                                                     cusparseSpSVUpdate_t part) {
  (void)part;
  return update_matrix(handle, descr, values, "spsvDescr", "cusparseSpSV_updateMatrix");
}

PT_EXPORT cusparseStatus_t cusparseSpSM_updateMatrix(cusparseHandle_t handle,
                                                     cusparseSpSMDescr_t descr, void* values,
                                                     cusparseSpSMUpdate_t part) {
  (void)part;
  return update_matrix(handle, descr, values, "spsmDescr", "cusparseSpSM_updateMatrix");
}

PT_EXPORT cusparseStatus_t cusparseSpGEMM_getNumProducts(cusparseSpGEMMDescr_t descr,
                                                         int64_t* products) {
  const char* api = "cusparseSpGEMM_getNumProducts";
  const auto* d = detail::need<detail::OpDescr>(sparse().op_descrs, descr, "spgemmDescr", api);
  if (d == nullptr || products == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  if (!d->estimated) return detail::bad(api, "cusparseSpGEMM_workEstimation has not run");
  *products = d->products;
  return CUSPARSE_STATUS_SUCCESS;
}

PT_EXPORT cusparseStatus_t cusparseXcoo2csr(cusparseHandle_t handle, const int* coo_rows, int nnz,
                                            int m, int* csr_offsets, cusparseIndexBase_t base) {
  const char* api = "cusparseXcoo2csr";
  if (nnz < 0 || m < 0 || !int_array(coo_rows, nnz) || !int_array(csr_offsets, m + 1))
    return detail::bad(api, "invalid sizes, or arrays that are not device memory of their size");
  if (detail::backed(coo_rows, 4LL * nnz) && detail::backed(csr_offsets, 4LL * (m + 1))) {
    const int b = base == CUSPARSE_INDEX_BASE_ONE ? 1 : 0;
    std::vector<int> count(static_cast<std::size_t>(m) + 1, 0);
    for (int k = 0; k < nnz; ++k) {
      const int r = coo_rows[k] - b;
      if (r >= 0 && r < m) ++count[static_cast<std::size_t>(r) + 1];
    }
    for (int i = 0; i < m; ++i)
      count[static_cast<std::size_t>(i) + 1] += count[static_cast<std::size_t>(i)];
    for (int i = 0; i <= m; ++i) csr_offsets[i] = count[static_cast<std::size_t>(i)] + b;
  }
  return index_kernel(handle, api, "coo2csr", nnz, 0, 4LL * (nnz + m + 1));
}

PT_EXPORT cusparseStatus_t cusparseXcsr2coo(cusparseHandle_t handle, const int* csr_offsets,
                                            int nnz, int m, int* coo_rows,
                                            cusparseIndexBase_t base) {
  const char* api = "cusparseXcsr2coo";
  if (nnz < 0 || m < 0 || !int_array(csr_offsets, m + 1) || !int_array(coo_rows, nnz))
    return detail::bad(api, "invalid sizes, or arrays that are not device memory of their size");
  if (detail::backed(coo_rows, 4LL * nnz) && detail::backed(csr_offsets, 4LL * (m + 1))) {
    const int b = base == CUSPARSE_INDEX_BASE_ONE ? 1 : 0;
    for (int i = 0; i < m; ++i) {
      for (int k = std::max(csr_offsets[i] - b, 0); k < std::min(csr_offsets[i + 1] - b, nnz); ++k)
        coo_rows[k] = i + b;
    }
  }
  return index_kernel(handle, api, "csr2coo", nnz, 0, 4LL * (nnz + m + 1));
}

PT_EXPORT cusparseStatus_t cusparseCreateIdentityPermutation(cusparseHandle_t handle, int n,
                                                             int* p) {
  const char* api = "cusparseCreateIdentityPermutation";
  if (n < 0 || !int_array(p, n)) return detail::bad(api, "p is not device memory of n ints");
  if (detail::backed(p, 4LL * n)) {
    for (int i = 0; i < n; ++i) p[i] = i;
  }
  return index_kernel(handle, api, "identity_permutation", n, 0, 4LL * n);
}

PT_EXPORT cusparseStatus_t cusparseXcoosort_bufferSizeExt(cusparseHandle_t handle, int m, int n,
                                                          int nnz, const int* rows, const int* cols,
                                                          size_t* bytes) {
  (void)rows, (void)cols, (void)n;
  if (detail::live_handle(handle, "cusparseXcoosort_bufferSizeExt") == nullptr)
    return CUSPARSE_STATUS_NOT_INITIALIZED;
  if (bytes == nullptr || nnz < 0 || m < 0)
    return detail::bad("cusparseXcoosort_bufferSizeExt", "invalid sizes or a NULL size");
  *bytes = static_cast<size_t>(std::max(nnz, 1)) * 8;
  return CUSPARSE_STATUS_SUCCESS;
}

namespace {
cusparseStatus_t coosort(cusparseHandle_t handle, int nnz, int* rows, int* cols, int* p,
                         bool by_row, const char* api) {
  if (nnz < 0 || !int_array(rows, nnz) || !int_array(cols, nnz) || !int_array(p, nnz))
    return detail::bad(api, "the index arrays or P are not device memory of nnz ints");
  if (detail::backed(rows, 4LL * nnz) && detail::backed(cols, 4LL * nnz) &&
      detail::backed(p, 4LL * nnz)) {
    if (by_row) {
      sort_pairs(rows, cols, p, nnz);
    } else {
      sort_pairs(cols, rows, p, nnz);
    }
  }
  return index_kernel(handle, api, "coosort", nnz, sort_flops(nnz), 4LL * 3 * 2 * nnz);
}
}  // namespace

PT_EXPORT cusparseStatus_t cusparseXcoosortByRow(cusparseHandle_t handle, int m, int n, int nnz,
                                                 int* rows, int* cols, int* p, void* buffer) {
  (void)m, (void)n, (void)buffer;
  return coosort(handle, nnz, rows, cols, p, true, "cusparseXcoosortByRow");
}

PT_EXPORT cusparseStatus_t cusparseXcoosortByColumn(cusparseHandle_t handle, int m, int n, int nnz,
                                                    int* rows, int* cols, int* p, void* buffer) {
  (void)m, (void)n, (void)buffer;
  return coosort(handle, nnz, rows, cols, p, false, "cusparseXcoosortByColumn");
}

PT_EXPORT cusparseStatus_t cusparseXcsrsort_bufferSizeExt(cusparseHandle_t handle, int m, int n,
                                                          int nnz, const int* offsets,
                                                          const int* cols, size_t* bytes) {
  return cusparseXcoosort_bufferSizeExt(handle, m, n, nnz, offsets, cols, bytes);
}

PT_EXPORT cusparseStatus_t cusparseXcsrsort(cusparseHandle_t handle, int m, int n, int nnz,
                                            const cusparseMatDescr_t descr, const int* offsets,
                                            int* cols, int* p, void* buffer) {
  (void)n, (void)buffer;
  const char* api = "cusparseXcsrsort";
  detail::LegacyMatDescr d;
  if (!detail::legacy_mat_descr(descr, &d)) return detail::bad(api, "invalid matrix descriptor");
  if (m < 0 || nnz < 0 || !int_array(offsets, m + 1) || !int_array(cols, nnz) || !int_array(p, nnz))
    return detail::bad(api, "the arrays are not device memory of their size");
  if (detail::backed(offsets, 4LL * (m + 1)) && detail::backed(cols, 4LL * nnz) &&
      detail::backed(p, 4LL * nnz)) {
    for (int i = 0; i < m; ++i) {  // each row's columns sorted, P moved with them
      const int b = offsets[i] - d.base, e = std::min(offsets[i + 1] - d.base, nnz);
      if (b < 0 || e <= b) continue;
      std::vector<int> rows(static_cast<std::size_t>(e - b), i);
      sort_pairs(cols + b, rows.data(), p + b, e - b);
    }
  }
  return index_kernel(handle, api, "csrsort", nnz, sort_flops(nnz), 4LL * (m + 1 + 4 * nnz));
}

namespace {
// cuComplex/cuDoubleComplex share std::complex's layout: the computations use the latter.
template <typename U, typename T>
U* as(T* p) {
  return reinterpret_cast<U*>(p);
}
template <typename U, typename T>
const U* as(const T* p) {
  return reinterpret_cast<const U*>(p);
}
}  // namespace

#define PT_GTSV(P, T, U)                                                                          \
  PT_EXPORT cusparseStatus_t cusparse##P##gtsv2_bufferSizeExt(                                    \
      cusparseHandle_t handle, int m, int n, const T* dl, const T* d, const T* du, const T* B,    \
      int ldb, size_t* bytes) {                                                                   \
    (void)n, (void)dl, (void)d, (void)du, (void)B, (void)ldb;                                     \
    if (detail::live_handle(handle, "cusparse" #P "gtsv2_bufferSizeExt") == nullptr)              \
      return CUSPARSE_STATUS_NOT_INITIALIZED;                                                     \
    if (bytes == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;                                   \
    *bytes = static_cast<size_t>(std::max(m, 1)) * 8;                                             \
    return CUSPARSE_STATUS_SUCCESS;                                                               \
  }                                                                                               \
  PT_EXPORT cusparseStatus_t cusparse##P##gtsv2_nopivot_bufferSizeExt(                            \
      cusparseHandle_t handle, int m, int n, const T* dl, const T* d, const T* du, const T* B,    \
      int ldb, size_t* bytes) {                                                                   \
    return cusparse##P##gtsv2_bufferSizeExt(handle, m, n, dl, d, du, B, ldb, bytes);              \
  }                                                                                               \
  PT_EXPORT cusparseStatus_t cusparse##P##gtsv2(cusparseHandle_t handle, int m, int n,            \
                                                const T* dl, const T* d, const T* du, T* B,       \
                                                int ldb, void* buffer) {                          \
    (void)buffer;                                                                                 \
    return gtsv<U>(handle, m, n, as<U>(dl), as<U>(d), as<U>(du), as<U>(B), ldb, true, m,          \
                   "cusparse" #P "gtsv2");                                                        \
  }                                                                                               \
  PT_EXPORT cusparseStatus_t cusparse##P##gtsv2_nopivot(cusparseHandle_t handle, int m, int n,    \
                                                        const T* dl, const T* d, const T* du,     \
                                                        T* B, int ldb, void* buffer) {            \
    (void)buffer;                                                                                 \
    return gtsv<U>(handle, m, n, as<U>(dl), as<U>(d), as<U>(du), as<U>(B), ldb, false, m,         \
                   "cusparse" #P "gtsv2_nopivot");                                                \
  }                                                                                               \
  PT_EXPORT cusparseStatus_t cusparse##P##gtsv2StridedBatch_bufferSizeExt(                        \
      cusparseHandle_t handle, int m, const T* dl, const T* d, const T* du, const T* x,           \
      int batchCount, int batchStride, size_t* bytes) {                                           \
    (void)dl, (void)d, (void)du, (void)x, (void)batchCount, (void)batchStride;                    \
    if (detail::live_handle(handle, "cusparse" #P "gtsv2StridedBatch_bufferSizeExt") == nullptr)  \
      return CUSPARSE_STATUS_NOT_INITIALIZED;                                                     \
    if (bytes == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;                                   \
    *bytes = static_cast<size_t>(std::max(m, 1)) * 8;                                             \
    return CUSPARSE_STATUS_SUCCESS;                                                               \
  }                                                                                               \
  PT_EXPORT cusparseStatus_t cusparse##P##gtsv2StridedBatch(                                      \
      cusparseHandle_t handle, int m, const T* dl, const T* d, const T* du, T* x, int batchCount, \
      int batchStride, void* buffer) {                                                            \
    (void)buffer;                                                                                 \
    return gtsv<U>(handle, m, batchCount, as<U>(dl), as<U>(d), as<U>(du), as<U>(x), batchStride,  \
                   false, -1, "cusparse" #P "gtsv2StridedBatch");                                 \
  }
PT_GTSV(S, float, float)
PT_GTSV(D, double, double)
PT_GTSV(C, cuComplex, std::complex<float>)
PT_GTSV(Z, cuDoubleComplex, std::complex<double>)
#undef PT_GTSV

PT_EXPORT cusparseStatus_t cusparseLoggerSetCallback(cusparseLoggerCallback_t callback) {
  (void)callback;
  return CUSPARSE_STATUS_SUCCESS;
}
PT_EXPORT cusparseStatus_t cusparseLoggerSetFile(FILE* file) {
  (void)file;
  return CUSPARSE_STATUS_SUCCESS;
}
PT_EXPORT cusparseStatus_t cusparseLoggerOpenFile(const char* log_file) {
  return log_file != nullptr ? CUSPARSE_STATUS_SUCCESS : CUSPARSE_STATUS_INVALID_VALUE;
}
PT_EXPORT cusparseStatus_t cusparseLoggerSetLevel(int level) {
  return level >= 0 && level <= 5 ? CUSPARSE_STATUS_SUCCESS : CUSPARSE_STATUS_INVALID_VALUE;
}
PT_EXPORT cusparseStatus_t cusparseLoggerSetMask(int mask) {
  (void)mask;
  return CUSPARSE_STATUS_SUCCESS;
}
PT_EXPORT cusparseStatus_t cusparseLoggerForceDisable(void) { return CUSPARSE_STATUS_SUCCESS; }

// ----------------------------- Legacy conversions, matrix addition and batched banded solvers, as
// CuPy and the CUDALibrarySamples call them. Each is computed on the host when its arrays are
// backed, and is one `sparse` record with its kernel:
//   nnz / nnz_compress    count the nonzeros (|value| > tol) of a dense matrix or a CSR matrix
//   csr2csr_compress      drops |value| <= tol from a CSR matrix
//   csrgeam2 (+Nnz)       C = alpha·A + beta·B of two CSR matrices: 3 FLOPs per output entry
//   gemvi                 y = alpha·op(A)·x + beta·y with a sparse x: 2 FLOPs per entry read
//   gtsvInterleavedBatch  tridiagonal systems stored interleaved (element i of system k at
//                         i·batch + k): algo 0 Thomas, 1 and 2 with partial pivoting
//   gpsvInterleavedBatch  pentadiagonal systems, interleaved, by banded elimination without
//                         pivoting (cuSPARSE uses QR: the emulator's results need a
//                         diagonally dominant system)
// Results that go to a host-or-device pointer (the nonzero totals) follow the pointer mode.
namespace {

template <typename U>
double magnitude(U v) {
  return static_cast<double>(std::abs(v));
}

template <typename U>
cusparseStatus_t legacy_op(cusparseHandle_t handle, const char* api, const char* what,
                           const char* format, std::int64_t rows, std::int64_t cols,
                           std::int64_t nnz, std::int64_t flops, std::int64_t bytes) {
  const std::int64_t start = powertrain::emu::now_ns();
  const detail::SparseHandle* h = detail::live_handle(handle, api);
  if (h == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  detail::SparseOp op;
  op.api = api, op.what = what, op.format = format;
  op.rows = rows, op.cols = cols, op.nnz = nnz;
  op.dtype = op.compute = value_type<U>();
  op.flops = flops, op.bytes = bytes;
  return detail::run(*h, op, start);
}

// Writes an int result through a host or device pointer, as the handle's pointer mode says.
bool write_total(const detail::SparseHandle& h, int* out, int value) {
  if (out == nullptr) return false;
  if (h.pointer_mode == CUSPARSE_POINTER_MODE_DEVICE) {
    if (!detail::device_array(out, 4)) return false;
    if (detail::backed(out, 4)) *out = value;
    return true;
  }
  *out = value;
  return true;
}

template <typename U>
cusparseStatus_t dense_nnz(cusparseHandle_t handle, cusparseDirection_t dir, int m, int n,
                           const cusparseMatDescr_t descr, const U* a, int lda, int* per,
                           int* total, const char* api) {
  const detail::SparseHandle* h = detail::live_handle(handle, api);
  if (h == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  detail::LegacyMatDescr d;
  if (!detail::legacy_mat_descr(descr, &d)) return detail::bad(api, "invalid matrix descriptor");
  if (m < 0 || n < 0 || lda < std::max(1, m) ||
      (dir != CUSPARSE_DIRECTION_ROW && dir != CUSPARSE_DIRECTION_COLUMN))
    return detail::bad(api, "invalid m, n, lda or direction");
  const std::int64_t span = n > 0 ? (std::int64_t{n} - 1) * lda + m : 0;
  const std::int64_t counts = dir == CUSPARSE_DIRECTION_ROW ? m : n;
  if (!detail::device_array(a, span * std::int64_t{sizeof(U)}) || !int_array(per, counts))
    return detail::bad(api, "A or nnzPerRowCol is not device memory of its size");
  int nonzeros = 0;
  if (detail::backed(a, span * std::int64_t{sizeof(U)}) && detail::backed(per, 4 * counts)) {
    std::fill(per, per + counts, 0);
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < m; ++i) {
        if (a[std::int64_t{j} * lda + i] == U(0)) continue;
        ++per[dir == CUSPARSE_DIRECTION_ROW ? i : j];
        ++nonzeros;
      }
    }
  }
  if (!write_total(*h, total, nonzeros))
    return detail::bad(api, "nnzTotalDevHostPtr is NULL or not device memory in device mode");
  return legacy_op<U>(handle, api, "nnz", "dense", m, n, nonzeros, 0,
                      std::int64_t{m} * n * std::int64_t{sizeof(U)} + 4 * counts);
}

template <typename U>
cusparseStatus_t nnz_compress(cusparseHandle_t handle, int m, const cusparseMatDescr_t descr,
                              const U* values, const int* offsets, int* per_row, int* total, U tol,
                              const char* api) {
  const detail::SparseHandle* h = detail::live_handle(handle, api);
  if (h == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  detail::LegacyMatDescr d;
  if (!detail::legacy_mat_descr(descr, &d)) return detail::bad(api, "invalid matrix descriptor");
  if (m < 0 || !int_array(offsets, m + 1) || !int_array(per_row, m))
    return detail::bad(api, "csrRowPtrA or nnzPerRow is not device memory of its size");
  int kept = 0;
  std::int64_t nnz = 0;
  if (detail::backed(offsets, 4LL * (m + 1))) {
    nnz = std::max<std::int64_t>(0, std::int64_t{offsets[m]} - offsets[0]);
    if (!detail::device_array(values, nnz * std::int64_t{sizeof(U)}))
      return detail::bad(api, "csrSortedValA is not device memory of nnz values");
    if (detail::backed(values, nnz * std::int64_t{sizeof(U)}) && detail::backed(per_row, 4LL * m)) {
      const double threshold = std::real(tol);
      for (int i = 0; i < m; ++i) {
        per_row[i] = 0;
        for (int k = offsets[i] - d.base; k < offsets[i + 1] - d.base; ++k) {
          if (k >= 0 && k < nnz && magnitude(values[k]) > threshold) ++per_row[i];
        }
        kept += per_row[i];
      }
    }
  }
  if (!write_total(*h, total, kept))
    return detail::bad(api, "nnzC is NULL or not device memory in device mode");
  return legacy_op<U>(handle, api, "nnz_compress", "csr", m, 0, nnz, 0,
                      nnz * std::int64_t{sizeof(U)} + 4LL * (2 * m + 1));
}

template <typename U>
cusparseStatus_t csr_compress(cusparseHandle_t handle, int m, int n, const cusparseMatDescr_t descr,
                              const U* values, const int* columns, const int* offsets, int nnz,
                              const int* per_row, U* values_c, int* columns_c, int* offsets_c,
                              U tol, const char* api) {
  if (detail::live_handle(handle, api) == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  detail::LegacyMatDescr d;
  if (!detail::legacy_mat_descr(descr, &d)) return detail::bad(api, "invalid matrix descriptor");
  const std::int64_t v = sizeof(U);
  if (m < 0 || n < 0 || nnz < 0 || !detail::device_array(values, nnz * v) ||
      !int_array(columns, nnz) || !int_array(offsets, m + 1) || !int_array(per_row, m) ||
      !int_array(offsets_c, m + 1))
    return detail::bad(api, "an array of A, nnzPerRow or csrRowPtrC is not device memory");
  std::int64_t kept = 0;
  if (detail::backed(per_row, 4LL * m)) {
    for (int i = 0; i < m; ++i) kept += per_row[i];
  }
  if (!detail::device_array(values_c, kept * v) || !int_array(columns_c, kept))
    return detail::bad(api, "csrValC or csrColIndC is not device memory of sum(nnzPerRow)");
  if (detail::backed(values, nnz * v) && detail::backed(columns, 4LL * nnz) &&
      detail::backed(offsets, 4LL * (m + 1)) && detail::backed(values_c, kept * v) &&
      detail::backed(columns_c, 4LL * kept) && detail::backed(offsets_c, 4LL * (m + 1))) {
    const double threshold = std::real(tol);
    std::int64_t out = 0;
    for (int i = 0; i < m; ++i) {
      offsets_c[i] = static_cast<int>(out) + d.base;
      for (int k = offsets[i] - d.base; k < offsets[i + 1] - d.base; ++k) {
        if (k < 0 || k >= nnz || magnitude(values[k]) <= threshold || out >= kept) continue;
        values_c[out] = values[k], columns_c[out] = columns[k], ++out;
      }
    }
    offsets_c[m] = static_cast<int>(out) + d.base;
  }
  return legacy_op<U>(handle, api, "csr2csr_compress", "csr", m, n, kept, 0,
                      (nnz + kept) * (v + 4) + 4LL * (3 * m + 2));
}

// The merged structure of C = A + B, row by row (sorted columns of both).
struct CsrView {
  const int* offsets = nullptr;
  const int* columns = nullptr;
  int base = 0;
  std::int64_t nnz = 0;
};

bool csr_backed(const CsrView& a, int m) {
  return detail::backed(a.offsets, 4LL * (m + 1)) && detail::backed(a.columns, 4 * a.nnz);
}

// A backed CSR (or BSR: rows and columns in blocks) structure that a computation may walk:
// offsets non-decreasing within [base, nnz + base], column indices within [0, cols) after the
// base. cuSPARSE's results are undefined otherwise; the emulator refuses it instead of reading
// outside the arrays.
bool structure_ok(const int* offsets, const int* columns, std::int64_t rows, std::int64_t cols,
                  std::int64_t nnz, int base) {
  if (offsets[0] != base || offsets[rows] - base > nnz) return false;
  for (std::int64_t i = 0; i < rows; ++i) {
    if (offsets[i + 1] < offsets[i]) return false;
  }
  for (std::int64_t k = 0; k < offsets[rows] - base; ++k) {
    if (columns[k] - base < 0 || columns[k] - base >= cols) return false;
  }
  return true;
}
constexpr const char* kBadStructure =
    "the row offsets or column indices are invalid (offsets must be non-decreasing within "
    "[base, nnz + base], columns within the matrix)";

template <typename Visit>
void merge_rows(const CsrView& a, const CsrView& b, int m, Visit visit) {
  for (int i = 0; i < m; ++i) {
    int ka = a.offsets[i] - a.base, ea = a.offsets[i + 1] - a.base;
    int kb = b.offsets[i] - b.base, eb = b.offsets[i + 1] - b.base;
    while (ka < ea || kb < eb) {
      const int ca = ka < ea ? a.columns[ka] - a.base : INT32_MAX;
      const int cb = kb < eb ? b.columns[kb] - b.base : INT32_MAX;
      const int c = std::min(ca, cb);
      visit(i, c, ca == c ? ka : -1, cb == c ? kb : -1);
      if (ca == c) ++ka;
      if (cb == c) ++kb;
    }
  }
}

cusparseStatus_t geam_structure(cusparseHandle_t handle, int m, int n,
                                const cusparseMatDescr_t descr_a, int nnz_a, const int* offsets_a,
                                const int* columns_a, const cusparseMatDescr_t descr_b, int nnz_b,
                                const int* offsets_b, const int* columns_b,
                                const cusparseMatDescr_t descr_c, int* offsets_c, int* total) {
  const char* api = "cusparseXcsrgeam2Nnz";
  const detail::SparseHandle* h = detail::live_handle(handle, api);
  if (h == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  detail::LegacyMatDescr da, db, dc;
  if (!detail::legacy_mat_descr(descr_a, &da) || !detail::legacy_mat_descr(descr_b, &db) ||
      !detail::legacy_mat_descr(descr_c, &dc))
    return detail::bad(api, "invalid matrix descriptor");
  if (m < 0 || n < 0 || nnz_a < 0 || nnz_b < 0 || !int_array(offsets_a, m + 1) ||
      !int_array(columns_a, nnz_a) || !int_array(offsets_b, m + 1) ||
      !int_array(columns_b, nnz_b) || !int_array(offsets_c, m + 1))
    return detail::bad(api, "an index array of A, B or C is not device memory of its size");
  const CsrView a{offsets_a, columns_a, da.base, nnz_a}, b{offsets_b, columns_b, db.base, nnz_b};
  int nnz_c = 0;
  if (csr_backed(a, m) && csr_backed(b, m) &&
      (!structure_ok(offsets_a, columns_a, m, n, nnz_a, da.base) ||
       !structure_ok(offsets_b, columns_b, m, n, nnz_b, db.base)))
    return detail::bad(api, kBadStructure);
  if (csr_backed(a, m) && csr_backed(b, m) && detail::backed(offsets_c, 4LL * (m + 1))) {
    std::vector<int> per_row(static_cast<std::size_t>(m), 0);
    merge_rows(a, b, m, [&](int i, int, int, int) { ++per_row[static_cast<std::size_t>(i)]; });
    offsets_c[0] = dc.base;
    for (int i = 0; i < m; ++i)
      offsets_c[i + 1] = offsets_c[i] + per_row[static_cast<std::size_t>(i)];
    nnz_c = offsets_c[m] - dc.base;
  }
  if (!write_total(*h, total, nnz_c))
    return detail::bad(api, "nnzTotalDevHostPtr is NULL or not device memory in device mode");
  return index_kernel(handle, api, "csrgeam2_nnz", m, 0,
                      4LL * (nnz_a + nnz_b + 3 * (std::int64_t{m} + 1)));
}

template <typename U>
cusparseStatus_t geam(cusparseHandle_t handle, int m, int n, const U* alpha,
                      const cusparseMatDescr_t descr_a, int nnz_a, const U* values_a,
                      const int* offsets_a, const int* columns_a, const U* beta,
                      const cusparseMatDescr_t descr_b, int nnz_b, const U* values_b,
                      const int* offsets_b, const int* columns_b, const cusparseMatDescr_t descr_c,
                      U* values_c, const int* offsets_c, int* columns_c, const char* api) {
  const detail::SparseHandle* h = detail::live_handle(handle, api);
  if (h == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  detail::LegacyMatDescr da, db, dc;
  if (!detail::legacy_mat_descr(descr_a, &da) || !detail::legacy_mat_descr(descr_b, &db) ||
      !detail::legacy_mat_descr(descr_c, &dc))
    return detail::bad(api, "invalid matrix descriptor");
  const std::int64_t v = sizeof(U);
  if (m < 0 || n < 0 || nnz_a < 0 || nnz_b < 0 || !detail::device_array(values_a, nnz_a * v) ||
      !int_array(offsets_a, m + 1) || !int_array(columns_a, nnz_a) ||
      !detail::device_array(values_b, nnz_b * v) || !int_array(offsets_b, m + 1) ||
      !int_array(columns_b, nnz_b) || !int_array(offsets_c, m + 1))
    return detail::bad(api, "an array of A, B or C is not device memory of its size");
  std::int64_t nnz_c = nnz_a + nnz_b;  // an upper bound until C's offsets can be read
  if (detail::backed(offsets_c, 4LL * (m + 1))) nnz_c = std::int64_t{offsets_c[m]} - offsets_c[0];
  if (nnz_c < 0 || !detail::device_array(values_c, nnz_c * v) || !int_array(columns_c, nnz_c))
    return detail::bad(api, "csrSortedValC or csrSortedColIndC is not device memory of nnz(C)");
  U a_scale{}, b_scale{};
  if (!detail::read_scalar(*h, alpha, &a_scale) || !detail::read_scalar(*h, beta, &b_scale))
    return detail::bad(api, "alpha or beta cannot be read in the handle's pointer mode");
  const CsrView a{offsets_a, columns_a, da.base, nnz_a}, b{offsets_b, columns_b, db.base, nnz_b};
  if (csr_backed(a, m) && csr_backed(b, m) &&
      (!structure_ok(offsets_a, columns_a, m, n, nnz_a, da.base) ||
       !structure_ok(offsets_b, columns_b, m, n, nnz_b, db.base)))
    return detail::bad(api, kBadStructure);
  if (csr_backed(a, m) && csr_backed(b, m) && detail::backed(values_a, nnz_a * v) &&
      detail::backed(values_b, nnz_b * v) && detail::backed(offsets_c, 4LL * (m + 1)) &&
      detail::backed(values_c, nnz_c * v) && detail::backed(columns_c, 4 * nnz_c)) {
    std::int64_t out = 0;
    merge_rows(a, b, m, [&](int, int column, int ka, int kb) {
      if (out >= nnz_c) return;
      U sum(0);
      if (ka >= 0) sum += a_scale * values_a[ka];
      if (kb >= 0) sum += b_scale * values_b[kb];
      values_c[out] = sum, columns_c[out] = column + dc.base, ++out;
    });
  }
  return legacy_op<U>(handle, api, "csrgeam2", "csr", m, n, nnz_c, 3 * nnz_c * flop_scale<U>(),
                      (nnz_a + nnz_b + nnz_c) * (v + 4) + 12LL * (std::int64_t{m} + 1));
}

template <typename U>
cusparseStatus_t gemvi(cusparseHandle_t handle, cusparseOperation_t trans, int m, int n,
                       const U* alpha, const U* a, int lda, int nnz, const U* x_values,
                       const int* x_indices, const U* beta, U* y, cusparseIndexBase_t base,
                       const char* api) {
  const detail::SparseHandle* h = detail::live_handle(handle, api);
  if (h == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  const std::int64_t v = sizeof(U);
  const std::int64_t y_length = trans == CUSPARSE_OPERATION_NON_TRANSPOSE ? m : n;
  if (m < 0 || n < 0 || nnz < 0 || lda < std::max(1, m) ||
      !detail::device_array(a, n > 0 ? ((std::int64_t{n} - 1) * lda + m) * v : 0) ||
      !detail::device_array(x_values, nnz * v) || !int_array(x_indices, nnz) ||
      !detail::device_array(y, y_length * v))
    return detail::bad(api, "invalid sizes, or A, x or y is not device memory of its size");
  U a_scale{}, b_scale{};
  if (!detail::read_scalar(*h, alpha, &a_scale) || !detail::read_scalar(*h, beta, &b_scale))
    return detail::bad(api, "alpha or beta cannot be read in the handle's pointer mode");
  const std::int64_t a_span = n > 0 ? (std::int64_t{n} - 1) * lda + m : 0;
  if (detail::backed(a, a_span * v) && detail::backed(x_values, nnz * v) &&
      detail::backed(x_indices, 4LL * nnz) && detail::backed(y, y_length * v)) {
    const int b = base == CUSPARSE_INDEX_BASE_ONE ? 1 : 0;
    std::vector<U> result(static_cast<std::size_t>(y_length), U(0));
    for (int k = 0; k < nnz; ++k) {
      const int j = x_indices[k] - b;  // x's entry: column j of A (N) or row j (T/C)
      if (trans == CUSPARSE_OPERATION_NON_TRANSPOSE) {
        if (j < 0 || j >= n) continue;
        for (int i = 0; i < m; ++i)
          result[static_cast<std::size_t>(i)] += a[std::int64_t{j} * lda + i] * x_values[k];
      } else {
        if (j < 0 || j >= m) continue;
        for (int c = 0; c < n; ++c) {
          U entry = a[std::int64_t{c} * lda + j];
          if constexpr (!std::is_floating_point_v<U>) {
            if (trans == CUSPARSE_OPERATION_CONJUGATE_TRANSPOSE) entry = std::conj(entry);
          }
          result[static_cast<std::size_t>(c)] += entry * x_values[k];
        }
      }
    }
    // With beta 0, y is output only: cuSPARSE does not read it (it may hold NaN).
    for (std::int64_t i = 0; i < y_length; ++i)
      y[i] =
          a_scale * result[static_cast<std::size_t>(i)] + (b_scale == U(0) ? U(0) : b_scale * y[i]);
  }
  const std::int64_t entries = nnz * (trans == CUSPARSE_OPERATION_NON_TRANSPOSE ? m : n);
  return legacy_op<U>(handle, api, "gemvi", "dense", m, n, nnz, 2 * entries * flop_scale<U>(),
                      (entries + nnz + 2 * y_length) * v + 4LL * nnz);
}

template <typename U>
cusparseStatus_t interleaved_batch(cusparseHandle_t handle, int algo, int m, U* ds, U* dl, U* d,
                                   U* du, U* dw, U* x, int batch, const char* api) {
  if (detail::live_handle(handle, api) == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  const bool penta = ds != nullptr || dw != nullptr;
  if (m < 3 || batch < 0 || algo < 0 || algo > (penta ? 0 : 2))
    return detail::bad(
        api, "m below 3, a negative batchCount or an unknown algo " + std::to_string(algo));
  const std::int64_t span = std::int64_t{m} * batch * std::int64_t{sizeof(U)};
  for (const U* array : {static_cast<const U*>(dl), static_cast<const U*>(d),
                         static_cast<const U*>(du), static_cast<const U*>(x)}) {
    if (!detail::device_array(array, span))
      return detail::bad(api, "a diagonal or x is not device memory of m x batchCount values");
  }
  if (penta && (!detail::device_array(ds, span) || !detail::device_array(dw, span)))
    return detail::bad(api, "ds or dw is not device memory of m x batchCount values");
  bool all_backed = detail::backed(dl, span) && detail::backed(d, span) &&
                    detail::backed(du, span) && detail::backed(x, span);
  if (penta) all_backed = all_backed && detail::backed(ds, span) && detail::backed(dw, span);
  if (all_backed) {
    const auto size = static_cast<std::size_t>(m);
    std::vector<U> e2(size), e1(size), e0(size), f1(size), f2(size), rhs(size);
    for (int k = 0; k < batch; ++k) {
      for (int i = 0; i < m; ++i) {
        const std::int64_t at = std::int64_t{i} * batch + k;
        e2[i] = penta ? ds[at] : U(0), e1[i] = dl[at], e0[i] = d[at], f1[i] = du[at];
        f2[i] = penta ? dw[at] : U(0), rhs[i] = x[at];
      }
      if (!penta) {
        tridiagonal_solve(m, e1.data(), e0.data(), f1.data(), rhs.data(), 1, m, algo != 0);
      } else {  // banded elimination: two sub-diagonals removed row by row, then back-substitution
        for (int i = 0; i < m; ++i) {
          for (int r = i + 1; r <= std::min(i + 2, m - 1); ++r) {
            U& lower =
                r == i + 1 ? e1[static_cast<std::size_t>(r)] : e2[static_cast<std::size_t>(r)];
            if (e0[static_cast<std::size_t>(i)] == U(0)) continue;
            const U factor = lower / e0[static_cast<std::size_t>(i)];
            if (r == i + 1) {
              e0[static_cast<std::size_t>(r)] -= factor * f1[static_cast<std::size_t>(i)];
              f1[static_cast<std::size_t>(r)] -= factor * f2[static_cast<std::size_t>(i)];
            } else {
              e1[static_cast<std::size_t>(r)] -= factor * f1[static_cast<std::size_t>(i)];
              e0[static_cast<std::size_t>(r)] -= factor * f2[static_cast<std::size_t>(i)];
            }
            rhs[static_cast<std::size_t>(r)] -= factor * rhs[static_cast<std::size_t>(i)];
            lower = U(0);
          }
        }
        for (int i = m - 1; i >= 0; --i) {
          const auto s = static_cast<std::size_t>(i);
          U sum = rhs[s];
          if (i + 1 < m) sum -= f1[s] * rhs[s + 1];
          if (i + 2 < m) sum -= f2[s] * rhs[s + 2];
          rhs[s] = e0[s] != U(0) ? sum / e0[s] : U(0);
        }
      }
      for (int i = 0; i < m; ++i) x[std::int64_t{i} * batch + k] = rhs[static_cast<std::size_t>(i)];
    }
  }
  const std::int64_t diagonals = penta ? 5 : 3;
  return index_kernel(handle, api, penta ? "gpsv_interleaved" : "gtsv_interleaved", m,
                      detail::mul(detail::mul((penta ? 14 : 8) * flop_scale<U>(), m), batch),
                      detail::mul(detail::mul(diagonals + 2, m), detail::mul(batch, sizeof(U))),
                      value_type<U>());
}
}  // namespace

PT_EXPORT cusparseStatus_t cusparseXcsrgeam2Nnz(cusparseHandle_t handle, int m, int n,
                                                const cusparseMatDescr_t descr_a, int nnz_a,
                                                const int* offsets_a, const int* columns_a,
                                                const cusparseMatDescr_t descr_b, int nnz_b,
                                                const int* offsets_b, const int* columns_b,
                                                const cusparseMatDescr_t descr_c, int* offsets_c,
                                                int* total, void* workspace) {
  (void)workspace;
  return geam_structure(handle, m, n, descr_a, nnz_a, offsets_a, columns_a, descr_b, nnz_b,
                        offsets_b, columns_b, descr_c, offsets_c, total);
}

#define PT_SPARSE_LEGACY(P, T, U)                                                                  \
  PT_EXPORT cusparseStatus_t cusparse##P##nnz(cusparseHandle_t handle, cusparseDirection_t dir,    \
                                              int m, int n, const cusparseMatDescr_t descr,        \
                                              const T* a, int lda, int* per, int* total) {         \
    return dense_nnz<U>(handle, dir, m, n, descr, as<U>(a), lda, per, total, "cusparse" #P "nnz"); \
  }                                                                                                \
  PT_EXPORT cusparseStatus_t cusparse##P##nnz_compress(                                            \
      cusparseHandle_t handle, int m, const cusparseMatDescr_t descr, const T* values,             \
      const int* offsets, int* per_row, int* total, T tol) {                                       \
    return nnz_compress<U>(handle, m, descr, as<U>(values), offsets, per_row, total, *as<U>(&tol), \
                           "cusparse" #P "nnz_compress");                                          \
  }                                                                                                \
  PT_EXPORT cusparseStatus_t cusparse##P##csr2csr_compress(                                        \
      cusparseHandle_t handle, int m, int n, const cusparseMatDescr_t descr, const T* values,      \
      const int* columns, const int* offsets, int nnz, const int* per_row, T* values_c,            \
      int* columns_c, int* offsets_c, T tol) {                                                     \
    return csr_compress<U>(handle, m, n, descr, as<U>(values), columns, offsets, nnz, per_row,     \
                           as<U>(values_c), columns_c, offsets_c, *as<U>(&tol),                    \
                           "cusparse" #P "csr2csr_compress");                                      \
  }                                                                                                \
  PT_EXPORT cusparseStatus_t cusparse##P##csrgeam2_bufferSizeExt(                                  \
      cusparseHandle_t handle, int m, int n, const T* alpha, const cusparseMatDescr_t descr_a,     \
      int nnz_a, const T* values_a, const int* offsets_a, const int* columns_a, const T* beta,     \
      const cusparseMatDescr_t descr_b, int nnz_b, const T* values_b, const int* offsets_b,        \
      const int* columns_b, const cusparseMatDescr_t descr_c, const T* values_c,                   \
      const int* offsets_c, const int* columns_c, size_t* bytes) {                                 \
    (void)n, (void)alpha, (void)descr_a, (void)nnz_a, (void)values_a, (void)offsets_a,             \
        (void)columns_a, (void)beta, (void)descr_b, (void)nnz_b, (void)values_b, (void)offsets_b,  \
        (void)columns_b, (void)descr_c, (void)values_c, (void)offsets_c, (void)columns_c;          \
    if (detail::live_handle(handle, "cusparse" #P "csrgeam2_bufferSizeExt") == nullptr)            \
      return CUSPARSE_STATUS_NOT_INITIALIZED;                                                      \
    if (bytes == nullptr || m < 0)                                                                 \
      return detail::bad("cusparse" #P "csrgeam2_bufferSizeExt", "NULL size or negative m");       \
    *bytes = (static_cast<size_t>(m) + 1) * sizeof(int); /* the emulator's row scratch */          \
    return CUSPARSE_STATUS_SUCCESS;                                                                \
  }                                                                                                \
  PT_EXPORT cusparseStatus_t cusparse##P##csrgeam2(                                                \
      cusparseHandle_t handle, int m, int n, const T* alpha, const cusparseMatDescr_t descr_a,     \
      int nnz_a, const T* values_a, const int* offsets_a, const int* columns_a, const T* beta,     \
      const cusparseMatDescr_t descr_b, int nnz_b, const T* values_b, const int* offsets_b,        \
      const int* columns_b, const cusparseMatDescr_t descr_c, T* values_c, int* offsets_c,         \
      int* columns_c, void* buffer) {                                                              \
    (void)buffer;                                                                                  \
    return geam<U>(handle, m, n, as<U>(alpha), descr_a, nnz_a, as<U>(values_a), offsets_a,         \
                   columns_a, as<U>(beta), descr_b, nnz_b, as<U>(values_b), offsets_b, columns_b,  \
                   descr_c, as<U>(values_c), offsets_c, columns_c, "cusparse" #P "csrgeam2");      \
  }                                                                                                \
  PT_EXPORT cusparseStatus_t cusparse##P##gemvi_bufferSize(                                        \
      cusparseHandle_t handle, cusparseOperation_t trans, int m, int n, int nnz, int* bytes) {     \
    (void)trans, (void)n, (void)nnz;                                                               \
    if (detail::live_handle(handle, "cusparse" #P "gemvi_bufferSize") == nullptr)                  \
      return CUSPARSE_STATUS_NOT_INITIALIZED;                                                      \
    if (bytes == nullptr) return detail::bad("cusparse" #P "gemvi_bufferSize", "NULL size");       \
    *bytes = std::max(m, 1) * static_cast<int>(sizeof(T));                                         \
    return CUSPARSE_STATUS_SUCCESS;                                                                \
  }                                                                                                \
  PT_EXPORT cusparseStatus_t cusparse##P##gemvi(                                                   \
      cusparseHandle_t handle, cusparseOperation_t trans, int m, int n, const T* alpha,            \
      const T* a, int lda, int nnz, const T* x_values, const int* x_indices, const T* beta, T* y,  \
      cusparseIndexBase_t base, void* buffer) {                                                    \
    (void)buffer;                                                                                  \
    return gemvi<U>(handle, trans, m, n, as<U>(alpha), as<U>(a), lda, nnz, as<U>(x_values),        \
                    x_indices, as<U>(beta), as<U>(y), base, "cusparse" #P "gemvi");                \
  }                                                                                                \
  PT_EXPORT cusparseStatus_t cusparse##P##gtsvInterleavedBatch_bufferSizeExt(                      \
      cusparseHandle_t handle, int algo, int m, const T* dl, const T* d, const T* du, const T* x,  \
      int batch, size_t* bytes) {                                                                  \
    (void)algo, (void)dl, (void)d, (void)du, (void)x;                                              \
    if (detail::live_handle(handle, "cusparse" #P "gtsvInterleavedBatch_bufferSizeExt") ==         \
        nullptr)                                                                                   \
      return CUSPARSE_STATUS_NOT_INITIALIZED;                                                      \
    if (bytes == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;                                    \
    *bytes = static_cast<size_t>(std::max(m, 1)) * std::max(batch, 1) * sizeof(T);                 \
    return CUSPARSE_STATUS_SUCCESS;                                                                \
  }                                                                                                \
  PT_EXPORT cusparseStatus_t cusparse##P##gtsvInterleavedBatch(cusparseHandle_t handle, int algo,  \
                                                               int m, T* dl, T* d, T* du, T* x,    \
                                                               int batch, void* buffer) {          \
    (void)buffer;                                                                                  \
    return interleaved_batch<U>(handle, algo, m, nullptr, as<U>(dl), as<U>(d), as<U>(du), nullptr, \
                                as<U>(x), batch, "cusparse" #P "gtsvInterleavedBatch");            \
  }                                                                                                \
  PT_EXPORT cusparseStatus_t cusparse##P##gpsvInterleavedBatch_bufferSizeExt(                      \
      cusparseHandle_t handle, int algo, int m, const T* ds, const T* dl, const T* d, const T* du, \
      const T* dw, const T* x, int batch, size_t* bytes) {                                         \
    (void)algo, (void)ds, (void)dl, (void)d, (void)du, (void)dw, (void)x;                          \
    if (detail::live_handle(handle, "cusparse" #P "gpsvInterleavedBatch_bufferSizeExt") ==         \
        nullptr)                                                                                   \
      return CUSPARSE_STATUS_NOT_INITIALIZED;                                                      \
    if (bytes == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;                                    \
    *bytes = static_cast<size_t>(std::max(m, 1)) * std::max(batch, 1) * sizeof(T);                 \
    return CUSPARSE_STATUS_SUCCESS;                                                                \
  }                                                                                                \
  PT_EXPORT cusparseStatus_t cusparse##P##gpsvInterleavedBatch(                                    \
      cusparseHandle_t handle, int algo, int m, T* ds, T* dl, T* d, T* du, T* dw, T* x, int batch, \
      void* buffer) {                                                                              \
    (void)buffer;                                                                                  \
    return interleaved_batch<U>(handle, algo, m, as<U>(ds), as<U>(dl), as<U>(d), as<U>(du),        \
                                as<U>(dw), as<U>(x), batch, "cusparse" #P "gpsvInterleavedBatch"); \
  }
PT_SPARSE_LEGACY(S, float, float)
PT_SPARSE_LEGACY(D, double, double)
PT_SPARSE_LEGACY(C, cuComplex, std::complex<float>)
PT_SPARSE_LEGACY(Z, cuDoubleComplex, std::complex<double>)
#undef PT_SPARSE_LEGACY

// ----------------------------- SpMMOp (custom add/multiply/epilogue operators given as NVVM LTO
// buffers) and the generic Givens rotation. The emulator cannot run the operators: SpMMOp is
// recorded as the SpMM it generalizes (2 FLOPs per product, A, B and C moved), with its own
// `spmm_op` kernel; the plan keeps the operands and is checked when it is executed. cusparseRot
// (x = c·x + s·y, y = c·y − s·x on x's pattern) is 6 FLOPs per stored entry of x.
namespace {
struct SpMMOpPlan {
  cusparseHandle_t handle = nullptr;
  cusparseOperation_t op_a = CUSPARSE_OPERATION_NON_TRANSPOSE;
  cusparseOperation_t op_b = CUSPARSE_OPERATION_NON_TRANSPOSE;
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;
  cudaDataType compute = CUDA_R_32F;
};
}  // namespace

PT_EXPORT cusparseStatus_t cusparseSpMMOp_createPlan(
    cusparseHandle_t handle, cusparseSpMMOpPlan_t* plan, cusparseOperation_t op_a,
    cusparseOperation_t op_b, cusparseConstSpMatDescr_t mat_a, cusparseConstDnMatDescr_t mat_b,
    cusparseDnMatDescr_t mat_c, cudaDataType compute, cusparseSpMMOpAlg_t alg,
    const void* add_buffer, size_t add_bytes, const void* mul_buffer, size_t mul_bytes,
    const void* epilogue_buffer, size_t epilogue_bytes, size_t* workspace_bytes) {
  const char* api = "cusparseSpMMOp_createPlan";
  if (alg != CUSPARSE_SPMM_OP_ALG_DEFAULT) return detail::bad(api, "unknown alg");
  if (add_buffer == nullptr || add_bytes == 0 || mul_buffer == nullptr || mul_bytes == 0 ||
      epilogue_buffer == nullptr || epilogue_bytes == 0 || workspace_bytes == nullptr)
    return detail::bad(api,
                       "the add, multiply and epilogue NVVM buffers and the workspace size "
                       "are required");
  const cusparseStatus_t st =
      detail::spmm(handle, op_a, op_b, mat_a, mat_b, mat_c, compute, false, "spmm_op", api);
  if (st != CUSPARSE_STATUS_SUCCESS) return st;
  *workspace_bytes = 0;
  return detail::create(sparse().spmm_op_plans, plan,
                        SpMMOpPlan{handle, op_a, op_b, mat_a, mat_b, mat_c, compute}, api);
}

PT_EXPORT cusparseStatus_t cusparseSpMMOp(cusparseSpMMOpPlan_t plan, void* workspace) {
  (void)workspace;
  const char* api = "cusparseSpMMOp";
  const auto* p = detail::live<SpMMOpPlan>(sparse().spmm_op_plans, plan);
  if (p == nullptr)
    return detail::bad(api, "invalid or destroyed plan " + detail::pointer_text(plan));
  return detail::spmm(p->handle, p->op_a, p->op_b, p->a, p->b, p->c, p->compute, true, "spmm_op",
                      api);
}

PT_EXPORT cusparseStatus_t cusparseSpMMOp_destroyPlan(cusparseSpMMOpPlan_t plan) {
  return detail::destroy<SpMMOpPlan>(sparse().spmm_op_plans, plan, "cusparseSpMMOp_destroyPlan");
}

PT_EXPORT cusparseStatus_t cusparseRot(cusparseHandle_t handle, const void* c_coeff,
                                       const void* s_coeff, cusparseSpVecDescr_t vec_x,
                                       cusparseDnVecDescr_t vec_y) {
  const char* api = "cusparseRot";
  const std::int64_t start = powertrain::emu::now_ns();
  if (c_coeff == nullptr || s_coeff == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  VecPair v;
  const cusparseStatus_t s = vec_pair(handle, vec_x, vec_y, api, &v);
  if (s != CUSPARSE_STATUS_SUCCESS) return s;
  detail::SparseOp op = vector_op(api, "rot", *v.x);
  op.flops = detail::mul(6, v.x->nnz);
  // x's values and indices read, x's values written; y read and written at x's pattern.
  op.bytes = detail::add(
      detail::mul(v.x->nnz, v.x->index_bytes + 2 * detail::value_bytes(v.x->value_type)),
      detail::mul(2 * v.x->nnz, detail::value_bytes(v.y->value_type)));
  return detail::run(*v.h, op, start);
}

// ----------------------------- Block sparse row (BSR) conversions and products, computed where
// backed: Xcsr2bsrNnz (the block rows' distinct block columns), csr2bsr (dense blockDim² blocks,
// row- or column-major inside a block as dirA says), bsr2csr (every entry of every block, so
// nnz = nnzb·blockDim² as cuSPARSE produces), bsrmv (y = α·A·x + β·y) and bsrmm (C = α·A·op(B) +
// β·C; A not transposed, as cuSPARSE requires). Products count 2 FLOPs per stored block entry
// (× the dense columns for bsrmm) and move the blocks, their indices and the dense operands.
namespace {

struct BsrView {
  const int* offsets = nullptr;
  const int* columns = nullptr;
  int base = 0;
};

// Block (r, c) entry (i, j)'s offset inside a block's values.
std::int64_t in_block(cusparseDirection_t dir, int block, int i, int j) {
  return dir == CUSPARSE_DIRECTION_ROW ? std::int64_t{i} * block + j : std::int64_t{j} * block + i;
}

cusparseStatus_t csr2bsr_structure(cusparseHandle_t handle, cusparseDirection_t dir, int m, int n,
                                   const cusparseMatDescr_t descr_a, const int* offsets,
                                   const int* columns, int block, const cusparseMatDescr_t descr_c,
                                   int* bsr_offsets, int* total) {
  (void)dir;
  const char* api = "cusparseXcsr2bsrNnz";
  const detail::SparseHandle* h = detail::live_handle(handle, api);
  if (h == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  detail::LegacyMatDescr da, dc;
  if (!detail::legacy_mat_descr(descr_a, &da) || !detail::legacy_mat_descr(descr_c, &dc))
    return detail::bad(api, "invalid matrix descriptor");
  if (m < 0 || n < 0 || block <= 0) return detail::bad(api, "invalid m, n or blockDim");
  const int mb = (m + block - 1) / block;
  if (!int_array(offsets, m + 1) || !int_array(bsr_offsets, mb + 1))
    return detail::bad(api, "csrRowPtrA or bsrRowPtrC is not device memory of its size");
  int nnzb = 0;
  if (detail::backed(offsets, 4LL * (m + 1)) && detail::backed(bsr_offsets, 4LL * (mb + 1))) {
    const std::int64_t nnz = std::int64_t{offsets[m]} - offsets[0];
    if (nnz < 0 || !int_array(columns, nnz))
      return detail::bad(api, "csrColIndA is not device memory of nnz");
    if (detail::backed(columns, 4 * nnz) && !structure_ok(offsets, columns, m, n, nnz, da.base))
      return detail::bad(api, kBadStructure);
    if (detail::backed(columns, 4 * nnz)) {
      bsr_offsets[0] = dc.base;
      std::vector<int> seen(static_cast<std::size_t>((n + block - 1) / block), -1);
      for (int br = 0; br < mb; ++br) {
        int count = 0;
        for (int i = br * block; i < std::min(m, (br + 1) * block); ++i) {
          for (int k = offsets[i] - da.base; k < offsets[i + 1] - da.base; ++k) {
            const int bc = (columns[k] - da.base) / block;
            if (bc < 0 || bc >= static_cast<int>(seen.size()) ||
                seen[static_cast<std::size_t>(bc)] == br)
              continue;
            seen[static_cast<std::size_t>(bc)] = br;
            ++count;
          }
        }
        bsr_offsets[br + 1] = bsr_offsets[br] + count;
      }
      nnzb = bsr_offsets[mb] - dc.base;
    }
  }
  if (!write_total(*h, total, nnzb))
    return detail::bad(api, "nnzTotalDevHostPtr is NULL or not device memory in device mode");
  return index_kernel(handle, api, "csr2bsr_nnz", m, 0, 4LL * (2 * (m + 1) + mb + 1));
}

template <typename U>
cusparseStatus_t csr2bsr(cusparseHandle_t handle, cusparseDirection_t dir, int m, int n,
                         const cusparseMatDescr_t descr_a, const U* values, const int* offsets,
                         const int* columns, int block, const cusparseMatDescr_t descr_c,
                         U* bsr_values, const int* bsr_offsets, int* bsr_columns, const char* api) {
  if (detail::live_handle(handle, api) == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  detail::LegacyMatDescr da, dc;
  if (!detail::legacy_mat_descr(descr_a, &da) || !detail::legacy_mat_descr(descr_c, &dc))
    return detail::bad(api, "invalid matrix descriptor");
  if (m < 0 || n < 0 || block <= 0) return detail::bad(api, "invalid m, n or blockDim");
  const int mb = (m + block - 1) / block;
  const std::int64_t v = sizeof(U), b2 = std::int64_t{block} * block;
  if (!int_array(offsets, m + 1) || !int_array(bsr_offsets, mb + 1))
    return detail::bad(api, "the row offsets are not device memory of their size");
  std::int64_t nnz = 0, nnzb = 0;
  if (detail::backed(offsets, 4LL * (m + 1))) nnz = std::int64_t{offsets[m]} - offsets[0];
  if (detail::backed(bsr_offsets, 4LL * (mb + 1)))
    nnzb = std::int64_t{bsr_offsets[mb]} - bsr_offsets[0];
  if (!detail::device_array(values, nnz * v) || !int_array(columns, nnz) ||
      !detail::device_array(bsr_values, nnzb * b2 * v) || !int_array(bsr_columns, nnzb))
    return detail::bad(api, "the CSR or BSR arrays are not device memory of their sizes");
  if (nnz < 0 || nnzb < 0) return detail::bad(api, kBadStructure);
  const bool computable =
      detail::backed(offsets, 4LL * (m + 1)) && detail::backed(bsr_offsets, 4LL * (mb + 1)) &&
      detail::backed(values, nnz * v) && detail::backed(columns, 4 * nnz) &&
      detail::backed(bsr_values, nnzb * b2 * v) && detail::backed(bsr_columns, 4 * nnzb) && nnz > 0;
  if (computable && !structure_ok(offsets, columns, m, n, nnz, da.base))
    return detail::bad(api, kBadStructure);
  if (computable) {
    std::fill(bsr_values, bsr_values + nnzb * b2, U(0));
    for (int br = 0; br < mb; ++br) {
      // The block row's sorted block columns, then each entry into its block.
      std::vector<int> block_columns;
      for (int i = br * block; i < std::min(m, (br + 1) * block); ++i) {
        for (int k = offsets[i] - da.base; k < offsets[i + 1] - da.base; ++k)
          block_columns.push_back((columns[k] - da.base) / block);
      }
      std::sort(block_columns.begin(), block_columns.end());
      block_columns.erase(std::unique(block_columns.begin(), block_columns.end()),
                          block_columns.end());
      const std::int64_t first = std::int64_t{bsr_offsets[br]} - dc.base;
      for (std::size_t q = 0;
           q < block_columns.size() && first + static_cast<std::int64_t>(q) < nnzb; ++q)
        bsr_columns[first + static_cast<std::int64_t>(q)] = block_columns[q] + dc.base;
      for (int i = br * block; i < std::min(m, (br + 1) * block); ++i) {
        for (int k = offsets[i] - da.base; k < offsets[i + 1] - da.base; ++k) {
          const int c = columns[k] - da.base;
          const auto q = std::lower_bound(block_columns.begin(), block_columns.end(), c / block) -
                         block_columns.begin();
          const std::int64_t slot = first + q;
          if (slot < nnzb)
            bsr_values[slot * b2 + in_block(dir, block, i - br * block, c % block)] = values[k];
        }
      }
    }
  }
  return legacy_op<U>(handle, api, "csr2bsr", "bsr", mb, (n + block - 1) / block, nnzb, 0,
                      nnz * (v + 4) + nnzb * (b2 * v + 4) + 4LL * (m + mb + 2));
}

template <typename U>
cusparseStatus_t bsr2csr(cusparseHandle_t handle, cusparseDirection_t dir, int mb, int nb,
                         const cusparseMatDescr_t descr_a, const U* bsr_values,
                         const int* bsr_offsets, const int* bsr_columns, int block,
                         const cusparseMatDescr_t descr_c, U* values, int* offsets, int* columns,
                         const char* api) {
  if (detail::live_handle(handle, api) == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  detail::LegacyMatDescr da, dc;
  if (!detail::legacy_mat_descr(descr_a, &da) || !detail::legacy_mat_descr(descr_c, &dc))
    return detail::bad(api, "invalid matrix descriptor");
  if (mb < 0 || nb < 0 || block <= 0) return detail::bad(api, "invalid mb, nb or blockDim");
  const std::int64_t v = sizeof(U), b2 = std::int64_t{block} * block;
  const std::int64_t m = std::int64_t{mb} * block;
  if (!int_array(bsr_offsets, mb + 1) || !int_array(offsets, m + 1))
    return detail::bad(api, "the row offsets are not device memory of their size");
  std::int64_t nnzb = 0;
  if (detail::backed(bsr_offsets, 4LL * (mb + 1)))
    nnzb = std::int64_t{bsr_offsets[mb]} - bsr_offsets[0];
  const std::int64_t nnz = nnzb * b2;
  if (!detail::device_array(bsr_values, nnz * v) || !int_array(bsr_columns, nnzb) ||
      !detail::device_array(values, nnz * v) || !int_array(columns, nnz))
    return detail::bad(api, "the BSR or CSR arrays are not device memory of their sizes");
  if (nnzb < 0) return detail::bad(api, kBadStructure);
  const bool computable =
      detail::backed(bsr_offsets, 4LL * (mb + 1)) && detail::backed(bsr_values, nnz * v) &&
      detail::backed(bsr_columns, 4 * nnzb) && detail::backed(values, nnz * v) &&
      detail::backed(columns, 4 * nnz) && detail::backed(offsets, 4 * (m + 1));
  if (computable && !structure_ok(bsr_offsets, bsr_columns, mb, nb, nnzb, da.base))
    return detail::bad(api, kBadStructure);
  if (computable) {
    std::int64_t out = 0;
    for (int br = 0; br < mb; ++br) {
      const int first = bsr_offsets[br] - da.base, last = bsr_offsets[br + 1] - da.base;
      for (int i = 0; i < block; ++i) {
        offsets[std::int64_t{br} * block + i] = static_cast<int>(out) + dc.base;
        for (int q = first; q < last; ++q) {
          const int bc = bsr_columns[q] - da.base;
          for (int j = 0; j < block && out < nnz; ++j, ++out) {
            values[out] = bsr_values[std::int64_t{q} * b2 + in_block(dir, block, i, j)];
            columns[out] = bc * block + j + dc.base;
          }
        }
      }
    }
    offsets[m] = static_cast<int>(out) + dc.base;
  }
  return legacy_op<U>(handle, api, "bsr2csr", "bsr", mb, nb, nnzb, 0,
                      2 * nnz * v + (nnz + nnzb) * 4 + 4LL * (m + mb + 2));
}

template <typename U>
cusparseStatus_t bsrmm(cusparseHandle_t handle, cusparseDirection_t dir,
                       cusparseOperation_t trans_a, cusparseOperation_t trans_b, int mb, int n,
                       int kb, int nnzb, const U* alpha, const cusparseMatDescr_t descr,
                       const U* values, const int* offsets, const int* columns, int block,
                       const U* b, int ldb, const U* beta, U* c, int ldc, bool vector,
                       const char* api) {
  const detail::SparseHandle* h = detail::live_handle(handle, api);
  if (h == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  detail::LegacyMatDescr d;
  if (!detail::legacy_mat_descr(descr, &d)) return detail::bad(api, "invalid matrix descriptor");
  if (trans_a != CUSPARSE_OPERATION_NON_TRANSPOSE)
    return detail::bad(api, "only CUSPARSE_OPERATION_NON_TRANSPOSE is supported for A");
  const std::int64_t m = std::int64_t{mb} * block, k = std::int64_t{kb} * block;
  const bool b_transposed = trans_b != CUSPARSE_OPERATION_NON_TRANSPOSE;
  if (mb < 0 || kb < 0 || n < 0 || nnzb < 0 || block <= 0 ||
      (!vector && (ldb < (b_transposed ? n : k) || ldc < m)))
    return detail::bad(api, "invalid sizes or leading dimensions");
  const std::int64_t v = sizeof(U), b2 = std::int64_t{block} * block;
  const std::int64_t b_span = vector ? k : (b_transposed ? (k - 1) * ldb + n : (n - 1) * ldb + k);
  const std::int64_t c_span = vector ? m : (n - 1) * std::int64_t{ldc} + m;
  if (!detail::device_array(values, nnzb * b2 * v) || !int_array(offsets, mb + 1) ||
      !int_array(columns, nnzb) || !detail::device_array(b, (n > 0 ? b_span : 0) * v) ||
      !detail::device_array(c, (n > 0 ? c_span : 0) * v))
    return detail::bad(api, "A, B/x or C/y is not device memory of its size");
  U a_scale{}, b_scale{};
  if (!detail::read_scalar(*h, alpha, &a_scale) || !detail::read_scalar(*h, beta, &b_scale))
    return detail::bad(api, "alpha or beta cannot be read in the handle's pointer mode");
  const bool computable = n > 0 && detail::backed(values, nnzb * b2 * v) &&
                          detail::backed(offsets, 4LL * (mb + 1)) &&
                          detail::backed(columns, 4LL * nnzb) && detail::backed(b, b_span * v) &&
                          detail::backed(c, c_span * v);
  if (computable && !structure_ok(offsets, columns, mb, kb, nnzb, d.base))
    return detail::bad(api, kBadStructure);
  if (computable) {
    const std::int64_t ldc_used = vector ? m : ldc;
    const auto b_at = [&](std::int64_t row, std::int64_t col) {
      return vector ? b[row] : b_transposed ? b[row * ldb + col] : b[col * ldb + row];
    };
    for (std::int64_t col = 0; col < n; ++col) {
      for (int br = 0; br < mb; ++br) {
        for (int i = 0; i < block; ++i) {
          U sum(0);
          for (int q = offsets[br] - d.base; q < offsets[br + 1] - d.base; ++q) {
            const std::int64_t bc = columns[q] - d.base;
            for (int j = 0; j < block; ++j)
              sum += values[q * b2 + in_block(dir, block, i, j)] * b_at(bc * block + j, col);
          }
          U& out = c[col * ldc_used + std::int64_t{br} * block + i];
          out = a_scale * sum + (b_scale == U(0) ? U(0) : b_scale * out);  // beta 0: C not read
        }
      }
    }
  }
  const std::int64_t flops = 2 * nnzb * b2 * std::max(n, 1) * flop_scale<U>();
  const std::int64_t bytes =
      nnzb * (b2 * v + 4) + 4LL * (mb + 1) + (k + 2 * m) * std::max(n, 1) * v;
  return legacy_op<U>(handle, api, vector ? "bsrmv" : "bsrmm", "bsr", mb, kb, nnzb, flops, bytes);
}
}  // namespace

PT_EXPORT cusparseStatus_t cusparseXcsr2bsrNnz(cusparseHandle_t handle, cusparseDirection_t dir,
                                               int m, int n, const cusparseMatDescr_t descr_a,
                                               const int* offsets, const int* columns, int block,
                                               const cusparseMatDescr_t descr_c, int* bsr_offsets,
                                               int* total) {
  return csr2bsr_structure(handle, dir, m, n, descr_a, offsets, columns, block, descr_c,
                           bsr_offsets, total);
}

#define PT_SPARSE_BSR(P, T, U)                                                                     \
  PT_EXPORT cusparseStatus_t cusparse##P##csr2bsr(                                                 \
      cusparseHandle_t handle, cusparseDirection_t dir, int m, int n,                              \
      const cusparseMatDescr_t descr_a, const T* values, const int* offsets, const int* columns,   \
      int block, const cusparseMatDescr_t descr_c, T* bsr_values, int* bsr_offsets,                \
      int* bsr_columns) {                                                                          \
    return csr2bsr<U>(handle, dir, m, n, descr_a, as<U>(values), offsets, columns, block, descr_c, \
                      as<U>(bsr_values), bsr_offsets, bsr_columns, "cusparse" #P "csr2bsr");       \
  }                                                                                                \
  PT_EXPORT cusparseStatus_t cusparse##P##bsr2csr(                                                 \
      cusparseHandle_t handle, cusparseDirection_t dir, int mb, int nb,                            \
      const cusparseMatDescr_t descr_a, const T* bsr_values, const int* bsr_offsets,               \
      const int* bsr_columns, int block, const cusparseMatDescr_t descr_c, T* values,              \
      int* offsets, int* columns) {                                                                \
    return bsr2csr<U>(handle, dir, mb, nb, descr_a, as<U>(bsr_values), bsr_offsets, bsr_columns,   \
                      block, descr_c, as<U>(values), offsets, columns, "cusparse" #P "bsr2csr");   \
  }                                                                                                \
  PT_EXPORT cusparseStatus_t cusparse##P##bsrmv(                                                   \
      cusparseHandle_t handle, cusparseDirection_t dir, cusparseOperation_t trans, int mb, int nb, \
      int nnzb, const T* alpha, const cusparseMatDescr_t descr, const T* values,                   \
      const int* offsets, const int* columns, int block, const T* x, const T* beta, T* y) {        \
    return bsrmm<U>(handle, dir, trans, CUSPARSE_OPERATION_NON_TRANSPOSE, mb, 1, nb, nnzb,         \
                    as<U>(alpha), descr, as<U>(values), offsets, columns, block, as<U>(x), 0,      \
                    as<U>(beta), as<U>(y), 0, true, "cusparse" #P "bsrmv");                        \
  }                                                                                                \
  PT_EXPORT cusparseStatus_t cusparse##P##bsrmm(                                                   \
      cusparseHandle_t handle, cusparseDirection_t dir, cusparseOperation_t trans_a,               \
      cusparseOperation_t trans_b, int mb, int n, int kb, int nnzb, const T* alpha,                \
      const cusparseMatDescr_t descr, const T* values, const int* offsets, const int* columns,     \
      const int block, const T* b, const int ldb, const T* beta, T* c, int ldc) {                  \
    return bsrmm<U>(handle, dir, trans_a, trans_b, mb, n, kb, nnzb, as<U>(alpha), descr,           \
                    as<U>(values), offsets, columns, block, as<U>(b), ldb, as<U>(beta), as<U>(c),  \
                    ldc, false, "cusparse" #P "bsrmm");                                            \
  }
PT_SPARSE_BSR(S, float, float)
PT_SPARSE_BSR(D, double, double)
PT_SPARSE_BSR(C, cuComplex, std::complex<float>)
PT_SPARSE_BSR(Z, cuDoubleComplex, std::complex<double>)
#undef PT_SPARSE_BSR

// ----------------------------- BSR triangular solves (bsrsv2, bsrsm2: info, buffer size,
// analysis, solve, zero pivot) recorded like SpSV/SpSM: the analysis reads the structure, a solve
// counts 2 FLOPs per stored block entry and right-hand side and moves the blocks and the
// right-hand sides (read and written); nothing is computed. bsrxmv (a masked bsrmv) is recorded
// over the block rows of its mask. The ILU numeric boost is accepted and kept off the record
// (the factors are not computed).
namespace {
cusparseStatus_t block_solve(cusparseHandle_t handle, Phase phase, int mb, int nnzb, int block,
                             std::int64_t rhs, const void* descr, const void* values,
                             const int* row_ptr, const int* col_ind, const void* info,
                             const void* b, std::int64_t ldb, const void* x, std::int64_t ldx,
                             cudaDataType type, int* buffer_size, bool vector, const char* api) {
  const std::int64_t start = powertrain::emu::now_ns();
  const detail::SparseHandle* h = detail::live_handle(handle, api);
  if (h == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  detail::LegacyMatDescr d;
  if (!detail::legacy_mat_descr(descr, &d)) return detail::bad(api, "invalid matrix descriptor");
  auto* fi = detail::need<detail::FactorInfo>(sparse().infos, info, "info", api);
  if (fi == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  const std::int64_t v = detail::value_bytes(type), b2 = std::int64_t{block} * block;
  const std::int64_t m = std::int64_t{mb} * block;
  if (mb < 0 || nnzb < 0 || block <= 0 || block > 65536 || rhs < 0)
    return detail::bad(api, "invalid mb, nnzb, blockDim or right-hand sides");
  if (!int_array(row_ptr, std::int64_t{mb} + 1) || !int_array(col_ind, nnzb) ||
      !detail::device_array(values, detail::mul(detail::mul(nnzb, b2), v)))
    return detail::bad(api, "an array of A is not device memory of its size");
  if (phase == Phase::kBufferSize) {
    if (buffer_size == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
    *buffer_size = 0;
    return CUSPARSE_STATUS_SUCCESS;
  }
  const std::int64_t structure = 4LL * nnzb + 4LL * (mb + 1);
  detail::SparseOp op;
  op.api = api, op.format = "bsr", op.rows = op.cols = m, op.nnz = nnzb * b2;
  op.dtype = op.compute = type;
  {
    std::lock_guard<std::mutex> lock(sparse().mutex);
    if (phase == Phase::kAnalysis) {
      fi->analysed = true;
    } else if (!fi->analysed) {
      return detail::bad(api, "the info object has not been through the analysis");
    }
  }
  if (phase == Phase::kAnalysis) {
    op.what = vector ? "bsrsv2_analysis" : "bsrsm2_analysis";
    op.bytes = structure;
    return detail::run(*h, op, start);
  }
  const std::int64_t span_b = vector ? m : (rhs > 0 ? (rhs - 1) * ldb + m : 0);
  const std::int64_t span_x = vector ? m : (rhs > 0 ? (rhs - 1) * ldx + m : 0);
  if ((!vector && (ldb < m || ldx < m)) || !detail::device_array(b, span_b * v) ||
      !detail::device_array(x, span_x * v))
    return detail::bad(api, "the right-hand side or the solution is not device memory of its size");
  op.what = vector ? "bsrsv2_solve" : "bsrsm2_solve";
  op.n = vector ? 0 : rhs;
  op.flops = detail::mul(2 * nnzb * b2, std::max<std::int64_t>(rhs, 1)) *
             (type == CUDA_C_32F || type == CUDA_C_64F ? 4 : 1);
  op.bytes = detail::add(detail::add(detail::mul(nnzb * b2, v), structure),
                         detail::mul(2 * m * std::max<std::int64_t>(rhs, 1), v));
  return detail::run(*h, op, start);
}
}  // namespace

namespace {
// csrilu02/bsrilu02_numericBoost: the info is checked and the setting accepted (the factors are
// not computed, so a boost changes nothing here).
cusparseStatus_t numeric_boost(cusparseHandle_t handle, const void* info, int enable,
                               const double* tol, const void* boost, const char* api) {
  if (detail::live_handle(handle, api) == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  if (detail::need<detail::FactorInfo>(sparse().infos, info, "info", api) == nullptr)
    return CUSPARSE_STATUS_INVALID_VALUE;
  if (enable != 0 && (tol == nullptr || boost == nullptr))
    return detail::bad(api, "tol and boost_val are required when boosting");
  return CUSPARSE_STATUS_SUCCESS;
}
}  // namespace

#define PT_BSR_SOLVE(P, T, DTYPE)                                                                  \
  PT_EXPORT cusparseStatus_t cusparse##P##bsrsv2_bufferSize(                                       \
      cusparseHandle_t handle, cusparseDirection_t dir, cusparseOperation_t trans, int mb,         \
      int nnzb, const cusparseMatDescr_t descr, T* values, const int* row_ptr, const int* col_ind, \
      int block, bsrsv2Info_t info, int* buffer_size) {                                            \
    (void)dir, (void)trans;                                                                        \
    return block_solve(handle, Phase::kBufferSize, mb, nnzb, block, 1, descr, values, row_ptr,     \
                       col_ind, info, nullptr, 0, nullptr, 0, DTYPE, buffer_size, true,            \
                       "cusparse" #P "bsrsv2_bufferSize");                                         \
  }                                                                                                \
  PT_EXPORT cusparseStatus_t cusparse##P##bsrsv2_analysis(                                         \
      cusparseHandle_t handle, cusparseDirection_t dir, cusparseOperation_t trans, int mb,         \
      int nnzb, const cusparseMatDescr_t descr, const T* values, const int* row_ptr,               \
      const int* col_ind, int block, bsrsv2Info_t info, cusparseSolvePolicy_t policy,              \
      void* buffer) {                                                                              \
    (void)dir, (void)trans, (void)policy, (void)buffer;                                            \
    return block_solve(handle, Phase::kAnalysis, mb, nnzb, block, 1, descr, values, row_ptr,       \
                       col_ind, info, nullptr, 0, nullptr, 0, DTYPE, nullptr, true,                \
                       "cusparse" #P "bsrsv2_analysis");                                           \
  }                                                                                                \
  PT_EXPORT cusparseStatus_t cusparse##P##bsrsv2_solve(                                            \
      cusparseHandle_t handle, cusparseDirection_t dir, cusparseOperation_t trans, int mb,         \
      int nnzb, const T* alpha, const cusparseMatDescr_t descr, const T* values,                   \
      const int* row_ptr, const int* col_ind, int block, bsrsv2Info_t info, const T* f, T* x,      \
      cusparseSolvePolicy_t policy, void* buffer) {                                                \
    (void)dir, (void)trans, (void)policy, (void)buffer;                                            \
    if (alpha == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;                                    \
    return block_solve(handle, Phase::kFactor, mb, nnzb, block, 1, descr, values, row_ptr,         \
                       col_ind, info, f, 0, x, 0, DTYPE, nullptr, true,                            \
                       "cusparse" #P "bsrsv2_solve");                                              \
  }                                                                                                \
  PT_EXPORT cusparseStatus_t cusparse##P##bsrsm2_bufferSize(                                       \
      cusparseHandle_t handle, cusparseDirection_t dir, cusparseOperation_t trans,                 \
      cusparseOperation_t trans_xy, int mb, int n, int nnzb, const cusparseMatDescr_t descr,       \
      T* values, const int* row_ptr, const int* col_ind, int block, bsrsm2Info_t info,             \
      int* buffer_size) {                                                                          \
    (void)dir, (void)trans, (void)trans_xy;                                                        \
    return block_solve(handle, Phase::kBufferSize, mb, nnzb, block, n, descr, values, row_ptr,     \
                       col_ind, info, nullptr, 0, nullptr, 0, DTYPE, buffer_size, false,           \
                       "cusparse" #P "bsrsm2_bufferSize");                                         \
  }                                                                                                \
  PT_EXPORT cusparseStatus_t cusparse##P##bsrsm2_analysis(                                         \
      cusparseHandle_t handle, cusparseDirection_t dir, cusparseOperation_t trans,                 \
      cusparseOperation_t trans_xy, int mb, int n, int nnzb, const cusparseMatDescr_t descr,       \
      const T* values, const int* row_ptr, const int* col_ind, int block, bsrsm2Info_t info,       \
      cusparseSolvePolicy_t policy, void* buffer) {                                                \
    (void)dir, (void)trans, (void)trans_xy, (void)policy, (void)buffer;                            \
    return block_solve(handle, Phase::kAnalysis, mb, nnzb, block, n, descr, values, row_ptr,       \
                       col_ind, info, nullptr, 0, nullptr, 0, DTYPE, nullptr, false,               \
                       "cusparse" #P "bsrsm2_analysis");                                           \
  }                                                                                                \
  PT_EXPORT cusparseStatus_t cusparse##P##bsrsm2_solve(                                            \
      cusparseHandle_t handle, cusparseDirection_t dir, cusparseOperation_t trans,                 \
      cusparseOperation_t trans_xy, int mb, int n, int nnzb, const T* alpha,                       \
      const cusparseMatDescr_t descr, const T* values, const int* row_ptr, const int* col_ind,     \
      int block, bsrsm2Info_t info, const T* B, int ldb, T* X, int ldx,                            \
      cusparseSolvePolicy_t policy, void* buffer) {                                                \
    (void)dir, (void)trans, (void)trans_xy, (void)policy, (void)buffer;                            \
    if (alpha == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;                                    \
    return block_solve(handle, Phase::kFactor, mb, nnzb, block, n, descr, values, row_ptr,         \
                       col_ind, info, B, ldb, X, ldx, DTYPE, nullptr, false,                       \
                       "cusparse" #P "bsrsm2_solve");                                              \
  }                                                                                                \
  PT_EXPORT cusparseStatus_t cusparse##P##csrilu02_numericBoost(                                   \
      cusparseHandle_t handle, csrilu02Info_t info, int enable, double* tol, T* boost) {           \
    return numeric_boost(handle, info, enable, tol, boost, "cusparse" #P "csrilu02_numericBoost"); \
  }                                                                                                \
  PT_EXPORT cusparseStatus_t cusparse##P##bsrilu02_numericBoost(                                   \
      cusparseHandle_t handle, bsrilu02Info_t info, int enable, double* tol, T* boost) {           \
    return numeric_boost(handle, info, enable, tol, boost, "cusparse" #P "bsrilu02_numericBoost"); \
  }
PT_BSR_SOLVE(S, float, CUDA_R_32F)
PT_BSR_SOLVE(D, double, CUDA_R_64F)
PT_BSR_SOLVE(C, cuComplex, CUDA_C_32F)
PT_BSR_SOLVE(Z, cuDoubleComplex, CUDA_C_64F)
#undef PT_BSR_SOLVE

namespace {
// bsrxmv: bsrmv over the block rows listed in the mask (bsrSortedMaskPtrA), each row's blocks from
// its start to its end pointer; recorded from the structure's sizes (the mask's rows are not read).
cusparseStatus_t bsrxmv(cusparseHandle_t handle, cusparseOperation_t trans, int mask_size, int mb,
                        int nb, int nnzb, const void* alpha, const cusparseMatDescr_t descr,
                        const void* values, const int* mask, const int* row_ptr, const int* end_ptr,
                        const int* col_ind, int block, const void* x, const void* beta,
                        const void* y, cudaDataType type, const char* api) {
  const std::int64_t start = powertrain::emu::now_ns();
  const detail::SparseHandle* h = detail::live_handle(handle, api);
  if (h == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  detail::LegacyMatDescr d;
  if (!detail::legacy_mat_descr(descr, &d)) return detail::bad(api, "invalid matrix descriptor");
  if (trans != CUSPARSE_OPERATION_NON_TRANSPOSE)
    return detail::bad(api, "only CUSPARSE_OPERATION_NON_TRANSPOSE is supported");
  if (alpha == nullptr || beta == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  const std::int64_t v = detail::value_bytes(type), b2 = std::int64_t{block} * block;
  if (mask_size < 0 || mask_size > mb || mb < 0 || nb < 0 || nnzb < 0 || block <= 0 ||
      !int_array(mask, mask_size) || !int_array(row_ptr, mb) || !int_array(end_ptr, mb) ||
      !int_array(col_ind, nnzb) || !detail::device_array(values, nnzb * b2 * v) ||
      !detail::device_array(x, std::int64_t{nb} * block * v) ||
      !detail::device_array(y, std::int64_t{mb} * block * v))
    return detail::bad(api, "invalid sizes, or an array that is not device memory of its size");
  // The masked rows' share of the blocks (uniformly spread): nnzb · mask / mb.
  const std::int64_t blocks = mb > 0 ? nnzb * mask_size / mb : 0;
  detail::SparseOp op;
  op.api = api, op.what = "bsrxmv", op.format = "bsr";
  op.rows = std::int64_t{mb} * block, op.cols = std::int64_t{nb} * block, op.nnz = nnzb * b2;
  op.dtype = op.compute = type;
  op.flops = 2 * blocks * b2 * (type == CUDA_C_32F || type == CUDA_C_64F ? 4 : 1);
  op.bytes = blocks * (b2 * v + 4) + 4LL * (2 * mask_size) +
             (std::int64_t{nb} + 2LL * mask_size) * block * v;
  return detail::run(*h, op, start);
}
}  // namespace

#define PT_BSRXMV(P, T, DTYPE)                                                                    \
  PT_EXPORT cusparseStatus_t cusparse##P##bsrxmv(                                                 \
      cusparseHandle_t handle, cusparseDirection_t dir, cusparseOperation_t trans, int mask_size, \
      int mb, int nb, int nnzb, const T* alpha, const cusparseMatDescr_t descr, const T* values,  \
      const int* mask, const int* row_ptr, const int* end_ptr, const int* col_ind, int block,     \
      const T* x, const T* beta, T* y) {                                                          \
    (void)dir;                                                                                    \
    return bsrxmv(handle, trans, mask_size, mb, nb, nnzb, alpha, descr, values, mask, row_ptr,    \
                  end_ptr, col_ind, block, x, beta, y, DTYPE, "cusparse" #P "bsrxmv");            \
  }
PT_BSRXMV(S, float, CUDA_R_32F)
PT_BSRXMV(D, double, CUDA_R_64F)
PT_BSRXMV(C, cuComplex, CUDA_C_32F)
PT_BSRXMV(Z, cuDoubleComplex, CUDA_C_64F)
#undef PT_BSRXMV
