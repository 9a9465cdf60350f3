// The benchmark's synthetic Kineto traces must be traces the replay can reproduce: a benchmark
// that times a replay which stalls or diverges measures the wrong path.
#include "../support/synthetic_trace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "replay/replay.h"

namespace powertrain::trace {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path =
      fs::temp_directory_path() / ("powertrain-synthetic-trace-test-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() {
    std::error_code error;
    fs::remove_all(path, error);
  }
};

replay::ReplayRun replay_synthetic(int world_size, bool relative_time, const TempDir& dir) {
  std::vector<std::string> paths;
  for (int rank = 0; rank < world_size; ++rank) {
    SyntheticTraceSpec spec;
    spec.rank = rank;
    spec.world_size = world_size;
    spec.seed = 1;  // one job: the same seed on every rank
    spec.target_events = 30'000;
    spec.relative_time = relative_time;
    const fs::path path = dir.path / ("rank" + std::to_string(rank) + ".json");
    std::ofstream(path, std::ios::binary) << make_synthetic_kineto_trace(spec);
    paths.push_back(path.string());
  }
  replay::Options options;
  options.gpu = device::find_gpu(device::kDefaultGpu).value();
  core::Result<replay::ReplayRun> run = replay::replay(paths, options);
  EXPECT_TRUE(run.ok()) << run.error().message;
  return std::move(run).value();
}

TEST(SyntheticTraceReplay, GpuWithoutClockTableIsAnError) {
  TempDir dir;
  SyntheticTraceSpec spec;
  spec.target_events = 1'000;
  const fs::path path = dir.path / "rank0.json";
  std::ofstream(path, std::ios::binary) << make_synthetic_kineto_trace(spec);
  core::Result<replay::ReplayRun> run = replay::replay({path.string()}, replay::Options{});
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.error().message.find("clock table"), std::string::npos) << run.error().message;
}

class SyntheticTraceReplay : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(SyntheticTraceReplay, IsFaithful) {
  const auto [world_size, relative_time] = GetParam();
  TempDir dir;
  const replay::ReplayRun run = replay_synthetic(world_size, relative_time, dir);
  std::string reasons;
  for (const sim::VerdictReason& reason : run.verdict.reasons) reasons += reason.text + "; ";
  EXPECT_TRUE(run.verdict.faithful) << reasons;
}

INSTANTIATE_TEST_SUITE_P(Shapes, SyntheticTraceReplay,
                         ::testing::Combine(::testing::Values(1, 2, 4, 8), ::testing::Bool()));

}  // namespace
}  // namespace powertrain::trace
