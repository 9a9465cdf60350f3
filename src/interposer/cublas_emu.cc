// cuBLAS emulation for the interposer: handles, their settings and the GEMM family. Each GEMM is
// validated like cuBLAS validates it and written to the trace as a `gemm` record (shapes, dtypes,
// compute type, FLOPs, stream); nothing is computed. cuBLAS carries its own static cudart, so it
// is intercepted at its own API (cublas_v2.h renames the calls to *_v2). Every other symbol that
// libcublas.so.13 exports is a generated stub (cublas_nccl_stubs.cc) that reports the call as
// unsupported and returns CUBLAS_STATUS_NOT_SUPPORTED. Invalid or destroyed handles return
// CUBLAS_STATUS_NOT_INITIALIZED and are reported as misuse; handle objects are never freed, so a
// stale handle can never alias a live one.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "interposer/cublas_internal.h"

namespace powertrain::emu::cublas_detail {

struct Registry {
  std::mutex mu;
  std::unordered_map<const void*, Handle*> handles;  // every handle ever created
  cublasLogCallback log_callback = nullptr;
};

Registry& registry() {
  static auto* instance = new Registry;  // never destroyed: calls may come from atexit handlers
  return *instance;
}

/// Finds a live handle without dereferencing unknown pointers.
Handle* find_handle(cublasHandle_t handle, std::string_view api) {
  if (handle == nullptr) {
    misuse(api, "NULL cuBLAS handle (cublasCreate not called or failed)",
           CUBLAS_STATUS_NOT_INITIALIZED);
    return nullptr;
  }
  Registry& reg = registry();
  std::unique_lock lock(reg.mu);
  const auto it = reg.handles.find(handle);
  if (it == reg.handles.end() || !it->second->live) {
    const bool destroyed = it != reg.handles.end();
    lock.unlock();
    misuse(api,
           destroyed
               ? "cuBLAS handle " + handle_text(handle) + " was destroyed"
               : "invalid cuBLAS handle " + handle_text(handle) + " (not created by cublasCreate)",
           CUBLAS_STATUS_NOT_INITIALIZED);
    return nullptr;
  }
  return it->second;
}

// ---- GEMM core -------------------------------------------------------------------------------

/// The compute type a GEMM runs with, after the handle's math mode (cuBLAS semantics).
const char* effective_compute(const Gemm& g, cublasMath_t math, std::string* error) {
  const int mode = static_cast<int>(math) & 0xf;
  const bool pedantic = mode == CUBLAS_PEDANTIC_MATH;
  int compute = g.compute;
  switch (g.precision) {
    case Precision::kFloat32:
      compute = CUBLAS_COMPUTE_32F;
      break;
    case Precision::kFloat64:
      compute = CUBLAS_COMPUTE_64F;
      break;
    case Precision::kFloat16:
      compute = CUBLAS_COMPUTE_16F;
      break;
    case Precision::kExplicit:
      if (compute < 64) {  // legacy cudaDataType computeType (as cublasMigrateComputeType)
        switch (compute) {
          case CUDA_R_32F:
          case CUDA_C_32F:
            compute = CUBLAS_COMPUTE_32F;
            break;
          case CUDA_R_64F:
          case CUDA_C_64F:
            compute = CUBLAS_COMPUTE_64F;
            break;
          case CUDA_R_16F:
            compute = CUBLAS_COMPUTE_16F;
            break;
          case CUDA_R_32I:
            compute = CUBLAS_COMPUTE_32I;
            break;
          default:
            compute = -1;
        }
      }
      break;
  }
  if (libs::compute_type_name(compute) == nullptr) {
    *error = "unsupported compute type " + std::to_string(g.compute);
    return nullptr;
  }
  const bool fp32_inputs = g.a == CUDA_R_32F && g.b == CUDA_R_32F;
  if (compute == CUBLAS_COMPUTE_32F) {
    if (pedantic) return "float32_pedantic";
    if (fp32_inputs && mode == CUBLAS_TF32_TENSOR_OP_MATH) return "float32_fast_tf32";
    if (fp32_inputs && mode == CUBLAS_TENSOR_OP_MATH) return "float32_fast_float16";
    if (fp32_inputs && mode == CUBLAS_FP32_EMULATED_BF16X9_MATH) {
      return "float32_emulated_bfloat16x9";
    }
  }
  if (compute == CUBLAS_COMPUTE_64F) {
    if (pedantic) return "float64_pedantic";
    if (mode == CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH) return "float64_emulated_fixedpoint";
  }
  if (compute == CUBLAS_COMPUTE_16F && pedantic) return "float16_pedantic";
  if (compute == CUBLAS_COMPUTE_32I && pedantic) return "int32_pedantic";
  return libs::compute_type_name(compute);
}

std::string invalid(const char* name, std::int64_t value, const char* bound_text,
                    std::int64_t bound) {
  return std::string(name) + "=" + std::to_string(value) + " < " + bound_text + "=" +
         std::to_string(bound);
}

cublasStatus_t run_gemm(const Gemm& g, std::int64_t start_ns, std::int64_t corr) {
  PT_FIND_HANDLE(h, g.handle, g.api);
  if (libs::blas_op_text(g.transa) == nullptr || libs::blas_op_text(g.transb) == nullptr) {
    return misuse(g.api,
                  "invalid transa/transb (" + std::to_string(g.transa) + ", " +
                      std::to_string(g.transb) + ")",
                  CUBLAS_STATUS_INVALID_VALUE);
  }
  if (g.m < 0 || g.n < 0 || g.k < 0 || g.batch < 0) {
    return misuse(g.api,
                  "negative size (m=" + std::to_string(g.m) + ", n=" + std::to_string(g.n) +
                      ", k=" + std::to_string(g.k) + ", batchCount=" + std::to_string(g.batch) +
                      ")",
                  CUBLAS_STATUS_INVALID_VALUE);
  }
  const std::int64_t a_rows = g.transa == CUBLAS_OP_N ? g.m : g.k;
  const std::int64_t b_rows = g.transb == CUBLAS_OP_N ? g.k : g.n;
  if (g.lda < std::max<std::int64_t>(1, a_rows)) {
    return misuse(g.api, invalid("lda", g.lda, "rows of A", a_rows), CUBLAS_STATUS_INVALID_VALUE);
  }
  if (g.ldb < std::max<std::int64_t>(1, b_rows)) {
    return misuse(g.api, invalid("ldb", g.ldb, "rows of B", b_rows), CUBLAS_STATUS_INVALID_VALUE);
  }
  if (g.ldc < std::max<std::int64_t>(1, g.m)) {
    return misuse(g.api, invalid("ldc", g.ldc, "m", g.m), CUBLAS_STATUS_INVALID_VALUE);
  }
  for (const int type : {g.a, g.b, g.c}) {
    if (libs::cuda_dtype_name(type) == nullptr) {
      return misuse(g.api, "unknown cudaDataType " + std::to_string(type),
                    CUBLAS_STATUS_NOT_SUPPORTED);
    }
  }
  cudaStream_t stream = nullptr;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  {
    std::lock_guard lock(h->mu);
    stream = h->stream;
    math = h->math;
  }
  std::string error;
  const char* compute = effective_compute(g, math, &error);
  if (compute == nullptr) return misuse(g.api, error, CUBLAS_STATUS_NOT_SUPPORTED);
  if (g.m == 0 || g.n == 0 || g.batch == 0) return CUBLAS_STATUS_SUCCESS;  // nothing launched
  int stream_device = 0;
  const std::int64_t stream_id = emu::stream_id(stream, false, &stream_device);
  if (stream_id == emu::kInvalidStream) {
    return misuse(g.api,
                  "the handle's stream " + handle_text(stream) +
                      " is not a live CUDA stream (destroyed after cublasSetStream?)",
                  CUBLAS_STATUS_EXECUTION_FAILED);
  }
  libs::GemmRecord record;
  record.api = g.api;
  record.start_ns = start_ns;
  record.device = stream_device;  // the device the work runs on (the current one for NULL)
  record.stream = stream_id;
  record.m = g.m;
  record.n = g.n;
  record.k = g.k;
  record.batch = g.batch;
  record.transa = g.transa;
  record.transb = g.transb;
  record.dtype_a = g.a;
  record.dtype_b = g.b;
  record.dtype_c = g.c;
  record.compute = compute;
  record.corr = corr;
  libs::record_gemm(record);
  return CUBLAS_STATUS_SUCCESS;
}

Gemm make(const char* api, cublasHandle_t handle, cublasOperation_t transa,
          cublasOperation_t transb, std::int64_t m, std::int64_t n, std::int64_t k,
          std::int64_t lda, std::int64_t ldb, std::int64_t ldc) {
  Gemm g;
  g.api = api;
  g.handle = handle;
  g.transa = transa;
  g.transb = transb;
  g.m = m;
  g.n = n;
  g.k = k;
  g.lda = lda;
  g.ldb = ldb;
  g.ldc = ldc;
  return g;
}

Gemm typed(Gemm g, Precision precision) {
  g.precision = precision;
  const int type = precision == Precision::kFloat64   ? CUDA_R_64F
                   : precision == Precision::kFloat16 ? CUDA_R_16F
                                                      : CUDA_R_32F;
  g.a = g.b = g.c = type;
  return g;
}

Gemm ex(Gemm g, cudaDataType a, cudaDataType b, cudaDataType c, int compute) {
  g.precision = Precision::kExplicit;
  g.a = a;
  g.b = b;
  g.c = c;
  g.compute = compute;
  return g;
}

Gemm batched(Gemm g, std::int64_t batch) {
  g.batch = batch;
  return g;
}

/// One record per group (same correlation id); group_count groups of group_size[i] GEMMs.
template <typename Int>
cublasStatus_t grouped(const char* api, cublasHandle_t handle, const cublasOperation_t* transa,
                       const cublasOperation_t* transb, const Int* m, const Int* n, const Int* k,
                       const Int* lda, const Int* ldb, const Int* ldc, Int group_count,
                       const Int* group_size, Precision precision, cudaDataType a, cudaDataType b,
                       cudaDataType c, int compute) {
  const std::int64_t start_ns = emu::now_ns();
  PT_FIND_HANDLE(h, handle, api);
  (void)h;
  if (group_count < 0) {
    return misuse(api, "negative group_count", CUBLAS_STATUS_INVALID_VALUE);
  }
  if (group_count > 0 &&
      (transa == nullptr || transb == nullptr || m == nullptr || n == nullptr || k == nullptr ||
       lda == nullptr || ldb == nullptr || ldc == nullptr || group_size == nullptr)) {
    return misuse(api, "NULL parameter array", CUBLAS_STATUS_INVALID_VALUE);
  }
  const std::int64_t corr = emu::next_correlation();
  for (Int i = 0; i < group_count; ++i) {
    Gemm g = make(api, handle, transa[i], transb[i], m[i], n[i], k[i], lda[i], ldb[i], ldc[i]);
    g = precision == Precision::kExplicit ? ex(g, a, b, c, compute) : typed(g, precision);
    g.batch = group_size[i];
    if (const cublasStatus_t status = run_gemm(g, start_ns, corr);
        status != CUBLAS_STATUS_SUCCESS) {
      return status;
    }
  }
  return CUBLAS_STATUS_SUCCESS;
}

// ---- host <-> device copies (through the emulated runtime in this library) ------------------

cublasStatus_t copy_status(cudaError_t error) {
  return error == cudaSuccess ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_MAPPING_ERROR;
}

cublasStatus_t matrix_copy(const char* api, std::int64_t rows, std::int64_t cols,
                           std::int64_t elem_size, const void* src, std::int64_t ld_src, void* dst,
                           std::int64_t ld_dst, cudaMemcpyKind kind, bool async,
                           cudaStream_t stream) {
  if (rows < 0 || cols < 0 || elem_size <= 0 || ld_src < std::max<std::int64_t>(1, rows) ||
      ld_dst < std::max<std::int64_t>(1, rows)) {
    return misuse(api, "invalid rows/cols/elemSize/leading dimension", CUBLAS_STATUS_INVALID_VALUE);
  }
  if (rows == 0 || cols == 0) return CUBLAS_STATUS_SUCCESS;
  const auto width = static_cast<std::size_t>(rows * elem_size);
  const auto src_pitch = static_cast<std::size_t>(ld_src * elem_size);
  const auto dst_pitch = static_cast<std::size_t>(ld_dst * elem_size);
  const auto height = static_cast<std::size_t>(cols);
  return copy_status(
      async ? cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, height, kind, stream)
            : cudaMemcpy2D(dst, dst_pitch, src, src_pitch, width, height, kind));
}

cublasStatus_t vector_copy(const char* api, std::int64_t n, std::int64_t elem_size, const void* src,
                           std::int64_t inc_src, void* dst, std::int64_t inc_dst,
                           cudaMemcpyKind kind, bool async, cudaStream_t stream) {
  if (n < 0 || elem_size <= 0 || inc_src <= 0 || inc_dst <= 0) {
    return misuse(api, "invalid n/elemSize/increment", CUBLAS_STATUS_INVALID_VALUE);
  }
  if (n == 0) return CUBLAS_STATUS_SUCCESS;
  const auto width = static_cast<std::size_t>(elem_size);
  const auto src_pitch = static_cast<std::size_t>(inc_src * elem_size);
  const auto dst_pitch = static_cast<std::size_t>(inc_dst * elem_size);
  return copy_status(async ? cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width,
                                               static_cast<std::size_t>(n), kind, stream)
                           : cudaMemcpy2D(dst, dst_pitch, src, src_pitch, width,
                                          static_cast<std::size_t>(n), kind));
}

}  // namespace powertrain::emu::cublas_detail

using namespace powertrain::emu::cublas_detail;  // NOLINT: this file defines them

// ===== handles and settings ==================================================================

PT_EXPORT cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (handle == nullptr) {
    return misuse("cublasCreate_v2", "handle output pointer is NULL", CUBLAS_STATUS_INVALID_VALUE);
  }
  auto* created = new Handle;
  created->device = emu::current_device();
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  reg.handles.emplace(created, created);
  *handle = reinterpret_cast<cublasHandle_t>(created);
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  PT_FIND_HANDLE(h, handle, "cublasDestroy_v2");
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  h->live = false;
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int* version) {
  (void)handle;  // as cuBLAS: the version does not depend on the handle
  if (version == nullptr) {
    return misuse("cublasGetVersion_v2", "version is NULL", CUBLAS_STATUS_INVALID_VALUE);
  }
  *version = CUBLAS_VERSION;
  return CUBLAS_STATUS_SUCCESS;
}

#undef cublasGetVersion
/// Legacy (cublas.h) cublasGetVersion(int*); cublas_v2.h maps the name to cublasGetVersion_v2.
PT_EXPORT cublasStatus_t cublasGetVersion(int* version) {
  return cublasGetVersion_v2(nullptr, version);
}

PT_EXPORT cublasStatus_t cublasGetProperty(libraryPropertyType type, int* value) {
  return static_cast<cublasStatus_t>(libs::library_property(
      "cublasGetProperty", type, value, CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR, CUBLAS_VER_PATCH));
}

PT_EXPORT size_t cublasGetCudartVersion(void) { return CUDART_VERSION; }

PT_EXPORT const char* cublasGetStatusName(cublasStatus_t status) {
  return libs::blas_status_name(status);
}

PT_EXPORT const char* cublasGetStatusString(cublasStatus_t status) {
  return libs::blas_status_string(status);
}

PT_EXPORT cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  PT_FIND_HANDLE(h, handle, "cublasSetStream_v2");
  int device = 0;
  if (emu::stream_id(stream, false, &device) == emu::kInvalidStream) {
    return misuse("cublasSetStream_v2", "invalid CUDA stream " + handle_text(stream),
                  CUBLAS_STATUS_INVALID_VALUE);
  }
  std::lock_guard lock(h->mu);
  h->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* stream) {
  PT_FIND_HANDLE(h, handle, "cublasGetStream_v2");
  if (stream == nullptr) {
    return misuse("cublasGetStream_v2", "streamId is NULL", CUBLAS_STATUS_INVALID_VALUE);
  }
  std::lock_guard lock(h->mu);
  *stream = h->stream;
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace,
                                               size_t workspace_bytes) {
  PT_FIND_HANDLE(h, handle, "cublasSetWorkspace_v2");
  if (workspace == nullptr && workspace_bytes != 0) {
    return misuse("cublasSetWorkspace_v2", "NULL workspace with a non-zero size",
                  CUBLAS_STATUS_INVALID_VALUE);
  }
  std::lock_guard lock(h->mu);
  h->workspace = workspace;
  h->workspace_bytes = workspace_bytes;
  return CUBLAS_STATUS_SUCCESS;
}

// Plain settings: Set stores, Get reads back (NULL output → CUBLAS_STATUS_INVALID_VALUE).
#define PT_HANDLE_SETTING(set_name, get_name, type, member)                                     \
  PT_EXPORT cublasStatus_t set_name(cublasHandle_t handle, type value) {                        \
    PT_FIND_HANDLE(h, handle, #set_name);                                                       \
    std::lock_guard lock(h->mu);                                                                \
    h->member = value;                                                                          \
    return CUBLAS_STATUS_SUCCESS;                                                               \
  }                                                                                             \
  PT_EXPORT cublasStatus_t get_name(cublasHandle_t handle, type* value) {                       \
    PT_FIND_HANDLE(h, handle, #get_name);                                                       \
    if (value == nullptr) return misuse(#get_name, "NULL output", CUBLAS_STATUS_INVALID_VALUE); \
    std::lock_guard lock(h->mu);                                                                \
    *value = h->member;                                                                         \
    return CUBLAS_STATUS_SUCCESS;                                                               \
  }

PT_HANDLE_SETTING(cublasSetMathMode, cublasGetMathMode, cublasMath_t, math)
PT_HANDLE_SETTING(cublasSetPointerMode_v2, cublasGetPointerMode_v2, cublasPointerMode_t,
                  pointer_mode)
PT_HANDLE_SETTING(cublasSetAtomicsMode, cublasGetAtomicsMode, cublasAtomicsMode_t, atomics)
PT_HANDLE_SETTING(cublasSetSmCountTarget, cublasGetSmCountTarget, int, sm_count_target)
PT_HANDLE_SETTING(cublasSetEmulationStrategy, cublasGetEmulationStrategy, cublasEmulationStrategy_t,
                  emulation_strategy)
PT_HANDLE_SETTING(cublasSetEmulationSpecialValuesSupport, cublasGetEmulationSpecialValuesSupport,
                  cudaEmulationSpecialValuesSupport, special_values)
PT_HANDLE_SETTING(cublasSetFixedPointEmulationMantissaControl,
                  cublasGetFixedPointEmulationMantissaControl, cudaEmulationMantissaControl,
                  mantissa_control)
PT_HANDLE_SETTING(cublasSetFixedPointEmulationMaxMantissaBitCount,
                  cublasGetFixedPointEmulationMaxMantissaBitCount, int, max_mantissa_bits)
PT_HANDLE_SETTING(cublasSetFixedPointEmulationMantissaBitOffset,
                  cublasGetFixedPointEmulationMantissaBitOffset, int, mantissa_bit_offset)
PT_HANDLE_SETTING(cublasSetFixedPointEmulationMantissaBitCountPointer,
                  cublasGetFixedPointEmulationMantissaBitCountPointer, int*,
                  mantissa_bit_count_pointer)

PT_EXPORT cublasStatus_t cublasLoggerConfigure(int log_is_on, int log_to_stdout, int log_to_stderr,
                                               const char* log_file_name) {
  (void)log_is_on;
  (void)log_to_stdout;
  (void)log_to_stderr;
  (void)log_file_name;
  return CUBLAS_STATUS_SUCCESS;  // the emulator has nothing to log
}

PT_EXPORT cublasStatus_t cublasSetLoggerCallback(cublasLogCallback callback) {
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  reg.log_callback = callback;
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasGetLoggerCallback(cublasLogCallback* callback) {
  if (callback == nullptr) {
    return misuse("cublasGetLoggerCallback", "NULL output", CUBLAS_STATUS_INVALID_VALUE);
  }
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  *callback = reg.log_callback;
  return CUBLAS_STATUS_SUCCESS;
}

// ===== host <-> device helpers ===============================================================

PT_EXPORT cublasStatus_t cublasSetVector(int n, int elem_size, const void* x, int incx,
                                         void* device_ptr, int incy) {
  return vector_copy("cublasSetVector", n, elem_size, x, incx, device_ptr, incy,
                     cudaMemcpyHostToDevice, false, nullptr);
}
PT_EXPORT cublasStatus_t cublasSetVector_64(int64_t n, int64_t elem_size, const void* x,
                                            int64_t incx, void* device_ptr, int64_t incy) {
  return vector_copy("cublasSetVector_64", n, elem_size, x, incx, device_ptr, incy,
                     cudaMemcpyHostToDevice, false, nullptr);
}
PT_EXPORT cublasStatus_t cublasGetVector(int n, int elem_size, const void* x, int incx, void* y,
                                         int incy) {
  return vector_copy("cublasGetVector", n, elem_size, x, incx, y, incy, cudaMemcpyDeviceToHost,
                     false, nullptr);
}
PT_EXPORT cublasStatus_t cublasGetVector_64(int64_t n, int64_t elem_size, const void* x,
                                            int64_t incx, void* y, int64_t incy) {
  return vector_copy("cublasGetVector_64", n, elem_size, x, incx, y, incy, cudaMemcpyDeviceToHost,
                     false, nullptr);
}
PT_EXPORT cublasStatus_t cublasSetVectorAsync(int n, int elem_size, const void* host_ptr, int incx,
                                              void* device_ptr, int incy, cudaStream_t stream) {
  return vector_copy("cublasSetVectorAsync", n, elem_size, host_ptr, incx, device_ptr, incy,
                     cudaMemcpyHostToDevice, true, stream);
}
PT_EXPORT cublasStatus_t cublasSetVectorAsync_64(int64_t n, int64_t elem_size, const void* host_ptr,
                                                 int64_t incx, void* device_ptr, int64_t incy,
                                                 cudaStream_t stream) {
  return vector_copy("cublasSetVectorAsync_64", n, elem_size, host_ptr, incx, device_ptr, incy,
                     cudaMemcpyHostToDevice, true, stream);
}
PT_EXPORT cublasStatus_t cublasGetVectorAsync(int n, int elem_size, const void* device_ptr,
                                              int incx, void* host_ptr, int incy,
                                              cudaStream_t stream) {
  return vector_copy("cublasGetVectorAsync", n, elem_size, device_ptr, incx, host_ptr, incy,
                     cudaMemcpyDeviceToHost, true, stream);
}
PT_EXPORT cublasStatus_t cublasGetVectorAsync_64(int64_t n, int64_t elem_size,
                                                 const void* device_ptr, int64_t incx,
                                                 void* host_ptr, int64_t incy,
                                                 cudaStream_t stream) {
  return vector_copy("cublasGetVectorAsync_64", n, elem_size, device_ptr, incx, host_ptr, incy,
                     cudaMemcpyDeviceToHost, true, stream);
}
PT_EXPORT cublasStatus_t cublasSetMatrix(int rows, int cols, int elem_size, const void* A, int lda,
                                         void* B, int ldb) {
  return matrix_copy("cublasSetMatrix", rows, cols, elem_size, A, lda, B, ldb,
                     cudaMemcpyHostToDevice, false, nullptr);
}
PT_EXPORT cublasStatus_t cublasSetMatrix_64(int64_t rows, int64_t cols, int64_t elem_size,
                                            const void* A, int64_t lda, void* B, int64_t ldb) {
  return matrix_copy("cublasSetMatrix_64", rows, cols, elem_size, A, lda, B, ldb,
                     cudaMemcpyHostToDevice, false, nullptr);
}
PT_EXPORT cublasStatus_t cublasGetMatrix(int rows, int cols, int elem_size, const void* A, int lda,
                                         void* B, int ldb) {
  return matrix_copy("cublasGetMatrix", rows, cols, elem_size, A, lda, B, ldb,
                     cudaMemcpyDeviceToHost, false, nullptr);
}
PT_EXPORT cublasStatus_t cublasGetMatrix_64(int64_t rows, int64_t cols, int64_t elem_size,
                                            const void* A, int64_t lda, void* B, int64_t ldb) {
  return matrix_copy("cublasGetMatrix_64", rows, cols, elem_size, A, lda, B, ldb,
                     cudaMemcpyDeviceToHost, false, nullptr);
}
PT_EXPORT cublasStatus_t cublasSetMatrixAsync(int rows, int cols, int elem_size, const void* A,
                                              int lda, void* B, int ldb, cudaStream_t stream) {
  return matrix_copy("cublasSetMatrixAsync", rows, cols, elem_size, A, lda, B, ldb,
                     cudaMemcpyHostToDevice, true, stream);
}
PT_EXPORT cublasStatus_t cublasSetMatrixAsync_64(int64_t rows, int64_t cols, int64_t elem_size,
                                                 const void* A, int64_t lda, void* B, int64_t ldb,
                                                 cudaStream_t stream) {
  return matrix_copy("cublasSetMatrixAsync_64", rows, cols, elem_size, A, lda, B, ldb,
                     cudaMemcpyHostToDevice, true, stream);
}
PT_EXPORT cublasStatus_t cublasGetMatrixAsync(int rows, int cols, int elem_size, const void* A,
                                              int lda, void* B, int ldb, cudaStream_t stream) {
  return matrix_copy("cublasGetMatrixAsync", rows, cols, elem_size, A, lda, B, ldb,
                     cudaMemcpyDeviceToHost, true, stream);
}
PT_EXPORT cublasStatus_t cublasGetMatrixAsync_64(int64_t rows, int64_t cols, int64_t elem_size,
                                                 const void* A, int64_t lda, void* B, int64_t ldb,
                                                 cudaStream_t stream) {
  return matrix_copy("cublasGetMatrixAsync_64", rows, cols, elem_size, A, lda, B, ldb,
                     cudaMemcpyDeviceToHost, true, stream);
}

// ===== GEMM family ===========================================================================
// Each entry point exists with 32-bit (int) and 64-bit (_64, int64_t) sizes.

namespace {

template <typename T, Precision P, typename Int>
cublasStatus_t typed_gemm(const char* api, cublasHandle_t handle, cublasOperation_t transa,
                          cublasOperation_t transb, Int m, Int n, Int k, Int lda, Int ldb, Int ldc,
                          std::int64_t batch = 1) {
  const std::int64_t start_ns = emu::now_ns();
  return run_gemm(
      batched(typed(make(api, handle, transa, transb, m, n, k, lda, ldb, ldc), P), batch),
      start_ns);
}

template <typename Int>
cublasStatus_t ex_gemm(const char* api, cublasHandle_t handle, cublasOperation_t transa,
                       cublasOperation_t transb, Int m, Int n, Int k, cudaDataType a, Int lda,
                       cudaDataType b, Int ldb, cudaDataType c, Int ldc, int compute,
                       std::int64_t batch = 1) {
  const std::int64_t start_ns = emu::now_ns();
  return run_gemm(
      batched(ex(make(api, handle, transa, transb, m, n, k, lda, ldb, ldc), a, b, c, compute),
              batch),
      start_ns);
}

}  // namespace

// ---- GEMM values on the host -----------------------------------------------------------------
// Where A, B and C are backed device memory, fp32 and fp64 GEMMs (plain, strided batched,
// batched, GemmEx with those types) are computed for real (Eigen's blocked GEMM), so programs
// that compare with a CPU GEMM (simpleCUBLAS, matrixMulCUBLAS, batchCUBLAS) or chain their
// results see the GPU's numbers. Bounded deterministically: at most 1e9 FLOPs per call and 1e11
// per process (then recorded only, with one `assumption` warning), so a long training loop is
// not slowed without bound; the time is not the program's (HostComputeScope).
constexpr double kGemmCallFlops = 1e9;
constexpr double kGemmProcessFlops = 1e11;

struct GemmBudget {
  std::mutex mu;
  double used = 0;
};
GemmBudget& gemm_budget() {
  static auto* b = new GemmBudget;  // never destroyed
  return *b;
}

// Takes `flops` from the process budget; false (and one warning) once it is spent.
bool take_gemm_budget(double flops, const char* api) {
  {
    std::lock_guard<std::mutex> lock(gemm_budget().mu);
    if (gemm_budget().used + flops <= kGemmProcessFlops) {
      gemm_budget().used += flops;
      return true;
    }
  }
  emu::report_assumption(api,
                         "GEMMs beyond 1e11 FLOPs per process are timed and recorded but "
                         "not computed on the host (their outputs are left as they were)");
  return false;
}

bool backed_span(const void* p, std::int64_t elements, std::size_t element_bytes) {
  if (elements == 0) return true;
  if (elements < 0) return false;  // an overflowed span (span_of)
  if (p == nullptr) return false;
  const detail::PointerInfo info = detail::lookup_pointer(p);
  return info.known && info.device_side && info.backed &&
         static_cast<double>(info.available) >=
             static_cast<double>(elements) * static_cast<double>(element_bytes);
}

// A scalar in host memory, or in backed device memory (device pointer mode).
template <typename T>
bool host_scalar(const T* p, T* value) {
  if (p == nullptr) return false;
  const detail::PointerInfo info = detail::lookup_pointer(p);
  if (info.known && info.device_side && (!info.backed || info.available < sizeof(T))) return false;
  *value = *p;
  return true;
}

// Elements a column-major rows x cols operand with leading dimension ld spans.
// -1 when it overflows (64-bit sizes and leading dimensions).
std::int64_t span_of(std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  if (rows <= 0 || cols <= 0) return 0;
  std::int64_t span = 0;
  if (__builtin_mul_overflow(cols - 1, ld, &span) || __builtin_add_overflow(span, rows, &span)) {
    return -1;
  }
  return span;
}

template <typename T>
bool gemm_operands_backed(cublasOperation_t ta, cublasOperation_t tb, std::int64_t m,
                          std::int64_t n, std::int64_t k, const T* a, std::int64_t lda, const T* b,
                          std::int64_t ldb, const T* c, std::int64_t ldc) {
  const bool na = ta == CUBLAS_OP_N, nb = tb == CUBLAS_OP_N;
  return backed_span(a, span_of(na ? m : k, na ? k : m, lda), sizeof(T)) &&
         backed_span(b, span_of(nb ? k : n, nb ? n : k, ldb), sizeof(T)) &&
         backed_span(c, span_of(m, n, ldc), sizeof(T));
}

// C = α·op(A)·op(B) + β·C of one problem (real types: op C and T are the same).
template <typename T>
void host_gemm(cublasOperation_t ta, cublasOperation_t tb, std::int64_t m, std::int64_t n,
               std::int64_t k, T alpha, const T* a, std::int64_t lda, const T* b, std::int64_t ldb,
               T beta, T* c, std::int64_t ldc) {
  using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
  using Stride = Eigen::OuterStride<>;
  const bool na = ta == CUBLAS_OP_N, nb = tb == CUBLAS_OP_N;
  const Eigen::Map<const Matrix, 0, Stride> ma(a, na ? m : k, na ? k : m, Stride(lda));
  const Eigen::Map<const Matrix, 0, Stride> mb(b, nb ? k : n, nb ? n : k, Stride(ldb));
  Eigen::Map<Matrix, 0, Stride> mc(c, m, n, Stride(ldc));
  if (alpha == T(0) || k == 0) {  // BLAS: A and B are not read; C = β·C (β = 0: not read)
    if (beta == T(0)) {
      mc.setZero();
    } else {
      mc *= beta;
    }
    return;
  }
  Matrix product(m, n);
  if (na && nb) {
    product.noalias() = ma * mb;
  } else if (na) {
    product.noalias() = ma * mb.transpose();
  } else if (nb) {
    product.noalias() = ma.transpose() * mb;
  } else {
    product.noalias() = ma.transpose() * mb.transpose();
  }
  if (beta == T(0)) {
    mc = alpha * product;  // β = 0: C is not read (BLAS)
  } else {
    mc = alpha * product + beta * mc;
  }
}

// The `batch` problems of a GEMM call (pointers per problem from `at`), computed when every
// operand is backed and the call is within the bounds; nothing otherwise.
template <typename T, typename At>
void compute_gemms(const char* api, cublasHandle_t handle, cublasOperation_t ta,
                   cublasOperation_t tb, std::int64_t m, std::int64_t n, std::int64_t k,
                   const T* alpha, std::int64_t lda, std::int64_t ldb, const T* beta,
                   std::int64_t ldc, std::int64_t batch, At at) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (m <= 0 || n <= 0 || batch <= 0) return;
    const double flops = 2.0 * m * n * std::max<std::int64_t>(k, 0) * static_cast<double>(batch);
    if (flops > kGemmCallFlops) return;
    T alpha_value{}, beta_value{};
    if (!host_scalar(alpha, &alpha_value) || !host_scalar(beta, &beta_value)) return;
    for (std::int64_t i = 0; i < batch; ++i) {
      const auto [a, b, c] = at(i);
      if (!gemm_operands_backed(ta, tb, m, n, k, a, lda, b, ldb, c, ldc)) return;
    }
    cudaStream_t stream = nullptr;
    {
      Handle* h = find_handle(handle, api);
      if (h == nullptr) return;
      std::lock_guard lock(h->mu);
      stream = h->stream;
    }
    // Captured: a graph node whose launches replay its record only, so its values are never
    // computed (as kernels, captured work runs nowhere here; documented, not warned about).
    if (detail::capturing_stream(stream)) return;
    if (!take_gemm_budget(flops, api)) return;
    const emu::HostComputeScope host_compute;  // not the program's time
    for (std::int64_t i = 0; i < batch; ++i) {
      const auto [a, b, c] = at(i);
      host_gemm<T>(ta, tb, m, n, k, alpha_value, a, lda, b, ldb, beta_value, c, ldc);
    }
  } else {
    (void)api, (void)handle, (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)alpha, (void)lda,
        (void)ldb, (void)beta, (void)ldc, (void)batch, (void)at;
  }
}

// An array of `batch` device pointers, read where it is backed (else nullptr: not computed).
template <typename T>
const T* pointer_at(const T* const* array, std::int64_t i, std::int64_t batch) {
  if (!backed_span(array, batch, sizeof(void*))) return nullptr;
  return array[i];
}

// -- plain GEMM
#define PT_TYPED_GEMM(name, name64, T, P)                                                          \
  PT_EXPORT cublasStatus_t name(cublasHandle_t handle, cublasOperation_t transa,                   \
                                cublasOperation_t transb, int m, int n, int k, const T* alpha,     \
                                const T* A, int lda, const T* B, int ldb, const T* beta, T* C,     \
                                int ldc) {                                                         \
    const cublasStatus_t s =                                                                       \
        typed_gemm<T, P>(#name, handle, transa, transb, m, n, k, lda, ldb, ldc);                   \
    if (s == CUBLAS_STATUS_SUCCESS) {                                                              \
      compute_gemms<T>(#name, handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, 1,      \
                       [&](std::int64_t) { return std::tuple<const T*, const T*, T*>(A, B, C); }); \
    }                                                                                              \
    return s;                                                                                      \
  }                                                                                                \
  PT_EXPORT cublasStatus_t name64(cublasHandle_t handle, cublasOperation_t transa,                 \
                                  cublasOperation_t transb, int64_t m, int64_t n, int64_t k,       \
                                  const T* alpha, const T* A, int64_t lda, const T* B,             \
                                  int64_t ldb, const T* beta, T* C, int64_t ldc) {                 \
    const cublasStatus_t s =                                                                       \
        typed_gemm<T, P>(#name64, handle, transa, transb, m, n, k, lda, ldb, ldc);                 \
    if (s == CUBLAS_STATUS_SUCCESS) {                                                              \
      compute_gemms<T>(#name64, handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, 1,    \
                       [&](std::int64_t) { return std::tuple<const T*, const T*, T*>(A, B, C); }); \
    }                                                                                              \
    return s;                                                                                      \
  }

PT_TYPED_GEMM(cublasSgemm_v2, cublasSgemm_v2_64, float, Precision::kFloat32)
PT_TYPED_GEMM(cublasDgemm_v2, cublasDgemm_v2_64, double, Precision::kFloat64)
PT_TYPED_GEMM(cublasHgemm, cublasHgemm_64, __half, Precision::kFloat16)

// -- strided batched
#define PT_TYPED_GEMM_STRIDED(name, name64, T, P)                                                 \
  PT_EXPORT cublasStatus_t name(cublasHandle_t handle, cublasOperation_t transa,                  \
                                cublasOperation_t transb, int m, int n, int k, const T* alpha,    \
                                const T* A, int lda, long long int strideA, const T* B, int ldb,  \
                                long long int strideB, const T* beta, T* C, int ldc,              \
                                long long int strideC, int batchCount) {                          \
    const cublasStatus_t s =                                                                      \
        typed_gemm<T, P>(#name, handle, transa, transb, m, n, k, lda, ldb, ldc, batchCount);      \
    if (s == CUBLAS_STATUS_SUCCESS) {                                                             \
      compute_gemms<T>(#name, handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc,        \
                       batchCount, [&](std::int64_t i) {                                          \
                         return std::tuple<const T*, const T*, T*>(                               \
                             A + i * strideA, B + i * strideB, C + i * strideC);                  \
                       });                                                                        \
    }                                                                                             \
    return s;                                                                                     \
  }                                                                                               \
  PT_EXPORT cublasStatus_t name64(cublasHandle_t handle, cublasOperation_t transa,                \
                                  cublasOperation_t transb, int64_t m, int64_t n, int64_t k,      \
                                  const T* alpha, const T* A, int64_t lda, long long int strideA, \
                                  const T* B, int64_t ldb, long long int strideB, const T* beta,  \
                                  T* C, int64_t ldc, long long int strideC, int64_t batchCount) { \
    const cublasStatus_t s =                                                                      \
        typed_gemm<T, P>(#name64, handle, transa, transb, m, n, k, lda, ldb, ldc, batchCount);    \
    if (s == CUBLAS_STATUS_SUCCESS) {                                                             \
      compute_gemms<T>(#name64, handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc,      \
                       batchCount, [&](std::int64_t i) {                                          \
                         return std::tuple<const T*, const T*, T*>(                               \
                             A + i * strideA, B + i * strideB, C + i * strideC);                  \
                       });                                                                        \
    }                                                                                             \
    return s;                                                                                     \
  }

PT_TYPED_GEMM_STRIDED(cublasSgemmStridedBatched, cublasSgemmStridedBatched_64, float,
                      Precision::kFloat32)
PT_TYPED_GEMM_STRIDED(cublasDgemmStridedBatched, cublasDgemmStridedBatched_64, double,
                      Precision::kFloat64)
PT_TYPED_GEMM_STRIDED(cublasHgemmStridedBatched, cublasHgemmStridedBatched_64, __half,
                      Precision::kFloat16)

// -- batched (arrays of device pointers)
#define PT_TYPED_GEMM_BATCHED(name, name64, T, P)                                                  \
  PT_EXPORT cublasStatus_t name(                                                                   \
      cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,     \
      int k, const T* alpha, const T* const Aarray[], int lda, const T* const Barray[], int ldb,   \
      const T* beta, T* const Carray[], int ldc, int batchCount) {                                 \
    const cublasStatus_t s =                                                                       \
        typed_gemm<T, P>(#name, handle, transa, transb, m, n, k, lda, ldb, ldc, batchCount);       \
    if (s == CUBLAS_STATUS_SUCCESS) {                                                              \
      compute_gemms<T>(#name, handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc,         \
                       batchCount, [&](std::int64_t i) {                                           \
                         return std::tuple<const T*, const T*, T*>(                                \
                             pointer_at(Aarray, i, batchCount), pointer_at(Barray, i, batchCount), \
                             const_cast<T*>(pointer_at<T>(Carray, i, batchCount)));                \
                       });                                                                         \
    }                                                                                              \
    return s;                                                                                      \
  }                                                                                                \
  PT_EXPORT cublasStatus_t name64(cublasHandle_t handle, cublasOperation_t transa,                 \
                                  cublasOperation_t transb, int64_t m, int64_t n, int64_t k,       \
                                  const T* alpha, const T* const Aarray[], int64_t lda,            \
                                  const T* const Barray[], int64_t ldb, const T* beta,             \
                                  T* const Carray[], int64_t ldc, int64_t batchCount) {            \
    const cublasStatus_t s =                                                                       \
        typed_gemm<T, P>(#name64, handle, transa, transb, m, n, k, lda, ldb, ldc, batchCount);     \
    if (s == CUBLAS_STATUS_SUCCESS) {                                                              \
      compute_gemms<T>(#name64, handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc,       \
                       batchCount, [&](std::int64_t i) {                                           \
                         return std::tuple<const T*, const T*, T*>(                                \
                             pointer_at(Aarray, i, batchCount), pointer_at(Barray, i, batchCount), \
                             const_cast<T*>(pointer_at<T>(Carray, i, batchCount)));                \
                       });                                                                         \
    }                                                                                              \
    return s;                                                                                      \
  }

PT_TYPED_GEMM_BATCHED(cublasSgemmBatched, cublasSgemmBatched_64, float, Precision::kFloat32)
PT_TYPED_GEMM_BATCHED(cublasDgemmBatched, cublasDgemmBatched_64, double, Precision::kFloat64)
PT_TYPED_GEMM_BATCHED(cublasHgemmBatched, cublasHgemmBatched_64, __half, Precision::kFloat16)

// -- mixed precision (Ex)
PT_EXPORT cublasStatus_t cublasSgemmEx(cublasHandle_t handle, cublasOperation_t transa,
                                       cublasOperation_t transb, int m, int n, int k,
                                       const float* alpha, const void* A, cudaDataType Atype,
                                       int lda, const void* B, cudaDataType Btype, int ldb,
                                       const float* beta, void* C, cudaDataType Ctype, int ldc) {
  (void)alpha, (void)A, (void)B, (void)beta, (void)C;
  return ex_gemm("cublasSgemmEx", handle, transa, transb, m, n, k, Atype, lda, Btype, ldb, Ctype,
                 ldc, CUBLAS_COMPUTE_32F);
}

PT_EXPORT cublasStatus_t cublasSgemmEx_64(cublasHandle_t handle, cublasOperation_t transa,
                                          cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                                          const float* alpha, const void* A, cudaDataType Atype,
                                          int64_t lda, const void* B, cudaDataType Btype,
                                          int64_t ldb, const float* beta, void* C,
                                          cudaDataType Ctype, int64_t ldc) {
  (void)alpha, (void)A, (void)B, (void)beta, (void)C;
  return ex_gemm("cublasSgemmEx_64", handle, transa, transb, m, n, k, Atype, lda, Btype, ldb, Ctype,
                 ldc, CUBLAS_COMPUTE_32F);
}

namespace {
// GemmEx's values when its operands and compute are all fp32 or all fp64 (compute_gemms).
void compute_gemm_ex(const char* api, cublasHandle_t handle, cublasOperation_t transa,
                     cublasOperation_t transb, std::int64_t m, std::int64_t n, std::int64_t k,
                     const void* alpha, const void* a, cudaDataType a_type, std::int64_t lda,
                     const void* b, cudaDataType b_type, std::int64_t ldb, const void* beta,
                     void* c, cudaDataType c_type, std::int64_t ldc, cublasComputeType_t compute) {
  if (a_type != b_type || b_type != c_type) return;
  const int legacy = static_cast<int>(compute);  // a cudaDataType computeType (CUDA 10 style)
  auto one = [&](auto zero) {
    using T = decltype(zero);
    compute_gemms<T>(api, handle, transa, transb, m, n, k, static_cast<const T*>(alpha), lda, ldb,
                     static_cast<const T*>(beta), ldc, 1, [&](std::int64_t) {
                       return std::tuple<const T*, const T*, T*>(
                           static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(c));
                     });
  };
  if (a_type == CUDA_R_32F && (compute == CUBLAS_COMPUTE_32F ||
                               compute == CUBLAS_COMPUTE_32F_PEDANTIC || legacy == CUDA_R_32F)) {
    one(float{});
  } else if (a_type == CUDA_R_64F &&
             (compute == CUBLAS_COMPUTE_64F || compute == CUBLAS_COMPUTE_64F_PEDANTIC ||
              legacy == CUDA_R_64F)) {
    one(double{});
  }
}
}  // namespace

PT_EXPORT cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                                      cublasOperation_t transb, int m, int n, int k,
                                      const void* alpha, const void* A, cudaDataType Atype, int lda,
                                      const void* B, cudaDataType Btype, int ldb, const void* beta,
                                      void* C, cudaDataType Ctype, int ldc,
                                      cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  (void)algo;
  const cublasStatus_t s = ex_gemm("cublasGemmEx", handle, transa, transb, m, n, k, Atype, lda,
                                   Btype, ldb, Ctype, ldc, computeType);
  if (s == CUBLAS_STATUS_SUCCESS) {
    compute_gemm_ex("cublasGemmEx", handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype,
                    ldb, beta, C, Ctype, ldc, computeType);
  }
  return s;
}

PT_EXPORT cublasStatus_t cublasGemmEx_64(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                                         const void* alpha, const void* A, cudaDataType Atype,
                                         int64_t lda, const void* B, cudaDataType Btype,
                                         int64_t ldb, const void* beta, void* C, cudaDataType Ctype,
                                         int64_t ldc, cublasComputeType_t computeType,
                                         cublasGemmAlgo_t algo) {
  (void)algo;
  const cublasStatus_t s = ex_gemm("cublasGemmEx_64", handle, transa, transb, m, n, k, Atype, lda,
                                   Btype, ldb, Ctype, ldc, computeType);
  if (s == CUBLAS_STATUS_SUCCESS) {
    compute_gemm_ex("cublasGemmEx_64", handle, transa, transb, m, n, k, alpha, A, Atype, lda, B,
                    Btype, ldb, beta, C, Ctype, ldc, computeType);
  }
  return s;
}

PT_EXPORT cublasStatus_t
cublasGemmBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                    int m, int n, int k, const void* alpha, const void* const Aarray[],
                    cudaDataType Atype, int lda, const void* const Barray[], cudaDataType Btype,
                    int ldb, const void* beta, void* const Carray[], cudaDataType Ctype, int ldc,
                    int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  (void)alpha, (void)Aarray, (void)Barray, (void)beta, (void)Carray, (void)algo;
  return ex_gemm("cublasGemmBatchedEx", handle, transa, transb, m, n, k, Atype, lda, Btype, ldb,
                 Ctype, ldc, computeType, batchCount);
}

PT_EXPORT cublasStatus_t cublasGemmBatchedEx_64(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m, int64_t n,
    int64_t k, const void* alpha, const void* const Aarray[], cudaDataType Atype, int64_t lda,
    const void* const Barray[], cudaDataType Btype, int64_t ldb, const void* beta,
    void* const Carray[], cudaDataType Ctype, int64_t ldc, int64_t batchCount,
    cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  (void)alpha, (void)Aarray, (void)Barray, (void)beta, (void)Carray, (void)algo;
  return ex_gemm("cublasGemmBatchedEx_64", handle, transa, transb, m, n, k, Atype, lda, Btype, ldb,
                 Ctype, ldc, computeType, batchCount);
}

PT_EXPORT cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void* alpha, const void* A, cudaDataType Atype, int lda, long long int strideA,
    const void* B, cudaDataType Btype, int ldb, long long int strideB, const void* beta, void* C,
    cudaDataType Ctype, int ldc, long long int strideC, int batchCount,
    cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  (void)alpha, (void)A, (void)B, (void)beta, (void)C, (void)algo, (void)strideA, (void)strideB,
      (void)strideC;
  return ex_gemm("cublasGemmStridedBatchedEx", handle, transa, transb, m, n, k, Atype, lda, Btype,
                 ldb, Ctype, ldc, computeType, batchCount);
}

PT_EXPORT cublasStatus_t cublasGemmStridedBatchedEx_64(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m, int64_t n,
    int64_t k, const void* alpha, const void* A, cudaDataType Atype, int64_t lda,
    long long int strideA, const void* B, cudaDataType Btype, int64_t ldb, long long int strideB,
    const void* beta, void* C, cudaDataType Ctype, int64_t ldc, long long int strideC,
    int64_t batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  (void)alpha, (void)A, (void)B, (void)beta, (void)C, (void)algo, (void)strideA, (void)strideB,
      (void)strideC;
  return ex_gemm("cublasGemmStridedBatchedEx_64", handle, transa, transb, m, n, k, Atype, lda,
                 Btype, ldb, Ctype, ldc, computeType, batchCount);
}

// -- grouped batched (host arrays of per-group parameters; one record per group)
PT_EXPORT cublasStatus_t cublasSgemmGroupedBatched(
    cublasHandle_t handle, const cublasOperation_t transa_array[],
    const cublasOperation_t transb_array[], const int m_array[], const int n_array[],
    const int k_array[], const float alpha_array[], const float* const Aarray[],
    const int lda_array[], const float* const Barray[], const int ldb_array[],
    const float beta_array[], float* const Carray[], const int ldc_array[], int group_count,
    const int group_size[]) {
  (void)alpha_array, (void)Aarray, (void)Barray, (void)beta_array, (void)Carray;
  return grouped("cublasSgemmGroupedBatched", handle, transa_array, transb_array, m_array, n_array,
                 k_array, lda_array, ldb_array, ldc_array, group_count, group_size,
                 Precision::kFloat32, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, 0);
}

PT_EXPORT cublasStatus_t cublasSgemmGroupedBatched_64(
    cublasHandle_t handle, const cublasOperation_t transa_array[],
    const cublasOperation_t transb_array[], const int64_t m_array[], const int64_t n_array[],
    const int64_t k_array[], const float alpha_array[], const float* const Aarray[],
    const int64_t lda_array[], const float* const Barray[], const int64_t ldb_array[],
    const float beta_array[], float* const Carray[], const int64_t ldc_array[], int64_t group_count,
    const int64_t group_size[]) {
  (void)alpha_array, (void)Aarray, (void)Barray, (void)beta_array, (void)Carray;
  return grouped("cublasSgemmGroupedBatched_64", handle, transa_array, transb_array, m_array,
                 n_array, k_array, lda_array, ldb_array, ldc_array, group_count, group_size,
                 Precision::kFloat32, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, 0);
}

PT_EXPORT cublasStatus_t cublasDgemmGroupedBatched(
    cublasHandle_t handle, const cublasOperation_t transa_array[],
    const cublasOperation_t transb_array[], const int m_array[], const int n_array[],
    const int k_array[], const double alpha_array[], const double* const Aarray[],
    const int lda_array[], const double* const Barray[], const int ldb_array[],
    const double beta_array[], double* const Carray[], const int ldc_array[], int group_count,
    const int group_size[]) {
  (void)alpha_array, (void)Aarray, (void)Barray, (void)beta_array, (void)Carray;
  return grouped("cublasDgemmGroupedBatched", handle, transa_array, transb_array, m_array, n_array,
                 k_array, lda_array, ldb_array, ldc_array, group_count, group_size,
                 Precision::kFloat64, CUDA_R_64F, CUDA_R_64F, CUDA_R_64F, 0);
}

PT_EXPORT cublasStatus_t cublasDgemmGroupedBatched_64(
    cublasHandle_t handle, const cublasOperation_t transa_array[],
    const cublasOperation_t transb_array[], const int64_t m_array[], const int64_t n_array[],
    const int64_t k_array[], const double alpha_array[], const double* const Aarray[],
    const int64_t lda_array[], const double* const Barray[], const int64_t ldb_array[],
    const double beta_array[], double* const Carray[], const int64_t ldc_array[],
    int64_t group_count, const int64_t group_size[]) {
  (void)alpha_array, (void)Aarray, (void)Barray, (void)beta_array, (void)Carray;
  return grouped("cublasDgemmGroupedBatched_64", handle, transa_array, transb_array, m_array,
                 n_array, k_array, lda_array, ldb_array, ldc_array, group_count, group_size,
                 Precision::kFloat64, CUDA_R_64F, CUDA_R_64F, CUDA_R_64F, 0);
}

PT_EXPORT cublasStatus_t cublasGemmGroupedBatchedEx(
    cublasHandle_t handle, const cublasOperation_t transa_array[],
    const cublasOperation_t transb_array[], const int m_array[], const int n_array[],
    const int k_array[], const void* alpha_array, const void* const Aarray[], cudaDataType_t Atype,
    const int lda_array[], const void* const Barray[], cudaDataType_t Btype, const int ldb_array[],
    const void* beta_array, void* const Carray[], cudaDataType_t Ctype, const int ldc_array[],
    int group_count, const int group_size[], cublasComputeType_t computeType) {
  (void)alpha_array, (void)Aarray, (void)Barray, (void)beta_array, (void)Carray;
  return grouped("cublasGemmGroupedBatchedEx", handle, transa_array, transb_array, m_array, n_array,
                 k_array, lda_array, ldb_array, ldc_array, group_count, group_size,
                 Precision::kExplicit, Atype, Btype, Ctype, computeType);
}

PT_EXPORT cublasStatus_t cublasGemmGroupedBatchedEx_64(
    cublasHandle_t handle, const cublasOperation_t transa_array[],
    const cublasOperation_t transb_array[], const int64_t m_array[], const int64_t n_array[],
    const int64_t k_array[], const void* alpha_array, const void* const Aarray[],
    cudaDataType_t Atype, const int64_t lda_array[], const void* const Barray[],
    cudaDataType_t Btype, const int64_t ldb_array[], const void* beta_array, void* const Carray[],
    cudaDataType_t Ctype, const int64_t ldc_array[], int64_t group_count,
    const int64_t group_size[], cublasComputeType_t computeType) {
  (void)alpha_array, (void)Aarray, (void)Barray, (void)beta_array, (void)Carray;
  return grouped("cublasGemmGroupedBatchedEx_64", handle, transa_array, transb_array, m_array,
                 n_array, k_array, lda_array, ldb_array, ldc_array, group_count, group_size,
                 Precision::kExplicit, Atype, Btype, Ctype, computeType);
}

// ---- level 1 and level 2 (vectors, GEMV) ----------------------------------------------------
// Memory-bound kernels `cublas_<op>_<dtype>` carrying their FLOPs and the bytes they move (timed
// by the roofline of the two). Vectors must be device memory of their span (else a misuse report
// and CUBLAS_STATUS_EXECUTION_FAILED, where the GPU would fault). Where every operand is backed
// memory the operation is computed for real, as copies move real bytes, so a program that reads
// a norm or a dot product back sees the value of the data it copied in (data written by kernels
// is of course not there); otherwise results are 0. A scalar result in host pointer mode is a
// blocking call in cuBLAS: it is followed by a stream synchronization record.

namespace powertrain::emu::cublas_detail {

// Checks that `v` lies in device memory; fills v.backed.
bool device_vector(Vec& v, const char* api, const char* what) {
  if (v.n <= 0) return true;
  const detail::PointerInfo info = detail::lookup_pointer(v.p);
  if (!info.known || !info.device_side ||
      info.available < static_cast<std::size_t>(v.span_bytes())) {
    emu::report_misuse(api, std::string(what) + " " + detail::pointer_text(v.p) +
                                " is not device memory of " + std::to_string(v.span_bytes()) +
                                " bytes");
    return false;
  }
  v.backed = info.backed;
  return true;
}

// Finds the handle and reads its stream and pointer mode.
bool open_call(Blas1& c) {
  c.start = emu::now_ns();
  Handle* h = find_handle(c.handle, c.api);
  if (h == nullptr) return false;
  std::lock_guard lock(h->mu);
  c.stream = h->stream;
  c.mode = h->pointer_mode;
  return true;
}

cublasStatus_t finish(const Blas1& c, const char* op, const char* dtype, std::int64_t flops,
                      std::int64_t bytes, bool blocking) {
  const std::string name = std::string("cublas_") + op + "_" + dtype;
  if (!detail::append_sized_kernel(name, static_cast<std::size_t>(std::max<std::int64_t>(bytes, 1)),
                                   c.stream, c.api, c.start, flops)) {
    return CUBLAS_STATUS_EXECUTION_FAILED;
  }
  if (blocking && c.mode == CUBLAS_POINTER_MODE_HOST) {
    detail::impl::stream_synchronize(c.stream, false, c.api, true);
  }
  return CUBLAS_STATUS_SUCCESS;
}

bool bad_sizes(const Blas1& c, std::int64_t n, std::int64_t incx, std::int64_t incy, bool two) {
  if (n < 0 || incx == 0 || (two && incy == 0)) {
    emu::report_misuse(c.api, "invalid n " + std::to_string(n) + " or increment (incx " +
                                  std::to_string(incx) +
                                  (two ? ", incy " + std::to_string(incy) : std::string()) + ")");
    return true;
  }
  return false;
}

// y = alpha·x + y
template <typename T>
cublasStatus_t axpy(Blas1 c, std::int64_t n, const T* alpha, const T* x, std::int64_t incx, T* y,
                    std::int64_t incy) {
  if (!open_call(c)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (bad_sizes(c, n, incx, incy, true)) return CUBLAS_STATUS_INVALID_VALUE;
  bool ok = true;
  const T a = read_scalar(alpha, c.mode, &ok, c.api, "alpha");
  if (!ok) return CUBLAS_STATUS_INVALID_VALUE;
  Vec vx{x, n, incx, sizeof(T)}, vy{y, n, incy, sizeof(T)};
  if (!device_vector(vx, c.api, "x") || !device_vector(vy, c.api, "y"))
    return CUBLAS_STATUS_EXECUTION_FAILED;
  if ((vx.backed && vy.backed) && !detail::capturing_stream(c.stream)) {
    const powertrain::emu::HostComputeScope host_compute;  // not the program's time
    for (std::int64_t i = 0; i < n; ++i) *at<T>(vy, i) += a * *at<T>(vx, i);
  }
  return finish(c, "axpy", type_name<T>(), sat_mul(2, n), sat_mul(sat_mul(3, n), sizeof(T)), false);
}

// x = alpha·x
template <typename T>
cublasStatus_t scal(Blas1 c, std::int64_t n, const T* alpha, T* x, std::int64_t incx) {
  if (!open_call(c)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (bad_sizes(c, n, incx, 1, false)) return CUBLAS_STATUS_INVALID_VALUE;
  bool ok = true;
  const T a = read_scalar(alpha, c.mode, &ok, c.api, "alpha");
  if (!ok) return CUBLAS_STATUS_INVALID_VALUE;
  Vec vx{x, n, incx, sizeof(T)};
  if (!device_vector(vx, c.api, "x")) return CUBLAS_STATUS_EXECUTION_FAILED;
  if ((vx.backed) && !detail::capturing_stream(c.stream)) {
    const powertrain::emu::HostComputeScope host_compute;  // not the program's time
    for (std::int64_t i = 0; i < n; ++i) *at<T>(vx, i) *= a;
  }
  return finish(c, "scal", type_name<T>(), n, sat_mul(sat_mul(2, n), sizeof(T)), false);
}

// y = x (copy) or x ↔ y (swap)
template <typename T>
cublasStatus_t copy_or_swap(Blas1 c, bool swap, std::int64_t n, T* x, std::int64_t incx, T* y,
                            std::int64_t incy) {
  if (!open_call(c)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (bad_sizes(c, n, incx, incy, true)) return CUBLAS_STATUS_INVALID_VALUE;
  Vec vx{x, n, incx, sizeof(T)}, vy{y, n, incy, sizeof(T)};
  if (!device_vector(vx, c.api, "x") || !device_vector(vy, c.api, "y"))
    return CUBLAS_STATUS_EXECUTION_FAILED;
  if ((vx.backed && vy.backed) && !detail::capturing_stream(c.stream)) {
    const powertrain::emu::HostComputeScope host_compute;  // not the program's time
    for (std::int64_t i = 0; i < n; ++i) {
      if (swap) {
        std::swap(*at<T>(vx, i), *at<T>(vy, i));
      } else {
        *at<T>(vy, i) = *at<T>(vx, i);
      }
    }
  }
  return finish(c, swap ? "swap" : "copy", type_name<T>(), 0,
                sat_mul(sat_mul(swap ? 4 : 2, n), sizeof(T)), false);
}

enum class Reduce { kDot, kNrm2, kAsum };

// dot(x, y), ‖x‖₂ or Σ|x| into `result`
template <typename T>
cublasStatus_t reduce(Blas1 c, Reduce what, std::int64_t n, const T* x, std::int64_t incx,
                      const T* y, std::int64_t incy, T* result) {
  if (!open_call(c)) return CUBLAS_STATUS_NOT_INITIALIZED;
  const bool two = what == Reduce::kDot;
  if (bad_sizes(c, n, incx, two ? incy : 1, two)) return CUBLAS_STATUS_INVALID_VALUE;
  Vec vx{x, n, incx, sizeof(T)}, vy{y, two ? n : 0, incy, sizeof(T)};
  if (!device_vector(vx, c.api, "x") || (two && !device_vector(vy, c.api, "y")))
    return CUBLAS_STATUS_EXECUTION_FAILED;
  double sum = 0;  // accumulated in double: the value, not cuBLAS's rounding, is the point
  if ((vx.backed && (!two || vy.backed)) && !detail::capturing_stream(c.stream)) {
    const powertrain::emu::HostComputeScope host_compute;  // not the program's time
    for (std::int64_t i = 0; i < n; ++i) {
      const double v = *at<T>(vx, i);
      sum += what == Reduce::kDot ? v * *at<T>(vy, i) : what == Reduce::kNrm2 ? v * v : std::abs(v);
    }
  }
  if (what == Reduce::kNrm2) sum = std::sqrt(sum);
  if (!write_result(result, static_cast<T>(sum), c)) return CUBLAS_STATUS_INVALID_VALUE;
  const char* op = what == Reduce::kDot ? "dot" : what == Reduce::kNrm2 ? "nrm2" : "asum";
  return finish(c, op, type_name<T>(), sat_mul(two || what == Reduce::kNrm2 ? 2 : 1, n),
                sat_mul(sat_mul(two ? 2 : 1, n), sizeof(T)), true);
}

// 1-based index of the first element of largest (or smallest) magnitude; 0 for n ≤ 0.
template <typename T, typename R>
cublasStatus_t iamax(Blas1 c, bool largest, std::int64_t n, const T* x, std::int64_t incx,
                     R* result) {
  if (!open_call(c)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (n < 0) n = 0;  // cuBLAS answers 0 for n ≤ 0 or incx ≤ 0
  if (incx <= 0) n = 0;
  Vec vx{x, n, incx, sizeof(T)};
  if (!device_vector(vx, c.api, "x")) return CUBLAS_STATUS_EXECUTION_FAILED;
  std::int64_t best = n > 0 ? 1 : 0;
  if ((vx.backed && n > 0) && !detail::capturing_stream(c.stream)) {
    const powertrain::emu::HostComputeScope host_compute;  // not the program's time
    T value = std::abs(*at<T>(vx, 0));
    for (std::int64_t i = 1; i < n; ++i) {
      const T v = std::abs(*at<T>(vx, i));
      if (largest ? v > value : v < value) value = v, best = i + 1;
    }
  }
  if (!write_result(result, static_cast<R>(best), c)) return CUBLAS_STATUS_INVALID_VALUE;
  return finish(c, largest ? "iamax" : "iamin", type_name<T>(), n, sat_mul(n, sizeof(T)), true);
}

// y = alpha·op(A)·x + beta·y, A m×n column-major with leading dimension lda.
template <typename T>
cublasStatus_t gemv(Blas1 c, cublasOperation_t trans, std::int64_t m, std::int64_t n,
                    const T* alpha, const T* A, std::int64_t lda, const T* x, std::int64_t incx,
                    const T* beta, T* y, std::int64_t incy) {
  if (!open_call(c)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (libs::blas_op_text(trans) == nullptr || m < 0 || n < 0 ||
      lda < std::max<std::int64_t>(1, m) || incx == 0 || incy == 0) {
    emu::report_misuse(c.api, "invalid trans " + std::to_string(static_cast<int>(trans)) + ", m " +
                                  std::to_string(m) + ", n " + std::to_string(n) + ", lda " +
                                  std::to_string(lda) + " or increment");
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  bool ok = true;
  const T a = read_scalar(alpha, c.mode, &ok, c.api, "alpha");
  const T b = ok ? read_scalar(beta, c.mode, &ok, c.api, "beta") : T(0);
  if (!ok) return CUBLAS_STATUS_INVALID_VALUE;
  const bool t = trans != CUBLAS_OP_N;
  const std::int64_t xs = t ? m : n, ys = t ? n : m;
  Vec va{A, n, lda, sizeof(T)}, vx{x, xs, incx, sizeof(T)}, vy{y, ys, incy, sizeof(T)};
  // A's span: n columns of lda elements, the last one m long.
  va.n = sat_add(sat_mul(n - 1, lda), m);
  va.inc = 1;
  if (!device_vector(va, c.api, "A") || !device_vector(vx, c.api, "x") ||
      !device_vector(vy, c.api, "y"))
    return CUBLAS_STATUS_EXECUTION_FAILED;
  if ((va.backed && vx.backed && vy.backed) && !detail::capturing_stream(c.stream)) {
    const powertrain::emu::HostComputeScope host_compute;  // not the program's time
    const T* base = static_cast<const T*>(A);
    std::vector<double> out(static_cast<std::size_t>(ys), 0.0);
    for (std::int64_t j = 0; j < n; ++j) {
      for (std::int64_t i = 0; i < m; ++i) {
        const double aij = base[j * lda + i];
        if (t) {
          out[static_cast<std::size_t>(j)] += aij * *at<T>(vx, i);
        } else {
          out[static_cast<std::size_t>(i)] += aij * *at<T>(vx, j);
        }
      }
    }
    for (std::int64_t i = 0; i < ys; ++i) {
      T& yi = *at<T>(vy, i);
      yi = static_cast<T>(a * out[static_cast<std::size_t>(i)] + (b == T(0) ? T(0) : b * yi));
    }
  }
  const std::int64_t bytes =
      sat_mul(sat_add(sat_add(sat_mul(m, n), xs), sat_mul(b == T(0) ? 1 : 2, ys)), sizeof(T));
  return finish(c, "gemv", type_name<T>(), sat_mul(2, sat_mul(m, n)), bytes, false);
}

}  // namespace powertrain::emu::cublas_detail

#define PT_BLAS1_TYPED(S, s, T)                                                                    \
  PT_EXPORT cublasStatus_t cublas##S##axpy_v2(cublasHandle_t handle, int n, const T* alpha,        \
                                              const T* x, int incx, T* y, int incy) {              \
    return axpy<T>({"cublas" #S "axpy_v2", handle}, n, alpha, x, incx, y, incy);                   \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##S##axpy_v2_64(cublasHandle_t handle, int64_t n, const T* alpha, \
                                                 const T* x, int64_t incx, T* y, int64_t incy) {   \
    return axpy<T>({"cublas" #S "axpy_v2_64", handle}, n, alpha, x, incx, y, incy);                \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##S##scal_v2(cublasHandle_t handle, int n, const T* alpha, T* x,  \
                                              int incx) {                                          \
    return scal<T>({"cublas" #S "scal_v2", handle}, n, alpha, x, incx);                            \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##S##scal_v2_64(cublasHandle_t handle, int64_t n, const T* alpha, \
                                                 T* x, int64_t incx) {                             \
    return scal<T>({"cublas" #S "scal_v2_64", handle}, n, alpha, x, incx);                         \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##S##copy_v2(cublasHandle_t handle, int n, const T* x, int incx,  \
                                              T* y, int incy) {                                    \
    return copy_or_swap<T>({"cublas" #S "copy_v2", handle}, false, n, const_cast<T*>(x), incx, y,  \
                           incy);                                                                  \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##S##copy_v2_64(cublasHandle_t handle, int64_t n, const T* x,     \
                                                 int64_t incx, T* y, int64_t incy) {               \
    return copy_or_swap<T>({"cublas" #S "copy_v2_64", handle}, false, n, const_cast<T*>(x), incx,  \
                           y, incy);                                                               \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##S##swap_v2(cublasHandle_t handle, int n, T* x, int incx, T* y,  \
                                              int incy) {                                          \
    return copy_or_swap<T>({"cublas" #S "swap_v2", handle}, true, n, x, incx, y, incy);            \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##S##swap_v2_64(cublasHandle_t handle, int64_t n, T* x,           \
                                                 int64_t incx, T* y, int64_t incy) {               \
    return copy_or_swap<T>({"cublas" #S "swap_v2_64", handle}, true, n, x, incx, y, incy);         \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##S##dot_v2(cublasHandle_t handle, int n, const T* x, int incx,   \
                                             const T* y, int incy, T* result) {                    \
    return reduce<T>({"cublas" #S "dot_v2", handle}, Reduce::kDot, n, x, incx, y, incy, result);   \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##S##dot_v2_64(cublasHandle_t handle, int64_t n, const T* x,      \
                                                int64_t incx, const T* y, int64_t incy,            \
                                                T* result) {                                       \
    return reduce<T>({"cublas" #S "dot_v2_64", handle}, Reduce::kDot, n, x, incx, y, incy,         \
                     result);                                                                      \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##S##nrm2_v2(cublasHandle_t handle, int n, const T* x, int incx,  \
                                              T* result) {                                         \
    return reduce<T>({"cublas" #S "nrm2_v2", handle}, Reduce::kNrm2, n, x, incx, nullptr, 1,       \
                     result);                                                                      \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##S##nrm2_v2_64(cublasHandle_t handle, int64_t n, const T* x,     \
                                                 int64_t incx, T* result) {                        \
    return reduce<T>({"cublas" #S "nrm2_v2_64", handle}, Reduce::kNrm2, n, x, incx, nullptr, 1,    \
                     result);                                                                      \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##S##asum_v2(cublasHandle_t handle, int n, const T* x, int incx,  \
                                              T* result) {                                         \
    return reduce<T>({"cublas" #S "asum_v2", handle}, Reduce::kAsum, n, x, incx, nullptr, 1,       \
                     result);                                                                      \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##S##asum_v2_64(cublasHandle_t handle, int64_t n, const T* x,     \
                                                 int64_t incx, T* result) {                        \
    return reduce<T>({"cublas" #S "asum_v2_64", handle}, Reduce::kAsum, n, x, incx, nullptr, 1,    \
                     result);                                                                      \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublasI##s##amax_v2(cublasHandle_t handle, int n, const T* x, int incx, \
                                               int* result) {                                      \
    return iamax<T, int>({"cublasI" #s "amax_v2", handle}, true, n, x, incx, result);              \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublasI##s##amax_v2_64(cublasHandle_t handle, int64_t n, const T* x,    \
                                                  int64_t incx, int64_t* result) {                 \
    return iamax<T, int64_t>({"cublasI" #s "amax_v2_64", handle}, true, n, x, incx, result);       \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublasI##s##amin_v2(cublasHandle_t handle, int n, const T* x, int incx, \
                                               int* result) {                                      \
    return iamax<T, int>({"cublasI" #s "amin_v2", handle}, false, n, x, incx, result);             \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublasI##s##amin_v2_64(cublasHandle_t handle, int64_t n, const T* x,    \
                                                  int64_t incx, int64_t* result) {                 \
    return iamax<T, int64_t>({"cublasI" #s "amin_v2_64", handle}, false, n, x, incx, result);      \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##S##gemv_v2(                                                     \
      cublasHandle_t handle, cublasOperation_t trans, int m, int n, const T* alpha, const T* A,    \
      int lda, const T* x, int incx, const T* beta, T* y, int incy) {                              \
    return gemv<T>({"cublas" #S "gemv_v2", handle}, trans, m, n, alpha, A, lda, x, incx, beta, y,  \
                   incy);                                                                          \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##S##gemv_v2_64(                                                  \
      cublasHandle_t handle, cublasOperation_t trans, int64_t m, int64_t n, const T* alpha,        \
      const T* A, int64_t lda, const T* x, int64_t incx, const T* beta, T* y, int64_t incy) {      \
    return gemv<T>({"cublas" #S "gemv_v2_64", handle}, trans, m, n, alpha, A, lda, x, incx, beta,  \
                   y, incy);                                                                       \
  }

PT_BLAS1_TYPED(S, s, float)
PT_BLAS1_TYPED(D, d, double)

// ---- TRSM (cuSolverDn_LinearSolver's QR path) -------------------------------------------------
// op(A)·X = alpha·B (left) or X·op(A) = alpha·B (right), A triangular: m²n (left) or mn² (right)
// FLOPs, recorded as the GEMM of the same FLOPs — m × n with k half the triangle's order — so the
// GEMM estimator times it. Nothing is solved (B keeps its values).
namespace {

template <typename T, Precision P>
cublasStatus_t trsm(const char* api, cublasHandle_t handle, cublasSideMode_t side,
                    cublasFillMode_t uplo, cublasOperation_t trans, cublasDiagType_t diag,
                    std::int64_t m, std::int64_t n, const T* alpha, const T* A, std::int64_t lda,
                    T* B, std::int64_t ldb) {
  const std::int64_t start_ns = emu::now_ns();
  const bool left = side == CUBLAS_SIDE_LEFT;
  const std::int64_t order = left ? m : n;
  if ((side != CUBLAS_SIDE_LEFT && side != CUBLAS_SIDE_RIGHT) ||
      (uplo != CUBLAS_FILL_MODE_LOWER && uplo != CUBLAS_FILL_MODE_UPPER) ||
      libs::blas_op_text(trans) == nullptr ||
      (diag != CUBLAS_DIAG_NON_UNIT && diag != CUBLAS_DIAG_UNIT) || m < 0 || n < 0 ||
      lda < std::max<std::int64_t>(1, order) || ldb < std::max<std::int64_t>(1, m)) {
    if (find_handle(handle, api) == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    return misuse(api,
                  "invalid side/uplo/trans/diag or sizes (m=" + std::to_string(m) +
                      ", n=" + std::to_string(n) + ", lda=" + std::to_string(lda) +
                      ", ldb=" + std::to_string(ldb) + ")",
                  CUBLAS_STATUS_INVALID_VALUE);
  }
  (void)alpha, (void)A, (void)B;
  Gemm g =
      typed(make(api, handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, (order + 1) / 2,
                 std::max<std::int64_t>(1, m), std::max<std::int64_t>(1, (order + 1) / 2), ldb),
            P);
  return run_gemm(g, start_ns);
}

}  // namespace

#define PT_TRSM(S, T, P)                                                                           \
  PT_EXPORT cublasStatus_t cublas##S##trsm_v2(cublasHandle_t handle, cublasSideMode_t side,        \
                                              cublasFillMode_t uplo, cublasOperation_t trans,      \
                                              cublasDiagType_t diag, int m, int n, const T* alpha, \
                                              const T* A, int lda, T* B, int ldb) {                \
    return trsm<T, P>("cublas" #S "trsm_v2", handle, side, uplo, trans, diag, m, n, alpha, A, lda, \
                      B, ldb);                                                                     \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##S##trsm_v2_64(                                                  \
      cublasHandle_t handle, cublasSideMode_t side, cublasFillMode_t uplo,                         \
      cublasOperation_t trans, cublasDiagType_t diag, int64_t m, int64_t n, const T* alpha,        \
      const T* A, int64_t lda, T* B, int64_t ldb) {                                                \
    return trsm<T, P>("cublas" #S "trsm_v2_64", handle, side, uplo, trans, diag, m, n, alpha, A,   \
                      lda, B, ldb);                                                                \
  }

PT_TRSM(S, float, Precision::kFloat32)
PT_TRSM(D, double, Precision::kFloat64)
