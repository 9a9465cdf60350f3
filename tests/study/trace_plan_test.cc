// Plans from traces (issue 17 item 4, must-show 4): the 1F1B instructions found in a pipeline's
// timeline, their modelled clock response, and the frontier planned from them, whose fastest
// point must reproduce the replayed step.
#include "study/trace_plan.h"

#include <gtest/gtest.h>

#include <cmath>

#include "sim/metrics.h"
#include "sim/simulator.h"
#include "whatif/restage.h"

namespace powertrain::study {
namespace {

using pipeline::InstructionKind;

// A transformer-like layer (forward 100 µs, backward 200 µs; GEMM, attention and memory-bound
// kernels), as in tests/whatif/restage_test.cc.
whatif::LayerProfile layer_profile() {
  whatif::LayerProfile profile;
  profile.layers = 8;
  profile.forward = {{"layer_norm_kernel", 10'000, 0},
                     {"sm90_xmma_gemm_qkv", 30'000, 0},
                     {"flash_fwd_kernel", 20'000, 0},
                     {"sm90_xmma_gemm_mlp", 40'000, 0}};
  profile.backward = {{"flash_bwd_kernel", 40'000, 0},         {"sm90_xmma_gemm_dgrad", 50'000, 0},
                      {"sm90_xmma_gemm_wgrad", 50'000, 0},     {"layer_norm_bwd", 20'000, 0},
                      {"sm90_xmma_gemm_mlp_dgrad", 20'000, 0}, {"elementwise_bwd", 20'000, 0}};
  profile.first_stage_extra_ns = 50'000;
  profile.last_stage_extra_ns = 80'000;
  return profile;
}

struct Pipeline {
  whatif::RestagedJob job;
  sim::ReplayResult replay;
  double step_s = 0.0;
};

Pipeline make_pipeline(int stages, int microbatches, double p2p_s) {
  whatif::RestageSpec spec;
  spec.stages = stages;
  spec.microbatches = microbatches;
  spec.p2p_s = p2p_s;
  auto job = whatif::build_pipeline_job(layer_profile(), spec);
  EXPECT_TRUE(job) << job.error().message;
  Pipeline p{std::move(*job), {}, 0.0};
  p.replay = sim::replay(p.job.graph);
  p.step_s = sim::metrics_of_replay(p.job.graph, p.replay).job_step_time_ns * 1e-9;
  return p;
}

TEST(TracePlanTest, FindsEveryInstructionOfA1F1BPipeline) {
  const Pipeline p = make_pipeline(4, 8, 20e-6);
  auto found = find_pipeline(p.job.graph, p.replay.start_ns, p.replay.end_ns);
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_EQ(found->stages, 4);
  EXPECT_EQ(found->microbatches, 8);
  ASSERT_EQ(found->instructions.size(), 4u * 8u * 2u);
  for (const TraceInstruction& ins : found->instructions) {
    // 2 layers per stage: 8 forward or 12 backward kernels, plus the first/last stage's extra.
    const bool forward = ins.kind == InstructionKind::kForward;
    std::size_t expected = forward ? 8 : 12;
    if (forward && (ins.stage == 0 || ins.stage == 3)) ++expected;
    EXPECT_EQ(ins.tasks.size(), expected)
        << "stage " << ins.stage << " microbatch " << ins.microbatch << " forward " << forward;
    // Forward 200 µs of kernels (+50 µs embedding on stage 0, +80 µs head on stage 3), backward
    // 400 µs; the transfer it waits for (20 µs) on the receiving side only.
    double compute_s = forward ? 200e-6 : 400e-6;
    if (forward && ins.stage == 0) compute_s += 50e-6;
    if (forward && ins.stage == 3) compute_s += 80e-6;
    EXPECT_NEAR(ins.end_s - ins.start_s, compute_s, 1e-9);
    const bool receives = forward ? ins.stage > 0 : ins.stage < 3;
    EXPECT_NEAR(ins.receive_s, receives ? 20e-6 : 0.0, 1e-9);
    // GEMM + attention kernels: forward 90 of 100 µs per layer, backward 160 of 200 µs.
    if (ins.stage == 1) {
      EXPECT_NEAR(ins.matmul_s, forward ? 180e-6 : 320e-6, 1e-9);
    }
  }
}

TEST(TracePlanTest, ModelledInstructionScalesComputeWithClockAndKeepsTransfers) {
  auto gpu = device::find_gpu(device::kDefaultGpu);
  ASSERT_TRUE(gpu);
  TraceInstruction ins;
  ins.start_s = 0.0;
  ins.end_s = 1e-3;
  ins.matmul_s = 0.6e-3;
  ins.memory_s = 0.3e-3;
  ins.idle_s = 0.1e-3;
  ins.receive_s = 0.05e-3;
  const double f_max = gpu->max_clock_mhz();
  const device::WorkEstimate top = model_instruction(ins, *gpu, f_max);
  EXPECT_NEAR(top.time_s, ins.time_at_max_s(), 1e-9);  // the measured time at the top clock
  // Below the top clock: the GEMM part stretches by (model time at f) / (model time at f_max),
  // which is f_max / f when neither clock is power-capped; everything else keeps its time.
  const double f = 0.75 * f_max;
  const device::WorkEstimate mid = model_instruction(ins, *gpu, f);
  TraceInstruction gemm_only;
  gemm_only.matmul_s = 0.6e-3;
  const double gemm_at_f = model_instruction(gemm_only, *gpu, f).time_s;
  // 1 µs: the power cap depends on the mix's average power, so the GEMM alone caps a bit apart.
  EXPECT_NEAR(mid.time_s, gemm_at_f + 0.3e-3 + 0.1e-3 + 0.05e-3, 1e-6);
  if (!mid.power_capped && !top.power_capped) {
    EXPECT_NEAR(gemm_at_f, 0.6e-3 * f_max / f, 1e-9);
  } else {
    EXPECT_LE(gemm_at_f, 0.6e-3 * f_max / f * (1.0 + 1e-9));
  }
  EXPECT_GT(mid.time_s, top.time_s);
  // DVFS saves energy somewhere below the top clock (less dynamic power, little more static).
  double least_j = top.energy_j;
  for (int clock : gpu->clocks_mhz)
    least_j = std::min(least_j, model_instruction(ins, *gpu, clock).energy_j);
  EXPECT_LT(least_j, 0.97 * top.energy_j);
}

TEST(TracePlanTest, FastestPlanReproducesTheReplayedStepAndFrontierIsMonotone) {
  auto gpu = device::find_gpu(device::kDefaultGpu);
  ASSERT_TRUE(gpu);
  for (auto [stages, microbatches] : {std::pair{4, 8}, std::pair{2, 4}, std::pair{3, 6}}) {
    SCOPED_TRACE(testing::Message() << stages << " stages x " << microbatches << " microbatches");
    const Pipeline p = make_pipeline(stages, microbatches, 15e-6);
    auto plan =
        plan_from_timeline(p.job.graph, p.replay.start_ns, p.replay.end_ns, p.step_s, *gpu, "test");
    ASSERT_TRUE(plan) << plan.error().message;
    // The uniform 1F1B formula (stage times differ only by the first/last stage's extras).
    EXPECT_GT(p.step_s, 0.0);
    EXPECT_NEAR(plan->t_min_s(), p.step_s, 0.01 * p.step_s);
    // Monotone where it is a frontier: from T_min up to the least-energy point, more time means
    // less energy. Slower points (T* side) cost more, as in the reference solver's frontiers
    // (../shared/data/perseus/frontiers): the blocking power of every stage over the longer
    // iteration outweighs what the slower clocks save; they are dominated, not a trade-off.
    const auto& points = plan->frontier.points;
    ASSERT_GE(points.size(), 2u);
    std::size_t least = 0;
    for (std::size_t i = 1; i < points.size(); ++i) {
      EXPECT_LT(points[i].time_units, points[i - 1].time_units) << i;
      if (points[i].energy_j < points[least].energy_j) least = i;
    }
    EXPECT_LT(least + 1, points.size());  // a real trade-off exists
    for (std::size_t i = least + 1; i < points.size(); ++i)
      EXPECT_GE(points[i].energy_j, points[i - 1].energy_j - 1e-9) << i;
    // The fastest plan costs more energy than the least-energy one by a visible margin.
    EXPECT_GT(points.back().energy_j, 1.01 * points[least].energy_j);
  }
}

TEST(TracePlanTest, NoPipelineGivesOneLineReason) {
  // One stage: no transfers to split at.
  const Pipeline p = make_pipeline(1, 4, 0.0);
  auto found = find_pipeline(p.job.graph, p.replay.start_ns, p.replay.end_ns);
  ASSERT_FALSE(found);
  EXPECT_NE(found.error().message.find("no pipeline structure"), std::string::npos);
  EXPECT_EQ(found.error().message.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace powertrain::study
