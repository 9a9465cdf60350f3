// Starts `powertrain serve` as a child process on a free loopback port (it prints the port) and
// kills it; for the crash and compatibility tests.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

namespace powertrain::serve_test {

class ServerProcess {
 public:
  ~ServerProcess() { kill_now(); }

  /// Starts the server; returns the port, or 0 if it did not report one within `timeout_ms`.
  unsigned short start(const std::string& db, std::vector<std::string> extra = {},
                       int timeout_ms = 10000) {
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) return 0;
    std::vector<std::string> args = {
        POWERTRAIN_CLI_PATH, "serve", "--listen", "127.0.0.1:0", "--db", db, "--no-access-log"};
    args.insert(args.end(), extra.begin(), extra.end());
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      const int devnull = ::open("/dev/null", O_WRONLY);
      if (std::getenv("POWERTRAIN_SERVE_TEST_LOGS") == nullptr) ::dup2(devnull, STDERR_FILENO);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(out[1]);
    std::string line;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (line.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      pollfd p{out[0], POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char chunk[256];
      const ssize_t n = ::read(out[0], chunk, sizeof chunk);
      if (n <= 0) break;
      line.append(chunk, static_cast<std::size_t>(n));
    }
    ::close(out[0]);
    const std::size_t at = line.find("127.0.0.1:");
    if (at == std::string::npos) return 0;
    return static_cast<unsigned short>(std::atoi(line.c_str() + at + 10));
  }

  void kill_now(int sig = SIGKILL) {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

}  // namespace powertrain::serve_test
