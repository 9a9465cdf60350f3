// replay::replay, the library entry of `powertrain replay` / `whatif`: checked against the steps
// it chains (read → graph → sim) done by hand, and against what-ifs with a known direction.
#include "replay/replay.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../support/synthetic_trace.h"
#include "graph/graph_builder.h"
#include "report/replay_report.h"
#include "trace/kineto_reader.h"

namespace powertrain::replay {
namespace {

namespace fs = std::filesystem;

class ReplayLibraryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("powertrain_replay_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    trace::SyntheticTraceSpec spec;
    spec.target_events = 3000;
    spec.ops_per_step = 100;
    std::ofstream(dir_ / "rank0.json") << trace::make_synthetic_kineto_trace(spec);
    std::ofstream(dir_ / "empty.json") << R"({"traceEvents": []})";
    gpu_ = *device::find_gpu("a100-sxm");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const char* name) const { return (dir_ / name).string(); }

  fs::path dir_;
  device::GpuSpec gpu_;
};

TEST_F(ReplayLibraryTest, UnchangedReplayIsTheHandChainedPipeline) {
  Options options;
  options.gpu = gpu_;
  auto run = replay({path("rank0.json")}, options);
  ASSERT_TRUE(run) << run.error().message;
  EXPECT_FALSE(run->changed);
  EXPECT_EQ(run->changed_tasks, 0);

  auto traces = trace::read_kineto_traces({path("rank0.json")});
  ASSERT_TRUE(traces);
  auto graph = graph::build_execution_graph(*traces);
  ASSERT_TRUE(graph);
  const sim::ReplayResult result = sim::replay(*graph);
  const sim::StepMetrics metrics = sim::metrics_of_replay(*graph, result);
  EXPECT_EQ(run->replayed.job_step_time_ns, metrics.job_step_time_ns);
  EXPECT_EQ(run->result_metrics.job_step_time_ns, metrics.job_step_time_ns);
  EXPECT_EQ(run->input.job_step_time_ns, sim::metrics_of_input(*graph).job_step_time_ns);
  const sim::EnergyReport energy = sim::replay_energy(*graph, result, metrics, gpu_);
  EXPECT_EQ(run->energy.total_j, energy.total_j);
  EXPECT_GT(run->energy.total_j, 0.0);
  std::size_t events = 0;
  for (const auto& t : *traces) events += t.events.size();
  EXPECT_EQ(run->traces.events, events);

  // replay_graph is the same unchanged replay.
  const Replayed again = replay_graph(*graph, gpu_);
  EXPECT_EQ(again.metrics.job_step_time_ns, metrics.job_step_time_ns);
  EXPECT_EQ(again.energy.total_j, energy.total_j);
}

TEST_F(ReplayLibraryTest, HalvingEveryDurationShortensTheStep) {
  Options options;
  options.gpu = gpu_;
  auto scaling = whatif::parse_duration_scaling("all=0.5");
  ASSERT_TRUE(scaling);
  options.scalings.push_back(*scaling);
  auto run = replay({path("rank0.json")}, options);
  ASSERT_TRUE(run) << run.error().message;
  EXPECT_TRUE(run->changed);
  EXPECT_GT(run->changed_tasks, 0);
  EXPECT_LT(run->result_metrics.job_step_time_ns, run->replayed.job_step_time_ns);
  // The measured baseline is not touched by the what-if.
  EXPECT_GT(run->input.job_step_time_ns, 0.0);
}

TEST_F(ReplayLibraryTest, ProgressLinesAndEmptyTraceError) {
  std::vector<std::string> lines;
  Options options;
  options.gpu = gpu_;
  auto run = replay({path("empty.json")}, options,
                    [&](const std::string& line) { lines.push_back(line); });
  ASSERT_FALSE(run);
  EXPECT_EQ(run.error().message,
            path("empty.json") +
                ": no duration events to replay (traceEvents is empty or holds only metadata)");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "reading 1 path(s) ...");
  // Without require_events an empty trace reads fine (analyze and diff accept it).
  auto loaded = read_traces({path("empty.json")});
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_EQ(loaded->events, 0u);
}

TEST_F(ReplayLibraryTest, SummaryEchoesTheRequest) {
  Options options;
  options.gpu = gpu_;
  auto run = replay({path("rank0.json")}, options);
  ASSERT_TRUE(run);
  report::ReplayRequest request;
  request.command = "replay";
  request.traces = {path("rank0.json")};
  const auto doc = nlohmann::json::parse(report::replay_summary_json(*run, request));
  EXPECT_EQ(doc["traces"][0], path("rank0.json"));
  EXPECT_EQ(doc["ranks"].size(), run->graph.ranks.size());
  EXPECT_DOUBLE_EQ(doc["job"]["replay_step_s"].get<double>(),
                   run->replayed.job_step_time_ns * 1e-9);
  EXPECT_EQ(doc["energy_modelled"]["timeline"], "replay");
  EXPECT_FALSE(doc["job"].contains("what_if_step_s"));
}

}  // namespace
}  // namespace powertrain::replay
