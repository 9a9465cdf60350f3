#include "device/work.h"

namespace powertrain::device {

std::string_view to_string(Precision precision) {
  switch (precision) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kTf32:
      return "tf32";
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp16:
      return "fp16";
    case Precision::kFp8:
      return "fp8";
  }
  return "?";
}

std::string_view to_string(WorkKind kind) {
  switch (kind) {
    case WorkKind::kMatmul:
      return "matmul";
    case WorkKind::kAttention:
      return "attention";
    case WorkKind::kMemoryBound:
      return "memory-bound";
    case WorkKind::kCollective:
      return "collective";
  }
  return "?";
}

}  // namespace powertrain::device
