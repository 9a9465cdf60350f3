#include "study/cluster_run.h"

#include <fmt/core.h>

#include <algorithm>

namespace powertrain::study {

namespace {

// The profile CSV, or the built-in model's profile (which also gives P_blocking when none is set).
core::Result<profile::Profile> cluster_profile(
    const ClusterRequest& request, ClusterInputs& inputs,
    const std::function<void(const std::string&)>& progress) {
  if (!request.job) return profile::read_profile(request.profile_path);
  profile::ModelJobRequest job_request = *request.job;
  job_request.tp = static_cast<int>(request.tp);
  job_request.microbatch_size = static_cast<int>(request.microbatch_samples);
  job_request.pp = static_cast<int>(std::min<long long>(request.stages.value_or(8), 1'000'000));
  auto job = profile::build_model_job(job_request);
  if (!job) return job.error();
  if (!request.p_blocking_w) inputs.p_blocking_w = job->gpu.p_blocking_w;
  auto profile = profile::generate_profile(*job);
  if (progress) progress(fmt::format("profile modelled for {}", job->description));
  return profile;
}

}  // namespace

core::Result<ClusterInputs> prepare_cluster(
    const ClusterRequest& request, const ClusterSettings& settings,
    const std::function<void(const std::string&)>& progress) {
  ClusterInputs inputs;
  inputs.p_blocking_w = request.p_blocking_w.value_or(0.0);
  auto profile = cluster_profile(request, inputs, progress);
  if (!profile) return profile.error();
  inputs.profile = std::move(*profile);
  const int profile_chunks =
      settings.pipeline.schedule == pipeline::ScheduleKind::kInterleavedOneFOneB
          ? settings.pipeline.chunks_per_gpu
          : 1;
  const long long stages =
      request.stages.value_or(std::max(1, inputs.profile.num_stages() / profile_chunks));
  if (!request.job && request.stages && inputs.profile.num_stages() != stages * profile_chunks) {
    return core::Error{fmt::format(
        "{}: has {} stage(s) but --pp {} needs {}; is the file truncated, or --pp wrong?",
        inputs.profile.source, inputs.profile.num_stages(), stages, stages * profile_chunks)};
  }
  if (request.tp > 1'000'000 || stages > 1'000'000) {
    return core::Error{
        fmt::format("--tp {} / --pp {}: expected at most 1000000 each", request.tp, stages)};
  }
  inputs.stages_from_profile = !request.job && !request.stages;
  for (long long g : request.gpus) {
    ClusterConfig config;
    config.gpus = g;
    config.tensor_parallel = static_cast<int>(request.tp);
    config.pipeline_stages = static_cast<int>(stages);
    config.global_batch_samples = request.global_batch_samples;
    config.microbatch_samples = request.microbatch_samples;
    inputs.configs.push_back(config);
  }
  return inputs;
}

}  // namespace powertrain::study
