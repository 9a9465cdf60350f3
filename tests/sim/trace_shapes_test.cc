// The corpus of trace shapes (tests/support/kineto_shapes.h): every real-world quirk replays with
// no lost task and within 1 % of the measured step time, and the reader measures the step the
// generator's ground-truth model produced.
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <random>
#include <set>
#include <tuple>

#include "../support/kineto_shapes.h"
#include "graph/graph_builder.h"
#include "sim/metrics.h"
#include "sim/simulator.h"
#include "trace/kineto_reader.h"
#include "whatif/whatif.h"

namespace powertrain::sim {
namespace {

using test_support::Shape;

class TraceShapes : public ::testing::TestWithParam<Shape> {};

std::string ShapeName(const ::testing::TestParamInfo<Shape>& info) {
  return test_support::shape_name(info.param);
}

TEST_P(TraceShapes, ReplaysWithoutLostTasksWithinOnePercent) {
  const test_support::GeneratedTraces generated = test_support::make_shape_traces(
      GetParam(), std::getenv("PT_STEPS") ? std::atoi(std::getenv("PT_STEPS")) : 3);
  std::vector<trace::RankTrace> traces;
  for (std::size_t f = 0; f < generated.files.size(); ++f) {
    auto t = trace::parse_kineto_bytes(generated.files[f], generated.names[f], static_cast<int>(f));
    ASSERT_TRUE(t.ok()) << t.error().message;
    traces.push_back(std::move(*t));
  }
  auto graph = graph::build_execution_graph(traces);
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  const ReplayResult r = replay(*graph);
  const StepMetrics in = metrics_of_input(*graph);
  const StepMetrics out = metrics_of_replay(*graph, r);
  const ReplayAccuracy a = compare_replay(*graph, r, in, out);
  const Verdict v = judge_replay(*graph, r, in, out, a);
  std::printf(
      "%s: %zu rank(s), %d tasks, step %.1f us measured, %.1f us replayed (%+.4f %%), "
      "breakdown %.3f pp, lost %lld, released %lld, %s\n",
      test_support::shape_name(GetParam()), graph->ranks.size(), graph->task_count(),
      in.job_step_time_ns / 1e3, out.job_step_time_ns / 1e3, a.job_step_time_error_pct,
      a.max_breakdown_error_pp, static_cast<long long>(r.stalled_tasks),
      static_cast<long long>(r.released_total()), v.faithful ? "faithful" : "NOT faithful");
  for (const auto& w : graph->warnings)
    std::printf("  graph (%lld): %s — %s\n", static_cast<long long>(w.count), w.kind.c_str(),
                w.example.c_str());
  for (const auto& w : r.warnings)
    std::printf("  replay (%lld): %s — %s\n", static_cast<long long>(w.count), w.kind.c_str(),
                w.example.c_str());
  EXPECT_EQ(r.stalled_tasks, 0);
  EXPECT_EQ(r.outcome, ReplayOutcome::kComplete);
  EXPECT_EQ(r.tasks_run, graph->task_count());
  for (std::size_t rank = 0; rank < in.ranks.size(); ++rank) {
    EXPECT_LE(std::abs(a.rank_step_time_error_pct[rank]), 1.0) << "rank " << rank;
  }
  EXPECT_LE(a.max_breakdown_error_pp, 2.0);
  EXPECT_TRUE(v.faithful) << (v.reasons.empty() ? "" : v.reasons[0].text);
  // The reader measures what the model ran (one file may hold several ranks: the slowest).
  std::int64_t truth = 0;
  for (std::int64_t t : generated.step_time_ns) truth = std::max(truth, t);
  EXPECT_NEAR(static_cast<double>(in.job_step_time_ns), static_cast<double>(truth), 1000.0);
}

// What a replay of generated traces predicts: the measured and replayed step, a what-if's step
// (GPU work × 0.7: it moves tasks only through the inferred dependencies) and the launch links.
struct Prediction {
  double step_ns = 0, replay_step_ns = 0, whatif_step_ns = 0;
  std::int64_t launch_links = 0, lost = 0, dropped = 0;
  bool faithful = false;
};

// The execution graph of generated traces (a read error is returned as the graph's error).
core::Result<graph::ExecutionGraph> graph_of(const test_support::GeneratedTraces& generated) {
  std::vector<trace::RankTrace> traces;
  for (std::size_t f = 0; f < generated.files.size(); ++f) {
    auto t = trace::parse_kineto_bytes(generated.files[f], generated.names[f], static_cast<int>(f));
    if (!t.ok()) return t.error();
    traces.push_back(std::move(*t));
  }
  return graph::build_execution_graph(traces);
}

Prediction predict(const test_support::GeneratedTraces& generated) {
  auto graph = graph_of(generated);
  EXPECT_TRUE(graph.ok()) << graph.error().message;
  if (!graph.ok()) return {};
  Prediction p;
  const ReplayResult r = replay(*graph);
  const StepMetrics in = metrics_of_input(*graph);
  const StepMetrics out = metrics_of_replay(*graph, r);
  p.step_ns = in.job_step_time_ns;
  p.replay_step_ns = out.job_step_time_ns;
  p.faithful = judge_replay(*graph, r, in, out, compare_replay(*graph, r, in, out)).faithful;
  p.launch_links = graph->stats.edges[static_cast<int>(graph::EdgeKind::kLaunch)];
  p.dropped = graph->stats.dropped_contradicted;
  graph::ExecutionGraph changed = *graph;
  whatif::scale_durations(changed, {whatif::TaskClass::kGpu, 0.7});
  const ReplayResult w = replay(changed);
  p.whatif_step_ns = metrics_of_replay(changed, w).job_step_time_ns;
  p.lost = r.stalled_tasks + w.stalled_tasks + (graph->task_count() - r.tasks_run) +
           (changed.task_count() - w.tasks_run);
  return p;
}

// Shapes that leave out part of the information (a sync's call, every launch correlation) must
// predict what the same model written with it predicts: the host waits and launches are found
// again from the cuda_sync records and from stream order and time (issue 13).
struct WithoutAndWith {
  Shape shape;
  test_support::Quirks reference;
};

class TraceShapeReferences : public ::testing::TestWithParam<WithoutAndWith> {};

TEST_P(TraceShapeReferences, WhatIfMatchesTheTraceWithTheInformation) {
  const Prediction without = predict(test_support::make_shape_traces(GetParam().shape));
  const Prediction with = predict(test_support::make_traces(GetParam().reference, "reference"));
  std::printf(
      "%s: what-if step %.1f us, with the information %.1f us (%+.4f %%); launch links "
      "%lld vs %lld; dependencies dropped %lld vs %lld\n",
      test_support::shape_name(GetParam().shape), without.whatif_step_ns / 1e3,
      with.whatif_step_ns / 1e3, 100.0 * (without.whatif_step_ns / with.whatif_step_ns - 1.0),
      static_cast<long long>(without.launch_links), static_cast<long long>(with.launch_links),
      static_cast<long long>(without.dropped), static_cast<long long>(with.dropped));
  EXPECT_EQ(without.lost, 0);
  EXPECT_TRUE(without.faithful);
  EXPECT_EQ(without.step_ns, with.step_ns);
  EXPECT_EQ(without.launch_links, with.launch_links);
  EXPECT_EQ(without.dropped, with.dropped);
  // The reference itself must be sensitive: the what-if moves its step.
  EXPECT_LT(with.whatif_step_ns, 0.95 * with.replay_step_ns);
  EXPECT_NEAR(without.whatif_step_ns, with.whatif_step_ns, 0.001 * with.whatif_step_ns);
}

std::vector<WithoutAndWith> references() {
  std::vector<WithoutAndWith> cases;
  for (Shape s : {Shape::kSyncRecordsWithoutCalls, Shape::kSyncCallsWithoutCorrelation,
                  Shape::kGpuCorrelationsRenumbered}) {
    test_support::Quirks q = test_support::quirks_of(s);
    q.sync_calls_written = true;
    q.sync_call_correlation = true;
    q.renumber_gpu_correlations = false;
    cases.push_back({s, q});
  }
  // A cudaEventSynchronize on an event recorded on the NCCL stream, with no cuda_sync record
  // naming the stream: the record's stream comes from the wait the sync call shows (issue 13).
  for (Shape s : {Shape::kSyncCallsWithoutRecords, Shape::kRocmModuleLaunches}) {
    test_support::Quirks q = test_support::quirks_of(s);
    q.sync_records = true;
    q.event_sync_names_stream = true;
    cases.push_back({s, q});
  }
  // CUDA graph kernels written with correlation 0 (two streams, two ranks): each graph's
  // kernels go back to their own cudaGraphLaunch, as with the correlations written.
  test_support::Quirks correlated = test_support::quirks_of(Shape::kGraphKernelsUncorrelated);
  correlated.graph_kernels_uncorrelated = false;
  cases.push_back({Shape::kGraphKernelsUncorrelated, correlated});
  // cudaMemcpy2DAsync blocking like cudaMemcpyAsync (pageable loss.item()), peer copies and a
  // cooperative launch: the same predictions as the model written with the plain calls.
  test_support::Quirks plain = test_support::quirks_of(Shape::kLaunchVariants);
  plain.launch_variants = false;
  cases.push_back({Shape::kLaunchVariants, plain});
  // TP × PP × DP without metadata: the what-if of the trace with metadata (before, 2026-11-27:
  // +48.6 % step, NOT faithful: the tensor- and data-parallel streams ranked differently on end
  // and middle stages, and their all-reduces were keyed together).
  test_support::Quirks three_d = test_support::quirks_of(Shape::kPipeline3dNoMetadata);
  three_d.nccl_metadata = true;
  cases.push_back({Shape::kPipeline3dNoMetadata, three_d});
  return cases;
}

// Pipeline stages with every GPU correlation lost (no flows): the NCCL launches sit inside their
// record_param_comms ops, the compute launches outside, so re-pairing by stream order gives each
// its own kind even where a compute kernel starts before the transfer it was launched after.
// Before (2026-11-26) the what-if was 2,072.6 µs against 1,640.3 µs with the correlations.
TEST(TraceShapePipeline, TransfersKeepTheirLaunchesWhenCorrelationsAreLost) {
  test_support::Quirks q = test_support::quirks_of(Shape::kPipelineFourStages);
  const Prediction with = predict(test_support::make_traces(q, "with", 2));
  q.renumber_gpu_correlations = true;
  q.flows = false;
  const Prediction without = predict(test_support::make_traces(q, "without", 2));
  std::printf(
      "pipeline: what-if %.1f us with the correlations, %.1f us without; links %lld, %lld\n",
      with.whatif_step_ns / 1e3, without.whatif_step_ns / 1e3,
      static_cast<long long>(with.launch_links), static_cast<long long>(without.launch_links));
  EXPECT_EQ(without.lost, 0);
  EXPECT_TRUE(without.faithful);
  EXPECT_EQ(without.launch_links, with.launch_links);
  EXPECT_LT(with.whatif_step_ns, 0.95 * with.replay_step_ns);
  EXPECT_NEAR(without.whatif_step_ns, with.whatif_step_ns, 0.001 * with.whatif_step_ns);
}

// Every send pairs with its receive across the four stages, with and without metadata (before,
// 2026-11-26: with metadata the per-rank sequence numbers keyed sends with unrelated receives,
// +8.9 % step and NOT faithful; without, 45 transfers were replayed measured). Skewed clocks are
// covered by the mutation corpus (clock_skew_between_ranks).
TEST(TraceShapePipeline, TransfersAreJoinedAcrossStages) {
  for (bool metadata : {true, false}) {
    test_support::Quirks q = test_support::quirks_of(
        metadata ? Shape::kPipelineFourStages : Shape::kPipelineFourStagesNoMetadata);
    test_support::GeneratedTraces generated = test_support::make_traces(q, "pipeline", 2);
    auto graph = graph_of(generated);
    ASSERT_TRUE(graph.ok()) << graph.error().message;
    // 2 steps × 2 microbatches × 3 links × 2 directions transfers, each a joined pair.
    EXPECT_EQ(graph->stats.collective_groups_joined, 24) << (metadata ? "metadata" : "none");
    EXPECT_EQ(graph->stats.collectives_measured, 0) << (metadata ? "metadata" : "none");
  }
}

// Two pipelines side by side (PP 2 × DP 2): pipelines {0,1} and {2,3}, gradient all-reduces in
// {0,2} and {1,3}, which end a steady 0.2 ms apart. Without metadata, before (2026-11-26): the
// SendRecv kernels (as many on every rank) were taken for all-to-alls, then, once they were
// transfers, the two all-reduce groups were joined as one and moved rank 1's clock by 0.202 ms,
// leaving 36 transfers unmatched; and 6 waits of the all-reduce were dropped (their event,
// recorded on the compute stream right after a send was launched, was put on the P2P stream by
// rule). Now every transfer pairs, the all-reduces split by the clocks the transfers give, no clock
// moves, the records move to the stream whose end released the all-reduce, and the what-if equals
// the one with metadata.
TEST(TraceShapePipeline, TwoPipelinesSideBySideSplitTheirDataParallelGroups) {
  // GPipe PP 2 × DP 2, and Megatron 1F1B PP 4 × DP 2 (8 ranks; before, 2026-11-27: +0.77 %, rank 1
  // moved by a wrong 0.199 ms, 96 transfers unmatched, the replicas' transfers having been taken
  // for one pipeline's by the schedule's repetition) and PP 4 × DP 6 (24 ranks; before: +1.14 %,
  // NOT faithful, 106 transfers unmatched: the data-parallel groups' ends varied by 10–20 µs from
  // step to step, too little for the drift rule, too much for the steady one).
  // And PP 4 × DP 12 (48 ranks; before: +3.5 %, two stages' groups joined by the drift rule).
  const std::pair<Shape, int> cases[] = {{Shape::kPipelineDataParallelNoMetadata, 2},
                                         {Shape::kPipeline1f1bDataParallel, 2},
                                         {Shape::kPipeline1f1bDataParallel, 6},
                                         {Shape::kPipeline1f1bDataParallel, 12}};
  for (const auto& [shape, pipelines] : cases) {
    SCOPED_TRACE(fmt::format("{} × {} pipelines", test_support::shape_name(shape), pipelines));
    Prediction predictions[2];
    for (bool metadata : {true, false}) {
      test_support::Quirks q = test_support::quirks_of(shape);
      q.nccl_metadata = metadata;
      q.ranks = q.world_size = q.ranks / q.pipelines * pipelines;
      q.pipelines = pipelines;
      test_support::GeneratedTraces generated = test_support::make_traces(q, "pp_dp", 2);
      auto graph = graph_of(generated);
      ASSERT_TRUE(graph.ok()) << graph.error().message;
      const char* label = metadata ? "metadata" : "none";
      if (shape == Shape::kPipelineDataParallelNoMetadata) {  // 2 pipelines
        // 2 steps × (2 pipelines × 2 microbatches × 2 directions transfers + 2 all-reduces).
        EXPECT_EQ(graph->stats.collective_groups_joined, 20) << label;
      }
      EXPECT_EQ(graph->stats.collectives_measured, 0) << label;
      EXPECT_EQ(graph->stats.dropped_contradicted, 0) << label;
      for (const auto& w : graph->warnings) {
        EXPECT_EQ(w.kind.find("rank clock aligned"), std::string::npos)
            << label << ": " << w.example;
        EXPECT_EQ(w.kind.find("unmatched"), std::string::npos) << label << ": " << w.example;
      }
      predictions[metadata ? 1 : 0] = predict(generated);
    }
    const Prediction& without = predictions[0];
    const Prediction& with = predictions[1];
    std::printf("%s × %d pipelines: what-if %.1f us without metadata, %.1f us with\n",
                test_support::shape_name(shape), pipelines, without.whatif_step_ns / 1e3,
                with.whatif_step_ns / 1e3);
    EXPECT_TRUE(without.faithful);
    EXPECT_EQ(without.lost, 0);
    EXPECT_LT(with.whatif_step_ns, 0.95 * with.replay_step_ns);
    EXPECT_NEAR(without.whatif_step_ns, with.whatif_step_ns, 0.001 * with.whatif_step_ns);
  }
}

// Hosts of 8 GPUs, each host's clock `max_skew_us` apart from the first's at most (seeded).
void skew_host_clocks(test_support::GeneratedTraces& generated, double max_skew_us) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> skew(-max_skew_us, max_skew_us);
  double host_skew_us = 0;
  for (std::size_t f = 0; f < generated.files.size(); ++f) {
    if (f % 8 == 0) host_skew_us = f == 0 ? 0.0 : skew(rng);
    nlohmann::json trace = nlohmann::json::parse(generated.files[f]);
    for (auto& e : trace["traceEvents"]) {
      if (e.contains("ts") && e["ts"].is_number()) e["ts"] = e["ts"].get<double>() + host_skew_us;
    }
    generated.files[f] = trace.dump();
  }
}

// Many 1F1B pipelines side by side (PP 4 × DP 16 and × DP 32), no metadata, 3 steps, on one clock
// and with hosts' clocks up to 2 ms apart. Replicas of one schedule agree on an offset by
// repetition: before (2026-11-27) a last stage's transfers, all paired with its own stage 2, also
// agreed by 53 % with another pipeline's stage 1, which joined two pipelines' clocks 211 µs apart;
// the data-parallel groups were then not split, 48 of 64 ranks were moved and 120–190 collectives
// replayed measured: +0.96 % (one clock) and +1.19 % (skewed) for DP 16, +8.35 % for DP 32 over 2
// steps. A transfer has one partner now: links whose transfers stronger links took are refused.
TEST(TraceShapePipeline, ManyPipelinesSideBySideAreNotJoinedByTheirSchedulesRepetition) {
  for (bool skewed : {false, true}) {
    for (int pipelines : {16, 32}) {
      SCOPED_TRACE(
          fmt::format("{} pipelines, {}", pipelines, skewed ? "skewed hosts" : "one clock"));
      test_support::Quirks q = test_support::quirks_of(Shape::kPipeline1f1bDataParallel);
      q.nccl_metadata = false;
      q.ranks = q.world_size = q.ranks / q.pipelines * pipelines;
      q.pipelines = pipelines;
      test_support::GeneratedTraces generated = test_support::make_traces(q, "pp_dp", 3);
      if (skewed) skew_host_clocks(generated, 2000.0);
      auto graph = graph_of(generated);
      ASSERT_TRUE(graph.ok()) << graph.error().message;
      EXPECT_EQ(graph->stats.collectives_measured, 0);
      EXPECT_EQ(graph->stats.dropped_contradicted, 0);
      for (const auto& w : graph->warnings)
        EXPECT_EQ(w.kind.find("unmatched"), std::string::npos) << w.example;
      const Prediction p = predict(generated);
      std::printf("%d pipelines, %s: step %.1f us measured, %.1f us replayed\n", pipelines,
                  skewed ? "skewed hosts" : "one clock", p.step_ns / 1e3, p.replay_step_ns / 1e3);
      EXPECT_TRUE(p.faithful);
      EXPECT_EQ(p.lost, 0);
      EXPECT_NEAR(p.replay_step_ns, p.step_ns, 0.0001 * p.step_ns);
    }
  }
}

// A pipeline layout of the generator: TP × PP 4 × DP, with model chunks per stage, noise and
// hosts' clocks up to 2 ms apart.
struct PipelineLayout {
  Shape shape = Shape::kPipeline3dNoMetadata;
  int virtual_stages = 1, tp = 1, dp = 2;
  std::int64_t jitter_ns = 0;
  bool skewed = false;
  // Megatron's embedding all-reduce between each pipeline's end stages, before or after the
  // data-parallel one.
  bool tied_embeddings = false, embeddings_after_gradients = false;
  // Megatron's gradient-norm all-reduce over each replica's model-parallel group.
  bool model_parallel_norm = false;
  // Members of one collective end up to this many ns apart (Quirks::member_end_spread_ns).
  std::int64_t member_end_spread_ns = 0;
  // Collectives joined without metadata that are known to hold part of a metadata collective.
  std::size_t known_wrong = 0;
};

std::string layout_name(const PipelineLayout& l) {
  return fmt::format("{} chunk(s), TP {} × PP 4 × DP {}, ±{} ns{}{}{}", l.virtual_stages, l.tp,
                     l.dp, l.jitter_ns, l.skewed ? ", skewed hosts" : "",
                     l.member_end_spread_ns > 0
                         ? fmt::format(", members end {} ns apart", l.member_end_spread_ns)
                         : std::string(),
                     !l.tied_embeddings             ? ""
                     : l.embeddings_after_gradients ? ", tied embeddings after the gradients"
                                                    : ", tied embeddings before the gradients") +
         (l.model_parallel_norm ? ", model-parallel gradient norm" : "");
}

// The collectives a graph joins, each as its members' (rank index, task), sorted.
using Members = std::vector<std::pair<std::int32_t, std::int32_t>>;
std::set<Members> joined_collectives(const graph::ExecutionGraph& graph) {
  std::set<Members> out;
  for (const graph::CollectiveGroup& group : graph.collectives) {
    if (!group.joined) continue;
    Members members;
    for (std::int32_t i = 0; i < group.member_count; ++i) {
      const std::int32_t task =
          graph.collective_members[static_cast<std::size_t>(group.first_member + i)];
      members.emplace_back(graph.rank_index_of(task), task);
    }
    std::sort(members.begin(), members.end());
    out.insert(std::move(members));
  }
  return out;
}

std::string members_text(const Members& members) {
  std::string out;
  for (const auto& [rank, task] : members)
    out += fmt::format("{}r{}:t{}", out.empty() ? "" : " ", rank, task);
  return out;
}

// Collectives joined without metadata are the metadata's, or unions of whole ones: groups that
// end together in every step (tensor-parallel neighbours' data-parallel groups in a noiseless
// trace) carry no timing that tells them apart, and joining them changes no replayed time. A
// collective that holds part of a metadata collective, or leaves one's member out, is wrong.
void expect_same_or_merged_communicators(const std::set<Members>& without,
                                         const std::set<Members>& with, std::size_t known_wrong) {
  std::map<std::int32_t, std::size_t> with_of_task;
  std::vector<std::size_t> with_size;
  for (const Members& members : with) {
    for (const auto& [rank, task] : members) with_of_task[task] = with_size.size();
    with_size.push_back(members.size());
  }
  std::size_t wrong = 0, merged = 0;
  std::string example;
  for (const Members& members : without) {
    std::map<std::size_t, std::size_t> covered;  // metadata collective → its members here
    bool known = true;
    for (const auto& [rank, task] : members) {
      const auto it = with_of_task.find(task);
      if (it == with_of_task.end()) {
        known = false;
        break;
      }
      ++covered[it->second];
    }
    bool whole = known;
    for (const auto& [c, n] : covered) whole = whole && n == with_size[c];
    if (!whole) {
      if (wrong++ == 0) {
        example = members_text(members);
        const auto it = with_of_task.find(members.front().second);
        if (it != with_of_task.end())
          example +=
              " against the metadata's " +
              members_text(*std::next(with.begin(), static_cast<std::ptrdiff_t>(it->second)));
      }
    } else if (covered.size() > 1) {
      ++merged;
    }
  }
  EXPECT_LE(wrong, known_wrong) << "of " << without.size()
                                << " collectives joined without metadata, e.g. " << example;
  if (wrong > 0)
    std::printf("  %zu collective(s) joined without metadata hold part of the metadata's: %s\n",
                wrong, example.c_str());
  if (merged > 0)
    std::printf("  %zu collective(s) joined without metadata merge groups that end together\n",
                merged);
}

struct LayoutResult {
  Prediction prediction;
  std::set<Members> joined;
};

// The layout over 3 steps with or without metadata: expected to replay within `tolerance` with
// every collective joined, none unmatched, nothing lost. Returns its prediction and collectives.
LayoutResult expect_layout_exact(const PipelineLayout& l, bool metadata, double tolerance) {
  test_support::Quirks q = test_support::quirks_of(l.shape);
  q.virtual_stages = l.virtual_stages;
  q.tensor_parallel = l.tp;
  q.pipelines = l.dp;
  q.ranks = q.world_size = 4 * l.tp * l.dp;
  q.nccl_metadata = metadata;
  q.jitter_ns = l.jitter_ns;
  q.tied_embeddings = l.tied_embeddings;
  q.embeddings_after_gradients = l.embeddings_after_gradients;
  q.model_parallel_norm = l.model_parallel_norm;
  q.member_end_spread_ns = l.member_end_spread_ns;
  test_support::GeneratedTraces generated = test_support::make_traces(q, "layout", 3);
  if (l.skewed) skew_host_clocks(generated, 2000.0);
  auto graph = graph_of(generated);
  EXPECT_TRUE(graph.ok()) << graph.error().message;
  if (!graph.ok()) return {};
  EXPECT_EQ(graph->stats.collectives_measured, 0) << metadata;
  for (const auto& w : graph->warnings)
    EXPECT_EQ(w.kind.find("unmatched"), std::string::npos) << metadata << ": " << w.example;
  const Prediction p = predict(generated);
  EXPECT_TRUE(p.faithful) << metadata;
  EXPECT_EQ(p.lost, 0) << metadata;
  EXPECT_NEAR(p.replay_step_ns, p.step_ns, tolerance * p.step_ns) << metadata;
  return {p, joined_collectives(*graph)};
}

// Each layout exact with and without metadata, with what-ifs within 0.1 % of each other.
void expect_layouts_match_with_and_without_metadata(const std::vector<PipelineLayout>& layouts,
                                                    double tolerance) {
  for (const PipelineLayout& l : layouts) {
    SCOPED_TRACE(layout_name(l));
    const LayoutResult without_result = expect_layout_exact(l, false, tolerance);
    const LayoutResult with_result = expect_layout_exact(l, true, tolerance);
    const Prediction& without = without_result.prediction;
    const Prediction& with = with_result.prediction;
    // The communicators found by timing are the metadata's, collective by collective.
    expect_same_or_merged_communicators(without_result.joined, with_result.joined, l.known_wrong);
    std::printf(
        "%s: step %.1f us measured, %.1f us replayed; what-if %.1f us without metadata, "
        "%.1f us with\n",
        layout_name(l).c_str(), without.step_ns / 1e3, without.replay_step_ns / 1e3,
        without.whatif_step_ns / 1e3, with.whatif_step_ns / 1e3);
    EXPECT_NEAR(without.whatif_step_ns, with.whatif_step_ns, 0.001 * with.whatif_step_ns);
  }
}

// Megatron's 3-D layout (TP × PP × DP, tensor-parallel ranks adjacent), with and without
// metadata, on one clock and with hosts of 8 GPUs up to 2 ms apart. Before (2026-11-27), with
// metadata: TP 4 × PP 4 × DP 2 +0.38 %, TP 2 × DP 8 +0.26 %, TP 4 × DP 4 +0.92 % (NOT faithful):
// the transfers of four pairs ending within 4–12 µs of each other on all 32 ranks were taken for
// one all-to-all (now: transfers an op names are never an exchange, and ends in tight clusters far
// apart are pairs), and ties went to tensor-parallel neighbours. Without metadata TP 4 × DP 8
// (128 ranks) was +21.6 %, 226 transfers unmatched: pipelines linked by their schedule's
// repetition through transfers that a link within one clock had not taken. TP 4 × DP 2 on skewed
// hosts with metadata: the what-if moved by 0.28 % (2,838.4 against 2,830.6 µs) as ends tied to
// within the 0.3 µs of clock alignment went to tensor-parallel neighbours.
TEST(TraceShapePipeline, ThreeDimensionalLayoutsMatchWithAndWithoutMetadata) {
  std::vector<PipelineLayout> layouts;
  for (const auto& [tp, dp, skewed] :
       {std::tuple{4, 2, false}, std::tuple{4, 2, true}, std::tuple{2, 8, true},
        std::tuple{4, 4, false}, std::tuple{4, 8, true}}) {
    layouts.push_back({.tp = tp, .dp = dp, .skewed = skewed});
  }
  expect_layouts_match_with_and_without_metadata(layouts, 0.0001);
}

// Run-to-run noise, as real kernels have: every compute kernel and every collective's wire time
// off by up to 0.5 or 5 µs, hosts' clocks up to 2 ms apart. Before (2026-11-27), without metadata:
// TP 2 × PP 4 × DP 8 was +0.45 % at 0.5 µs (each rank's one transfer of a moment, chained within
// 20 µs over 92 µs, was taken for one all-to-all of 64) and, at 5 µs, the data-parallel groups were
// not split (tensor-parallel neighbours' groups end within the noise of each other), every rank
// moved by its stage's 0.2–0.7 ms and 46 transfers were unmatched (what-if +2.9 %).
TEST(TraceShapePipeline, NoisyKernelsKeepEveryLayoutExact) {
  std::vector<PipelineLayout> layouts;
  for (std::int64_t jitter_ns : {500, 5000}) {
    layouts.push_back({.shape = Shape::kPipeline1f1bDataParallel,
                       .tp = 1,
                       .dp = 8,
                       .jitter_ns = jitter_ns,
                       .skewed = true});
    layouts.push_back({.tp = 2, .dp = 2, .jitter_ns = jitter_ns, .skewed = true});
    layouts.push_back({.tp = 2, .dp = 8, .jitter_ns = jitter_ns, .skewed = true});
  }
  expect_layouts_match_with_and_without_metadata(layouts, 0.001);
}

// Every shape of the corpus with ±5 µs of noise on its kernels and collectives: no lost task,
// faithful, within 0.1 % of the measured step.
TEST(TraceShapeNoise, EveryShapeHoldsUnderKernelNoise) {
  for (Shape shape : test_support::all_shapes()) {
    SCOPED_TRACE(test_support::shape_name(shape));
    test_support::Quirks q = test_support::quirks_of(shape);
    q.jitter_ns = 5000;
    const Prediction p = predict(test_support::make_traces(q, "noisy", 3));
    EXPECT_TRUE(p.faithful);
    EXPECT_EQ(p.lost, 0);
    EXPECT_NEAR(p.replay_step_ns, p.step_ns, 0.001 * p.step_ns);
  }
}

// Megatron's interleaved schedule (virtual pipeline stages: virtual stage k on stage k mod PP, so
// the last stage sends on to the first, a ring), with tensor and data parallelism, noise and
// skewed hosts: exact with and without metadata, the same what-if (2026-11-27: held as first
// generated, no rule changed for it).
TEST(TraceShapePipeline, InterleavedPipelinesMatchWithAndWithoutMetadata) {
  expect_layouts_match_with_and_without_metadata(
      {{.virtual_stages = 2, .tp = 2, .dp = 2, .jitter_ns = 2000, .skewed = true},
       {.virtual_stages = 3, .tp = 1, .dp = 4, .skewed = true}},
      0.001);
}

// MoE token dispatch without metadata: an all-to-all in groups of 4 of 16 ranks runs as SendRecv
// kernels, as transfers do. Where its four members end together they are paired two by two rather
// than joined as one exchange of four (an exchange is recognised by name, or when one transfer of
// every loaded rank ends together), so the what-if is a little off; pinned here as the known limit
// (2026-11-27: replay +0.12 % on one clock, what-if −0.07 to −0.17 % from the trace with metadata).
TEST(TraceShapeNoise, ExpertAllToAllWithoutMetadataStaysClose) {
  for (std::int64_t jitter_ns : {0, 2000}) {
    SCOPED_TRACE(fmt::format("±{} ns", jitter_ns));
    Prediction predictions[2];
    for (bool metadata : {false, true}) {
      test_support::Quirks q = test_support::quirks_of(Shape::kTensorAndDataParallelNoMetadata);
      q.expert_all_to_all = true;
      q.tensor_parallel = 4;
      q.ranks = q.world_size = 16;
      q.nccl_metadata = metadata;
      q.jitter_ns = jitter_ns;
      test_support::GeneratedTraces generated = test_support::make_traces(q, "moe", 3);
      skew_host_clocks(generated, 2000.0);
      const Prediction p = predict(generated);
      EXPECT_TRUE(p.faithful) << metadata;
      EXPECT_EQ(p.lost, 0) << metadata;
      EXPECT_NEAR(p.replay_step_ns, p.step_ns, (metadata ? 0.0001 : 0.005) * p.step_ns) << metadata;
      predictions[metadata ? 1 : 0] = p;
    }
    std::printf(
        "expert all-to-all, EP 4 × 4, ±%lld ns: what-if %.1f us without metadata, %.1f us "
        "with\n",
        static_cast<long long>(jitter_ns), predictions[0].whatif_step_ns / 1e3,
        predictions[1].whatif_step_ns / 1e3);
    EXPECT_NEAR(predictions[0].whatif_step_ns, predictions[1].whatif_step_ns,
                0.005 * predictions[1].whatif_step_ns);
  }
}

// 128 and 256 ranks (TP 4 × PP 4 × DP 8 and 16, no metadata, ±2 µs of noise) over 2 steps: every
// rank has as many collectives as the others, and each keeps its plain order. Before (2026-11-27)
// 24 of 128 complete ranks were realigned by one step (their hosts run up to 9× slower than rank
// 0's in this model, and a one-step shift paired their ends better): −4.6 %, NOT faithful.
TEST(TraceShapePipeline, HundredsOfRanksKeepTheirCollectiveOrder) {
  for (int dp : {8, 16}) {
    SCOPED_TRACE(fmt::format("TP 4 × PP 4 × DP {}", dp));
    test_support::Quirks q = test_support::quirks_of(Shape::kPipeline3dNoMetadata);
    q.tensor_parallel = 4;
    q.pipelines = dp;
    q.ranks = q.world_size = 16 * dp;
    q.jitter_ns = 2000;
    test_support::GeneratedTraces generated = test_support::make_traces(q, "scale", 2);
    auto graph = graph_of(generated);
    ASSERT_TRUE(graph.ok()) << graph.error().message;
    EXPECT_EQ(graph->stats.collectives_measured, 0);
    const Prediction p = predict(generated);
    std::printf("TP 4 × PP 4 × DP %d (%d ranks): step %.1f us measured, %.1f us replayed\n", dp,
                q.ranks, p.step_ns / 1e3, p.replay_step_ns / 1e3);
    EXPECT_TRUE(p.faithful);
    EXPECT_EQ(p.lost, 0);
    EXPECT_NEAR(p.replay_step_ns, p.step_ns, 0.001 * p.step_ns);
  }
}

// Known failure, kept as the target (2026-11-27): Megatron's tied embeddings without metadata.
// Each pipeline's first and last stage all-reduce the embedding gradients on a stream of their
// own; middle stages do not. Keyed by their order on each rank among all its collectives, the end
// stages' extra all-reduce misaligns them against the middle stages': PP 4 × DP 2 with ±2 µs of
// noise replays +0.39 % with 91 all-reduces measured, what-if +1.3 % from the trace with metadata;
// TP 2 × PP 4 × DP 2 +0.24 %, 135 measured. Stream classes ranked by count do not name the
// communicator here (the embedding and data-parallel streams run as many all-reduces on an end
// stage). With metadata it is exact.
// Megatron's tied embeddings: a pipeline's end stages run one more communicator than its middle
// ones, in either order against the data-parallel all-reduce. Without metadata each collective
// must join what the metadata joins (or whole groups that end together). Before (2026-11-27):
// PP 4 × DP 2 at ±2 µs +0.39 % (91 collectives replayed measured, what-if +1.3 %), TP 2 × PP 4 ×
// DP 2 +0.24 % (135 measured); by the metadata's groups 36–168 collectives per layout were wrong:
// every collective of a rank took its ordinal in one list, so the middle stages' data-parallel
// all-reduces were keyed with the end stages' embedding ones, and keys over a subset of the ranks
// were never split into communicators. Later the same day, with TP 2 at ±2 µs and the embeddings
// first, tensor-parallel neighbours' data-parallel groups (ending within 0.6 µs of each other over
// three steps) were joined as one, the clocks read from that join were up to 1.6 µs off and 8 (DP
// 2) and 90 (DP 4) transfers paired with the neighbour's peer, until ranks at other places in
// their groups were kept apart. Replay and what-if stay within 0.1 %.
TEST(TraceShapePipeline, TiedEmbeddingsWithoutMetadataMatchTheTraceWithIt) {
  std::vector<PipelineLayout> layouts;
  for (const auto& [shape, tp] : {std::pair{Shape::kPipeline1f1bDataParallel, 1},
                                  std::pair{Shape::kPipeline3dNoMetadata, 2}}) {
    for (int dp : {2, 4}) {
      for (bool after : {false, true}) {
        for (std::int64_t jitter_ns : {0, 2000, 5000}) {
          layouts.push_back({.shape = shape,
                             .tp = tp,
                             .dp = dp,
                             .jitter_ns = jitter_ns,
                             .skewed = jitter_ns > 0,
                             .tied_embeddings = true,
                             .embeddings_after_gradients = after});
        }
      }
    }
  }
  expect_layouts_match_with_and_without_metadata(layouts, 0.001);
}

// Members of one collective end apart (a ring's ranks finish its last step one after another),
// up to 1 or 3 µs, on top of 2 µs of noise per kernel. The replay joins each collective's members
// at one instant, so it is held to 0.2 %. Pipelines with data parallelism (with and without tied
// embeddings) keep every communicator and transfer the metadata has (before the places rule, at
// 3 µs with the embeddings after the gradients, DP 4's embedding groups {0, 3} and {8, 11} were
// joined crosswise in 6 collectives).
TEST(TraceShapePipeline, MembersEndingApartKeepTheirCommunicators) {
  std::vector<PipelineLayout> layouts;
  for (std::int64_t spread_ns : {1000, 3000}) {
    layouts.push_back({.shape = Shape::kPipeline1f1bDataParallel,
                       .tp = 1,
                       .dp = 8,
                       .jitter_ns = 2000,
                       .skewed = true,
                       .member_end_spread_ns = spread_ns});
    for (bool after : {false, true}) {
      layouts.push_back({.shape = Shape::kPipeline1f1bDataParallel,
                         .tp = 1,
                         .dp = 4,
                         .jitter_ns = 2000,
                         .skewed = true,
                         .tied_embeddings = true,
                         .embeddings_after_gradients = after,
                         .member_end_spread_ns = spread_ns});
    }
  }
  expect_layouts_match_with_and_without_metadata(layouts, 0.002);
}

// With tensor parallelism the neighbours run in lockstep, so their transfers and groups end within
// the members' own spread of each other. Before (2026-11-27), at 1 µs 14–97 transfers per layout
// paired with a tensor-parallel neighbour's peer (TP 2 × PP 4 × DP 2: 14; TP 2 × DP 8: 30; TP 4 ×
// DP 4: 97), and at 3 µs the data-parallel groups were split crosswise (TP 2 × DP 8: 40
// collectives; TP 4 × DP 4: 187), what-if up to 0.22 % from the trace with metadata. Now a
// transfer or group keeps to its rank's place in its tensor-parallel group. Known weak: TP 2 × DP 4
// with the embeddings first at 1 µs, where neither split keeps the end stages' data-parallel
// groups of tensor-parallel neighbours apart: they are joined as one, the clocks read from them
// are up to 0.6 µs off within a host, and 234 transfers pair crosswise (replay and what-if within
// 0.1 %).
TEST(TraceShapePipeline, MembersEndingApartWithTensorParallelism) {
  std::vector<PipelineLayout> layouts;
  for (std::int64_t spread_ns : {1000, 3000}) {
    for (const auto& [tp, dp] : {std::pair{2, 2}, std::pair{2, 8}, std::pair{4, 4}}) {
      layouts.push_back({.tp = tp,
                         .dp = dp,
                         .jitter_ns = 2000,
                         .skewed = true,
                         .member_end_spread_ns = spread_ns});
    }
    for (bool after : {false, true}) {
      layouts.push_back({.tp = 2,
                         .dp = 4,
                         .jitter_ns = 2000,
                         .skewed = true,
                         .tied_embeddings = true,
                         .embeddings_after_gradients = after,
                         .member_end_spread_ns = spread_ns,
                         .known_wrong = !after && spread_ns == 1000 ? 234u : 0u});
    }
  }
  expect_layouts_match_with_and_without_metadata(layouts, 0.002);
}

// Megatron's gradient clipping all-reduces the norm over each pipeline replica's model-parallel
// group (every stage and tensor-parallel rank of it) on a communicator of its own. Timing is exact
// and the what-if equals the one with metadata in every layout. Without tensor parallelism the
// communicators are the metadata's. With it, the group holds ranks at every tensor-parallel
// place, and the rules that keep data-parallel groups of tensor-parallel neighbours apart (ranks
// sharing an earlier communicator, or at other places of its groups, share no later one) split it
// by place: {r0, r2, r4, r6} and {r1, r3, r5, r7} for TP 2 × PP 4, in every step, also with 2 µs
// of noise, where the ends say one collective. Measured as known weak (2026-11-27): 12 of 432
// collectives wrong for TP 2 × DP 2, 24 for TP 2 × DP 4 and TP 4 × DP 2.
TEST(TraceShapePipeline, ModelParallelNormAllReduceKeepsItsCommunicator) {
  std::vector<PipelineLayout> layouts;
  for (const auto& [shape, tp, dp, known_wrong] :
       {std::tuple{Shape::kPipeline1f1bDataParallel, 1, 2, 0u},
        std::tuple{Shape::kPipeline1f1bDataParallel, 1, 4, 0u},
        std::tuple{Shape::kPipeline3dNoMetadata, 2, 2, 12u},
        std::tuple{Shape::kPipeline3dNoMetadata, 2, 4, 24u},
        std::tuple{Shape::kPipeline3dNoMetadata, 4, 2, 24u}}) {
    for (std::int64_t jitter_ns : {0, 2000}) {
      layouts.push_back({.shape = shape,
                         .tp = tp,
                         .dp = dp,
                         .jitter_ns = jitter_ns,
                         .skewed = jitter_ns > 0,
                         .model_parallel_norm = true,
                         .known_wrong = known_wrong});
    }
  }
  expect_layouts_match_with_and_without_metadata(layouts, 0.001);
}

INSTANTIATE_TEST_SUITE_P(Corpus, TraceShapeReferences, ::testing::ValuesIn(references()),
                         [](const ::testing::TestParamInfo<WithoutAndWith>& info) {
                           return std::string(test_support::shape_name(info.param.shape));
                         });

INSTANTIATE_TEST_SUITE_P(Corpus, TraceShapes, ::testing::ValuesIn(test_support::all_shapes()),
                         ShapeName);

}  // namespace
}  // namespace powertrain::sim
