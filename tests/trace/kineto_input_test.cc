// Getting trace bytes: files, gzip (magic-byte detection, truncation, corruption, size caps),
// tar archives and directories.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../support/archive_bytes.h"
#include "trace/gzip.h"
#include "trace/kineto_reader.h"
#include "trace/tar.h"

namespace powertrain::trace {
namespace {

namespace fs = std::filesystem;

using test_support::gzip_bytes;
using test_support::tar_entry;

std::string rank_trace(int rank, int events) {
  std::string json = "{\n\"distributedInfo\": {\"rank\": " + std::to_string(rank) +
                     ", \"world_size\": 2},\n\"traceEvents\": [\n";
  for (int i = 0; i < events; ++i) {
    json += std::string(i > 0 ? ",\n" : "") +
            R"j({"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": )j" +
            std::to_string(100 + i) + R"j(, "dur": 1})j";
  }
  return json + "\n]}\n";
}

class KinetoFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("powertrain_kineto_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& bytes) {
    const fs::path path = dir_ / name;
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << bytes;
    return path.string();
  }
  fs::path dir_;
};

TEST_F(KinetoFiles, PlainAndGzipFilesAreToldApartByTheirBytes) {
  const std::string json = rank_trace(1, 3);
  const std::string plain = write("a.json", json);
  const std::string gz_named_json = write("b.json", gzip_bytes(json));  // gzip, whatever the name
  for (const std::string& path : {plain, gz_named_json}) {
    auto trace = read_kineto_trace(path, 0);
    ASSERT_TRUE(trace.ok()) << trace.error().message;
    EXPECT_EQ(trace->events.size(), 3u);
    EXPECT_EQ(trace->rank, 1);
    EXPECT_EQ(trace->source, path);
  }
  auto from_memory = parse_kineto_bytes(gzip_bytes(json), "mem.gz", 0);
  ASSERT_TRUE(from_memory.ok()) << from_memory.error().message;
  EXPECT_EQ(from_memory->events.size(), 3u);
}

TEST_F(KinetoFiles, LargeFilesAreMappedAndParsedTheSame) {
  std::string json = rank_trace(0, 30'000);  // > 1 MiB: read through mmap
  ASSERT_GT(json.size(), std::size_t{1} << 20);
  const std::string path = write("big.json", json);
  auto mapped = read_kineto_trace(path, 0);
  ASSERT_TRUE(mapped.ok()) << mapped.error().message;
  auto copied = parse_kineto_json(json, "big.json", 0);
  ASSERT_TRUE(copied.ok());
  ASSERT_EQ(mapped->events.size(), 30'000u);
  EXPECT_EQ(mapped->events.back().start_ns, copied->events.back().start_ns);
  // The file is not modified by the in-place window brackets.
  std::ifstream in(path, std::ios::binary);
  const std::string after((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(after, json);
}

TEST_F(KinetoFiles, TruncatedAndCorruptGzipAreErrorsNamingTheFile) {
  const std::string gz = gzip_bytes(rank_trace(0, 200));
  const std::string truncated = write("cut.json.gz", gz.substr(0, gz.size() / 2));
  auto cut = read_kineto_trace(truncated, 0);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().message.rfind(truncated + ": truncated gzip data", 0), 0u)
      << cut.error().message;
  std::string flipped = gz;
  for (std::size_t i = 20; i < 40; ++i) flipped[i] = static_cast<char>(flipped[i] ^ 0x5a);
  const std::string corrupt = write("bad.json.gz", flipped);
  auto bad = read_kineto_trace(corrupt, 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message.rfind(corrupt + ": corrupt gzip data", 0), 0u)
      << bad.error().message;
  // A wrong CRC in the trailer is corruption too.
  std::string crc = gz;
  crc[crc.size() - 6] = static_cast<char>(crc[crc.size() - 6] ^ 1);
  auto crc_error = parse_kineto_bytes(crc, "crc.gz", 0);
  ASSERT_FALSE(crc_error.ok());
  EXPECT_NE(crc_error.error().message.find("corrupt gzip data"), std::string::npos);
  auto garbage = parse_kineto_bytes(gz + "garbage", "tail.gz", 0);
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.error().message.find("trailing garbage"), std::string::npos);
  auto empty = read_kineto_trace(write("empty.json", ""), 0);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("empty file"), std::string::npos);
  auto missing = read_kineto_trace((dir_ / "nope.json").string(), 0);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("nope.json: cannot open: No such file"),
            std::string::npos);
}

TEST_F(KinetoFiles, GzipSizeCapAndConcatenatedMembers) {
  const std::string json = rank_trace(0, 50);
  ReadOptions options;
  options.max_json_bytes = json.size() - 1;
  auto capped = parse_kineto_bytes(gzip_bytes(json), "cap.gz", 0, options);
  ASSERT_FALSE(capped.ok());
  EXPECT_NE(capped.error().message.find("more than the limit"), std::string::npos);
  // `cat a.gz b.gz` inflates to the concatenation.
  const std::string half = json.substr(0, json.size() / 2);
  auto joined =
      parse_kineto_bytes(gzip_bytes(half) + gzip_bytes(json.substr(half.size())), "joined.gz", 0);
  ASSERT_TRUE(joined.ok()) << joined.error().message;
  EXPECT_EQ(joined->events.size(), 50u);
}

TEST_F(KinetoFiles, TarGzArchivesYieldOneTracePerMember) {
  std::string tar = tar_entry("run/", "", '5') +
                    tar_entry("run/worker1.pt.trace.json", rank_trace(1, 4)) +
                    tar_entry("run/._worker1.pt.trace.json", "mac resource fork") +
                    tar_entry("run/notes.txt", "hello") +
                    tar_entry("run/worker0.pt.trace.json.gz", gzip_bytes(rank_trace(0, 2))) +
                    std::string(1024, '\0');
  const std::string path = write("ranks.tar.gz", gzip_bytes(tar));
  auto traces = read_kineto_traces({path});
  ASSERT_TRUE(traces.ok()) << traces.error().message;
  ASSERT_EQ(traces->size(), 2u);
  EXPECT_EQ((*traces)[0].rank, 0);
  EXPECT_EQ((*traces)[0].events.size(), 2u);
  EXPECT_EQ((*traces)[0].source, path + ":run/worker0.pt.trace.json.gz");
  EXPECT_EQ((*traces)[1].rank, 1);
  EXPECT_EQ((*traces)[1].events.size(), 4u);
  // One trace at a time is not an archive reader.
  auto single = read_kineto_trace(path, 0);
  ASSERT_FALSE(single.ok());
  EXPECT_NE(single.error().message.find("a tar archive"), std::string::npos);
  // A truncated archive.
  auto cut = read_kineto_traces({write("cut.tar", tar.substr(0, 1100))});
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.error().message.find("truncated tar archive"), std::string::npos);
  // Ranks without distributedInfo come from member order.
  std::string anonymous =
      tar_entry("b.json", "{\"traceEvents\": []}") + tar_entry("a.json", "{\"traceEvents\": []}");
  auto ordered = read_kineto_traces({write("anon.tar", anonymous)});
  ASSERT_TRUE(ordered.ok()) << ordered.error().message;
  ASSERT_EQ(ordered->size(), 2u);
  EXPECT_NE((*ordered)[0].source.find(":a.json"), std::string::npos);
  EXPECT_EQ((*ordered)[1].rank, 1);
}

TEST_F(KinetoFiles, TarHeadersAreValidated) {
  const std::string good = tar_entry("x.json", "{}");
  EXPECT_TRUE(is_tar(good));
  std::string bad = good;
  bad[0] = 'y';  // checksum no longer matches
  EXPECT_FALSE(is_tar(bad));
  auto members = list_tar_members(bad, "bad.tar");
  ASSERT_FALSE(members.ok());
  EXPECT_NE(members.error().message.find("bad.tar: tar header at byte 0: bad checksum"),
            std::string::npos);
  auto listed = list_tar_members(good + std::string(1024, '\0'), "good.tar");
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].name, "x.json");
  EXPECT_EQ((*listed)[0].offset, 512u);
  EXPECT_EQ((*listed)[0].size, 2u);
  // A GNU long name applies to the next member.
  const std::string long_name(150, 'n');
  auto gnu = list_tar_members(
      tar_entry("././@LongLink", long_name + ".json", 'L') + tar_entry("short", "{}"), "gnu.tar");
  ASSERT_TRUE(gnu.ok()) << gnu.error().message;
  ASSERT_EQ(gnu->size(), 1u);
  EXPECT_EQ((*gnu)[0].name, long_name + ".json");
}

TEST_F(KinetoFiles, DirectoriesAreReadInNameOrder) {
  write("traces/rank_b.json", "{\"traceEvents\": []}");
  write("traces/rank_a.json.gz", gzip_bytes("{\"traceEvents\": []}"));
  write("traces/readme.md", "not a trace");
  write("traces/sub/rank_c.json", "{\"traceEvents\": []}");  // not recursive
  auto traces = read_kineto_traces({(dir_ / "traces").string()});
  ASSERT_TRUE(traces.ok()) << traces.error().message;
  ASSERT_EQ(traces->size(), 2u);
  EXPECT_NE((*traces)[0].source.find("rank_a.json.gz"), std::string::npos);
  EXPECT_EQ((*traces)[0].rank, 0);
  EXPECT_EQ((*traces)[1].rank, 1);
  auto none = read_kineto_traces({(dir_ / "traces" / "sub" / "x").string()});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("no such file or directory"), std::string::npos);
  fs::create_directories(dir_ / "empty");
  auto empty = read_kineto_traces({(dir_ / "empty").string()});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("no *.json or *.json.gz files"), std::string::npos);
  EXPECT_FALSE(read_kineto_traces({}).ok());
}

}  // namespace
}  // namespace powertrain::trace
