// Step metrics on hand-computed timelines: breakdown, utilization, windows, replay accuracy.
#include "sim/metrics.h"

#include <gtest/gtest.h>

#include "graph/graph_builder.h"
#include "graph/trace_builder.h"

namespace powertrain::sim {
namespace {

using graph::RankTraceBuilder;

TEST(Breakdown, HandComputedTimeline) {
  // Compute [0,40] ∪ [30,50], communication [45,70] in a 100 ns window:
  // overlapped 45–50 (5), exposed compute 0–45 (45), exposed communication 50–70 (20), other 30.
  const std::vector<Interval> intervals = {{0, 40, false}, {30, 50, false}, {45, 70, true}};
  const Breakdown b = breakdown_of(intervals, {0, 100});
  EXPECT_DOUBLE_EQ(b.exposed_compute, 0.45);
  EXPECT_DOUBLE_EQ(b.overlapped, 0.05);
  EXPECT_DOUBLE_EQ(b.exposed_communication, 0.20);
  EXPECT_DOUBLE_EQ(b.other, 0.30);
}

TEST(Breakdown, ClipsToTheWindowAndHandlesAnEmptyWindow) {
  const std::vector<Interval> intervals = {{-50, 20, true}, {90, 200, false}};
  const Breakdown b = breakdown_of(intervals, {0, 100});
  EXPECT_DOUBLE_EQ(b.exposed_communication, 0.20);
  EXPECT_DOUBLE_EQ(b.exposed_compute, 0.10);
  EXPECT_DOUBLE_EQ(b.other, 0.70);
  const Breakdown empty = breakdown_of(intervals, {5, 5});
  EXPECT_EQ(empty.other, 0.0);
}

TEST(Utilization, OneMillisecondBinsOfTheBusyUnion) {
  const std::int64_t ms = 1'000'000;
  // [0, 0.5] ∪ [0.25, 0.75] = 0.75 ms busy in bin 0; [1.5, 2.5] covers half of bin 1 and all of
  // the last, half-length bin.
  const std::vector<Interval> intervals = {
      {0, ms / 2, false}, {ms / 4, 3 * ms / 4, true}, {3 * ms / 2, 5 * ms / 2, false}};
  const std::vector<double> u = utilization_of(intervals, {0, 5 * ms / 2});
  ASSERT_EQ(u.size(), 3u);
  EXPECT_DOUBLE_EQ(u[0], 0.75);
  EXPECT_DOUBLE_EQ(u[1], 0.5);
  EXPECT_DOUBLE_EQ(u[2], 1.0);
}

TEST(Utilization, AbsurdlyLongWindowsGetCoarserBinsInsteadOfExhaustingMemory) {
  // Found by the emulation-trace fuzzer: a bogus time far away made a 10^18 ns window.
  const std::int64_t far = std::int64_t{1} << 60;
  const std::vector<Interval> intervals = {{0, far / 2, false}};
  const std::vector<double> u = utilization_of(intervals, {0, far});
  ASSERT_FALSE(u.empty());
  EXPECT_LE(u.size(), 10'000'000u);
  EXPECT_DOUBLE_EQ(u.front(), 1.0);
  EXPECT_DOUBLE_EQ(u.back(), 0.0);
}

TEST(StepWindows, AllProfilerStepsElseFirstToLastTask) {
  RankTraceBuilder with_steps(0, 2);
  with_steps.step(1, 1000, 400).op("a", 1100, 100).step(2, 1400, 200).op("b", 1500, 50);
  with_steps.runtime("cudaLaunchKernel", 1510, 5, 1).kernel("k", 1520, 900, 1);
  RankTraceBuilder without(1, 2);
  without.op("x", 50, 10).runtime("cudaLaunchKernel", 70, 5, 1).kernel("y", 80, 500, 1);
  auto graph = graph::build_execution_graph({with_steps.build(), without.build()});
  ASSERT_TRUE(graph.ok());
  const StepMetrics m = metrics_of_input(*graph);
  ASSERT_EQ(m.ranks.size(), 2u);
  EXPECT_TRUE(m.ranks[0].window.profiler_steps);
  EXPECT_EQ(m.ranks[0].window.start_ns, 1000);
  EXPECT_EQ(m.ranks[0].window.end_ns, 1600);
  EXPECT_EQ(m.ranks[0].window.steps, 2);
  EXPECT_DOUBLE_EQ(m.ranks[0].step_time_ns, 300.0);
  // The kernel runs 1520–2420: 80 ns of the 600 ns window.
  EXPECT_NEAR(m.ranks[0].breakdown.exposed_compute, 80.0 / 600.0, 1e-12);
  EXPECT_FALSE(m.ranks[1].window.profiler_steps);
  EXPECT_EQ(m.ranks[1].window.start_ns, 50);
  EXPECT_EQ(m.ranks[1].window.end_ns, 580);
  EXPECT_DOUBLE_EQ(m.job_step_time_ns, 530.0);  // the slower rank
  EXPECT_NEAR(m.ranks[1].mean_utilization, 500.0 / 530.0, 1e-12);
}

TEST(ReplayAccuracy, MeasuresStepTimeAndKernelErrors) {
  RankTraceBuilder b;
  b.step(1, 0, 1000).runtime("cudaLaunchKernel", 10, 5, 1).op("tail", 900, 100);
  b.kernel("k", 20, 500, 1);
  auto graph = graph::build_execution_graph({b.build()});
  ASSERT_TRUE(graph.ok());
  graph->duration_ns[graph::find_task(*graph, 0, "cudaLaunchKernel")] = 105;  // +100 ns
  const ReplayResult r = replay(*graph);
  const ReplayAccuracy a =
      compare_replay(*graph, r, metrics_of_input(*graph), metrics_of_replay(*graph, r));
  EXPECT_NEAR(a.job_step_time_error_pct, 10.0, 1e-9);  // the step ends 100 ns later
  EXPECT_DOUBLE_EQ(a.kernel_start_mae_ns, 0.0);        // the kernel starts from the launch start
  EXPECT_NEAR(a.max_breakdown_error_pp, (0.5 - 500.0 / 1100.0) * 100, 1e-9);
}

}  // namespace
}  // namespace powertrain::sim
