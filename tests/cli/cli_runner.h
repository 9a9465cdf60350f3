// Runs the powertrain binary for end-to-end tests: a temporary directory per test, stdout and
// stderr captured, stdin closed.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "../support/run_command.h"

namespace powertrain::testing_cli {

using testing_support::shell_quote;
using testing_support::slurp;
using CliRun = testing_support::ProgramRun;

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern =
        (std::filesystem::path(::testing::TempDir()) / "powertrain-cli-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr) << pattern;
    dir_ = pattern;
  }

  void TearDown() override {
    // Tests may make the directory read-only; give it back before removing it.
    std::error_code ec;
    std::filesystem::permissions(dir_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(dir_, ec);
  }

  // Runs the CLI with arguments (each quoted); stdout and stderr go to files in the temp dir.
  CliRun run(const std::vector<std::string>& args) {
    std::string command = shell_quote(POWERTRAIN_CLI_PATH);
    for (const std::string& arg : args) command.append(" ").append(shell_quote(arg));
    return testing_support::run_shell(command, dir_);
  }

  std::filesystem::path dir_;
};

}  // namespace powertrain::testing_cli
