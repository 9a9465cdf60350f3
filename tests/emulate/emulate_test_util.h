// Helpers for the emulation tests: parse in-memory traces, write them into a temporary directory.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "emulate/emulation_trace.h"

namespace powertrain::emulate::testing {

/// Parses each text as trace-<i>.jsonl; fails the test on an error.
inline std::vector<ProcessTrace> parse_all(const std::vector<std::string>& texts) {
  std::vector<ProcessTrace> out;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    auto trace = parse_emulation_trace(texts[i], "trace-" + std::to_string(i) + ".jsonl");
    EXPECT_TRUE(trace.ok()) << (trace.ok() ? "" : trace.error().message);
    if (trace.ok()) out.push_back(std::move(*trace));
  }
  return out;
}

/// A temporary directory removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::path(::testing::TempDir()) / "powertrain-emulate-XXXXXX").string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    const std::filesystem::path file = path_ / name;
    std::ofstream(file, std::ios::binary) << text;
    return file;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace powertrain::emulate::testing
