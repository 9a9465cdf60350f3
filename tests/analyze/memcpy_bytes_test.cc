// analyze::read_memcpy_bytes / parse_memcpy_bytes, the second pass over a Kineto document that
// keeps the memcpy sizes: plain JSON, gzip, a tar.gz member, and the inputs it refuses.
#include "analyze/memcpy_bytes.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "../support/archive_bytes.h"

namespace powertrain::analyze {
namespace {

namespace fs = std::filesystem;

// Two memcpys (one with its args in the other order), a kernel and a memcpy without bytes.
constexpr const char* kTrace = R"({"traceEvents": [
  {"cat": "gpu_memcpy", "name": "Memcpy HtoD", "args": {"correlation": 7, "bytes": 4096}},
  {"cat": "Memcpy", "name": "Memcpy DtoH", "args": {"bytes": 128, "correlation": 9}},
  {"cat": "kernel", "name": "gemm", "args": {"correlation": 8, "bytes": 1}},
  {"cat": "gpu_memcpy", "name": "Memcpy DtoD", "args": {"correlation": 10}},
  "not an event"
]})";

class MemcpyBytesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("powertrain_memcpy_bytes_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path write(const std::string& name, const std::string& bytes) {
    const fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  fs::path dir_;
};

void expect_two_memcpys(const core::Result<MemcpyBytes>& bytes) {
  ASSERT_TRUE(bytes) << bytes.error().message;
  ASSERT_EQ(bytes->size(), 2u);
  EXPECT_EQ(bytes->at(7), 4096);
  EXPECT_EQ(bytes->at(9), 128);
}

TEST_F(MemcpyBytesTest, KeepsOnlyMemcpysWithCorrelationAndBytes) {
  expect_two_memcpys(parse_memcpy_bytes(kTrace, "mem.json"));
  // A bare array of events is a trace too.
  auto bare = parse_memcpy_bytes(
      R"([{"cat": "gpu_memcpy", "args": {"correlation": 1, "bytes": 2}}])", "bare.json");
  ASSERT_TRUE(bare) << bare.error().message;
  EXPECT_EQ(bare->at(1), 2);
}

TEST_F(MemcpyBytesTest, ReadsPlainGzipAndArchiveMembers) {
  expect_two_memcpys(read_memcpy_bytes(write("plain.json", kTrace).string()));
  expect_two_memcpys(
      read_memcpy_bytes(write("rank0.json.gz", test_support::gzip_bytes(kTrace)).string()));
  const fs::path archive = write(
      "ranks.tar.gz", test_support::gzip_bytes(
                          test_support::tar_entry("other.json", R"({"traceEvents": []})") +
                          test_support::tar_entry("rank1.json", kTrace) + std::string(1024, '\0')));
  expect_two_memcpys(read_memcpy_bytes(archive.string() + ":rank1.json"));
  auto missing = read_memcpy_bytes(archive.string() + ":rank7.json");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("no member 'rank7.json'"), std::string::npos);
}

TEST_F(MemcpyBytesTest, RefusesWhatIsNotATrace) {
  auto invalid = parse_memcpy_bytes("{\"traceEvents\": [", "broken.json");
  ASSERT_FALSE(invalid);
  EXPECT_EQ(invalid.error().message.rfind("broken.json: ", 0), 0u);  // names the file
  auto no_events = parse_memcpy_bytes(R"({"events": []})", "other.json");
  ASSERT_FALSE(no_events);
  EXPECT_EQ(no_events.error().message, "other.json: no traceEvents array");
  EXPECT_FALSE(read_memcpy_bytes((dir_ / "absent.json").string()));
  // Larger than the limit after inflation.
  EXPECT_FALSE(read_memcpy_bytes(write("big.json", kTrace).string(), 16));
}

}  // namespace
}  // namespace powertrain::analyze
