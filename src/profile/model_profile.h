// Profiles without a GPU: a built-in (or custom) model on a catalog GPU, partitioned into stages,
// timed at every SM clock by the device model. Also the bridge the calibration needs from measured
// profile rows to the work they describe.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "device/calibration.h"
#include "device/gpu.h"
#include "profile/profile.h"
#include "workload/job.h"
#include "workload/model_zoo.h"
#include "workload/partition.h"

namespace powertrain::profile {

/// What a user names on the command line to describe a job.
struct ModelJobRequest {
  std::string model = "gpt3-1.3b";  // built-in name or a JSON file path
  std::string gpu = device::kDefaultGpu;
  int tp = 1;
  int pp = 4;
  int microbatch_size = 1;
  int seq_len = 0;     // 0 = the model's default
  int num_layers = 0;  // 0 = the model's; otherwise a slice or what-if depth
  int microbatches = 8;
  std::string partition = "min-imbalance";  // uniform, min-imbalance, or "[0,6,12,19,25]"
  std::string precision = "bf16";
  bool recompute = false;
  bool sequence_parallel = false;
  bool distributed_optimizer = false;
  int dp = 1;
  int cp = 1;              // context-parallel degree (workload::ParallelConfig::cp)
  std::string gpu_params;  // JSON written by `powertrain calibrate --out` (empty: catalog's)
};

/// A resolved job: model, GPU, parallel layout, partition and the work of every stage.
struct ModelJob {
  workload::ModelSpec model;
  device::GpuSpec gpu;
  workload::ParallelConfig parallel;
  workload::Partition partition;
  /// Modelled forward time of every layer unit at the highest clock, s (what partitions use).
  std::vector<double> unit_forward_s;
  double imbalance_ratio = 1.0;  // max / min stage forward time at the highest clock (modelled)
  std::vector<workload::StageWork> stages;
  std::string description;  // one line, e.g. "gpt3-175b on a100-sxm, TP 8 x PP 8, mb 1 x 2048"
};

/// Reads the "params" object of a `powertrain calibrate --out` JSON into `gpu.dvfs`; refuses a
/// file calibrated for another GPU type and out-of-range values, naming the file and field.
core::Status load_gpu_params(const std::string& path, device::GpuSpec& gpu);

/// Validates the request (unknown model or GPU names list the known ones; impossible parallel
/// layouts are refused with the reason) and builds the job. Backward ops are marked backward.
core::Result<ModelJob> build_model_job(const ModelJobRequest& request);

/// Modelled profile of the job: every stage's forward and backward (and recompute when enabled)
/// at every supported clock of the GPU. `source` names it in messages.
Profile generate_profile(const ModelJob& job);

/// Pairs each measured row of `measured` with the work of its stage and instruction, for
/// calibration. Stages whose rows repeat an earlier stage's exactly (replicated measurements)
/// are skipped but the last. Errors: a stage the job does not have, an instruction it does not run.
core::Result<std::vector<device::CalibrationSample>> calibration_samples(const ModelJob& job,
                                                                         const Profile& measured);

/// Writes a profile as Perseus CSV text (stage,instruction,frequency,time,energy).
std::string profile_csv(const Profile& profile);

}  // namespace powertrain::profile
