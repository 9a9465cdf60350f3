// The GPU profiler (Kareus §5.3): runs one partition for real and measures it with NVML.
//  - CUDA driver API loaded at run time with dlopen (libcuda.so.1; no link-time CUDA dependency);
//    kernels are PTX strings JIT-compiled with cuModuleLoadData;
//  - every compute kernel of the partition becomes a synthetic kernel with its FLOPs (FP32 FMAs on
//    CUDA cores) or, when memory-bound, its HBM bytes (a grid-stride copy); the collective becomes
//    a copy kernel of its link bytes whose grid is exactly `comm_sms` blocks of 1024 threads (one
//    block per SM), a single-GPU stand-in for an MSCCL++/NCCL kernel with a grid-size limit;
//  - compute on one stream, the comm kernel on another, launched after compute kernel
//    `launch_slot − 1` has finished (an event), i.e. together with kernel `launch_slot`;
//  - the SM clock locked with NVML (src/nvml) for the measurement and reset after it; the partition
//    repeated over a thermally stable window (5 s) whose energy is the difference of two readings
//    of NVML's energy counter, then a cooldown (5 s) before the next candidate.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/result.h"
#include "device/gpu.h"
#include "kareus/profiler.h"
#include "nvml/nvml.h"

namespace powertrain::kareus {

/// The soname loaded when no path is given and POWERTRAIN_CUDA_LIBRARY is unset.
inline constexpr const char* kDefaultCudaLibrary = "libcuda.so.1";

/// Where P_static (static energy = P_static × time) comes from.
enum class StaticPowerSource {
  kCatalog,       // the device catalog's calibrated static power (device::DvfsParams)
  kMeasuredIdle,  // NVML power of the idle GPU at open, after a cooldown (includes idle leakage,
                  // fans excluded: board power)
};

struct GpuProfilerOptions {
  int device = 0;
  std::string cuda_library;  // "" → $POWERTRAIN_CUDA_LIBRARY or libcuda.so.1
  std::string nvml_library;  // "" → nvml::library_to_load
  double window_s = 5.0;     // §5.3 measurement window
  double cooldown_s = 5.0;   // §5.3 cooldown after each candidate
  int warmup_runs = 2;       // partition runs before the window (not measured)
  StaticPowerSource static_power = StaticPowerSource::kCatalog;
  /// The catalog entry: static power (kCatalog) and the FP32 / tensor peaks that size the FMA
  /// kernels standing in for GEMMs.
  device::GpuSpec gpu;
  double idle_sample_s = 1.0;  // energy-counter window for kMeasuredIdle
  /// Largest device buffer (bytes) for the copy kernels: bigger transfers loop over it.
  long long max_buffer_bytes = 256LL << 20;
  /// Time and sleep (tests may record or shorten them). Defaults: steady_clock and sleep_for.
  std::function<double()> now_s;
  std::function<void(double)> sleep_s;
};

/// What one candidate's measurement saw (for logs and tests).
struct GpuReading {
  int runs = 0;           // partition executions inside the window
  double window_s = 0.0;  // wall time of the window (≥ options.window_s)
  unsigned long long energy_start_mj = 0, energy_end_mj = 0;  // NVML counter readings
  double cooldown_s = 0.0;
};

class GpuProfiler final : public Profiler {
 public:
  /// Loads libcuda and NVML, creates a context, two streams and the kernels. Errors (one line):
  /// "GPU profiler: CUDA driver not found (<lib>): <dlerror>", the NVML not_found_message, or
  /// "GPU profiler: <cuCall>: <CUDA error name> (code N)" / "... nvml<Call>: ..." naming the call.
  static core::Result<std::unique_ptr<GpuProfiler>> open(GpuProfilerOptions options);
  ~GpuProfiler() override;

  std::string name() const override;
  double static_power_w() const override { return static_power_w_; }
  /// Locks the clock to schedule.clock_mhz, warms up, runs the partition repeatedly for the window,
  /// resets the clock (also on failure), cools down. Time = window / runs, energy = counter
  /// difference / runs.
  core::Result<Cost> measure(const PartitionType& partition, const Schedule& schedule) override;
  const GpuReading& last_reading() const { return last_; }
  /// Where static_power_w() came from, e.g. "catalog 96.4 W" or "measured idle 61.2 W".
  const std::string& static_power_source() const { return static_source_; }

  struct Impl;

 private:
  explicit GpuProfiler(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  double static_power_w_ = 0.0;
  std::string static_source_;
  GpuReading last_;
};

/// The PTX module the profiler JIT-compiles (entries kareus_fma, kareus_copy).
const char* gpu_profiler_ptx();

}  // namespace powertrain::kareus

namespace powertrain::kareus {

/// The profiler named on the command line: "model" (ModelProfiler) or "gpu" (GpuProfiler on
/// device 0 with §5.3's 5 s window and cooldown, P_static from the catalog entry `gpu`). Errors:
/// an unknown name, or those of GpuProfiler::open (no driver, no NVML, ...).
core::Result<std::unique_ptr<Profiler>> make_profiler(const std::string& kind,
                                                      const device::GpuSpec& gpu,
                                                      const ConcurrencyParams& params);

}  // namespace powertrain::kareus
