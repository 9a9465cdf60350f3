// The `kareus` flow for one job as one call: model the job, pick the profiler and run the five
// systems (docs/kareus.md). The caller prints and writes the result (report/kareus_report.h).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/result.h"
#include "kareus/profiler.h"
#include "kareus/systems.h"
#include "profile/model_profile.h"

namespace powertrain::kareus {

/// What is asked for, as plain values (the command line's), with its defaults: Llama 3.2 3B,
/// TP 8, PP 2, microbatch size 8, sequence length 4096, 8 microbatches.
struct JobRunSettings {
  profile::ModelJobRequest request = default_job_request();
  std::string search = "mbo";  // "mbo" or "exhaustive"
  long long seed = 1;
  std::string profiler = "model";  // "model" or "gpu" (make_profiler)

  static profile::ModelJobRequest default_job_request();
};

/// The search options `search` ("exhaustive": exhaustive, else MBO) and `seed` give.
SystemsOptions systems_options(const std::string& search, long long seed);

struct JobRun {
  profile::ModelJob job;
  std::unique_ptr<Profiler> profiler;  // the one the options point at (when not "model")
  SystemsOptions options;
  SystemsResult result;
};

/// Where the caller steps in; each may be empty.
struct JobRunHooks {
  std::function<void(const profile::ModelJob&)> job_built;  // e.g. print the job's line
  std::function<void(const Profiler&)> profiler_ready;      // e.g. print the profiler's name
};

/// Models the job, checks it has a collective to overlap (tp or cp at least 2), makes the
/// profiler and runs the five systems.
core::Result<JobRun> run_job(const JobRunSettings& settings, const JobRunHooks& hooks);

}  // namespace powertrain::kareus
