// One test per row of docs/robustness.md: each bad input class gets its exit code, a one-line
// "powertrain X: error:" message naming the file/line/field or flag, no crash or hang, and no output
// or staging left behind.
#include <fmt/core.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "cli_runner.h"

namespace powertrain {
namespace {

namespace fs = std::filesystem;
using testing_cli::CliRun;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A small valid 2-stage profile: forward/backward at three clocks.
std::string small_profile() {
  std::string csv = "stage,instruction,frequency,time,energy\n";
  for (int stage = 0; stage < 2; ++stage) {
    for (const auto& [kind, scale] : {std::pair{"forward", 1.0}, std::pair{"backward", 2.0}}) {
      for (const auto& [mhz, t, e] : {std::tuple{1410, 0.010, 3.0}, std::tuple{1200, 0.012, 2.7},
                                      std::tuple{1000, 0.015, 2.6}}) {
        csv += fmt::format("{},{},{},{},{}\n", stage, kind, mhz, t * scale, e * scale);
      }
    }
  }
  return csv;
}

std::string gzip_of(const std::string& text) {
  z_stream stream{};
  deflateInit2(&stream, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&stream, text.size()) + 64, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  stream.avail_in = static_cast<uInt>(text.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

class RobustnessCliTest : public testing_cli::CliTest {
 protected:
  fs::path write(const std::string& name, const std::string& contents) {
    const fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << contents;
    return path;
  }
  fs::path profile(const std::string& extra_rows = "") {
    return write("profile.csv", small_profile() + extra_rows);
  }
  std::vector<std::string> frontier_args(const fs::path& profile_path,
                                         std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"frontier", "--profile",      profile_path.string(),
                                     "--pp",     "2",              "--p-blocking-w",
                                     "60",       "--microbatches", "4",
                                     "--quiet",  "--out",          (dir_ / "out").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  // A failure: exit code, one line with the prefix and every part, no output directory and no
  // staging leftovers.
  void expect_failure(const CliRun& run, int exit_code, const std::string& command,
                      const std::vector<std::string>& parts) {
    EXPECT_EQ(run.exit_code, exit_code) << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
    EXPECT_EQ(run.err.rfind("powertrain " + command + ": error: ", 0), 0u) << run.err;
    for (const std::string& part : parts)
      EXPECT_TRUE(contains(run.err, part)) << "missing '" << part << "' in: " << run.err;
    EXPECT_FALSE(fs::exists(dir_ / "out"));
    for (const auto& entry : fs::directory_iterator(dir_))
      EXPECT_FALSE(contains(entry.path().filename().string(), ".partial-")) << entry.path();
  }
};

// --- outputs -------------------------------------------------------------------------------------

TEST_F(RobustnessCliTest, OutIntoAUsersDirectoryIsRefusedAndTheFilesSurvive) {
  const fs::path mine = dir_ / "mine";
  fs::create_directory(mine);
  write("mine/notes.txt", "precious");
  std::vector<std::string> args = frontier_args(profile());
  args.back() = mine.string();
  const CliRun run = this->run(args);
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_TRUE(contains(run.err, "not written by powertrain")) << run.err;
  EXPECT_TRUE(fs::exists(mine / "notes.txt"));
  // The same for the other commands that write directories.
  for (const std::vector<std::string>& other :
       {std::vector<std::string>{"replay", "x.json", "--out", mine.string()},
        std::vector<std::string>{"emulate", "--traces", "x", "--out", mine.string()},
        std::vector<std::string>{"cluster", "--model", "gpt3-1.3b", "--gpu", "a100-sxm", "--gpus",
                                 "8", "--global-batch", "8", "--out", mine.string()}}) {
    const CliRun refused = this->run(other);
    EXPECT_NE(refused.exit_code, 0) << other.front();
    EXPECT_TRUE(contains(refused.err, "not written by powertrain")) << refused.err;
  }
  EXPECT_TRUE(fs::exists(mine / "notes.txt"));
  // --force replaces it, as asked.
  args.push_back("--force");
  EXPECT_EQ(this->run(args).exit_code, 0);
  EXPECT_FALSE(fs::exists(mine / "notes.txt"));
  EXPECT_TRUE(fs::exists(mine / "frontier.csv"));
}

TEST_F(RobustnessCliTest, OutAsTheCurrentDirectoryIsRefusedEvenWithForce) {
  write("keep.txt", "x");
  std::vector<std::string> args = frontier_args(profile(), {"--force"});
  for (const char* target : {".", "./", dir_.c_str()}) {
    args[args.size() - 2] = target;
    // The runner starts in the test's working directory; give it this one.
    const fs::path cwd = fs::current_path();
    fs::current_path(dir_);
    const CliRun run = this->run(args);
    fs::current_path(cwd);
    EXPECT_EQ(run.exit_code, 1) << target << run.err;
    EXPECT_TRUE(contains(run.err, "current directory")) << run.err;
  }
  EXPECT_TRUE(fs::exists(dir_ / "keep.txt"));
}

TEST_F(RobustnessCliTest, OutAsAFileFailsBeforeAnyWork) {
  write("out", "not a directory");
  std::vector<std::string> args = frontier_args(profile());
  const CliRun run = this->run(args);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(contains(run.err, "not a directory")) << run.err;
  EXPECT_EQ(run.out, "");  // nothing computed, nothing printed
}

TEST_F(RobustnessCliTest, SingleFileOutputsRefuseToOverwrite) {
  const fs::path existing = write("profile_out.csv", "mine\n");
  const CliRun run = this->run({"example-profile", "--out", existing.string()});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(contains(run.err, "file exists")) << run.err;
  EXPECT_EQ(testing_cli::slurp(existing), "mine\n");
  EXPECT_EQ(this->run({"example-profile", "--out", existing.string(), "--force"}).exit_code, 0);
  EXPECT_NE(testing_cli::slurp(existing), "mine\n");
}

// --- numbers in files ----------------------------------------------------------------------------

TEST_F(RobustnessCliTest, HugeOrOverflowingProfileNumbersAreRangeChecked) {
  struct Row {
    std::string line;
    std::string field;
  };
  for (const Row& row : {Row{"0,forward,900,1e7,3.0\n", "time"},
                         Row{"0,forward,900,1e308,3.0\n", "time"},
                         Row{"0,forward,1e20,0.02,3.0\n", "frequency"},
                         Row{"0,forward,900,0.02,nan\n", "energy"},
                         Row{"0,forward,900,-0.02,3.0\n", "time"}}) {
    for (const char* cost_model : {"exponential", "pwl"}) {
      const CliRun run =
          this->run(frontier_args(profile(row.line), {"--cost-model", cost_model}));
      expect_failure(run, 1, "frontier", {"profile.csv:14", row.field});
    }
  }
}

TEST_F(RobustnessCliTest, TinyUnitTimeIsRefusedInsteadOfHanging) {
  const CliRun run = this->run(frontier_args(profile(), {"--unit-time-s", "1e-11"}));
  expect_failure(run, 1, "frontier", {"--unit-time-s"});
}

// --- sizes ---------------------------------------------------------------------------------------

TEST_F(RobustnessCliTest, DevZeroAsAProfileOrTraceIsBounded) {
  expect_failure(this->run(frontier_args("/dev/zero", {"--max-input-mb", "4"})), 1, "frontier",
                 {"/dev/zero", "limit of 4 MiB", "--max-input-mb"});
  expect_failure(this->run({"replay", "/dev/zero", "--quiet", "--out", (dir_ / "out").string()}),
                 1, "replay", {"/dev/zero", "NUL byte"});
}

TEST_F(RobustnessCliTest, GzipBombStopsAtTheLimit) {
  // 64 MiB of spaces inside a JSON document compress to about 64 KiB.
  std::string json = "{\"traceEvents\": [";
  json.append(std::size_t{64} << 20, ' ');
  json += "]}";
  const fs::path bomb = write("bomb.json.gz", gzip_of(json));
  EXPECT_LT(fs::file_size(bomb), std::uintmax_t{1} << 20);
  expect_failure(this->run({"replay", bomb.string(), "--quiet", "--max-input-mb", "8", "--out",
                            (dir_ / "out").string()}),
                 1, "replay", {"bomb.json.gz", "inflates", "limit of 8 MiB"});
}

TEST_F(RobustnessCliTest, DirectoriesAndEmptyFilesAreNamedAsSuch) {
  expect_failure(this->run(frontier_args(dir_)), 1, "frontier", {"is a directory"});
  expect_failure(this->run(frontier_args(write("empty.csv", ""))), 1, "frontier",
                 {"empty.csv", "empty file"});
}

// --- silent substitution -------------------------------------------------------------------------

TEST_F(RobustnessCliTest, InvalidFlagValuesAreUsageErrors) {
  const fs::path p = profile();
  struct Case {
    std::vector<std::string> extra;
    std::string flag;
  };
  for (const Case& c : {Case{{"--unit-time-s", "0"}, "--unit-time-s"},
                        Case{{"--unit-time-s", "-1"}, "--unit-time-s"},
                        Case{{"--unit-time-s", "nan"}, "--unit-time-s"},
                        Case{{"--unit-time", "nan"}, "--unit-time"},  // old spelling
                        Case{{"--microbatches", "0"}, "--microbatches"},
                        Case{{"--microbatches", "-1"}, "--microbatches"},
                        Case{{"--pp", "0"}, "--pp"},
                        Case{{"--timeline-point", "-5"}, "--timeline-point"},
                        Case{{"--p-blocking-w", "1e9"}, "--p-blocking-w"},
                        Case{{"--chunks", "99999999999999999999"}, "--chunks"}}) {
    std::vector<std::string> args = frontier_args(p, c.extra);
    const CliRun run = this->run(args);
    EXPECT_EQ(run.exit_code, 2) << c.flag << ": " << run.err;
    EXPECT_TRUE(contains(run.err, c.flag)) << run.err;
    EXPECT_EQ(run.err.rfind("powertrain frontier: error: ", 0), 0u) << run.err;
    EXPECT_FALSE(fs::exists(dir_ / "out"));
  }
  for (const std::vector<std::string>& whatif :
       {std::vector<std::string>{"whatif", "t.json", "--pp", "0"},
        std::vector<std::string>{"whatif", "t.json", "--dp", "0"},
        std::vector<std::string>{"whatif", "t.json", "--hidden-ratio", "-2"}}) {
    const CliRun run = this->run(whatif);
    EXPECT_EQ(run.exit_code, 2) << run.err;
    EXPECT_TRUE(contains(run.err, whatif[2])) << run.err;
  }
}

TEST_F(RobustnessCliTest, TruncatedProfileIsNotPlannedAsAShorterPipeline) {
  const std::string full = small_profile();
  const std::string truncated = full.substr(0, full.find("\n1,"));  // stage 1 cut off
  expect_failure(this->run(frontier_args(write("cut.csv", truncated + "\n"))), 1, "frontier",
                 {"cut.csv", "has 1 stage(s)", "--pp 2"});
}

TEST_F(RobustnessCliTest, CalibrationOfAnotherGpuIsRefused) {
  const fs::path params =
      write("a100.json", R"({"gpu": "a100-sxm", "params": {"matmul_efficiency": 0.5}})");
  const CliRun run = this->run({"frontier", "--model", "gpt3-1.3b", "--gpu", "a40", "--gpu-params",
                                params.string(), "--quiet", "--out", (dir_ / "out").string()});
  expect_failure(run, 1, "frontier", {"a100.json", "calibrated for a100-sxm", "a40"});
}

TEST_F(RobustnessCliTest, EmptyAndDuplicatedTracesAreNotReplayedAsZerosOrTwice) {
  for (const char* text : {R"({"traceEvents": []})", "[]"}) {
    const fs::path empty = write("empty.json", text);
    expect_failure(
        this->run({"replay", empty.string(), "--quiet", "--out", (dir_ / "out").string()}), 1,
        "replay", {"empty.json"});
  }
  // The same kernel and launch written twice: replayed once, with a warning.
  const std::string events =
      R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":10,"dur":5,"args":{"correlation":7}},)"
      R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":20,"dur":100,"args":{"correlation":7,"stream":7,"device":0}})";
  const fs::path once = write("once.json", "{\"traceEvents\": [" + events + "]}");
  const fs::path twice =
      write("twice.json", "{\"traceEvents\": [" + events + "," + events + "]}");
  const CliRun a = this->run({"replay", once.string(), "--quiet", "--out", (dir_ / "a").string()});
  const CliRun b = this->run({"replay", twice.string(), "--quiet", "--out", (dir_ / "b").string()});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const std::string summary = testing_cli::slurp(dir_ / "b" / "summary.json");
  EXPECT_TRUE(contains(summary, "exact duplicate events dropped")) << summary.substr(0, 2000);
  const auto energy_line = [](const std::string& out) {
    const auto at = out.find("energy");
    return out.substr(at, out.find('\n', at) - at);
  };
  EXPECT_EQ(energy_line(a.out), energy_line(b.out));
}

// --- the command line itself ---------------------------------------------------------------------

TEST_F(RobustnessCliTest, ParseErrorsHaveThePrefixExitTwoAndSuggestions) {
  const CliRun typo = this->run({"frontir"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_TRUE(contains(typo.err, "did you mean 'frontier'")) << typo.err;
  const CliRun flag = this->run({"frontier", "--microbatchs", "4"});
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_EQ(flag.err.rfind("powertrain frontier: error: ", 0), 0u) << flag.err;
  EXPECT_TRUE(contains(flag.err, "did you mean --microbatches")) << flag.err;
  const CliRun missing = this->run({"frontier", "--microbatches"});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_EQ(missing.err.rfind("powertrain frontier: error: ", 0), 0u) << missing.err;
  EXPECT_EQ(this->run({"frontier", "--help"}).exit_code, 0);
}

TEST_F(RobustnessCliTest, OldSpellingsStillWorkWithANote) {
  std::vector<std::string> args = {"frontier", "--profile", profile().string(), "--stages", "2",
                                   "--p-blocking", "60",   "--unit-time",      "0.001",  "--quiet",
                                   "--out",        (dir_ / "out").string()};
  const CliRun run = this->run(args);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(contains(run.err, "--stages is now spelled --pp")) << run.err;
  EXPECT_TRUE(contains(run.err, "--p-blocking is now spelled --p-blocking-w")) << run.err;
}

TEST_F(RobustnessCliTest, HelpShowsTypesNotText) {
  const CliRun help = this->run({"cluster", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_TRUE(contains(help.out, "--pp INT")) << help.out;
  EXPECT_TRUE(contains(help.out, "--unit-time-s NUMBER")) << help.out;
  EXPECT_FALSE(contains(help.out, "--stages")) << help.out;  // hidden old spelling
}

TEST_F(RobustnessCliTest, InterruptedRunLeavesNoStagingDirectory) {
  // A long solve (large model, fine tau) interrupted with SIGINT, then SIGTERM.
  for (const char* signal_name : {"INT", "TERM"}) {
    const std::string command =
        fmt::format("timeout -s {} 0.5 {} frontier --model gpt3-175b --gpu a40 --tp 8 --pp 16 "
                    "--microbatches 256 --unit-time-s 0.0001 --quiet --out {} >/dev/null 2>&1",
                    signal_name, POWERTRAIN_CLI_PATH, (dir_ / "out").string());
    const int status = std::system(command.c_str());
    EXPECT_NE(status, 0) << signal_name;  // it was interrupted, not finished
    EXPECT_FALSE(fs::exists(dir_ / "out"));
    for (const auto& entry : fs::directory_iterator(dir_))
      EXPECT_FALSE(contains(entry.path().filename().string(), ".partial-")) << entry.path();
  }
}

}  // namespace
}  // namespace powertrain
