// Progress lines: in place on a terminal, throttled plain lines otherwise, nothing when quiet.
#include "core/progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <thread>

namespace powertrain::core {
namespace {

std::string captured(std::FILE* file) {
  std::fflush(file);
  std::rewind(file);
  std::string text;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, file)) text.append(buffer, n);
  return text;
}

TEST(ProgressLine, TerminalRewritesOneLineAndEndsItWithTheTotalTime) {
  std::FILE* file = std::tmpfile();
  {
    ProgressLine line("planning", "steps", true, true, file, 5.0);
    for (int i = 0; i <= 3; ++i) {
      line.update(i * 25, 100);
      std::this_thread::sleep_for(std::chrono::milliseconds(120));
    }
    line.update(100, 100);
  }
  const std::string text = captured(file);
  std::fclose(file);
  EXPECT_NE(text.find("\rplanning:"), std::string::npos) << text;
  EXPECT_NE(text.find("ETA"), std::string::npos) << text;
  EXPECT_NE(text.find("done in"), std::string::npos) << text;
  EXPECT_NE(text.find("100 of 100 steps"), std::string::npos) << text;
  // One line: the only newline is the last character.
  EXPECT_EQ(text.find('\n'), text.size() - 1) << text;
}

TEST(ProgressLine, PlainOutputIsThrottledToTheInterval) {
  std::FILE* file = std::tmpfile();
  {
    ProgressLine line("replay", "tasks", true, false, file, 3600.0);
    for (int i = 0; i < 10000; ++i) line.update(i, 10000);
  }
  const std::string text = captured(file);
  std::fclose(file);
  EXPECT_EQ(text, "");  // nothing was due within the hour, and nothing printed means no last line
}

TEST(ProgressLine, QuietPrintsNothing) {
  std::FILE* file = std::tmpfile();
  {
    ProgressLine line("planning", "steps", false, true, file, 0.0);
    line.update(1, 2);
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    line.update(2, 2);
  }
  EXPECT_EQ(captured(file), "");
  std::fclose(file);
}

TEST(FormatDuration, Units) {
  EXPECT_EQ(format_duration(3.2), "3 s");
  EXPECT_EQ(format_duration(125), "2 min 05 s");
  EXPECT_EQ(format_duration(3720), "1 h 02 min");
  EXPECT_EQ(format_duration(-1), "?");
}

}  // namespace
}  // namespace powertrain::core
