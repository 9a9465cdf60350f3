#include "search/checkpoint.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

namespace powertrain::search {
namespace {

using nlohmann::json;

constexpr TrialStatus kStatuses[] = {TrialStatus::kOk, TrialStatus::kInvalid, TrialStatus::kOom,
                                     TrialStatus::kPrunedOom, TrialStatus::kPrunedDominated};

// Writes all of `text` (retrying short writes and EINTR).
bool write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

std::string encode_trial(const TrialResult& t) {
  json points = json::array();
  for (const TrialPoint& p : t.frontier) points.push_back({p.time_s, p.energy_j, p.plan_point});
  json lines = json::array();
  for (const BoundLine& l : t.bound_lines) lines.push_back({l.time_s, l.energy_j, l.slope_w});
  json j = {{"config", t.config.index},
            {"status", std::string(status_name(t.status))},
            {"reason", t.reason},
            {"dp", t.dp},
            {"microbatches", t.num_microbatches},
            {"peak_memory_gib", t.peak_memory_gib},
            {"t_min_s", t.t_min_s},
            {"energy_at_t_min_j", t.energy_at_t_min_j},
            {"t_star_s", t.t_star_s},
            {"energy_at_t_star_j", t.energy_at_t_star_j},
            {"baseline_time_s", t.baseline_time_s},
            {"baseline_energy_j", t.baseline_energy_j},
            {"bound_time_s", t.bound_time_s},
            {"bound_energy_j", t.bound_energy_j},
            {"bound_lines", lines},
            {"frontier", points},
            {"eval_s", t.seconds}};
  return j.dump();
}

core::Result<TrialResult> decode_trial(std::string_view line, const std::string& where) {
  const json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return core::Error{where + ": not a JSON object"};
  TrialResult t;
  auto number = [&](const char* field, double& out) -> core::Status {
    if (!j.contains(field) || !j[field].is_number())
      return core::Error{fmt::format("{}: field '{}' must be a number", where, field)};
    out = j[field].get<double>();
    return core::Ok{};
  };
  auto integer = [&](const char* field, int& out) -> core::Status {
    if (!j.contains(field) || !j[field].is_number_integer() ||
        j[field].get<long long>() < std::numeric_limits<int>::min() ||
        j[field].get<long long>() > std::numeric_limits<int>::max())
      return core::Error{fmt::format("{}: field '{}' must be an integer", where, field)};
    out = static_cast<int>(j[field].get<long long>());
    return core::Ok{};
  };
  if (!j.contains("config") || !j["config"].is_array() || j["config"].size() != kNumKnobs)
    return core::Error{
        fmt::format("{}: field 'config' must be an array of {} value indices", where, kNumKnobs)};
  for (std::size_t k = 0; k < kNumKnobs; ++k) {
    const json& v = j["config"][k];
    if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > (1 << 20))
      return core::Error{fmt::format("{}: field 'config' must hold value indices", where)};
    t.config.index[k] = static_cast<int>(v.get<long long>());
  }
  if (!j.contains("status") || !j["status"].is_string())
    return core::Error{fmt::format("{}: field 'status' must be a string", where)};
  bool known = false;
  for (TrialStatus s : kStatuses) {
    if (status_name(s) == j["status"].get<std::string>()) {
      t.status = s;
      known = true;
    }
  }
  if (!known) return core::Error{fmt::format("{}: field 'status' is unknown", where)};
  if (!j.contains("reason") || !j["reason"].is_string())
    return core::Error{fmt::format("{}: field 'reason' must be a string", where)};
  t.reason = j["reason"].get<std::string>();
  for (auto status :
       {integer("dp", t.dp), integer("microbatches", t.num_microbatches),
        number("peak_memory_gib", t.peak_memory_gib), number("t_min_s", t.t_min_s),
        number("energy_at_t_min_j", t.energy_at_t_min_j), number("t_star_s", t.t_star_s),
        number("energy_at_t_star_j", t.energy_at_t_star_j),
        number("baseline_time_s", t.baseline_time_s),
        number("baseline_energy_j", t.baseline_energy_j), number("bound_time_s", t.bound_time_s),
        number("bound_energy_j", t.bound_energy_j), number("eval_s", t.seconds)})
    if (!status) return status.error();
  // Optional: logs written before the bound's lines existed have only its corner.
  if (j.contains("bound_lines")) {
    if (!j["bound_lines"].is_array())
      return core::Error{fmt::format("{}: field 'bound_lines' must be an array", where)};
    for (const json& l : j["bound_lines"]) {
      if (!l.is_array() || l.size() != 3 || !l[0].is_number() || !l[1].is_number() ||
          !l[2].is_number())
        return core::Error{
            fmt::format("{}: field 'bound_lines' must hold [time_s, energy_j, slope_w]", where)};
      t.bound_lines.push_back({l[0].get<double>(), l[1].get<double>(), l[2].get<double>()});
    }
  }
  if (!j.contains("frontier") || !j["frontier"].is_array())
    return core::Error{fmt::format("{}: field 'frontier' must be an array", where)};
  for (const json& p : j["frontier"]) {
    if (!p.is_array() || p.size() != 3 || !p[0].is_number() || !p[1].is_number() ||
        !p[2].is_number_integer())
      return core::Error{
          fmt::format("{}: field 'frontier' must hold [time_s, energy_j, plan_point]", where)};
    t.frontier.push_back(
        {p[0].get<double>(), p[1].get<double>(), static_cast<int>(p[2].get<long long>())});
  }
  return t;
}

std::string checkpoint_fingerprint(const SearchSpec& spec) {
  json knobs = json::object();
  for (int k = 0; k < kNumKnobs; ++k)
    knobs[std::string(knob_name(k))] = spec.values[static_cast<std::size_t>(k)];
  json j = {{"model", spec.model},
            {"gpu", spec.gpu},
            {"num_gpus", spec.num_gpus},
            {"global_batch", spec.global_batch},
            {"seq_len", spec.seq_len},
            {"precision", spec.precision},
            {"knobs", knobs},
            {"tau_steps", spec.tau_steps}};
  if (spec.emulation.enabled()) {
    const EmulationSpec& e = spec.emulation;
    j["emulation"] = {{"command", e.command},
                      {"ranks", e.ranks},
                      {"gpu", e.gpu},
                      {"kernel_table", e.kernel_table},
                      {"max_host_gap_us", e.max_host_gap_us},
                      {"host_time", e.host_time},
                      {"modelled_host_gap_us", e.modelled_host_gap_us}};
  }
  return j.dump();
}

core::Result<std::unique_ptr<Checkpoint>> Checkpoint::open(const std::string& path,
                                                           const SearchSpec& spec) {
  std::unique_ptr<Checkpoint> c(new Checkpoint());
  c->path_ = path;
  const std::string header =
      json{{"powertrain_search_checkpoint", 1}, {"spec", checkpoint_fingerprint(spec)}}.dump() +
      "\n";
  c->fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (c->fd_ < 0)
    return core::Error{fmt::format("{}: cannot open checkpoint: {}", path, std::strerror(errno))};
  std::optional<std::string> text;
  {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream all;
    all << in.rdbuf();
    if (!in) return core::Error{fmt::format("{}: cannot read checkpoint", path)};
    text = all.str();
  }
  // Complete lines only: a search killed mid-write leaves a torn last line, which is cut off.
  std::size_t complete = text->rfind('\n') == std::string::npos ? 0 : text->rfind('\n') + 1;
  const std::string not_ours = fmt::format(
      "{}:1: not a powertrain search checkpoint (line 1 is not its "
      "{{\"powertrain_search_checkpoint\": 1, ...}} header); use another --checkpoint file",
      path);
  if (complete == 0) {
    // New, or killed while writing the header; anything else is not ours to overwrite.
    if (header.compare(0, text->size(), *text) != 0) return core::Error{not_ours};
    if (::ftruncate(c->fd_, 0) != 0)
      return core::Error{
          fmt::format("{}: cannot reset checkpoint: {}", path, std::strerror(errno))};
    if (!write_all(c->fd_, header) || ::fdatasync(c->fd_) != 0)
      return core::Error{
          fmt::format("{}: cannot write checkpoint: {}", path, std::strerror(errno))};
    return c;
  }
  const auto line_count =
      std::count(text->begin(), text->begin() + static_cast<long>(complete), '\n');
  if (complete != text->size())
    c->warnings_.push_back(fmt::format(
        "{}:{}: ignoring a truncated last line ({} bytes without a newline, left by a search "
        "killed while writing it); it is cut off and that trial runs again",
        path, line_count + 1, text->size() - complete));
  const std::string_view body(text->data(), complete);
  std::size_t begin = 0;
  int line = 0;
  while (begin < body.size()) {
    const std::size_t end = body.find('\n', begin);
    const std::string_view row = body.substr(begin, end - begin);
    const std::size_t row_begin = begin;
    begin = end + 1;
    ++line;
    const std::string where = fmt::format("{}:{}", path, line);
    if (line == 1) {
      const json head = json::parse(row, nullptr, false);
      if (head.is_discarded() || !head.is_object() ||
          !head.contains("powertrain_search_checkpoint"))
        return core::Error{not_ours};
      if (std::string(row) + "\n" != header)
        return core::Error{fmt::format(
            "{}: field 'spec' differs from this search's (model, GPUs, batch, knobs, tau_steps "
            "or emulation changed); use another --checkpoint file",
            where)};
      continue;
    }
    // A last line that is not JSON at all is a torn write that got a newline afterwards (e.g. a
    // copy of a torn log); any other bad line is an error.
    if (begin == body.size() && json::parse(row, nullptr, false).is_discarded()) {
      c->warnings_.push_back(fmt::format(
          "{}: ignoring a truncated last line (not JSON); it is cut off and that trial runs again",
          where));
      complete = row_begin;
      break;
    }
    auto trial = decode_trial(row, where);
    if (!trial) return trial.error();
    if (trial->status == TrialStatus::kOk && trial->frontier.empty())
      return core::Error{fmt::format("{}: field 'frontier' is empty for a planned trial", where)};
    c->done_[trial->config] = std::move(*trial);
  }
  if (complete != text->size() && ::ftruncate(c->fd_, static_cast<off_t>(complete)) != 0)
    return core::Error{
        fmt::format("{}: cannot cut off the torn last line: {}", path, std::strerror(errno))};
  c->restored_ = c->done_.size();
  return c;
}

Checkpoint::~Checkpoint() {
  if (fd_ >= 0) ::close(fd_);
}

const TrialResult* Checkpoint::find(const Config& config) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = done_.find(config);
  return it == done_.end() ? nullptr : &it->second;
}

core::Status Checkpoint::append(const TrialResult& trial) {
  const std::string line = encode_trial(trial) + "\n";
  std::lock_guard<std::mutex> lock(mutex_);
  if (!write_all(fd_, line) || ::fdatasync(fd_) != 0)
    return core::Error{fmt::format("{}: cannot append a trial: {}", path_, std::strerror(errno))};
  done_.emplace(trial.config, trial);
  return core::Ok{};
}

}  // namespace powertrain::search
