// A command's thermally stable time and energy (Kareus §5.3): each run cools the GPU down (a fixed
// time, or until it is below a temperature), starts the command, waits out its warm-up, measures
// NVML energy over a fixed window, then stops the command. The window should be several seconds:
// NVML's counter updates about every 100 ms.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "core/result.h"
#include "nvml/nvml.h"

namespace powertrain::nvml {

using SteadyClock = std::chrono::steady_clock;

struct MeasureOptions {
  std::vector<std::string> command;
  double warmup_s = 2.0;
  double window_s = 5.0;
  double cooldown_s = 5.0;
  double cooldown_to_c = 0.0;  // 0: no temperature target
  double cooldown_max_s = 60.0;
  double sample_period_s = 0.1;
  int repeats = 1;
  int device = 0;
  int clock_mhz = 0;  // 0: leave the clock alone
};

/// One run, measured.
struct MeasuredRun {
  double cooldown_s = 0.0;
  double window_s = 0.0;
  double energy_j = 0.0;
  double start_temperature_c = -1.0;
  double end_temperature_c = -1.0;
  bool cooled_to_target = true;
};

/// The energy of a window: NVML's energy counter when the GPU has one, else power samples
/// integrated with the trapezoid rule.
class EnergyMeter {
 public:
  EnergyMeter(const Nvml& nvml, int device) : nvml_(nvml), device_(device) {
    counter_ = static_cast<bool>(nvml_.total_energy_mj(device_));
  }
  const char* source() const { return counter_ ? "energy counter" : "power sampling"; }
  // Starts a window (power sampling: resets the integral).
  core::Status begin() {
    if (counter_) {
      auto mj = nvml_.total_energy_mj(device_);
      if (!mj) return mj.error();
      start_mj_ = *mj;
      return core::Ok{};
    }
    integral_j_ = 0.0;
    last_w_ = -1.0;
    return sample();
  }
  // Power sampling: one trapezoid step. The counter needs nothing between reads.
  core::Status sample() {
    if (counter_) return core::Ok{};
    auto mw = nvml_.power_mw(device_);
    if (!mw) return mw.error();
    const auto now = SteadyClock::now();
    const double w = *mw / 1000.0;
    if (last_w_ >= 0.0)
      integral_j_ += 0.5 * (w + last_w_) * std::chrono::duration<double>(now - last_).count();
    last_w_ = w;
    last_ = now;
    return core::Ok{};
  }
  core::Result<double> end() {
    if (counter_) {
      auto mj = nvml_.total_energy_mj(device_);
      if (!mj) return mj.error();
      return static_cast<double>(*mj - start_mj_) / 1000.0;
    }
    if (auto s = sample(); !s) return s.error();
    return integral_j_;
  }

 private:
  const Nvml& nvml_;
  int device_;
  bool counter_ = false;
  unsigned long long start_mj_ = 0;
  double integral_j_ = 0.0;
  double last_w_ = -1.0;
  SteadyClock::time_point last_;
};

struct MeasureSummary {
  std::vector<MeasuredRun> runs;
  double mean_energy_j = 0.0;
  double stddev_energy_j = 0.0;  // sample standard deviation; 0 for one run
  double mean_power_w = 0.0;
};

/// Runs the command options.repeats times, calling `on_run` (1-based index) after each. Errors are
/// prefixed "run N: ": a command that exits before warm-up + window end, NVML errors, a GPU
/// without temperature with a temperature target.
core::Result<MeasureSummary> measure(const MeasureOptions& options, const Nvml& nvml,
                                     EnergyMeter& meter,
                                     const std::function<void(int, const MeasuredRun&)>& on_run);

}  // namespace powertrain::nvml
