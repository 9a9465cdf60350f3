// Typed helpers the BLAS emulation files share (cublas_blas_emu.cc, cublas_level2_emu.cc): the
// value type and record dtype of each cuBLAS element type, scalars in the handle's pointer mode,
// element access of column-major operands, and the argument checks.
#pragma once
#include <complex>
#include <cstring>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>

#include "interposer/cublas_internal.h"

namespace powertrain::emu::cublas_detail {

// The value type behind each cuBLAS element type, its cudaDataType and record dtype name.
template <typename T>
struct Blas;
template <>
struct Blas<float> {
  using Value = float;
  static constexpr cudaDataType kType = CUDA_R_32F;
  static constexpr const char* kName = "float32";
  static constexpr int kFlopFactor = 1;
};
template <>
struct Blas<double> {
  using Value = double;
  static constexpr cudaDataType kType = CUDA_R_64F;
  static constexpr const char* kName = "float64";
  static constexpr int kFlopFactor = 1;
};
template <>
struct Blas<cuComplex> {
  using Value = std::complex<float>;
  static constexpr cudaDataType kType = CUDA_C_32F;
  static constexpr const char* kName = "complex64";
  static constexpr int kFlopFactor = 4;
};
template <>
struct Blas<cuDoubleComplex> {
  using Value = std::complex<double>;
  static constexpr cudaDataType kType = CUDA_C_64F;
  static constexpr const char* kName = "complex128";
  static constexpr int kFlopFactor = 4;
};

template <typename T>
using Val = typename Blas<T>::Value;

template <typename T>
Gemm with_type(Gemm g) {
  if constexpr (std::is_same_v<T, float>) {
    return typed(g, Precision::kFloat32);
  } else if constexpr (std::is_same_v<T, double>) {
    return typed(g, Precision::kFloat64);
  } else {
    return ex(g, Blas<T>::kType, Blas<T>::kType, Blas<T>::kType, Blas<T>::kType);
  }
}

// Refuses an invalid call: NOT_INITIALIZED for a bad handle, else a misuse and INVALID_VALUE.
inline cublasStatus_t refuse(const char* api, cublasHandle_t handle, const std::string& what) {
  if (find_handle(handle, api) == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  return misuse(api, what, CUBLAS_STATUS_INVALID_VALUE);
}

inline bool valid_side(cublasSideMode_t s) {
  return s == CUBLAS_SIDE_LEFT || s == CUBLAS_SIDE_RIGHT;
}
inline bool valid_fill(cublasFillMode_t f) {
  return f == CUBLAS_FILL_MODE_LOWER || f == CUBLAS_FILL_MODE_UPPER;
}
inline bool valid_diag(cublasDiagType_t d) {
  return d == CUBLAS_DIAG_NON_UNIT || d == CUBLAS_DIAG_UNIT;
}
inline bool valid_op(cublasOperation_t op) { return libs::blas_op_text(op) != nullptr; }
inline std::int64_t at_least_1(std::int64_t v) { return std::max<std::int64_t>(1, v); }

inline std::string sizes_text(std::initializer_list<std::pair<const char*, std::int64_t>> sizes) {
  std::string text;
  for (const auto& [name, value] : sizes) {
    if (!text.empty()) text += ", ";
    text += std::string(name) + "=" + std::to_string(value);
  }
  return text;
}

// A column-major m × n operand with leading dimension ld (device memory of its span).
inline Vec matrix(const void* p, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                  std::size_t elem) {
  Vec v{p, rows > 0 && cols > 0 ? sat_add(sat_mul(cols - 1, ld), rows) : 0, 1, elem};
  return v;
}

template <typename T>
typename Blas<T>::Value value_at(const void* base, std::int64_t index) {
  typename Blas<T>::Value v;
  std::memcpy(static_cast<void*>(&v), static_cast<const char*>(base) + index * sizeof(T),
              sizeof(T));
  return v;
}
template <typename T>
void store_at(void* base, std::int64_t index, typename Blas<T>::Value v) {
  std::memcpy(static_cast<char*>(base) + index * sizeof(T), static_cast<const void*>(&v),
              sizeof(T));
}

// A scalar argument in the handle's pointer mode (false, reported, when it cannot be read); an
// unbacked device scalar reads as 1: only values are affected.
template <typename T>
bool scalar(const T* p, const Blas1& c, const char* what, typename Blas<T>::Value* out) {
  if (p == nullptr) {
    emu::report_misuse(c.api, std::string(what) + " is NULL");
    return false;
  }
  if (c.mode == CUBLAS_POINTER_MODE_DEVICE) {
    const detail::PointerInfo info = detail::lookup_pointer(p);
    if (!info.known || info.available < sizeof(T)) {
      emu::report_misuse(c.api, std::string(what) + " " + detail::pointer_text(p) +
                                    " is not device memory (CUBLAS_POINTER_MODE_DEVICE)");
      return false;
    }
    if (!info.backed) {
      *out = typename Blas<T>::Value(1);
      return true;
    }
  }
  *out = value_at<T>(p, 0);
  return true;
}

template <typename V>
V apply_op(V v, cublasOperation_t op) {
  if constexpr (std::is_floating_point_v<V>) {
    return v;
  } else {
    return op == CUBLAS_OP_C ? std::conj(v) : v;
  }
}

}  // namespace powertrain::emu::cublas_detail
