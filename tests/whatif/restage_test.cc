// Structural what-ifs (issue 4, must-show 3): layer detection, re-staging a pipeline to another
// degree with the analytically expected 1F1B time, data-parallel degree and hidden size.
#include "whatif/restage.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <random>

#include "../support/synthetic_job.h"
#include "graph/graph_builder.h"
#include "graph/trace_builder.h"
#include "sim/metrics.h"
#include "sim/simulator.h"
#include "trace/kineto_reader.h"
#include "whatif/layers.h"

namespace powertrain::whatif {
namespace {

double step_ns(const graph::ExecutionGraph& graph) {
  const sim::ReplayResult result = sim::replay(graph);
  EXPECT_EQ(result.outcome, sim::ReplayOutcome::kComplete);
  EXPECT_EQ(result.collectives_forced, 0);
  return sim::metrics_of_replay(graph, result).job_step_time_ns;
}

// A transformer-like layer: 4 forward kernels (100 µs) and 6 backward kernels (200 µs).
LayerProfile uniform_profile(int stages, int microbatches, int layers) {
  LayerProfile profile;
  profile.stages = stages;
  profile.microbatches = microbatches;
  profile.layers = layers;
  profile.forward = {{"layer_norm_kernel", 10'000, 0},
                     {"sm90_xmma_gemm_qkv", 30'000, 0},
                     {"flash_fwd_kernel", 20'000, 0},
                     {"sm90_xmma_gemm_mlp", 40'000, 0}};
  profile.backward = {{"flash_bwd_kernel", 40'000, 0},         {"sm90_xmma_gemm_dgrad", 50'000, 0},
                      {"sm90_xmma_gemm_wgrad", 50'000, 0},     {"layer_norm_bwd", 20'000, 0},
                      {"sm90_xmma_gemm_mlp_dgrad", 20'000, 0}, {"elementwise_bwd", 20'000, 0}};
  return profile;
}

// The rebuilt job's timeline written as normalized traces (GPU kernels, NCCL send/recv with
// process group and sequence metadata), so a test can start from a trace like a measured one.
std::vector<trace::RankTrace> as_traces(const graph::ExecutionGraph& graph) {
  std::vector<trace::RankTrace> traces;
  std::vector<int> sequence_of_group(graph.collectives.size(), -1);
  std::map<std::string, int> next_sequence;
  for (const graph::RankInfo& rank : graph.ranks) {
    graph::RankTraceBuilder b(rank.rank, rank.world_size, rank.source);
    for (std::int32_t task = rank.first_task; task < rank.end_task; ++task) {
      const graph::Processor& p = graph.processors[graph.processor[task]];
      b.gpu(trace::EventKind::kKernel, rank.names[graph.name[task]],
            1'000'000'000 + graph.input_start_ns[task], graph.input_duration_ns[task],
            /*correlation=*/-1, /*stream=*/p.tid, /*device=*/p.pid);
      b.last().nccl = graph.nccl[task] != 0;
      const std::int32_t group = graph.collective[task];
      if (group == graph::kNone) continue;
      const std::int32_t x = graph.collective_members[graph.collectives[group].first_member];
      const std::int32_t y = graph.collective_members[graph.collectives[group].first_member + 1];
      const int rx = graph.rank_index_of(x), ry = graph.rank_index_of(y);
      const std::string pg = fmt::format("pp{}-{}", std::min(rx, ry), std::max(rx, ry));
      if (sequence_of_group[group] < 0) sequence_of_group[group] = next_sequence[pg]++;
      trace::CollectiveInfo info;
      info.name = task == x ? "send" : "recv";
      info.group_size = 2;
      info.process_group = pg;
      info.sequence = sequence_of_group[group];
      b.collective(std::move(info));
    }
    traces.push_back(b.build());
  }
  return traces;
}

TEST(TandemRepeat, MatchesBruteForceOnRandomSequences) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t n = 1 + rng() % 24;
    std::vector<std::uint32_t> s(n);
    for (auto& x : s) x = rng() % 3;
    std::size_t best_cover = 0;
    for (std::size_t p = 1; p <= n / 2; ++p)
      for (std::size_t start = 0; start + 2 * p <= n; ++start) {
        std::size_t copies = 1;
        while (start + (copies + 1) * p <= n &&
               std::equal(s.begin() + start, s.begin() + start + p, s.begin() + start + copies * p))
          ++copies;
        if (copies >= 2) best_cover = std::max(best_cover, copies * p);
      }
    const TandemRepeat found = longest_tandem_repeat(s, 1000);
    EXPECT_EQ(found.copies * found.period, best_cover) << "trial " << trial;
    if (found.copies >= 2) {
      for (std::size_t c = 1; c < found.copies; ++c)
        EXPECT_TRUE(std::equal(s.begin() + found.start, s.begin() + found.start + found.period,
                               s.begin() + found.start + c * found.period));
    }
  }
}

TEST(Restage, TwoStagePipelineRestagedToFourStagesGivesTheAnalytic1F1BTime) {
  constexpr int kMicrobatches = 8;
  constexpr int kLayers = 8;
  auto input = build_pipeline_job(uniform_profile(2, kMicrobatches, kLayers), {});
  ASSERT_TRUE(input.ok()) << input.error().message;
  // The input itself follows the formula: 4 layers a stage, 100 µs forward, 200 µs backward each.
  EXPECT_NEAR(step_ns(input->graph),
              one_f_one_b_step_s(2, kMicrobatches, 4 * 100e-6, 4 * 200e-6) * 1e9, 1.0);

  // Re-staging finds the layers in the input graph (no annotations: the repeating block) and
  // infers the microbatches from the send/recv pairs.
  auto restaged = restage(input->graph, {.stages = 4});
  ASSERT_TRUE(restaged.ok()) << restaged.error().message;
  EXPECT_EQ(restaged->profile.method, "repeating block");
  EXPECT_EQ(restaged->profile.microbatches, kMicrobatches);
  EXPECT_EQ(restaged->profile.layers, kLayers);
  EXPECT_EQ(restaged->profile.forward.size(), 4u);
  EXPECT_EQ(restaged->profile.backward.size(), 6u);
  EXPECT_EQ(restaged->profile.forward_layer_ns(), 100'000);
  EXPECT_EQ(restaged->profile.backward_layer_ns(), 200'000);
  EXPECT_EQ(restaged->layers_per_stage, (std::vector<int>{2, 2, 2, 2}));
  ASSERT_EQ(restaged->graph.ranks.size(), 4u);
  EXPECT_NEAR(step_ns(restaged->graph),
              one_f_one_b_step_s(4, kMicrobatches, 2 * 100e-6, 2 * 200e-6) * 1e9, 1.0);

  // And more microbatches, other stage counts.
  for (int stages : {1, 2, 8}) {
    auto other = restage(input->graph, {.stages = stages, .microbatches = 16});
    ASSERT_TRUE(other.ok()) << other.error().message;
    const int per_stage = kLayers / stages;
    EXPECT_NEAR(step_ns(other->graph),
                one_f_one_b_step_s(stages, 16, per_stage * 100e-6, per_stage * 200e-6) * 1e9, 1.0)
        << stages << " stages";
  }
}

TEST(Restage, TwoStagePipelineTraceRestagedToFourStagesGivesTheAnalytic1F1BTime) {
  // The same check starting from a trace: the graph builder matches the send/recv kernels by
  // process group and sequence, and re-staging works on the graph it builds.
  constexpr int kMicrobatches = 6;
  auto input = build_pipeline_job(uniform_profile(2, kMicrobatches, 8), {});
  ASSERT_TRUE(input.ok());
  auto graph = graph::build_execution_graph(as_traces(input->graph));
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  EXPECT_EQ(graph->stats.collective_groups_joined, 2 * kMicrobatches);
  EXPECT_NEAR(step_ns(*graph), one_f_one_b_step_s(2, kMicrobatches, 400e-6, 800e-6) * 1e9, 1.0);
  auto restaged = restage(*graph, {.stages = 4});
  ASSERT_TRUE(restaged.ok()) << restaged.error().message;
  EXPECT_EQ(restaged->profile.microbatches, kMicrobatches);
  EXPECT_EQ(restaged->profile.layers, 8);
  EXPECT_NEAR(step_ns(restaged->graph),
              one_f_one_b_step_s(4, kMicrobatches, 2 * 100e-6, 2 * 200e-6) * 1e9, 1.0);
}

TEST(Restage, RestagingToTheInputsOwnShapeReproducesItsStep) {
  // Gaps inside layers, embedding/head work and pipeline transfers: the re-staged job at the
  // input's own configuration replays to the same step time.
  LayerProfile profile = uniform_profile(2, 6, 6);
  profile.forward[1].gap_ns = 3'000;
  profile.forward[0].gap_ns = 5'000;
  profile.backward[2].gap_ns = 7'000;
  profile.first_stage_extra_ns = 25'000;
  profile.last_stage_extra_ns = 60'000;
  auto input = build_pipeline_job(profile, {.p2p_s = 15e-6});
  ASSERT_TRUE(input.ok()) << input.error().message;
  const double input_ns = step_ns(input->graph);
  auto same = restage(input->graph, {});
  ASSERT_TRUE(same.ok()) << same.error().message;
  EXPECT_EQ(same->profile.p2p_ns, 15'000);
  EXPECT_EQ(same->profile.first_stage_extra_ns, 25'000);
  EXPECT_EQ(same->profile.last_stage_extra_ns, 60'000);
  EXPECT_EQ(same->profile.forward[1].gap_ns, 3'000);
  EXPECT_EQ(same->profile.forward[0].gap_ns, 5'000);
  EXPECT_NEAR(step_ns(same->graph), input_ns, 1.0);
  // Transfers on the fill/drain path lengthen a deeper pipeline.
  auto deeper = restage(input->graph, {.stages = 3});
  ASSERT_TRUE(deeper.ok());
  EXPECT_GT(step_ns(deeper->graph), 0.0);
}

TEST(Restage, MoreLayersScaleASingleStageLinearly) {
  auto input = build_pipeline_job(uniform_profile(1, 4, 6), {});
  ASSERT_TRUE(input.ok());
  const double six = step_ns(input->graph);
  // One rank cannot tell microbatches (gradient accumulation) from layers: say how many.
  auto twelve = restage(input->graph, {.layers = 12}, /*input_microbatches=*/4);
  ASSERT_TRUE(twelve.ok()) << twelve.error().message;
  EXPECT_NEAR(step_ns(twelve->graph), 2.0 * six, 1.0);
  EXPECT_NEAR(six, 4 * 6 * 300e3, 1.0);
}

TEST(Restage, LayersWithRepeatedKernelsAndForwardOnlyPipelines) {
  // A layer whose kernels repeat inside ([gemm, gemm, add]) is one layer, not two GEMM "layers".
  LayerProfile repeated;
  repeated.stages = 1;
  repeated.microbatches = 1;
  repeated.layers = 4;
  repeated.forward = {
      {"sm90_gemm_a", 30'000, 0}, {"sm90_gemm_a", 30'000, 0}, {"add_kernel", 10'000, 0}};
  repeated.backward = {{"sm90_gemm_a_bwd", 60'000, 0}, {"add_bwd", 20'000, 0}};
  auto one = build_pipeline_job(repeated, {});
  ASSERT_TRUE(one.ok());
  auto profile = profile_layers(one->graph);
  ASSERT_TRUE(profile.ok()) << profile.error().message;
  EXPECT_EQ(profile->layers, 4);
  EXPECT_EQ(profile->forward.size(), 3u);
  EXPECT_EQ(profile->backward.size(), 2u);

  // Forward only (inference): one transfer per microbatch between stages, not two.
  LayerProfile forward_only = uniform_profile(2, 4, 8);
  forward_only.backward.clear();
  auto input = build_pipeline_job(forward_only, {});
  ASSERT_TRUE(input.ok());
  auto restaged = restage(input->graph, {.stages = 4});
  ASSERT_TRUE(restaged.ok()) << restaged.error().message;
  EXPECT_EQ(restaged->profile.microbatches, 4);
  EXPECT_EQ(restaged->profile.layers, 8);
  EXPECT_TRUE(restaged->profile.backward.empty());
  EXPECT_NEAR(step_ns(restaged->graph), one_f_one_b_step_s(4, 4, 2 * 100e-6, 0.0) * 1e9, 1.0);
}

TEST(Restage, TwoRankAllReducesAreNotPipelineTransfers) {
  // A 2-rank data-parallel job has 2-member all-reduces; they say nothing about microbatches.
  test_support::SyntheticJobSpec spec;
  spec.ranks = 2;
  spec.layers = 4;
  spec.kernels_per_layer = 2;
  auto graph = graph::build_execution_graph(test_support::make_synthetic_job(spec));
  ASSERT_TRUE(graph.ok());
  auto restaged = restage(*graph, {.stages = 2});
  ASSERT_FALSE(restaged.ok());
  EXPECT_NE(restaged.error().message.find("send/recv"), std::string::npos)
      << restaged.error().message;
}

TEST(Restage, RefusesImpossibleShapes) {
  auto input = build_pipeline_job(uniform_profile(2, 4, 4), {});
  ASSERT_TRUE(input.ok());
  auto too_deep = restage(input->graph, {.stages = 5});
  ASSERT_FALSE(too_deep.ok());
  EXPECT_NE(too_deep.error().message.find("at least one layer"), std::string::npos);
  EXPECT_FALSE(restage(input->graph, {.p2p_s = std::nan("")}).ok());
  EXPECT_FALSE(restage(input->graph, {.p2p_s = 1e10}).ok());
  auto huge = restage(input->graph, {.microbatches = 100'000, .layers = 100'000});
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.error().message.find("too large"), std::string::npos);
  // A job whose kernels never repeat has no layers.
  test_support::SyntheticJobSpec spec;
  spec.ranks = 1;
  spec.layers = 1;
  spec.kernels_per_layer = 1;
  spec.steps = 1;
  auto single = graph::build_execution_graph(test_support::make_synthetic_job(spec));
  ASSERT_TRUE(single.ok());
  auto none = restage(*single, {.stages = 2});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("no repeated block"), std::string::npos);
}

TEST(WhatIfDataParallel, CollectivesFollowTheRingBusFactor) {
  test_support::SyntheticJobSpec spec;
  spec.ranks = 4;
  spec.layers = 4;
  auto graph = graph::build_execution_graph(test_support::make_synthetic_job(spec));
  ASSERT_TRUE(graph.ok());
  const std::int32_t nccl = graph::find_task(*graph, 0, graph->task_name([&] {
    for (std::int32_t t = 0; t < graph->task_count(); ++t)
      if (graph->nccl[t]) return t;
    return 0;
  }()));
  ASSERT_NE(nccl, graph::kNone);
  const double before_ns = step_ns(*graph);
  const std::int64_t before_task = graph->duration_ns[nccl];
  auto eight = *graph;
  auto changed = change_data_parallel_degree(eight, 8);
  ASSERT_TRUE(changed.ok());
  EXPECT_GT(*changed, 0);
  // 2·7/8 over 2·3/4.
  EXPECT_NEAR(static_cast<double>(eight.duration_ns[nccl]) / before_task, (7.0 / 8) / (3.0 / 4),
              1e-3);
  EXPECT_GE(step_ns(eight), before_ns);
  auto one = *graph;
  ASSERT_TRUE(change_data_parallel_degree(one, 1).ok());
  EXPECT_EQ(one.duration_ns[nccl], 0);
  EXPECT_LE(step_ns(one), before_ns);
  EXPECT_FALSE(change_data_parallel_degree(one, 0).ok());
}

TEST(WhatIfHiddenSize, GemmsScaleQuadraticallyAttentionAndMemoryLinearly) {
  auto job = build_pipeline_job(uniform_profile(1, 1, 2), {});
  ASSERT_TRUE(job.ok());
  graph::ExecutionGraph graph = job->graph;
  ASSERT_TRUE(change_hidden_size(graph, 2.0).ok());
  for (std::int32_t t = 0; t < graph.task_count(); ++t) {
    const std::string& name = graph.task_name(t);
    const double ratio = static_cast<double>(graph.duration_ns[t]) / job->graph.duration_ns[t];
    if (name.find("gemm") != std::string::npos)
      EXPECT_DOUBLE_EQ(ratio, 4.0) << name;
    else
      EXPECT_DOUBLE_EQ(ratio, 2.0) << name;  // flash attention, layer norm, elementwise
  }
  EXPECT_FALSE(change_hidden_size(graph, -1.0).ok());
}

TEST(DetectLayers, FindsTheTransformerBlocksOfARealTraceFromModuleAnnotations) {
  const std::filesystem::path path = std::filesystem::path(POWERTRAIN_SOURCE_DIR) /
                                     "../shared/data/traces/tracelens/b200_eager_rank0.json.gz";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "real trace not found: " << path;
  auto traces = trace::read_kineto_traces({path.string()});
  ASSERT_TRUE(traces.ok()) << traces.error().message;
  auto graph = graph::build_execution_graph(*traces);
  ASSERT_TRUE(graph.ok());
  auto layers = detect_layers(*graph, 0);
  ASSERT_TRUE(layers.ok()) << layers.error().message;
  EXPECT_EQ(layers->method, "module annotations (nn.Module: TransformerBlock)");
  EXPECT_EQ(layers->forward.occurrences.size(), 36u);  // gpt-oss-20b: 24? see the trace
  EXPECT_TRUE(layers->backward.occurrences.empty());   // inference: forward only
  auto more = restage(*graph, {.layers = 72});
  ASSERT_TRUE(more.ok()) << more.error().message;
  EXPECT_GT(step_ns(more->graph), step_ns(restage(*graph, {})->graph));
}

}  // namespace
}  // namespace powertrain::whatif
