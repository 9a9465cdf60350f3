// The plan server's SQLite store read back: what one connection wrote, a reopened one loads
// (latest generation per blob, results counted per job); a file that is not a database and a
// database from a newer schema are refused with the file's name.
#include "serve/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace powertrain::serve {
namespace {

namespace fs = std::filesystem;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("powertrain_store_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

TEST_F(StoreTest, ReopenedStoreLoadsWhatWasWritten) {
  const std::string db = path("plans.db");
  {
    auto store = Store::open(db);
    ASSERT_TRUE(store) << store.error().message;
    Store& s = **store;
    ASSERT_TRUE(s.put_job("job-a", R"({"stages":2})"));
    ASSERT_TRUE(s.put_rank("job-a", 1, R"({"host":"n1"})"));
    ASSERT_TRUE(s.put_rank("job-a", 0, R"({"host":"n0"})"));
    ASSERT_TRUE(s.put_profile("job-a", 1, R"({"p":1})"));
    ASSERT_TRUE(s.put_frontier("job-a", 1, R"({"f":1})"));
    ASSERT_TRUE(s.put_frontier("job-a", 2, R"({"f":2})"));  // replaces generation 1
    ASSERT_TRUE(s.put_straggler("job-a", "rank:3", R"({"slowdown":1.2})"));
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(s.add_result("job-a", i % 2, R"({"time_s":1.0})"));
  }
  auto store = Store::open(db);
  ASSERT_TRUE(store) << store.error().message;
  auto state = (*store)->load();
  ASSERT_TRUE(state) << state.error().message;
  ASSERT_EQ(state->jobs.size(), 1u);
  EXPECT_EQ(state->jobs[0].job_id, "job-a");
  EXPECT_EQ(state->jobs[0].info_json, R"({"stages":2})");
  ASSERT_EQ(state->ranks.size(), 2u);
  ASSERT_EQ(state->profiles.size(), 1u);
  EXPECT_EQ(state->profiles[0].generation, 1);
  ASSERT_EQ(state->frontiers.size(), 1u);
  EXPECT_EQ(state->frontiers[0].generation, 2);
  EXPECT_EQ(state->frontiers[0].json, R"({"f":2})");
  ASSERT_EQ(state->stragglers.size(), 1u);
  EXPECT_EQ(state->stragglers[0].key, "rank:3");
  ASSERT_EQ(state->result_counts.size(), 1u);
  EXPECT_EQ(state->result_counts[0], (std::pair<std::string, long long>{"job-a", 3}));
}

TEST_F(StoreTest, AFileThatIsNotADatabaseIsRefusedByName) {
  const std::string db = path("not_a.db");
  std::ofstream(db) << "this is a text file, not SQLite, and long enough to have a header page\n";
  auto store = Store::open(db);
  ASSERT_FALSE(store);
  EXPECT_NE(store.error().message.find(db), std::string::npos) << store.error().message;
}

TEST_F(StoreTest, ANewerSchemaIsRefused) {
  const std::string db = path("newer.db");
  ASSERT_TRUE(Store::open(db));  // creates the tables at kSchemaVersion
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
  const std::string bump =
      "INSERT INTO schema_version (version) VALUES (" + std::to_string(kSchemaVersion + 1) + ");";
  EXPECT_EQ(sqlite3_exec(raw, bump.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
  auto store = Store::open(db);
  ASSERT_FALSE(store);
  EXPECT_NE(store.error().message.find("newer than this server's"), std::string::npos)
      << store.error().message;
  EXPECT_EQ(store.error().message.rfind(db, 0), 0u) << store.error().message;
}

}  // namespace
}  // namespace powertrain::serve
