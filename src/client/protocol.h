// JSON bodies of the Zeus pipeline-frequency-optimizer protocol
// (/work/shared/docs/zeus-pfo-protocol.md → docs/client.md) and powertrain's extensions.
#pragma once

#include <map>
#include <optional>
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
std::string profiling_route(const std::string& job_id);  // powertrain extension
std::string job_route(const std::string& job_id);        // powertrain extension

struct JobInfo {
  int pp_degree = 1, dp_degree = 1, tp_degree = 1, world_size = 1;
  std::string job_metadata;  // omitted (null) when empty
  int num_microbatches = 0;  // powertrain serve extension; omitted when 0
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
  /// In-vivo profiling (powertrain serve): the clock the iterations ran at (0: omitted), and
  /// "p_blocking" for a P_blocking measurement ("" : omitted).
  int frequency_mhz = 0;
  std::string measurement;
};

/// The `profiling` object `powertrain serve` adds to a schedule while it profiles the job in vivo
/// (docs/serve.md): what this rank runs and whether it reports.
struct ProfilingDirective {
  std::string phase;                 ///< "p_blocking" or "sweep"
  int measure_p_blocking_rank = -1;  ///< p_blocking: the rank that measures P_blocking
  int clock_mhz = 0;                 ///< sweep: the stage's clock now
  bool stage_done = false;           ///< sweep: the stage's sweep is finished (runs at max clock)
  int reporting_rank = -1;           ///< sweep: the rank whose results the sweep uses
  int iterations_per_clock = 0;
  int iterations_at_clock = 0;  ///< measured iterations the server has at clock_mhz
};

/// A /schedule answer: the frequencies and, while the server profiles, its directive.
struct ScheduleAnswer {
  Schedule frequencies;
  std::optional<ProfilingDirective> profiling;
};

/// POST /profiling/{job} settings (docs/serve.md); 0 / < 0 / "" leave a field to the server.
struct ProfilingRequest {
  double p_blocking_w = -1.0;    ///< >= 0: given (W); < 0: the server has it measured first
  int microbatches = 0;          ///< required unless the job was registered with them
  int iterations_per_clock = 0;  ///< server default 5
  int stop_after_rises = 0;      ///< server default 5
  double unit_time_s = 0.0;      ///< server default 0.001
  std::string schedule;          ///< "1f1b" (server default), "gpipe", "1f1b-recompute"
};
std::string profiling_request_json(const ProfilingRequest& request);

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
/// parse_schedule plus the optional `profiling` directive (checked: phase, integer fields).
core::Result<ScheduleAnswer> parse_schedule_answer(const std::string& body, int rank);

/// "HTTP 422 from POST /x: <first 200 bytes of the body>" for non-200 answers.
std::string http_error(int status, const std::string& what, const std::string& body);

}  // namespace powertrain::client
