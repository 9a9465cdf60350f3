// trace::gunzip on its own: whole and multi-member streams, and one-line errors naming the
// source for empty, truncated, corrupted and oversized input.
#include "trace/gzip.h"

#include <gtest/gtest.h>

#include <string>

#include "../support/archive_bytes.h"

namespace powertrain::trace {
namespace {

using test_support::gzip_bytes;

std::string text_of(std::size_t n) {
  std::string text;
  for (std::size_t i = 0; text.size() < n; ++i) text += "line " + std::to_string(i) + "\n";
  text.resize(n);
  return text;
}

std::string error_of(std::string_view bytes, std::size_t cap = 1 << 24) {
  auto out = gunzip(bytes, "t.gz", cap);
  return out ? "no error" : out.error().message;
}

TEST(Gzip, InflatesOneAndSeveralMembers) {
  const std::string text = text_of(100'000);
  auto one = gunzip(gzip_bytes(text), "t.gz", 1 << 24);
  ASSERT_TRUE(one) << one.error().message;
  EXPECT_EQ(one->view(), text);
  // `cat a.gz b.gz` is one stream of both, and zero padding after the last member is allowed.
  auto two = gunzip(gzip_bytes("abc") + gzip_bytes("def") + std::string(10, '\0'), "t.gz", 64);
  ASSERT_TRUE(two) << two.error().message;
  EXPECT_EQ(two->view(), "abcdef");
  auto empty_member = gunzip(gzip_bytes(""), "t.gz", 64);
  ASSERT_TRUE(empty_member) << empty_member.error().message;
  EXPECT_EQ(empty_member->size(), 0u);
  EXPECT_TRUE(is_gzip(gzip_bytes("x")));
  EXPECT_FALSE(is_gzip("{\"traceEvents\":[]}"));
}

TEST(Gzip, EmptyAndNonGzipInputAreErrors) {
  EXPECT_EQ(error_of(""), "t.gz: not gzip data");
  EXPECT_EQ(error_of("\x1f"), "t.gz: not gzip data");
  EXPECT_EQ(error_of("plain text"), "t.gz: not gzip data");
}

TEST(Gzip, TruncatedInputNamesWhereItEnds) {
  const std::string gz = gzip_bytes(text_of(50'000));
  for (const std::size_t keep : {std::size_t{10}, gz.size() / 2, gz.size() - 1}) {
    const std::string message = error_of(std::string_view(gz).substr(0, keep));
    EXPECT_EQ(message.rfind("t.gz: truncated gzip data: the input ends after " +
                                std::to_string(keep) + " compressed bytes",
                            0),
              0u)
        << message;
    EXPECT_EQ(message.find('\n'), std::string::npos);
  }
}

TEST(Gzip, CorruptedInputNamesTheByteAndZlibsReason) {
  const std::string gz = gzip_bytes(text_of(50'000));
  std::string flipped = gz;
  for (std::size_t i = 20; i < 40; ++i) flipped[i] = static_cast<char>(flipped[i] ^ 0x5a);
  const std::string body = error_of(flipped);
  EXPECT_EQ(body.rfind("t.gz: corrupt gzip data at compressed byte ", 0), 0u) << body;
  std::string crc = gz;
  crc[crc.size() - 6] = static_cast<char>(crc[crc.size() - 6] ^ 1);  // the trailer's CRC-32
  const std::string trailer = error_of(crc);
  EXPECT_NE(trailer.find("incorrect data check"), std::string::npos) << trailer;
  EXPECT_EQ(error_of(gz + "xyz"),
            "t.gz: corrupt gzip data: 3 bytes of trailing garbage after the gzip stream at "
            "compressed byte " +
                std::to_string(gz.size()));
}

TEST(Gzip, OutputBeyondTheCapIsAnError) {
  const std::string message = error_of(gzip_bytes(text_of(200'000)), 100'000);
  EXPECT_EQ(message.rfind("t.gz: gzip data inflates to ", 0), 0u) << message;
  EXPECT_TRUE(gunzip(gzip_bytes(text_of(100'000)), "t.gz", 100'000));
}

}  // namespace
}  // namespace powertrain::trace
