// End-to-end tests of `powertrain cluster`: bad input fails with one line and leaves no output;
// good runs write cluster.csv, summary.json and cluster.svg and print a labelled table.
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
#include "core/csv.h"

namespace powertrain {
namespace {

namespace fs = std::filesystem;

using RunResult = testing_cli::CliRun;
using testing_cli::slurp;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Two stages with three clocks each; slower clocks cost less energy.
const char* const kProfile =
    "stage,instruction,frequency,time,energy\n"
    "0,forward,1410,0.010,2.00\n0,forward,1200,0.011,1.80\n0,forward,1000,0.013,1.70\n"
    "0,backward,1410,0.020,4.00\n0,backward,1200,0.022,3.60\n0,backward,1000,0.026,3.40\n"
    "1,forward,1410,0.012,2.40\n1,forward,1200,0.013,2.20\n1,forward,1000,0.016,2.05\n"
    "1,backward,1410,0.024,4.80\n1,backward,1200,0.027,4.30\n1,backward,1000,0.031,4.10\n";

class ClusterCliTest : public testing_cli::CliTest {
 protected:
  void SetUp() override {
    testing_cli::CliTest::SetUp();
    profile_ = dir_ / "profile.csv";
    std::ofstream(profile_) << kProfile;
  }

  // A valid run on the small profile: 8 and 16 GPUs of tp 2 x pp 2, 16 samples per iteration,
  // with flags replaced (or added) by `overrides`; an empty value adds a bare flag.
  RunResult run_cluster(const std::vector<std::pair<std::string, std::string>>& overrides = {}) {
    std::vector<std::pair<std::string, std::string>> flags = {
        {"--profile", profile_.string()},
        {"--p-blocking-w", "100"},
        {"--tp", "2"},
        {"--gpus", "8,16"},
        {"--global-batch", "16"},
        {"--slowdowns", "1,1.1,1.3"},
        {"--out", out_dir().string()},
    };
    for (const auto& [flag, value] : overrides) {
      auto it = std::find_if(flags.begin(), flags.end(),
                             [&](const auto& entry) { return entry.first == flag; });
      if (it == flags.end()) {
        flags.emplace_back(flag, value);
      } else {
        it->second = value;
      }
    }
    std::vector<std::string> args = {"cluster"};
    for (const auto& [name, text] : flags) {
      args.push_back(name);
      if (!text.empty()) args.push_back(text);
    }
    return run(args);
  }
  RunResult run_cluster(const std::string& flag, const std::string& value) {
    return run_cluster({{flag, value}});
  }

  // Without one flag entirely.
  RunResult run_without(const std::string& flag) {
    std::vector<std::string> args = {
        "cluster",        "--profile", profile_.string(), "--p-blocking-w",  "100", "--gpus", "8",
        "--global-batch", "16",        "--out",           out_dir().string()};
    for (std::size_t i = 1; i < args.size(); i += 2) {
      if (args[i] == flag) {
        args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
        break;
      }
    }
    return run(args);
  }

  fs::path out_dir() const { return dir_ / "out"; }

  // Non-zero exit, exactly one line on stderr with the command's prefix and every part, and no
  // output directory or staging leftovers.
  void expect_failure(const RunResult& result, const std::vector<std::string>& parts) {
    EXPECT_NE(result.exit_code, 0) << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    EXPECT_EQ(result.err.rfind("powertrain cluster: error: ", 0), 0u) << result.err;
    for (const std::string& part : parts) {
      EXPECT_TRUE(contains(result.err, part)) << "missing '" << part << "' in: " << result.err;
    }
    EXPECT_FALSE(fs::exists(out_dir()));
    for (const auto& entry : fs::directory_iterator(dir_)) {
      EXPECT_FALSE(contains(entry.path().filename().string(), ".partial-")) << entry.path();
    }
  }

  fs::path profile_;
};

TEST_F(ClusterCliTest, GoodRunWritesEverythingAndPrintsALabelledTable) {
  const RunResult result = run_cluster();
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto csv = core::read_csv_file((out_dir() / "cluster.csv").string());
  ASSERT_TRUE(csv.ok()) << csv.error().message;
  EXPECT_EQ(csv->rows.size(), 6u);  // 2 configurations x 3 slowdowns
  EXPECT_EQ(csv->header.front(), "gpus");
  EXPECT_TRUE(csv->column("baseline_cluster_energy_j").has_value());
  EXPECT_TRUE(csv->column("savings_percent").has_value());
  const auto summary = nlohmann::json::parse(slurp(out_dir() / "summary.json"));
  EXPECT_EQ(summary["configs"].size(), 2u);
  EXPECT_EQ(summary["configs"][0]["pipelines"], 2);                  // 8 / (2 x 2)
  EXPECT_EQ(summary["configs"][0]["microbatches_per_pipeline"], 8);  // 16 / 2
  EXPECT_EQ(summary["configs"][1]["microbatches_per_pipeline"], 4);
  EXPECT_EQ(slurp(out_dir() / "cluster.svg").rfind("<svg", 0), 0u);
  // The table names what its numbers are.
  for (const char* part : {"8 GPUs = 2 pipelines", "16 GPUs = 4 pipelines", "planned", "measured",
                           "per iteration of the whole cluster", "base J", "saved %", "intrins %",
                           "extrins %", "EnvPipe %", "T*/T_min"}) {
    EXPECT_TRUE(contains(result.out, part)) << part << " missing in:\n" << result.out;
  }
  // Progress on stderr, one line per configuration.
  EXPECT_TRUE(contains(result.err, "[1/2] 8 GPUs")) << result.err;
  EXPECT_TRUE(contains(result.err, "[2/2] 16 GPUs")) << result.err;
  EXPECT_EQ(run_cluster("--quiet", "").exit_code, 0);
}

TEST_F(ClusterCliTest, NonDivisibleConfigurations) {
  expect_failure(run_cluster("--gpus", "8,10"), {"10 GPUs", "whole number of pipelines", "4"});
  // 10 samples: 5 per pipeline for 8 GPUs (2 pipelines), but 16 GPUs are 4 pipelines.
  expect_failure(run_cluster("--global-batch", "10"), {"global batch 10", "4 pipelines"});
  expect_failure(run_cluster("--microbatch-size", "3"), {"microbatches of 3"});
  expect_failure(run_cluster("--gpus", "4"), {"4 GPUs = 1 pipeline", "at least 2"});
}

TEST_F(ClusterCliTest, MalformedNumbers) {
  expect_failure(run_cluster("--gpus", "8,,16"), {"--gpus", "positive integer", "8,,16"});
  expect_failure(run_cluster("--gpus", "eight"), {"--gpus", "'eight'"});
  expect_failure(run_cluster("--gpus", "-8"), {"--gpus", "'-8'"});
  expect_failure(run_cluster("--tp", "1.5"), {"--tp", "'1.5'"});
  expect_failure(run_cluster("--global-batch", "0"), {"--global-batch", "'0'"});
  expect_failure(run_cluster("--slowdowns", "1.1,x"), {"--slowdowns", "'x'"});
  expect_failure(run_cluster("--slowdowns", "0.9"), {"--slowdowns", "from 1", "0.9"});
  expect_failure(run_cluster("--slowdowns", "nan"), {"--slowdowns", "'nan'"});
  expect_failure(run_cluster("--p-blocking-w", "-5"), {"--p-blocking-w", "-5"});
  expect_failure(run_cluster("--unit-time-s", "0"), {"--unit-time-s"});
  expect_failure(run_cluster("--schedule", "zigzag"), {"--schedule", "'zigzag'"});
}

TEST_F(ClusterCliTest, MissingRequiredFlags) {
  expect_failure(run_without("--profile"), {"--profile", "required"});
  expect_failure(run_without("--p-blocking-w"), {"--p-blocking-w", "required"});
  expect_failure(run_without("--gpus"), {"--gpus", "required"});
  expect_failure(run_without("--global-batch"), {"--global-batch", "required"});
}

TEST_F(ClusterCliTest, BadProfileOrStages) {
  expect_failure(run_cluster("--profile", (dir_ / "missing.csv").string()),
                 {"missing.csv", "cannot open"});
  // Three stages for a two-stage profile (12 GPUs of tp 2 = two pipelines).
  expect_failure(run_cluster({{"--pp", "3"}, {"--gpus", "12"}}), {"has 2 stage(s)", "--pp 3"});
}

TEST_F(ClusterCliTest, OutputIsARegularFileAndFailuresKeepPreviousOutput) {
  std::ofstream(out_dir()) << "precious\n";
  const RunResult blocked = run_cluster();
  EXPECT_NE(blocked.exit_code, 0);
  EXPECT_TRUE(contains(blocked.err, out_dir().string())) << blocked.err;
  EXPECT_EQ(slurp(out_dir()), "precious\n");
  fs::remove(out_dir());

  ASSERT_EQ(run_cluster().exit_code, 0);
  const std::string before = slurp(out_dir() / "cluster.csv");
  const RunResult failed = run_cluster("--gpus", "7");
  EXPECT_NE(failed.exit_code, 0);
  EXPECT_EQ(slurp(out_dir() / "cluster.csv"), before);
}

TEST_F(ClusterCliTest, RealA100ProfileAt8192Gpus) {
  const fs::path profile = fs::path(POWERTRAIN_SOURCE_DIR) / ".." / "shared" / "data" / "perseus" /
                           "gpt3-175b+a100_sxm_bf16.csv";
  if (!fs::exists(profile)) GTEST_SKIP() << "real data not found at " << profile;
  // 8192 GPUs = 128 pipelines x 12 microbatches: the fastest Table 5 row to solve.
  const RunResult result =
      run({"cluster", "--profile", profile.string(), "--p-blocking-w", "83.64", "--unit-time-s",
           "0.001", "--pp", "8", "--tp", "8", "--gpus", "8192", "--global-batch", "1536",
           "--quantization", "floor", "--out", out_dir().string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(contains(result.out, "128 pipelines x (TP8 x PP8), 12 microbatches")) << result.out;
  EXPECT_TRUE(contains(result.out, "quantization  floor")) << result.out;
  // Perseus Table 6 says 15.20 %: the reference fit reproduces it (the global fit gave 15.76 %).
  EXPECT_TRUE(contains(result.out, "saves 15.20 % per pipeline")) << result.out;
  EXPECT_TRUE(contains(result.out, "T*/T_min = 1.227")) << result.out;
  EXPECT_TRUE(contains(result.out, "base MJ")) << result.out;
}

}  // namespace
}  // namespace powertrain
