// analyze counts steps as the replay does (issue 13): one source of truth, graph/step_windows.h.
// Spans written twice, a step without its span and a last step cut by the profiler's stop give
// the same step count and window in analyze's steps window as in the graph's step windows.
#include <gtest/gtest.h>

#include <string>

#include "analyze/analyze.h"
#include "graph/graph_builder.h"
#include "graph/trace_builder.h"
#include "sim/metrics.h"

namespace powertrain::analyze {
namespace {

trace::RankTrace messy_steps() {
  graph::RankTraceBuilder b;
  // #5 with a second #5 nested in it; #6 not written (a 100 ns gap); #7; #8 and #9 whole;
  // #10 cut 30 ns in, holding the first 2 of a step's 6 ops (op0 … op5).
  auto whole = [&](int n, std::int64_t start) {
    b.step(n, start, 100);
    for (int k = 0; k < 6; ++k) b.op("op" + std::to_string(k), start + 5 + 15 * k, 10);
  };
  whole(5, 0);
  b.step(5, 2, 96);
  whole(7, 200);
  whole(8, 300);
  whole(9, 400);
  b.step(10, 500, 30);
  b.op("op0", 505, 10);
  b.op("op1", 520, 10);
  return b.build();
}

TEST(AnalyzeStepWindows, StepsWindowCountsStepsAsTheReplayDoes) {
  const trace::RankTrace t = messy_steps();
  AnalyzeOptions options;
  options.window = WindowKind::kSteps;
  const RankAnalysis a = analyze_rank(t, options);
  auto g = graph::build_execution_graph({t});
  ASSERT_TRUE(g.ok());
  const sim::StepMetrics m = sim::metrics_of_input(*g);
  // By hand: steps #5..#9 (5 steps, #6 without a span) over [0, 500).
  EXPECT_EQ(m.ranks[0].window.steps, 5);
  EXPECT_EQ(a.window.steps, m.ranks[0].window.steps);
  EXPECT_EQ(a.window.start_ns, m.ranks[0].window.start_ns);
  EXPECT_EQ(a.window.end_ns, m.ranks[0].window.end_ns);
  EXPECT_EQ(a.window.start_ns, 0);
  EXPECT_EQ(a.window.end_ns, 500);
  // The step list holds the spans that are steps: #5 (the longer of the two), #7, #8, #9.
  ASSERT_EQ(a.steps.size(), 4u);
  EXPECT_EQ(a.steps.front(), (std::pair<std::int64_t, std::int64_t>{0, 100}));
  EXPECT_EQ(a.steps.back(), (std::pair<std::int64_t, std::int64_t>{400, 500}));
  // The reader's list still has every span (it reports what the file holds).
  EXPECT_EQ(t.step_starts_ns.size(), 6u);
}

}  // namespace
}  // namespace powertrain::analyze
