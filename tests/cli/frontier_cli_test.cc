// End-to-end tests of the `powertrain` binary: bad inputs fail with one line naming the file and
// the problem and leave no partial output; good runs write a complete output directory.

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
#include "profile/example_profile.h"
#include "profile/profile.h"

namespace powertrain {
namespace {

namespace fs = std::filesystem;

using RunResult = testing_cli::CliRun;
using testing_cli::slurp;

void write_file(const fs::path& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
  ASSERT_TRUE(out.good()) << path;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::size_t count_char(const std::string& text, char c) {
  std::size_t n = 0;
  for (char x : text) n += x == c ? 1 : 0;
  return n;
}

// Two stages, forward and backward, three clocks each; faster clocks cost more energy.
const char* const kGoodProfile =
    "stage,instruction,frequency,time,energy\n"  // line 1
    "0,forward,1410,0.010,2.00\n"                // line 2
    "0,forward,1200,0.011,1.80\n"                // line 3
    "0,forward,1000,0.013,1.70\n"                // line 4
    "0,backward,1410,0.020,4.00\n"               // line 5
    "0,backward,1200,0.022,3.60\n"               // line 6
    "0,backward,1000,0.026,3.40\n"               // line 7
    "1,forward,1410,0.012,2.40\n"                // line 8
    "1,forward,1200,0.013,2.20\n"                // line 9
    "1,forward,1000,0.016,2.05\n"                // line 10
    "1,backward,1410,0.024,4.80\n"               // line 11
    "1,backward,1200,0.027,4.30\n"               // line 12
    "1,backward,1000,0.031,4.10\n";              // line 13

// kGoodProfile with 1-based line `line` replaced by `replacement` (empty: line removed).
std::string with_line(int line, const std::string& replacement) {
  std::istringstream in(kGoodProfile);
  std::string result, text;
  for (int n = 1; std::getline(in, text); ++n) {
    if (n == line) {
      if (!replacement.empty()) result += replacement + "\n";
    } else {
      result += text + "\n";
    }
  }
  return result;
}

class FrontierCliTest : public testing_cli::CliTest {
 protected:
  fs::path write(const std::string& name, const std::string& contents) {
    const fs::path path = dir_ / name;
    write_file(path, contents);
    return path;
  }

  // `frontier --profile <profile> --p-blocking-w 100 --out <dir>/out` plus extra flags.
  RunResult run_frontier(const fs::path& profile, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"frontier", "--profile", profile.string(),  "--p-blocking-w",
                                     "100",      "--out",     out_dir().string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args);
  }

  fs::path out_dir() const { return dir_ / "out"; }

  // Names of entries next to `target` that look like staging or set-aside directories.
  static std::vector<std::string> leftovers(const fs::path& target) {
    std::vector<std::string> found;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(target.parent_path(), ec)) {
      const std::string name = entry.path().filename().string();
      const std::string stem = target.filename().string();
      if (name.rfind(stem + ".partial-", 0) == 0 || name.rfind(stem + ".old-", 0) == 0 ||
          contains(name, ".partial-")) {
        found.push_back(name);
      }
    }
    return found;
  }

  // Asserts a failed run: non-zero exit, exactly one line on stderr starting with the command's
  // error prefix and containing every part.
  static void expect_one_line_error(const RunResult& result, const std::string& command,
                                    const std::vector<std::string>& parts) {
    EXPECT_NE(result.exit_code, 0) << "stderr: " << result.err;
    EXPECT_EQ(count_char(result.err, '\n'), 1u) << "stderr: " << result.err;
    ASSERT_FALSE(result.err.empty());
    EXPECT_EQ(result.err.back(), '\n') << "stderr: " << result.err;
    EXPECT_EQ(result.err.rfind("powertrain " + command + ": error: ", 0), 0u)
        << "stderr: " << result.err;
    for (const std::string& part : parts) {
      EXPECT_TRUE(contains(result.err, part)) << "missing '" << part << "' in: " << result.err;
    }
  }

  // Asserts that `target` was not created and no staging siblings remain.
  static void expect_no_output(const fs::path& target) {
    EXPECT_FALSE(fs::exists(target)) << target;
    EXPECT_EQ(leftovers(target), std::vector<std::string>{});
  }

  void expect_frontier_failure(const RunResult& result, const std::vector<std::string>& parts) {
    expect_one_line_error(result, "frontier", parts);
    expect_no_output(out_dir());
  }
};

// --- Bad profiles ----------------------------------------------------------------------------

TEST_F(FrontierCliTest, GoodHandWrittenProfileSucceeds) {
  // Baseline for the failure cases below: the unmodified profile plans fine.
  const fs::path profile = write("good.csv", kGoodProfile);
  const RunResult result = run_frontier(profile, {"--quiet"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(fs::exists(out_dir() / "frontier.csv"));
  EXPECT_TRUE(fs::exists(out_dir() / "plans.csv"));
  EXPECT_EQ(leftovers(out_dir()), std::vector<std::string>{});
}

TEST_F(FrontierCliTest, MalformedCsvUnterminatedQuote) {
  const fs::path profile = write("quote.csv", with_line(5, "0,\"backward,1410,0.020,4.00"));
  expect_frontier_failure(run_frontier(profile),
                          {profile.string() + ":5:", "unterminated quoted field"});
}

TEST_F(FrontierCliTest, MissingColumn) {
  std::string text;
  std::istringstream in(kGoodProfile);
  for (std::string line; std::getline(in, line);) {
    text += line.substr(0, line.rfind(',')) + "\n";  // drop the energy column
  }
  const fs::path profile = write("no-energy.csv", text);
  expect_frontier_failure(run_frontier(profile),
                          {profile.string() + ":1:", "missing column 'energy'"});
}

TEST_F(FrontierCliTest, UnknownInstruction) {
  const fs::path profile = write("sideways.csv", with_line(6, "0,sideways,1200,0.022,3.60"));
  expect_frontier_failure(run_frontier(profile),
                          {profile.string() + ":6:", "'instruction'", "'sideways'"});
}

TEST_F(FrontierCliTest, StageInstructionWithoutRows) {
  std::string text;
  std::istringstream in(kGoodProfile);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("1,backward,", 0) != 0) text += line + "\n";
  }
  const fs::path profile = write("no-backward.csv", text);
  expect_frontier_failure(run_frontier(profile),
                          {profile.string() + ":", "stage 1 backward", "no measurements"});
}

TEST_F(FrontierCliTest, NaNTime) {
  const fs::path profile = write("nan.csv", with_line(3, "0,forward,1200,NaN,1.80"));
  expect_frontier_failure(run_frontier(profile),
                          {profile.string() + ":3:", "field 'time'", "finite", "NaN"});
}

TEST_F(FrontierCliTest, NegativeEnergy) {
  const fs::path profile = write("negative.csv", with_line(7, "0,backward,1000,0.026,-1.5"));
  expect_frontier_failure(run_frontier(profile),
                          {profile.string() + ":7:", "field 'energy'", "(0,", "-1.5"});
}

TEST_F(FrontierCliTest, OnlyOneClock) {
  // Stage 1 forward keeps only its 1410 MHz row (line 8).
  std::string text;
  std::istringstream in(kGoodProfile);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("1,forward,1200", 0) != 0 && line.rfind("1,forward,1000", 0) != 0) {
      text += line + "\n";
    }
  }
  const fs::path profile = write("one-clock.csv", text);
  expect_frontier_failure(run_frontier(profile),
                          {profile.string() + ":8:", "stage 1 forward", "only one clock", "1410"});
}

TEST_F(FrontierCliTest, NonExistentProfile) {
  const fs::path profile = dir_ / "does-not-exist.csv";
  expect_frontier_failure(run_frontier(profile), {profile.string(), "cannot open"});
}

// --- Bad flags and output locations
// ---------------------------------------------------------------

TEST_F(FrontierCliTest, OutputUnderARegularFile) {
  const fs::path profile = write("good.csv", kGoodProfile);
  const fs::path file = write("file", "not a directory\n");
  const fs::path target = file / "out";
  const RunResult result = run({"frontier", "--profile", profile.string(), "--p-blocking-w", "100",
                                "--out", target.string()});
  expect_one_line_error(result, "frontier", {target.string()});
  EXPECT_EQ(slurp(file), "not a directory\n");
  EXPECT_TRUE(fs::is_regular_file(file));
  EXPECT_EQ(leftovers(file), std::vector<std::string>{});
  EXPECT_EQ(leftovers(dir_ / "x"), std::vector<std::string>{});  // nothing staged in dir_
}

TEST_F(FrontierCliTest, OutputIsARegularFile) {
  const fs::path profile = write("good.csv", kGoodProfile);
  const fs::path target = write("out", "precious\n");
  const RunResult result = run_frontier(profile);
  expect_one_line_error(result, "frontier", {target.string(), "not a directory"});
  EXPECT_EQ(slurp(target), "precious\n");
  EXPECT_EQ(leftovers(target), std::vector<std::string>{});
}

TEST_F(FrontierCliTest, OutputInReadOnlyDirectory) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root: permissions do not stop writes";
  const fs::path profile = write("good.csv", kGoodProfile);
  const fs::path parent = dir_ / "read-only";
  fs::create_directory(parent);
  fs::permissions(parent, fs::perms::owner_read | fs::perms::owner_exec);
  const fs::path target = parent / "out";
  const RunResult result = run({"frontier", "--profile", profile.string(), "--p-blocking-w", "100",
                                "--out", target.string()});
  fs::permissions(parent, fs::perms::owner_all);
  expect_one_line_error(result, "frontier", {target.string()});
  expect_no_output(target);
}

TEST_F(FrontierCliTest, MissingPBlockingWithProfile) {
  const fs::path profile = write("good.csv", kGoodProfile);
  const RunResult result =
      run({"frontier", "--profile", profile.string(), "--out", out_dir().string()});
  expect_frontier_failure(result, {"--p-blocking-w", "required with --profile"});
}

TEST_F(FrontierCliTest, UnknownSchedule) {
  const fs::path profile = write("good.csv", kGoodProfile);
  expect_frontier_failure(run_frontier(profile, {"--schedule", "zigzag"}),
                          {"--schedule", "'zigzag'", "1f1b"});
}

TEST_F(FrontierCliTest, InterleavedWithBadMicrobatches) {
  // Four profile stages = 2 GPUs x 2 chunks; 3 microbatches is not a multiple of 2.
  std::string text = kGoodProfile;
  std::istringstream in(kGoodProfile);
  for (std::string line; std::getline(in, line);) {
    if (line[0] == '0' || line[0] == '1')
      text += std::to_string(line[0] - '0' + 2) + line.substr(1) + "\n";
  }
  const fs::path profile = write("four.csv", text);
  expect_frontier_failure(run_frontier(profile, {"--schedule", "interleaved-1f1b", "--chunks", "2",
                                                 "--pp", "2", "--microbatches", "3"}),
                          {"--microbatches", "multiple", "3"});
  // The same profile and flags with 4 microbatches plan fine.
  const RunResult good = run_frontier(profile, {"--schedule", "interleaved-1f1b", "--chunks", "2",
                                                "--pp", "2", "--microbatches", "4", "--quiet"});
  EXPECT_EQ(good.exit_code, 0) << good.err;
}

TEST_F(FrontierCliTest, InterleavedWithOneChunk) {
  const fs::path profile = write("good.csv", kGoodProfile);
  expect_frontier_failure(
      run_frontier(profile, {"--schedule", "interleaved-1f1b", "--chunks", "1"}), {"--chunks"});
}

TEST_F(FrontierCliTest, LateErrorsRemoveStagingDirectory) {
  // These fail after the staging directory exists (after the solve); it must be removed.
  expect_frontier_failure(
      run({"frontier", "--out", out_dir().string(), "--quiet", "--emit-plans", "bogus"}),
      {"--emit-plans", "'bogus'"});
  expect_frontier_failure(
      run({"frontier", "--out", out_dir().string(), "--quiet", "--timeline-point", "99999999"}),
      {"--timeline-point", "99999999"});
}

TEST_F(FrontierCliTest, FailedRunLeavesPreviousOutputIntact) {
  ASSERT_EQ(run({"frontier", "--out", out_dir().string(), "--quiet"}).exit_code, 0);
  const std::string before = slurp(out_dir() / "frontier.csv");
  ASSERT_FALSE(before.empty());
  const RunResult failed =
      run({"frontier", "--out", out_dir().string(), "--quiet", "--emit-plans", "bogus"});
  expect_one_line_error(failed, "frontier", {"--emit-plans"});
  EXPECT_EQ(slurp(out_dir() / "frontier.csv"), before);
  EXPECT_TRUE(fs::exists(out_dir() / "plans.csv"));
  EXPECT_EQ(leftovers(out_dir()), std::vector<std::string>{});
}

// --- Good runs -------------------------------------------------------------------------------

std::vector<std::string> file_names(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::size_t count_with(const std::vector<std::string>& names, const std::string& prefix,
                       const std::string& suffix) {
  std::size_t n = 0;
  for (const std::string& name : names) {
    if (name.size() >= prefix.size() + suffix.size() && name.rfind(prefix, 0) == 0 &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      ++n;
    }
  }
  return n;
}

void expect_complete_output(const fs::path& dir) {
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  const std::vector<std::string> names = file_names(dir);
  for (const char* name : {"frontier.csv", "plans.csv", "summary.json", "frontier.svg"}) {
    EXPECT_TRUE(fs::is_regular_file(dir / name)) << name;
    EXPECT_GT(fs::file_size(dir / name), 0u) << name;
  }
  EXPECT_EQ(count_with(names, "timeline_", ".json"), 1u);
  EXPECT_GE(count_with(names, "freqs_pipeline_", ".py"), 1u);

  const std::string frontier_csv = slurp(dir / "frontier.csv");
  EXPECT_EQ(frontier_csv.substr(0, frontier_csv.find('\n')),
            "time,energy,realized_time,realized_energy");
  auto table = core::parse_csv(frontier_csv, "frontier.csv");
  ASSERT_TRUE(table.ok()) << table.error().message;
  ASSERT_GE(table->rows.size(), 2u);
  double previous = 0.0;
  for (std::size_t i = 0; i < table->rows.size(); ++i) {
    auto time = core::parse_finite_double(table->rows[i].fields[0], "frontier.csv",
                                          table->rows[i].line, "time");
    ASSERT_TRUE(time.ok()) << time.error().message;
    if (i > 0) {
      EXPECT_LT(*time, previous) << "row " << i;
    }
    previous = *time;
  }

  const std::string plans_csv = slurp(dir / "plans.csv");
  auto plans = core::parse_csv(plans_csv, "plans.csv");
  ASSERT_TRUE(plans.ok()) << plans.error().message;
  EXPECT_FALSE(plans->rows.empty());

  const auto summary = nlohmann::json::parse(slurp(dir / "summary.json"), nullptr, false);
  EXPECT_FALSE(summary.is_discarded()) << "summary.json is not JSON";
  EXPECT_TRUE(contains(slurp(dir / "frontier.svg"), "<svg"));
}

TEST_F(FrontierCliTest, BuiltInExampleWritesAllFiles) {
  const RunResult result = run({"frontier", "--out", out_dir().string(), "--quiet"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "") << "--quiet should print nothing on stderr";
  EXPECT_TRUE(contains(result.out, "powertrain frontier:"));
  expect_complete_output(out_dir());
  EXPECT_EQ(leftovers(out_dir()), std::vector<std::string>{});
}

TEST_F(FrontierCliTest, RerunReplacesOutputDirectoryAtomically) {
  ASSERT_EQ(run({"frontier", "--out", out_dir().string(), "--quiet"}).exit_code, 0);
  write_file(out_dir() / "stale-marker.txt", "from an earlier run\n");
  const std::string first = slurp(out_dir() / "frontier.csv");
  const RunResult again = run({"frontier", "--out", out_dir().string(), "--quiet"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_FALSE(fs::exists(out_dir() / "stale-marker.txt")) << "directory was not replaced whole";
  expect_complete_output(out_dir());
  EXPECT_EQ(slurp(out_dir() / "frontier.csv"), first) << "output is not deterministic";
  EXPECT_EQ(leftovers(out_dir()), std::vector<std::string>{});
}

TEST_F(FrontierCliTest, LookupPrintsOneListPerStage) {
  ASSERT_EQ(run({"frontier", "--out", out_dir().string(), "--quiet"}).exit_code, 0);
  const RunResult result = run({"lookup", "--frontier", out_dir().string(), "--slowdown", "1.2"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  ASSERT_FALSE(result.out.empty());
  EXPECT_EQ(result.out[0], '[');
  // The list is everything before the first comment line.
  const std::string list = result.out.substr(0, result.out.find('#'));
  auto table = core::parse_csv(profile::example_profile_csv(), "example");
  ASSERT_TRUE(table.ok());
  auto profile = profile::parse_profile(*table);
  ASSERT_TRUE(profile.ok());
  const int stages = profile->num_stages();
  EXPECT_EQ(stages, profile::ExampleDefaults{}.stages);
  EXPECT_EQ(count_char(list, '['), static_cast<std::size_t>(stages) + 1) << list;
  EXPECT_EQ(count_char(list, ']'), static_cast<std::size_t>(stages) + 1) << list;
  EXPECT_TRUE(contains(list, "('forward', "));
  EXPECT_TRUE(contains(list, "('backward', "));
}

TEST_F(FrontierCliTest, LookupWithoutPlansCsvFails) {
  ASSERT_EQ(run({"frontier", "--out", out_dir().string(), "--quiet"}).exit_code, 0);
  const fs::path partial = dir_ / "only-frontier";
  fs::create_directory(partial);
  fs::copy_file(out_dir() / "frontier.csv", partial / "frontier.csv");
  const RunResult result = run({"lookup", "--frontier", partial.string(), "--slowdown", "1.2"});
  expect_one_line_error(result, "lookup", {(partial / "plans.csv").string()});
  EXPECT_EQ(result.out, "");
}

TEST_F(FrontierCliTest, ExampleProfileMatchesCommittedFile) {
  const RunResult result = run({"example-profile"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto table = core::parse_csv(result.out, "example-profile output");
  ASSERT_TRUE(table.ok()) << table.error().message;
  auto profile = profile::parse_profile(*table);
  ASSERT_TRUE(profile.ok()) << profile.error().message;
  EXPECT_EQ(result.out, profile::example_profile_csv());

  const fs::path committed = fs::path(POWERTRAIN_SOURCE_DIR) / "examples" / "example_profile.csv";
  if (!fs::exists(committed)) {
    GTEST_SKIP() << committed << " is not committed; nothing to compare with";
  }
  auto committed_table = core::read_csv_file(committed.string());
  ASSERT_TRUE(committed_table.ok()) << committed_table.error().message;
  EXPECT_EQ(committed_table->header, table->header);
  ASSERT_EQ(committed_table->rows.size(), table->rows.size());
  for (std::size_t i = 0; i < table->rows.size(); ++i) {
    EXPECT_EQ(committed_table->rows[i].fields, table->rows[i].fields) << "row " << i;
  }
}

}  // namespace
}  // namespace powertrain
