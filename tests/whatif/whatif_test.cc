// What-if changes with known answers (issue 4, must-show 3).
#include "whatif/whatif.h"

#include <gtest/gtest.h>

#include "../support/synthetic_job.h"
#include "graph/graph_builder.h"
#include "sim/metrics.h"
#include "sim/simulator.h"

namespace powertrain::whatif {
namespace {

graph::ExecutionGraph synthetic_graph(int ranks) {
  test_support::SyntheticJobSpec spec;
  spec.ranks = ranks;
  spec.steps = 2;
  spec.layers = 6;
  auto graph = graph::build_execution_graph(test_support::make_synthetic_job(spec));
  EXPECT_TRUE(graph.ok()) << graph.error().message;
  return std::move(*graph);
}

double job_step_ns(const graph::ExecutionGraph& graph) {
  const sim::ReplayResult result = sim::replay(graph);
  EXPECT_EQ(result.outcome, sim::ReplayOutcome::kComplete);
  return sim::metrics_of_replay(graph, result).job_step_time_ns;
}

TEST(WhatIf, ScalingEveryDurationByKScalesTheStepByK) {
  for (double k : {0.5, 2.0, 3.0}) {
    graph::ExecutionGraph graph = synthetic_graph(4);
    const double before = job_step_ns(graph);
    EXPECT_EQ(scale_durations(graph, {TaskClass::kAll, k}), graph.task_count());
    EXPECT_NEAR(job_step_ns(graph) / before, k, 1e-3) << "k = " << k;
  }
}

TEST(WhatIf, FasterCollectivesNeverLengthenTheStep) {
  for (double k : {0.9, 0.5, 0.25}) {
    graph::ExecutionGraph graph = synthetic_graph(4);
    const double before = job_step_ns(graph);
    EXPECT_GT(scale_durations(graph, {TaskClass::kCollective, k}), 0);
    EXPECT_LE(job_step_ns(graph), before) << "k = " << k;
  }
}

TEST(WhatIf, FasterGemmsShortenAComputeBoundStep) {
  graph::ExecutionGraph graph = synthetic_graph(1);
  const double before = job_step_ns(graph);
  scale_durations(graph, {TaskClass::kGpu, 0.5});
  const double after = job_step_ns(graph);
  EXPECT_LT(after, before);
  EXPECT_GT(after, 0.5 * before);  // host work and launches do not shrink
}

TEST(WhatIf, ParsesScalingsAndRefusesBadOnes) {
  auto ok = parse_duration_scaling("matmul=0.5");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->task_class, TaskClass::kMatmul);
  EXPECT_DOUBLE_EQ(ok->factor, 0.5);
  EXPECT_EQ(parse_duration_scaling("nccl=2")->task_class, TaskClass::kCollective);
  for (const char* bad : {"matmul", "bogus=2", "all=0", "all=-1", "all=x", "all=1e9", "all="}) {
    EXPECT_FALSE(parse_duration_scaling(bad).ok()) << bad;
  }
  EXPECT_NE(parse_duration_scaling("bogus=2").error().message.find("collective"),
            std::string::npos);
}

TEST(WhatIf, TaskClassesAreTheKernelClassesPlusSelectors) {
  // One kernel-class enum: the what-if classes name sim::KernelClass values, and all/gpu/cpu
  // select no single class.
  for (const sim::KernelClass k :
       {sim::KernelClass::kMatmul, sim::KernelClass::kMemory, sim::KernelClass::kCollective}) {
    const auto parsed = parse_duration_scaling(std::string(sim::to_string(k)) + "=2");
    ASSERT_TRUE(parsed.ok()) << sim::to_string(k);
    EXPECT_EQ(kernel_class(parsed->task_class), k);
  }
  for (const TaskClass selector : {TaskClass::kAll, TaskClass::kGpu, TaskClass::kCpu}) {
    EXPECT_FALSE(kernel_class(selector).has_value());
  }
}

}  // namespace
}  // namespace powertrain::whatif
