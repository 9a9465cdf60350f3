// End-to-end tests of `powertrain kareus` on a small job (2 layers, TP 2 × PP 2, 512 tokens).
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_runner.h"

namespace powertrain {
namespace {

namespace fs = std::filesystem;
using testing_cli::CliRun;
using testing_cli::slurp;

class KareusCliTest : public testing_cli::CliTest {
 protected:
  std::vector<std::string> small(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"kareus",
                                     "--model",
                                     "llama3.2-3b",
                                     "--num-layers",
                                     "2",
                                     "--tp",
                                     "2",
                                     "--pp",
                                     "2",
                                     "--microbatch-size",
                                     "1",
                                     "--seq-len",
                                     "512",
                                     "--microbatches",
                                     "2"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

int lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n' ? 1 : 0;
  return n;
}

TEST_F(KareusCliTest, WritesTheFrontierOfEverySystem) {
  const fs::path out = dir_ / "run";
  const CliRun run = this->run(small({"--out", out.string()}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(contains(run.out, "Kareus")) << run.out;
  EXPECT_TRUE(contains(run.out, "modelled")) << run.out;
  const std::string csv = slurp(out / "frontier.csv");
  EXPECT_EQ(csv.rfind("method,time_s,energy_j,static_j,dynamic_j\n", 0), 0u) << csv;
  for (const char* system : {"Megatron-LM,", "Megatron-LM + Perseus,", "Nanobatching,",
                             "Nanobatching + Perseus,", "Kareus,"})
    EXPECT_TRUE(contains(csv, std::string("\n") + system)) << system;
  const std::string svg = slurp(out / "frontier.svg");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_TRUE(contains(svg, "Nanobatching + Perseus"));
  // Plan files: a Zeus plan per planned point of Kareus and M+P, and the schedules of both.
  for (const char* prefix : {"kareus_", "megatron_perseus_"}) {
    const std::string plan = slurp(out / fmt::format("{}freqs_pipeline_00000.py", prefix));
    EXPECT_EQ(plan.rfind("[\n  [('forward', ", 0), 0u) << plan;
    EXPECT_TRUE(contains(plan, "# planned iteration time: ")) << plan;
  }
  const auto schedules = nlohmann::json::parse(slurp(out / "schedules.json"));
  ASSERT_EQ(schedules.at("systems").size(), 2u);
  EXPECT_EQ(schedules.at("systems").at(0).at("system"), "Kareus");
  std::size_t kareus_points = 0;
  for (const auto& entry : fs::directory_iterator(out))
    kareus_points += entry.path().filename().string().rfind("kareus_freqs_pipeline_", 0) == 0;
  EXPECT_EQ(kareus_points, schedules.at("systems").at(0).at("points").size());
  std::size_t kareus_rows = 0;
  for (std::size_t at = csv.find("\nKareus,"); at != std::string::npos;
       at = csv.find("\nKareus,", at + 1))
    ++kareus_rows;
  // --plan-points 16 (default): 16 evenly spread points, the slowest (0) and the fastest too.
  EXPECT_EQ(kareus_points, std::min<std::size_t>(16, kareus_rows));
  EXPECT_TRUE(fs::exists(out / fmt::format("kareus_freqs_pipeline_{:05d}.py", kareus_rows - 1)));
  // Our own earlier output is replaced without --force.
  EXPECT_EQ(this->run(small({"--out", out.string(), "--search", "exhaustive"})).exit_code, 0);
}

TEST_F(KareusCliTest, ContextParallelJobRuns) {
  const CliRun run = this->run(small({"--cp", "2"}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(contains(run.out, "TP 2 x CP 2 x PP 2")) << run.out;
  // CP alone: the last stage (LM head) has no collective and runs sequentially in every system.
  const CliRun cp_only =
      this->run({"kareus", "--model", "llama3.2-3b", "--num-layers", "2", "--tp", "1", "--cp", "2",
                 "--pp", "2", "--microbatch-size", "1", "--seq-len", "512", "--microbatches", "2"});
  ASSERT_EQ(cp_only.exit_code, 0) << cp_only.err;
  EXPECT_TRUE(contains(cp_only.out, "TP 1 x CP 2 x PP 2")) << cp_only.out;
}

TEST_F(KareusCliTest, BadFlagsAreUsageErrorsOnOneLine) {
  for (const std::vector<std::string>& extra : {std::vector<std::string>{"--cp", "0"},
                                                {"--search", "random"},
                                                {"--seed", "-1"},
                                                {"--microbatches", "0"},
                                                {"--plan-points", "-1"},
                                                {"--no-such-flag"}}) {
    const CliRun run = this->run(small(extra));
    EXPECT_EQ(run.exit_code, 2) << extra.front() << ": " << run.err;
    EXPECT_EQ(lines(run.err), 1) << extra.front() << ": " << run.err;
    EXPECT_TRUE(run.out.empty()) << run.out;
  }
  // Valid flags, impossible job: a data error (exit 1) naming the rule.
  const CliRun bad = this->run({"kareus", "--model", "llama3.2-3b", "--num-layers", "2", "--tp",
                                "1", "--pp", "2", "--microbatch-size", "1", "--seq-len", "512"});
  EXPECT_EQ(bad.exit_code, 1) << bad.err;
  EXPECT_TRUE(contains(bad.err, "powertrain kareus: error:")) << bad.err;
  EXPECT_EQ(lines(bad.err), 1) << bad.err;
}

TEST_F(KareusCliTest, NeverOverwritesAUsersDirectoryWithoutForce) {
  const fs::path mine = dir_ / "mine";
  fs::create_directory(mine);
  std::ofstream(mine / "notes.txt") << "precious";
  const CliRun refused = this->run(small({"--out", mine.string()}));
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_TRUE(contains(refused.err, "not written by powertrain")) << refused.err;
  EXPECT_EQ(slurp(mine / "notes.txt"), "precious");
  EXPECT_FALSE(fs::exists(mine / "frontier.csv"));
  EXPECT_FALSE(contains(refused.out, "search:")) << "refused only after the run:\n" << refused.out;
  // So does kareus-cluster.
  const CliRun cluster =
      this->run({"kareus-cluster", "--num-layers", "10", "--seq-len", "1024", "--global-batch",
                 "128", "--gpus", "160", "--out", mine.string()});
  EXPECT_EQ(cluster.exit_code, 1) << cluster.err;
  EXPECT_TRUE(contains(cluster.err, "not written by powertrain")) << cluster.err;
  EXPECT_FALSE(contains(cluster.out, "search:")) << "refused only after the run:\n" << cluster.out;
  EXPECT_EQ(slurp(mine / "notes.txt"), "precious");
  // --table3 checks the directory before its long run.
  const CliRun table3 = this->run({"kareus", "--table3", "--out", mine.string()});
  EXPECT_EQ(table3.exit_code, 1) << table3.err;
  EXPECT_EQ(slurp(mine / "notes.txt"), "precious");
  // --force replaces it.
  EXPECT_EQ(this->run(small({"--out", mine.string(), "--force"})).exit_code, 0);
  EXPECT_FALSE(fs::exists(mine / "notes.txt"));
  EXPECT_TRUE(fs::exists(mine / "frontier.csv"));
}

}  // namespace
}  // namespace powertrain
