// Runs a shell command from a test and captures its output: run_command (stdout through a pipe;
// the Python cross-checks and the serve client test) and run_shell (stdout and stderr through
// files; the CLI and interposer tests).
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
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

/// `text` in single quotes for /bin/sh.
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

/// The whole file as bytes ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Output of a command: exit status (-1 if killed by a signal), stdout, stderr.
struct ProgramRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// Runs `command` (a shell command line) with stdin closed and stdout/stderr captured through
/// files in `dir` (removed afterwards).
inline ProgramRun run_shell(const std::string& command, const std::filesystem::path& dir) {
  const std::filesystem::path out = dir / "stdout.txt";
  const std::filesystem::path err = dir / "stderr.txt";
  const std::string full = command + " >" + shell_quote(out.string()) + " 2>" +
                           shell_quote(err.string()) + " </dev/null";
  const int status = std::system(full.c_str());
  ProgramRun result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = slurp(out);
  result.err = slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return result;
}

}  // namespace powertrain::testing_support
