// cuSPARSE's generic API on the emulated devices, as NVIDIA's conjugateGradient-style samples and
// PyTorch's sparse matmuls call it: handle and stream, CSR and dense vector/matrix descriptors,
// SpMV and SpMM with their buffer-size queries. An SpMV/SpMM is validated (descriptors live, shapes
// agree, data in device memory) and recorded as a `sparse` record with the shape, nnz, dtypes,
// FLOPs and bytes, followed by a kernel named cusparse_<op>_csr_<dtype> carrying the same FLOPs
// and bytes, timed by their roofline (FLOPs on the fp32 units): memory-bound unless rows are dense
// (SpMM binds on FLOPs from about 150 nonzeros per row on an H100). Model, not measured:
//   SpMV y = α·op(A)·x + β·y:  FLOPs 2·nnz; bytes nnz·(value + column index) + (rows+1)·offset
//                              + |x|·value + 2·|y|·value (y read and written)
//   SpMM C = α·op(A)·B + β·C:  FLOPs 2·nnz·n; bytes the matrix + |B|·value + 2·|C|·value
//   work buffers: 0 bytes (any buffer, even NULL, is accepted)
// Every other function of libcusparse is a generated stub that reports its name and returns
// CUSPARSE_STATUS_NOT_SUPPORTED (10).
#include <cusparse.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_set>

#include "interposer/cublas_nccl_util.h"
#include "interposer/cudart_internal.h"
#include "interposer/trace_schema.h"

namespace trace_schema = powertrain::trace_schema;

namespace powertrain::emu::detail {
namespace {

struct SparseHandle {
  cudaStream_t stream = nullptr;
};

struct Csr {
  std::int64_t rows = 0, cols = 0, nnz = 0;
  const void *offsets = nullptr, *columns = nullptr, *values = nullptr;
  int offset_bytes = 4, index_bytes = 4;
  cudaDataType value_type = CUDA_R_32F;
};

struct DnVec {
  std::int64_t size = 0;
  const void* values = nullptr;
  cudaDataType value_type = CUDA_R_32F;
};

struct DnMat {
  std::int64_t rows = 0, cols = 0, ld = 0;
  const void* values = nullptr;
  cudaDataType value_type = CUDA_R_32F;
  cusparseOrder_t order = CUSPARSE_ORDER_COL;
};

struct SparseState {
  std::mutex mutex;
  std::unordered_set<const void*> handles, csrs, vectors, matrices;
};

SparseState& sparse() {
  static SparseState* s = new SparseState;  // never destroyed
  return *s;
}

template <typename T>
const T* live(std::unordered_set<const void*>& set, const void* handle) {
  std::lock_guard<std::mutex> lock(sparse().mutex);
  return set.count(handle) > 0 ? static_cast<const T*>(handle) : nullptr;
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

int value_bytes(cudaDataType t) {
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

// Saturating multiplication for FLOP and byte counts (never signed overflow).
std::int64_t mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

// A device array of at least `bytes` (NULL is fine when it holds nothing).
bool device_array(const void* pointer, std::int64_t bytes) {
  if (bytes == 0) return true;
  const PointerInfo info = lookup_pointer(pointer);
  return info.known && info.device_side && info.available >= static_cast<std::size_t>(bytes);
}

const char* op_text(cusparseOperation_t op) {
  return op == CUSPARSE_OPERATION_NON_TRANSPOSE ? "N"
         : op == CUSPARSE_OPERATION_TRANSPOSE   ? "T"
                                                : "C";
}

// Records a product and its sized kernel; `what` is "spmv" or "spmm".
cusparseStatus_t record(const SparseHandle& h, const char* what, const Csr& a,
                        cusparseOperation_t op_a, std::int64_t n, std::int64_t flops,
                        std::int64_t bytes, cudaDataType compute, const char* api,
                        std::int64_t start) {
  StreamRef ref;
  if (!stream_or_fail(h.stream, false, api, &ref)) return CUSPARSE_STATUS_EXECUTION_FAILED;
  const char* dtype = libs::cuda_dtype_name(a.value_type);
  const char* compute_name = libs::cuda_dtype_name(compute);
  auto r = begin_record(trace_schema::op::kSparse, start, ref.device);
  r.field(trace_schema::field::kApi, std::string_view(api));
  r.field("format", std::string_view("csr"));
  r.field("op_a", std::string_view(op_text(op_a)));
  r.field("rows", a.rows);
  r.field("cols", a.cols);
  r.field("nnz", a.nnz);
  if (n > 0) r.field(trace_schema::field::kN, n);
  r.field(trace_schema::field::kDtype, std::string_view(dtype != nullptr ? dtype : "unknown"));
  r.field(trace_schema::field::kCompute,
          std::string_view(compute_name != nullptr ? compute_name : "unknown"));
  r.field(trace_schema::field::kFlops, flops);
  r.field(trace_schema::field::kBytes, bytes);
  r.field(trace_schema::field::kStream, ref.id);
  end_record(r);
  std::string name = std::string("cusparse_") + what + "_csr_";
  name += dtype != nullptr ? dtype : "unknown";
  return append_sized_kernel(name, static_cast<std::size_t>(bytes), h.stream, api, start,
                             std::max<std::int64_t>(flops, 1))
             ? CUSPARSE_STATUS_SUCCESS
             : CUSPARSE_STATUS_EXECUTION_FAILED;
}

std::int64_t matrix_bytes(const Csr& a) {
  return a.nnz * (value_bytes(a.value_type) + a.index_bytes) + (a.rows + 1) * a.offset_bytes;
}

// SpMV (record = false: only the checks, for the buffer-size query).
cusparseStatus_t spmv(cusparseHandle_t handle, cusparseOperation_t op_a, const void* mat_a,
                      const void* vec_x, const void* vec_y, cudaDataType compute, bool run,
                      const char* api) {
  const std::int64_t start = now_ns();
  const SparseHandle* h = live_handle(handle, api);
  if (h == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  const auto* a = live<Csr>(sparse().csrs, mat_a);
  const auto* x = live<DnVec>(sparse().vectors, vec_x);
  const auto* y = live<DnVec>(sparse().vectors, vec_y);
  if (a == nullptr || x == nullptr || y == nullptr) {
    return bad(api, "a descriptor is invalid or destroyed (only CSR matrices are emulated)");
  }
  const bool transposed = op_a != CUSPARSE_OPERATION_NON_TRANSPOSE;
  const std::int64_t x_len = transposed ? a->rows : a->cols;
  const std::int64_t y_len = transposed ? a->cols : a->rows;
  if (x->size != x_len || y->size != y_len) {
    return bad(api, "vector sizes " + std::to_string(x->size) + " and " + std::to_string(y->size) +
                        " do not match op(A) of " + std::to_string(y_len) + " x " +
                        std::to_string(x_len));
  }
  if (!run) return CUSPARSE_STATUS_SUCCESS;
  const std::int64_t bytes = matrix_bytes(*a) + x_len * value_bytes(x->value_type) +
                             2 * y_len * value_bytes(y->value_type);
  return record(*h, "spmv", *a, op_a, 0, 2 * a->nnz, bytes, compute, api, start);
}

cusparseStatus_t spmm(cusparseHandle_t handle, cusparseOperation_t op_a, cusparseOperation_t op_b,
                      const void* mat_a, const void* mat_b, const void* mat_c, cudaDataType compute,
                      bool run, const char* api) {
  const std::int64_t start = now_ns();
  const SparseHandle* h = live_handle(handle, api);
  if (h == nullptr) return CUSPARSE_STATUS_NOT_INITIALIZED;
  const auto* a = live<Csr>(sparse().csrs, mat_a);
  const auto* b = live<DnMat>(sparse().matrices, mat_b);
  const auto* c = live<DnMat>(sparse().matrices, mat_c);
  if (a == nullptr || b == nullptr || c == nullptr) {
    return bad(api, "a descriptor is invalid or destroyed (only CSR matrices are emulated)");
  }
  const bool ta = op_a != CUSPARSE_OPERATION_NON_TRANSPOSE;
  const bool tb = op_b != CUSPARSE_OPERATION_NON_TRANSPOSE;
  const std::int64_t m = ta ? a->cols : a->rows, k = ta ? a->rows : a->cols;
  const std::int64_t b_rows = tb ? b->cols : b->rows, n = tb ? b->rows : b->cols;
  if (b_rows != k || c->rows != m || c->cols != n) {
    return bad(api, "dense shapes B " + std::to_string(b->rows) + " x " + std::to_string(b->cols) +
                        " and C " + std::to_string(c->rows) + " x " + std::to_string(c->cols) +
                        " do not match op(A) of " + std::to_string(m) + " x " + std::to_string(k));
  }
  if (!run) return CUSPARSE_STATUS_SUCCESS;
  // Each dense matrix holds at most 2^40 elements and the CSR at most 2^40 nonzeros, so only
  // the FLOPs (nnz x n) can exceed 64 bits.
  const std::int64_t bytes = matrix_bytes(*a) + k * n * value_bytes(b->value_type) +
                             2 * m * n * value_bytes(c->value_type);
  return record(*h, "spmm", *a, op_a, n, mul(2 * a->nnz, n), bytes, compute, api, start);
}

}  // namespace
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

// ---- descriptors ------------------------------------------------------------------------------

namespace {

cusparseStatus_t create_csr(void* out, int64_t rows, int64_t cols, int64_t nnz, const void* offsets,
                            const void* columns, const void* values,
                            cusparseIndexType_t offset_type, cusparseIndexType_t index_type,
                            cusparseIndexBase_t base, cudaDataType value_type, const char* api) {
  detail::Csr a;
  a.rows = rows, a.cols = cols, a.nnz = nnz;
  a.offsets = offsets, a.columns = columns, a.values = values;
  a.offset_bytes = detail::index_bytes(offset_type);
  a.index_bytes = detail::index_bytes(index_type);
  a.value_type = value_type;
  if (rows < 0 || cols < 0 || nnz < 0 || a.offset_bytes == 0 || a.index_bytes == 0 ||
      detail::value_bytes(value_type) == 0 ||
      (base != CUSPARSE_INDEX_BASE_ZERO && base != CUSPARSE_INDEX_BASE_ONE) ||
      rows > (std::int64_t{1} << 40) || cols > (std::int64_t{1} << 40) ||
      nnz > (std::int64_t{1} << 40)) {
    return detail::bad(api, "invalid CSR shape or types: " + std::to_string(rows) + " x " +
                                std::to_string(cols) + ", nnz " + std::to_string(nnz));
  }
  // The offsets array may be set later (cusparseCsrSetPointers): NULL arrays are not checked.
  if ((offsets != nullptr && !detail::device_array(offsets, (rows + 1) * a.offset_bytes)) ||
      (columns != nullptr && !detail::device_array(columns, nnz * a.index_bytes)) ||
      (values != nullptr && !detail::device_array(values, nnz * detail::value_bytes(value_type)))) {
    return detail::bad(api, "a CSR array is not device memory of its size");
  }
  return detail::create(sparse().csrs, static_cast<cusparseSpMatDescr_t*>(out), a, api);
}

cusparseStatus_t create_vector(void* out, int64_t size, const void* values, cudaDataType type,
                               const char* api) {
  if (size < 0 || detail::value_bytes(type) == 0 || size > (std::int64_t{1} << 40)) {
    return detail::bad(api, "invalid dense vector of " + std::to_string(size) + " values");
  }
  if (values != nullptr && !detail::device_array(values, size * detail::value_bytes(type))) {
    return detail::bad(api, detail::pointer_text(values) + " is not device memory of " +
                                std::to_string(size) + " values");
  }
  detail::DnVec v;
  v.size = size, v.values = values, v.value_type = type;
  return detail::create(sparse().vectors, static_cast<cusparseDnVecDescr_t*>(out), v, api);
}

cusparseStatus_t create_matrix(void* out, int64_t rows, int64_t cols, int64_t ld,
                               const void* values, cudaDataType type, cusparseOrder_t order,
                               const char* api) {
  const std::int64_t inner = order == CUSPARSE_ORDER_COL ? rows : cols;
  const std::int64_t outer = order == CUSPARSE_ORDER_COL ? cols : rows;
  if (rows < 0 || cols < 0 || ld < inner || detail::value_bytes(type) == 0 ||
      rows > (std::int64_t{1} << 31) || cols > (std::int64_t{1} << 31) ||
      ld > (std::int64_t{1} << 31) || ld * outer > (std::int64_t{1} << 40)) {
    return detail::bad(api, "invalid dense matrix " + std::to_string(rows) + " x " +
                                std::to_string(cols) + " with ld " + std::to_string(ld));
  }
  if (values != nullptr && !detail::device_array(values, ld * outer * detail::value_bytes(type))) {
    return detail::bad(api, detail::pointer_text(values) + " is not device memory of the matrix");
  }
  detail::DnMat m;
  m.rows = rows, m.cols = cols, m.ld = ld, m.values = values, m.value_type = type, m.order = order;
  return detail::create(sparse().matrices, static_cast<cusparseDnMatDescr_t*>(out), m, api);
}

}  // namespace

PT_EXPORT cusparseStatus_t cusparseCreateCsr(cusparseSpMatDescr_t* descr, int64_t rows,
                                             int64_t cols, int64_t nnz, void* offsets,
                                             void* columns, void* values,
                                             cusparseIndexType_t offset_type,
                                             cusparseIndexType_t index_type,
                                             cusparseIndexBase_t base, cudaDataType value_type) {
  return create_csr(descr, rows, cols, nnz, offsets, columns, values, offset_type, index_type, base,
                    value_type, "cusparseCreateCsr");
}

PT_EXPORT cusparseStatus_t cusparseCreateConstCsr(
    cusparseConstSpMatDescr_t* descr, int64_t rows, int64_t cols, int64_t nnz, const void* offsets,
    const void* columns, const void* values, cusparseIndexType_t offset_type,
    cusparseIndexType_t index_type, cusparseIndexBase_t base, cudaDataType value_type) {
  return create_csr(descr, rows, cols, nnz, offsets, columns, values, offset_type, index_type, base,
                    value_type, "cusparseCreateConstCsr");
}

PT_EXPORT cusparseStatus_t cusparseDestroySpMat(cusparseConstSpMatDescr_t descr) {
  return detail::destroy<detail::Csr>(sparse().csrs, descr, "cusparseDestroySpMat");
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

// ---- products
// ------------------------------------------------------------------------------------

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
  return detail::spmv(handle, op_a, mat_a, vec_x, vec_y, compute, true, "cusparseSpMV");
}

PT_EXPORT cusparseStatus_t cusparseSpMM_bufferSize(
    cusparseHandle_t handle, cusparseOperation_t op_a, cusparseOperation_t op_b, const void* alpha,
    cusparseConstSpMatDescr_t mat_a, cusparseConstDnMatDescr_t mat_b, const void* beta,
    cusparseDnMatDescr_t mat_c, cudaDataType compute, cusparseSpMMAlg_t alg, size_t* buffer_size) {
  (void)alpha, (void)beta, (void)alg;
  if (buffer_size == nullptr) return CUSPARSE_STATUS_INVALID_VALUE;
  const cusparseStatus_t s = detail::spmm(handle, op_a, op_b, mat_a, mat_b, mat_c, compute, false,
                                          "cusparseSpMM_bufferSize");
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
  return detail::spmm(handle, op_a, op_b, mat_a, mat_b, mat_c, compute, true, "cusparseSpMM");
}
