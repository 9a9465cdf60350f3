// `powertrain measure` with the fake NVML (fast windows): energy = fake power x window, cooldown
// to a temperature, the clock locked and reset, the NVML-missing line, early exits.
#include <cstdlib>
#include <fstream>
#include <regex>

#include "cli_runner.h"

namespace powertrain::testing_cli {
namespace {

class MeasureCliTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    ::setenv("POWERTRAIN_NVML_LIBRARY", POWERTRAIN_FAKE_NVML_PATH, 1);
    ::setenv("POWERTRAIN_FAKE_NVML_LOG", (dir_ / "nvml.log").c_str(), 1);
  }
  void TearDown() override {
    for (const char* name :
         {"POWERTRAIN_NVML_LIBRARY", "POWERTRAIN_FAKE_NVML_LOG", "POWERTRAIN_FAKE_NVML_TEMP_C",
          "POWERTRAIN_FAKE_NVML_COOL_TAU_S", "POWERTRAIN_FAKE_NVML_NO_ENERGY"})
      ::unsetenv(name);
    CliTest::TearDown();
  }
};

// "measured 0.300 s, 41.250 J" of run `n`.
std::pair<double, double> run_numbers(const std::string& out, int n) {
  std::smatch m;
  const std::regex re("run " + std::to_string(n) + ": .*measured ([0-9.]+) s, ([0-9.]+) J");
  EXPECT_TRUE(std::regex_search(out, m, re)) << out;
  return {std::stod(m[1]), std::stod(m[2])};
}

TEST_F(MeasureCliTest, EnergyOfALockedClockWindow) {
  auto r = run({"measure", "--warmup-s", "0.05", "--window-s", "0.3", "--cooldown-s", "0.02",
                "--repeats", "2", "--clock-mhz", "705", "--out", (dir_ / "m").string(), "--",
                "sleep", "30"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int n : {1, 2}) {
    auto [window_s, energy_j] = run_numbers(r.out, n);
    EXPECT_NEAR(window_s, 0.3, 0.03);
    // Fake power at 705 MHz: 50 + 350 x 0.5^2 = 137.5 W.
    EXPECT_NEAR(energy_j / window_s, 137.5, 1.0);
  }
  EXPECT_NE(r.out.find("(energy counter)"), std::string::npos);
  const std::string log = slurp(dir_ / "nvml.log");
  EXPECT_NE(log.find("nvmlDeviceSetGpuLockedClocks 705 705"), std::string::npos);
  EXPECT_NE(log.find("nvmlDeviceResetGpuLockedClocks"), std::string::npos);
  const std::string csv = slurp(dir_ / "m" / "measurements.csv");
  EXPECT_EQ(csv.rfind("run,cooldown_s,window_s,energy_j,average_power_w", 0), 0u);
  EXPECT_NE(slurp(dir_ / "m" / "summary.json").find("\"energy_source\": \"energy counter\""),
            std::string::npos);
}

TEST_F(MeasureCliTest, PowerSamplingWithoutTheCounter) {
  ::setenv("POWERTRAIN_FAKE_NVML_NO_ENERGY", "1", 1);
  auto r = run({"measure", "--warmup-s", "0", "--window-s", "0.3", "--cooldown-s", "0",
                "--sample-period-s", "0.01", "--", "sleep", "30"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(power sampling)"), std::string::npos);
  auto [window_s, energy_j] = run_numbers(r.out, 1);
  EXPECT_NEAR(energy_j / window_s, 400.0, 8.0);  // unlocked: 1410 MHz, 400 W
}

TEST_F(MeasureCliTest, CoolsDownToATemperature) {
  // 60 C cooling toward 25 C with tau 0.2 s: <= 32 C after 0.2 ln(35/7) = 0.32 s.
  ::setenv("POWERTRAIN_FAKE_NVML_TEMP_C", "60", 1);
  ::setenv("POWERTRAIN_FAKE_NVML_COOL_TAU_S", "0.2", 1);
  auto r = run({"measure", "--warmup-s", "0", "--window-s", "0.1", "--cooldown-s", "0",
                "--cooldown-to-c", "32", "--sample-period-s", "0.02", "--", "sleep", "30"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("cooled ([0-9.]+) s to ([0-9]+) C"))) << r.out;
  EXPECT_GE(std::stod(m[1]), 0.25);
  EXPECT_LT(std::stod(m[1]), 1.0);
  EXPECT_LE(std::stoi(m[2]), 32);
}

TEST_F(MeasureCliTest, CooldownGivesUpAfterItsLimit) {
  ::setenv("POWERTRAIN_FAKE_NVML_TEMP_C", "90", 1);
  ::setenv("POWERTRAIN_FAKE_NVML_COOL_TAU_S", "1000", 1);
  auto r = run({"measure", "--warmup-s", "0", "--window-s", "0.05", "--cooldown-s", "0",
                "--cooldown-to-c", "32", "--cooldown-max-s", "0.1", "--", "sleep", "30"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: run 1: still above 32 C after"), std::string::npos) << r.err;
}

TEST_F(MeasureCliTest, MissingNvmlIsOneLine) {
  ::setenv("POWERTRAIN_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  auto r = run({"measure", "--window-s", "0.1", "--", "sleep", "1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "powertrain measure: error: NVML not found (/nonexistent/libnvidia-ml.so.1): clock "
            "control disabled\n");
}

TEST_F(MeasureCliTest, CommandThatEndsTooEarlyAndUsage) {
  auto r =
      run({"measure", "--warmup-s", "0.2", "--window-s", "0.2", "--cooldown-s", "0", "--", "true"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("run 1: 'true' exited with status 0 after"), std::string::npos) << r.err;
  auto usage = run({"measure", "--window-s", "0.1"});
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_NE(usage.err.find("give the command to measure after --"), std::string::npos);
}

}  // namespace
}  // namespace powertrain::testing_cli
