#include "client/protocol.h"

#include <fmt/core.h>

#include <nlohmann/json.hpp>

namespace powertrain::client {

using nlohmann::json;

namespace {
// Job ids are made by the server ("2024-...+dp1+pp4+tp1+name"); '+' must be escaped in a path.
std::string escape_path(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}
}  // namespace

std::string register_rank_route(const std::string& job_id) {
  return "/register_rank/" + escape_path(job_id);
}
std::string schedule_route(const std::string& job_id, int rank) {
  return fmt::format("/schedule/{}?rank={}", escape_path(job_id), rank);
}
std::string result_route(const std::string& job_id) { return "/result/" + escape_path(job_id); }
std::string straggler_route(const std::string& job_id) {
  return "/straggler/" + escape_path(job_id);
}
std::string frontier_route(const std::string& job_id) { return "/frontier/" + escape_path(job_id); }
std::string profiling_route(const std::string& job_id) {
  return "/profiling/" + escape_path(job_id);
}
std::string job_route(const std::string& job_id) { return "/job/" + escape_path(job_id); }

std::string job_info_json(const JobInfo& job) {
  json j = {{"job_id", ""},
            {"pp_degree", job.pp_degree},
            {"dp_degree", job.dp_degree},
            {"tp_degree", job.tp_degree},
            {"world_size", job.world_size},
            {"job_metadata", nullptr}};
  if (!job.job_metadata.empty()) j["job_metadata"] = job.job_metadata;
  if (job.num_microbatches > 0) j["num_microbatches"] = job.num_microbatches;
  return j.dump();
}

std::string rank_info_json(const RankInfo& rank) {
  return json{{"rank", rank.rank},
              {"dp_rank", rank.dp_rank},
              {"pp_rank", rank.pp_rank},
              {"tp_rank", rank.tp_rank},
              {"available_frequencies", rank.available_frequencies_mhz}}
      .dump();
}

std::string profiling_result_json(const ProfilingResult& result) {
  json j = {{"rank", result.rank},
            {"iter_time", result.iter_time_s},
            {"iter_energy", result.iter_energy_j}};
  if (!result.time_breakdown_s.empty()) j["time_breakdown"] = result.time_breakdown_s;
  if (!result.energy_breakdown_j.empty()) j["energy_breakdown"] = result.energy_breakdown_j;
  if (result.frequency_mhz > 0) j["frequency_mhz"] = result.frequency_mhz;
  if (!result.measurement.empty()) j["measurement"] = result.measurement;
  return j.dump();
}

std::string profiling_request_json(const ProfilingRequest& r) {
  json j = json::object();
  if (r.p_blocking_w >= 0.0) j["p_blocking_w"] = r.p_blocking_w;
  if (r.microbatches > 0) j["microbatches"] = r.microbatches;
  if (r.iterations_per_clock > 0) j["iterations_per_clock"] = r.iterations_per_clock;
  if (r.stop_after_rises > 0) j["stop_after_rises"] = r.stop_after_rises;
  if (r.unit_time_s > 0.0) j["unit_time_s"] = r.unit_time_s;
  if (!r.schedule.empty()) j["schedule"] = r.schedule;
  return j.dump();
}

core::Result<std::string> straggler_json(const StragglerReport& r) {
  if ((r.rank >= 0) == (r.pipeline >= 0))
    return core::Error{"straggler: give exactly one of rank or pipeline (>= 0)"};
  const bool slowdown = r.slowdown != 0.0, delay = r.delay_s >= 0.0;
  if (slowdown == delay)
    return core::Error{"straggler: give exactly one of slowdown (T'/T_min) or delay_s"};
  if (slowdown && !(r.slowdown >= 1.0 && r.slowdown <= 1000.0))
    return core::Error{fmt::format("straggler: slowdown must be in [1, 1000], got {}", r.slowdown)};
  if (delay && !(r.delay_s <= 86400.0))
    return core::Error{fmt::format("straggler: delay_s must be in [0, 86400], got {}", r.delay_s)};
  json j;
  if (r.rank >= 0)
    j["rank"] = r.rank;
  else
    j["pipeline"] = r.pipeline;
  if (slowdown)
    j["slowdown"] = r.slowdown;
  else
    j["delay_s"] = r.delay_s;
  return j.dump();
}

core::Result<std::string> parse_job_id(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_string() || j.get<std::string>().empty()) {
    return core::Error{fmt::format("register_job: expected the job id as a JSON string, got '{}'",
                                   body.substr(0, 200))};
  }
  return j.get<std::string>();
}

core::Result<Schedule> parse_schedule(const std::string& body, int rank) {
  auto answer = parse_schedule_answer(body, rank);
  if (!answer) return answer.error();
  return std::move(answer->frequencies);
}

core::Result<ScheduleAnswer> parse_schedule_answer(const std::string& body, int rank) {
  json j = json::parse(body, nullptr, false);
  auto bad = [&](const std::string& why) {
    return core::Error{fmt::format("schedule for rank {}: {}", rank, why)};
  };
  if (j.is_discarded() || !j.is_object()) return bad("expected a JSON object");
  if (!j.contains("rank") || !j["rank"].is_number_integer())
    return bad("field 'rank': expected an integer");
  if (j["rank"].get<long long>() != rank)
    return bad(fmt::format("field 'rank': the server sent rank {}", j["rank"].get<long long>()));
  if (!j.contains("frequencies") || !j["frequencies"].is_array())
    return bad("field 'frequencies': expected a list of [instruction, MHz] pairs");
  const json& list = j["frequencies"];
  if (list.size() > 10'000'000) return bad("field 'frequencies': more than 10^7 pairs");
  Schedule schedule;
  schedule.reserve(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& pair = list[i];
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() ||
        !pair[1].is_number_integer()) {
      return bad(fmt::format("frequencies[{}]: expected [instruction, MHz], got {}", i,
                             pair.dump().substr(0, 100)));
    }
    const long long mhz = pair[1].get<long long>();
    if (mhz < 1 || mhz > 100000)
      return bad(fmt::format("frequencies[{}]: expected 1 to 100000 MHz, got {}", i, mhz));
    schedule.emplace_back(pair[0].get<std::string>(), static_cast<int>(mhz));
  }
  ScheduleAnswer answer{std::move(schedule), std::nullopt};
  auto p = j.find("profiling");
  if (p == j.end() || p->is_null()) return answer;
  if (!p->is_object() || !p->contains("phase") || !(*p)["phase"].is_string())
    return bad("field 'profiling': expected an object with a 'phase'");
  ProfilingDirective d;
  d.phase = (*p)["phase"].get<std::string>();
  if (d.phase != "p_blocking" && d.phase != "sweep")
    return bad(fmt::format("field 'profiling.phase': expected p_blocking or sweep, got '{}'",
                           d.phase.substr(0, 50)));
  // Integer fields: absent ones keep their defaults; present ones must be integers in range.
  auto integer = [&](const char* name, int& into, long long low) -> std::optional<core::Error> {
    auto it = p->find(name);
    if (it == p->end()) return std::nullopt;
    if (!it->is_number_integer() || it->get<long long>() < low ||
        it->get<long long>() > 100'000'000)
      return bad(fmt::format("field 'profiling.{}': expected an integer >= {}", name, low));
    into = static_cast<int>(it->get<long long>());
    return std::nullopt;
  };
  if (auto e = integer("measure_p_blocking_rank", d.measure_p_blocking_rank, 0)) return *e;
  if (auto e = integer("clock_mhz", d.clock_mhz, 1)) return *e;
  if (auto e = integer("reporting_rank", d.reporting_rank, 0)) return *e;
  if (auto e = integer("iterations_per_clock", d.iterations_per_clock, 1)) return *e;
  if (auto e = integer("iterations_at_clock", d.iterations_at_clock, 0)) return *e;
  if (auto it = p->find("stage_done"); it != p->end()) {
    if (!it->is_boolean()) return bad("field 'profiling.stage_done': expected true or false");
    d.stage_done = it->get<bool>();
  }
  answer.profiling = std::move(d);
  return answer;
}

std::string http_error(int status, const std::string& what, const std::string& body) {
  return fmt::format("HTTP {} from {}: {}", status, what, body.substr(0, 200));
}

}  // namespace powertrain::client
