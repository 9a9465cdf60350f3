// Runs a shell command from a test and captures its standard output (the Python cross-checks and
// the serve client test).
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <utility>

namespace powertrain::testing_support {

/// stdout of `command` and its exit status (-1 when it could not start or did not exit normally).
inline std::pair<std::string, int> run_command(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return {"", -1};
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  const int status = ::pclose(pipe);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

}  // namespace powertrain::testing_support
