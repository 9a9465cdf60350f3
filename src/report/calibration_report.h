// What `powertrain calibrate` prints and writes: the fitted DVFS parameters and the model's errors.
#pragma once

#include <cstdio>
#include <string>

#include "device/calibration.h"
#include "device/gpu.h"

namespace powertrain::report {

/// The leave-one-GPU-out check: another GPU's fitted parameters carried to this profile.
struct CalibrationTransfer {
  std::string from_gpu;   // the GPU the parameters were fitted on
  std::string from_file;  // its calibrate --out JSON
  device::CalibrationReport report;
};

/// The fitted parameters, the in-sample errors per group and, with `transfer`, the out-of-sample
/// errors.
void print_calibration(std::FILE* to, const device::GpuSpec& gpu, const std::string& profile,
                       const std::string& job, const device::CalibrationReport& fit,
                       const CalibrationTransfer* transfer);

/// The calibrate --out JSON (read back by --transfer-from and profile::load_gpu_params).
std::string calibration_json(const device::GpuSpec& gpu, const std::string& profile,
                             const std::string& job, const device::CalibrationReport& fit,
                             const CalibrationTransfer* transfer);

}  // namespace powertrain::report
