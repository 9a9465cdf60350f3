// Frontier directories are an interface to other tools (plan servers), so reading them is strict.
#include "report/plan_store.h"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "core/csv.h"

namespace powertrain::report {

std::vector<std::vector<std::pair<std::string, int>>> StoredFrontier::plan_at(
    std::size_t point) const {
  std::vector<std::vector<std::pair<std::string, int>>> plan(slots.size());
  for (std::size_t gpu = 0; gpu < slots.size(); ++gpu) {
    for (const StoredSlot& slot : slots[gpu]) plan[gpu].emplace_back(slot.instruction, 0);
  }
  for (std::size_t p = 0; p <= point && p < changes.size(); ++p) {
    for (const auto& [gpu, slot, mhz] : changes[p]) plan[gpu][slot].second = mhz;
  }
  return plan;
}

std::size_t StoredFrontier::point_for_time(double target_s) const {
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (points[i].time_s <= target_s * (1.0 + 1e-12)) return i;
  }
  return points.size() - 1;
}

LookupDecision decide(const StoredFrontier& frontier, double straggler_time_s) {
  LookupDecision decision;
  decision.straggler_time_s = straggler_time_s;
  const double t_star = frontier.points.front().time_s;
  const double t_min = frontier.points.back().time_s;
  decision.target_time_s = std::min(t_star, straggler_time_s);
  decision.faster_than_t_min = straggler_time_s < t_min;
  decision.point = frontier.point_for_time(decision.target_time_s);
  return decision;
}

core::Result<StoredFrontier> read_frontier_directory(const std::string& directory) {
  namespace fs = std::filesystem;
  StoredFrontier stored;
  stored.directory = directory;
  const std::string frontier_path = (fs::path(directory) / "frontier.csv").string();
  const std::string plans_path = (fs::path(directory) / "plans.csv").string();
  auto frontier_table = core::read_csv_file(frontier_path);
  if (!frontier_table) return frontier_table.error();
  const char* frontier_columns[] = {"time", "energy", "realized_time", "realized_energy"};
  std::size_t fc[4];
  for (int i = 0; i < 4; ++i) {
    auto c = frontier_table->column(frontier_columns[i]);
    if (!c)
      return core::Error{
          fmt::format("{}:1: missing column '{}'", frontier_path, frontier_columns[i])};
    fc[i] = *c;
  }
  for (const core::CsvRow& row : frontier_table->rows) {
    StoredPoint point;
    double* targets[] = {&point.time_s, &point.energy_j, &point.realized_time_s,
                         &point.realized_energy_j};
    for (int i = 0; i < 4; ++i) {
      auto value = core::parse_finite_double(row.fields[fc[i]], frontier_path, row.line,
                                             frontier_columns[i]);
      if (!value) return value.error();
      *targets[i] = *value;
    }
    if (!stored.points.empty() && !(point.time_s < stored.points.back().time_s)) {
      return core::Error{
          fmt::format("{}:{}: field 'time': expected times to decrease (slowest first), got {}",
                      frontier_path, row.line, point.time_s)};
    }
    stored.points.push_back(point);
  }
  if (stored.points.empty())
    return core::Error{fmt::format("{}: no frontier points", frontier_path)};

  auto plans_table = core::read_csv_file(plans_path);
  if (!plans_table) return plans_table.error();
  const char* plan_columns[] = {"point",       "gpu",        "slot",         "stage",
                                "instruction", "microbatch", "frequency_mhz"};
  std::size_t pc[7];
  for (int i = 0; i < 7; ++i) {
    auto c = plans_table->column(plan_columns[i]);
    if (!c)
      return core::Error{fmt::format("{}:1: missing column '{}'", plans_path, plan_columns[i])};
    pc[i] = *c;
  }
  constexpr long long kMaxGpus = 1 << 16, kMaxSlots = 1 << 24;
  stored.changes.resize(stored.points.size());
  std::map<std::pair<int, int>, StoredSlot> slots;
  for (const core::CsvRow& row : plans_table->rows) {
    long long value[7] = {};
    for (int i : {0, 1, 2, 3, 5, 6}) {
      auto parsed = core::parse_integer(row.fields[pc[i]], plans_path, row.line, plan_columns[i]);
      if (!parsed) return parsed.error();
      value[i] = *parsed;
    }
    const long long point = value[0], gpu = value[1], slot = value[2];
    if (point < 0 || point >= static_cast<long long>(stored.points.size())) {
      return core::Error{fmt::format("{}:{}: field 'point': expected 0 to {}, got {}", plans_path,
                                     row.line, stored.points.size() - 1, point)};
    }
    if (gpu < 0 || gpu >= kMaxGpus || slot < 0 || slot >= kMaxSlots || value[6] < 0) {
      return core::Error{
          fmt::format("{}:{}: gpu, slot or frequency out of range", plans_path, row.line)};
    }
    const auto key = std::make_pair(static_cast<int>(gpu), static_cast<int>(slot));
    if (point == 0) {
      slots[key] =
          StoredSlot{row.fields[pc[4]], static_cast<int>(value[3]), static_cast<int>(value[5])};
    } else if (!slots.count(key)) {
      return core::Error{fmt::format("{}:{}: gpu {} slot {} was not listed at point 0", plans_path,
                                     row.line, gpu, slot)};
    }
    stored.changes[point].emplace_back(static_cast<int>(gpu), static_cast<int>(slot),
                                       static_cast<int>(value[6]));
  }
  for (const auto& [key, slot] : slots) {
    const auto [gpu, index] = key;
    if (static_cast<std::size_t>(gpu) >= stored.slots.size()) stored.slots.resize(gpu + 1);
    if (static_cast<std::size_t>(index) != stored.slots[gpu].size()) {
      return core::Error{fmt::format("{}: gpu {} has no slot {} at point 0", plans_path, gpu,
                                     stored.slots[gpu].size())};
    }
    stored.slots[gpu].push_back(slot);
  }
  if (stored.slots.empty())
    return core::Error{fmt::format("{}: no plan rows for point 0", plans_path)};
  return stored;
}

}  // namespace powertrain::report
