// Parameters fitted by `powertrain calibrate` and shipped with the tool (see docs/device.md for
// the commands that reproduce them). Regenerate after changing the device or workload model.
#include <string>

#include "device/gpu.h"

namespace powertrain::device {
namespace {

struct ShippedCalibration {
  const char* gpu;
  DvfsParams params;
  const char* fitted_to;
};

const ShippedCalibration kShipped[] = {
    {"a100-sxm",
     {
         .matmul_efficiency = 0.2982683878411668,
         .attention_efficiency = 0.22370129088087512,
         .memory_efficiency = 0.8,
         .link_efficiency = 0.34616625191040373,
         .backward_link_efficiency = 0.7318390583947534,
         .link_latency_s = 1e-05,
         .static_power_w = 95.80463444277935,
         .dynamic_power_w = 415.65131916321326,
         .voltage_min = 0.7502665137803612,
         .voltage_knee_mhz = 1100.4220038406943,
         .voltage_knee_width_mhz = 60.0,
         .memory_activity = 0.9999999998691884,
         .collective_activity = 0.7423556437171472,
         .power_limit_w = 500.0,
     },
     "fitted to the Perseus artifact profile gpt3-175b+a100_sxm_bf16.csv (GPT-3 175B, TP 8 x PP 8, "
     "4-layer slice per stage); MAPE time/energy %: stage 0 forward 1.28/1.43, stage 0 backward "
     "0.89/1.97, stage 7 forward 1.05/1.20, stage 7 backward 1.50/2.17"},
    {"a40",
     {
         .matmul_efficiency = 0.49993531473119995,
         .attention_efficiency = 0.37495148604839995,
         .memory_efficiency = 0.8,
         .link_efficiency = 0.47271193703961556,
         .backward_link_efficiency = 0.16428011363475778,
         .link_latency_s = 1e-05,
         .static_power_w = 79.48018034028594,
         .dynamic_power_w = 362.96868563079823,
         .voltage_min = 0.7705917894468752,
         .voltage_knee_mhz = 1085.4638916070621,
         .voltage_knee_width_mhz = 60.0,
         .memory_activity = 1.0,
         .collective_activity = 0.6518703068580675,
         .power_limit_w = 300.0,
     },
     "fitted to the Perseus artifact profile gpt3-175b+a40_bf16.csv (GPT-3 175B, TP 8 x PP 8, "
     "4-layer slice per stage); MAPE time/energy %: stage 0 forward 2.10/1.84, stage 0 backward "
     "4.75/3.55, stage 7 forward 1.83/1.50, stage 7 backward 3.88/3.66"},
};

}  // namespace

void apply_calibrations(std::vector<GpuSpec>& gpus) {
  for (const ShippedCalibration& shipped : kShipped) {
    for (GpuSpec& gpu : gpus) {
      if (gpu.name != shipped.gpu) continue;
      gpu.dvfs = shipped.params;
      gpu.calibrated = true;
      gpu.calibration = shipped.fitted_to;
    }
  }
}

}  // namespace powertrain::device
