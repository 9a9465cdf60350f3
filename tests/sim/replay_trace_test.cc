// The replayed Chrome trace: valid JSON, one process per rank, threads and streams, exact times.
#include "sim/replay_trace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "graph/graph_builder.h"
#include "graph/trace_builder.h"

namespace powertrain::sim {
namespace {

graph::ExecutionGraph two_rank_graph() {
  graph::RankTraceBuilder r0(0, 2), r1(1, 2);
  for (graph::RankTraceBuilder* b : {&r0, &r1}) {
    b->op("aten::mm \"quoted\"", 1'000, 20'000);
    b->runtime("cudaLaunchKernel", 2'000, 5'000, 1);
    b->kernel("sgemm", 6'500, 10'000, 1);
    b->runtime("cudaLaunchKernel", 8'000, 5'000, 2);
    b->nccl_kernel("ncclKernel_AllReduce", 16'500, 3'000, 2, 20);
  }
  auto graph = graph::build_execution_graph({r0.build(), r1.build()});
  EXPECT_TRUE(graph.ok());
  return std::move(graph).value();
}

TEST(ReplayChromeTrace, ProcessesThreadsAndExactMicroseconds) {
  const graph::ExecutionGraph g = two_rank_graph();
  const ReplayResult r = replay(g);
  const nlohmann::json doc = nlohmann::json::parse(replay_chrome_trace(g, r));
  EXPECT_EQ(doc["otherData"]["time_origin_ns"], 1000);
  int processes = 0, threads = 0, spans = 0;
  bool saw_kernel = false, saw_parent = false;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") {
      ++processes;
      EXPECT_EQ(e["args"]["name"], "rank " + std::to_string(e["pid"].get<int>()) + " (replay)");
    }
    if (e["ph"] == "M" && e["name"] == "thread_name") ++threads;
    if (e["ph"] != "X") continue;
    ++spans;
    if (e["name"] == "sgemm" && e["pid"] == 1) {
      saw_kernel = true;
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 5.5);  // (6500 − 1000) ns
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 10.0);
      EXPECT_EQ(e["cat"], "kernel");
    }
    if (e["name"] == "aten::mm \"quoted\"") {
      saw_parent = true;
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 0.0);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 20.0);
    }
  }
  EXPECT_EQ(processes, 2);
  EXPECT_EQ(threads, 6);  // per rank: a host thread and two streams
  EXPECT_EQ(spans, g.task_count() + static_cast<int>(g.parents.size()));
  EXPECT_TRUE(saw_kernel);
  EXPECT_TRUE(saw_parent);
}

TEST(ReplayChromeTrace, WritesTheFileAtomically) {
  const graph::ExecutionGraph g = two_rank_graph();
  const ReplayResult r = replay(g);
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("powertrain_replay_trace_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path path = dir / "replay.json";
  ChromeTraceOptions options;
  options.include_parents = false;
  ASSERT_TRUE(write_replay_chrome_trace(path, g, r, options).ok());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), replay_chrome_trace(g, r, options));
  EXPECT_FALSE(write_replay_chrome_trace(dir / "missing" / "x.json", g, r).ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace powertrain::sim
