#include "serve/service.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>

#include "core/csv.h"
#include "frontier/evaluate.h"
#include "frontier/problem.h"
#include "frontier/solver.h"
#include "pipeline/schedule.h"
#include "profile/profile.h"
#include "serve/profiling.h"

namespace powertrain::serve {
namespace {

using nlohmann::json;

// Bounds on untrusted numbers; generous for real jobs, small enough that products cannot overflow.
constexpr int kMaxDegree = 1 << 16;
constexpr int kMaxWorldSize = 1 << 22;
constexpr int kMaxMicrobatches = 100000;
constexpr std::size_t kMaxFrequencies = 4096;
constexpr std::size_t kMaxResultIterations = 1 << 20;

Response json_response(int status, const json& body) {
  Response r;
  r.status = status;
  // Ids and fields echo client bytes, which need not be UTF-8: replace, never throw.
  r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

// FastAPI's validation error shape, so Zeus clients print it as they would the Python server's.
Response field_error(const FieldError& e) {
  json detail = json::array();
  json loc = json::array({"body"});
  if (!e.field.empty()) loc.push_back(e.field);
  detail.push_back({{"loc", loc}, {"msg", e.message}, {"type", "value_error"}});
  return json_response(422, {{"detail", detail}, {"field", e.field}});
}
Response query_error(const std::string& field, const std::string& message) {
  json detail = json::array();
  detail.push_back(
      {{"loc", json::array({"query", field})}, {"msg", message}, {"type", "value_error"}});
  return json_response(422, {{"detail", detail}, {"field", field}});
}
Response error_response(int status, const std::string& message) {
  return json_response(status, {{"detail", message}});
}
Response not_found_job(const std::string& job_id) {
  return error_response(404, fmt::format("unknown job id '{}'", job_id));
}

std::optional<FieldError> get_int(const json& object, const char* field, long long min,
                                  long long max, bool required, int& out) {
  auto it = object.find(field);
  if (it == object.end() || it->is_null()) {
    if (required) return FieldError{field, "field required"};
    return std::nullopt;
  }
  if (!it->is_number_integer()) return FieldError{field, "expected an integer"};
  const long long value = it->is_number_unsigned()
                              ? static_cast<long long>(std::min<std::uint64_t>(
                                    it->get<std::uint64_t>(), std::uint64_t{1} << 62))
                              : it->get<long long>();
  if (value < min || value > max) {
    return FieldError{field, fmt::format("expected {} to {}, got {}", min, max, value)};
  }
  out = static_cast<int>(value);
  return std::nullopt;
}

std::optional<FieldError> get_number(const json& object, const char* field, double min, double max,
                                     bool min_exclusive, bool required, double& out) {
  auto it = object.find(field);
  if (it == object.end() || it->is_null()) {
    if (required) return FieldError{field, "field required"};
    return std::nullopt;
  }
  if (!it->is_number()) return FieldError{field, "expected a number"};
  const double value = it->get<double>();
  if (!std::isfinite(value) || value > max || value < min || (min_exclusive && value == min)) {
    return FieldError{field, fmt::format("expected a number in {}{}, {}], got {}",
                                         min_exclusive ? "(" : "[", min, max, value)};
  }
  out = value;
  return std::nullopt;
}

std::optional<FieldError> parse_object(const std::string& body, json& out) {
  out = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (out.is_discarded()) return FieldError{"", "body is not valid JSON"};
  if (!out.is_object()) return FieldError{"", "body must be a JSON object"};
  return std::nullopt;
}

std::string percent_decode(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
      };
      const int hi = hex(text[i + 1]), lo = hex(text[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(text[i]);
  }
  return out;
}

std::map<std::string, std::string> parse_query(std::string_view query) {
  std::map<std::string, std::string> out;
  std::size_t begin = 0;
  while (begin < query.size()) {
    std::size_t end = query.find('&', begin);
    if (end == std::string_view::npos) end = query.size();
    std::string_view item = query.substr(begin, end - begin);
    const std::size_t eq = item.find('=');
    out[percent_decode(item.substr(0, eq))] =
        eq == std::string_view::npos ? std::string() : percent_decode(item.substr(eq + 1));
    begin = end + 1;
  }
  return out;
}

json job_info_json(const JobInfo& info) {
  json j = {{"job_id", info.job_id},         {"pp_degree", info.pp_degree},
            {"dp_degree", info.dp_degree},   {"tp_degree", info.tp_degree},
            {"world_size", info.world_size}, {"job_metadata", info.job_metadata},
            {"schedule", info.schedule}};
  if (info.num_microbatches > 0) j["num_microbatches"] = info.num_microbatches;
  return j;
}

json rank_info_json(const RankInfo& r) {
  return {{"rank", r.rank},
          {"dp_rank", r.dp_rank},
          {"pp_rank", r.pp_rank},
          {"tp_rank", r.tp_rank},
          {"available_frequencies", r.available_frequencies}};
}

using GpuPlans = std::vector<std::vector<std::pair<std::string, int>>>;

core::Result<frontier::PlanningProblem> build_problem(const std::string& csv, int pp,
                                                      int microbatches, double p_blocking_w,
                                                      double unit_time_s,
                                                      const std::string& schedule_name,
                                                      const std::string& source) {
  auto table = core::parse_csv(csv, source);
  if (!table) return table.error();
  auto profile = profile::parse_profile(*table);
  if (!profile) return profile.error();
  auto schedule = pipeline::parse_schedule(schedule_name);
  if (!schedule || *schedule == pipeline::ScheduleKind::kInterleavedOneFOneB) {
    return core::Error{
        fmt::format("schedule: expected 1f1b, gpipe or 1f1b-recompute, got '{}'", schedule_name)};
  }
  pipeline::PipelineSpec spec;
  spec.schedule = *schedule;
  spec.num_gpus = pp;
  spec.num_microbatches = microbatches;
  if (profile->num_stages() != spec.num_profile_stages()) {
    return core::Error{fmt::format("{}: has {} stage(s) but the job's pp_degree {} needs {}",
                                   source, profile->num_stages(), pp, spec.num_profile_stages())};
  }
  frontier::PlanningSettings settings;
  settings.p_blocking_w = p_blocking_w;
  settings.unit_time_s = unit_time_s;
  return frontier::build_planning_problem(*profile, spec, settings);
}

// Per GPU, (instruction, MHz) of profiled instructions in execution order for given clocks.
GpuPlans plans_for(const frontier::PlanningProblem& problem, const std::vector<int>& mhz) {
  GpuPlans plan(problem.dag.gpu_order.size());
  for (std::size_t gpu = 0; gpu < plan.size(); ++gpu) {
    for (int v : problem.dag.gpu_order[gpu]) {
      const auto& op = problem.dag.operations[static_cast<std::size_t>(v)];
      if (!pipeline::is_profiled(op.kind)) continue;
      plan[gpu].emplace_back(std::string(pipeline::instruction_name(op.kind)),
                             mhz[static_cast<std::size_t>(v)]);
    }
  }
  return plan;
}

GpuPlans max_clock_plans(const frontier::PlanningProblem& problem) {
  std::vector<int> mhz(problem.dag.operations.size(), 0);
  for (std::size_t v = 0; v < mhz.size(); ++v) {
    if (pipeline::is_profiled(problem.dag.operations[v].kind)) {
      mhz[v] = problem.max_clock_option[static_cast<std::size_t>(problem.model_of_operation[v])]
                   .frequency_mhz;
    }
  }
  return plans_for(problem, mhz);
}

ServedFrontier solve_served(const frontier::PlanningProblem& problem) {
  const auto started = std::chrono::steady_clock::now();
  frontier::Frontier solved = frontier::solve_frontier(problem);
  // Same rule as `powertrain frontier` with its default ceil quantization.
  frontier::pin_fastest_point(problem, solved);
  const std::vector<frontier::RealizedPlan> realized = frontier::realize_frontier(problem, solved);
  ServedFrontier out;
  out.unit_time_s = problem.settings.unit_time_s;
  out.p_blocking_w = problem.settings.p_blocking_w;
  out.num_gpus = problem.num_gpus();
  const double tau = problem.settings.unit_time_s;
  out.max_clock_energy_at_t_min_j =
      frontier::max_clock_energy_at(problem, solved.points.back().time_units * tau);
  auto& stored = out.stored;
  stored.directory = "<served>";
  stored.slots.resize(problem.dag.gpu_order.size());
  for (std::size_t gpu = 0; gpu < stored.slots.size(); ++gpu) {
    for (int v : problem.dag.gpu_order[gpu]) {
      const auto& op = problem.dag.operations[static_cast<std::size_t>(v)];
      if (!pipeline::is_profiled(op.kind)) continue;
      stored.slots[gpu].push_back(
          {std::string(pipeline::instruction_name(op.kind)), op.stage, op.microbatch});
    }
  }
  GpuPlans previous;
  for (std::size_t p = 0; p < solved.points.size(); ++p) {
    stored.points.push_back({solved.points[p].time_units * tau, solved.points[p].energy_j,
                             realized[p].time_s, realized[p].energy_j});
    GpuPlans plan = plans_for(problem, frontier::frequencies_for(problem, solved.durations_at(p)));
    std::vector<std::tuple<int, int, int>> changes;
    for (std::size_t gpu = 0; gpu < plan.size(); ++gpu) {
      for (std::size_t slot = 0; slot < plan[gpu].size(); ++slot) {
        if (p == 0 || previous[gpu][slot].second != plan[gpu][slot].second) {
          changes.emplace_back(static_cast<int>(gpu), static_cast<int>(slot),
                               plan[gpu][slot].second);
        }
      }
    }
    stored.changes.push_back(std::move(changes));
    previous = std::move(plan);
  }
  out.solve_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return out;
}

json served_frontier_json(const ServedFrontier& f) {
  json points = json::array(), slots = json::array(), changes = json::array();
  for (const auto& p : f.stored.points) {
    points.push_back({p.time_s, p.energy_j, p.realized_time_s, p.realized_energy_j});
  }
  for (const auto& gpu : f.stored.slots) {
    json row = json::array();
    for (const auto& s : gpu) row.push_back({s.instruction, s.stage, s.microbatch});
    slots.push_back(row);
  }
  for (const auto& point : f.stored.changes) {
    json row = json::array();
    for (const auto& [gpu, slot, mhz] : point) row.push_back({gpu, slot, mhz});
    changes.push_back(row);
  }
  return {{"points", points},
          {"slots", slots},
          {"changes", changes},
          {"unit_time_s", f.unit_time_s},
          {"p_blocking_w", f.p_blocking_w},
          {"num_gpus", f.num_gpus},
          {"max_clock_energy_at_t_min_j", f.max_clock_energy_at_t_min_j},
          {"solve_s", f.solve_s}};
}

// Written by this server only; a malformed row means a corrupt database (an error at start-up).
core::Result<ServedFrontier> served_frontier_from_json(const std::string& text,
                                                       const std::string& job_id) {
  json j = json::parse(text, nullptr, false);
  ServedFrontier f;
  try {
    for (const auto& p : j.at("points")) {
      f.stored.points.push_back({p.at(0).get<double>(), p.at(1).get<double>(),
                                 p.at(2).get<double>(), p.at(3).get<double>()});
    }
    for (const auto& gpu : j.at("slots")) {
      f.stored.slots.emplace_back();
      for (const auto& s : gpu) {
        f.stored.slots.back().push_back(
            {s.at(0).get<std::string>(), s.at(1).get<int>(), s.at(2).get<int>()});
      }
    }
    for (const auto& point : j.at("changes")) {
      f.stored.changes.emplace_back();
      for (const auto& c : point) {
        const int gpu = c.at(0).get<int>(), slot = c.at(1).get<int>();
        if (gpu < 0 || static_cast<std::size_t>(gpu) >= f.stored.slots.size() || slot < 0 ||
            static_cast<std::size_t>(slot) >= f.stored.slots[gpu].size()) {
          throw std::out_of_range("change outside the slots");
        }
        f.stored.changes.back().emplace_back(gpu, slot, c.at(2).get<int>());
      }
    }
    f.unit_time_s = j.at("unit_time_s").get<double>();
    f.p_blocking_w = j.at("p_blocking_w").get<double>();
    f.num_gpus = j.at("num_gpus").get<int>();
    f.max_clock_energy_at_t_min_j = j.at("max_clock_energy_at_t_min_j").get<double>();
    f.solve_s = j.value("solve_s", 0.0);
  } catch (const std::exception& e) {
    return core::Error{fmt::format("stored frontier of job '{}' is corrupt: {}", job_id, e.what())};
  }
  if (f.stored.points.empty() || f.stored.changes.size() != f.stored.points.size()) {
    return core::Error{fmt::format("stored frontier of job '{}' has no points", job_id)};
  }
  return f;
}

json plan_json_rows(const std::vector<std::pair<std::string, int>>& plan) {
  json rows = json::array();
  for (const auto& [name, mhz] : plan) rows.push_back({name, mhz});
  return rows;
}

// Appends `rows` as the JSON array [["forward",1410],...] (the same bytes json::dump writes).
void append_plan_rows(std::string& out, const std::vector<std::pair<std::string, int>>& plan) {
  out += '[';
  for (std::size_t i = 0; i < plan.size(); ++i) {
    if (i > 0) out += ',';
    out += "[\"";
    out += plan[i].first;  // instruction names are fixed identifiers: nothing to escape
    out += "\",";
    out += fmt::format_int(plan[i].second).c_str();
    out += ']';
  }
  out += ']';
}

// The value of `key` in a query string, percent-decoded; nullopt when absent. No allocation for
// the usual "rank=3" unless the value needs decoding.
std::optional<std::string> query_value(std::string_view query, std::string_view key) {
  std::optional<std::string> found;
  std::size_t begin = 0;
  while (begin < query.size()) {
    std::size_t end = query.find('&', begin);
    if (end == std::string_view::npos) end = query.size();
    const std::string_view item = query.substr(begin, end - begin);
    const std::size_t eq = item.find('=');
    const std::string_view name = item.substr(0, eq);
    const bool match =
        name.find('%') == std::string_view::npos ? name == key : percent_decode(name) == key;
    // The last occurrence wins, as parse_query's map assignment does.
    if (match) {
      found = eq == std::string_view::npos ? std::string() : percent_decode(item.substr(eq + 1));
    }
    begin = end + 1;
  }
  return found;
}

std::string local_time_id(long long unix_s) {
  std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  localtime_r(&t, &tm);
  return fmt::format("{:04d}-{:02d}-{:02d}-{:02d}-{:02d}-{:02d}", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

// POST /profile settings in the query string of a CSV body: ?p_blocking_w=83.6&microbatches=12;
// values that parse as JSON are numbers or booleans, the rest strings.
json query_settings(const std::string& target) {
  json settings = json::object();
  const std::size_t q = target.find('?');
  if (q != std::string::npos) {
    for (const auto& [key, value] : parse_query(std::string_view(target).substr(q + 1))) {
      json v = json::parse(value, nullptr, false);
      settings[key] = v.is_discarded() ? json(value) : v;
    }
  }
  return settings;
}

// POST /profile "rows" as profile CSV text; the first bad field as rows[i].field.
std::optional<FieldError> rows_to_csv(const json& rows, std::string& csv) {
  csv = "stage,instruction,frequency,time,energy\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const json& row = rows[i];
    if (!row.is_object()) return FieldError{fmt::format("rows[{}]", i), "expected object"};
    int stage = 0, frequency = 0;
    double time = 0, energy = 0;
    std::optional<FieldError> e =
        get_int(row, "stage", 0, profile::kMaxProfileStages - 1, true, stage);
    if (!e) e = get_int(row, "frequency", 1, profile::kMaxProfileFrequencyMhz, true, frequency);
    if (!e) e = get_number(row, "time", 0, profile::kMaxProfileTimeS, true, true, time);
    if (!e) e = get_number(row, "energy", 0, profile::kMaxProfileEnergyJ, true, true, energy);
    if (!e && (!row.contains("instruction") || !row["instruction"].is_string() ||
               !pipeline::parse_profiled_instruction(row["instruction"].get<std::string>()))) {
      e = FieldError{"instruction", "expected forward, backward or recompute"};
    }
    if (e) return FieldError{fmt::format("rows[{}].{}", i, e->field), e->message};
    csv += fmt::format("{},{},{},{:.17g},{:.17g}\n", stage, row["instruction"].get<std::string>(),
                       frequency, time, energy);
  }
  return std::nullopt;
}

// One sweep per pipeline stage, reported by the stage's lowest registered rank (its replicas
// share the clocks), over the instructions the schedule gives that stage.
std::optional<FieldError> add_profiled_stages(
    const JobInfo& info, const std::map<int, RankInfo>& ranks,
    const std::vector<std::vector<pipeline::ScheduledInstruction>>& order, InVivoProfiling& p) {
  for (int stage = 0; stage < info.pp_degree; ++stage) {
    const RankInfo* reporter = nullptr;
    for (const auto& [r, rank] : ranks) {
      if (rank.pp_rank == stage) {
        reporter = &rank;
        break;
      }
    }
    if (!reporter) {
      return FieldError{"ranks", fmt::format("pipeline stage {} has no registered rank; "
                                             "register the ranks before profiling",
                                             stage)};
    }
    std::vector<std::string> names;
    for (pipeline::InstructionKind kind :
         {pipeline::InstructionKind::kForward, pipeline::InstructionKind::kBackward,
          pipeline::InstructionKind::kRecompute}) {
      const auto& gpu = order[static_cast<std::size_t>(stage)];
      if (std::any_of(gpu.begin(), gpu.end(), [&](const auto& ins) { return ins.kind == kind; })) {
        names.emplace_back(pipeline::instruction_name(kind));
      }
    }
    p.stages.emplace_back(stage, reporter->rank, reporter->available_frequencies, names,
                          p.settings);
  }
  return std::nullopt;
}

}  // namespace

const char* job_status_name(JobStatus status) {
  switch (status) {
    case JobStatus::kWaiting:
      return "waiting";
    case JobStatus::kProfiling:
      return "profiling";
    case JobStatus::kCharacterizing:
      return "characterizing";
    case JobStatus::kReady:
      return "ready";
    case JobStatus::kFailed:
      return "failed";
  }
  return "unknown";
}

std::string make_job_id(const JobInfo& info, const std::string& scheduler_name, long long unix_s) {
  std::string id = fmt::format("{}+dp{}+pp{}+tp{}+{}", local_time_id(unix_s), info.dp_degree,
                               info.pp_degree, info.tp_degree, scheduler_name);
  if (!info.job_metadata.empty()) id += "+" + info.job_metadata;
  return id;
}

std::optional<FieldError> parse_job_info(const std::string& body, JobInfo& out) {
  json j;
  if (auto e = parse_object(body, j)) return e;
  if (auto it = j.find("job_id"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return FieldError{"job_id", "expected a string"};
    if (!it->get<std::string>().empty()) {
      return FieldError{"job_id", "must be empty; the server assigns the job id"};
    }
  }
  for (auto [field, target] :
       {std::pair{"pp_degree", &out.pp_degree}, std::pair{"dp_degree", &out.dp_degree},
        std::pair{"tp_degree", &out.tp_degree}}) {
    if (auto e = get_int(j, field, 1, kMaxDegree, true, *target)) return e;
  }
  if (auto e = get_int(j, "world_size", 1, kMaxWorldSize, true, out.world_size)) return e;
  const long long product = 1LL * out.pp_degree * out.dp_degree * out.tp_degree;
  if (product != out.world_size) {
    return FieldError{"world_size",
                      fmt::format("pp_degree × dp_degree × tp_degree = {} but world_size is {}",
                                  product, out.world_size)};
  }
  if (auto it = j.find("job_metadata"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return FieldError{"job_metadata", "expected a string"};
    out.job_metadata = it->get<std::string>();
    if (out.job_metadata.size() > 256) return FieldError{"job_metadata", "longer than 256 bytes"};
  }
  if (auto e = get_int(j, "num_microbatches", 1, kMaxMicrobatches, false, out.num_microbatches)) {
    return e;
  }
  if (auto it = j.find("schedule"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return FieldError{"schedule", "expected a string"};
    const auto kind = pipeline::parse_schedule(it->get<std::string>());
    if (!kind || *kind == pipeline::ScheduleKind::kInterleavedOneFOneB) {
      return FieldError{"schedule", "expected 1f1b, gpipe or 1f1b-recompute"};
    }
    out.schedule = it->get<std::string>();
  }
  return std::nullopt;
}

std::optional<FieldError> parse_rank_info(const std::string& body, const JobInfo& job,
                                          RankInfo& out) {
  json j;
  if (auto e = parse_object(body, j)) return e;
  if (auto e = get_int(j, "rank", 0, job.world_size - 1, true, out.rank)) return e;
  if (auto e = get_int(j, "dp_rank", 0, job.dp_degree - 1, true, out.dp_rank)) return e;
  if (auto e = get_int(j, "pp_rank", 0, job.pp_degree - 1, true, out.pp_rank)) return e;
  if (auto e = get_int(j, "tp_rank", 0, job.tp_degree - 1, true, out.tp_rank)) return e;
  auto it = j.find("available_frequencies");
  if (it == j.end() || it->is_null()) return FieldError{"available_frequencies", "field required"};
  if (!it->is_array() || it->empty() || it->size() > kMaxFrequencies) {
    return FieldError{"available_frequencies",
                      fmt::format("expected a list of 1 to {} clocks (MHz)", kMaxFrequencies)};
  }
  for (const auto& f : *it) {
    if (!f.is_number_integer() || f.get<long long>() < 1 ||
        f.get<long long>() > profile::kMaxProfileFrequencyMhz) {
      return FieldError{
          "available_frequencies",
          fmt::format("expected integer clocks in MHz, 1 to {}", profile::kMaxProfileFrequencyMhz)};
    }
    out.available_frequencies.push_back(static_cast<int>(f.get<long long>()));
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------

Service::Service(std::unique_ptr<Store> store, ServiceOptions options)
    : store_(std::move(store)), options_(std::move(options)) {}

core::Result<std::unique_ptr<Service>> Service::create(std::unique_ptr<Store> store,
                                                       ServiceOptions options) {
  std::unique_ptr<Service> service(new Service(std::move(store), std::move(options)));
  if (auto ok = service->load(); !ok) return ok.error();
  if (service->options_.background) {
    service->worker_ = std::thread([s = service.get()] { s->worker_loop(); });
  } else {
    // Synchronous mode: solve what the database left uncharacterized now.
    std::deque<std::string> pending;
    std::swap(pending, service->queue_);
    for (const auto& id : pending) {
      auto job = service->jobs_.at(id);
      service->characterize(id, *job->profile);
    }
  }
  return service;
}

Service::~Service() {
  {
    std::lock_guard lock(queue_mutex_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

core::Status Service::load() {
  auto state = store_->load();
  if (!state) return state.error();
  for (const auto& row : state->jobs) {
    JobInfo info;
    if (auto e = parse_job_info(
            [&] {
              json j = json::parse(row.info_json, nullptr, false);
              if (j.is_object()) j.erase("job_id");
              return j.dump(-1, ' ', false, json::error_handler_t::replace);
            }(),
            info)) {
      return core::Error{fmt::format("stored job '{}' is corrupt: field '{}': {}", row.job_id,
                                     e->field, e->message)};
    }
    info.job_id = row.job_id;
    auto job = std::make_shared<Job>();
    job->info = info;
    jobs_[row.job_id] = job;
  }
  auto find = [&](const std::string& id, const char* what) -> core::Result<std::shared_ptr<Job>> {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) {
      return core::Error{fmt::format("stored {} refers to unknown job '{}'", what, id)};
    }
    return it->second;
  };
  for (const auto& row : state->ranks) {
    auto job = find(row.job_id, "rank");
    if (!job) return job.error();
    RankInfo rank;
    if (auto e = parse_rank_info(row.info_json, (*job)->info, rank)) {
      return core::Error{fmt::format("stored rank {} of job '{}' is corrupt: field '{}': {}",
                                     row.rank, row.job_id, e->field, e->message)};
    }
    (*job)->ranks[rank.rank] = rank;
  }
  // Profiles whose frontier is stored need no rebuild at start-up (the max-clock plan is served
  // only before a frontier exists): start-up stays fast with many ready jobs.
  std::map<std::string, long long> solved_generation;
  for (const auto& row : state->frontiers) solved_generation[row.job_id] = row.generation;
  for (const auto& row : state->profiles) {
    auto job = find(row.job_id, "profile");
    if (!job) return job.error();
    json j = json::parse(row.json, nullptr, false);
    ProfileSpec spec;
    try {
      spec.csv = j.at("csv").get<std::string>();
      spec.microbatches = j.at("microbatches").get<int>();
      spec.p_blocking_w = j.at("p_blocking_w").get<double>();
      spec.unit_time_s = j.at("unit_time_s").get<double>();
      spec.schedule = j.at("schedule").get<std::string>();
    } catch (const std::exception& e) {
      return core::Error{
          fmt::format("stored profile of job '{}' is corrupt: {}", row.job_id, e.what())};
    }
    spec.generation = row.generation;
    if (auto solved = solved_generation.find(row.job_id);
        solved != solved_generation.end() && solved->second == row.generation) {
      (*job)->profile = spec;
      (*job)->status = JobStatus::kCharacterizing;  // ready once its frontier is loaded below
      continue;
    }
    auto problem = build_problem(spec.csv, (*job)->info.pp_degree, spec.microbatches,
                                 spec.p_blocking_w, spec.unit_time_s, spec.schedule,
                                 "stored profile of job '" + row.job_id + "'");
    (*job)->profile = spec;
    if (problem) {
      (*job)->max_clock_plan = max_clock_plans(*problem);
      (*job)->status = JobStatus::kCharacterizing;
    } else {
      (*job)->status = JobStatus::kFailed;
      (*job)->error = problem.error().message;
    }
  }
  for (const auto& row : state->frontiers) {
    auto job = find(row.job_id, "frontier");
    if (!job) return job.error();
    auto f = served_frontier_from_json(row.json, row.job_id);
    if (!f) return f.error();
    (*job)->frontier = std::make_shared<const ServedFrontier>(std::move(*f));
    (*job)->frontier_generation = row.generation;
  }
  for (const auto& row : state->stragglers) {
    auto job = find(row.job_id, "straggler");
    if (!job) return job.error();
    (*job)->stragglers[row.key] = make_straggler(row.key, row.json);
  }
  for (const auto& row : state->profiling) {
    auto job = find(row.job_id, "profiling state");
    if (!job) return job.error();
    auto p = InVivoProfiling::from_json(json::parse(row.json, nullptr, false));
    if (!p) return core::Error{fmt::format("job '{}': {}", row.job_id, p.error().message)};
    if (p->stages.size() != static_cast<std::size_t>((*job)->info.pp_degree)) {
      return core::Error{fmt::format("job '{}': stored profiling state has {} stages, not {}",
                                     row.job_id, p->stages.size(), (*job)->info.pp_degree)};
    }
    (*job)->in_vivo = std::move(*p);
    if (!(*job)->profile && (*job)->in_vivo->phase != InVivoProfiling::Phase::kDone) {
      (*job)->status = JobStatus::kProfiling;
    }
  }
  for (const auto& [id, count] : state->result_counts) {
    auto job = find(id, "result");
    if (!job) return job.error();
    (*job)->results = count;
  }
  for (auto& [id, job] : jobs_) {
    if (job->profile) {
      if (job->frontier && job->frontier_generation == job->profile->generation) {
        job->status = JobStatus::kReady;
      } else if (job->status != JobStatus::kFailed) {
        queue_.push_back(id);  // acknowledged profile whose solve the crash interrupted
      }
    }
    refresh_served(*job);
  }
  return core::Ok{};
}

void Service::worker_loop() {
  for (;;) {
    std::string id;
    {
      std::unique_lock lock(queue_mutex_);
      busy_ = false;
      idle_cv_.notify_all();
      queue_cv_.wait(lock, [&] { return stopping_ || (!queue_.empty() && !paused_); });
      if (stopping_) return;
      id = queue_.front();
      queue_.pop_front();
      busy_ = true;
    }
    std::optional<ProfileSpec> spec;
    {
      std::shared_lock lock(state_mutex_);
      auto it = jobs_.find(id);
      if (it != jobs_.end()) spec = it->second->profile;
    }
    if (spec) characterize(id, *spec);
  }
}

void Service::pause_characterization(bool pause) {
  {
    std::lock_guard lock(queue_mutex_);
    paused_ = pause;
  }
  queue_cv_.notify_all();
}

void Service::wait_idle() {
  std::unique_lock lock(queue_mutex_);
  idle_cv_.wait(lock, [&] { return !options_.background || (queue_.empty() && !busy_); });
}

std::size_t Service::characterize_queue_depth() const {
  std::lock_guard lock(queue_mutex_);
  return queue_.size();
}

void Service::characterize(const std::string& job_id, const ProfileSpec& spec) {
  int pp = 0;
  {
    std::shared_lock lock(state_mutex_);
    pp = jobs_.at(job_id)->info.pp_degree;
  }
  auto problem = build_problem(spec.csv, pp, spec.microbatches, spec.p_blocking_w, spec.unit_time_s,
                               spec.schedule, "profile of job '" + job_id + "'");
  std::shared_ptr<const ServedFrontier> served;
  std::string error;
  if (problem) {
    served = std::make_shared<const ServedFrontier>(solve_served(*problem));
  } else {
    error = problem.error().message;
  }
  std::lock_guard write(write_mutex_);
  {
    std::shared_lock lock(state_mutex_);
    const auto& job = jobs_.at(job_id);
    if (!job->profile || job->profile->generation != spec.generation) return;  // superseded
  }
  if (served) {
    if (auto ok = store_->put_frontier(
            job_id, spec.generation,
            served_frontier_json(*served).dump(-1, ' ', false, json::error_handler_t::replace));
        !ok) {
      error = ok.error().message;
      served.reset();
    }
  }
  std::unique_lock lock(state_mutex_);
  auto& job = *jobs_.at(job_id);
  if (served) {
    job.frontier = served;
    job.frontier_generation = spec.generation;
    job.status = JobStatus::kReady;
    job.error.clear();
    refresh_served(job);
  } else {
    job.status = JobStatus::kFailed;
    job.error = error;
  }
}

std::map<std::string, int> Service::job_counts() const {
  std::map<std::string, int> counts;
  for (JobStatus s : {JobStatus::kWaiting, JobStatus::kProfiling, JobStatus::kCharacterizing,
                      JobStatus::kReady, JobStatus::kFailed}) {
    counts[job_status_name(s)] = 0;
  }
  std::shared_lock lock(state_mutex_);
  for (const auto& [id, job] : jobs_) ++counts[job_status_name(job->status)];
  return counts;
}

// ---------------------------------------------------------------------------------------------

Response Service::handle(const Request& request) {
  try {
    return route(request);
  } catch (const std::exception& e) {
    // A bug must cost one request, not the server.
    Response r = error_response(500, fmt::format("internal error: {}", e.what()));
    return r;
  }
}

Response Service::route(const Request& request) {
  const std::size_t q = request.target.find('?');
  const std::string path = request.target.substr(0, q);
  const std::string query = q == std::string::npos ? "" : request.target.substr(q + 1);
  // Job ids may hold anything the metadata held, '/' included: the id is the rest of the path.
  auto route_with_id = [&](std::string_view prefix, std::string& id) {
    if (path.size() <= prefix.size() || path.compare(0, prefix.size(), prefix) != 0) return false;
    id = percent_decode(std::string_view(path).substr(prefix.size()));
    return true;
  };
  std::string id;
  Response r;
  auto method_not_allowed = [&](const char* route) {
    Response m = error_response(405, fmt::format("method {} not allowed", request.method));
    m.route = route;
    return m;
  };
  if (path == "/info") {
    r = request.method == "GET" ? info() : method_not_allowed("/info");
    r.route = "/info";
  } else if (path == "/register_job") {
    r = request.method == "POST" ? register_job(request) : method_not_allowed("/register_job");
    r.route = "/register_job";
  } else if (route_with_id("/register_rank/", id)) {
    r = request.method == "POST" ? register_rank(id, request) : method_not_allowed("");
    r.route = "/register_rank/{job_id}";
  } else if (route_with_id("/schedule/", id)) {
    r = request.method == "GET" ? schedule(id, query) : method_not_allowed("");
    r.route = "/schedule/{job_id}";
  } else if (route_with_id("/result/", id)) {
    r = request.method == "POST" ? result(id, request) : method_not_allowed("");
    r.route = "/result/{job_id}";
  } else if (route_with_id("/profile/", id)) {
    r = request.method == "POST" ? post_profile(id, request) : method_not_allowed("");
    r.route = "/profile/{job_id}";
  } else if (route_with_id("/frontier/", id)) {
    r = request.method == "GET" ? get_frontier(id, query) : method_not_allowed("");
    r.route = "/frontier/{job_id}";
  } else if (route_with_id("/straggler/", id)) {
    r = request.method == "POST"     ? post_straggler(id, request)
        : request.method == "DELETE" ? delete_straggler(id)
                                     : method_not_allowed("");
    r.route = "/straggler/{job_id}";
  } else if (route_with_id("/profiling/", id)) {
    r = request.method == "POST"  ? post_profiling(id, request)
        : request.method == "GET" ? get_profiling(id)
                                  : method_not_allowed("");
    r.route = "/profiling/{job_id}";
  } else if (route_with_id("/job/", id)) {
    r = request.method == "GET" ? get_job(id) : method_not_allowed("");
    r.route = "/job/{job_id}";
  } else {
    r = error_response(404, fmt::format("no route {}", path));
    r.route = "unknown";
  }
  r.job_id = id;
  return r;
}

Response Service::info() const {
  return json_response(200, {{"scheduler", options_.scheduler_name},
                             {"scheduler_args",
                              {{"default_point", "T_min"},
                               {"straggler_rule", "T_opt = min(T*, T')"},
                               {"quantization", "ceil"}}},
                             {"server", "powertrain serve"},
                             {"schema_version", kSchemaVersion}});
}

Response Service::register_job(const Request& request) {
  JobInfo info;
  if (auto e = parse_job_info(request.body, info)) return field_error(*e);
  const long long now = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  const std::string base = make_job_id(info, options_.scheduler_name, now);
  std::lock_guard write(write_mutex_);
  {
    // Zeus would overwrite a job registered in the same second with the same shape; we keep both.
    std::shared_lock lock(state_mutex_);
    info.job_id = base;
    for (int n = 2; jobs_.count(info.job_id) != 0; ++n) info.job_id = fmt::format("{}+{}", base, n);
  }
  if (auto ok = store_->put_job(
          info.job_id, job_info_json(info).dump(-1, ' ', false, json::error_handler_t::replace));
      !ok) {
    return error_response(500, ok.error().message);
  }
  auto job = std::make_shared<Job>();
  job->info = info;
  {
    std::unique_lock lock(state_mutex_);
    jobs_[info.job_id] = job;
  }
  Response r = json_response(200, info.job_id);
  return r;
}

Response Service::register_rank(const std::string& job_id, const Request& request) {
  JobInfo info;
  {
    std::shared_lock lock(state_mutex_);
    auto it = jobs_.find(job_id);
    if (it == jobs_.end()) return not_found_job(job_id);
    info = it->second->info;
  }
  RankInfo rank;
  if (auto e = parse_rank_info(request.body, info, rank)) return field_error(*e);
  // Zeus's rank order: rank = dp_rank × (pp × tp) + pp_rank × tp + tp_rank is not enforced (the
  // launcher decides), but the coordinates must be inside the job.
  std::lock_guard write(write_mutex_);
  if (auto ok = store_->put_rank(
          job_id, rank.rank,
          rank_info_json(rank).dump(-1, ' ', false, json::error_handler_t::replace));
      !ok) {
    return error_response(500, ok.error().message);
  }
  std::unique_lock lock(state_mutex_);
  jobs_.at(job_id)->ranks[rank.rank] = rank;
  return json_response(200, nullptr);
}

Service::Straggler Service::make_straggler(const std::string& key, const std::string& text) {
  Straggler s;
  s.key = key;
  s.json = text;
  const json j = json::parse(text, nullptr, false);
  if (j.is_object()) {
    if (auto it = j.find("slowdown"); it != j.end() && it->is_number()) {
      s.slowdown = it->get<double>();
    } else if (auto d = j.find("delay_s"); d != j.end() && d->is_number()) {
      s.delay_s = d->get<double>();
    }
  }
  return s;
}

double Service::straggler_time_s(const Job& job, double t_min_s) {
  double t_prime = 0.0;  // the slowest straggler sets the pace
  for (const auto& [key, s] : job.stragglers) {
    t_prime = std::max(t_prime, s.slowdown > 0.0 ? s.slowdown * t_min_s : t_min_s + s.delay_s);
  }
  return t_prime;
}

std::size_t Service::current_point(const Job& job) const {
  const auto& stored = job.frontier->stored;
  const double t_prime = straggler_time_s(job, stored.points.back().time_s);
  if (t_prime <= 0.0) return stored.points.size() - 1;  // no straggler: T_min
  return report::decide(stored, t_prime).point;
}

void Service::refresh_served(Job& job) const {
  job.served_prefix.clear();
  job.served_point.reset();
  if (job.in_vivo && job.in_vivo->phase != InVivoProfiling::Phase::kDone) {
    // Profiling: every instruction of a stage at the stage's sweep clock (its highest clock while
    // P_blocking is measured or once its sweep is done), with what the client should measure.
    const InVivoProfiling& p = *job.in_vivo;
    pipeline::PipelineSpec spec;
    spec.schedule = *pipeline::parse_schedule(p.schedule);
    spec.num_gpus = job.info.pp_degree;
    spec.num_microbatches = p.microbatches;
    auto order = pipeline::schedule_order(spec);
    if (!order) return;
    for (std::size_t stage = 0; stage < order->size() && stage < p.stages.size(); ++stage) {
      const StageSweep& sweep = p.stages[stage];
      const bool sweeping = p.phase == InVivoProfiling::Phase::kSweep && !sweep.done();
      const int mhz = sweeping ? sweep.clock_mhz() : sweep.max_clock_mhz();
      std::vector<std::pair<std::string, int>> rows;
      for (const auto& ins : (*order)[stage]) {
        rows.emplace_back(std::string(pipeline::instruction_name(ins.kind)), mhz);
      }
      std::string prefix = "{\"frequencies\":";
      append_plan_rows(prefix, rows);
      json info = {{"phase", phase_name(p.phase)}};
      if (p.phase == InVivoProfiling::Phase::kPBlocking) {
        info["measure_p_blocking_rank"] = p.p_blocking_rank;
      } else {
        info["clock_mhz"] = mhz;
        info["stage_done"] = sweep.done();
        info["reporting_rank"] = sweep.reporting_rank();
        info["iterations_per_clock"] = p.settings.iterations_per_clock;
        info["iterations_at_clock"] = sweep.iterations_at_clock();
      }
      prefix += ",\"profiling\":";
      prefix += info.dump();
      job.served_prefix.push_back(std::move(prefix));
    }
    return;
  }
  const std::vector<std::vector<std::pair<std::string, int>>>* stages = &job.max_clock_plan;
  std::vector<std::vector<std::pair<std::string, int>>> plan;
  if (job.frontier && job.status == JobStatus::kReady) {
    job.served_point = current_point(job);
    plan = job.frontier->stored.plan_at(*job.served_point);
    stages = &plan;
  }
  job.served_prefix.reserve(stages->size());
  for (const auto& stage : *stages) {
    std::string prefix;
    prefix.reserve(stage.size() * 20 + 20);
    prefix += "{\"frequencies\":";
    append_plan_rows(prefix, stage);
    job.served_prefix.push_back(std::move(prefix));
  }
}

Response Service::schedule(const std::string& job_id, const std::string& query) {
  const std::optional<std::string> rank_text = query_value(query, "rank");
  if (!rank_text) return query_error("rank", "field required");
  long long rank = -1;
  {
    const std::string& text = *rank_text;
    if (text.empty() || text.size() > 9 ||
        !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return query_error("rank", fmt::format("expected a non-negative integer, got '{}'", text));
    }
    rank = std::stoll(text);
  }
  std::shared_lock lock(state_mutex_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return not_found_job(job_id);
  const Job& job = *it->second;
  auto r_it = job.ranks.find(static_cast<int>(rank));
  if (r_it == job.ranks.end()) {
    if (rank >= job.info.world_size) {
      return query_error("rank", fmt::format("expected 0 to {}", job.info.world_size - 1));
    }
    return error_response(404, fmt::format("rank {} of job '{}' is not registered", rank, job_id));
  }
  const RankInfo& info = r_it->second;
  const auto stage = static_cast<std::size_t>(info.pp_rank);
  if (stage < job.served_prefix.size()) {
    // The hot path: the rendered rows of the served point; one allocation for the body. Same
    // bytes as json::dump of {"frequencies", "rank"} (keys sorted).
    Response r;
    const std::string& prefix = job.served_prefix[stage];
    r.body.clear();
    r.body.reserve(prefix.size() + 24);
    r.body += prefix;
    r.body += ",\"rank\":";
    r.body += fmt::format_int(rank).c_str();
    r.body += '}';
    return r;
  }
  json frequencies;
  if (job.info.num_microbatches > 0) {
    // No profile yet: every instruction at the rank's highest clock, in schedule order.
    pipeline::PipelineSpec spec;
    spec.schedule = *pipeline::parse_schedule(job.info.schedule);
    spec.num_gpus = job.info.pp_degree;
    spec.num_microbatches = job.info.num_microbatches;
    auto order = pipeline::schedule_order(spec);
    if (!order) return error_response(400, order.error().message);
    const int max_mhz =
        *std::max_element(info.available_frequencies.begin(), info.available_frequencies.end());
    frequencies = json::array();
    for (const auto& ins : order->at(static_cast<std::size_t>(info.pp_rank))) {
      frequencies.push_back({pipeline::instruction_name(ins.kind), max_mhz});
    }
  } else {
    Response wait = error_response(
        503, fmt::format("job '{}' has no schedule yet: POST /profile/{{job_id}} first, or "
                         "register the job with num_microbatches",
                         job_id));
    wait.retry_after_s = 1;
    wait.schedule_pending = true;
    return wait;
  }
  return json_response(200, {{"rank", rank}, {"frequencies", frequencies}});
}

Response Service::result(const std::string& job_id, const Request& request) {
  JobInfo info;
  {
    std::shared_lock lock(state_mutex_);
    auto it = jobs_.find(job_id);
    if (it == jobs_.end()) return not_found_job(job_id);
    info = it->second->info;
  }
  json j;
  if (auto e = parse_object(request.body, j)) return field_error(*e);
  int rank = 0;
  if (auto e = get_int(j, "rank", 0, info.world_size - 1, true, rank)) return field_error(*e);
  for (const char* field : {"iter_time", "iter_energy"}) {
    auto it = j.find(field);
    if (it == j.end()) return field_error({field, "field required"});
    if (!it->is_array() || it->size() > kMaxResultIterations) {
      return field_error({field, "expected a list of numbers"});
    }
    for (const auto& v : *it) {
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0.0) {
        return field_error({field, "expected finite non-negative numbers"});
      }
    }
  }
  for (const char* field : {"time_breakdown", "energy_breakdown"}) {
    auto it = j.find(field);
    if (it != j.end() && !it->is_null() && !it->is_object()) {
      return field_error({field, "expected an object: instruction → per iteration → values"});
    }
  }
  std::unique_lock write(write_mutex_);
  std::shared_ptr<Job> job;
  std::optional<InVivoProfiling> profiling;
  {
    std::shared_lock lock(state_mutex_);
    job = jobs_.at(job_id);
    if (job->in_vivo && job->in_vivo->phase != InVivoProfiling::Phase::kDone) {
      profiling = job->in_vivo;
    }
  }
  const std::string result_json = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (!profiling) {
    if (auto ok = store_->add_result(job_id, rank, result_json); !ok) {
      return error_response(500, ok.error().message);
    }
    std::unique_lock lock(state_mutex_);
    ++job->results;
    return json_response(200, nullptr);
  }
  // In-vivo profiling: the result may move a stage's sweep (or give P_blocking); the result,
  // the new sweep state and, when the sweep ended, the profile it produced commit together.
  std::optional<ProfileSpec> profile;
  if (auto error = advance_profiling(rank, j, *profiling, profile)) return *error;
  std::optional<frontier::PlanningProblem> problem;
  std::string failure;
  if (profile) {
    profile->generation = job->profile ? job->profile->generation + 1 : 1;
    profiling->profile_generation = profile->generation;
    auto built =
        build_problem(profile->csv, info.pp_degree, profile->microbatches, profile->p_blocking_w,
                      profile->unit_time_s, profile->schedule, "measured profile");
    if (built) {
      problem = std::move(*built);
    } else {
      failure = built.error().message;
    }
  }
  const json stored_profile = profile ? json{{"csv", profile->csv},
                                             {"microbatches", profile->microbatches},
                                             {"p_blocking_w", profile->p_blocking_w},
                                             {"unit_time_s", profile->unit_time_s},
                                             {"schedule", profile->schedule}}
                                      : json(nullptr);
  if (auto ok = store_->add_result_with_profiling(
          job_id, rank, result_json,
          profiling->to_json().dump(-1, ' ', false, json::error_handler_t::replace),
          profile ? std::optional<std::pair<long long, std::string>>(
                        {profile->generation, stored_profile.dump()})
                  : std::nullopt);
      !ok) {
    return error_response(500, ok.error().message);
  }
  {
    std::unique_lock lock(state_mutex_);
    ++job->results;
    job->in_vivo = std::move(*profiling);
    if (profile) {
      job->profile = *profile;
      if (problem) {
        job->max_clock_plan = max_clock_plans(*problem);
        job->status = JobStatus::kCharacterizing;
        job->error.clear();
      } else {
        job->status = JobStatus::kFailed;
        job->error = failure;
      }
    }
    refresh_served(*job);
  }
  write.unlock();
  if (profile && problem) {
    if (options_.background) {
      {
        std::lock_guard lock(queue_mutex_);
        queue_.push_back(job_id);  // acknowledged: not subject to the POST /profile queue bound
      }
      queue_cv_.notify_one();
    } else {
      characterize(job_id, *profile);
    }
  }
  return json_response(200, nullptr);
}

std::optional<Response> Service::advance_profiling(int rank, const json& j, InVivoProfiling& p,
                                                   std::optional<ProfileSpec>& profile) {
  auto sum_of = [](const json& list) {
    double sum = 0.0;
    for (const auto& v : list) sum += v.get<double>();
    return sum;
  };
  if (p.phase == InVivoProfiling::Phase::kPBlocking) {
    auto m = j.find("measurement");
    if (rank != p.p_blocking_rank || m == j.end() || !m->is_string() || *m != "p_blocking") {
      return std::nullopt;  // an ordinary result: stored, the profiling waits for P_blocking
    }
    // P_blocking = energy / time of the blocked GPU over the posted windows (measured).
    const double time = sum_of(j.at("iter_time")), energy = sum_of(j.at("iter_energy"));
    if (!(time > 0.0) || j.at("iter_time").size() != j.at("iter_energy").size()) {
      return field_error({"iter_time", "P_blocking needs matching windows with a positive time"});
    }
    p.p_blocking_w = energy / time;
    p.phase = InVivoProfiling::Phase::kSweep;
    return std::nullopt;
  }
  auto sweep = std::find_if(p.stages.begin(), p.stages.end(), [&](const StageSweep& s) {
    return s.reporting_rank() == rank && !s.done();
  });
  if (sweep == p.stages.end()) return std::nullopt;  // not a reporting rank: stored only
  if (auto it = j.find("frequency_mhz"); it != j.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<long long>() != sweep->clock_mhz()) {
      Response stale = error_response(
          409, fmt::format("stage {} is profiling {} MHz now; the result is for another clock",
                           sweep->stage(), sweep->clock_mhz()));
      return stale;
    }
  }
  const json* times = j.contains("time_breakdown") ? &j.at("time_breakdown") : nullptr;
  const json* energies = j.contains("energy_breakdown") ? &j.at("energy_breakdown") : nullptr;
  if (!times || !energies || !times->is_object() || !energies->is_object()) {
    return field_error({"time_breakdown",
                        "a stage's reporting rank must post time_breakdown and energy_breakdown "
                        "(instruction → per iteration → values) while the server profiles"});
  }
  const std::size_t iterations = j.at("iter_time").size();
  std::map<std::string, std::tuple<double, double, long long>> sums;
  for (const auto& [name, per_iteration] : times->items()) {
    auto e = energies->find(name);
    if (e == energies->end() || !per_iteration.is_array() || !e->is_array() ||
        per_iteration.size() != iterations || e->size() != iterations) {
      return field_error(
          {"time_breakdown", fmt::format("'{}': expected one list per iteration ({}) in both "
                                         "breakdowns",
                                         name, iterations)});
    }
    double time = 0.0, energy = 0.0;
    long long runs = 0;
    for (std::size_t i = 0; i < iterations; ++i) {
      const json& tv = per_iteration[i];
      const json& ev = (*e)[i];
      if (!tv.is_array() || !ev.is_array() || tv.size() != ev.size()) {
        return field_error({"energy_breakdown",
                            fmt::format("'{}' iteration {}: as many energies as times", name, i)});
      }
      for (std::size_t k = 0; k < tv.size(); ++k) {
        if (!tv[k].is_number() || !ev[k].is_number() || !std::isfinite(tv[k].get<double>()) ||
            !std::isfinite(ev[k].get<double>()) || tv[k].get<double>() <= 0.0 ||
            ev[k].get<double>() <= 0.0) {
          return field_error(
              {"time_breakdown", fmt::format("'{}': expected positive finite numbers", name)});
        }
        time += tv[k].get<double>();
        energy += ev[k].get<double>();
      }
      runs += static_cast<long long>(tv.size());
    }
    sums[name] = {time, energy, runs};
  }
  if (iterations == 0) return field_error({"iter_time", "expected at least one iteration"});
  if (auto ok = sweep->add(static_cast<int>(iterations), sums); !ok) {
    return field_error({"time_breakdown", ok.error().message});
  }
  if (p.sweep_done() && p.p_blocking_w) {
    p.phase = InVivoProfiling::Phase::kDone;
    ProfileSpec spec;
    spec.csv = p.profile_csv();
    spec.microbatches = p.microbatches;
    spec.p_blocking_w = *p.p_blocking_w;
    spec.unit_time_s = p.unit_time_s;
    spec.schedule = p.schedule;
    profile = std::move(spec);
  }
  return std::nullopt;
}

Response Service::post_profiling(const std::string& job_id, const Request& request) {
  JobInfo info;
  std::map<int, RankInfo> ranks;
  {
    std::shared_lock lock(state_mutex_);
    auto it = jobs_.find(job_id);
    if (it == jobs_.end()) return not_found_job(job_id);
    info = it->second->info;
    ranks = it->second->ranks;
  }
  json j;
  if (auto e = parse_object(request.body, j)) return field_error(*e);
  InVivoProfiling p;
  p.microbatches = info.num_microbatches;
  p.schedule = info.schedule;
  if (auto e =
          get_int(j, "microbatches", 1, kMaxMicrobatches, p.microbatches == 0, p.microbatches)) {
    return field_error(*e);
  }
  if (auto e = get_number(j, "unit_time_s", 0.0, 10.0, true, false, p.unit_time_s)) {
    return field_error(*e);
  }
  if (auto e =
          get_int(j, "iterations_per_clock", 1, 1000, false, p.settings.iterations_per_clock)) {
    return field_error(*e);
  }
  if (auto e = get_int(j, "stop_after_rises", 1, 1000, false, p.settings.stop_after_rises)) {
    return field_error(*e);
  }
  double p_blocking = -1.0;
  if (auto e = get_number(j, "p_blocking_w", 0.0, 1e5, false, false, p_blocking)) {
    return field_error(*e);
  }
  if (p_blocking >= 0.0) p.p_blocking_w = p_blocking;
  bool restart = false;
  if (auto it = j.find("restart"); it != j.end()) {
    if (!it->is_boolean()) return field_error({"restart", "expected true or false"});
    restart = it->get<bool>();
  }
  if (auto it = j.find("schedule"); it != j.end()) {
    const auto kind =
        it->is_string() ? pipeline::parse_schedule(it->get<std::string>()) : std::nullopt;
    if (!kind || *kind == pipeline::ScheduleKind::kInterleavedOneFOneB) {
      return field_error({"schedule", "expected 1f1b, gpipe or 1f1b-recompute"});
    }
    p.schedule = it->get<std::string>();
  }
  pipeline::PipelineSpec spec;
  spec.schedule = *pipeline::parse_schedule(p.schedule);
  spec.num_gpus = info.pp_degree;
  spec.num_microbatches = p.microbatches;
  auto order = pipeline::schedule_order(spec);
  if (!order) return field_error({"microbatches", order.error().message});
  if (auto e = add_profiled_stages(info, ranks, *order, p)) return field_error(*e);
  p.p_blocking_rank = p.stages.front().reporting_rank();
  p.phase = p.p_blocking_w ? InVivoProfiling::Phase::kSweep : InVivoProfiling::Phase::kPBlocking;
  std::lock_guard write(write_mutex_);
  if (!restart) {
    // A profiling rank that died and was relaunched posts its settings again: the sweep goes on
    // where its acknowledged results left it (restarting would discard them). Other settings
    // while a sweep exists are a conflict, unless the caller asks for a fresh sweep.
    std::shared_lock lock(state_mutex_);
    const Job& job = *jobs_.at(job_id);
    if (job.in_vivo) {
      const InVivoProfiling& current = *job.in_vivo;
      const bool same = current.microbatches == p.microbatches && current.schedule == p.schedule &&
                        current.unit_time_s == p.unit_time_s &&
                        current.settings.iterations_per_clock == p.settings.iterations_per_clock &&
                        current.settings.stop_after_rises == p.settings.stop_after_rises &&
                        (!p.p_blocking_w || current.p_blocking_w == p.p_blocking_w);
      if (!same) {
        return error_response(
            409, fmt::format("job {} already has an in-vivo sweep ({}) with other settings; post "
                             "\"restart\": true to discard it and start over",
                             job_id, phase_name(current.phase)));
      }
      return json_response(200, {{"job_id", job_id},
                                 {"status", current.phase == InVivoProfiling::Phase::kDone
                                                ? job_status_name(job.status)
                                                : "profiling"},
                                 {"phase", phase_name(current.phase)},
                                 {"resumed", true}});
    }
  }
  if (auto ok = store_->put_profiling(
          job_id, p.to_json().dump(-1, ' ', false, json::error_handler_t::replace));
      !ok) {
    return error_response(500, ok.error().message);
  }
  std::unique_lock lock(state_mutex_);
  auto& job = *jobs_.at(job_id);
  job.in_vivo = std::move(p);
  if (job.status == JobStatus::kWaiting || job.status == JobStatus::kFailed) {
    job.status = JobStatus::kProfiling;
  }
  refresh_served(job);
  return json_response(
      202,
      {{"job_id", job_id}, {"status", "profiling"}, {"phase", phase_name(job.in_vivo->phase)}});
}

Response Service::get_profiling(const std::string& job_id) {
  std::shared_lock lock(state_mutex_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return not_found_job(job_id);
  const Job& job = *it->second;
  if (!job.in_vivo) {
    return error_response(404, fmt::format("job '{}' has no in-vivo profiling; POST "
                                           "/profiling/{{job_id}} starts one",
                                           job_id));
  }
  const InVivoProfiling& p = *job.in_vivo;
  json stages = json::array();
  for (const auto& s : p.stages) {
    json series = json::object();
    for (const auto& name : s.instructions()) {
      json points = json::array();
      for (const auto& pt : s.points(name)) {
        points.push_back({{"frequency_mhz", pt.frequency_mhz},
                          {"time_s", pt.time_s},
                          {"energy_j", pt.energy_j}});
      }
      series[name] = {{"points", points}, {"stopped_early", s.stopped(name)}};
    }
    stages.push_back({{"stage", s.stage()},
                      {"reporting_rank", s.reporting_rank()},
                      {"clock_mhz", s.clock_mhz()},
                      {"iterations_at_clock", s.iterations_at_clock()},
                      {"done", s.done()},
                      {"instructions", series}});
  }
  json out = {{"job_id", job_id},
              {"phase", phase_name(p.phase)},
              {"note", "measured: means per instruction run at each clock (s, J)"},
              {"iterations_per_clock", p.settings.iterations_per_clock},
              {"stop_after_rises", p.settings.stop_after_rises},
              {"stages", stages},
              {"profile_csv", p.profile_csv()}};
  out["p_blocking_w"] = p.p_blocking_w ? json(*p.p_blocking_w) : json(nullptr);
  if (p.phase == InVivoProfiling::Phase::kDone) out["profile_generation"] = p.profile_generation;
  return json_response(200, out);
}

Response Service::post_profile(const std::string& job_id, const Request& request) {
  JobInfo info;
  {
    std::shared_lock lock(state_mutex_);
    auto it = jobs_.find(job_id);
    if (it == jobs_.end()) return not_found_job(job_id);
    info = it->second->info;
  }
  ProfileSpec spec;
  spec.microbatches = info.num_microbatches;
  spec.schedule = info.schedule;
  const bool csv_body = request.content_type.rfind("text/csv", 0) == 0 ||
                        request.content_type.rfind("text/plain", 0) == 0;
  json settings;
  if (csv_body) {
    // Settings come in the query string: ?p_blocking_w=83.6&microbatches=12&unit_time_s=0.001
    settings = query_settings(request.target);
    spec.csv = request.body;
  } else {
    if (auto e = parse_object(request.body, settings)) return field_error(*e);
    auto csv = settings.find("csv");
    auto rows = settings.find("rows");
    if ((csv == settings.end()) == (rows == settings.end())) {
      return field_error({"csv", "give exactly one of 'csv' (profile CSV text) or 'rows'"});
    }
    if (csv != settings.end()) {
      if (!csv->is_string()) return field_error({"csv", "expected a string"});
      spec.csv = csv->get<std::string>();
    } else {
      if (!rows->is_array() || rows->empty()) {
        return field_error({"rows", "expected a non-empty list of rows"});
      }
      if (auto e = rows_to_csv(*rows, spec.csv)) return field_error(*e);
    }
  }
  if (auto e = get_int(settings, "microbatches", 1, kMaxMicrobatches, spec.microbatches == 0,
                       spec.microbatches)) {
    return field_error(*e);
  }
  if (auto e = get_number(settings, "p_blocking_w", 0.0, 1e5, false, true, spec.p_blocking_w)) {
    return field_error(*e);
  }
  if (auto e = get_number(settings, "unit_time_s", 0.0, 10.0, true, false, spec.unit_time_s)) {
    return field_error(*e);
  }
  if (auto it = settings.find("schedule"); it != settings.end()) {
    if (!it->is_string() || !pipeline::parse_schedule(it->get<std::string>())) {
      return field_error({"schedule", "expected 1f1b, gpipe or 1f1b-recompute"});
    }
    spec.schedule = it->get<std::string>();
  }
  // Cheap checks now (parse, fit, DAG); the frontier solve runs in the background.
  auto problem = build_problem(spec.csv, info.pp_degree, spec.microbatches, spec.p_blocking_w,
                               spec.unit_time_s, spec.schedule, "profile");
  if (!problem) return field_error({"profile", problem.error().message});
  if (options_.background) {
    std::lock_guard lock(queue_mutex_);
    if (queue_.size() >= options_.max_characterize_queue) {
      Response busy = error_response(503, "characterization queue is full; retry later");
      busy.retry_after_s = 5;
      return busy;
    }
  }
  std::unique_lock write(write_mutex_);
  {
    std::shared_lock lock(state_mutex_);
    const auto& job = jobs_.at(job_id);
    spec.generation = job->profile ? job->profile->generation + 1 : 1;
  }
  const json stored = {{"csv", spec.csv},
                       {"microbatches", spec.microbatches},
                       {"p_blocking_w", spec.p_blocking_w},
                       {"unit_time_s", spec.unit_time_s},
                       {"schedule", spec.schedule}};
  if (auto ok = store_->put_profile(job_id, spec.generation,
                                    stored.dump(-1, ' ', false, json::error_handler_t::replace));
      !ok) {
    return error_response(500, ok.error().message);
  }
  {
    std::unique_lock lock(state_mutex_);
    auto& job = *jobs_.at(job_id);
    job.profile = spec;
    job.max_clock_plan = max_clock_plans(*problem);
    job.status = JobStatus::kCharacterizing;
    job.error.clear();
    refresh_served(job);
  }
  write.unlock();
  if (options_.background) {
    {
      std::lock_guard lock(queue_mutex_);
      queue_.push_back(job_id);
    }
    queue_cv_.notify_one();
  } else {
    characterize(job_id, spec);
  }
  std::shared_lock lock(state_mutex_);
  return json_response(202, {{"job_id", job_id},
                             {"status", job_status_name(jobs_.at(job_id)->status)},
                             {"generation", spec.generation}});
}

Response Service::get_frontier(const std::string& job_id, const std::string& query) {
  const auto params = parse_query(query);
  const bool all_plans = params.count("plans") != 0 && params.at("plans") == "all";
  std::shared_lock lock(state_mutex_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return not_found_job(job_id);
  const Job& job = *it->second;
  json out = {{"job_id", job_id}, {"status", job_status_name(job.status)}};
  if (!job.error.empty()) out["error"] = job.error;
  if (job.in_vivo) out["profiling_phase"] = phase_name(job.in_vivo->phase);
  json stragglers = json::array();
  for (const auto& [key, s] : job.stragglers) stragglers.push_back(json::parse(s.json));
  out["stragglers"] = stragglers;
  if (job.status != JobStatus::kReady || !job.frontier) {
    if (!job.max_clock_plan.empty()) {
      json plan = json::array();
      for (const auto& stage : job.max_clock_plan) plan.push_back(plan_json_rows(stage));
      out["serving"] = {{"point", nullptr}, {"rule", "all max clock"}, {"plan", plan}};
    }
    return json_response(200, out);
  }
  const ServedFrontier& f = *job.frontier;
  const auto& points = f.stored.points;
  json pts = json::array();
  for (std::size_t p = 0; p < points.size(); ++p) {
    pts.push_back({{"point", p},
                   {"planned_time_s", points[p].time_s},
                   {"planned_energy_j", points[p].energy_j},
                   {"realized_time_s", points[p].realized_time_s},
                   {"realized_energy_j", points[p].realized_energy_j}});
  }
  out["points"] = pts;
  out["unit_time_s"] = f.unit_time_s;
  out["p_blocking_w"] = f.p_blocking_w;
  out["t_star_s"] = points.front().time_s;
  out["t_min_s"] = points.back().time_s;
  out["energy_note"] = "planned (fitted model) and realized (measured clocks), J per pipeline";
  const std::size_t current = current_point(job);
  auto plan_of = [&](std::size_t p) {
    json plan = json::array();
    for (const auto& stage : f.stored.plan_at(p)) plan.push_back(plan_json_rows(stage));
    return plan;
  };
  out["serving"] = {{"point", current},
                    {"rule", job.stragglers.empty() ? "T_min" : "T_opt = min(T*, T')"},
                    {"plan", plan_of(current)}};
  if (all_plans) {
    json plans = json::array();
    for (std::size_t p = 0; p < points.size(); ++p) plans.push_back(plan_of(p));
    out["plans"] = plans;
  }
  if (!job.stragglers.empty()) {
    const double t_min = points.back().time_s;
    const double t_prime = straggler_time_s(job, t_min);
    const auto decision = report::decide(f.stored, t_prime);
    const double blocking_w = f.p_blocking_w * f.num_gpus;
    const auto& chosen = points[decision.point];
    const double energy = chosen.energy_j + blocking_w * (t_prime - chosen.time_s);
    const double t_min_plan = points.back().energy_j + blocking_w * (t_prime - t_min);
    const double max_clock = f.max_clock_energy_at_t_min_j + blocking_w * (t_prime - t_min);
    const int dp = job.info.dp_degree;
    out["prediction"] = {
        {"note",
         "modelled: planned energy of the chosen point plus P_blocking until T'; per "
         "pipeline unless named job_"},
        {"straggler_time_s", t_prime},
        {"target_time_s", decision.target_time_s},
        {"point", decision.point},
        {"planned_time_s", chosen.time_s},
        {"energy_per_iteration_j", energy},
        {"t_min_plan_energy_per_iteration_j", t_min_plan},
        {"max_clock_energy_per_iteration_j", max_clock},
        {"saving_vs_t_min_plan_j", t_min_plan - energy},
        {"saving_vs_t_min_plan_fraction", 1.0 - energy / t_min_plan},
        {"saving_vs_max_clock_fraction", 1.0 - energy / max_clock},
        {"job_saving_vs_t_min_plan_j", dp * (t_min_plan - energy)},
    };
  }
  return json_response(200, out);
}

Response Service::post_straggler(const std::string& job_id, const Request& request) {
  {
    std::shared_lock lock(state_mutex_);
    if (jobs_.count(job_id) == 0) return not_found_job(job_id);
  }
  JobInfo info;
  {
    std::shared_lock lock(state_mutex_);
    info = jobs_.at(job_id)->info;
  }
  json j;
  if (auto e = parse_object(request.body, j)) return field_error(*e);
  const bool has_rank = j.contains("rank"), has_pipeline = j.contains("pipeline");
  if (has_rank == has_pipeline) {
    return field_error({"rank", "give exactly one of 'rank' or 'pipeline' (data-parallel index)"});
  }
  int who = 0;
  if (auto e = has_rank ? get_int(j, "rank", 0, info.world_size - 1, true, who)
                        : get_int(j, "pipeline", 0, info.dp_degree - 1, true, who)) {
    return field_error(*e);
  }
  const bool has_slowdown = j.contains("slowdown"), has_delay = j.contains("delay_s");
  if (has_slowdown == has_delay) {
    return field_error({"slowdown", "give exactly one of 'slowdown' (T'/T_min ≥ 1) or 'delay_s'"});
  }
  double value = 0.0;
  if (auto e = has_slowdown ? get_number(j, "slowdown", 1.0, 1000.0, false, true, value)
                            : get_number(j, "delay_s", 0.0, 86400.0, false, true, value)) {
    return field_error(*e);
  }
  json normalized = {{has_rank ? "rank" : "pipeline", who},
                     {has_slowdown ? "slowdown" : "delay_s", value}};
  const std::string key = fmt::format("{}:{}", has_rank ? "rank" : "pipeline", who);
  {
    std::lock_guard write(write_mutex_);
    if (auto ok = store_->put_straggler(
            job_id, key, normalized.dump(-1, ' ', false, json::error_handler_t::replace));
        !ok) {
      return error_response(500, ok.error().message);
    }
    std::unique_lock lock(state_mutex_);
    jobs_.at(job_id)->stragglers[key] =
        make_straggler(key, normalized.dump(-1, ' ', false, json::error_handler_t::replace));
    refresh_served(*jobs_.at(job_id));
  }
  Response f = get_frontier(job_id, "");
  json body = json::parse(f.body);
  json out = {{"job_id", job_id}, {"status", body["status"]}, {"straggler", normalized}};
  if (body.contains("prediction")) out["prediction"] = body["prediction"];
  if (body.contains("serving")) out["serving_point"] = body["serving"]["point"];
  return json_response(200, out);
}

Response Service::delete_straggler(const std::string& job_id) {
  std::lock_guard write(write_mutex_);
  {
    std::shared_lock lock(state_mutex_);
    if (jobs_.count(job_id) == 0) return not_found_job(job_id);
  }
  if (auto ok = store_->clear_stragglers(job_id); !ok) {
    return error_response(500, ok.error().message);
  }
  std::unique_lock lock(state_mutex_);
  auto& job = *jobs_.at(job_id);
  job.stragglers.clear();
  refresh_served(job);
  return json_response(200, nullptr);
}

Response Service::get_job(const std::string& job_id) {
  std::shared_lock lock(state_mutex_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return not_found_job(job_id);
  const Job& job = *it->second;
  json ranks = json::array();
  for (const auto& [r, info] : job.ranks) ranks.push_back(rank_info_json(info));
  json stragglers = json::array();
  for (const auto& [key, s] : job.stragglers) stragglers.push_back(json::parse(s.json));
  return json_response(200, {{"job", job_info_json(job.info)},
                             {"ranks", ranks},
                             {"status", job_status_name(job.status)},
                             {"profile_generation", job.profile ? job.profile->generation : 0},
                             {"stragglers", stragglers},
                             {"results", job.results},
                             {"profiling_phase",
                              job.in_vivo ? json(phase_name(job.in_vivo->phase)) : json(nullptr)}});
}

}  // namespace powertrain::serve
