// `powertrain analyze` and `powertrain diff` end to end on the shared traces, and report.html in a
// real headless browser (Debian's chromium) when one is installed.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../cli/cli_runner.h"

namespace powertrain::testing_cli {
namespace {

namespace fs = std::filesystem;

fs::path shared_trace(const char* name) {
  return fs::path(POWERTRAIN_SOURCE_DIR) / ".." / "shared" / "data" / "traces" / name;
}

class AnalyzeCli : public CliTest {};

TEST_F(AnalyzeCli, NcclTraceWritesSummaryCsvAndReport) {
  const fs::path trace = shared_trace("hta/nccl_data.json.gz");
  if (!fs::exists(trace)) GTEST_SKIP() << "real data not found at " << trace;
  const fs::path out = dir_ / "out";
  const CliRun run =
      this->run({"analyze", trace.string(), "--out", out.string(), "--window", "steps", "--quiet"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("idle %"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("NCCL kernels: 21"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("critical path (replay"), std::string::npos) << run.out;
  const nlohmann::json doc = nlohmann::json::parse(slurp(out / "summary.json"));
  ASSERT_EQ(doc["ranks"].size(), 1u);
  const auto& r = doc["ranks"][0];
  EXPECT_EQ(r["window"]["used"], "steps");
  EXPECT_EQ(r["window"]["profiler_steps"], 3);
  EXPECT_NEAR(r["temporal"]["idle_pct"].get<double>() + r["temporal"]["compute_pct"].get<double>() +
                  r["temporal"]["non_compute_pct"].get<double>(),
              100.0, 1e-4);
  ASSERT_EQ(r["comm_libraries"].size(), 1u);
  EXPECT_EQ(r["comm_libraries"][0]["library"], "NCCL");
  // Memcpy sizes come from args: every memcpy of this trace has them.
  bool any_bandwidth = false;
  for (const auto& m : r["memcpy"]) {
    EXPECT_EQ(m["with_bytes"], m["count"]);
    any_bandwidth = any_bandwidth || m["bandwidth_gb_s"].get<double>() > 0.0;
  }
  EXPECT_TRUE(any_bandwidth);
  // The critical path partitions its length; three ProfilerSteps give three step entries.
  ASSERT_TRUE(r.contains("critical_path"));
  const auto& p = r["critical_path"];
  const auto& b = p["bound_by"];
  EXPECT_NEAR(b["compute_s"].get<double>() + b["communication_s"].get<double>() +
                  b["host_s"].get<double>() + b["idle_gap_s"].get<double>(),
              p["length_s"].get<double>(), 1e-9);
  EXPECT_EQ(p["steps"].size(), 3u);
  for (const auto& step : p["steps"]) {
    EXPECT_LE(step["on_path_s"].get<double>(), step["step_length_s"].get<double>() + 1e-9);
    EXPECT_GT(step["on_path_s"].get<double>(), 0.0);
  }
  EXPECT_GT(p["energy_j_modelled"].get<double>(), 0.0);
  EXPECT_TRUE(fs::exists(out / "kernels.csv"));
  const std::string html = slurp(out / "report.html");
  EXPECT_NE(html.find("<script id=\"summary\" type=\"application/json\">"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos) << "the report must not load anything";
  EXPECT_EQ(html.find("<script src"), std::string::npos);
}

TEST_F(AnalyzeCli, EightRankArchiveAndOneLineErrors) {
  const fs::path trace = shared_trace("param/dlrm_kineto_8ranks.tar.gz");
  if (!fs::exists(trace)) GTEST_SKIP() << "real data not found at " << trace;
  const fs::path out = dir_ / "dlrm";
  CliRun run = this->run({"analyze", trace.string(), "--out", out.string(), "--quiet"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json doc = nlohmann::json::parse(slurp(out / "summary.json"));
  EXPECT_EQ(doc["ranks"].size(), 8u);
  for (const auto& r : doc["ranks"]) {
    EXPECT_GT(r["comm_comp_overlap"]["communication_s"].get<double>(), 0.0);
    EXPECT_EQ(r["comm_libraries"][0]["library"], "NCCL");
    EXPECT_EQ(r["comm_libraries"][0]["count"], 8);
  }
  run = this->run({"analyze", trace.string(), "--out", (dir_ / "x").string(), "--window", "epoch"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("powertrain analyze: error: --window: unknown 'epoch'"), std::string::npos)
      << run.err;
  run = this->run({"analyze", (dir_ / "missing.json").string(), "--out", (dir_ / "y").string()});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("powertrain analyze: error:"), std::string::npos) << run.err;
  EXPECT_FALSE(fs::exists(dir_ / "y"));
}

TEST_F(AnalyzeCli, DiffOfTwoTraces) {
  const fs::path a = shared_trace("hta/alexnet_critical_path.json.gz");
  const fs::path b = shared_trace("hta/simple_add.json.gz");
  if (!fs::exists(a) || !fs::exists(b)) GTEST_SKIP() << "real data not found";
  const fs::path out = dir_ / "diff";
  const CliRun run = this->run({"diff", a.string(), b.string(), "--out", out.string()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json doc = nlohmann::json::parse(slurp(out / "summary.json"));
  EXPECT_GT(doc["names"].get<int>(), 0);
  // Top changes are sorted by |delta|.
  double previous = 1e300;
  for (const auto& row : doc["top_changes"]) {
    const double delta = std::abs(row["delta_s"].get<double>());
    EXPECT_LE(delta, previous);
    previous = delta;
  }
  // Same trace on both sides: nothing added, removed or changed.
  const CliRun same =
      this->run({"diff", a.string(), a.string(), "--out", (dir_ / "same").string()});
  ASSERT_EQ(same.exit_code, 0) << same.err;
  const nlohmann::json s = nlohmann::json::parse(slurp(dir_ / "same" / "summary.json"));
  EXPECT_EQ(s["added"], 0);
  EXPECT_EQ(s["removed"], 0);
  for (const auto& row : s["top_changes"]) EXPECT_EQ(row["delta_s"].get<double>(), 0.0);
}

// Loads report.html in headless chromium: the script must run to its end (it then sets the title
// to "powertrain analyze: ok") without an uncaught error.
TEST_F(AnalyzeCli, ReportRendersInHeadlessChromium) {
  const char* candidates[] = {"/usr/bin/chromium", "/usr/bin/chromium-browser"};
  std::string browser;
  for (const char* c : candidates)
    if (fs::exists(c)) browser = c;
  if (browser.empty()) GTEST_SKIP() << "no chromium (Debian package 'chromium') installed";
  const fs::path trace = shared_trace("param/dlrm_kineto_8ranks.tar.gz");
  if (!fs::exists(trace)) GTEST_SKIP() << "real data not found at " << trace;
  const fs::path out = dir_ / "report";
  const CliRun run = this->run({"analyze", trace.string(), "--out", out.string(), "--quiet"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const fs::path dom = dir_ / "dom.html";
  const fs::path log = dir_ / "chromium.log";
  const std::string command =
      shell_quote(browser) +
      " --headless --disable-gpu --no-sandbox --no-first-run --user-data-dir=" +
      shell_quote((dir_ / "profile").string()) +
      " --enable-logging=stderr --v=0 --virtual-time-budget=5000 --dump-dom " +
      shell_quote("file://" + fs::absolute(out / "report.html").string()) + " >" +
      shell_quote(dom.string()) + " 2>" + shell_quote(log.string()) + " </dev/null";
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(log);
  const std::string html = slurp(dom);
  const std::string errors = slurp(log);
  EXPECT_NE(html.find("<title>powertrain analyze: ok</title>"), std::string::npos)
      << html.substr(0, 2000) << "\n"
      << errors;
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("rank 7"), std::string::npos);
  EXPECT_EQ(errors.find("Uncaught"), std::string::npos) << errors;
  EXPECT_EQ(errors.find(":CONSOLE"), std::string::npos) << errors;
}

}  // namespace
}  // namespace powertrain::testing_cli
