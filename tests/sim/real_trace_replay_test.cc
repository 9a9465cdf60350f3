// Replays the real Kineto traces in ../shared/data/traces unchanged and checks the accuracy
// targets: step time within 2 %, breakdown and utilization within 2 percentage points, and for the
// 8 DLRM ranks every collective ending on all ranks within 10 µs. Skips when the data is absent.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "graph/graph_builder.h"
#include "sim/metrics.h"
#include "sim/simulator.h"
#include "trace/kineto_reader.h"

namespace powertrain::sim {
namespace {

namespace fs = std::filesystem;

const fs::path kTraces = fs::path(POWERTRAIN_SOURCE_DIR) / ".." / "shared" / "data" / "traces";

struct Case {
  const char* path;  // relative to kTraces
  int ranks;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.path; }

class RealTraceReplay : public ::testing::TestWithParam<Case> {};

TEST_P(RealTraceReplay, ReproducesTheInput) {
  const fs::path path = kTraces / GetParam().path;
  if (!fs::exists(path)) GTEST_SKIP() << path << " is absent";
  auto traces = trace::read_kineto_traces({path.string()});
  ASSERT_TRUE(traces.ok()) << traces.error().message;
  ASSERT_EQ(static_cast<int>(traces->size()), GetParam().ranks);
  auto graph = graph::build_execution_graph(*traces);
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  const ReplayResult r = replay(*graph);
  EXPECT_EQ(r.outcome, ReplayOutcome::kComplete);
  const StepMetrics in = metrics_of_input(*graph);
  const StepMetrics out = metrics_of_replay(*graph, r);
  const ReplayAccuracy a = compare_replay(*graph, r, in, out);
  std::printf(
      "%s: %d ranks, %d tasks, %lld runtime ops (%lld inferred, %lld dropped), %lld joined "
      "collectives\n  step time measured %.3f ms, replayed %.3f ms (%+.3f %%); breakdown error "
      "%.3f pp; utilization error %.3f pp (bins %.3f pp); kernel start/end MAE %.1f/%.1f µs; "
      "collective end spread measured %.1f µs, replayed %.1f µs\n",
      GetParam().path, GetParam().ranks, graph->task_count(),
      static_cast<long long>(graph->runtime_ops.size()),
      static_cast<long long>(graph->stats.inferred_runtime_ops),
      static_cast<long long>(graph->stats.dropped_contradicted),
      static_cast<long long>(graph->stats.collective_groups_joined), in.job_step_time_ns / 1e6,
      out.job_step_time_ns / 1e6, a.job_step_time_error_pct, a.max_breakdown_error_pp,
      a.max_utilization_error_pp, a.utilization_bin_mae_pp, a.kernel_start_mae_ns / 1e3,
      a.kernel_end_mae_ns / 1e3, a.max_collective_end_spread_input_ns / 1e3,
      a.max_collective_end_spread_replay_ns / 1e3);
  for (const trace::TraceWarning& w : graph->warnings) {
    std::printf("  graph warning (%lld): %s — %s\n", static_cast<long long>(w.count),
                w.kind.c_str(), w.example.c_str());
  }
  for (const trace::TraceWarning& w : r.warnings) {
    std::printf("  replay warning (%lld): %s — %s\n", static_cast<long long>(w.count),
                w.kind.c_str(), w.example.c_str());
  }
  for (double error : a.rank_step_time_error_pct) EXPECT_LE(std::abs(error), 2.0);
  EXPECT_LE(a.max_breakdown_error_pp, 2.0);
  EXPECT_LE(a.max_utilization_error_pp, 2.0);
  if (GetParam().ranks > 1) {
    EXPECT_GT(graph->stats.collective_groups_joined, 0);
    EXPECT_LE(a.max_collective_end_spread_replay_ns, 10'000);
  }
}

INSTANTIATE_TEST_SUITE_P(Data, RealTraceReplay,
                         ::testing::Values(Case{"param/dlrm_kineto_8ranks.tar.gz", 8},
                                           Case{"param/resnet_kineto.json.gz", 1},
                                           Case{"hta/nccl_data.json.gz", 1},
                                           Case{"hta/alexnet_critical_path.json.gz", 1},
                                           Case{"hta/simple_add.json.gz", 1},
                                           Case{"hta/cuda_event_sync.json.gz", 1},
                                           Case{"hta/cuda_event_sync_multi_stream.json.gz", 1},
                                           Case{"tracelens/b200_eager_rank0.json.gz", 1}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string name = fs::path(info.param.path).filename().string();
                           name = name.substr(0, name.find('.'));
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace powertrain::sim
