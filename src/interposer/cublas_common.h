// Shared by the cuBLAS (cublas_emu.cc) and cuBLASLt (cublas_lt_emu.cc) emulation: the `gemm`
// trace record (docs/emulation-trace.md) and the names written into it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "interposer/cublas_nccl_util.h"
#include "interposer/emulator.h"
#include "interposer/trace_schema.h"

namespace powertrain::emu::libs {

// cuBLAS status codes (cublas_api.h), usable without including the cuBLAS headers.
inline constexpr int kBlasSuccess = 0;
inline constexpr int kBlasNotInitialized = 1;
inline constexpr int kBlasAllocFailed = 3;
inline constexpr int kBlasInvalidValue = 7;
inline constexpr int kBlasMappingError = 11;
inline constexpr int kBlasExecutionFailed = 13;
inline constexpr int kBlasNotSupported = 15;

/// Reports `what` as misuse of `api` and returns `status` (a cublasStatus_t), so that a check in
/// the cuBLAS or cuBLASLt emulation reads `return misuse(api, "...", CUBLAS_STATUS_...);`.
template <typename Status>
Status misuse(std::string_view api, const std::string& what, Status status) {
  report_misuse(api, what);
  return status;
}

/// "N", "T", "C" for cublasOperation_t; nullptr if invalid.
inline const char* blas_op_text(int op) {
  switch (op) {
    case 0:
      return "N";
    case 1:
      return "T";
    case 2:
      return "C";
    default:
      return nullptr;
  }
}

/// Trace name of a cublasComputeType_t; nullptr if unknown.
inline const char* compute_type_name(int compute) {
  switch (compute) {
    case 64:
      return "float16";
    case 65:
      return "float16_pedantic";
    case 68:
      return "float32";
    case 69:
      return "float32_pedantic";
    case 70:
      return "float64";
    case 71:
      return "float64_pedantic";
    case 72:
      return "int32";
    case 73:
      return "int32_pedantic";
    case 74:
      return "float32_fast_float16";
    case 75:
      return "float32_fast_bfloat16";
    case 77:
      return "float32_fast_tf32";
    case 78:
      return "float32_emulated_bfloat16x9";
    case 79:
      return "float64_emulated_fixedpoint";
    default:
      return nullptr;
  }
}

/// Names of cublasStatus_t values (cublasGetStatusName / cublasLtGetStatusName).
inline const char* blas_status_name(int status) {
  switch (status) {
    case 0:
      return "CUBLAS_STATUS_SUCCESS";
    case 1:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case 3:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case 7:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case 8:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case 11:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case 13:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case 14:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case 15:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case 16:
      return "CUBLAS_STATUS_LICENSE_ERROR";
    default:
      return "CUBLAS_STATUS_UNKNOWN";
  }
}

/// cublasGetProperty / cublasLtGetProperty: MAJOR_VERSION (0), MINOR_VERSION (1) or PATCH_LEVEL
/// (2) of the emulated library; a NULL value or another type is misuse
/// (CUBLAS_STATUS_INVALID_VALUE).
inline int library_property(std::string_view api, int type, int* value, int major, int minor,
                            int patch) {
  if (value == nullptr) {
    report_misuse(api, "value is NULL");
    return kBlasInvalidValue;
  }
  switch (type) {
    case 0:
      *value = major;
      return kBlasSuccess;
    case 1:
      *value = minor;
      return kBlasSuccess;
    case 2:
      *value = patch;
      return kBlasSuccess;
    default:
      report_misuse(api, "invalid property type");
      return kBlasInvalidValue;
  }
}

inline const char* blas_status_string(int status) {
  switch (status) {
    case 0:
      return "the operation completed successfully";
    case 1:
      return "the library was not initialized";
    case 3:
      return "the resource allocation failed";
    case 7:
      return "an invalid numeric value was used as an argument";
    case 8:
      return "an absent device architectural feature is required";
    case 11:
      return "an access to GPU memory space failed";
    case 13:
      return "the GPU program failed to execute";
    case 14:
      return "an internal operation failed";
    case 15:
      return "the functionality requested is not supported";
    case 16:
      return "an error detected when checking the current licensing";
    default:
      return "unknown error";
  }
}

/// One GEMM (or a batch of equal GEMMs) as written to the trace.
struct GemmRecord {
  std::string_view api;
  std::int64_t start_ns = 0;
  int device = 0;
  std::int64_t stream = 0;
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  int transa = 0, transb = 0;
  int dtype_a = 0, dtype_b = 0, dtype_c = 0;
  int dtype_d = -1;  // cuBLASLt only
  std::string_view compute;
  std::string_view scale;     // cuBLASLt only
  std::string_view epilogue;  // cuBLASLt only, empty for the default epilogue
  std::int64_t corr = 0;      // 0: take the next correlation id
};

inline void record_gemm(const GemmRecord& g) {
  auto put = [](RecordBuilder& r, std::string_view key, std::int64_t value) {
    r.field(key, value);
  };
  auto dtype = [](int type) -> std::string {
    const char* name = cuda_dtype_name(type);
    return name != nullptr ? name : "cuda_dtype_" + std::to_string(type);
  };
  auto record = begin_work(trace_schema::op::kGemm, g.start_ns);
  record.field(trace_schema::field::kApi, g.api);
  put(record, trace_schema::field::kM, g.m);
  put(record, trace_schema::field::kN, g.n);
  put(record, trace_schema::field::kK, g.k);
  put(record, trace_schema::field::kBatch, g.batch);
  record.field("transa", blas_op_text(g.transa));
  record.field("transb", blas_op_text(g.transb));
  record.field(trace_schema::field::kDtypeA, dtype(g.dtype_a));
  record.field(trace_schema::field::kDtypeB, dtype(g.dtype_b));
  record.field(trace_schema::field::kDtypeC, dtype(g.dtype_c));
  if (g.dtype_d >= 0) record.field("dtype_d", dtype(g.dtype_d));
  record.field(trace_schema::field::kCompute, g.compute);
  if (!g.scale.empty()) record.field("scale", g.scale);
  if (!g.epilogue.empty()) record.field("epilogue", g.epilogue);
  // 2·m·n·k·batch real FLOPs, 4× that for complex operands (a complex multiply-add is 8 real
  // FLOPs); exact as an integer while it fits, a double beyond (never overflows).
  const char* a_name = cuda_dtype_name(g.dtype_a);
  const std::int64_t per_product =
      a_name != nullptr && std::string_view(a_name).rfind("complex", 0) == 0 ? 8 : 2;
  const double flops = static_cast<double>(per_product) * static_cast<double>(g.m) *
                       static_cast<double>(g.n) * static_cast<double>(g.k) *
                       static_cast<double>(g.batch);
  if (flops < 9.0e18) {
    put(record, trace_schema::field::kFlops, per_product * g.m * g.n * g.k * g.batch);
  } else {
    record.field(trace_schema::field::kFlops, flops);
  }
  // A work record: captured into a CUDA graph when its stream is capturing.
  end_work(record, g.device, g.stream, g.corr);
}

}  // namespace powertrain::emu::libs
