// Step windows when the ProfilerStep spans are not one clean span per step (issue 13): a step
// written twice (nested or by two profilers), a step's span missing, the last step cut by the
// profiler's stop. Each expected step time is computed by hand from the spans below.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <utility>

#include "graph/graph_builder.h"
#include "graph/trace_builder.h"
#include "sim/metrics.h"

namespace powertrain::sim {
namespace {

using graph::RankTraceBuilder;

struct Span {
  int number;
  std::int64_t start_ns, end_ns;
  bool op = true;    // a 10 ns op 5 ns after its start (a second span of a step has none)
  int more_ops = 0;  // further 5 ns ops every 10 ns after it (a step's structure)
  int first_op = 0;  // the ops are named op<first_op>, op<first_op + 1>, ...
};

// One rank with the given ProfilerStep spans.
StepMetrics measured(std::initializer_list<Span> spans, std::size_t* steps_kept = nullptr) {
  RankTraceBuilder b;
  for (const Span& s : spans) {
    b.step(s.number, s.start_ns, s.end_ns - s.start_ns);
    if (s.op) b.op("op" + std::to_string(s.first_op), s.start_ns + 5, 10);
    for (int k = 1; k <= s.more_ops; ++k)
      b.op("op" + std::to_string(s.first_op + k), s.start_ns + 5 + 10 * k, 5);
  }
  auto g = graph::build_execution_graph({b.build()});
  EXPECT_TRUE(g.ok());
  if (steps_kept != nullptr) *steps_kept = g->ranks[0].profiler_steps.size();
  return metrics_of_input(*g);
}

TEST(ProfilerStepWindows, CleanStepsAreFirstStartToLastEndOverTheirCount) {
  const StepMetrics m = measured({{0, 0, 100}, {1, 100, 210}, {2, 210, 300}});
  EXPECT_EQ(m.ranks[0].window.steps, 3);
  EXPECT_EQ(m.job_step_time_ns, 100);
}

TEST(ProfilerStepWindows, AStepNestedInItselfCountsOnce) {
  // torch.compile'd loop: ProfilerStep#N again inside the step (was 4 steps: 50 ns).
  std::size_t kept = 0;
  const StepMetrics m =
      measured({{0, 0, 100}, {0, 2, 98, false}, {1, 100, 200}, {1, 102, 198, false}}, &kept);
  EXPECT_EQ(kept, 2u);
  EXPECT_EQ(m.ranks[0].window.steps, 2);
  EXPECT_EQ(m.job_step_time_ns, 100);
}

TEST(ProfilerStepWindows, TwoProfilersOverTheSameStepsCountThemOnce) {
  // A second profiler from step 1 with its own numbering, its step() 3 ns later: the spans
  // cross the next step's start, but share most of their time with one step only.
  const StepMetrics m = measured(
      {{0, 0, 100}, {1, 100, 200}, {2, 200, 300}, {0, 103, 203, false}, {1, 203, 303, false}});
  EXPECT_EQ(m.ranks[0].window.steps, 3);
  EXPECT_EQ(m.ranks[0].window.start_ns, 0);
  EXPECT_EQ(m.ranks[0].window.end_ns, 300);
  EXPECT_EQ(m.job_step_time_ns, 100);
}

TEST(ProfilerStepWindows, AdjacentStepsOverlappingByARoundingErrorStayTwo) {
  const StepMetrics m = measured({{0, 0, 101}, {1, 100, 200}});
  EXPECT_EQ(m.ranks[0].window.steps, 2);
  EXPECT_EQ(m.job_step_time_ns, 100);
}

TEST(ProfilerStepWindows, AStepWithoutItsSpanIsCountedFromTheNumbersAndTheGap) {
  // #6 not written: its 100 ns are in the window (was 300 / 2 = 150 ns).
  const StepMetrics m = measured({{5, 0, 100}, {7, 200, 300}});
  EXPECT_EQ(m.ranks[0].window.steps, 3);
  EXPECT_EQ(m.job_step_time_ns, 100);
}

TEST(ProfilerStepWindows, NumbersThatSkipWithoutTimeBetweenAreNotSteps) {
  // Renumbered spans back to back: no room for the skipped numbers.
  const StepMetrics m = measured({{5, 0, 100}, {9, 100, 200}, {10, 200, 300}});
  EXPECT_EQ(m.ranks[0].window.steps, 3);
  EXPECT_EQ(m.job_step_time_ns, 100);
}

TEST(ProfilerStepWindows, ALastStepCutByTheProfilersStopIsNotAStep) {
  // Stopped 40 ns into step #3 (was 340 / 4 = 85 ns): it holds the first 3 of a step's 8 ops,
  // not op7, which closes the others.
  const StepMetrics m = measured({{0, 0, 100, true, 7},
                                  {1, 100, 200, true, 7},
                                  {2, 200, 300, true, 7},
                                  {3, 300, 340, true, 2}});
  EXPECT_EQ(m.ranks[0].window.steps, 3);
  EXPECT_EQ(m.ranks[0].window.end_ns, 300);
  EXPECT_EQ(m.job_step_time_ns, 100);
}

TEST(ProfilerStepWindows, AShortLastStepWithAllItsOpsIsAStep) {
  // An epoch's last, smaller batch: 45 ns, but it runs a step's 4 ops, op3 closing it as the
  // others (was cut by length alone: 300 / 3 = 100 ns).
  const StepMetrics m = measured({{0, 0, 100, true, 3},
                                  {1, 100, 200, true, 3},
                                  {2, 200, 300, true, 3},
                                  {3, 300, 345, true, 3}});
  EXPECT_EQ(m.ranks[0].window.steps, 4);
  EXPECT_EQ(m.ranks[0].window.end_ns, 345);
  EXPECT_DOUBLE_EQ(m.job_step_time_ns, 345.0 / 4);
}

TEST(ProfilerStepWindows, AFirstStepCutByTheProfilersStartIsNotAStep) {
  // Started 70 ns into step #0: its last 3 of 8 ops, not op0, which opens the others.
  const StepMetrics m = measured({{0, 70, 100, true, 2, 5},
                                  {1, 100, 200, true, 7},
                                  {2, 200, 300, true, 7},
                                  {3, 300, 400, true, 7}});
  EXPECT_EQ(m.ranks[0].window.steps, 3);
  EXPECT_EQ(m.ranks[0].window.start_ns, 100);
  EXPECT_EQ(m.job_step_time_ns, 100);
}

TEST(ProfilerStepWindows, ALongFirstStepAndAShortInteriorStepStay) {
  // Warm-up makes the first step long; only an edge step under half the median is a cut one.
  const StepMetrics m = measured({{0, 0, 250}, {1, 250, 290}, {2, 290, 390}, {3, 390, 490}});
  EXPECT_EQ(m.ranks[0].window.steps, 4);
  EXPECT_DOUBLE_EQ(m.job_step_time_ns, 490.0 / 4);
}

}  // namespace
}  // namespace powertrain::sim
