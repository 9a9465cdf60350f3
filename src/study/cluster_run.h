// The inputs of the `cluster` flow in one call: the profile (a CSV or a built-in model's),
// P_blocking and the configurations, checked against each other before any solve.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "profile/model_profile.h"
#include "profile/profile.h"
#include "study/cluster.h"

namespace powertrain::study {

/// What is asked for; sizes already range-checked by the caller (positive, at most 1e9).
struct ClusterRequest {
  std::string profile_path;                     // read when `job` is empty
  std::optional<profile::ModelJobRequest> job;  // the profile is modelled for this job instead
  std::optional<double> p_blocking_w;           // required with a CSV; default: the job's GPU's
  long long tp = 1;
  long long microbatch_samples = 1;
  long long global_batch_samples = 0;
  std::optional<long long> stages;  // default: the profile's stages (over chunks)
  std::vector<long long> gpus;      // one configuration each
};

struct ClusterInputs {
  profile::Profile profile;
  std::vector<ClusterConfig> configs;
  double p_blocking_w = 0.0;
  bool stages_from_profile = false;  // a CSV and no stage count given: its stages are planned
};

/// Reads or models the profile (calling `progress` with "profile modelled for ..." for a job) and
/// builds one configuration per GPU count. `settings` gives the schedule and chunks. Errors: the
/// profile's, a CSV whose stage count disagrees with `stages`, tp or stages above 1e6.
core::Result<ClusterInputs> prepare_cluster(
    const ClusterRequest& request, const ClusterSettings& settings,
    const std::function<void(const std::string&)>& progress);

}  // namespace powertrain::study
