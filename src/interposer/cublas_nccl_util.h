// Small helpers shared by the NCCL (nccl_*.cc) and cuBLAS/cuBLASLt (cublas_*.cc) parts of the
// interposer: symbol export, deterministic hashing, handle formatting, environment lookups and
// dtype names. Header-only, internal linkage; std C++ only.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

/// Marks a function as part of the library's exported C ABI (the build hides everything else).
#ifndef PT_EXPORT
#define PT_EXPORT extern "C" __attribute__((visibility("default")))
#endif

namespace powertrain::emu::libs {

/// FNV-1a, 64 bit: stable across processes and runs (ids written to traces must agree).
inline std::uint64_t fnv1a64(const void* data, std::size_t size,
                             std::uint64_t hash = 14695981039346656037ull) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 1099511628211ull;
  }
  return hash;
}
inline std::uint64_t fnv1a64(std::string_view text, std::uint64_t hash = 14695981039346656037ull) {
  return fnv1a64(text.data(), text.size(), hash);
}

/// 16 lower-case hex digits.
inline std::string hex64(std::uint64_t value) {
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(value));
  return buffer;
}

/// A handle as it appears in messages ("0x7f..." or "NULL").
inline std::string handle_text(const void* handle) {
  if (handle == nullptr) return "NULL";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%p", handle);
  return buffer;
}

inline std::string env_or(const char* name, std::string_view fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::string(value) : std::string(fallback);
}

inline double env_seconds(const char* name, double fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  char* end = nullptr;
  const double parsed = std::strtod(value, &end);
  return (end != value && parsed > 0) ? parsed : fallback;
}

/// Trace name of a cudaDataType_t value (library_types.h); nullptr if unknown.
inline const char* cuda_dtype_name(int type) {
  switch (type) {
    case 0:
      return "float32";  // CUDA_R_32F
    case 1:
      return "float64";  // CUDA_R_64F
    case 2:
      return "float16";  // CUDA_R_16F
    case 3:
      return "int8";  // CUDA_R_8I
    case 4:
      return "complex64";  // CUDA_C_32F
    case 5:
      return "complex128";  // CUDA_C_64F
    case 6:
      return "complex32";  // CUDA_C_16F
    case 7:
      return "complex_int8";  // CUDA_C_8I
    case 8:
      return "uint8";  // CUDA_R_8U
    case 9:
      return "complex_uint8";  // CUDA_C_8U
    case 10:
      return "int32";  // CUDA_R_32I
    case 11:
      return "complex_int32";  // CUDA_C_32I
    case 12:
      return "uint32";  // CUDA_R_32U
    case 13:
      return "complex_uint32";  // CUDA_C_32U
    case 14:
      return "bfloat16";  // CUDA_R_16BF
    case 15:
      return "complex_bfloat16";  // CUDA_C_16BF
    case 16:
      return "int4";  // CUDA_R_4I
    case 17:
      return "complex_int4";  // CUDA_C_4I
    case 18:
      return "uint4";  // CUDA_R_4U
    case 19:
      return "complex_uint4";  // CUDA_C_4U
    case 20:
      return "int16";  // CUDA_R_16I
    case 21:
      return "complex_int16";  // CUDA_C_16I
    case 22:
      return "uint16";  // CUDA_R_16U
    case 23:
      return "complex_uint16";  // CUDA_C_16U
    case 24:
      return "int64";  // CUDA_R_64I
    case 25:
      return "complex_int64";  // CUDA_C_64I
    case 26:
      return "uint64";  // CUDA_R_64U
    case 27:
      return "complex_uint64";  // CUDA_C_64U
    case 28:
      return "float8_e4m3";  // CUDA_R_8F_E4M3
    case 29:
      return "float8_e5m2";  // CUDA_R_8F_E5M2
    case 30:
      return "float8_ue8m0";  // CUDA_R_8F_UE8M0
    case 31:
      return "float6_e2m3";  // CUDA_R_6F_E2M3
    case 32:
      return "float6_e3m2";  // CUDA_R_6F_E3M2
    case 33:
      return "float4_e2m1";  // CUDA_R_4F_E2M1
    default:
      return nullptr;
  }
}

/// Bits per element of a cudaDataType_t value (complex: both parts); 0 if unknown.
inline int cuda_dtype_bits(int type) {
  switch (type) {
    case 16:
    case 18:
    case 33:  // int4, uint4, float4_e2m1
      return 4;
    case 31:
    case 32:  // float6
      return 6;
    case 3:
    case 8:
    case 28:
    case 29:
    case 30:
    case 17:
    case 19:  // 8-bit; complex 4-bit
      return 8;
    case 2:
    case 14:
    case 20:
    case 22:
    case 7:
    case 9:  // 16-bit; complex 8-bit
      return 16;
    case 0:
    case 10:
    case 12:
    case 6:
    case 15:
    case 21:
    case 23:  // 32-bit; complex 16-bit
      return 32;
    case 1:
    case 24:
    case 26:
    case 4:
    case 11:
    case 13:  // 64-bit; complex 32-bit
      return 64;
    case 5:
    case 25:
    case 27:  // complex 64-bit
      return 128;
    default:
      return 0;
  }
}

}  // namespace powertrain::emu::libs
