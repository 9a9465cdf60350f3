// Energy from the device model's power terms: P = static + device::dynamic_power_w × activity
// (device/gpu.h), integrated over the replayed tasks; the GPU draws static power all window long.
#include "sim/energy.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>
#include <map>
#include <string>

namespace powertrain::sim {

std::string_view to_string(KernelClass kind) {
  switch (kind) {
    case KernelClass::kMatmul:
      return "matmul";
    case KernelClass::kMemory:
      return "memory";
    case KernelClass::kCollective:
      return "collective";
  }
  return "?";
}

device::WorkKind work_kind(KernelClass kind) {
  switch (kind) {
    case KernelClass::kMatmul:
      return device::WorkKind::kMatmul;
    case KernelClass::kMemory:
      return device::WorkKind::kMemoryBound;
    case KernelClass::kCollective:
      return device::WorkKind::kCollective;
  }
  return device::WorkKind::kMemoryBound;
}

KernelClass classify_kernel(std::string_view name, graph::TaskKind kind, bool nccl) {
  if (nccl) return KernelClass::kCollective;
  if (kind != graph::TaskKind::kKernel) return KernelClass::kMemory;
  std::string lower(name.substr(0, std::min<std::size_t>(name.size(), 512)));
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.find("nccl") != std::string::npos) return KernelClass::kCollective;
  static constexpr std::array<std::string_view, 18> kMatmulMarkers = {
      "gemm",     "matmul", "bmm_",      "nvjet",     "xmma",       "wgmma",
      "hmma",     "scudnn", "winograd",  "dgrad",     "wgrad",      "fprop",
      "convolve", "fmha",   "flash_fwd", "flash_bwd", "flash_attn", "attention"};
  for (std::string_view marker : kMatmulMarkers) {
    if (lower.find(marker) != std::string::npos) return KernelClass::kMatmul;
  }
  return KernelClass::kMemory;
}

EnergyReport timeline_energy(const graph::ExecutionGraph& graph,
                             std::span<const std::int64_t> start_ns,
                             std::span<const std::int64_t> end_ns, const StepMetrics& metrics,
                             const device::GpuSpec& gpu, double clock_mhz,
                             std::span<const double> task_clock_mhz) {
  EnergyReport report;
  report.gpu = gpu.name;
  const double f_max = gpu.max_clock_mhz();
  report.clock_mhz = clock_mhz > 0.0 ? std::min(clock_mhz, f_max) : f_max;
  // The device model's power formula; measured durations already include any power capping,
  // so the clock is not lowered here (above_power_limit flags a modelled average above the cap).
  const double dynamic_w = device::dynamic_power_w(gpu, gpu.dvfs, report.clock_mhz);
  const double activity[kKernelClassCount] = {1.0, gpu.dvfs.memory_activity,
                                              gpu.dvfs.collective_activity};
  // A task run at its own clock (a program's NVML lock) draws that clock's dynamic power: its
  // time counts × P_dyn(f_task) / P_dyn(f).
  std::map<double, double> power_ratio_of_clock;
  const auto power_ratio = [&](std::int32_t t) {
    if (static_cast<std::size_t>(t) >= task_clock_mhz.size() || task_clock_mhz[t] <= 0.0)
      return 1.0;
    const double f = std::min(task_clock_mhz[t], f_max);
    auto [it, added] = power_ratio_of_clock.try_emplace(f, 1.0);
    if (added && dynamic_w > 0.0)
      it->second = device::dynamic_power_w(gpu, gpu.dvfs, f) / dynamic_w;
    return it->second;
  };

  // Classify each name once per rank: kernel names repeat a lot.
  for (std::size_t r = 0; r < graph.ranks.size(); ++r) {
    const graph::RankInfo& rank = graph.ranks[r];
    const TimeWindow& window = metrics.ranks[r].window;
    std::vector<std::int8_t> class_of_name(rank.names.size(), -1);
    std::vector<GpuEnergy> devices;
    std::vector<std::array<double, kKernelClassCount>> weighted_s;  // per device: busy × ratio
    for (std::int32_t t = rank.first_task; t < rank.end_task; ++t) {
      if (!graph::is_gpu(graph.kind[t]) ||
          start_ns[t] == std::numeric_limits<std::int64_t>::min()) {
        continue;
      }
      const std::int64_t device = graph.processors[graph.processor[t]].pid;
      auto it = std::find_if(devices.begin(), devices.end(),
                             [&](const GpuEnergy& g) { return g.device == device; });
      if (it == devices.end()) {
        GpuEnergy entry;
        entry.rank = rank.rank;
        entry.device = device;
        devices.push_back(entry);
        weighted_s.push_back({0.0, 0.0, 0.0});
        it = devices.end() - 1;
      }
      int k;
      if (graph.nccl[t] || graph.kind[t] != graph::TaskKind::kKernel) {
        k = static_cast<int>(classify_kernel({}, graph.kind[t], graph.nccl[t] != 0));
      } else {
        std::int8_t& cached = class_of_name[graph.name[t]];
        if (cached < 0) {
          cached =
              static_cast<std::int8_t>(classify_kernel(graph.task_name(t), graph.kind[t], false));
        }
        k = cached;
      }
      const std::int64_t s = std::max(start_ns[t], window.start_ns);
      const std::int64_t e = std::min(end_ns[t], window.end_ns);
      if (e > s) {
        it->busy_s[k] += static_cast<double>(e - s) * 1e-9;
        weighted_s[static_cast<std::size_t>(it - devices.begin())][k] +=
            static_cast<double>(e - s) * 1e-9 * power_ratio(t);
      }
    }
    if (devices.empty()) {
      devices.push_back(GpuEnergy{rank.rank, 0});
      weighted_s.push_back({0.0, 0.0, 0.0});
    }
    for (std::size_t d = 0; d < devices.size(); ++d) {
      GpuEnergy& g = devices[d];
      g.window_s = static_cast<double>(window.length_ns()) * 1e-9;
      g.steps = window.steps;
      g.static_j = gpu.dvfs.static_power_w * g.window_s;
      for (int k = 0; k < 3; ++k) {
        g.dynamic_j_by_class[k] = dynamic_w * activity[k] * weighted_s[d][k];
        g.dynamic_j += g.dynamic_j_by_class[k];
      }
      g.total_j = g.static_j + g.dynamic_j;
      g.average_power_w = g.window_s > 0.0 ? g.total_j / g.window_s : 0.0;
      g.above_power_limit = g.average_power_w > gpu.dvfs.power_limit_w;
      report.static_j += g.static_j;
      report.dynamic_j += g.dynamic_j;
      report.total_j += g.total_j;
      report.total_j_per_step += g.total_j_per_step();
      report.gpus.push_back(g);
    }
  }
  return report;
}

EnergyReport replay_energy(const graph::ExecutionGraph& graph, const ReplayResult& replay,
                           const StepMetrics& replay_metrics, const device::GpuSpec& gpu,
                           double clock_mhz, std::span<const double> task_clock_mhz) {
  return timeline_energy(graph, replay.start_ns, replay.end_ns, replay_metrics, gpu, clock_mhz,
                         task_clock_mhz);
}

EnergyReport replay_energy(const graph::ExecutionGraph& graph, const ReplayResult& replay,
                           const StepMetrics& replay_metrics) {
  const core::Result<device::GpuSpec> gpu = device::find_gpu(device::kDefaultGpu);
  return replay_energy(graph, replay, replay_metrics, gpu.value());
}

}  // namespace powertrain::sim
