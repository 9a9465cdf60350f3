// Pipeline stage partitions of layer units: uniform, explicit ("[0,6,12,19,25]") and Perseus's
// minimum-imbalance partition (App. B.1), solved exactly.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace powertrain::workload {

/// Stage s holds units [boundaries[s], boundaries[s+1]). boundaries has num_stages + 1 entries,
/// starts at 0, strictly increases and ends at the number of units.
struct Partition {
  std::vector<int> boundaries;

  int num_stages() const { return static_cast<int>(boundaries.size()) - 1; }
  int num_units() const { return boundaries.empty() ? 0 : boundaries.back(); }
  int stage_size(int stage) const { return boundaries[stage + 1] - boundaries[stage]; }
};

/// "[0, 6, 12, 19, 25]", the form Perseus's Table 7 prints.
std::string to_string(const Partition& partition);

/// Limits on partitions (units and stages).
inline constexpr int kMaxPartitionUnits = 1 << 16;

/// Megatron's uniform layout: the Transformer layers (all units but the last) split evenly, the
/// first (layers mod stages) stages taking one more, and the last unit (the LM head) joining the
/// last stage. E.g. 97 units, 8 stages: [0, 12, 24, ..., 84, 97].
/// Errors: stages < 1, or more stages than Transformer layers (num_units - 1); num_units over
/// kMaxPartitionUnits.
core::Result<Partition> uniform_partition(int num_units, int num_stages);

/// Parses "[0,6,12,19,25]" (brackets optional, spaces allowed) and checks it against the job.
/// Errors say what is wrong: not integers, not starting at 0, not strictly increasing (an empty
/// stage), num_stages + 1 numbers expected, not ending at num_units.
core::Result<Partition> parse_partition(std::string_view text, int num_units, int num_stages);

/// Checks an existing partition against num_units and num_stages (same errors as parsing).
core::Status validate_partition(const Partition& partition, int num_units, int num_stages);

/// Sum of unit costs per stage. Precondition: the partition covers costs.size() units.
std::vector<double> stage_costs(const std::vector<double>& unit_costs, const Partition& partition);

/// max / min of stage_costs.
double imbalance_ratio(const std::vector<double>& unit_costs, const Partition& partition);

struct ImbalanceResult {
  Partition partition;
  std::vector<double> stage_costs;
  double imbalance_ratio = 1.0;  // max stage cost / min stage cost
};

/// Relative tolerance within which two imbalance ratios count as tied.
inline constexpr double kImbalanceTieTolerance = 1e-9;

/// The contiguous partition of units into num_stages non-empty stages minimizing
/// (max stage cost) / (min stage cost) — Perseus App. B.1, exact. Among partitions whose ratio
/// is within kImbalanceTieTolerance (relative) of the best, it returns the one with the smallest
/// max stage cost, then the lexicographically smallest boundaries.
///
/// Method: the optimal minimum stage cost is some contiguous segment sum m; for each candidate
/// m ≤ total / stages (largest first) the smallest feasible max stage cost M(m) is found by
/// binary search over segment sums, each test a DP over prefixes and stage counts with a
/// sliding window; candidates whose lower bound max(total/stages, max unit)/m cannot beat the
/// best are pruned. Worst case O(n² log n · n·N); 97 units × 8 stages and 140 × 16 take
/// milliseconds.
/// Errors: empty or over-limit costs, a cost not finite and positive, stages < 1 or more
/// stages than units.
core::Result<ImbalanceResult> min_imbalance_partition(const std::vector<double>& unit_costs,
                                                      int num_stages);

}  // namespace powertrain::workload
