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
         .matmul_efficiency = 0.300726740152815,
         .attention_efficiency = 0.22554505511461123,
         .memory_efficiency = 0.8,
         .link_efficiency = 0.29719866332874656,
         .backward_link_efficiency = 0.5674605168215578,
         .link_latency_s = 1e-05,
         .static_power_w = 96.36014998872827,
         .dynamic_power_w = 415.73491407325736,
         .voltage_min = 0.7508675722351998,
         .voltage_knee_mhz = 1099.8169898523315,
         .voltage_knee_width_mhz = 60.0,
         .memory_activity = 1.0,
         .collective_activity = 0.7228714630742453,
         .power_limit_w = 500.0,
     },
     "fitted to the Perseus artifact profile gpt3-175b+a100_sxm_bf16.csv (GPT-3 175B, TP 8 x PP 8, "
     "4-layer slice per stage, --num-layers 32); MAPE time/energy %: stage 6 forward 1.17/1.78, "
     "stage 6 backward 0.93/2.04, stage 7 forward 0.99/1.50, stage 7 backward 1.48/2.28"},
    {"a40",
     {
         .matmul_efficiency = 1.0,
         .attention_efficiency = 0.7500000000000001,
         .memory_efficiency = 0.8,
         .link_efficiency = 0.9358837005574877,
         .backward_link_efficiency = 0.3316895098464723,
         .link_latency_s = 1e-05,
         .static_power_w = 41.594352658539584,
         .dynamic_power_w = 475.75772494006077,
         .voltage_min = 0.8267729463351936,
         .voltage_knee_mhz = 1188.7963485341802,
         .voltage_knee_width_mhz = 60.0,
         .memory_activity = 1.0901141325288955e-193,
         .collective_activity = 0.582547475890387,
         .power_limit_w = 300.0,
     },
     "fitted to the Perseus artifact profile gpt3-175b+a40_bf16.csv (GPT-3 175B, TP 8 x PP 8, "
     "8-layer slice per stage, --num-layers 64); MAPE time/energy %: stage 6 forward 1.48/1.58, "
     "stage 6 backward 3.12/1.75, stage 7 forward 1.36/1.18, stage 7 backward 2.68/1.39"},
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
