// GPU catalog and the DVFS model: how long a list of work takes on a GPU at an SM clock and how
// much energy it uses.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/result.h"
#include "device/work.h"

namespace powertrain::device {

/// Parameters of the time and power model. Fitted by `powertrain calibrate` for calibrated GPUs;
/// spec-derived defaults otherwise.
///
/// Time of one op at effective clock f (f_max = the GPU's highest SM clock):
///   matmul/attention: max(flops / (peak × efficiency × f / f_max), bytes / (bandwidth ×
///   memory_eff)) memory-bound:     max(bytes / (bandwidth × memory_efficiency), flops / (fp32 peak
///   × f / f_max)) collective:       link_bytes / (link bandwidth × link_efficiency) +
///   link_latency_s
///                     (backward_link_efficiency for collectives of a backward pass)
/// Power while an op runs: static_power_w + dynamic_power_w × activity(op) × (f / f_max) × v(f)²,
/// with relative voltage v(f) = v_min + (1 − v_min) × softplus((f − knee)/w) / softplus((f_max −
/// knee)/w), w = voltage_knee_width_mhz. When the average power at the requested clock exceeds the
/// power limit, the GPU runs at the clock where it equals the limit (power-capped, as the A40 does
/// above ~1500 MHz).
struct DvfsParams {
  double matmul_efficiency = 0.6;      // fraction of dense tensor peak reached by GEMMs
  double attention_efficiency = 0.45;  // fraction of dense tensor peak reached by fused attention
  double memory_efficiency = 0.8;      // fraction of peak HBM bandwidth
  double link_efficiency = 0.7;        // fraction of per-direction link bandwidth (bus bandwidth)
  // The same for collectives inside backward passes. Fitted apart because measured systems differ:
  // on the Perseus A40 (PCIe) system backward-pass all-reduces reach about a third of the forward's
  // bandwidth, on the A100 (NVLink) system about the same.
  double backward_link_efficiency = 0.7;
  double link_latency_s = 10e-6;    // per collective call
  double static_power_w = 80.0;     // power of an active GPU at any clock (leakage, memory, fans)
  double dynamic_power_w = 300.0;   // clock-dependent power at f_max and full activity
  double voltage_min = 0.65;        // relative voltage at low clocks
  double voltage_knee_mhz = 900.0;  // where the voltage starts to rise with clock
  double voltage_knee_width_mhz = 60.0;
  double memory_activity = 0.45;      // dynamic-power activity of memory-bound ops (matmul = 1)
  double collective_activity = 0.15;  // ... of communication kernels
  double power_limit_w = 400.0;       // board power limit (TDP unless measured otherwise)
};

/// Every DvfsParams field with its name in calibration JSON, in a fixed order; the calibration
/// writer and the --gpu-params reader both use it.
struct DvfsParamField {
  const char* name;
  double DvfsParams::*member;
};
std::span<const DvfsParamField> dvfs_param_fields();

struct GpuSpec {
  std::string name;             // catalog key, e.g. "a100-sxm"
  std::string display_name;     // e.g. "NVIDIA A100 SXM4 80GB"
  std::vector<int> clocks_mhz;  // supported SM clocks, ascending
  int sm_count = 0;
  // Dense peak throughput at the highest SM clock, TFLOP/s (0 = not supported).
  double peak_tflops_fp32 = 0.0;
  double peak_tflops_tf32 = 0.0;
  double peak_tflops_bf16 = 0.0;
  double peak_tflops_fp16 = 0.0;
  double peak_tflops_fp8 = 0.0;
  double memory_gib = 0.0;
  double memory_bandwidth_gb_s = 0.0;  // HBM/GDDR, GB/s
  double link_bandwidth_gb_s = 0.0;    // per-direction GPU-to-GPU bandwidth within a node, GB/s
  std::string link_name;               // e.g. "NVLink 3"
  double tdp_w = 0.0;
  double idle_power_w = 0.0;
  double p_blocking_w = 0.0;  // default power while blocked on P2P communication
  std::string sources;        // where the numbers come from
  DvfsParams dvfs;
  bool calibrated = false;
  std::string calibration;  // what the parameters were fitted to, or "spec-derived defaults"

  int max_clock_mhz() const { return clocks_mhz.back(); }
  int min_clock_mhz() const { return clocks_mhz.front(); }
  /// Dense tensor/vector peak for a precision (TFLOP/s at the highest clock); 0 if unsupported.
  double peak_tflops(Precision precision) const;
};

/// The GPU assumed when a command or function names none (planning, replay, analysis energy):
/// the A100 SXM, calibrated against the Perseus measurements.
inline constexpr const char* kDefaultGpu = "a100-sxm";
/// The GPU `powertrain emulate` presents to a program when none is named.
inline constexpr const char* kDefaultEmulatedGpu = "h100";

/// Every built-in GPU, in a stable order.
const std::vector<GpuSpec>& gpu_catalog();
/// Looks a GPU up by name (case-insensitive; "a100", "h100" and similar short names accepted).
/// Unknown names give an error listing the known ones.
core::Result<GpuSpec> find_gpu(const std::string& name);

/// Time, energy and clock of some work at a requested SM clock.
struct WorkEstimate {
  double time_s = 0.0;
  double energy_j = 0.0;
  double effective_clock_mhz = 0.0;  // below the requested clock when power-capped
  bool power_capped = false;
  double average_power_w() const { return time_s > 0.0 ? energy_j / time_s : 0.0; }
};

/// Models `work` run back to back on one GPU at `clock_mhz` (any value in the GPU's range).
WorkEstimate estimate_work(const GpuSpec& gpu, const DvfsParams& params, std::span<const Work> work,
                           double clock_mhz);
inline WorkEstimate estimate_work(const GpuSpec& gpu, std::span<const Work> work,
                                  double clock_mhz) {
  return estimate_work(gpu, gpu.dvfs, work, clock_mhz);
}

/// Installs the shipped calibrated parameters into the catalog (calibrated_gpus.cc).
void apply_calibrations(std::vector<GpuSpec>& gpus);

/// Relative voltage v(f) of the model (1 at the highest clock).
double relative_voltage(const GpuSpec& gpu, const DvfsParams& params, double clock_mhz);

/// Dynamic power (W) at full activity (matmul = 1) and `clock_mhz`:
/// dynamic_power_w × (f / f_max) × v(f)². Multiply by an op's activity and add static_power_w for
/// its power (DvfsParams). The one power formula: estimate_work and the simulator's energy
/// (sim/energy.cc) both use it. No power cap: estimate_work applies the cap by lowering the clock.
double dynamic_power_w(const GpuSpec& gpu, const DvfsParams& params, double clock_mhz);

}  // namespace powertrain::device
