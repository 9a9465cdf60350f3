// Kernel duration estimators for emulated GPU work: a pluggable interface, the default estimator
// built on the device model (device/gpu.h) and a table of profiled kernel durations that takes
// precedence for the kernels it names (the plug-in point for regressors trained on profiles).
// Every duration here is modelled or taken from the table, never measured by powertrain.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/result.h"
#include "device/gpu.h"
#include "device/work.h"
#include "emulate/emulation_trace.h"
#include "sim/energy.h"

namespace powertrain::emulate {

/// What an estimator is asked about one piece of GPU work.
struct KernelQuery {
  const Record* record = nullptr;
  std::string_view name;     // kernel: demangled name when registered; gemm: a shape name
  std::string_view mangled;  // kernel: the mangled name (the trace's), else empty
  std::string_view compute;  // gemm: the cuBLAS compute type (e.g. "32F_FAST_TF32"), else empty
  // Collectives (nccl records): from the collation of the whole job.
  int group_size = 1;        // communicator size (2 for send/recv)
  bool spans_nodes = false;  // the ring or the pair crosses a node boundary
  int nodes = 0;             // nodes the group spans (0: 1, or 2 when spans_nodes)
  // The SM clock the program locked through NVML when it launched the work, MHz (0: none; the
  // estimator's configured clock, else the GPU's highest).
  double clock_mhz = 0.0;
};

struct KernelEstimate {
  double seconds = 0.0;
  device::Work work;  // what the estimate assumed (flops, bytes), for reports
  sim::KernelClass kernel_class = sim::KernelClass::kMemory;
};

/// Estimates the duration of one piece of GPU work on a GPU. Implementations must be
/// deterministic and thread-compatible (const calls only).
class KernelEstimator {
 public:
  virtual ~KernelEstimator() = default;
  /// Short identifier, e.g. "device-model" or "table".
  virtual std::string_view name() const = 0;
  /// Where the numbers come from, for reports (e.g. "modelled: h100-sxm device model").
  virtual std::string basis() const = 0;
  /// The estimate, or nullopt when this estimator does not know the work (the next estimator in
  /// an EstimatorChain is asked).
  virtual std::optional<KernelEstimate> estimate(const KernelQuery& query,
                                                 const device::GpuSpec& gpu) const = 0;
};

/// Assumptions of the device-model estimator (documented in docs/emulate.md).
struct DeviceModelOptions {
  /// Raw kernels (no shapes): HBM bytes moved per launched thread (one 8-byte load and one
  /// 8-byte store, e.g. an fp32 elementwise op on two elements per thread).
  double bytes_per_thread = 16.0;
  /// Raw kernels whose name says GEMM/attention: floating-point operations per launched thread
  /// (a 8×8 output tile over a 64-deep K slice: 2 × 64 × 64), at bf16 tensor-core rates.
  double matmul_flops_per_thread = 8192.0;
  /// Shortest kernel, copy or memset on the device (launch and tail overhead), seconds.
  double kernel_floor_s = 3e-6;
  /// Host↔device copies: effective PCIe bandwidth (GB/s) and latency (s).
  double pcie_bandwidth_gb_s = 25.0;
  double pcie_latency_s = 2e-6;
  /// Collectives between nodes: per-GPU network bandwidth (GB/s; 400 Gb/s IB = 50 GB/s); the
  /// latency of a network hop is NCCL's (collective_model.cc).
  double inter_node_bandwidth_gb_s = 50.0;
  /// cudaLaunchHostFunc callbacks: time the stream is held by the host function (s).
  double host_function_s = 5e-6;
  /// SM clock for compute estimates, MHz (≤ 0: the GPU's highest clock).
  double clock_mhz = 0.0;
};

/// GEMM records → device::Work matmul with the FLOPs from the shape and the bytes of A, B and C
/// from the dtypes, timed by device::estimate_work at the clock; raw kernels → by name class
/// (sim::classify_kernel) and launch size; memcpy by bytes over PCIe (HtoD/DtoH/HtoH), HBM (DtoD:
/// read + write) or the GPU link (PtoP); memset by HBM bandwidth; collectives by NCCL's
/// algorithm/protocol model (emulate/collective_model.h: ring, tree, NVLS × LL, LL128, Simple,
/// the fastest for the size) on the GPU's fabric, the inter-node bandwidth bounding groups that
/// span nodes. Everything is at least kernel_floor_s.
class DeviceModelEstimator final : public KernelEstimator {
 public:
  explicit DeviceModelEstimator(DeviceModelOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "device-model"; }
  std::string basis() const override;
  std::optional<KernelEstimate> estimate(const KernelQuery& query,
                                         const device::GpuSpec& gpu) const override;
  const DeviceModelOptions& options() const { return options_; }

 private:
  DeviceModelOptions options_;
};

/// Profiled kernel durations from a CSV with a header containing `name` (or `kernel`) and
/// `duration_us` columns; quoted names may contain commas. A kernel matches by its full
/// (demangled) name, else its mangled name, else its name up to the first '('. Only kernel and
/// GEMM records are looked up (GEMMs by the cuBLAS API name only when the table lists it).
class TableEstimator final : public KernelEstimator {
 public:
  /// Errors: unreadable file, missing columns, a duration that is not a finite number ≥ 0, a
  /// name listed twice with different durations.
  static core::Result<TableEstimator> from_csv_file(const std::string& path);
  static core::Result<TableEstimator> from_csv_text(std::string_view text,
                                                    const std::string& source);

  std::string_view name() const override { return "table"; }
  std::string basis() const override;
  std::optional<KernelEstimate> estimate(const KernelQuery& query,
                                         const device::GpuSpec& gpu) const override;
  std::size_t size() const { return seconds_.size(); }

 private:
  std::string source_;
  std::unordered_map<std::string, double> seconds_;
};

/// Tries estimators in order (the first that knows the work wins) and counts which one answered.
class EstimatorChain {
 public:
  void add(std::shared_ptr<const KernelEstimator> estimator);
  /// The estimate and the index of the estimator that gave it. The last estimator should know
  /// everything (the device model does); if none answers, the kernel floor of a default device
  /// model is used and the index is −1.
  std::pair<KernelEstimate, int> estimate(const KernelQuery& query,
                                          const device::GpuSpec& gpu) const;
  const std::vector<std::shared_ptr<const KernelEstimator>>& estimators() const { return list_; }

 private:
  std::vector<std::shared_ptr<const KernelEstimator>> list_;
};

/// Bus bytes each rank moves for a collective of `bytes` per-rank buffer bytes among n ranks
/// (the factors above). O(1).
double collective_bus_bytes(Collective kind, double bytes, int n);

}  // namespace powertrain::emulate
