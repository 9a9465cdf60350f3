// kareus::run_job's checks and defaults (the five systems themselves are tested in
// systems-level tests and through `powertrain kareus`).
#include "kareus/job_run.h"

#include <gtest/gtest.h>

namespace powertrain::kareus {
namespace {

TEST(JobRunTest, DefaultsAreTheDocumentedJob) {
  const JobRunSettings settings;
  EXPECT_EQ(settings.request.model, "llama3.2-3b");
  EXPECT_EQ(settings.request.tp, 8);
  EXPECT_EQ(settings.request.pp, 2);
  EXPECT_EQ(settings.request.microbatch_size, 8);
  EXPECT_EQ(settings.request.seq_len, 4096);
  EXPECT_EQ(settings.request.microbatches, 8);
  EXPECT_EQ(settings.search, "mbo");
  EXPECT_EQ(settings.profiler, "model");
}

TEST(JobRunTest, SearchOptionsFollowTheSettings) {
  EXPECT_TRUE(systems_options("exhaustive", 3).exhaustive);
  EXPECT_FALSE(systems_options("mbo", 3).exhaustive);
  EXPECT_EQ(systems_options("mbo", 42).seed, 42u);
  EXPECT_EQ(systems_options("mbo", 42).profiler, nullptr);  // the model unless run_job sets one
}

TEST(JobRunTest, RefusesJobsWithoutACollectiveToOverlapBeforeAnyWork) {
  JobRunSettings settings;
  settings.request.num_layers = 2;
  settings.request.tp = 1;
  settings.request.cp = 1;
  bool built = false;
  auto run = run_job(settings, {.job_built = [&](const profile::ModelJob&) { built = true; },
                                .profiler_ready = {}});
  ASSERT_FALSE(run);
  EXPECT_EQ(run.error().message,
            "--tp or --cp must be at least 2: partitions pair collectives with compute");
  EXPECT_FALSE(built);

  JobRunSettings unknown;
  unknown.request.model = "no-such-model";
  EXPECT_FALSE(run_job(unknown, {}));

  JobRunSettings profiler;
  profiler.request.num_layers = 2;
  profiler.profiler = "oscilloscope";
  bool ready = false;
  auto refused = run_job(profiler, {.job_built = [&](const profile::ModelJob&) { built = true; },
                                    .profiler_ready = [&](const Profiler&) { ready = true; }});
  ASSERT_FALSE(refused);
  EXPECT_TRUE(built);  // the job line comes first, as the command prints it
  EXPECT_FALSE(ready);
}

}  // namespace
}  // namespace powertrain::kareus
