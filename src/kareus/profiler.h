// Profilers for Kareus's search (§4.3, §5.3): something that measures one candidate schedule of one
// partition. The model backend (default) evaluates the concurrency model (microseconds per
// candidate); the GPU backend (profiler_gpu.h) runs the partition on a GPU with clock locking and
// the NVML energy counter.
#pragma once

#include <string>

#include "core/result.h"
#include "kareus/concurrency.h"

namespace powertrain::kareus {

class Profiler {
 public:
  virtual ~Profiler() = default;
  /// "model" or "gpu (NVIDIA A100 ..., 5 s window, 5 s cooldown)".
  virtual std::string name() const = 0;
  /// P_static (W) that splits energy into static = P_static × time and dynamic = the rest; the MBO
  /// surrogate for total energy is T̂ × P_static + Ê_dyn.
  virtual double static_power_w() const = 0;
  /// Time (s) and energy (J) of one execution of the partition under the schedule, with
  /// static_j = static_power_w() × time_s and dynamic_j = energy_j − static_j. Not thread-safe
  /// unless the backend says so. Errors: one line naming the failing call (GPU backend).
  virtual core::Result<Cost> measure(const PartitionType& partition, const Schedule& schedule) = 0;
};

/// The concurrency model (evaluate_partition) behind the Profiler interface. Thread-safe (no state
/// beyond the constants).
class ModelProfiler final : public Profiler {
 public:
  ModelProfiler(const device::GpuSpec& gpu, const ConcurrencyParams& params)
      : gpu_(gpu), params_(params) {}
  std::string name() const override { return "model"; }
  double static_power_w() const override { return gpu_.dvfs.static_power_w; }
  core::Result<Cost> measure(const PartitionType& partition, const Schedule& schedule) override {
    return evaluate_partition(gpu_, params_, partition, schedule);
  }

 private:
  device::GpuSpec gpu_;  // a copy: the profiler may outlive the caller's spec
  ConcurrencyParams params_;
};

}  // namespace powertrain::kareus
