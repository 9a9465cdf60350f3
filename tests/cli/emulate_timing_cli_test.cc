// `powertrain emulate --two-pass` end to end on event_timing.cu (issue 18): the program's own
// cudaEventElapsedTime table becomes the prediction.
// Skips when the emulation (CUDA headers, nvcc) was not built.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.h"

namespace powertrain {
namespace {

namespace fs = std::filesystem;
using testing_cli::CliRun;
using testing_cli::slurp;

class EmulateTimingTest : public testing_cli::CliTest {
 protected:
  void SetUp() override {
    testing_cli::CliTest::SetUp();
#ifndef POWERTRAIN_HAVE_EMULATION
    GTEST_SKIP() << "GPU emulation not built (no CUDA headers or nvcc at configure time)";
#else
    programs_ = POWERTRAIN_EMU_PROGRAM_DIR;
    interposer_ = POWERTRAIN_INTERPOSER_PATH;
    if (!fs::exists(programs_ / "event_timing"))
      GTEST_SKIP() << "emulation test program event_timing not built in " << programs_;
    // 100 µs per launch of the program's kernel, so the expectations below are hand-computed.
    std::ofstream(dir_ / "kernels.csv") << "name,duration_us\nscale,100\n";
#endif
  }

  CliRun emulate(std::vector<std::string> flags, const std::vector<std::string>& args) {
    std::vector<std::string> all = {"emulate", "--interposer",   interposer_.string(),
                                    "--quiet", "--kernel-table", (dir_ / "kernels.csv").string()};
    all.insert(all.end(), flags.begin(), flags.end());
    all.push_back("--");
    all.push_back((programs_ / "event_timing").string());
    all.insert(all.end(), args.begin(), args.end());
    return run(all);
  }

  // The program's printed "iteration I elapsed_us X", by iteration.
  static std::map<int, double> printed(const std::string& out) {
    std::map<int, double> values;
    const std::regex line(R"(iteration (\d+) elapsed_us ([0-9.]+))");
    for (std::sregex_iterator it(out.begin(), out.end(), line), end; it != end; ++it)
      values[std::stoi((*it)[1])] = std::stod((*it)[2]);
    return values;
  }

  fs::path programs_;
  fs::path interposer_;
};

// Event start, 4 launches, event stop, per iteration (host gaps capped at 1 ns): start completes
// 4 µs (launch latency) after its record call at T; the first launch is called at T + 1.5 (event
// record cost) and its kernel starts 4 µs later, at T + 5.5; the four kernels run back to back
// (each later launch is ready long before), ending at T + 405.5; stop completes then.
// Elapsed = 405.5 − 4 = 401.5 µs, predicted.
TEST_F(EmulateTimingTest, TwoPassPrintsThePredictedEventTimes) {
  const fs::path out = dir_ / "out";
  const CliRun r = emulate({"--two-pass", "--max-host-gap-us", "0.001", "--out", out.string()}, {});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const std::map<int, double> times = printed(r.out);
  ASSERT_EQ(times.size(), 4u) << r.out;  // pass 1's output is held back: each line once
  for (const auto& [iteration, us] : times) EXPECT_NEAR(us, 401.5, 0.01) << iteration;

  // The printed numbers are exactly the written prediction (stop − start, per iteration).
  std::ifstream events(out / "predicted_events" / "rank-0.tsv");
  ASSERT_TRUE(events.good());
  std::map<std::int64_t, std::vector<std::int64_t>> by_event;
  std::vector<std::int64_t> order;
  std::string text;
  while (std::getline(events, text)) {
    if (text.empty() || text[0] == '#') continue;
    std::istringstream fields(text);
    std::int64_t event = 0, occurrence = 0, ns = 0;
    fields >> event >> occurrence >> ns;
    if (by_event[event].empty()) order.push_back(event);
    by_event[event].push_back(ns);
  }
  ASSERT_EQ(order.size(), 2u);
  for (int k = 0; k < 4; ++k) {
    const double predicted_us = (by_event[order[1]].at(k) - by_event[order[0]].at(k)) * 1e-3;
    EXPECT_NEAR(times.at(k), predicted_us, 0.002) << k;
  }
}

TEST_F(EmulateTimingTest, TwoPassNeedsAProgram) {
  const CliRun r = run({"emulate", "--two-pass", "--traces", dir_.string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--two-pass"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace powertrain
