// Durable state of the plan server in one SQLite file: jobs, ranks, profiles, frontiers, straggler
// state and posted results. Every write is one transaction committed (WAL, synchronous=FULL) before
// the server acknowledges it, so a restart — also after kill -9 — sees every acknowledged write.
#pragma once

#include <sqlite3.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace powertrain::serve {

/// Bumped when the tables change; a database with a newer version is refused.
inline constexpr int kSchemaVersion = 2;  // 2: in-vivo profiling state

struct StoredJobRow {
  std::string job_id;
  std::string info_json;
};
struct StoredRankRow {
  std::string job_id;
  int rank = 0;
  std::string info_json;
};
struct StoredBlobRow {  // profiles, frontiers (one per job) and stragglers (one per key)
  std::string job_id;
  std::string key;  // straggler key ("rank:3", "pipeline:1"); "" otherwise
  long long generation = 0;
  std::string json;
};

/// Everything in the database, for loading at start-up.
struct StoredState {
  std::vector<StoredJobRow> jobs;
  std::vector<StoredRankRow> ranks;
  std::vector<StoredBlobRow> profiles;
  std::vector<StoredBlobRow> frontiers;
  std::vector<StoredBlobRow> stragglers;
  std::vector<StoredBlobRow> profiling;  // in-vivo profiling state, one per job
  std::vector<std::pair<std::string, long long>> result_counts;  // job id, results posted
};

/// Thread-safe (one connection behind a mutex). Errors name the database file.
class Store {
 public:
  /// Opens or creates `path` (":memory:" for tests and fuzzing).
  static core::Result<std::unique_ptr<Store>> open(const std::string& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  core::Status put_job(const std::string& job_id, const std::string& info_json);
  core::Status put_rank(const std::string& job_id, int rank, const std::string& info_json);
  core::Status put_profile(const std::string& job_id, long long generation,
                           const std::string& json);
  core::Status put_frontier(const std::string& job_id, long long generation,
                            const std::string& json);
  core::Status put_straggler(const std::string& job_id, const std::string& key,
                             const std::string& json);
  core::Status clear_stragglers(const std::string& job_id);
  core::Status add_result(const std::string& job_id, int rank, const std::string& json);
  core::Status put_profiling(const std::string& job_id, const std::string& json);
  /// A result, the profiling state it advanced and (when the sweep ended) the profile it
  /// produced as (generation, spec JSON), in one transaction.
  core::Status add_result_with_profiling(
      const std::string& job_id, int rank, const std::string& result_json,
      const std::string& profiling_json,
      const std::optional<std::pair<long long, std::string>>& profile);
  core::Result<StoredState> load() const;

 private:
  Store(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  core::Status exec(const std::string& sql) const;
  core::Status write(const char* sql, const std::vector<std::string>& text_args,
                     const std::vector<long long>& int_args);
  core::Status write_locked(const char* sql, const std::vector<std::string>& text_args,
                            const std::vector<long long>& int_args);
  core::Error error(const std::string& what) const;

  sqlite3* db_;
  std::string path_;
  mutable std::mutex mutex_;
};

}  // namespace powertrain::serve
