#include "device/gpu.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace powertrain::device {
namespace {

std::vector<int> clock_range(int lowest_mhz, int highest_mhz, int step_mhz) {
  std::vector<int> clocks;
  for (int f = lowest_mhz; f <= highest_mhz; f += step_mhz) clocks.push_back(f);
  if (clocks.back() != highest_mhz) clocks.push_back(highest_mhz);
  return clocks;
}

// Spec-derived DVFS defaults for a GPU that has not been calibrated: GEMM efficiency typical of
// large bf16 GEMMs, static power a little above idle, dynamic power filling the TDP at f_max.
DvfsParams spec_defaults(double tdp_w, double idle_w, int max_clock_mhz) {
  DvfsParams p;
  p.static_power_w = idle_w * 1.4;
  p.dynamic_power_w = std::max(1.0, tdp_w * 0.95 - p.static_power_w);
  p.voltage_knee_mhz = 0.62 * max_clock_mhz;
  p.power_limit_w = tdp_w;
  return p;
}

std::vector<GpuSpec> build_catalog() {
  std::vector<GpuSpec> gpus;
  {
    GpuSpec g;
    g.name = "a100-sxm";
    g.display_name = "NVIDIA A100 SXM4 80GB";
    g.clocks_mhz = clock_range(210, 1410, 15);
    g.sm_count = 108;
    g.peak_tflops_fp32 = 19.5;
    g.peak_tflops_tf32 = 156;
    g.peak_tflops_bf16 = 312;
    g.peak_tflops_fp16 = 312;
    g.memory_gib = 80;
    g.memory_bandwidth_gb_s = 2039;
    g.link_bandwidth_gb_s = 300;
    g.link_name = "NVLink 3 (600 GB/s bidirectional)";
    g.tdp_w = 400;
    g.idle_power_w = 60;
    g.p_blocking_w = 83.64;
    g.sources =
        "NVIDIA A100 datasheet (2021): SMs, dense peaks, HBM2e bandwidth, NVLink, 400 W TDP; "
        "clocks: nvidia-smi supported clocks 210-1410 MHz in 15 MHz steps; P_blocking: Perseus "
        "artifact (measured); power limit: the Perseus A100 profile draws up to 480 W, so the "
        "measured system ran the 500 W HGX configuration";
    g.dvfs = spec_defaults(400, 60, 1410);
    gpus.push_back(g);
  }
  {
    GpuSpec g = gpus.front();  // a100-sxm: the same chip; only what differs is set below
    g.name = "a100-pcie";
    g.display_name = "NVIDIA A100 PCIe 80GB";
    g.memory_bandwidth_gb_s = 1935;
    g.link_bandwidth_gb_s = 32;
    g.link_name = "PCIe 4.0 x16";
    g.tdp_w = 300;
    g.idle_power_w = 45;
    g.p_blocking_w = 70;
    g.sources =
        "NVIDIA A100 PCIe datasheet (2021): dense peaks, 1935 GB/s, 300 W; clocks as A100 SXM; "
        "P_blocking: estimated (idle + ~25 W), not measured";
    g.dvfs = spec_defaults(300, 45, 1410);
    gpus.push_back(g);
  }
  {
    GpuSpec g;
    g.name = "a40";
    g.display_name = "NVIDIA A40 48GB";
    g.clocks_mhz = clock_range(210, 1740, 15);
    g.sm_count = 84;
    g.peak_tflops_fp32 = 37.4;
    g.peak_tflops_tf32 = 74.8;
    g.peak_tflops_bf16 = 149.7;
    g.peak_tflops_fp16 = 149.7;
    g.memory_gib = 48;
    g.memory_bandwidth_gb_s = 696;
    g.link_bandwidth_gb_s = 32;
    g.link_name = "PCIe 4.0 x16";
    g.tdp_w = 300;
    g.idle_power_w = 30;
    g.p_blocking_w = 70.38;
    g.sources =
        "NVIDIA A40 datasheet (2021): 84 SMs, dense tensor peaks, GDDR6 696 GB/s, 300 W; clocks "
        "210-1740 MHz in 15 MHz steps; P_blocking: Perseus artifact (measured)";
    g.dvfs = spec_defaults(300, 30, 1740);
    gpus.push_back(g);
  }
  {
    GpuSpec g;
    g.name = "h100-sxm";
    g.display_name = "NVIDIA H100 SXM5 80GB";
    g.clocks_mhz = clock_range(210, 1980, 15);
    g.sm_count = 132;
    g.peak_tflops_fp32 = 67;
    g.peak_tflops_tf32 = 494.5;
    g.peak_tflops_bf16 = 989.5;
    g.peak_tflops_fp16 = 989.5;
    g.peak_tflops_fp8 = 1979;
    g.memory_gib = 80;
    g.memory_bandwidth_gb_s = 3350;
    g.link_bandwidth_gb_s = 450;
    g.link_name = "NVLink 4 (900 GB/s bidirectional)";
    g.tdp_w = 700;
    g.idle_power_w = 70;
    g.p_blocking_w = 110;
    g.sources =
        "NVIDIA H100 datasheet (2023): 132 SMs, dense peaks (half the sparse numbers), HBM3 3.35 "
        "TB/s, NVLink 4, 700 W; clocks 210-1980 MHz; P_blocking: estimated, not measured";
    g.dvfs = spec_defaults(700, 70, 1980);
    gpus.push_back(g);
  }
  {
    GpuSpec g = gpus.back();  // h100-sxm: the same chip; only what differs is set below
    g.name = "h200";
    g.display_name = "NVIDIA H200 SXM 141GB";
    g.memory_gib = 141;
    g.memory_bandwidth_gb_s = 4800;
    g.idle_power_w = 75;
    g.p_blocking_w = 115;
    g.sources =
        "NVIDIA H200 datasheet (2024): H100 compute, 141 GB HBM3e at 4.8 TB/s, 700 W; "
        "P_blocking: estimated, not measured";
    g.dvfs = spec_defaults(700, 75, 1980);
    gpus.push_back(g);
  }
  {
    GpuSpec g;
    g.name = "v100";
    g.display_name = "NVIDIA V100 SXM2 32GB";
    g.clocks_mhz = clock_range(135, 1530, 15);
    g.sm_count = 80;
    g.peak_tflops_fp32 = 15.7;
    g.peak_tflops_fp16 = 125;
    g.memory_gib = 32;
    g.memory_bandwidth_gb_s = 900;
    g.link_bandwidth_gb_s = 150;
    g.link_name = "NVLink 2 (300 GB/s bidirectional)";
    g.tdp_w = 300;
    g.idle_power_w = 40;
    g.p_blocking_w = 65;
    g.sources =
        "NVIDIA V100 datasheet (2020): 80 SMs, fp16 tensor 125 TFLOP/s, no bf16, 900 GB/s, 300 W; "
        "clocks 135-1530 MHz (approximated as 15 MHz steps; the real table is irregular); "
        "P_blocking: estimated";
    g.dvfs = spec_defaults(300, 40, 1530);
    gpus.push_back(g);
  }
  for (auto& g : gpus) g.calibration = "spec-derived defaults (not calibrated)";
  return gpus;
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

double softplus(double x) { return x > 30.0 ? x : std::log1p(std::exp(x)); }

// Time and energy of the work at a fixed effective clock.
WorkEstimate run_at(const GpuSpec& gpu, const DvfsParams& p, std::span<const Work> work,
                    double clock_mhz) {
  const double speed = clock_mhz / gpu.max_clock_mhz();
  const double dynamic_w = dynamic_power_w(gpu, p, clock_mhz);
  const double memory_rate = gpu.memory_bandwidth_gb_s * 1e9 * p.memory_efficiency;
  WorkEstimate out;
  out.effective_clock_mhz = clock_mhz;
  for (const Work& w : work) {
    double time_s = 0.0;
    double activity = 1.0;
    switch (w.kind) {
      case WorkKind::kMatmul:
      case WorkKind::kAttention: {
        const double efficiency =
            w.kind == WorkKind::kMatmul ? p.matmul_efficiency : p.attention_efficiency;
        // A precision without tensor-core support runs on the fp32 units.
        const double peak_tflops = gpu.peak_tflops(w.precision) > 0.0 ? gpu.peak_tflops(w.precision)
                                                                      : gpu.peak_tflops_fp32;
        const double rate = peak_tflops * 1e12 * efficiency * speed;
        time_s = std::max(w.flops / rate, w.memory_bytes / memory_rate);
        break;
      }
      case WorkKind::kMemoryBound: {
        const double rate = gpu.peak_tflops_fp32 * 1e12 * speed;
        time_s = std::max(w.memory_bytes / memory_rate, w.flops / rate);
        activity = p.memory_activity;
        break;
      }
      case WorkKind::kCollective:
        time_s = w.link_bytes / (gpu.link_bandwidth_gb_s * 1e9 *
                                 (w.backward ? p.backward_link_efficiency : p.link_efficiency)) +
                 (w.link_bytes > 0.0 ? p.link_latency_s : 0.0);
        activity = p.collective_activity;
        break;
    }
    out.time_s += time_s;
    out.energy_j += time_s * (p.static_power_w + dynamic_w * activity);
  }
  return out;
}

}  // namespace

std::span<const DvfsParamField> dvfs_param_fields() {
  static constexpr DvfsParamField kFields[] = {
      {"matmul_efficiency", &DvfsParams::matmul_efficiency},
      {"attention_efficiency", &DvfsParams::attention_efficiency},
      {"memory_efficiency", &DvfsParams::memory_efficiency},
      {"link_efficiency", &DvfsParams::link_efficiency},
      {"backward_link_efficiency", &DvfsParams::backward_link_efficiency},
      {"link_latency_s", &DvfsParams::link_latency_s},
      {"static_power_w", &DvfsParams::static_power_w},
      {"dynamic_power_w", &DvfsParams::dynamic_power_w},
      {"voltage_min", &DvfsParams::voltage_min},
      {"voltage_knee_mhz", &DvfsParams::voltage_knee_mhz},
      {"voltage_knee_width_mhz", &DvfsParams::voltage_knee_width_mhz},
      {"memory_activity", &DvfsParams::memory_activity},
      {"collective_activity", &DvfsParams::collective_activity},
      {"power_limit_w", &DvfsParams::power_limit_w}};
  return kFields;
}

double GpuSpec::peak_tflops(Precision precision) const {
  switch (precision) {
    case Precision::kFp32:
      return peak_tflops_fp32;
    case Precision::kTf32:
      return peak_tflops_tf32;
    case Precision::kBf16:
      return peak_tflops_bf16;
    case Precision::kFp16:
      return peak_tflops_fp16;
    case Precision::kFp8:
      return peak_tflops_fp8;
  }
  return 0.0;
}

const std::vector<GpuSpec>& gpu_catalog() {
  static const std::vector<GpuSpec> catalog = [] {
    std::vector<GpuSpec> gpus = build_catalog();
    apply_calibrations(gpus);
    return gpus;
  }();
  return catalog;
}

core::Result<GpuSpec> find_gpu(const std::string& name) {
  std::string key = lower(name);
  if (key == "a100" || key == "a100-sxm4" || key == "a100_sxm" || key == "a100-sxm-80gb")
    key = "a100-sxm";
  if (key == "a100_pcie") key = "a100-pcie";
  if (key == "h100" || key == "h100_sxm" || key == "h100-sxm5") key = "h100-sxm";
  if (key == "v100-sxm2" || key == "v100_sxm2") key = "v100";
  std::string known;
  for (const GpuSpec& gpu : gpu_catalog()) {
    if (gpu.name == key) return gpu;
    known += (known.empty() ? "" : ", ") + gpu.name;
  }
  return core::Error{fmt::format("unknown GPU '{}' (known: {})", name, known)};
}

double relative_voltage(const GpuSpec& gpu, const DvfsParams& p, double clock_mhz) {
  const double width = std::max(1.0, p.voltage_knee_width_mhz);
  const double rise = softplus((clock_mhz - p.voltage_knee_mhz) / width) /
                      softplus((gpu.max_clock_mhz() - p.voltage_knee_mhz) / width);
  return p.voltage_min + (1.0 - p.voltage_min) * rise;
}

double dynamic_power_w(const GpuSpec& gpu, const DvfsParams& p, double clock_mhz) {
  const double v = relative_voltage(gpu, p, clock_mhz);
  return p.dynamic_power_w * (clock_mhz / gpu.max_clock_mhz()) * v * v;
}

WorkEstimate estimate_work(const GpuSpec& gpu, const DvfsParams& params, std::span<const Work> work,
                           double clock_mhz) {
  const double lowest = gpu.min_clock_mhz();
  clock_mhz = std::clamp(clock_mhz, lowest, static_cast<double>(gpu.max_clock_mhz()));
  WorkEstimate at_request = run_at(gpu, params, work, clock_mhz);
  if (at_request.average_power_w() <= params.power_limit_w) return at_request;
  // Power-capped: average power rises with clock, so bisect for the clock at the limit.
  double low = lowest, high = clock_mhz;
  if (run_at(gpu, params, work, low).average_power_w() > params.power_limit_w) {
    WorkEstimate floor = run_at(gpu, params, work, low);
    floor.power_capped = true;
    return floor;
  }
  for (int i = 0; i < 50 && high - low > 1e-3; ++i) {
    const double mid = 0.5 * (low + high);
    if (run_at(gpu, params, work, mid).average_power_w() > params.power_limit_w) {
      high = mid;
    } else {
      low = mid;
    }
  }
  WorkEstimate capped = run_at(gpu, params, work, low);
  capped.power_capped = true;
  return capped;
}

}  // namespace powertrain::device
