// Stage partitions: uniform, parsed, and the exact minimum-imbalance search.
#include "workload/partition.h"

#include <fmt/core.h>

#include <algorithm>
#include <cassert>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>

namespace powertrain::workload {

using core::Error;

std::string to_string(const Partition& partition) {
  std::string out = "[";
  for (std::size_t i = 0; i < partition.boundaries.size(); ++i) {
    out += fmt::format("{}{}", i ? ", " : "", partition.boundaries[i]);
  }
  return out + "]";
}

core::Result<Partition> uniform_partition(int num_units, int num_stages) {
  if (num_units < 2 || num_units > kMaxPartitionUnits) {
    return Error{fmt::format("uniform partition: expected 2 to {} layer units, got {}",
                             kMaxPartitionUnits, num_units)};
  }
  const int layers = num_units - 1;
  if (num_stages < 1 || num_stages > layers) {
    return Error{
        fmt::format("uniform partition: stages must be between 1 and the {} Transformer "
                    "layers, got {}",
                    layers, num_stages)};
  }
  Partition p;
  p.boundaries.push_back(0);
  for (int s = 0; s < num_stages; ++s) {
    const int size = layers / num_stages + (s < layers % num_stages ? 1 : 0);
    p.boundaries.push_back(p.boundaries.back() + size);
  }
  p.boundaries.back() = num_units;  // the LM head joins the last stage
  return p;
}

core::Status validate_partition(const Partition& p, int num_units, int num_stages) {
  const std::string text = to_string(p);
  const std::string shown = text.size() > 60 ? text.substr(0, 60) + "...]" : text;
  if (static_cast<int>(p.boundaries.size()) != num_stages + 1) {
    return Error{fmt::format("partition {}: has {} numbers, expected {} for {} stages", shown,
                             p.boundaries.size(), num_stages + 1, num_stages)};
  }
  if (p.boundaries.front() != 0) {
    return Error{fmt::format("partition {}: must start at 0, got {}", shown, p.boundaries.front())};
  }
  for (int s = 0; s < num_stages; ++s) {
    if (p.boundaries[s + 1] <= p.boundaries[s]) {
      return Error{
          fmt::format("partition {}: boundaries must strictly increase; stage {} "
                      "({} to {}) would be empty or negative",
                      shown, s, p.boundaries[s], p.boundaries[s + 1])};
    }
  }
  if (p.boundaries.back() != num_units) {
    return Error{fmt::format("partition {}: must end at {} (the number of layer units), got {}",
                             shown, num_units, p.boundaries.back())};
  }
  return core::Ok{};
}

core::Result<Partition> parse_partition(std::string_view text, int num_units, int num_stages) {
  const std::string shown(text.substr(0, 80));
  std::string_view rest = text;
  auto trim = [](std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
  };
  rest = trim(rest);
  if (!rest.empty() && rest.front() == '[') {
    if (rest.back() != ']') {
      return Error{fmt::format("partition '{}': missing closing ']'", shown)};
    }
    rest = trim(rest.substr(1, rest.size() - 2));
  }
  Partition p;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view token = trim(rest.substr(0, comma));
    int value = 0;
    auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
    if (token.empty() || ec != std::errc() || ptr != token.data() + token.size()) {
      return Error{fmt::format("partition '{}': expected comma-separated integers, got '{}'", shown,
                               token.substr(0, 20))};
    }
    p.boundaries.push_back(value);
    if (p.boundaries.size() > static_cast<std::size_t>(kMaxPartitionUnits) + 1) {
      return Error{
          fmt::format("partition '{}': more than {} numbers", shown, kMaxPartitionUnits + 1)};
    }
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  core::Status valid = validate_partition(p, num_units, num_stages);
  if (!valid) return valid.error();
  return p;
}

std::vector<double> stage_costs(const std::vector<double>& unit_costs, const Partition& p) {
  std::vector<double> costs;
  for (int s = 0; s < p.num_stages(); ++s) {
    double sum = 0.0;
    for (int u = p.boundaries[s]; u < p.boundaries[s + 1]; ++u) sum += unit_costs[u];
    costs.push_back(sum);
  }
  return costs;
}

double imbalance_ratio(const std::vector<double>& unit_costs, const Partition& p) {
  const std::vector<double> costs = stage_costs(unit_costs, p);
  const auto [lo, hi] = std::minmax_element(costs.begin(), costs.end());
  return *hi / *lo;
}

namespace {

// Feasibility of "split the units into exactly `stages` contiguous stages, each costing within
// [lo, hi]" over prefix sums. Stage costs are compared with an absolute slack of eps so that
// sums computed in different orders still tie.
class SegmentSolver {
 public:
  SegmentSolver(const std::vector<double>& costs, int stages)
      : n_(costs.size()), k_(stages), words_((stages + 1 + 63) / 64) {
    prefix_.assign(n_ + 1, 0.0);
    for (std::size_t i = 0; i < n_; ++i) prefix_[i + 1] = prefix_[i] + costs[i];
    eps_ = 1e-12 * prefix_[n_];
    reach_.assign((n_ + 1) * words_, 0);
    suffix_.assign((n_ + 1) * words_, 0);
    back_.assign(words_, 0);
    window_.assign(words_, 0);
  }

  double total() const { return prefix_[n_]; }
  double segment(std::size_t i, std::size_t j) const { return prefix_[j] - prefix_[i]; }
  bool in_range(double cost, double lo, double hi) const {
    return cost >= lo - eps_ && cost <= hi + eps_;
  }

  // reach[j] is the bit set of stage counts c such that the first j units split into c stages
  // within [lo, hi]: the OR of reach[i] over the valid previous boundaries i, shifted by one.
  // Those i form a window sliding right as j grows; a two-stack queue (suffix ORs for the
  // front, a running OR for the back) gives the window's OR in amortized O(stages / 64).
  bool feasible(double lo, double hi) {
    std::fill(reach_.begin(), reach_.begin() + words_, 0);
    reach_[0] = 1;  // zero units, zero stages
    std::fill(back_.begin(), back_.end(), 0);
    std::size_t first = 0, middle = 0, last = 0;  // window [first, last), front [first, middle)
    for (std::size_t j = 1; j <= n_; ++j) {
      // Admit i while the stage (i, j] costs at least lo.
      for (; last < j && segment(last, j) >= lo - eps_; ++last) {
        for (std::size_t w = 0; w < words_; ++w) back_[w] |= row(reach_, last)[w];
      }
      // Drop i while the stage (i, j] costs more than hi.
      for (; first < last && segment(first, j) > hi + eps_; ++first) {
        if (first == middle) flip(first, last, middle);
      }
      for (std::size_t w = 0; w < words_; ++w) {
        window_[w] = back_[w] | (first < middle ? row(suffix_, first)[w] : 0);
      }
      std::uint64_t* out = row(reach_, j);
      for (std::size_t w = words_; w-- > 0;) {
        out[w] = (window_[w] << 1) | (w > 0 ? window_[w - 1] >> 63 : 0);
      }
    }
    return (row(reach_, n_)[k_ / 64] >> (k_ % 64)) & 1;
  }

  // Lexicographically smallest boundaries of a split into `stages` stages within [lo, hi], or
  // empty when none exists. Suffix table can[i][c]: units i.. split into c stages. O(n² k).
  std::vector<int> smallest_boundaries(double lo, double hi) const {
    std::vector<char> can((n_ + 1) * (k_ + 1), 0);
    can[n_ * (k_ + 1)] = 1;
    for (std::size_t i = n_; i-- > 0;) {
      for (std::size_t j = i + 1; j <= n_; ++j) {
        const double cost = segment(i, j);
        if (cost > hi + eps_) break;
        if (cost < lo - eps_) continue;
        for (int c = 1; c <= k_; ++c) {
          if (can[j * (k_ + 1) + c - 1]) can[i * (k_ + 1) + c] = 1;
        }
      }
    }
    if (!can[k_]) return {};
    std::vector<int> boundaries{0};
    std::size_t at = 0;
    for (int left = k_; left > 0; --left) {
      for (std::size_t j = at + 1; j <= n_; ++j) {
        if (in_range(segment(at, j), lo, hi) && can[j * (k_ + 1) + left - 1]) {
          at = j;
          break;
        }
      }
      boundaries.push_back(static_cast<int>(at));
    }
    return boundaries;
  }

 private:
  std::uint64_t* row(std::vector<std::uint64_t>& table, std::size_t i) {
    return table.data() + i * words_;
  }
  // Moves the back stack [middle, last) to the front, as suffix ORs down to `first`.
  void flip(std::size_t first, std::size_t last, std::size_t& middle) {
    for (std::size_t i = last; i-- > first;) {
      for (std::size_t w = 0; w < words_; ++w) {
        row(suffix_, i)[w] = row(reach_, i)[w] | (i + 1 < last ? row(suffix_, i + 1)[w] : 0);
      }
    }
    middle = last;
    std::fill(back_.begin(), back_.end(), 0);
  }

  std::size_t n_;
  int k_;
  std::size_t words_;
  double eps_ = 0.0;
  std::vector<double> prefix_;
  std::vector<std::uint64_t> reach_, suffix_;  // (n + 1) rows of words_ bit words
  std::vector<std::uint64_t> back_, window_;
};

constexpr int kMaxImbalanceUnits = 2048;  // the search keeps all n²/2 segment sums

}  // namespace

core::Result<ImbalanceResult> min_imbalance_partition(const std::vector<double>& unit_costs,
                                                      int num_stages) {
  const int n = static_cast<int>(unit_costs.size());
  if (n < 1 || n > kMaxImbalanceUnits) {
    return Error{fmt::format("minimum-imbalance partition: expected 1 to {} unit costs, got {}",
                             kMaxImbalanceUnits, unit_costs.size())};
  }
  for (int u = 0; u < n; ++u) {
    if (!std::isfinite(unit_costs[u]) || unit_costs[u] <= 0.0) {
      return Error{
          fmt::format("minimum-imbalance partition: unit {} cost must be finite and "
                      "positive, got {}",
                      u, unit_costs[u])};
    }
  }
  if (num_stages < 1 || num_stages > n) {
    return Error{
        fmt::format("minimum-imbalance partition: stages must be between 1 and the {} "
                    "units, got {}",
                    n, num_stages)};
  }

  SegmentSolver solver(unit_costs, num_stages);
  std::vector<double> sums;  // every contiguous segment sum, ascending
  sums.reserve(static_cast<std::size_t>(n) * (n + 1) / 2);
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j <= n; ++j) sums.push_back(solver.segment(i, j));
  }
  std::sort(sums.begin(), sums.end());
  sums.erase(std::unique(sums.begin(), sums.end()), sums.end());

  const double average = solver.total() / num_stages;
  // Every partition's max stage is at least the average and at least the largest unit.
  const double max_lower_bound =
      std::max(average, *std::max_element(unit_costs.begin(), unit_costs.end()));
  const double slack = 1e-12 * solver.total();
  // Candidates for the minimum stage cost: segment sums not above the average, largest first.
  std::vector<double> minima;
  for (double s : sums) {
    if (s <= average + slack) minima.push_back(s);
  }
  std::reverse(minima.begin(), minima.end());

  // Smallest segment sum M in (.., cap] such that a split with stages in [m, M] exists, or
  // +inf. Feasibility is monotone in M, so binary search over the sorted sums.
  auto min_max_stage = [&](double m, double cap) {
    auto first = std::lower_bound(sums.begin(), sums.end(), std::max(m, max_lower_bound) - slack);
    auto last = std::upper_bound(sums.begin(), sums.end(), cap + slack);
    if (first >= last || !solver.feasible(m, *(last - 1))) {
      return std::numeric_limits<double>::infinity();
    }
    while (last - first > 1) {  // invariant: *(last - 1) feasible
      auto mid = first + (last - first - 1) / 2;
      if (solver.feasible(m, *mid)) {
        last = mid + 1;
      } else {
        first = mid + 1;
      }
    }
    return *first;
  };

  // Pass 1: the best ratio. Pass 2: among ratios within the tie tolerance, the smallest max.
  // The min-max partition (no lower bound on stages) seeds pass 1 with an achievable ratio, so
  // that candidates are pruned from the start.
  double best_ratio = std::numeric_limits<double>::infinity();
  {
    const double min_max = min_max_stage(0.0, solver.total());
    Partition seed;
    seed.boundaries = solver.smallest_boundaries(0.0, min_max);
    if (!seed.boundaries.empty()) best_ratio = imbalance_ratio(unit_costs, seed);
  }
  for (double m : minima) {
    if (max_lower_bound / m > best_ratio) break;  // smaller m only raises the bound
    const double cap = std::isfinite(best_ratio) ? best_ratio * m : solver.total();
    best_ratio = std::min(best_ratio, min_max_stage(m, cap) / m);
  }
  const double ratio_limit = best_ratio * (1.0 + kImbalanceTieTolerance);
  double best_max = std::numeric_limits<double>::infinity();
  for (double m : minima) {
    if (max_lower_bound / m > ratio_limit) break;
    best_max = std::min(best_max, min_max_stage(m, std::min(ratio_limit * m, best_max)));
  }

  std::vector<int> boundaries = solver.smallest_boundaries(best_max / ratio_limit, best_max);
  assert(!boundaries.empty());  // the partition that gave best_max qualifies
  ImbalanceResult result;
  result.partition.boundaries = std::move(boundaries);
  result.stage_costs = stage_costs(unit_costs, result.partition);
  const auto [lo, hi] = std::minmax_element(result.stage_costs.begin(), result.stage_costs.end());
  result.imbalance_ratio = *hi / *lo;
  return result;
}

}  // namespace powertrain::workload
