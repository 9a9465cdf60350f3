// `powertrain search` across processes: 4 MPI ranks give the same files as the threaded run for a
// fixed seed (issue 17 must-show 3), and a search killed mid-way resumes from its checkpoint to
// the same files as a search that ran through.
#include <fcntl.h>
#include <fmt/core.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli_runner.h"

extern char** environ;

namespace powertrain {
namespace {

using testing_cli::CliRun;
using testing_cli::shell_quote;
using testing_cli::slurp;
namespace fs = std::filesystem;

// GPT-3 1.3B on 8 H100s: 4 × 4 × 3 × 2 × 2 = 192 configurations, about a third of them planned.
constexpr const char* kSpec = R"({
  "model": "gpt3-1.3b", "gpu": "h100", "num_gpus": 8, "global_batch": 32,
  "knobs": {"tp": [1, 2, 4, 8], "pp": [1, 2, 4, 8], "microbatch_size": [1, 2, 4],
            "virtual_stages": [1], "recompute": [false, true], "sequence_parallel": [false],
            "distributed_optimizer": [false, true]}
})";

// trials.csv without eval_s (column 19 of 21: a measured wall time).
std::string trials_without_times(const std::string& csv) {
  std::string out;
  std::istringstream in(csv);
  for (std::string line; std::getline(in, line);) {
    std::size_t begin = 0;
    for (int i = 0; i < 19; ++i) begin = line.find(',', begin) + 1;
    out += line.substr(0, begin) + line.substr(line.find(',', begin) + 1) + "\n";
  }
  return out;
}

// summary.json without what describes the run rather than its result.
std::string summary_without_run(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text);
  j.erase("search_seconds_measured");
  j.erase("threads");
  return j.dump(2);
}

class SearchMpiCliTest : public testing_cli::CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    std::ofstream(dir_ / "spec.json") << kSpec;
  }
  void expect_same_outputs(const fs::path& a, const fs::path& b) {
    EXPECT_EQ(trials_without_times(slurp(a / "trials.csv")),
              trials_without_times(slurp(b / "trials.csv")));
    EXPECT_EQ(slurp(a / "frontier.csv"), slurp(b / "frontier.csv"));
    EXPECT_EQ(slurp(a / "frontier.svg"), slurp(b / "frontier.svg"));
    EXPECT_EQ(summary_without_run(slurp(a / "summary.json")),
              summary_without_run(slurp(b / "summary.json")));
    EXPECT_GT(slurp(a / "frontier.csv").size(), 40u);
  }
};

TEST_F(SearchMpiCliTest, FourRanksGiveTheThreadedResult) {
#ifndef POWERTRAIN_MPIEXEC
  GTEST_SKIP() << "built without MPI (libopenmpi-dev, openmpi-bin)";
#else
  for (const char* algorithm : {"random", "cmaes"}) {
    SCOPED_TRACE(algorithm);
    const std::string threaded = (dir_ / (std::string("threads-") + algorithm)).string();
    const std::string ranks = (dir_ / (std::string("mpi-") + algorithm)).string();
    const std::vector<std::string> common = {(dir_ / "spec.json").string(),
                                             "--algorithm",
                                             algorithm,
                                             "--seed",
                                             "7",
                                             "--max-trials",
                                             "60",
                                             "--quiet"};
    std::vector<std::string> args = {"search"};
    args.insert(args.end(), common.begin(), common.end());
    args.insert(args.end(), {"--threads", "2", "--out", threaded});
    const CliRun t = run(args);
    ASSERT_EQ(t.exit_code, 0) << t.err << t.out;
    EXPECT_NE(t.out.find("on 1 rank(s) x 2 thread(s)"), std::string::npos) << t.out;

    std::string command = std::string(POWERTRAIN_MPIEXEC) +
                          " --allow-run-as-root --oversubscribe -np 4 " +
                          shell_quote(POWERTRAIN_CLI_PATH) + " search";
    for (const std::string& a : common) {
      command += " ";
      command += shell_quote(a);
    }
    command += " --threads 1 --out ";
    command += shell_quote(ranks);
    command += " >";
    command += shell_quote((dir_ / "mpi.out").string());
    command += " 2>&1 </dev/null";
    const int status = std::system(command.c_str());
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(dir_ / "mpi.out");
    const std::string out = slurp(dir_ / "mpi.out");
    EXPECT_NE(out.find("on 4 rank(s) x 1 thread(s)"), std::string::npos) << out;
    // Only rank 0 prints and writes.
    EXPECT_EQ(out.find("powertrain search:"), out.rfind("powertrain search:")) << out;
    expect_same_outputs(threaded, ranks);
  }
#endif
}

// Starts the CLI in the background; returns its pid.
pid_t spawn_cli(const std::vector<std::string>& args, const fs::path& log) {
  std::vector<std::string> argv = {POWERTRAIN_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> raw;
  for (std::string& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, raw[0], &actions, nullptr, raw.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

int count_lines(const fs::path& path) {
  const std::string text = slurp(path);
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

TEST_F(SearchMpiCliTest, KilledSearchResumesFromItsCheckpoint) {
  // 4 × the batch of kSpec: trials take ~10 ms of CPU each, so the kill lands mid-search.
  std::string text = kSpec;
  text.replace(text.find("\"global_batch\": 32"), 18, "\"global_batch\": 128");
  std::ofstream(dir_ / "spec128.json") << text;
  const std::string spec = (dir_ / "spec128.json").string();
  const fs::path checkpoint = dir_ / "search.ckpt";
  const CliRun through =
      run({"search", spec, "--threads", "1", "--quiet", "--out", (dir_ / "through").string()});
  ASSERT_EQ(through.exit_code, 0) << through.err;

  // Kill it (SIGKILL: no cleanup) once a few trials are in the log.
  const pid_t pid = spawn_cli({"search", spec, "--threads", "1", "--quiet", "--checkpoint",
                               checkpoint.string(), "--out", (dir_ / "killed").string()},
                              dir_ / "killed.log");
  ASSERT_GT(pid, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  int status = 0;
  bool exited = false;
  while (count_lines(checkpoint) < 6 && std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_FALSE(exited) << "the search finished before it could be killed: "
                       << slurp(dir_ / "killed.log");
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_FALSE(fs::exists(dir_ / "killed"));  // the output never appeared half-written
  const int logged = count_lines(checkpoint) - 1;
  ASSERT_GE(logged, 5);

  const CliRun resumed = run({"search", spec, "--threads", "2", "--quiet", "--checkpoint",
                              checkpoint.string(), "--out", (dir_ / "killed").string()});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err << resumed.out;
  EXPECT_NE(resumed.out.find(fmt::format("{} from the checkpoint", logged)), std::string::npos)
      << "logged " << logged << "\n"
      << resumed.out;
  expect_same_outputs(dir_ / "through", dir_ / "killed");
  // Every planned trial is in the log now, once (bound-pruned verdicts are not logged).
  const nlohmann::json summary = nlohmann::json::parse(slurp(dir_ / "killed" / "summary.json"));
  EXPECT_EQ(count_lines(checkpoint) - 1, summary["planned"].get<int>());

  // A checkpoint of another search is refused with its file and line.
  std::ofstream(dir_ / "other.json") << R"({"model": "gpt3-2.7b", "num_gpus": 8})";
  const CliRun other = run({"search", (dir_ / "other.json").string(), "--quiet", "--checkpoint",
                            checkpoint.string(), "--out", (dir_ / "other").string()});
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_NE(other.err.find(checkpoint.string() + ":1: field 'spec' differs"), std::string::npos)
      << other.err;
  // A file that is no checkpoint at all (here a spec) is called that, and left as it was.
  const std::string spec_text = slurp(dir_ / "other.json");
  const CliRun not_one = run({"search", (dir_ / "other.json").string(), "--quiet", "--checkpoint",
                              (dir_ / "other.json").string(), "--out", (dir_ / "x").string()});
  EXPECT_EQ(not_one.exit_code, 1);
  EXPECT_NE(
      not_one.err.find((dir_ / "other.json").string() + ":1: not a powertrain search checkpoint"),
      std::string::npos)
      << not_one.err;
  EXPECT_EQ(slurp(dir_ / "other.json"), spec_text);
}

}  // namespace
}  // namespace powertrain
