// Output safety: a powertrain output flag never costs a user their files.
#include "core/atomic_output.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace powertrain::core {
namespace {

namespace fs = std::filesystem;

class AtomicOutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::path(::testing::TempDir()) / "powertrain-out-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::current_path(original_cwd_, ec);
    fs::remove_all(dir_, ec);
  }
  static void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_))
      names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  fs::path dir_;
  fs::path original_cwd_ = fs::current_path();
};

TEST_F(AtomicOutputTest, NewDirectoryGetsFilesAndTheMarker) {
  auto out = AtomicOutputDirectory::create(dir_ / "out");
  ASSERT_TRUE(out.ok()) << out.error().message;
  ASSERT_TRUE(out->write_file("a.txt", "hello").ok());
  EXPECT_FALSE(fs::exists(dir_ / "out"));  // nothing visible before commit
  ASSERT_TRUE(out->commit().ok());
  EXPECT_TRUE(fs::exists(dir_ / "out" / "a.txt"));
  EXPECT_TRUE(fs::exists(dir_ / "out" / kOutputMarkerName));
  EXPECT_EQ(entries(), std::vector<std::string>{"out"});
}

TEST_F(AtomicOutputTest, UserDirectoryWithFilesIsRefusedAndKept) {
  fs::create_directory(dir_ / "mine");
  write(dir_ / "mine" / "thesis.tex", "precious");
  auto out = AtomicOutputDirectory::create(dir_ / "mine");
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message.find("was not written by powertrain"), std::string::npos);
  EXPECT_NE(out.error().message.find("--force"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir_ / "mine" / "thesis.tex"));
  EXPECT_EQ(entries(), std::vector<std::string>{"mine"});  // no staging left behind
}

TEST_F(AtomicOutputTest, EarlierPowertrainOutputAndEmptyDirectoriesAreReplaced) {
  for (int round = 0; round < 2; ++round) {
    auto out = AtomicOutputDirectory::create(dir_ / "out");
    ASSERT_TRUE(out.ok()) << out.error().message;
    ASSERT_TRUE(out->write_file("round.txt", std::to_string(round)).ok());
    ASSERT_TRUE(out->commit().ok());
  }
  std::ifstream in(dir_ / "out" / "round.txt");
  std::string text;
  in >> text;
  EXPECT_EQ(text, "1");
  fs::create_directory(dir_ / "empty");
  auto out = AtomicOutputDirectory::create(dir_ / "empty");
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE(out->commit().ok());
  EXPECT_EQ(entries(), (std::vector<std::string>{"empty", "out"}));
}

TEST_F(AtomicOutputTest, ForceReplacesAUserDirectory) {
  fs::create_directory(dir_ / "mine");
  write(dir_ / "mine" / "old.txt", "x");
  auto out = AtomicOutputDirectory::create(dir_ / "mine", OutputPolicy{.force = true});
  ASSERT_TRUE(out.ok()) << out.error().message;
  ASSERT_TRUE(out->commit().ok());
  EXPECT_FALSE(fs::exists(dir_ / "mine" / "old.txt"));
}

TEST_F(AtomicOutputTest, CurrentDirectoryAncestorsHomeAndRootAreNeverReplaced) {
  fs::create_directories(dir_ / "work" / "sub");
  write(dir_ / "work" / "keep.txt", "x");
  fs::current_path(dir_ / "work" / "sub");
  const OutputPolicy force{.force = true};
  for (const char* target : {".", "./", "..", "../sub"}) {
    auto out = AtomicOutputDirectory::create(target, force);
    ASSERT_FALSE(out.ok()) << target;
    EXPECT_NE(out.error().message.find("current directory"), std::string::npos) << target;
  }
  EXPECT_FALSE(AtomicOutputDirectory::create("/", force).ok());
  EXPECT_TRUE(fs::exists(dir_ / "work" / "keep.txt"));
}

TEST_F(AtomicOutputTest, FilesSymlinksAndTrailingSlashes) {
  write(dir_ / "file", "x");
  auto over_file = AtomicOutputDirectory::create(dir_ / "file", OutputPolicy{.force = true});
  ASSERT_FALSE(over_file.ok());
  EXPECT_NE(over_file.error().message.find("not a directory"), std::string::npos);
  fs::create_directory(dir_ / "real");
  fs::create_directory_symlink(dir_ / "real", dir_ / "link");
  EXPECT_FALSE(AtomicOutputDirectory::create(dir_ / "link").ok());
  // "out/" is the same as "out" (it used to fail with "cannot move into place: Success").
  auto slash = AtomicOutputDirectory::create((dir_ / "out").string() + "/");
  ASSERT_TRUE(slash.ok()) << slash.error().message;
  ASSERT_TRUE(slash->commit().ok());
  EXPECT_TRUE(fs::is_directory(dir_ / "out"));
}

TEST_F(AtomicOutputTest, DestroyedWithoutCommitLeavesNothing) {
  {
    auto out = AtomicOutputDirectory::create(dir_ / "out");
    ASSERT_TRUE(out.ok());
    ASSERT_TRUE(out->write_file("a.txt", "x").ok());
  }
  EXPECT_TRUE(entries().empty());
}

TEST_F(AtomicOutputTest, WriteFileStaysInsideTheDirectory) {
  auto out = AtomicOutputDirectory::create(dir_ / "out");
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->write_file("../escape.txt", "x").ok());
  EXPECT_FALSE(out->write_file("/tmp/escape.txt", "x").ok());
}

TEST_F(AtomicOutputTest, CommitChecksTheTargetAgain) {
  auto out = AtomicOutputDirectory::create(dir_ / "out");
  ASSERT_TRUE(out.ok());
  // A user puts files there while powertrain computes.
  fs::create_directory(dir_ / "out");
  write(dir_ / "out" / "new.txt", "x");
  EXPECT_FALSE(out->commit().ok());
  EXPECT_TRUE(fs::exists(dir_ / "out" / "new.txt"));
}

TEST_F(AtomicOutputTest, StagingIsRemovedWhenTheProcessIsKilledBySignals) {
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP, SIGSEGV}) {
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::close(ready[0]);
      auto out = AtomicOutputDirectory::create(dir_ / "out");
      if (!out.ok()) ::_exit(3);
      (void)out->write_file("half.txt", "x");
      (void)!::write(ready[1], "r", 1);
      for (;;) ::pause();
    }
    ::close(ready[1]);
    char byte = 0;
    ASSERT_EQ(::read(ready[0], &byte, 1), 1);
    ::close(ready[0]);
    ASSERT_EQ(::kill(child, signal_number), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status)) << signal_number;
    EXPECT_EQ(WTERMSIG(status), signal_number);
    EXPECT_TRUE(entries().empty()) << "signal " << signal_number << " left "
                                   << (entries().empty() ? "" : entries().front());
  }
}

TEST_F(AtomicOutputTest, StagingOfAKilledRunIsRemovedByTheNextRun) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto out = AtomicOutputDirectory::create(dir_ / "out");
    ::kill(::getpid(), SIGKILL);  // no handler can run
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_EQ(entries().size(), 1u);  // the orphan "out.partial-PID"
  auto out = AtomicOutputDirectory::create(dir_ / "out");
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE(out->commit().ok());
  EXPECT_EQ(entries(), std::vector<std::string>{"out"});
}

TEST_F(AtomicOutputTest, SingleFilesAreReplacedOnlyWithForce) {
  write(dir_ / "plan.py", "mine");
  EXPECT_FALSE(write_file_atomically(dir_ / "plan.py", "new").ok());
  std::ifstream before(dir_ / "plan.py");
  std::string text;
  before >> text;
  EXPECT_EQ(text, "mine");
  EXPECT_TRUE(write_file_atomically(dir_ / "plan.py", "new", OutputPolicy{.force = true}).ok());
  EXPECT_FALSE(write_file_atomically(dir_, "x", OutputPolicy{.force = true}).ok());
  EXPECT_TRUE(write_file_atomically(dir_ / "fresh.csv", "x").ok());
  EXPECT_EQ(entries(), (std::vector<std::string>{"fresh.csv", "plan.py"}));
}

}  // namespace
}  // namespace powertrain::core
