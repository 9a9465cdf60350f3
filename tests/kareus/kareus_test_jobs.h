// The job most Kareus tests pick partitions from: Llama 3.2 3B, TP 8 × PP 2, microbatch 8 × 4096
// (Table 3's first workload, JobRunSettings::default_job_request), stage 1's forward microbatch.
#pragma once

#include <gtest/gtest.h>

#include "kareus/job_run.h"
#include "kareus/partition.h"
#include "profile/model_profile.h"

namespace powertrain::kareus::test_jobs {

inline MicrobatchWork llama_tp8_stage1_forward() {
  auto job = profile::build_model_job(JobRunSettings::default_job_request());
  EXPECT_TRUE(job.ok());
  if (!job.ok()) return {};
  return build_microbatch_work(job->stages[1].forward, false, 8);
}

}  // namespace powertrain::kareus::test_jobs
