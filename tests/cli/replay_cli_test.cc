// End-to-end tests of `powertrain replay` and `powertrain whatif` (issue 4).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.h"

namespace powertrain {
namespace {

namespace fs = std::filesystem;
using testing_cli::CliRun;
using testing_cli::slurp;

fs::path traces_dir() {
  return fs::path(POWERTRAIN_SOURCE_DIR) / ".." / "shared" / "data" / "traces";
}

class ReplayCliTest : public testing_cli::CliTest {
 protected:
  void expect_error(const CliRun& r, const std::string& part) {
    EXPECT_NE(r.exit_code, 0);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(part), std::string::npos) << "missing '" << part << "' in " << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "out")) << "partial output left behind";
  }
};

TEST_F(ReplayCliTest, DlrmEightRanksReplayWithCollectivesJoined) {
  const fs::path tarball = traces_dir() / "param" / "dlrm_kineto_8ranks.tar.gz";
  if (!fs::exists(tarball)) GTEST_SKIP() << "real data absent: " << tarball;
  const CliRun r = run({"replay", tarball.string(), "--out", (dir_ / "out").string(), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json summary = nlohmann::json::parse(slurp(dir_ / "out" / "summary.json"));
  ASSERT_EQ(summary["ranks"].size(), 8u);
  for (const auto& rank : summary["ranks"]) {
    const double input = rank["input_step_s"], replayed = rank["replay_step_s"];
    EXPECT_NEAR(replayed / input, 1.0, 0.02) << rank["rank"];
  }
  EXPECT_GT(summary["job"]["collectives_joined"].get<int>(), 0);
  EXPECT_LE(summary["job"]["collective_end_spread_replay_s"].get<double>(), 10e-6);
  EXPECT_LE(summary["job"]["max_breakdown_error_pp"].get<double>(), 2.0);
  EXPECT_LE(summary["job"]["max_utilization_error_pp"].get<double>(), 2.0);
  EXPECT_EQ(summary["energy_modelled"]["gpu"], "a100-sxm");
  EXPECT_TRUE(fs::exists(dir_ / "out" / "replay_trace.json"));
}

TEST_F(ReplayCliTest, WhatIfScalesTheStep) {
  const fs::path trace = traces_dir() / "param" / "resnet_kineto.json.gz";
  if (!fs::exists(trace)) GTEST_SKIP() << "real data absent: " << trace;
  const CliRun r = run(
      {"whatif", trace.string(), "--scale", "all=2", "--out", (dir_ / "out").string(), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json summary = nlohmann::json::parse(slurp(dir_ / "out" / "summary.json"));
  const double replayed = summary["job"]["replay_step_s"],
               what_if = summary["job"]["what_if_step_s"];
  EXPECT_NEAR(what_if / replayed, 2.0, 2e-3);
}

TEST_F(ReplayCliTest, WhatIfRestagesTheLayersOfARealTrace) {
  const fs::path trace = traces_dir() / "tracelens" / "b200_eager_rank0.json.gz";
  if (!fs::exists(trace)) GTEST_SKIP() << "real data absent: " << trace;
  const CliRun r = run({"whatif", trace.string(), "--layers", "72", "--pp", "2", "--out",
                        (dir_ / "out").string(), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("36 found by module annotations"), std::string::npos) << r.out;
  const nlohmann::json summary = nlohmann::json::parse(slurp(dir_ / "out" / "summary.json"));
  const nlohmann::json& restage = summary["restage"];
  EXPECT_EQ(restage["input"]["layers"], 36);
  EXPECT_EQ(restage["what_if"]["layers"], 72);
  EXPECT_EQ(restage["what_if"]["stages"], 2);
  ASSERT_EQ(restage["stages"].size(), 2u);
  EXPECT_EQ(restage["stages"][0]["layers"], 36);
  EXPECT_NEAR(restage["rebuild_error_percent"].get<double>(), 0.0, 0.5);
  EXPECT_GT(summary["job"]["what_if_step_s"].get<double>(),
            summary["job"]["replay_step_s"].get<double>());
  // Without repeated layers there is nothing to re-stage: one clear line.
  const fs::path small = traces_dir() / "hta" / "cuda_event_sync.json.gz";
  fs::remove_all(dir_ / "out");
  expect_error(
      run({"whatif", small.string(), "--pp", "2", "--out", (dir_ / "out").string(), "--quiet"}),
      "no repeated block");
}

TEST_F(ReplayCliTest, BadInputGivesOneLineAndNoOutput) {
  const fs::path out = dir_ / "out";
  expect_error(run({"replay", (dir_ / "missing.json").string(), "--out", out.string(), "--quiet"}),
               "missing.json");
  std::ofstream(dir_ / "bad.json") << "{\"traceEvents\": [ {\"ph\": \"X\", ";
  expect_error(run({"replay", (dir_ / "bad.json").string(), "--out", out.string(), "--quiet"}),
               "bad.json");
  // A gzip header followed by garbage: corrupt / truncated stream.
  std::ofstream(dir_ / "cut.json.gz", std::ios::binary) << std::string("\x1f\x8b\x08\x00junk", 8);
  expect_error(run({"replay", (dir_ / "cut.json.gz").string(), "--out", out.string(), "--quiet"}),
               "cut.json.gz");
  std::ofstream(dir_ / "ok.json") << "{\"traceEvents\": []}";
  expect_error(run({"whatif", (dir_ / "ok.json").string(), "--scale", "warp=2", "--out",
                    out.string(), "--quiet"}),
               "unknown class 'warp'");
}

}  // namespace
}  // namespace powertrain
