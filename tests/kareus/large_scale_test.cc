// Kareus §6.3 large-scale emulation on a small slice: the path runs end to end, configurations map
// to pipelines and microbatches like the cluster emulation, and Kareus never needs more energy
// than Megatron-LM + Perseus at M+P's fastest time.
#include "kareus/large_scale.h"

#include <gtest/gtest.h>

#include "kareus/profiler.h"

namespace powertrain::kareus {
namespace {

LargeScaleOptions small_slice() {
  LargeScaleOptions o = paper_large_scale_options();
  o.request.num_layers = 10;  // one Llama 3.3 70B layer per stage (PP 10)
  o.request.seq_len = 1024;
  o.global_batch = 128;
  o.gpus = {160, 320};  // 2 pipelines × 16 microbatches, 4 × 8
  o.exhaustive = true;  // cheap on the model; MBO is exercised in search_test
  return o;
}

TEST(KareusLargeScale, SmallSliceRunsAndKareusBeatsPerseusAtEqualTime) {
  const LargeScaleOptions o = small_slice();
  auto job = profile::build_model_job(o.request);
  ASSERT_TRUE(job) << job.error().message;
  ModelProfiler model(job->gpu, ConcurrencyParams{});
  auto result = emulate_large_scale(o, model);
  ASSERT_TRUE(result) << result.error().message;
  ASSERT_EQ(result->rows.size(), 2u);
  EXPECT_EQ(result->profiler, "model");
  // Stages 1..8 are identical: searched once (forward and backward attention and MLP), plus the
  // edge stages' own types.
  EXPECT_GE(result->partition_types, 4u);
  EXPECT_LE(result->partition_types, 16u);
  EXPECT_EQ(result->evaluated, result->space);  // exhaustive
  const int expected_m[] = {16, 8};
  const long long expected_n[] = {2, 4};
  for (std::size_t i = 0; i < 2; ++i) {
    const LargeScaleRow& r = result->rows[i];
    EXPECT_EQ(r.shape.pipelines, expected_n[i]);
    EXPECT_EQ(r.shape.microbatches_per_pipeline, expected_m[i]);
    ASSERT_FALSE(r.perseus.empty());
    ASSERT_FALSE(r.kareus.empty());
    // Max throughput: Kareus is at least as fast as Megatron-LM (the sequential microbatch is one
    // of its options) and saves at least what M+P saves.
    EXPECT_LE(r.kareus_fastest.time_s, r.megatron.time_s * (1 + 1e-9));
    EXPECT_GE(r.kareus_time_reduction_pct, r.perseus_time_reduction_pct - 1e-9);
    EXPECT_GT(r.perseus_energy_reduction_pct, 0.0);
    // Iso-time: Kareus's least energy within M+P's fastest time is no more than M+P's.
    ASSERT_TRUE(r.iso_time_energy_reduction_pct.has_value());
    EXPECT_GE(*r.iso_time_energy_reduction_pct, 0.0);
    ASSERT_TRUE(r.iso_energy_time_reduction_pct.has_value());
    EXPECT_GE(*r.iso_energy_time_reduction_pct, 0.0);
  }
  // Cluster energy = tp × N × one pipeline: the 4-pipeline cluster with half the microbatches per
  // pipeline does the same work, so its Megatron energy is within the pipeline-bubble difference.
  const double e2 = result->rows[0].megatron.energy_j, e4 = result->rows[1].megatron.energy_j;
  EXPECT_GT(e4, e2);        // more pipelines → more bubbles and blocking
  EXPECT_LT(e4, 1.5 * e2);  // but the same computation
  EXPECT_LT(result->rows[1].megatron.time_s, result->rows[0].megatron.time_s);
}

TEST(KareusLargeScale, BadConfigurationIsOneLineBeforeAnySearch) {
  LargeScaleOptions o = small_slice();
  o.gpus = {100};
  auto job = profile::build_model_job(o.request);
  ASSERT_TRUE(job);
  ModelProfiler model(job->gpu, ConcurrencyParams{});
  auto result = emulate_large_scale(o, model);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message,
            "large-scale emulation: 100 GPUs: not a whole number of pipelines of tp x pp = 8 x 10 "
            "= 80 GPUs");
}

TEST(KareusLargeScale, PaperTableValues) {
  const auto row = paper_large_scale_row(16);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->kareus_energy_pct, 20.2);
  EXPECT_EQ(row->iso_energy_time_pct, 19.1);
  EXPECT_FALSE(paper_large_scale_row(20));
  const LargeScaleOptions o = paper_large_scale_options();
  EXPECT_EQ(o.gpus, (std::vector<long long>{10240, 5120, 2560, 1280}));
  EXPECT_EQ(o.global_batch, 8192);  // Table 6: 2048 microbatches of 4
}

}  // namespace
}  // namespace powertrain::kareus
