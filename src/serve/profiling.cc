#include "serve/profiling.h"

#include <fmt/core.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace powertrain::serve {

using nlohmann::json;

const char* phase_name(InVivoProfiling::Phase phase) {
  switch (phase) {
    case InVivoProfiling::Phase::kPBlocking:
      return "p_blocking";
    case InVivoProfiling::Phase::kSweep:
      return "sweep";
    case InVivoProfiling::Phase::kDone:
      return "done";
  }
  return "unknown";
}

StageSweep::StageSweep(int stage, int reporting_rank, std::vector<int> clocks_mhz,
                       std::vector<std::string> instructions, SweepSettings settings)
    : stage_(stage),
      reporting_rank_(reporting_rank),
      clocks_(std::move(clocks_mhz)),
      instructions_(std::move(instructions)),
      settings_(settings) {
  std::sort(clocks_.begin(), clocks_.end(), std::greater<>());
  clocks_.erase(std::unique(clocks_.begin(), clocks_.end()), clocks_.end());
  for (const auto& name : instructions_) series_[name];
  done_ = clocks_.empty();
  if (clocks_.empty()) clocks_.push_back(0);
}

const std::vector<SweepPoint>& StageSweep::points(const std::string& instruction) const {
  static const std::vector<SweepPoint> kNone;
  auto it = series_.find(instruction);
  return it == series_.end() ? kNone : it->second.points;
}

bool StageSweep::stopped(const std::string& instruction) const {
  auto it = series_.find(instruction);
  return it != series_.end() && it->second.stopped;
}

core::Status StageSweep::add(
    int iterations, const std::map<std::string, std::tuple<double, double, long long>>& sums) {
  if (done_) return core::Error{fmt::format("stage {}: the clock sweep is finished", stage_)};
  for (const auto& [name, s] : series_) {
    if (s.stopped) continue;
    auto it = sums.find(name);
    if (it == sums.end() || std::get<2>(it->second) <= 0) {
      return core::Error{fmt::format("stage {}: no '{}' measurements", stage_, name)};
    }
  }
  for (const auto& [name, value] : sums) {
    if (series_.count(name) == 0) {
      return core::Error{fmt::format("stage {} runs no '{}' instruction", stage_, name)};
    }
  }
  for (auto& [name, s] : series_) {
    if (s.stopped) continue;
    const auto& [time, energy, runs] = sums.at(name);
    s.time_sum += time;
    s.energy_sum += energy;
    s.runs += runs;
  }
  iterations_ += iterations;
  if (iterations_ >= settings_.iterations_per_clock) finish_clock();
  return core::Ok{};
}

void StageSweep::finish_clock() {
  const int clock = clocks_[index_];
  // "Past half the range": a rise only stops the sweep in the lower half of the clocks, so noise
  // near the top (where energy is still falling) cannot end it early.
  const bool lower_half = clock < 0.5 * (clocks_.front() + clocks_.back());
  bool all_stopped = true;
  for (auto& [name, s] : series_) {
    if (s.stopped) continue;
    const SweepPoint point{clock, s.time_sum / static_cast<double>(s.runs),
                           s.energy_sum / static_cast<double>(s.runs)};
    if (!s.points.empty()) {
      s.rises = point.energy_j > s.points.back().energy_j ? s.rises + 1 : 0;
    }
    s.points.push_back(point);
    s.time_sum = s.energy_sum = 0.0;
    s.runs = 0;
    if (lower_half && s.rises >= settings_.stop_after_rises) s.stopped = true;
    all_stopped = all_stopped && s.stopped;
  }
  iterations_ = 0;
  if (all_stopped || index_ + 1 >= clocks_.size()) {
    done_ = true;
  } else {
    ++index_;
  }
}

json StageSweep::to_json() const {
  json series = json::object();
  for (const auto& [name, s] : series_) {
    json points = json::array();
    for (const auto& p : s.points) points.push_back({p.frequency_mhz, p.time_s, p.energy_j});
    series[name] = {{"points", points},       {"rises", s.rises},           {"stopped", s.stopped},
                    {"time_sum", s.time_sum}, {"energy_sum", s.energy_sum}, {"runs", s.runs}};
  }
  return {{"stage", stage_},
          {"reporting_rank", reporting_rank_},
          {"clocks", clocks_},
          {"instructions", instructions_},
          {"iterations_per_clock", settings_.iterations_per_clock},
          {"stop_after_rises", settings_.stop_after_rises},
          {"series", series},
          {"index", index_},
          {"iterations", iterations_},
          {"done", done_}};
}

core::Result<StageSweep> StageSweep::from_json(const json& j) {
  StageSweep s;
  try {
    s.stage_ = j.at("stage").get<int>();
    s.reporting_rank_ = j.at("reporting_rank").get<int>();
    s.clocks_ = j.at("clocks").get<std::vector<int>>();
    s.instructions_ = j.at("instructions").get<std::vector<std::string>>();
    s.settings_.iterations_per_clock = j.at("iterations_per_clock").get<int>();
    s.settings_.stop_after_rises = j.at("stop_after_rises").get<int>();
    for (const auto& [name, v] : j.at("series").items()) {
      Series series;
      for (const auto& p : v.at("points")) {
        series.points.push_back({p.at(0).get<int>(), p.at(1).get<double>(), p.at(2).get<double>()});
      }
      series.rises = v.at("rises").get<int>();
      series.stopped = v.at("stopped").get<bool>();
      series.time_sum = v.at("time_sum").get<double>();
      series.energy_sum = v.at("energy_sum").get<double>();
      series.runs = v.at("runs").get<long long>();
      s.series_[name] = std::move(series);
    }
    s.index_ = j.at("index").get<std::size_t>();
    s.iterations_ = j.at("iterations").get<int>();
    s.done_ = j.at("done").get<bool>();
  } catch (const std::exception& e) {
    return core::Error{fmt::format("stored clock sweep is corrupt: {}", e.what())};
  }
  if (s.clocks_.empty() || s.index_ >= s.clocks_.size()) {
    return core::Error{"stored clock sweep is corrupt: clock index outside the clocks"};
  }
  return s;
}

bool InVivoProfiling::sweep_done() const {
  return std::all_of(stages.begin(), stages.end(), [](const StageSweep& s) { return s.done(); });
}

std::string InVivoProfiling::profile_csv() const {
  std::string csv = "stage,instruction,frequency,time,energy\n";
  for (const auto& stage : stages) {
    for (const auto& name : stage.instructions()) {
      for (const auto& p : stage.points(name)) {
        csv += fmt::format("{},{},{},{:.17g},{:.17g}\n", stage.stage(), name, p.frequency_mhz,
                           p.time_s, p.energy_j);
      }
    }
  }
  return csv;
}

json InVivoProfiling::to_json() const {
  json sweeps = json::array();
  for (const auto& s : stages) sweeps.push_back(s.to_json());
  json j = {{"phase", phase_name(phase)},
            {"iterations_per_clock", settings.iterations_per_clock},
            {"stop_after_rises", settings.stop_after_rises},
            {"microbatches", microbatches},
            {"unit_time_s", unit_time_s},
            {"schedule", schedule},
            {"p_blocking_rank", p_blocking_rank},
            {"profile_generation", profile_generation},
            {"stages", sweeps}};
  j["p_blocking_w"] = p_blocking_w ? json(*p_blocking_w) : json(nullptr);
  return j;
}

core::Result<InVivoProfiling> InVivoProfiling::from_json(const json& j) {
  InVivoProfiling p;
  try {
    const std::string phase = j.at("phase").get<std::string>();
    p.phase = phase == "p_blocking" ? Phase::kPBlocking
              : phase == "sweep"    ? Phase::kSweep
                                    : Phase::kDone;
    p.settings.iterations_per_clock = j.at("iterations_per_clock").get<int>();
    p.settings.stop_after_rises = j.at("stop_after_rises").get<int>();
    p.microbatches = j.at("microbatches").get<int>();
    p.unit_time_s = j.at("unit_time_s").get<double>();
    p.schedule = j.at("schedule").get<std::string>();
    p.p_blocking_rank = j.at("p_blocking_rank").get<int>();
    p.profile_generation = j.at("profile_generation").get<long long>();
    if (!j.at("p_blocking_w").is_null()) p.p_blocking_w = j.at("p_blocking_w").get<double>();
    for (const auto& s : j.at("stages")) {
      auto sweep = StageSweep::from_json(s);
      if (!sweep) return sweep.error();
      p.stages.push_back(std::move(*sweep));
    }
  } catch (const std::exception& e) {
    return core::Error{fmt::format("stored profiling state is corrupt: {}", e.what())};
  }
  return p;
}

}  // namespace powertrain::serve
