// The trace's dtype names and element sizes of cuDNN data types, shared by the legacy
// (cudnn_emu.cc) and backend graph (cudnn_graph_emu.cc) emulations. Include after <cudnn.h>.
#pragma once

#include <cstdint>

namespace powertrain::emu::detail {

/// "float32", "bfloat16", ...; nullptr for a type the emulation does not name.
inline const char* cudnn_dtype_name(std::int64_t t) {
  switch (t) {
    case CUDNN_DATA_FLOAT:
      return "float32";
    case CUDNN_DATA_DOUBLE:
      return "float64";
    case CUDNN_DATA_HALF:
      return "float16";
    case CUDNN_DATA_INT8:
      return "int8";
    case CUDNN_DATA_INT32:
      return "int32";
    case CUDNN_DATA_UINT8:
      return "uint8";
    case CUDNN_DATA_BFLOAT16:
      return "bfloat16";
    case CUDNN_DATA_INT64:
      return "int64";
    case CUDNN_DATA_FP8_E4M3:
      return "float8_e4m3";
    case CUDNN_DATA_FP8_E5M2:
      return "float8_e5m2";
    default:
      return nullptr;
  }
}

/// Bytes per element (1 for the 8-bit and unnamed types).
inline int cudnn_dtype_bytes(std::int64_t t) {
  switch (t) {
    case CUDNN_DATA_DOUBLE:
    case CUDNN_DATA_INT64:
      return 8;
    case CUDNN_DATA_FLOAT:
    case CUDNN_DATA_INT32:
      return 4;
    case CUDNN_DATA_HALF:
    case CUDNN_DATA_BFLOAT16:
      return 2;
    default:
      return 1;
  }
}

}  // namespace powertrain::emu::detail
