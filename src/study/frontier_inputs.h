// The inputs of the `frontier` flow: where the profile comes from (a CSV, the built-in example or
// a built-in model's job), the pipeline to plan and the planning settings, and which points get
// plan files.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "frontier/problem.h"
#include "pipeline/schedule.h"
#include "profile/model_profile.h"
#include "profile/profile.h"
#include "study/frontier_run.h"

namespace powertrain::study {

inline constexpr std::string_view kFrontierPBlockingRequired =
    "--p-blocking-w: required with --profile (power in W of a GPU blocked on P2P communication)";

/// What is asked for; 0 or a negative value means "not given" where noted.
struct FrontierRequest {
  std::string profile_path;                     // empty (and no job): the built-in example
  std::optional<profile::ModelJobRequest> job;  // the profile is modelled for this job instead
  std::optional<int> pp;                        // pipeline stages when given
  int microbatches = 0;                         // 0: the example's
  int chunks = 1;                               // model chunks per GPU (interleaved 1F1B)
  double p_blocking_w = -1.0;                   // < 0: the job's GPU's, or the example's
  double unit_time_s = 0.0;                     // 0: the example's
  std::string fit = "reference";
  double data_loading_s = 0.0;
  double optimizer_step_s = 0.0;
  double p2p_s = 0.0;
};

/// What is planned: the profile and where it came from.
struct ProfileSource {
  std::optional<profile::ModelJob> job;  // the profile is modelled for this job
  bool builtin = false;                  // neither a CSV nor a job: the built-in example
  profile::Profile profile;
};

/// Models the request's job, reads its CSV, or parses the built-in example.
core::Result<ProfileSource> load_profile(const FrontierRequest& request);

/// Model chunks per GPU: the request's for interleaved 1F1B, else 1.
int chunks_per_gpu(const FrontierRequest& request, pipeline::ScheduleKind schedule);

/// The pipeline to plan: the job's degree, the request's pp, or as many GPUs as the profile has
/// stages.
pipeline::PipelineSpec pipeline_spec(const FrontierRequest& request,
                                     pipeline::ScheduleKind schedule, const ProfileSource& source);

/// Fit, cost model, quantization, tau and P_blocking (the request's, else the job's GPU's, else
/// the example's). Errors (usage errors): an unknown fit, a CSV without P_blocking.
core::Result<frontier::PlanningSettings> planning_settings(const FrontierRequest& request,
                                                           frontier::CostModelKind cost_model,
                                                           frontier::Quantization quantization,
                                                           const ProfileSource& source);

/// Parses "tstar,tmin,stragglers,all,none,12,40" into sorted point indices of `run`.
core::Result<std::vector<std::size_t>> parse_plan_points(const std::string& spec,
                                                         const FrontierRun& run);

}  // namespace powertrain::study
