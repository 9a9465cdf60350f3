// The device-model and table estimators. The device model is asked through device::estimate_work
// so that GEMM times are exactly the roofline the rest of powertrain uses (including its power
// cap); copies and collectives use plain bandwidth–latency formulas.
#include "emulate/estimators.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "core/csv.h"
#include "emulate/collective_model.h"

namespace powertrain::emulate {
namespace {

device::Precision precision_of(Dtype dtype, std::string_view compute) {
  const auto has = [&](std::string_view s) { return compute.find(s) != std::string_view::npos; };
  switch (dtype) {
    case Dtype::kFloat16:
      return device::Precision::kFp16;
    case Dtype::kBfloat16:
      return device::Precision::kBf16;
    case Dtype::kFloat8E4m3:
    case Dtype::kFloat8E5m2:
    case Dtype::kInt8:
    case Dtype::kUint8:
      return device::Precision::kFp8;  // int8 tensor-core peak ≈ fp8 peak
    case Dtype::kFloat32:
    case Dtype::kComplex64:
      return has("tf32") || has("TF32") ? device::Precision::kTf32 : device::Precision::kFp32;
    case Dtype::kFloat64:
    case Dtype::kComplex128:
      return device::Precision::kFp32;  // the catalog has no fp64 peak: fp32 units as a proxy
    default:
      return device::Precision::kBf16;
  }
}

double element_bytes(Dtype dtype) {
  const int bytes = dtype_bytes(dtype);
  return bytes > 0 ? bytes : 2.0;
}

}  // namespace

double collective_bus_bytes(Collective kind, double bytes, int n) {
  const double ranks = std::max(n, 1);
  switch (kind) {
    case Collective::kAllReduce:
      return 2.0 * (ranks - 1.0) / ranks * bytes;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
      // NCCL counts are per rank: the full buffer is n × bytes, of which (n−1)/n crosses links.
      return (ranks - 1.0) * bytes;
    case Collective::kAllToAll:
      return (ranks - 1.0) / ranks * bytes;
    case Collective::kBroadcast:
    case Collective::kReduce:
    case Collective::kSend:
    case Collective::kRecv:
      return ranks > 1 ? bytes : 0.0;
  }
  return bytes;
}

std::string DeviceModelEstimator::basis() const {
  return fmt::format(
      "modelled: device model (GEMMs by shape via estimate_work; raw kernels {} B/thread, "
      "matmul-named {} flop/thread; PCIe {} GB/s; inter-node {} GB/s; floor {} us)",
      options_.bytes_per_thread, options_.matmul_flops_per_thread, options_.pcie_bandwidth_gb_s,
      options_.inter_node_bandwidth_gb_s, options_.kernel_floor_s * 1e6);
}

std::optional<KernelEstimate> DeviceModelEstimator::estimate(const KernelQuery& query,
                                                             const device::GpuSpec& gpu) const {
  if (query.record == nullptr) return std::nullopt;
  const Record& r = *query.record;
  const double clock = std::clamp(query.clock_mhz > 0.0      ? query.clock_mhz
                                  : options_.clock_mhz > 0.0 ? options_.clock_mhz
                                                             : gpu.max_clock_mhz(),
                                  static_cast<double>(gpu.min_clock_mhz()),
                                  static_cast<double>(gpu.max_clock_mhz()));
  const auto on_device = [&](const device::Work& work) {
    return device::estimate_work(gpu, std::span<const device::Work>(&work, 1), clock).time_s;
  };
  KernelEstimate out;
  double seconds = 0.0;
  switch (r.op) {
    case OpKind::kGemm: {
      out.kernel_class = sim::KernelClass::kMatmul;
      device::Work& w = out.work;
      w.kind = sim::work_kind(out.kernel_class);
      w.precision = precision_of(r.dtype_a, query.compute);
      const double m = static_cast<double>(r.m), n = static_cast<double>(r.n),
                   k = static_cast<double>(r.k), batch = static_cast<double>(r.batch);
      w.flops = r.flops > 0.0 ? r.flops : 2.0 * m * n * k * batch;
      w.memory_bytes = r.bytes > 0 ? static_cast<double>(r.bytes)
                                   : batch * (m * k * element_bytes(r.dtype_a) +
                                              k * n * element_bytes(r.dtype_b) +
                                              m * n * element_bytes(r.dtype_c));
      seconds = on_device(w);
      break;
    }
    case OpKind::kKernel: {
      if (r.flops > 0.0 || r.bytes > 0) {
        // A library kernel with its own work (cuFFT, cuSPARSE): the roofline of its FLOPs on the
        // fp32 units and its bytes over HBM, whichever binds.
        out.work.kind = device::WorkKind::kMemoryBound;
        out.work.flops = r.flops;
        out.work.memory_bytes = static_cast<double>(r.bytes);
        seconds = on_device(out.work);
        break;
      }
      const double threads = r.threads();
      out.kernel_class = sim::classify_kernel(query.name, graph::TaskKind::kKernel, false);
      device::Work& w = out.work;
      w.memory_bytes = threads * options_.bytes_per_thread;
      if (out.kernel_class == sim::KernelClass::kMatmul) {
        w.kind = device::WorkKind::kMatmul;
        w.precision = device::Precision::kBf16;
        w.flops = threads * options_.matmul_flops_per_thread;
      } else {
        w.kind = device::WorkKind::kMemoryBound;
      }
      seconds = on_device(w);
      break;
    }
    case OpKind::kMemcpy: {
      const double bytes = static_cast<double>(r.bytes);
      out.work.kind = device::WorkKind::kMemoryBound;
      switch (r.copy) {
        case CopyKind::kHtoD:
        case CopyKind::kDtoH:
        case CopyKind::kHtoH:
          seconds = options_.pcie_latency_s + bytes / (options_.pcie_bandwidth_gb_s * 1e9);
          break;
        case CopyKind::kDtoD:
          out.work.memory_bytes = 2.0 * bytes;  // read and write
          seconds = on_device(out.work);
          break;
        case CopyKind::kPtoP:
          out.work.kind = device::WorkKind::kCollective;
          out.work.link_bytes = bytes;
          seconds = gpu.dvfs.link_latency_s +
                    bytes / (gpu.link_bandwidth_gb_s * 1e9 * gpu.dvfs.link_efficiency);
          break;
      }
      break;
    }
    case OpKind::kMemset:
      out.work.kind = device::WorkKind::kMemoryBound;
      out.work.memory_bytes = static_cast<double>(r.bytes);
      seconds = on_device(out.work);
      break;
    case OpKind::kNccl: {
      const int n = std::max(query.group_size, 1);
      CollectiveQuery cq;
      cq.kind = r.collective;
      cq.bytes = static_cast<double>(r.bytes);
      cq.ranks = n;
      cq.nodes = query.nodes > 0 ? query.nodes : (query.spans_nodes ? 2 : 1);
      cq.inter_node_bw_gb_s = options_.inter_node_bandwidth_gb_s;
      const CollectiveTiming timing = model_collective(cq, fabric_of(gpu));
      out.kernel_class = sim::KernelClass::kCollective;
      out.work.kind = sim::work_kind(out.kernel_class);
      out.work.link_bytes = collective_bus_bytes(r.collective, static_cast<double>(r.bytes), n);
      seconds = timing.seconds;
      break;
    }
    case OpKind::kHostFunc:
      seconds = options_.host_function_s;
      break;
    default:
      return std::nullopt;
  }
  out.seconds = std::max(seconds, options_.kernel_floor_s);
  return out;
}

core::Result<TableEstimator> TableEstimator::from_csv_file(const std::string& path) {
  auto text = core::read_text_file(path);
  if (!text) return text.error();
  return from_csv_text(*text, path);
}

core::Result<TableEstimator> TableEstimator::from_csv_text(std::string_view text,
                                                           const std::string& source) {
  auto table = core::parse_csv(text, source);
  if (!table) return table.error();
  auto name_column = table->column("name");
  if (!name_column) name_column = table->column("kernel");
  if (!name_column) name_column = table->column("kernel name");
  const auto duration_column = table->column("duration_us");
  if (!name_column || !duration_column) {
    return core::Error{fmt::format(
        "{}: expected a header with 'name' (or 'kernel') and 'duration_us' columns", source)};
  }
  TableEstimator out;
  out.source_ = source;
  for (const core::CsvRow& row : table->rows) {
    const std::string& name = row.fields[*name_column];
    if (name.empty()) {
      return core::Error{fmt::format("{}:{}: field 'name' is empty", source, row.line)};
    }
    auto us =
        core::parse_finite_double(row.fields[*duration_column], source, row.line, "duration_us");
    if (!us) return us.error();
    if (*us < 0.0) {
      return core::Error{fmt::format("{}:{}: field 'duration_us': expected a number >= 0, got {}",
                                     source, row.line, row.fields[*duration_column])};
    }
    auto [it, inserted] = out.seconds_.emplace(name, *us * 1e-6);
    if (!inserted && it->second != *us * 1e-6) {
      return core::Error{fmt::format("{}:{}: kernel '{}' listed twice with different durations",
                                     source, row.line, name)};
    }
  }
  return out;
}

std::string TableEstimator::basis() const {
  return fmt::format("profiled table {} ({} kernels)", source_, seconds_.size());
}

std::optional<KernelEstimate> TableEstimator::estimate(const KernelQuery& query,
                                                       const device::GpuSpec& gpu) const {
  (void)gpu;
  if (query.record == nullptr ||
      (query.record->op != OpKind::kKernel && query.record->op != OpKind::kGemm)) {
    return std::nullopt;
  }
  auto it = seconds_.find(std::string(query.name));
  if (it == seconds_.end() && !query.mangled.empty())
    it = seconds_.find(std::string(query.mangled));
  if (it == seconds_.end()) {
    const std::string_view base = query.name.substr(0, query.name.find('('));
    if (base.size() != query.name.size()) it = seconds_.find(std::string(base));
  }
  if (it == seconds_.end()) return std::nullopt;
  KernelEstimate out;
  out.seconds = it->second;
  out.kernel_class = query.record->op == OpKind::kGemm
                         ? sim::KernelClass::kMatmul
                         : sim::classify_kernel(query.name, graph::TaskKind::kKernel, false);
  // A kernel-table entry is compute or memory work; a kernel named like NCCL outside an NCCL
  // record is not link-bound work.
  out.work.kind = out.kernel_class == sim::KernelClass::kMatmul ? device::WorkKind::kMatmul
                                                                : device::WorkKind::kMemoryBound;
  return out;
}

void EstimatorChain::add(std::shared_ptr<const KernelEstimator> estimator) {
  list_.push_back(std::move(estimator));
}

std::pair<KernelEstimate, int> EstimatorChain::estimate(const KernelQuery& query,
                                                        const device::GpuSpec& gpu) const {
  for (std::size_t i = 0; i < list_.size(); ++i) {
    if (auto e = list_[i]->estimate(query, gpu)) return {*e, static_cast<int>(i)};
  }
  KernelEstimate fallback;
  fallback.seconds = DeviceModelOptions{}.kernel_floor_s;
  return {fallback, -1};
}

}  // namespace powertrain::emulate
