// Fitting a GPU's DVFS model to measured per-instruction time and energy at many clocks.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "device/gpu.h"
#include "device/work.h"

namespace powertrain::device {

/// One measurement: some work (e.g. a stage's forward pass) at one clock.
struct CalibrationSample {
  std::string group;  // what was measured, e.g. "stage 0 forward"; errors are reported per group
  std::vector<Work> work;
  double clock_mhz = 0.0;
  double measured_time_s = 0.0;
  double measured_energy_j = 0.0;
};

/// Model error on one group of samples, in percent of the measured value.
struct GroupError {
  std::string group;
  int samples = 0;
  double time_mape_percent = 0.0;
  double energy_mape_percent = 0.0;
  double time_max_error_percent = 0.0;
  double energy_max_error_percent = 0.0;
  // The same errors with model and measurement each normalized at the group's highest measured
  // clock (the shape of the clock response, issue 12's metric); mean over the other clocks.
  double reference_clock_mhz = 0.0;
  double time_normalized_mape_percent = 0.0;
  double energy_normalized_mape_percent = 0.0;
  double time_normalized_max_error_percent = 0.0;
  double energy_normalized_max_error_percent = 0.0;
};

struct CalibrationReport {
  DvfsParams params;
  std::vector<GroupError> groups;  // in first-seen order
  double time_mape_percent = 0.0;  // over all samples
  double energy_mape_percent = 0.0;
  int evaluations = 0;
};

/// Least-squares fit (Levenberg–Marquardt on log errors of time and energy, several starts) of
/// the GEMM efficiency, forward and backward link efficiency, static and dynamic power, the voltage
/// curve (minimum voltage and knee) and the activity of communication and memory-bound work. The
/// power limit, memory efficiency and the attention/GEMM efficiency ratio are kept from `start`.
/// Errors: fewer than 8 samples, fewer than 2 distinct clocks, non-positive measurements.
core::Result<CalibrationReport> calibrate(const GpuSpec& gpu,
                                          const std::vector<CalibrationSample>& samples,
                                          const DvfsParams& start);

/// Per-group and overall errors of given parameters on samples (no fitting).
CalibrationReport evaluate_calibration(const GpuSpec& gpu, const DvfsParams& params,
                                       const std::vector<CalibrationSample>& samples);

/// Leave-one-GPU-out transfer: parameters fitted on `fitted_on` carried to `target`. Carried as
/// they are (GPU-independent): GEMM/attention/memory/link efficiencies, activities, v_min. Carried
/// in normalized form: the voltage knee and its width as fractions of the highest clock, static and
/// dynamic power as fractions of the power limit. From the target: its catalog spec (peaks,
/// bandwidths, link, clock range) and `target_power_limit_w` (its measured system's limit).
DvfsParams transfer_params(const GpuSpec& fitted_on, const DvfsParams& fitted,
                           const GpuSpec& target, double target_power_limit_w);

}  // namespace powertrain::device
