#include "kareus/job_run.h"

#include <utility>

#include "kareus/profiler_gpu.h"

namespace powertrain::kareus {

profile::ModelJobRequest JobRunSettings::default_job_request() {
  profile::ModelJobRequest request;
  request.model = "llama3.2-3b";
  request.tp = 8;
  request.pp = 2;
  request.microbatch_size = 8;
  request.seq_len = 4096;
  request.microbatches = 8;
  return request;
}

SystemsOptions systems_options(const std::string& search, long long seed) {
  SystemsOptions o;
  o.exhaustive = search == "exhaustive";
  o.seed = static_cast<std::uint64_t>(seed);
  return o;
}

core::Result<JobRun> run_job(const JobRunSettings& settings, const JobRunHooks& hooks) {
  auto job = profile::build_model_job(settings.request);
  if (!job) return job.error();
  if (settings.request.tp < 2 && settings.request.cp < 2)
    return core::Error{"--tp or --cp must be at least 2: partitions pair collectives with compute"};
  if (hooks.job_built) hooks.job_built(*job);
  SystemsOptions options = systems_options(settings.search, settings.seed);
  auto profiler = make_profiler(settings.profiler, job->gpu, options.params);
  if (!profiler) return profiler.error();
  if (settings.profiler != "model") options.profiler = profiler->get();
  if (hooks.profiler_ready) hooks.profiler_ready(**profiler);
  auto result = run_systems(*job, settings.request.microbatches, options, nullptr);
  if (!result) return result.error();
  return JobRun{.job = std::move(*job),
                .profiler = std::move(*profiler),
                .options = options,
                .result = std::move(*result)};
}

}  // namespace powertrain::kareus
