// A unit of GPU work as the device model sees it: floating-point operations of one precision,
// HBM traffic and interconnect traffic. The workload model describes every op this way.
#pragma once

#include <string>
#include <string_view>

namespace powertrain::device {

enum class Precision { kFp32, kTf32, kBf16, kFp16, kFp8 };

/// How the op uses the GPU, which decides which part of its time scales with the SM clock.
enum class WorkKind {
  kMatmul,       // tensor-core GEMM: compute time scales with 1/clock
  kAttention,    // fused attention (flash-style): tensor cores, lower efficiency than GEMMs
  kMemoryBound,  // norms, elementwise, softmax, embedding lookups, loss: HBM bandwidth bound
  kCollective,   // NCCL collective or P2P over NVLink/PCIe/network: link bound, clock-insensitive
};

struct Work {
  WorkKind kind = WorkKind::kMatmul;
  Precision precision = Precision::kBf16;
  double flops = 0.0;         // floating-point operations (a multiply-add counts as 2)
  double memory_bytes = 0.0;  // bytes read + written in device memory
  double link_bytes = 0.0;    // bytes this GPU sends over the interconnect (algorithm applied)
  bool backward = false;      // part of a backward pass (its collectives are calibrated apart)
};

std::string_view to_string(Precision precision);
std::string_view to_string(WorkKind kind);

}  // namespace powertrain::device
