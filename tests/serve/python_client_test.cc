// Runs tests/python/serve_client_test.py (a client written from the documented routes) against a
// server on a free loopback port; skipped when python3 is absent.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "server_process.h"

#include "../support/run_command.h"

namespace powertrain::serve {
namespace {

TEST(ServePython, DocumentedRoutesClient) {
  if (std::system("command -v python3 > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "python3 not found: the Python compatibility client was not run";
  }
  const auto dir =
      std::filesystem::path(::testing::TempDir()) / ("serve-python-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  serve_test::ServerProcess server;
  const unsigned short port = server.start((dir / "plans.db").string());
  ASSERT_NE(port, 0);
  const std::string command =
      std::string("python3 ") + POWERTRAIN_SOURCE_DIR +
      "/tests/python/serve_client_test.py --url http://127.0.0.1:" + std::to_string(port) +
      " --powertrain " + POWERTRAIN_CLI_PATH + " --workdir " + dir.string() + " 2>&1";
  const auto [output, status] = powertrain::testing_support::run_command(command);
  EXPECT_EQ(status, 0) << output;
  std::printf("%s", output.c_str());
  server.kill_now(SIGTERM);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace powertrain::serve
