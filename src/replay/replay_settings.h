// What `powertrain replay` and `powertrain whatif` are asked for, as plain values, and their
// checks: the settings become replay::Options (replay/replay.h) or a usage error.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "device/gpu.h"
#include "replay/replay.h"

namespace powertrain::replay {

/// The command line's values; 0 (or -1 for p2p_s) = not given for the structural what-ifs.
struct ReplaySettings {
  std::vector<std::string> traces;
  std::string gpu = device::kDefaultGpu;
  std::vector<std::string> scales;  // CLASS=FACTOR
  double bus_bandwidth_gb_s = 0.0;
  double collective_latency_s = 0.0;
  int pipeline_stages = 0;
  int microbatches = 0;
  int layers = 0;
  int input_microbatches = 0;
  double p2p_s = -1.0;
  int data_parallel = 0;
  double hidden_ratio = 0.0;
  bool restages() const { return pipeline_stages > 0 || microbatches > 0 || layers > 0; }
  bool changes_anything() const {
    return !scales.empty() || restages() || data_parallel > 0 || hidden_ratio > 0.0;
  }
};

/// The replay options `settings` ask for, all but the GPU (the caller's device::find_gpu). Every
/// error is a usage error: no trace, a what-if without a change, --dp with re-staging, a modelled
/// collective time with --dp or --hidden-ratio, a value out of range, a bad --scale.
core::Result<Options> replay_options(const ReplaySettings& settings, bool what_if);

}  // namespace powertrain::replay
