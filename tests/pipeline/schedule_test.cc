// Tests for the pipeline schedules (pipeline/schedule.h): every schedule's per-GPU order and DAG
// edges against small cases worked out by hand from the DeepSpeed/Megatron definitions.

#include "pipeline/schedule.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "frontier/solver.h"
#include "pipeline/operation_dag.h"

namespace powertrain::pipeline {
namespace {

using Orders = std::vector<std::vector<std::string>>;
using EdgeSet = std::set<std::string>;

PipelineSpec make_spec(ScheduleKind kind, int gpus, int microbatches, int chunks = 1) {
  PipelineSpec spec;
  spec.schedule = kind;
  spec.num_gpus = gpus;
  spec.num_microbatches = microbatches;
  spec.chunks_per_gpu = chunks;
  return spec;
}

std::string short_name(const ScheduledInstruction& instruction) {
  const char* letter = instruction.kind == InstructionKind::kForward     ? "F"
                       : instruction.kind == InstructionKind::kBackward  ? "B"
                       : instruction.kind == InstructionKind::kRecompute ? "R"
                                                                         : "?";
  return std::string(letter) + std::to_string(instruction.microbatch) + "@s" +
         std::to_string(instruction.stage);
}

// schedule_order as labels in the same style as OperationDag::label ("F3@s2").
Orders order_labels(const PipelineSpec& spec) {
  auto orders = schedule_order(spec);
  EXPECT_TRUE(orders.ok()) << (orders.ok() ? "" : orders.error().message);
  Orders out;
  if (!orders.ok()) return out;
  for (const auto& gpu : *orders) {
    out.emplace_back();
    for (const auto& instruction : gpu) out.back().push_back(short_name(instruction));
  }
  return out;
}

OperationDag build(const PipelineSpec& spec) {
  auto dag = build_pipeline_dag(spec);
  EXPECT_TRUE(dag.ok()) << (dag.ok() ? "" : dag.error().message);
  if (!dag.ok()) return {};
  return std::move(dag).value();
}

// The DAG's per-GPU orders as labels.
Orders dag_order_labels(const OperationDag& dag) {
  Orders out;
  for (const auto& gpu : dag.gpu_order) {
    out.emplace_back();
    for (int id : gpu) out.back().push_back(dag.label(id));
  }
  return out;
}

EdgeSet edge_labels(const OperationDag& dag) {
  EdgeSet edges;
  for (int from = 0; from < dag.size(); ++from) {
    for (int to : dag.successors[static_cast<std::size_t>(from)]) {
      edges.insert(dag.label(from) + "->" + dag.label(to));
    }
  }
  return edges;
}

std::size_t edge_count(const OperationDag& dag) {
  std::size_t n = 0;
  for (const auto& out : dag.successors) n += out.size();
  return n;
}

// Checks that topological_order is a permutation of the nodes and respects every edge, and that
// successors/predecessors mirror each other.
void expect_valid_topological_order(const OperationDag& dag) {
  const int n = dag.size();
  ASSERT_EQ(static_cast<int>(dag.topological_order.size()), n);
  std::vector<int> position(static_cast<std::size_t>(n), -1);
  for (int i = 0; i < n; ++i) {
    const int v = dag.topological_order[static_cast<std::size_t>(i)];
    ASSERT_GE(v, 0);
    ASSERT_LT(v, n);
    ASSERT_EQ(position[static_cast<std::size_t>(v)], -1) << "node " << v << " listed twice";
    position[static_cast<std::size_t>(v)] = i;
  }
  std::size_t predecessor_edges = 0;
  for (int v = 0; v < n; ++v) {
    for (int w : dag.successors[static_cast<std::size_t>(v)]) {
      EXPECT_LT(position[static_cast<std::size_t>(v)], position[static_cast<std::size_t>(w)])
          << dag.label(v) << "->" << dag.label(w);
      const auto& preds = dag.predecessors[static_cast<std::size_t>(w)];
      EXPECT_NE(std::find(preds.begin(), preds.end(), v), preds.end());
    }
    predecessor_edges += dag.predecessors[static_cast<std::size_t>(v)].size();
  }
  EXPECT_EQ(predecessor_edges, edge_count(dag));
}

// gpu / slot fields agree with gpu_order.
void expect_consistent_slots(const OperationDag& dag) {
  ASSERT_EQ(static_cast<int>(dag.gpu_order.size()), dag.num_gpus);
  for (int gpu = 0; gpu < dag.num_gpus; ++gpu) {
    const auto& order = dag.gpu_order[static_cast<std::size_t>(gpu)];
    for (std::size_t slot = 0; slot < order.size(); ++slot) {
      const Operation& op = dag.operations[static_cast<std::size_t>(order[slot])];
      EXPECT_EQ(op.gpu, gpu) << dag.label(order[slot]);
      EXPECT_EQ(op.slot, static_cast<int>(slot)) << dag.label(order[slot]);
    }
  }
}

// Consecutive pairs of each hand-written GPU order (the GPU-order edges).
EdgeSet consecutive_edges(const Orders& orders) {
  EdgeSet edges;
  for (const auto& gpu : orders) {
    for (std::size_t i = 0; i + 1 < gpu.size(); ++i) edges.insert(gpu[i] + "->" + gpu[i + 1]);
  }
  return edges;
}

// fmt rather than "F" + std::to_string(m) + ...: GCC 12 warns falsely (-Wrestrict) on the latter.
std::string f(int m, int s) { return fmt::format("F{}@s{}", m, s); }
std::string b(int m, int s) { return fmt::format("B{}@s{}", m, s); }

// --- Names -----------------------------------------------------------------------------------

TEST(ScheduleNames, RoundTrip) {
  for (ScheduleKind kind :
       {ScheduleKind::kGPipe, ScheduleKind::kOneFOneB, ScheduleKind::kInterleavedOneFOneB,
        ScheduleKind::kOneFOneBEarlyRecompute}) {
    auto parsed = parse_schedule(schedule_name(kind));
    ASSERT_TRUE(parsed.has_value()) << schedule_name(kind);
    EXPECT_EQ(*parsed, kind);
    EXPECT_NE(known_schedules().find(schedule_name(kind)), std::string::npos);
  }
  EXPECT_EQ(schedule_name(ScheduleKind::kGPipe), "gpipe");
  EXPECT_EQ(schedule_name(ScheduleKind::kOneFOneB), "1f1b");
  EXPECT_EQ(schedule_name(ScheduleKind::kInterleavedOneFOneB), "interleaved-1f1b");
  EXPECT_EQ(schedule_name(ScheduleKind::kOneFOneBEarlyRecompute), "1f1b-recompute");
  EXPECT_FALSE(parse_schedule("1F1B").has_value());
  EXPECT_FALSE(parse_schedule("").has_value());
  EXPECT_FALSE(parse_schedule("pipedream").has_value());
}

TEST(ScheduleNames, ProfileStages) {
  EXPECT_EQ(make_spec(ScheduleKind::kOneFOneB, 4, 8).num_profile_stages(), 4);
  EXPECT_EQ(make_spec(ScheduleKind::kGPipe, 3, 8).num_profile_stages(), 3);
  EXPECT_EQ(make_spec(ScheduleKind::kOneFOneBEarlyRecompute, 2, 8).num_profile_stages(), 2);
  EXPECT_EQ(make_spec(ScheduleKind::kInterleavedOneFOneB, 2, 4, 2).num_profile_stages(), 4);
  EXPECT_EQ(make_spec(ScheduleKind::kInterleavedOneFOneB, 4, 8, 3).num_profile_stages(), 12);
}

// --- 1F1B ------------------------------------------------------------------------------------

TEST(Schedule1F1B, TwoStagesThreeMicrobatchesOrder) {
  const Orders expected = {
      {"F0@s0", "F1@s0", "B0@s0", "F2@s0", "B1@s0", "B2@s0"},
      {"F0@s1", "B0@s1", "F1@s1", "B1@s1", "F2@s1", "B2@s1"},
  };
  const PipelineSpec spec = make_spec(ScheduleKind::kOneFOneB, 2, 3);
  EXPECT_EQ(order_labels(spec), expected);
  const OperationDag dag = build(spec);
  EXPECT_EQ(dag.num_gpus, 2);
  EXPECT_EQ(dag.size(), 12);
  EXPECT_EQ(dag_order_labels(dag), expected);
  expect_consistent_slots(dag);
  expect_valid_topological_order(dag);
}

TEST(Schedule1F1B, TwoStagesThreeMicrobatchesEdges) {
  const EdgeSet expected = {
      // GPU 0 order.
      "F0@s0->F1@s0",
      "F1@s0->B0@s0",
      "B0@s0->F2@s0",
      "F2@s0->B1@s0",
      "B1@s0->B2@s0",
      // GPU 1 order (also covers the last stage's F(m)->B(m)).
      "F0@s1->B0@s1",
      "B0@s1->F1@s1",
      "F1@s1->B1@s1",
      "B1@s1->F2@s1",
      "F2@s1->B2@s1",
      // Activations forward.
      "F0@s0->F0@s1",
      "F1@s0->F1@s1",
      "F2@s0->F2@s1",
      // Gradients backward.
      "B0@s1->B0@s0",
      "B1@s1->B1@s0",
      "B2@s1->B2@s0",
  };
  const OperationDag dag = build(make_spec(ScheduleKind::kOneFOneB, 2, 3));
  EXPECT_EQ(edge_labels(dag), expected);
  EXPECT_EQ(edge_count(dag), expected.size()) << "duplicate edges";
}

TEST(Schedule1F1B, WarmupIsCappedByMicrobatches) {
  // S=3, M=2: rank 0 wants 2 warm-up forwards, rank 1 one, rank 2 none.
  const Orders expected3x2 = {
      {"F0@s0", "F1@s0", "B0@s0", "B1@s0"},
      {"F0@s1", "F1@s1", "B0@s1", "B1@s1"},
      {"F0@s2", "B0@s2", "F1@s2", "B1@s2"},
  };
  EXPECT_EQ(order_labels(make_spec(ScheduleKind::kOneFOneB, 3, 2)), expected3x2);
  // S=4, M=2: min(S-r-1, M) caps ranks 0 and 1 at 2 warm-up forwards.
  const Orders expected4x2 = {
      {"F0@s0", "F1@s0", "B0@s0", "B1@s0"},
      {"F0@s1", "F1@s1", "B0@s1", "B1@s1"},
      {"F0@s2", "F1@s2", "B0@s2", "B1@s2"},
      {"F0@s3", "B0@s3", "F1@s3", "B1@s3"},
  };
  EXPECT_EQ(order_labels(make_spec(ScheduleKind::kOneFOneB, 4, 2)), expected4x2);
  // One stage: plain F, B alternation.
  const Orders expected1x3 = {{"F0@s0", "B0@s0", "F1@s0", "B1@s0", "F2@s0", "B2@s0"}};
  EXPECT_EQ(order_labels(make_spec(ScheduleKind::kOneFOneB, 1, 3)), expected1x3);
}

TEST(Schedule1F1B, FourStagesFiveMicrobatchesOrder) {
  const Orders expected = {
      {"F0@s0", "F1@s0", "F2@s0", "F3@s0", "B0@s0", "F4@s0", "B1@s0", "B2@s0", "B3@s0", "B4@s0"},
      {"F0@s1", "F1@s1", "F2@s1", "B0@s1", "F3@s1", "B1@s1", "F4@s1", "B2@s1", "B3@s1", "B4@s1"},
      {"F0@s2", "F1@s2", "B0@s2", "F2@s2", "B1@s2", "F3@s2", "B2@s2", "F4@s2", "B3@s2", "B4@s2"},
      {"F0@s3", "B0@s3", "F1@s3", "B1@s3", "F2@s3", "B2@s3", "F3@s3", "B3@s3", "F4@s3", "B4@s3"},
  };
  const PipelineSpec spec = make_spec(ScheduleKind::kOneFOneB, 4, 5);
  EXPECT_EQ(order_labels(spec), expected);
  const OperationDag dag = build(spec);
  EXPECT_EQ(dag_order_labels(dag), expected);
  // Edges: GPU order + F(s,m)->F(s+1,m) + B(s+1,m)->B(s,m) + F(3,m)->B(3,m).
  EdgeSet edges = consecutive_edges(expected);
  for (int m = 0; m < 5; ++m) {
    for (int s = 0; s < 3; ++s) {
      edges.insert(f(m, s) + "->" + f(m, s + 1));
      edges.insert(b(m, s + 1) + "->" + b(m, s));
    }
    edges.insert(f(m, 3) + "->" + b(m, 3));
  }
  EXPECT_EQ(edge_labels(dag), edges);
  expect_valid_topological_order(dag);
  expect_consistent_slots(dag);
}

// --- GPipe -----------------------------------------------------------------------------------

TEST(ScheduleGPipe, TwoStagesTwoMicrobatches) {
  const Orders expected = {
      {"F0@s0", "F1@s0", "B1@s0", "B0@s0"},
      {"F0@s1", "F1@s1", "B1@s1", "B0@s1"},
  };
  const PipelineSpec spec = make_spec(ScheduleKind::kGPipe, 2, 2);
  EXPECT_EQ(order_labels(spec), expected);
  const OperationDag dag = build(spec);
  EXPECT_EQ(dag_order_labels(dag), expected);
  const EdgeSet edges = {
      "F0@s0->F1@s0", "F1@s0->B1@s0", "B1@s0->B0@s0",  // GPU 0
      "F0@s1->F1@s1", "F1@s1->B1@s1", "B1@s1->B0@s1",  // GPU 1
      "F0@s0->F0@s1", "F1@s0->F1@s1",                  // activations
      "B0@s1->B0@s0", "B1@s1->B1@s0",                  // gradients
      "F0@s1->B0@s1",                                  // last stage F(0)->B(0)
                                                       // (F1@s1->B1@s1 is in GPU order)
  };
  EXPECT_EQ(edge_labels(dag), edges);
  EXPECT_EQ(edge_count(dag), edges.size());
  expect_valid_topological_order(dag);
  expect_consistent_slots(dag);
}

TEST(ScheduleGPipe, ThreeStagesFourMicrobatchesOrder) {
  const std::vector<std::string> gpu0 = {"F0@s0", "F1@s0", "F2@s0", "F3@s0",
                                         "B3@s0", "B2@s0", "B1@s0", "B0@s0"};
  const std::vector<std::string> gpu2 = {"F0@s2", "F1@s2", "F2@s2", "F3@s2",
                                         "B3@s2", "B2@s2", "B1@s2", "B0@s2"};
  const Orders got = order_labels(make_spec(ScheduleKind::kGPipe, 3, 4));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], gpu0);
  EXPECT_EQ(got[2], gpu2);
}

// --- 1F1B with early recomputation -------------------------------------------------------------

TEST(Schedule1F1BRecompute, TwoStagesTwoMicrobatches) {
  const Orders expected = {
      {"F0@s0", "F1@s0", "R0@s0", "B0@s0", "R1@s0", "B1@s0"},
      {"F0@s1", "R0@s1", "B0@s1", "F1@s1", "R1@s1", "B1@s1"},
  };
  const PipelineSpec spec = make_spec(ScheduleKind::kOneFOneBEarlyRecompute, 2, 2);
  EXPECT_EQ(order_labels(spec), expected);
  const OperationDag dag = build(spec);
  EXPECT_EQ(dag_order_labels(dag), expected);
  const EdgeSet edges = {
      // GPU 0 order.
      "F0@s0->F1@s0",
      "F1@s0->R0@s0",
      "R0@s0->B0@s0",
      "B0@s0->R1@s0",
      "R1@s0->B1@s0",
      // GPU 1 order (covers the last stage's F(m)->R(m)).
      "F0@s1->R0@s1",
      "R0@s1->B0@s1",
      "B0@s1->F1@s1",
      "F1@s1->R1@s1",
      "R1@s1->B1@s1",
      // Activations and gradients.
      "F0@s0->F0@s1",
      "F1@s0->F1@s1",
      "B0@s1->B0@s0",
      "B1@s1->B1@s0",
  };
  EXPECT_EQ(edge_labels(dag), edges);
  EXPECT_EQ(edge_count(dag), edges.size());
  expect_valid_topological_order(dag);
  expect_consistent_slots(dag);
}

TEST(Schedule1F1BRecompute, LastStageForwardFeedsRecomputeNotBackward) {
  // The last stage's F(m) feeds R(m), never B(m) directly; B(m) waits for R(m) through the GPU
  // order and for B(m) of the next stage.
  const Orders expected = {
      {"F0@s0", "F1@s0", "R0@s0", "B0@s0", "F2@s0", "R1@s0", "B1@s0", "R2@s0", "B2@s0"},
      {"F0@s1", "R0@s1", "B0@s1", "F1@s1", "R1@s1", "B1@s1", "F2@s1", "R2@s1", "B2@s1"},
  };
  const PipelineSpec spec = make_spec(ScheduleKind::kOneFOneBEarlyRecompute, 2, 3);
  EXPECT_EQ(order_labels(spec), expected);
  const OperationDag dag = build(spec);
  const EdgeSet edges = edge_labels(dag);
  for (int m = 0; m < 3; ++m) {
    const std::string r = fmt::format("R{}@s1", m);
    EXPECT_EQ(edges.count(f(m, 1) + "->" + r), 1u) << m;
    EXPECT_EQ(edges.count(f(m, 1) + "->" + b(m, 1)), 0u) << m;
    EXPECT_EQ(edges.count(b(m, 1) + "->" + b(m, 0)), 1u) << m;
  }
  EdgeSet expected_edges = consecutive_edges(expected);
  for (int m = 0; m < 3; ++m) {
    expected_edges.insert(f(m, 0) + "->" + f(m, 1));
    expected_edges.insert(b(m, 1) + "->" + b(m, 0));
  }
  EXPECT_EQ(edges, expected_edges);
}

// --- Interleaved 1F1B (Megatron virtual pipeline) ---------------------------------------------

TEST(ScheduleInterleaved, TwoGpusTwoChunksTwoMicrobatches) {
  // M == S: everything is warm-up. Forward chunk of k: (k % 4) / 2 -> 0,0,1,1; microbatch
  // (k / 4) * 2 + k % 2 -> 0,1,0,1; backward chunk 1,1,0,0. Stage = chunk * 2 + rank.
  const Orders expected = {
      {"F0@s0", "F1@s0", "F0@s2", "F1@s2", "B0@s2", "B1@s2", "B0@s0", "B1@s0"},
      {"F0@s1", "F1@s1", "F0@s3", "F1@s3", "B0@s3", "B1@s3", "B0@s1", "B1@s1"},
  };
  const PipelineSpec spec = make_spec(ScheduleKind::kInterleavedOneFOneB, 2, 2, 2);
  EXPECT_EQ(order_labels(spec), expected);
  const OperationDag dag = build(spec);
  EXPECT_EQ(dag.num_gpus, 2);
  EXPECT_EQ(dag.size(), 16);
  EXPECT_EQ(dag_order_labels(dag), expected);
  const EdgeSet edges = {
      // GPU 0 order.
      "F0@s0->F1@s0",
      "F1@s0->F0@s2",
      "F0@s2->F1@s2",
      "F1@s2->B0@s2",
      "B0@s2->B1@s2",
      "B1@s2->B0@s0",
      "B0@s0->B1@s0",
      // GPU 1 order.
      "F0@s1->F1@s1",
      "F1@s1->F0@s3",
      "F0@s3->F1@s3",
      "F1@s3->B0@s3",
      "B0@s3->B1@s3",
      "B1@s3->B0@s1",
      "B0@s1->B1@s1",
      // Activations chunk g -> g+1.
      "F0@s0->F0@s1",
      "F0@s1->F0@s2",
      "F0@s2->F0@s3",
      "F1@s0->F1@s1",
      "F1@s1->F1@s2",
      "F1@s2->F1@s3",
      // Gradients chunk g+1 -> g.
      "B0@s3->B0@s2",
      "B0@s2->B0@s1",
      "B0@s1->B0@s0",
      "B1@s3->B1@s2",
      "B1@s2->B1@s1",
      "B1@s1->B1@s0",
      // Last chunk F(m) -> B(m).
      "F0@s3->B0@s3",
      "F1@s3->B1@s3",
  };
  EXPECT_EQ(edge_labels(dag), edges);
  EXPECT_EQ(edge_count(dag), edges.size());
  expect_valid_topological_order(dag);
  expect_consistent_slots(dag);
  for (int id : dag.gpu_order[0]) EXPECT_EQ(dag.operations[id].stage % 2, 0) << dag.label(id);
  for (int id : dag.gpu_order[1]) EXPECT_EQ(dag.operations[id].stage % 2, 1) << dag.label(id);
}

TEST(ScheduleInterleaved, TwoGpusTwoChunksFourMicrobatches) {
  // Warm-up: rank 0 (2-0-1)*2 + (2-1)*2 = 4, rank 1 (2-1-1)*2 + 2 = 2; 8 virtual microbatches.
  // Forward k=0..7: chunk 0,0,1,1,0,0,1,1; microbatch 0,1,0,1,2,3,2,3.
  // Backward k=0..7: chunk 1,1,0,0,1,1,0,0; microbatch 0,1,0,1,2,3,2,3.
  const Orders expected = {
      {"F0@s0", "F1@s0", "F0@s2", "F1@s2",                                      // warm-up
       "F2@s0", "B0@s2", "F3@s0", "B1@s2", "F2@s2", "B0@s0", "F3@s2", "B1@s0",  // steady
       "B2@s2", "B3@s2", "B2@s0", "B3@s0"},                                     // cool-down
      {"F0@s1", "F1@s1",                                                        // warm-up
       "F0@s3", "B0@s3", "F1@s3", "B1@s3", "F2@s1", "B0@s1", "F3@s1", "B1@s1",  // steady
       "F2@s3", "B2@s3", "F3@s3", "B3@s3",                                      //
       "B2@s1", "B3@s1"},                                                       // cool-down
  };
  const PipelineSpec spec = make_spec(ScheduleKind::kInterleavedOneFOneB, 2, 4, 2);
  EXPECT_EQ(order_labels(spec), expected);
  const OperationDag dag = build(spec);
  EXPECT_EQ(dag.size(), 32);
  EXPECT_EQ(dag_order_labels(dag), expected);
  EdgeSet edges = consecutive_edges(expected);
  for (int m = 0; m < 4; ++m) {
    for (int g = 0; g < 3; ++g) {
      edges.insert(f(m, g) + "->" + f(m, g + 1));
      edges.insert(b(m, g + 1) + "->" + b(m, g));
    }
    edges.insert(f(m, 3) + "->" + b(m, 3));
  }
  EXPECT_EQ(edges.size(), 30u + 24u);  // 15 + 15 GPU-order edges, 24 pipeline edges
  EXPECT_EQ(edge_labels(dag), edges);
  EXPECT_EQ(edge_count(dag), edges.size());
  expect_valid_topological_order(dag);
  expect_consistent_slots(dag);
}

TEST(ScheduleInterleaved, SingleGpuKeepsChunksOnOneGpu) {
  // S=1, v=2, M=1: M == S, all warm-up: F0@s0 F0@s1 then backward chunks 1, 0.
  const Orders expected = {{"F0@s0", "F0@s1", "B0@s1", "B0@s0"}};
  PipelineSpec spec = make_spec(ScheduleKind::kInterleavedOneFOneB, 1, 1, 2);
  EXPECT_EQ(order_labels(spec), expected);
  spec.p2p_time_s = 0.5;  // every edge is on one GPU: no transfer nodes
  const OperationDag dag = build(spec);
  EXPECT_EQ(dag.size(), 4);
  const EdgeSet edges = {"F0@s0->F0@s1", "F0@s1->B0@s1", "B0@s1->B0@s0"};
  EXPECT_EQ(edge_labels(dag), edges);
}

// --- Constant nodes --------------------------------------------------------------------------

TEST(ScheduleConstantNodes, DataLoadingFirstOptimizerStepLast) {
  for (ScheduleKind kind :
       {ScheduleKind::kGPipe, ScheduleKind::kOneFOneB, ScheduleKind::kOneFOneBEarlyRecompute,
        ScheduleKind::kInterleavedOneFOneB}) {
    PipelineSpec spec = make_spec(kind, 2, 2, kind == ScheduleKind::kInterleavedOneFOneB ? 2 : 1);
    const OperationDag plain = build(spec);
    spec.data_loading_time_s = 0.25;
    spec.optimizer_step_time_s = 0.5;
    const OperationDag dag = build(spec);
    SCOPED_TRACE(std::string(schedule_name(kind)));
    EXPECT_EQ(dag.size(), plain.size() + 4);
    EXPECT_EQ(edge_count(dag), edge_count(plain) + 4);
    ASSERT_EQ(dag.gpu_order.size(), 2u);
    for (int gpu = 0; gpu < 2; ++gpu) {
      const auto& order = dag.gpu_order[static_cast<std::size_t>(gpu)];
      ASSERT_EQ(order.size(), plain.gpu_order[static_cast<std::size_t>(gpu)].size() + 2);
      const Operation& first = dag.operations[static_cast<std::size_t>(order.front())];
      const Operation& last = dag.operations[static_cast<std::size_t>(order.back())];
      EXPECT_EQ(first.kind, InstructionKind::kDataLoading);
      EXPECT_EQ(first.gpu, gpu);
      EXPECT_DOUBLE_EQ(first.constant_time_s, 0.25);
      EXPECT_EQ(last.kind, InstructionKind::kOptimizerStep);
      EXPECT_EQ(last.gpu, gpu);
      EXPECT_DOUBLE_EQ(last.constant_time_s, 0.5);
      EXPECT_EQ(dag.label(order.front()), "load@gpu" + std::to_string(gpu));
      EXPECT_EQ(dag.label(order.back()), "optim@gpu" + std::to_string(gpu));
      // Data loading has no predecessors and feeds the GPU's first instruction; the optimizer
      // step has no successors and follows the last one.
      EXPECT_TRUE(dag.predecessors[static_cast<std::size_t>(order.front())].empty());
      EXPECT_EQ(dag.successors[static_cast<std::size_t>(order.front())],
                std::vector<int>{order[1]});
      EXPECT_TRUE(dag.successors[static_cast<std::size_t>(order.back())].empty());
      EXPECT_EQ(dag.predecessors[static_cast<std::size_t>(order.back())],
                std::vector<int>{order[order.size() - 2]});
      // The instructions in between are the plain schedule.
      std::vector<std::string> middle, plain_labels;
      for (std::size_t i = 1; i + 1 < order.size(); ++i) middle.push_back(dag.label(order[i]));
      for (int id : plain.gpu_order[static_cast<std::size_t>(gpu)]) {
        plain_labels.push_back(plain.label(id));
      }
      EXPECT_EQ(middle, plain_labels);
    }
    expect_consistent_slots(dag);
    expect_valid_topological_order(dag);
  }
}

TEST(ScheduleConstantNodes, OnlyDataLoadingOrOnlyOptimizer) {
  PipelineSpec spec = make_spec(ScheduleKind::kOneFOneB, 2, 1);
  spec.data_loading_time_s = 0.1;
  OperationDag dag = build(spec);
  EXPECT_EQ(dag_order_labels(dag),
            (Orders{{"load@gpu0", "F0@s0", "B0@s0"}, {"load@gpu1", "F0@s1", "B0@s1"}}));
  spec.data_loading_time_s = 0.0;
  spec.optimizer_step_time_s = 0.1;
  dag = build(spec);
  EXPECT_EQ(dag_order_labels(dag),
            (Orders{{"F0@s0", "B0@s0", "optim@gpu0"}, {"F0@s1", "B0@s1", "optim@gpu1"}}));
}

TEST(ScheduleConstantNodes, P2PNodesOnInterGpuEdges) {
  PipelineSpec spec = make_spec(ScheduleKind::kOneFOneB, 2, 1);
  spec.p2p_time_s = 0.125;
  const OperationDag dag = build(spec);
  // 4 instructions + one transfer for the activation and one for the gradient.
  EXPECT_EQ(dag.size(), 6);
  const EdgeSet edges = {
      "F0@s0->B0@s0",   "F0@s1->B0@s1",    // GPU order / last stage
      "F0@s0->p2p0@s0", "p2p0@s0->F0@s1",  // activation, labelled by sender
      "B0@s1->p2p0@s1", "p2p0@s1->B0@s0",  // gradient, labelled by sender
  };
  EXPECT_EQ(edge_labels(dag), edges);
  int transfers = 0;
  for (const Operation& op : dag.operations) {
    if (op.kind != InstructionKind::kP2P) continue;
    ++transfers;
    EXPECT_EQ(op.gpu, -1);
    EXPECT_EQ(op.slot, -1);
    EXPECT_DOUBLE_EQ(op.constant_time_s, 0.125);
  }
  EXPECT_EQ(transfers, 2);
  // Transfers are not on any GPU's order.
  EXPECT_EQ(dag_order_labels(dag), (Orders{{"F0@s0", "B0@s0"}, {"F0@s1", "B0@s1"}}));
  expect_valid_topological_order(dag);
}

TEST(ScheduleConstantNodes, P2PCountPerSchedule) {
  // Every activation and gradient crossing GPUs gets its own transfer: 2 * M * (stages - 1)
  // transfers, and no direct edge between different GPUs remains.
  struct Case {
    ScheduleKind kind;
    int gpus, microbatches, chunks;
    int transfers;
  };
  const Case cases[] = {
      {ScheduleKind::kOneFOneB, 3, 4, 1, 2 * 4 * 2},
      {ScheduleKind::kGPipe, 3, 4, 1, 2 * 4 * 2},
      {ScheduleKind::kOneFOneBEarlyRecompute, 3, 4, 1, 2 * 4 * 2},
      {ScheduleKind::kInterleavedOneFOneB, 2, 4, 2, 2 * 4 * 3},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(schedule_name(c.kind)));
    PipelineSpec spec = make_spec(c.kind, c.gpus, c.microbatches, c.chunks);
    const int plain_size = build(spec).size();
    spec.p2p_time_s = 0.01;
    const OperationDag dag = build(spec);
    EXPECT_EQ(dag.size(), plain_size + c.transfers);
    for (int v = 0; v < dag.size(); ++v) {
      const Operation& op = dag.operations[static_cast<std::size_t>(v)];
      if (op.kind == InstructionKind::kP2P) {
        EXPECT_EQ(dag.predecessors[static_cast<std::size_t>(v)].size(), 1u);
        EXPECT_EQ(dag.successors[static_cast<std::size_t>(v)].size(), 1u);
        continue;
      }
      for (int w : dag.successors[static_cast<std::size_t>(v)]) {
        const Operation& to = dag.operations[static_cast<std::size_t>(w)];
        if (to.kind == InstructionKind::kP2P) continue;
        EXPECT_EQ(op.gpu, to.gpu) << dag.label(v) << "->" << dag.label(w);
      }
    }
    expect_valid_topological_order(dag);
  }
}

// --- Errors ----------------------------------------------------------------------------------

std::string order_error(const PipelineSpec& spec) {
  auto orders = schedule_order(spec);
  auto dag = build_pipeline_dag(spec);
  EXPECT_FALSE(orders.ok());
  EXPECT_FALSE(dag.ok());
  if (orders.ok() || dag.ok()) return "";
  EXPECT_EQ(orders.error().message, dag.error().message);
  return orders.error().message;
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

TEST(ScheduleErrors, StagesBelowOne) {
  for (int stages : {0, -3}) {
    const std::string message = order_error(make_spec(ScheduleKind::kOneFOneB, stages, 4));
    EXPECT_TRUE(starts_with(message, "--pp:")) << message;
    EXPECT_NE(message.find(std::to_string(stages)), std::string::npos) << message;
  }
}

TEST(ScheduleErrors, MicrobatchesBelowOne) {
  for (ScheduleKind kind :
       {ScheduleKind::kGPipe, ScheduleKind::kOneFOneB, ScheduleKind::kOneFOneBEarlyRecompute}) {
    const std::string message = order_error(make_spec(kind, 2, 0));
    EXPECT_TRUE(starts_with(message, "--microbatches:")) << message;
  }
  const std::string message = order_error(make_spec(ScheduleKind::kInterleavedOneFOneB, 2, -2, 2));
  EXPECT_TRUE(starts_with(message, "--microbatches:")) << message;
}

TEST(ScheduleErrors, InterleavedMicrobatchesNotMultipleOfStages) {
  const std::string message = order_error(make_spec(ScheduleKind::kInterleavedOneFOneB, 2, 3, 2));
  EXPECT_TRUE(starts_with(message, "--microbatches:")) << message;
  EXPECT_NE(message.find("multiple"), std::string::npos) << message;
  EXPECT_NE(message.find('3'), std::string::npos) << message;
  // M < S is not a multiple either.
  const std::string fewer = order_error(make_spec(ScheduleKind::kInterleavedOneFOneB, 4, 2, 2));
  EXPECT_TRUE(starts_with(fewer, "--microbatches:")) << fewer;
}

TEST(ScheduleErrors, InterleavedNeedsTwoChunks) {
  for (int chunks : {1, 0, -1}) {
    const std::string message =
        order_error(make_spec(ScheduleKind::kInterleavedOneFOneB, 2, 4, chunks));
    EXPECT_TRUE(starts_with(message, "--chunks:")) << message;
    EXPECT_NE(message.find(std::to_string(chunks)), std::string::npos) << message;
  }
}

TEST(ScheduleErrors, ChunksOnlyForInterleaved) {
  for (ScheduleKind kind :
       {ScheduleKind::kGPipe, ScheduleKind::kOneFOneB, ScheduleKind::kOneFOneBEarlyRecompute}) {
    for (int chunks : {0, 2}) {
      const std::string message = order_error(make_spec(kind, 2, 4, chunks));
      EXPECT_TRUE(starts_with(message, "--chunks:")) << message;
      EXPECT_NE(message.find(schedule_name(kind)), std::string::npos) << message;
    }
  }
}

TEST(ScheduleErrors, NegativeOrHugeConstantTime) {
  PipelineSpec spec = make_spec(ScheduleKind::kOneFOneB, 2, 2);
  spec.p2p_time_s = -1.0;
  EXPECT_FALSE(build_pipeline_dag(spec).ok());
  spec.p2p_time_s = 0.0;
  spec.data_loading_time_s = 2e6;
  EXPECT_FALSE(build_pipeline_dag(spec).ok());
  spec.data_loading_time_s = 0.0;
  spec.optimizer_step_time_s = -0.5;
  EXPECT_FALSE(build_pipeline_dag(spec).ok());
}

TEST(ScheduleErrors, TooManyOperations) {
  auto dag = build_pipeline_dag(make_spec(ScheduleKind::kOneFOneB, 1000, 1000));
  ASSERT_FALSE(dag.ok());
  EXPECT_NE(dag.error().message.find("too large"), std::string::npos) << dag.error().message;
}

// --- Determinism and makespan -----------------------------------------------------------------

TEST(ScheduleDag, TopologicalOrderValidAndDeterministic) {
  for (ScheduleKind kind :
       {ScheduleKind::kGPipe, ScheduleKind::kOneFOneB, ScheduleKind::kOneFOneBEarlyRecompute,
        ScheduleKind::kInterleavedOneFOneB}) {
    SCOPED_TRACE(std::string(schedule_name(kind)));
    PipelineSpec spec = make_spec(kind, 4, 8, kind == ScheduleKind::kInterleavedOneFOneB ? 2 : 1);
    spec.data_loading_time_s = 0.1;
    spec.optimizer_step_time_s = 0.2;
    spec.p2p_time_s = 0.05;
    const OperationDag first = build(spec);
    const OperationDag second = build(spec);
    expect_valid_topological_order(first);
    expect_consistent_slots(first);
    EXPECT_EQ(first.topological_order, second.topological_order);
    EXPECT_EQ(first.successors, second.successors);
    EXPECT_EQ(first.gpu_order, second.gpu_order);
    ASSERT_EQ(first.size(), second.size());
    for (int v = 0; v < first.size(); ++v) EXPECT_EQ(first.label(v), second.label(v));
    // Every (kind, stage, microbatch) appears exactly once.
    std::set<std::string> labels;
    int instructions = 0;
    for (int v = 0; v < first.size(); ++v) {
      if (!is_profiled(first.operations[static_cast<std::size_t>(v)].kind)) continue;
      ++instructions;
      labels.insert(first.label(v));
    }
    const int per_microbatch = kind == ScheduleKind::kOneFOneBEarlyRecompute ? 3 : 2;
    EXPECT_EQ(instructions, per_microbatch * 8 * spec.num_profile_stages());
    EXPECT_EQ(static_cast<int>(labels.size()), instructions);
  }
}

// Longest path with unit durations, computed here (independent of frontier::longest_path).
int unit_makespan(const OperationDag& dag) {
  std::vector<int> finish(static_cast<std::size_t>(dag.size()), 0);
  int makespan = 0;
  for (int v : dag.topological_order) {
    int start = 0;
    for (int p : dag.predecessors[static_cast<std::size_t>(v)]) {
      start = std::max(start, finish[static_cast<std::size_t>(p)]);
    }
    finish[static_cast<std::size_t>(v)] = start + 1;
    makespan = std::max(makespan, start + 1);
  }
  return makespan;
}

TEST(ScheduleDag, OneFOneBUnitMakespan) {
  const int stages = 4, microbatches = 8;
  const OperationDag dag = build(make_spec(ScheduleKind::kOneFOneB, stages, microbatches));
  const int expected = 2 * (microbatches + stages - 1);  // 22
  EXPECT_EQ(unit_makespan(dag), expected);
  EXPECT_EQ(frontier::longest_path(dag, std::vector<int>(static_cast<std::size_t>(dag.size()), 1)),
            expected);
  EXPECT_DOUBLE_EQ(
      frontier::longest_path(dag, std::vector<double>(static_cast<std::size_t>(dag.size()), 1.0)),
      expected);
}

TEST(ScheduleDag, UnitMakespanOtherSchedules) {
  // GPipe with unit F and B: M + S - 1 steps of forwards, then as many of backwards.
  EXPECT_EQ(unit_makespan(build(make_spec(ScheduleKind::kGPipe, 4, 8))), 2 * (8 + 4 - 1));
  // 1F1B for a few more sizes, including M < S.
  EXPECT_EQ(unit_makespan(build(make_spec(ScheduleKind::kOneFOneB, 2, 3))), 2 * (3 + 2 - 1));
  EXPECT_EQ(unit_makespan(build(make_spec(ScheduleKind::kOneFOneB, 4, 2))), 2 * (2 + 4 - 1));
  EXPECT_EQ(unit_makespan(build(make_spec(ScheduleKind::kOneFOneB, 1, 5))), 2 * 5);
  // Interleaved S=2, v=2, M=2, traced by hand with unit steps (finish times):
  // t=1 F0s0; t=2 F1s0 F0s1; t=3 F0s2 F1s1; t=4 F1s2 F0s3; t=5 F1s3; t=6 B0s3; t=7 B1s3 B0s2;
  // t=8 B1s2 B0s1; t=9 B0s0 B1s1; t=10 B1s0.
  const OperationDag interleaved = build(make_spec(ScheduleKind::kInterleavedOneFOneB, 2, 2, 2));
  EXPECT_EQ(unit_makespan(interleaved), 10);
}

}  // namespace
}  // namespace powertrain::pipeline
