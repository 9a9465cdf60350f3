// What the cuBLAS emulation's files share (cublas_emu.cc: handles, the GEMM family, level 1 and
// GEMV; cublas_blas_emu.cc: the rest of levels 1-3 and the batched extensions): handles, the
// GEMM record path, and the vector operands of the memory-bound routines.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#pragma GCC visibility push(default)
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#pragma GCC visibility pop

#include "interposer/cublas_common.h"
#include "interposer/cublas_nccl_util.h"
#include "interposer/cudart_impl.h"
#include "interposer/cudart_internal.h"
#include "interposer/emulator.h"

namespace powertrain::emu::cublas_detail {

namespace emu = powertrain::emu;
namespace libs = powertrain::emu::libs;
namespace detail = powertrain::emu::detail;
using libs::handle_text;
using libs::misuse;

struct Handle {
  int device = 0;
  bool live = true;  // guarded by Registry::mu
  std::mutex mu;     // guards the settings below
  cudaStream_t stream = nullptr;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
  cublasAtomicsMode_t atomics = CUBLAS_ATOMICS_NOT_ALLOWED;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  int sm_count_target = 0;
  cublasEmulationStrategy_t emulation_strategy = CUBLAS_EMULATION_STRATEGY_DEFAULT;
  cudaEmulationSpecialValuesSupport special_values = CUDA_EMULATION_SPECIAL_VALUES_SUPPORT_DEFAULT;
  cudaEmulationMantissaControl mantissa_control = CUDA_EMULATION_MANTISSA_CONTROL_DYNAMIC;
  int max_mantissa_bits = 0;
  int mantissa_bit_offset = 0;
  int* mantissa_bit_count_pointer = nullptr;
};

/// Finds a live handle without dereferencing unknown pointers (a misuse report when not).
Handle* find_handle(cublasHandle_t handle, std::string_view api);

#define PT_FIND_HANDLE(var, handle, api)  \
  Handle* var = find_handle(handle, api); \
  if (var == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED

enum class Precision { kFloat32, kFloat64, kFloat16, kExplicit };

struct Gemm {
  const char* api = "";
  cublasHandle_t handle = nullptr;
  int transa = 0, transb = 0;
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t lda = 0, ldb = 0, ldc = 0;
  std::int64_t batch = 1;
  int a = CUDA_R_32F, b = CUDA_R_32F, c = CUDA_R_32F;
  Precision precision = Precision::kFloat32;
  int compute = -1;  // cublasComputeType_t for kExplicit (a cudaDataType below 64: legacy)
};

/// Validates a GEMM as cuBLAS does and writes its `gemm` record.
cublasStatus_t run_gemm(const Gemm& g, std::int64_t start_ns, std::int64_t corr = 0);
Gemm make(const char* api, cublasHandle_t handle, cublasOperation_t transa,
          cublasOperation_t transb, std::int64_t m, std::int64_t n, std::int64_t k,
          std::int64_t lda, std::int64_t ldb, std::int64_t ldc);
Gemm typed(Gemm g, Precision precision);
Gemm ex(Gemm g, cudaDataType a, cudaDataType b, cudaDataType c, int compute);
Gemm batched(Gemm g, std::int64_t batch);

inline std::int64_t sat_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}
inline std::int64_t sat_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

// A strided vector operand: its span and whether it is real memory.
struct Vec {
  Vec(const void* pointer, std::int64_t count, std::int64_t increment, std::size_t bytes)
      : p(pointer), n(count), inc(increment), elem(static_cast<std::int64_t>(bytes)) {}
  const void* p = nullptr;
  std::int64_t n = 0, inc = 1, elem = 4;
  bool backed = false;
  std::int64_t span_bytes() const {
    if (n <= 0) return 0;
    const std::int64_t step = inc == INT64_MIN ? INT64_MAX : (inc < 0 ? -inc : inc);
    return sat_mul(sat_add(sat_mul(n - 1, step), 1), elem);
  }
  // Element i in BLAS order (a negative increment walks from the end).
  std::int64_t offset(std::int64_t i) const { return inc >= 0 ? i * inc : (n - 1 - i) * -inc; }
};

// Checks that `v` lies in device memory; fills v.backed.
bool device_vector(Vec& v, const char* api, const char* what);

template <typename T>
const char* type_name() {
  return sizeof(T) == 8 ? "float64" : "float32";
}

// A scalar argument (alpha, beta) in the handle's pointer mode; `ok` false when a device scalar
// is not device memory. Unbacked device scalars read as 1 (alpha) — only values are affected.
template <typename T>
T read_scalar(const T* p, cublasPointerMode_t mode, bool* ok, const char* api, const char* what) {
  *ok = true;
  if (p == nullptr) {
    *ok = false;
    emu::report_misuse(api, std::string(what) + " is NULL");
    return T(0);
  }
  if (mode == CUBLAS_POINTER_MODE_HOST) return *p;
  const detail::PointerInfo info = detail::lookup_pointer(p);
  if (!info.known || info.available < sizeof(T)) {
    *ok = false;
    emu::report_misuse(api, std::string(what) + " " + detail::pointer_text(p) +
                                " is not device memory (CUBLAS_POINTER_MODE_DEVICE)");
    return T(0);
  }
  return info.backed ? *p : T(1);
}

struct Blas1 {
  const char* api;
  cublasHandle_t handle;
  cudaStream_t stream = nullptr;
  cublasPointerMode_t mode = CUBLAS_POINTER_MODE_HOST;
  std::int64_t start = 0;
};

// Finds the handle and reads its stream and pointer mode.
bool open_call(Blas1& c);
// Appends the kernel `cublas_<op>_<dtype>` with its FLOPs and bytes (a stream sync after it for a
// blocking scalar result in host pointer mode).
cublasStatus_t finish(const Blas1& c, const char* op, const char* dtype, std::int64_t flops,
                      std::int64_t bytes, bool blocking);
bool bad_sizes(const Blas1& c, std::int64_t n, std::int64_t incx, std::int64_t incy, bool two);

template <typename T>
T* at(const Vec& v, std::int64_t i) {
  return reinterpret_cast<T*>(const_cast<char*>(static_cast<const char*>(v.p)) +
                              v.offset(i) * v.elem);
}

// Writes a scalar result in the handle's pointer mode; false (misuse) for a bad pointer.
template <typename R>
bool write_result(R* result, R value, const Blas1& c) {
  if (result == nullptr) {
    emu::report_misuse(c.api, "result is NULL");
    return false;
  }
  if (c.mode == CUBLAS_POINTER_MODE_HOST) {
    *result = value;
    return true;
  }
  const detail::PointerInfo info = detail::lookup_pointer(result);
  if (!info.known || info.available < sizeof(R)) {
    emu::report_misuse(c.api, "result " + detail::pointer_text(result) +
                                  " is not device memory (CUBLAS_POINTER_MODE_DEVICE)");
    return false;
  }
  if (info.backed) *result = value;
  return true;
}

}  // namespace powertrain::emu::cublas_detail
