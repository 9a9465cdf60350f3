// The README's example run: with the default (ceil) quantization the fastest realized plan is no
// slower than all max clock, and no baseline runs faster than Perseus's fastest realized point.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/csv.h"

namespace powertrain::frontier {
namespace {

namespace fs = std::filesystem;

TEST(ReadmeExample, FastestRealizedPointIsNoSlowerThanMaxClockOrAnyBaseline) {
  const fs::path out =
      fs::temp_directory_path() / ("powertrain-readme-" + std::to_string(::getpid()));
  const std::string command = std::string(POWERTRAIN_CLI_PATH) +
                              " frontier --model gpt3-2.7b --gpu a100-sxm --quiet --out '" +
                              out.string() + "' > '" + out.string() + ".log' 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream log(out.string() + ".log");
  std::stringstream text;
  text << log.rdbuf();
  EXPECT_NE(text.str().find("quantization  ceil"), std::string::npos) << text.str();

  auto frontier = core::read_csv_file((out / "frontier.csv").string());
  auto baselines = core::read_csv_file((out / "baselines.csv").string());
  ASSERT_TRUE(frontier.ok() && baselines.ok());
  double fastest_realized = 1e300;
  for (const auto& row : frontier->rows) {
    const double planned = std::stod(row.fields[0]), realized = std::stod(row.fields[2]);
    EXPECT_LE(realized, planned * (1 + 1e-12)) << "realized slower than planned at " << planned;
    fastest_realized = std::min(fastest_realized, realized);
  }
  ASSERT_FALSE(baselines->rows.empty());
  double all_max = 0.0;
  for (const auto& row : baselines->rows) {
    const double time = std::stod(row.fields[2]);
    if (row.fields[0] == "all_max_clock") all_max = time;
    EXPECT_GE(time * (1 + 1e-12), fastest_realized)
        << row.fields[0] << " " << row.fields[1] << " is faster than Perseus's fastest point";
  }
  EXPECT_GT(all_max, 0.0);
  EXPECT_LE(fastest_realized, all_max * (1 + 1e-12));
  fs::remove_all(out);
  fs::remove(out.string() + ".log");
}

}  // namespace
}  // namespace powertrain::frontier
