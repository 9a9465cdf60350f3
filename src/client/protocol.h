// JSON bodies of the Zeus pipeline-frequency-optimizer protocol
// (/work/shared/docs/zeus-pfo-protocol.md → docs/client.md) and powertrain's extensions.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"

namespace powertrain::client {

/// Routes (relative to the server URL).
inline constexpr const char* kRegisterJobRoute = "/register_job";
std::string register_rank_route(const std::string& job_id);
std::string schedule_route(const std::string& job_id, int rank);
std::string result_route(const std::string& job_id);
std::string straggler_route(const std::string& job_id);  // powertrain extension
std::string frontier_route(const std::string& job_id);   // powertrain extension

struct JobInfo {
  int pp_degree = 1, dp_degree = 1, tp_degree = 1, world_size = 1;
  std::string job_metadata;  // omitted (null) when empty
};
struct RankInfo {
  int rank = 0, dp_rank = 0, pp_rank = 0, tp_rank = 0;
  std::vector<int> available_frequencies_mhz;  // highest first
};
/// One iteration's planned (instruction name, MHz) pairs in execution order.
using Schedule = std::vector<std::pair<std::string, int>>;

/// Measured results of some iterations of one rank (ProfilingResult).
struct ProfilingResult {
  int rank = 0;
  std::vector<double> iter_time_s;
  std::vector<double> iter_energy_j;
  /// instruction name → per iteration → one value per instruction instance.
  std::map<std::string, std::vector<std::vector<double>>> time_breakdown_s;
  std::map<std::string, std::vector<std::vector<double>>> energy_breakdown_j;
};

std::string job_info_json(const JobInfo& job);
std::string rank_info_json(const RankInfo& rank);
std::string profiling_result_json(const ProfilingResult& result);
/// A straggler report as `powertrain serve` takes it (docs/serve.md): exactly one of rank R and
/// data-parallel pipeline P, exactly one of slowdown T'/T_min (>= 1) and delay_s (T' = T_min + d).
struct StragglerReport {
  int rank = -1;          ///< >= 0: this global rank is slow
  int pipeline = -1;      ///< >= 0: this data-parallel pipeline is slow (rank must be -1)
  double slowdown = 0.0;  ///< > 0: T'/T_min
  double delay_s = -1.0;  ///< >= 0: T' - T_min, s (slowdown must be 0)
};
/// Errors when both or neither of rank/pipeline or slowdown/delay are set, or a value is out of
/// range.
core::Result<std::string> straggler_json(const StragglerReport& report);

/// The job id answer of /register_job: a JSON string. Errors name what was received.
core::Result<std::string> parse_job_id(const std::string& body);
/// A FrequencySchedule for `rank`; checks the rank, pair shapes, names and MHz (1..100000).
core::Result<Schedule> parse_schedule(const std::string& body, int rank);

/// "HTTP 422 from POST /x: <first 200 bytes of the body>" for non-200 answers.
std::string http_error(int status, const std::string& what, const std::string& body);

}  // namespace powertrain::client
