#include "serve/store.h"

#include <fmt/core.h>

#include <memory>

namespace powertrain::serve {
namespace {

const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (job_id TEXT PRIMARY KEY, info TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ranks (job_id TEXT NOT NULL, rank INTEGER NOT NULL, info TEXT NOT NULL,
  PRIMARY KEY (job_id, rank));
CREATE TABLE IF NOT EXISTS profiles (job_id TEXT PRIMARY KEY, generation INTEGER NOT NULL,
  spec TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS frontiers (job_id TEXT PRIMARY KEY, generation INTEGER NOT NULL,
  frontier TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS stragglers (job_id TEXT NOT NULL, key TEXT NOT NULL,
  info TEXT NOT NULL, PRIMARY KEY (job_id, key));
CREATE TABLE IF NOT EXISTS results (id INTEGER PRIMARY KEY AUTOINCREMENT, job_id TEXT NOT NULL,
  rank INTEGER NOT NULL, result TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS profiling (job_id TEXT PRIMARY KEY, state TEXT NOT NULL);
)sql";

struct StatementDeleter {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Statement = std::unique_ptr<sqlite3_stmt, StatementDeleter>;

std::string column_text(sqlite3_stmt* s, int i) {
  const unsigned char* text = sqlite3_column_text(s, i);
  return text ? std::string(reinterpret_cast<const char*>(text),
                            static_cast<std::size_t>(sqlite3_column_bytes(s, i)))
              : std::string();
}

}  // namespace

core::Error Store::error(const std::string& what) const {
  return core::Error{fmt::format("{}: sqlite: {}: {}", path_, what, sqlite3_errmsg(db_))};
}

core::Status Store::exec(const std::string& sql) const {
  char* message = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    core::Error e{fmt::format("{}: sqlite: {}", path_, message ? message : "error")};
    sqlite3_free(message);
    return e;
  }
  return core::Ok{};
}

core::Result<std::unique_ptr<Store>> Store::open(const std::string& path) {
  sqlite3* db = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX;
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return core::Error{fmt::format("{}: cannot open database: {}", path, message)};
  }
  std::unique_ptr<Store> store(new Store(db, path));
  sqlite3_busy_timeout(db, 5000);
  // WAL keeps readers off the writer; FULL syncs the WAL on every commit, so an acknowledged
  // write survives a crash of the process or of the machine.
  for (const char* pragma : {"PRAGMA journal_mode=WAL;", "PRAGMA synchronous=FULL;"}) {
    if (auto ok = store->exec(pragma); !ok) return ok.error();
  }
  if (auto ok = store->exec(std::string("BEGIN IMMEDIATE;") + kSchema); !ok) return ok.error();
  Statement version_stmt;
  {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT MAX(version) FROM schema_version", -1, &raw, nullptr) !=
        SQLITE_OK) {
      return store->error("reading schema_version");
    }
    version_stmt.reset(raw);
  }
  int version = 0;
  if (sqlite3_step(version_stmt.get()) == SQLITE_ROW &&
      sqlite3_column_type(version_stmt.get(), 0) != SQLITE_NULL) {
    version = sqlite3_column_int(version_stmt.get(), 0);
  }
  version_stmt.reset();
  if (version > kSchemaVersion) {
    (void)store->exec("ROLLBACK;");
    return core::Error{
        fmt::format("{}: schema version {} is newer than this server's {}; use a newer powertrain",
                    path, version, kSchemaVersion)};
  }
  if (version == 0) {
    if (auto ok = store->exec(
            fmt::format("INSERT INTO schema_version (version) VALUES ({});", kSchemaVersion));
        !ok) {
      return ok.error();
    }
  } else if (version < kSchemaVersion) {
    // Version 1 lacked the profiling table, which the schema above has just created.
    if (auto ok =
            store->exec(fmt::format("UPDATE schema_version SET version = {};", kSchemaVersion));
        !ok) {
      return ok.error();
    }
  }
  if (auto ok = store->exec("COMMIT;"); !ok) return ok.error();
  return store;
}

Store::~Store() { sqlite3_close(db_); }

core::Status Store::write(const char* sql, const std::vector<std::string>& text_args,
                          const std::vector<long long>& int_args) {
  std::lock_guard lock(mutex_);
  return write_locked(sql, text_args, int_args);
}

core::Status Store::write_locked(const char* sql, const std::vector<std::string>& text_args,
                                 const std::vector<long long>& int_args) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db_, sql, -1, &raw, nullptr) != SQLITE_OK) return error("prepare");
  Statement stmt(raw);
  int index = 1;
  // Placeholders are numbered ?1.. for texts, then the integers follow.
  for (const std::string& text : text_args) {
    sqlite3_bind_text(raw, index++, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  }
  for (long long value : int_args) sqlite3_bind_int64(raw, index++, value);
  if (sqlite3_step(raw) != SQLITE_DONE) return error("write");
  return core::Ok{};
}

core::Status Store::put_job(const std::string& job_id, const std::string& info_json) {
  return write("INSERT OR REPLACE INTO jobs (job_id, info) VALUES (?1, ?2)", {job_id, info_json},
               {});
}
core::Status Store::put_rank(const std::string& job_id, int rank, const std::string& info_json) {
  return write("INSERT OR REPLACE INTO ranks (job_id, info, rank) VALUES (?1, ?2, ?3)",
               {job_id, info_json}, {rank});
}
core::Status Store::put_profile(const std::string& job_id, long long generation,
                                const std::string& json) {
  return write("INSERT OR REPLACE INTO profiles (job_id, spec, generation) VALUES (?1, ?2, ?3)",
               {job_id, json}, {generation});
}
core::Status Store::put_frontier(const std::string& job_id, long long generation,
                                 const std::string& json) {
  return write(
      "INSERT OR REPLACE INTO frontiers (job_id, frontier, generation) VALUES (?1, ?2, ?3)",
      {job_id, json}, {generation});
}
core::Status Store::put_straggler(const std::string& job_id, const std::string& key,
                                  const std::string& json) {
  return write("INSERT OR REPLACE INTO stragglers (job_id, key, info) VALUES (?1, ?2, ?3)",
               {job_id, key, json}, {});
}
core::Status Store::clear_stragglers(const std::string& job_id) {
  return write("DELETE FROM stragglers WHERE job_id = ?1", {job_id}, {});
}
core::Status Store::add_result(const std::string& job_id, int rank, const std::string& json) {
  return write("INSERT INTO results (job_id, result, rank) VALUES (?1, ?2, ?3)", {job_id, json},
               {rank});
}

core::Status Store::put_profiling(const std::string& job_id, const std::string& json) {
  return write("INSERT OR REPLACE INTO profiling (job_id, state) VALUES (?1, ?2)", {job_id, json},
               {});
}

core::Status Store::add_result_with_profiling(
    const std::string& job_id, int rank, const std::string& result_json,
    const std::string& profiling_json,
    const std::optional<std::pair<long long, std::string>>& profile) {
  // One transaction: a result that moved the sweep is never stored without the sweep's new state.
  std::lock_guard lock(mutex_);
  if (auto ok = exec("BEGIN IMMEDIATE;"); !ok) return ok;
  core::Status ok = write_locked("INSERT INTO results (job_id, result, rank) VALUES (?1, ?2, ?3)",
                                 {job_id, result_json}, {rank});
  if (ok) {
    ok = write_locked("INSERT OR REPLACE INTO profiling (job_id, state) VALUES (?1, ?2)",
                      {job_id, profiling_json}, {});
  }
  if (ok && profile) {
    ok = write_locked(
        "INSERT OR REPLACE INTO profiles (job_id, spec, generation) VALUES (?1, ?2, ?3)",
        {job_id, profile->second}, {profile->first});
  }
  if (ok) ok = exec("COMMIT;");
  if (!ok) (void)exec("ROLLBACK;");
  return ok;
}

core::Result<StoredState> Store::load() const {
  std::lock_guard lock(mutex_);
  StoredState state;
  auto query = [&](const char* sql, auto&& row) -> core::Status {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &raw, nullptr) != SQLITE_OK) return error(sql);
    Statement stmt(raw);
    int rc;
    while ((rc = sqlite3_step(raw)) == SQLITE_ROW) row(raw);
    if (rc != SQLITE_DONE) return error(sql);
    return core::Ok{};
  };
  core::Status ok = query("SELECT job_id, info FROM jobs ORDER BY rowid", [&](sqlite3_stmt* s) {
    state.jobs.push_back({column_text(s, 0), column_text(s, 1)});
  });
  if (ok) {
    ok = query("SELECT job_id, rank, info FROM ranks", [&](sqlite3_stmt* s) {
      state.ranks.push_back({column_text(s, 0), sqlite3_column_int(s, 1), column_text(s, 2)});
    });
  }
  auto blobs = [&](const char* sql, std::vector<StoredBlobRow>& out) {
    return query(sql, [&](sqlite3_stmt* s) {
      out.push_back(
          {column_text(s, 0), column_text(s, 1), sqlite3_column_int64(s, 2), column_text(s, 3)});
    });
  };
  if (ok) ok = blobs("SELECT job_id, '', generation, spec FROM profiles", state.profiles);
  if (ok) ok = blobs("SELECT job_id, '', generation, frontier FROM frontiers", state.frontiers);
  if (ok) ok = blobs("SELECT job_id, key, 0, info FROM stragglers", state.stragglers);
  if (ok) ok = blobs("SELECT job_id, '', 0, state FROM profiling", state.profiling);
  if (ok) {
    ok = query("SELECT job_id, COUNT(*) FROM results GROUP BY job_id", [&](sqlite3_stmt* s) {
      state.result_counts.emplace_back(column_text(s, 0), sqlite3_column_int64(s, 1));
    });
  }
  if (!ok) return ok.error();
  return state;
}

}  // namespace powertrain::serve
