// Profile reading and validation; every error names the file and line.
#include "profile/profile.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "core/csv.h"

namespace powertrain::profile {

using core::Error;
using pipeline::InstructionKind;

const InstructionProfile* Profile::find(int stage, InstructionKind kind) const {
  for (const auto& entry : entries) {
    if (entry.stage == stage && entry.kind == kind) return &entry;
  }
  return nullptr;
}

int Profile::num_stages() const {
  int stages = 0;
  for (const auto& entry : entries) stages = std::max(stages, entry.stage + 1);
  return stages;
}

core::Result<Profile> parse_profile(const core::CsvTable& table) {
  const std::string& src = table.source;
  const char* required[] = {"stage", "instruction", "frequency", "time", "energy"};
  std::size_t col[5];
  for (int i = 0; i < 5; ++i) {
    auto c = table.column(required[i]);
    if (!c) {
      return Error{fmt::format(
          "{}:1: missing column '{}' (expected stage,instruction,frequency,time,energy)", src,
          required[i])};
    }
    col[i] = *c;
  }
  std::map<std::pair<int, InstructionKind>, InstructionProfile> by_key;
  // (stage, kind, MHz) -> (index in the entry's options, number of rows)
  std::map<std::tuple<int, InstructionKind, int>, std::pair<std::size_t, int>> seen;
  int merged = 0, first_duplicate_line = 0;
  for (const core::CsvRow& row : table.rows) {
    auto stage = core::parse_integer(row.fields[col[0]], src, row.line, "stage");
    if (!stage) return stage.error();
    if (*stage < 0 || *stage >= kMaxProfileStages) {
      return Error{fmt::format("{}:{}: field 'stage': expected 0 to {}, got {}", src, row.line,
                               kMaxProfileStages - 1, *stage)};
    }
    const std::string& name = row.fields[col[1]];
    auto kind = pipeline::parse_profiled_instruction(name);
    if (!kind) {
      return Error{fmt::format(
          "{}:{}: field 'instruction': expected forward, backward or recompute, got '{}'", src,
          row.line, name.substr(0, 40))};
    }
    // Frequencies: an integer MHz, also written as "1410.0"; range-checked as a double before
    // any integer conversion (1e20 would overflow it).
    auto frequency_value =
        core::parse_finite_double(row.fields[col[2]], src, row.line, "frequency");
    if (!frequency_value || *frequency_value != std::floor(*frequency_value)) {
      return Error{fmt::format("{}:{}: field 'frequency': expected an integer MHz, got '{}'", src,
                               row.line, row.fields[col[2]].substr(0, 40))};
    }
    if (*frequency_value < 1.0 || *frequency_value > kMaxProfileFrequencyMhz) {
      return Error{fmt::format("{}:{}: field 'frequency': expected 1 to {} MHz, got {}", src,
                               row.line, kMaxProfileFrequencyMhz,
                               row.fields[col[2]].substr(0, 40))};
    }
    auto time = core::parse_finite_double(row.fields[col[3]], src, row.line, "time");
    if (!time) return time.error();
    if (!(*time > 0.0) || *time > kMaxProfileTimeS) {
      return Error{fmt::format("{}:{}: field 'time': expected seconds in (0, {}], got {}", src,
                               row.line, kMaxProfileTimeS, row.fields[col[3]].substr(0, 40))};
    }
    auto energy = core::parse_finite_double(row.fields[col[4]], src, row.line, "energy");
    if (!energy) return energy.error();
    if (!(*energy > 0.0) || *energy > kMaxProfileEnergyJ) {
      return Error{fmt::format("{}:{}: field 'energy': expected joules in (0, {:g}], got {}", src,
                               row.line, kMaxProfileEnergyJ, row.fields[col[4]].substr(0, 40))};
    }
    const int stage_id = static_cast<int>(*stage);
    const int mhz = static_cast<int>(*frequency_value);
    auto& entry = by_key[{stage_id, *kind}];
    entry.stage = stage_id;
    entry.kind = *kind;
    auto [it, inserted] = seen.emplace(std::make_tuple(stage_id, *kind, mhz),
                                       std::make_pair(entry.options.size(), 1));
    if (!inserted) {
      // A repeated measurement: keep the running mean, deterministic in file order.
      MeasuredOption& first = entry.options[it->second.first];
      const double n = ++it->second.second;
      first.time_s += (*time - first.time_s) / n;
      first.energy_j += (*energy - first.energy_j) / n;
      if (merged == 0) first_duplicate_line = row.line;
      ++merged;
      continue;
    }
    entry.options.push_back({mhz, *time, *energy, row.line});
  }
  if (by_key.empty()) return Error{fmt::format("{}: no measurements (only a header)", src)};
  Profile profile;
  profile.source = src;
  profile.merged_duplicate_rows = merged;
  profile.first_duplicate_line = first_duplicate_line;
  for (auto& [key, entry] : by_key) profile.entries.push_back(std::move(entry));
  return profile;
}

core::Result<Profile> read_profile(const std::string& path) {
  auto table = core::read_csv_file(path);
  if (!table) return table.error();
  return parse_profile(*table);
}

core::Status validate_profile_for_pipeline(const Profile& profile, int num_stages,
                                           bool needs_recompute) {
  if (profile.num_stages() > num_stages) {
    return Error{fmt::format("{}: has stage {} but the pipeline has only {} stages (ids 0 to {})",
                             profile.source, profile.num_stages() - 1, num_stages, num_stages - 1)};
  }
  std::vector<InstructionKind> kinds = {InstructionKind::kForward, InstructionKind::kBackward};
  if (needs_recompute) kinds.push_back(InstructionKind::kRecompute);
  for (int stage = 0; stage < num_stages; ++stage) {
    for (InstructionKind kind : kinds) {
      const InstructionProfile* entry = profile.find(stage, kind);
      if (entry == nullptr) {
        return Error{fmt::format("{}: stage {} {}: no measurements (the schedule needs it)",
                                 profile.source, stage, pipeline::instruction_name(kind))};
      }
      if (entry->options.empty()) {
        return Error{fmt::format("{}: stage {} {}: no options (the schedule needs at least two)",
                                 profile.source, stage, pipeline::instruction_name(kind))};
      }
      std::set<int> clocks;
      for (const auto& option : entry->options) clocks.insert(option.frequency_mhz);
      if (clocks.size() < 2) {
        return Error{
            fmt::format("{}:{}: stage {} {}: only one clock ({} MHz); need at least two to plan",
                        profile.source, entry->options.front().line, stage,
                        pipeline::instruction_name(kind), *clocks.begin())};
      }
    }
  }
  return core::Ok{};
}

}  // namespace powertrain::profile
