// Helpers for the interposer tests: run a CUDA test program under emulation (LD_PRELOAD of the
// interposer, or the drop-in libcudart on LD_LIBRARY_PATH) in a fresh directory, capture its
// output, and load the JSON Lines trace it wrote (docs/emulation-trace.md).
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../support/run_command.h"

namespace powertrain::testing_emu {

// Build paths from the top-level CMakeLists (empty when emulation is not built: every test then
// skips in SetUp, but still compiles).
#ifdef POWERTRAIN_HAVE_EMULATION
inline const char* const kInterposerPath = POWERTRAIN_INTERPOSER_PATH;
inline const char* const kCudartDir = POWERTRAIN_CUDART_DIR;
inline const char* const kProgramDir = POWERTRAIN_EMU_PROGRAM_DIR;
inline const char* const kRealCudart = POWERTRAIN_REAL_CUDART;
#else
inline constexpr const char* kInterposerPath = "";
inline constexpr const char* kCudartDir = "";
inline constexpr const char* kProgramDir = "";
inline constexpr const char* kRealCudart = "";
#endif

using testing_support::ProgramRun;
using testing_support::run_shell;
using testing_support::shell_quote;
using testing_support::slurp;

/// How the emulator is put in front of the program.
enum class Mode { kPreload, kDropIn };

/// Runs `body(library)` in a child process that has dlopen'ed the drop-in libcudart.so.12 (the
/// library's constructor must not run inside the test binary itself), its trace in `dir`/trace.
/// Returns the child's exit code: body's result, 100 when the library did not load.
template <typename Body>
int in_child_with_cuda12(const std::filesystem::path& dir, Body body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("POWERTRAIN_EMU_DIR", (dir / "trace").c_str(), 1);
    void* library = ::dlopen((std::string(kCudartDir) + "/libcudart.so.12").c_str(), RTLD_NOW);
    ::_exit(library == nullptr ? 100 : body(library));
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// One trace: every line parsed, in file order.
struct Trace {
  std::vector<nlohmann::json> lines;

  /// Records of one op, in order.
  std::vector<nlohmann::json> of(const std::string& op) const {
    std::vector<nlohmann::json> result;
    for (const auto& line : lines) {
      if (line.value("op", "") == op) result.push_back(line);
    }
    return result;
  }
};

/// Parses every trace-*.jsonl file in `dir` (one per emulated process).
inline std::vector<Trace> load_traces(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  if (std::filesystem::exists(dir)) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("trace-", 0) == 0 && entry.path().extension() == ".jsonl") {
        files.push_back(entry.path());
      }
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<Trace> traces;
  for (const auto& file : files) {
    Trace trace;
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty()) trace.lines.push_back(nlohmann::json::parse(line));
    }
    traces.push_back(std::move(trace));
  }
  return traces;
}

/// A test fixture with a temporary directory; `run_program` runs a test program in it.
class EmulationTest : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef POWERTRAIN_HAVE_EMULATION
    GTEST_SKIP() << "GPU emulation is not built (no CUDA toolkit at configure time; see "
                    "POWERTRAIN_BUILD_EMULATION)";
#else
    std::string pattern =
        (std::filesystem::path(::testing::TempDir()) / "powertrain-emu-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr) << pattern;
    dir_ = pattern;
#endif
  }

  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  /// Path of a test program built from tests/emulate/programs/<name>.cu.
  static std::string program_path(const std::string& name) {
    return std::string(kProgramDir) + "/" + name;
  }

  /// Runs a test program under emulation with extra environment `env`; the trace goes to
  /// <tmp>/trace (returned by trace_dir()).
  ProgramRun run_program(const std::string& name, Mode mode = Mode::kPreload,
                         const std::vector<std::pair<std::string, std::string>>& env = {},
                         const std::string& args = "") {
    // Appends piece by piece (GCC 12 warns falsely about `"literal" + std::string`).
    std::string command = "cd ";
    command.append(shell_quote(dir_.string())).append(" && env");
    command.append(" POWERTRAIN_EMU_DIR=").append(shell_quote(trace_dir().string()));
    if (mode == Mode::kPreload) {
      command.append(" LD_PRELOAD=").append(shell_quote(kInterposerPath));
    } else {
      command.append(" LD_LIBRARY_PATH=").append(shell_quote(kCudartDir));
    }
    for (const auto& [key, value] : env) {
      command.append(" ").append(key).append("=").append(shell_quote(value));
    }
    command.append(" ").append(shell_quote(program_path(name)));
    if (!args.empty()) command.append(" ").append(args);
    return run_shell(command, dir_);
  }

  /// The single trace the last run wrote (fails the test if there is not exactly one).
  Trace only_trace() const {
    std::vector<Trace> traces = load_traces(trace_dir());
    EXPECT_EQ(traces.size(), 1u) << "trace files in " << trace_dir();
    return traces.empty() ? Trace{} : traces.front();
  }

  std::filesystem::path trace_dir() const { return dir_ / "trace"; }

  std::filesystem::path dir_;
};

}  // namespace powertrain::testing_emu
