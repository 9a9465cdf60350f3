// Deduplication: identical ranks form one class, refinement keeps apart ranks that issue the same
// calls but sit at different places of a pipeline, and simulating one representative per class
// gives exactly the result of simulating every rank.
#include "emulate/dedup.h"

#include <gtest/gtest.h>

#include "emulate/collation.h"
#include "emulate/emulate.h"
#include "emulate/synthetic_programs.h"
#include "emulate/trace_writer.h"
#include "emulate_test_util.h"

namespace powertrain::emulate {
namespace {

using testing::parse_all;
using testing::TempDir;

void expect_same_prediction(const EmulationResult& dedup, const EmulationResult& full) {
  ASSERT_EQ(dedup.ranks.size(), full.ranks.size());
  for (std::size_t r = 0; r < full.ranks.size(); ++r) {
    EXPECT_EQ(dedup.ranks[r].step_s, full.ranks[r].step_s) << "rank " << r;
    EXPECT_EQ(dedup.ranks[r].steps, full.ranks[r].steps);
    EXPECT_NEAR(dedup.ranks[r].breakdown.exposed_compute, full.ranks[r].breakdown.exposed_compute,
                1e-12);
    EXPECT_NEAR(dedup.ranks[r].breakdown.exposed_communication,
                full.ranks[r].breakdown.exposed_communication, 1e-12);
    EXPECT_NEAR(dedup.ranks[r].energy_j_per_step, full.ranks[r].energy_j_per_step,
                1e-9 * full.ranks[r].energy_j_per_step);
  }
  EXPECT_EQ(dedup.job_step_s, full.job_step_s);
  EXPECT_NEAR(dedup.energy_j_per_step, full.energy_j_per_step, 1e-9 * full.energy_j_per_step);
}

EmulationResult emulate_or_fail(const std::vector<ProcessTrace>& traces, EmulateOptions options) {
  auto result = emulate_traces(traces, options);
  EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().message);
  return result.ok() ? std::move(*result) : EmulationResult{};
}

TEST(Dedup, EightIdenticalDataParallelRanksAreOneClassWithTheFullResult) {
  std::vector<std::string> texts;
  for (int r = 0; r < 8; ++r) texts.push_back(data_parallel_program(r, 8));
  const auto traces = parse_all(texts);
  const auto collation = collate(traces);
  ASSERT_TRUE(collation.ok());
  const RankClasses classes = find_rank_classes(traces, *collation);
  ASSERT_EQ(classes.representative.size(), 1u);
  EXPECT_EQ(classes.size[0], 8);
  EXPECT_EQ(classes.representative[0], 0);

  EmulateOptions options;
  const EmulationResult dedup = emulate_or_fail(traces, options);
  options.dedup = false;
  const EmulationResult full = emulate_or_fail(traces, options);
  EXPECT_EQ(dedup.graph.ranks.size(), 1u);
  EXPECT_EQ(full.graph.ranks.size(), 8u);
  EXPECT_GT(full.replay.collectives_joined, 0);  // the full run really joins the all-reduces
  expect_same_prediction(dedup, full);
}

TEST(Dedup, RanksWithDifferentWorkAreDifferentClasses) {
  DataParallelSpec big;
  DataParallelSpec small;
  small.m = 1024;
  const auto traces =
      parse_all({data_parallel_program(0, 2, big), data_parallel_program(1, 2, small)});
  const auto collation = collate(traces);
  ASSERT_TRUE(collation.ok());
  EXPECT_EQ(find_rank_classes(traces, *collation).representative.size(), 2u);
  // Disabled: every rank is its own class.
  const RankClasses off = find_rank_classes(traces, *collation, false);
  EXPECT_EQ(off.representative.size(), 2u);
  EXPECT_FALSE(off.enabled);
}

// Pointers, times and comm ranks do not matter; kernel names and shapes do.
TEST(Dedup, OperationHashIgnoresRankSpecificValues) {
  TraceWriter a(0, 2), b(1, 2);
  a.malloc(1000);
  b.host_work(12'345).malloc(1000);
  a.nccl("allreduce", "x", 0, 2, 10, "float32");
  b.nccl("allreduce", "x", 1, 2, 10, "float32");
  const auto traces = parse_all({a.finish(), b.finish()});
  const auto ha = operation_hashes(traces[0]);
  const auto hb = operation_hashes(traces[1]);
  EXPECT_EQ(ha, hb);
  TraceWriter c(0, 1);
  c.malloc(1001);
  c.nccl("allreduce", "x", 0, 2, 10, "float32");
  EXPECT_NE(operation_hashes(parse_all({c.finish()})[0])[0], ha[0]);
}

// GPipe: the middle stages issue identical calls (recv, forward, send ... recv, backward, send)
// but at different places of the pipeline; refinement must keep them apart.
TEST(Dedup, RefinementSeparatesIdenticalLookingPipelineStages) {
  constexpr int kStages = 4, kMicro = 3;
  std::vector<std::string> texts;
  for (int s = 0; s < kStages; ++s) {
    TraceWriter w(s, kStages);
    w.comm_init("pp", s, kStages);
    const auto p2p = [&](const char* kind, int peer) {
      if (peer >= 0 && peer < kStages) w.nccl(kind, "pp", s, kStages, 1 << 20, "bfloat16", 0, peer);
    };
    for (int i = 0; i < kMicro; ++i) {
      p2p("recv", s - 1);
      w.kernel("forward", 1 << 16, 256);
      p2p("send", s + 1);
    }
    for (int i = 0; i < kMicro; ++i) {
      p2p("recv", s + 1);
      w.kernel("backward", 1 << 17, 256);
      p2p("send", s - 1);
    }
    w.device_sync();
    texts.push_back(w.finish());
  }
  const auto traces = parse_all(texts);
  const auto collation = collate(traces);
  ASSERT_TRUE(collation.ok());
  EXPECT_EQ(operation_hashes(traces[1]), operation_hashes(traces[2]));  // identical calls
  const RankClasses classes = find_rank_classes(traces, *collation);
  EXPECT_EQ(classes.representative.size(), 4u);
  EXPECT_GE(classes.refinement_rounds, 2);
  EmulateOptions options;
  const EmulationResult dedup = emulate_or_fail(traces, options);
  options.dedup = false;
  expect_same_prediction(dedup, emulate_or_fail(traces, options));
}

// 2 data-parallel replicas of a 4-stage 1F1B pipeline: 4 classes of 2; the P2P transfers are
// joined among the representatives, the data-parallel all-reduce runs alone with the wire time
// of its 2-rank group.
TEST(Dedup, PipelineReplicasDedupToOneRankPerStage) {
  TempDir dir;
  const auto table = dir.write("k.csv", "name,duration_us\nforward_step,800\nbackward_step,1600\n");
  std::vector<std::string> texts;
  for (int d = 0; d < 2; ++d) {
    for (int s = 0; s < 4; ++s) {
      PipelineSpec spec;
      spec.data_parallel = 2;
      spec.replica = d;
      spec.microbatches = 6;
      spec.iterations = 2;
      texts.push_back(pipeline_program(s, spec));
    }
  }
  const auto traces = parse_all(texts);
  EmulateOptions options;
  options.kernel_table = table.string();
  const EmulationResult dedup = emulate_or_fail(traces, options);
  ASSERT_EQ(dedup.classes.representative.size(), 4u);
  for (int size : dedup.classes.size) EXPECT_EQ(size, 2);
  EXPECT_EQ(dedup.graph.ranks.size(), 4u);
  EXPECT_GT(dedup.replay.collectives_joined, 0);
  EXPECT_EQ(dedup.replay.collectives_forced, 0);
  options.dedup = false;
  const EmulationResult full = emulate_or_fail(traces, options);
  EXPECT_EQ(full.replay.collectives_forced, 0);
  expect_same_prediction(dedup, full);
}

// A ring of sends (each rank to the next, inside a group with the receive from the previous) is
// symmetric: one class, and the same answer.
TEST(Dedup, SymmetricRingIsOneClass) {
  constexpr int kRanks = 4;
  std::vector<std::string> texts;
  for (int r = 0; r < kRanks; ++r) {
    TraceWriter w(r, kRanks);
    w.comm_init("ring", r, kRanks);
    for (int step = 0; step < 3; ++step) {
      w.kernel("compute", 1 << 18, 256);
      w.nccl("send", "ring", r, kRanks, 1 << 22, "float32", 0, (r + 1) % kRanks, step + 1);
      w.nccl("recv", "ring", r, kRanks, 1 << 22, "float32", 0, (r + kRanks - 1) % kRanks, step + 1);
    }
    w.device_sync();
    texts.push_back(w.finish());
  }
  const auto traces = parse_all(texts);
  EmulateOptions options;
  const EmulationResult dedup = emulate_or_fail(traces, options);
  EXPECT_EQ(dedup.classes.representative.size(), 1u);
  options.dedup = false;
  const EmulationResult full = emulate_or_fail(traces, options);
  EXPECT_GT(full.replay.collectives_joined, 0);
  expect_same_prediction(dedup, full);
}

}  // namespace
}  // namespace powertrain::emulate
