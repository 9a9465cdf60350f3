// Runs the powertrain binary for end-to-end tests: a temporary directory per test, stdout and
// stderr captured, stdin closed.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace powertrain::testing_cli {

struct CliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted.append("'\\''");
    } else {
      quoted.push_back(c);
    }
  }
  quoted.push_back('\'');
  return quoted;
}

inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

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
    const std::filesystem::path out = dir_ / "stdout.txt";
    const std::filesystem::path err = dir_ / "stderr.txt";
    std::string command = shell_quote(POWERTRAIN_CLI_PATH);
    for (const std::string& arg : args) command.append(" ").append(shell_quote(arg));
    command.append(" >").append(shell_quote(out.string()));
    command.append(" 2>").append(shell_quote(err.string())).append(" </dev/null");
    const int status = std::system(command.c_str());
    CliRun result;
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.out = slurp(out);
    result.err = slurp(err);
    std::filesystem::remove(out);
    std::filesystem::remove(err);
    return result;
  }

  std::filesystem::path dir_;
};

}  // namespace powertrain::testing_cli
