// A million-event synthetic job builds and replays exactly. Speed is measured in
// bench/replay_bench.cc, not asserted here.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "../support/synthetic_job.h"
#include "graph/graph_builder.h"
#include "sim/metrics.h"
#include "sim/simulator.h"

namespace powertrain::sim {
namespace {

TEST(ReplayScale, BuildAndReplayAMillionEventsExactly) {
  test_support::SyntheticJobSpec spec;
  spec.ranks = 8;
  spec.steps = 36;
  spec.layers = 32;
  spec.kernels_per_layer = 12;
  const std::vector<trace::RankTrace> traces = test_support::make_synthetic_job(spec);
  std::int64_t events = 0;
  for (const trace::RankTrace& t : traces) events += static_cast<std::int64_t>(t.events.size());
  ASSERT_GT(events, 1'000'000);

  const auto t0 = std::chrono::steady_clock::now();
  auto graph = graph::build_execution_graph(traces);
  ASSERT_TRUE(graph.ok());
  const auto t1 = std::chrono::steady_clock::now();
  const ReplayResult r = replay(*graph);
  const auto t2 = std::chrono::steady_clock::now();
  ASSERT_EQ(r.outcome, ReplayOutcome::kComplete);
  EXPECT_EQ(compare_replay(*graph, r, metrics_of_input(*graph), metrics_of_replay(*graph, r))
                .job_step_time_error_pct,
            0.0);

  const double build_s = std::chrono::duration<double>(t1 - t0).count();
  const double replay_s = std::chrono::duration<double>(t2 - t1).count();
  const double rate = static_cast<double>(events) / (build_s + replay_s);
  std::printf("%lld events, %d tasks, %zu edges: build %.3f s, replay %.3f s, %.2f M events/s\n",
              static_cast<long long>(events), graph->task_count(), graph->edge_dst.size(), build_s,
              replay_s, rate / 1e6);
}

}  // namespace
}  // namespace powertrain::sim
