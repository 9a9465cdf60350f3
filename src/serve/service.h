// The plan server's logic without the network: Zeus PFO routes (register_job, register_rank,
// schedule, result, info) plus Perseus's online parts (profile → background frontier
// characterization, straggler → T_opt = min(T*, T′) plan switch). Requests and responses are plain
// values, so tests and the fuzzer drive it directly; src/serve/server.h puts it on HTTP.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "report/plan_store.h"
#include "serve/profiling.h"
#include "serve/store.h"

namespace powertrain::serve {

struct Request {
  std::string method;  // "GET", "POST", "DELETE", ...
  std::string target;  // path and query, e.g. "/schedule/ID?rank=3"
  std::string body;
  std::string content_type;
};

struct Response {
  int status = 200;
  std::string body = "null";
  std::string content_type = "application/json";
  int retry_after_s = 0;          // > 0: send Retry-After
  bool schedule_pending = false;  // /schedule has nothing to serve yet: the caller may wait
  const char* route = "unknown";  // route template (a literal), for metrics and logs
  std::string job_id;             // for logs
};

struct ServiceOptions {
  std::size_t max_characterize_queue = 64;  // profiles waiting for a solve; more → 503
  bool background = true;                   // false: characterize inside POST /profile (tests)
  std::string scheduler_name = "PerseusOnline";
};

/// Parsed and validated JobInfo / RankInfo (Zeus field names).
struct JobInfo {
  std::string job_id;
  int pp_degree = 1, dp_degree = 1, tp_degree = 1, world_size = 1;
  std::string job_metadata;
  int num_microbatches = 0;  // extension: lets /schedule answer before any profile (0 = unknown)
  std::string schedule = "1f1b";
};
struct RankInfo {
  int rank = 0, dp_rank = 0, pp_rank = 0, tp_rank = 0;
  std::vector<int> available_frequencies;
};

/// A frontier as the server stores and serves it.
struct ServedFrontier {
  report::StoredFrontier stored;  // points slowest first, plans as changes
  double unit_time_s = 0.0;
  double p_blocking_w = 0.0;
  int num_gpus = 0;
  double max_clock_energy_at_t_min_j = 0.0;  // all max clock finishing at T_min (modelled)
  double solve_s = 0.0;
};

enum class JobStatus { kWaiting, kProfiling, kCharacterizing, kReady, kFailed };
const char* job_status_name(JobStatus status);

class Service {
 public:
  /// Loads every job from `store` and re-queues profiles without a frontier.
  static core::Result<std::unique_ptr<Service>> create(std::unique_ptr<Store> store,
                                                       ServiceOptions options);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  /// Thread-safe.
  Response handle(const Request& request);

  /// Jobs by status, for /metrics.
  std::map<std::string, int> job_counts() const;
  std::size_t characterize_queue_depth() const;
  /// Blocks until the background queue is empty and idle (tests).
  void wait_idle();
  /// Test hook: while paused the background worker takes no profile off the queue, so the queue
  /// fills deterministically (--max-characterize-queue → 503).
  void pause_characterization(bool pause);

 private:
  struct Straggler {
    std::string key;
    double slowdown = 0.0;  // T′ = slowdown × T_min when > 0, else T′ = T_min + delay_s
    double delay_s = 0.0;
    std::string json;  // as posted (normalized)
  };
  struct ProfileSpec {
    std::string csv;
    int microbatches = 0;
    double p_blocking_w = 0.0;
    double unit_time_s = 1e-3;
    std::string schedule = "1f1b";
    long long generation = 0;
  };
  struct Job {
    JobInfo info;
    std::map<int, RankInfo> ranks;
    std::optional<ProfileSpec> profile;
    std::vector<std::vector<std::pair<std::string, int>>> max_clock_plan;  // per stage
    std::shared_ptr<const ServedFrontier> frontier;
    long long frontier_generation = -1;
    JobStatus status = JobStatus::kWaiting;
    std::string error;
    std::map<std::string, Straggler> stragglers;
    long long results = 0;
    // What /schedule serves, rendered once per change of the served point (frontier, straggler,
    // profile) instead of per request: per pipeline stage, the JSON array of [instruction, MHz].
    // The body up to the rank: {"frequencies":[...] (plus ,"profiling":{...} while profiling).
    std::vector<std::string> served_prefix;
    std::optional<std::size_t> served_point;  // frontier point behind served_prefix, if any
    std::optional<InVivoProfiling> in_vivo;   // the server-driven clock sweep (Perseus §5)
  };

  Service(std::unique_ptr<Store> store, ServiceOptions options);
  core::Status load();
  Response route(const Request& request);
  void worker_loop();
  void characterize(const std::string& job_id, const ProfileSpec& spec);

  Response info() const;
  Response register_job(const Request& request);
  Response register_rank(const std::string& job_id, const Request& request);
  Response schedule(const std::string& job_id, const std::string& query);
  Response result(const std::string& job_id, const Request& request);
  Response post_profile(const std::string& job_id, const Request& request);
  Response get_frontier(const std::string& job_id, const std::string& query);
  Response post_straggler(const std::string& job_id, const Request& request);
  Response delete_straggler(const std::string& job_id);
  Response get_job(const std::string& job_id);
  Response post_profiling(const std::string& job_id, const Request& request);
  Response get_profiling(const std::string& job_id);
  // Applies a /result to the job's in-vivo profiling (caller holds write_mutex_); returns an
  // error response, or nullopt with `profiling` updated and `profile` set when the sweep ended.
  std::optional<Response> advance_profiling(int rank, const nlohmann::json& result,
                                            InVivoProfiling& profiling,
                                            std::optional<ProfileSpec>& profile);

  // Current deployed point under `job` (caller holds state_mutex_): T_min's, or T_opt's with
  // stragglers. Precondition: job.frontier.
  std::size_t current_point(const Job& job) const;
  static Straggler make_straggler(const std::string& key, const std::string& json);
  // T′ of the job's stragglers (the largest), 0 when none.
  static double straggler_time_s(const Job& job, double t_min_s);
  // Re-renders job.served_prefix (caller holds state_mutex_ exclusively).
  void refresh_served(Job& job) const;

  std::unique_ptr<Store> store_;
  ServiceOptions options_;
  mutable std::shared_mutex state_mutex_;  // guards jobs_ and every Job
  std::mutex write_mutex_;                 // one writer at a time: database, then memory
  std::map<std::string, std::shared_ptr<Job>> jobs_;

  mutable std::mutex queue_mutex_;
  std::condition_variable queue_cv_;
  std::condition_variable idle_cv_;
  std::deque<std::string> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  bool paused_ = false;
  std::thread worker_;
};

/// Parses a JobInfo body; errors name the field (for 422).
struct FieldError {
  std::string field;
  std::string message;
};
std::optional<FieldError> parse_job_info(const std::string& body, JobInfo& out);
std::optional<FieldError> parse_rank_info(const std::string& body, const JobInfo& job,
                                          RankInfo& out);

/// The server's job id: local time YYYY-MM-DD-HH-MM-SS, dp, pp, tp, scheduler name and metadata,
/// joined by "+", as Zeus's server builds it.
std::string make_job_id(const JobInfo& info, const std::string& scheduler_name, long long unix_s);

}  // namespace powertrain::serve
