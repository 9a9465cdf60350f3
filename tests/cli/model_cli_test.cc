// End-to-end tests of the model-based subcommands: profile, partition, calibrate and
// frontier --model. Bad input fails with one line and a non-zero exit; good runs say what their
// numbers are.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.h"

namespace powertrain {
namespace {

namespace fs = std::filesystem;
using testing_cli::CliRun;
using testing_cli::slurp;

class ModelCliTest : public testing_cli::CliTest {
 protected:
  static void expect_error(const CliRun& r, const std::string& command, const std::string& part) {
    EXPECT_NE(r.exit_code, 0);
    EXPECT_EQ(r.err.rfind("powertrain " + command + ": error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(part), std::string::npos) << "missing '" << part << "' in " << r.err;
  }
};

TEST_F(ModelCliTest, ProfileWritesAPerseusCsvForEveryClock) {
  const fs::path csv = dir_ / "p.csv";
  const CliRun r = run(
      {"profile", "--model", "gpt3-1.3b", "--gpu", "a100-sxm", "--pp", "4", "--out", csv.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = slurp(csv);
  EXPECT_EQ(text.rfind("stage,instruction,frequency,time,energy\n", 0), 0u);
  // 4 stages x (forward, backward) x 81 clocks + header.
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4 * 2 * 81 + 1);
  EXPECT_NE(r.out.find("modelled"), std::string::npos);
  EXPECT_NE(r.out.find("memory"), std::string::npos);
}

TEST_F(ModelCliTest, UnknownNamesListTheKnownOnes) {
  expect_error(run({"profile", "--model", "gpt5", "--gpu", "a100-sxm"}), "profile", "llama3.3-70b");
  expect_error(run({"profile", "--model", "gpt3-1.3b", "--gpu", "b200"}), "profile", "h100-sxm");
  expect_error(
      run({"frontier", "--model", "gpt3-1.3b", "--gpu", "b200", "--out", (dir_ / "o").string()}),
      "frontier", "a100-sxm");
  EXPECT_FALSE(fs::exists(dir_ / "o"));
}

TEST_F(ModelCliTest, ImpossibleParallelConfigsAreRefusedWithTheReason) {
  expect_error(run({"profile", "--model", "gpt3-175b", "--tp", "7"}), "profile", "must divide");
  expect_error(run({"partition", "--model", "gpt3-1.3b", "--pp", "30"}), "partition", "exceeds");
  expect_error(run({"profile", "--model", "gpt3-1.3b", "--partition", "[0,5,25]", "--pp", "4"}),
               "profile", "--partition");
}

TEST_F(ModelCliTest, PartitionPrintsUniformAndMinimumImbalance) {
  const CliRun r = run({"partition", "--model", "gpt3-1.3b", "--gpu", "a100-pcie", "--pp", "4",
                        "--microbatch-size", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("min-imbalance [0, 6, 12, 19, 25]  imbalance 1.167"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("uniform"), std::string::npos);
}

TEST_F(ModelCliTest, FrontierPlansFromTheBuiltInModel) {
  const fs::path out = dir_ / "plan";
  const CliRun r = run(
      {"frontier", "--model", "gpt3-1.3b", "--gpu", "a100-sxm", "--out", out.string(), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("profile modelled for gpt3-1.3b on a100-sxm"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(out / "frontier.csv"));
  EXPECT_TRUE(fs::exists(out / "baselines.csv"));
}

TEST_F(ModelCliTest, CalibratedParametersRoundTripThroughGpuParams) {
  const fs::path csv = dir_ / "m.csv";
  const fs::path params = dir_ / "params.json";
  ASSERT_EQ(run({"profile", "--model", "gpt3-1.3b", "--pp", "2", "--out", csv.string()}).exit_code,
            0);
  const CliRun fitted = run({"calibrate", "--profile", csv.string(), "--model", "gpt3-1.3b", "--pp",
                             "2", "--out", params.string()});
  ASSERT_EQ(fitted.exit_code, 0) << fitted.err;
  const std::string json = slurp(params);
  for (const char* field : {"\"matmul_efficiency\"", "\"backward_link_efficiency\"",
                            "\"voltage_knee_mhz\"", "\"power_limit_w\""})
    EXPECT_NE(json.find(field), std::string::npos) << field;
  const CliRun used =
      run({"profile", "--model", "gpt3-1.3b", "--pp", "2", "--gpu-params", params.string()});
  ASSERT_EQ(used.exit_code, 0) << used.err;
  EXPECT_NE(used.err.find("parameters from " + params.string()), std::string::npos) << used.err;
}

TEST_F(ModelCliTest, CalibrateTransferFromAnotherGpuPredictsWithoutRefitting) {
  // Leave one GPU out: parameters fitted on an A100 profile predict an A40 profile.
  const fs::path a100_csv = dir_ / "a100.csv";
  const fs::path a40_csv = dir_ / "a40.csv";
  const fs::path a100_params = dir_ / "a100.json";
  const fs::path a40_params = dir_ / "a40.json";
  ASSERT_EQ(
      run({"profile", "--model", "gpt3-1.3b", "--pp", "2", "--out", a100_csv.string()}).exit_code,
      0);
  ASSERT_EQ(run({"profile", "--model", "gpt3-1.3b", "--pp", "2", "--gpu", "a40", "--out",
                 a40_csv.string()})
                .exit_code,
            0);
  ASSERT_EQ(run({"calibrate", "--profile", a100_csv.string(), "--model", "gpt3-1.3b", "--pp", "2",
                 "--out", a100_params.string()})
                .exit_code,
            0);
  const CliRun carried =
      run({"calibrate", "--profile", a40_csv.string(), "--model", "gpt3-1.3b", "--pp", "2", "--gpu",
           "a40", "--transfer-from", a100_params.string(), "--out", a40_params.string()});
  ASSERT_EQ(carried.exit_code, 0) << carried.err;
  EXPECT_NE(carried.out.find("out of sample parameters fitted on a100-sxm"), std::string::npos)
      << carried.out;
  const std::string json = slurp(a40_params);
  for (const char* field : {"\"transfer\"", "\"from_gpu\"", "\"time_normalized_mape\""})
    EXPECT_NE(json.find(field), std::string::npos) << field;
  const fs::path bad = dir_ / "no_gpu.json";
  std::ofstream(bad) << "{\"params\": {}}";
  expect_error(run({"calibrate", "--profile", a40_csv.string(), "--model", "gpt3-1.3b", "--pp", "2",
                    "--gpu", "a40", "--transfer-from", bad.string()}),
               "calibrate", "\"gpu\" name");
}

TEST_F(ModelCliTest, CalibrateRefusesAProfileWithMoreStagesThanTheJob) {
  const fs::path csv = dir_ / "m.csv";
  ASSERT_EQ(run({"profile", "--model", "gpt3-1.3b", "--pp", "4", "--out", csv.string()}).exit_code,
            0);
  expect_error(run({"calibrate", "--profile", csv.string(), "--model", "gpt3-1.3b", "--pp", "2"}),
               "calibrate", "beyond the job's 2 pipeline stages");
  const fs::path params = dir_ / "bad.json";
  std::ofstream(params) << "{\"params\": {\"voltage_min\": 3}}";
  expect_error(run({"profile", "--model", "gpt3-1.3b", "--gpu-params", params.string()}), "profile",
               "voltage_min");
}

}  // namespace
}  // namespace powertrain
