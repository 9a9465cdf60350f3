// Trace comparison by name, like HTA's TraceDiff: for every CPU op name and every GPU event name,
// the count, total and mean duration in trace set A and in trace set B (summed over ranks), names
// added or removed, and the largest changes by total-time delta. Measured durations only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/trace_events.h"

namespace powertrain::analyze {

enum class DiffStatus : std::uint8_t { kChanged, kAdded, kRemoved };
std::string_view to_string(DiffStatus status);

struct DiffRow {
  std::string name;
  std::string kind;  // "op" (cpu_op) or "gpu" (kernel, memcpy, memset)
  DiffStatus status = DiffStatus::kChanged;
  std::int64_t count_a = 0;
  std::int64_t count_b = 0;
  std::int64_t total_a_ns = 0;
  std::int64_t total_b_ns = 0;
  double mean_a_ns() const { return count_a > 0 ? double(total_a_ns) / double(count_a) : 0.0; }
  double mean_b_ns() const { return count_b > 0 ? double(total_b_ns) / double(count_b) : 0.0; }
  std::int64_t delta_ns() const { return total_b_ns - total_a_ns; }
};

struct TraceDiff {
  std::vector<DiffRow> rows;  // by |delta| descending, then kind, then name
  std::int64_t ranks_a = 0;
  std::int64_t ranks_b = 0;
  std::int64_t added = 0;
  std::int64_t removed = 0;
  std::int64_t gpu_total_a_ns = 0;
  std::int64_t gpu_total_b_ns = 0;
  std::int64_t op_total_a_ns = 0;
  std::int64_t op_total_b_ns = 0;
};

/// Compares two sets of traces (each one or more ranks). O(E log N) in events and names.
TraceDiff diff_traces(const std::vector<trace::RankTrace>& a,
                      const std::vector<trace::RankTrace>& b);

}  // namespace powertrain::analyze
