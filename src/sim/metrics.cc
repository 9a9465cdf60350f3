// Metrics shared by the input and the replay, so that their difference measures the replay and
// not two definitions.
#include "sim/metrics.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace powertrain::sim {
namespace {

constexpr std::int64_t kUnset = std::numeric_limits<std::int64_t>::min();

struct Edge {
  std::int64_t time_ns;
  int delta;
  bool communication;
  bool operator<(const Edge& other) const { return time_ns < other.time_ns; }
};

// Merged union of the intervals clipped to the window, sorted.
std::vector<std::pair<std::int64_t, std::int64_t>> busy_union(std::span<const Interval> intervals,
                                                              const TimeWindow& window) {
  std::vector<std::pair<std::int64_t, std::int64_t>> spans;
  spans.reserve(intervals.size());
  for (const Interval& i : intervals) {
    const std::int64_t s = std::max(i.start_ns, window.start_ns);
    const std::int64_t e = std::min(i.end_ns, window.end_ns);
    if (e > s) spans.emplace_back(s, e);
  }
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<std::int64_t, std::int64_t>> merged;
  for (const auto& span : spans) {
    if (!merged.empty() && span.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, span.second);
    } else {
      merged.push_back(span);
    }
  }
  return merged;
}

}  // namespace

Breakdown breakdown_of(std::span<const Interval> intervals, const TimeWindow& window) {
  Breakdown result;
  const std::int64_t length = window.length_ns();
  if (length <= 0) return result;
  std::vector<Edge> edges;
  edges.reserve(2 * intervals.size());
  for (const Interval& i : intervals) {
    const std::int64_t s = std::max(i.start_ns, window.start_ns);
    const std::int64_t e = std::min(i.end_ns, window.end_ns);
    if (e <= s) continue;
    edges.push_back({s, +1, i.communication});
    edges.push_back({e, -1, i.communication});
  }
  std::sort(edges.begin(), edges.end());
  std::int64_t compute_only = 0, comm_only = 0, both = 0;
  int compute = 0, comm = 0;
  std::int64_t previous = window.start_ns;
  for (const Edge& edge : edges) {
    const std::int64_t span = edge.time_ns - previous;
    if (compute > 0 && comm > 0) {
      both += span;
    } else if (compute > 0) {
      compute_only += span;
    } else if (comm > 0) {
      comm_only += span;
    }
    previous = edge.time_ns;
    (edge.communication ? comm : compute) += edge.delta;
  }
  const double total = static_cast<double>(length);
  result.exposed_compute = static_cast<double>(compute_only) / total;
  result.exposed_communication = static_cast<double>(comm_only) / total;
  result.overlapped = static_cast<double>(both) / total;
  result.other = 1.0 - result.exposed_compute - result.exposed_communication - result.overlapped;
  return result;
}

std::vector<double> utilization_of(std::span<const Interval> intervals, const TimeWindow& window,
                                   std::int64_t bin_ns) {
  const std::int64_t length = window.length_ns();
  if (length <= 0 || bin_ns <= 0) return {};
  // A window of absurd length (a trace with a bogus time far away) would need billions of bins:
  // coarsen them so that there are at most kMaxBins.
  constexpr std::int64_t kMaxBins = 10'000'000;
  if (length / bin_ns >= kMaxBins) bin_ns = length / kMaxBins + 1;
  const std::int64_t bins = (length + bin_ns - 1) / bin_ns;
  std::vector<double> busy(static_cast<std::size_t>(bins), 0.0);
  for (const auto& [s, e] : busy_union(intervals, window)) {
    for (std::int64_t b = (s - window.start_ns) / bin_ns; b < bins; ++b) {
      const std::int64_t bin_start = window.start_ns + b * bin_ns;
      const std::int64_t bin_end = std::min(bin_start + bin_ns, window.end_ns);
      if (bin_start >= e) break;
      busy[b] += static_cast<double>(std::min(e, bin_end) - std::max(s, bin_start));
    }
  }
  for (std::int64_t b = 0; b < bins; ++b) {
    const std::int64_t bin_start = window.start_ns + b * bin_ns;
    const std::int64_t bin_end = std::min(bin_start + bin_ns, window.end_ns);
    busy[b] /= static_cast<double>(bin_end - bin_start);
  }
  return busy;
}

std::vector<TimeWindow> step_windows(const graph::ExecutionGraph& graph,
                                     std::span<const std::int64_t> start_ns,
                                     std::span<const std::int64_t> end_ns) {
  std::vector<TimeWindow> windows;
  for (const graph::RankInfo& rank : graph.ranks) {
    TimeWindow window;
    window.start_ns = std::numeric_limits<std::int64_t>::max();
    window.end_ns = std::numeric_limits<std::int64_t>::min();
    int steps = 0;
    for (std::int32_t index : rank.profiler_steps) {
      const graph::ParentSpan& span = graph.parents[index];
      if (start_ns[span.first_leaf] == kUnset || end_ns[span.last_leaf] == kUnset) continue;
      window.start_ns = std::min(window.start_ns, start_ns[span.first_leaf] - span.lead_ns);
      window.end_ns = std::max(window.end_ns, end_ns[span.last_leaf] + span.trail_ns);
      ++steps;
    }
    if (steps > 0) {
      // The spans' own count unless they stand for another (all of them ran: a whole replay).
      window.steps = rank.step_count > 0 && steps == static_cast<int>(rank.profiler_steps.size())
                         ? rank.step_count
                         : steps;
      window.profiler_steps = true;
    } else {
      for (std::int32_t v = rank.first_task; v < rank.end_task; ++v) {
        if (start_ns[v] == kUnset) continue;
        window.start_ns = std::min(window.start_ns, start_ns[v]);
        window.end_ns = std::max(window.end_ns, end_ns[v]);
      }
      window.steps = 1;
    }
    if (window.end_ns < window.start_ns) window.start_ns = window.end_ns = 0;  // no tasks
    windows.push_back(window);
  }
  return windows;
}

StepMetrics metrics_of_timeline(const graph::ExecutionGraph& graph,
                                std::span<const std::int64_t> start_ns,
                                std::span<const std::int64_t> end_ns) {
  StepMetrics metrics;
  const std::vector<TimeWindow> windows = step_windows(graph, start_ns, end_ns);
  std::vector<Interval> intervals;
  for (std::size_t r = 0; r < graph.ranks.size(); ++r) {
    const graph::RankInfo& rank = graph.ranks[r];
    intervals.clear();
    for (std::int32_t v = rank.first_task; v < rank.end_task; ++v) {
      if (!graph::is_gpu(graph.kind[v]) || start_ns[v] == kUnset) continue;
      intervals.push_back({start_ns[v], end_ns[v], graph.nccl[v] != 0});
    }
    RankMetrics m;
    m.rank = rank.rank;
    m.window = windows[r];
    m.step_time_ns = m.window.step_time_ns();
    m.breakdown = breakdown_of(intervals, m.window);
    m.utilization = utilization_of(intervals, m.window);
    std::int64_t busy = 0;
    for (const auto& [s, e] : busy_union(intervals, m.window)) busy += e - s;
    m.mean_utilization = m.window.length_ns() > 0
                             ? static_cast<double>(busy) / static_cast<double>(m.window.length_ns())
                             : 0.0;
    metrics.job_step_time_ns = std::max(metrics.job_step_time_ns, m.step_time_ns);
    metrics.job_breakdown += m.breakdown;
    metrics.job_mean_utilization += m.mean_utilization;
    metrics.ranks.push_back(std::move(m));
  }
  const double n = static_cast<double>(std::max<std::size_t>(graph.ranks.size(), 1));
  metrics.job_breakdown /= n;
  metrics.job_mean_utilization /= n;
  return metrics;
}

StepMetrics metrics_of_input(const graph::ExecutionGraph& graph) {
  std::vector<std::int64_t> end(graph.input_start_ns.size());
  for (std::size_t v = 0; v < end.size(); ++v) {
    end[v] = graph.input_start_ns[v] + graph.input_duration_ns[v];
  }
  return metrics_of_timeline(graph, graph.input_start_ns, end);
}

StepMetrics metrics_of_replay(const graph::ExecutionGraph& graph, const ReplayResult& replay) {
  return metrics_of_timeline(graph, replay.start_ns, replay.end_ns);
}

ReplayAccuracy compare_replay(const graph::ExecutionGraph& graph, const ReplayResult& replay,
                              const StepMetrics& input, const StepMetrics& replayed) {
  ReplayAccuracy accuracy;
  const auto pct = [](double measured, double replay_value) {
    return measured > 0.0 ? (replay_value - measured) / measured * 100.0 : 0.0;
  };
  double bin_error = 0.0;
  std::int64_t bins = 0;
  for (std::size_t r = 0; r < input.ranks.size() && r < replayed.ranks.size(); ++r) {
    const RankMetrics& a = input.ranks[r];
    const RankMetrics& b = replayed.ranks[r];
    accuracy.rank_step_time_error_pct.push_back(pct(a.step_time_ns, b.step_time_ns));
    for (double d :
         {a.breakdown.exposed_compute - b.breakdown.exposed_compute,
          a.breakdown.exposed_communication - b.breakdown.exposed_communication,
          a.breakdown.overlapped - b.breakdown.overlapped, a.breakdown.other - b.breakdown.other}) {
      accuracy.max_breakdown_error_pp =
          std::max(accuracy.max_breakdown_error_pp, std::abs(d) * 100);
    }
    accuracy.max_utilization_error_pp = std::max(
        accuracy.max_utilization_error_pp, std::abs(a.mean_utilization - b.mean_utilization) * 100);
    const std::size_t n = std::min(a.utilization.size(), b.utilization.size());
    for (std::size_t i = 0; i < n; ++i) {
      bin_error += std::abs(a.utilization[i] - b.utilization[i]);
    }
    bins += static_cast<std::int64_t>(n);
  }
  accuracy.job_step_time_error_pct = pct(input.job_step_time_ns, replayed.job_step_time_ns);
  accuracy.utilization_bin_mae_pp = bins > 0 ? bin_error / static_cast<double>(bins) * 100 : 0.0;

  double start_error = 0.0, end_error = 0.0;
  std::int64_t gpu_tasks = 0;
  for (std::int32_t v = 0; v < graph.task_count(); ++v) {
    if (!graph::is_gpu(graph.kind[v]) || replay.start_ns[v] == kUnset) continue;
    start_error += std::abs(static_cast<double>(replay.start_ns[v] - graph.input_start_ns[v]));
    end_error += std::abs(static_cast<double>(replay.end_ns[v] - graph.input_end_ns(v)));
    ++gpu_tasks;
  }
  if (gpu_tasks > 0) {
    accuracy.kernel_start_mae_ns = start_error / static_cast<double>(gpu_tasks);
    accuracy.kernel_end_mae_ns = end_error / static_cast<double>(gpu_tasks);
  }
  for (const graph::CollectiveGroup& group : graph.collectives) {
    if (!group.joined) continue;
    std::int64_t in_lo = std::numeric_limits<std::int64_t>::max(), in_hi = kUnset;
    std::int64_t re_lo = std::numeric_limits<std::int64_t>::max(), re_hi = kUnset;
    for (std::int32_t i = 0; i < group.member_count; ++i) {
      const std::int32_t m = graph.collective_members[group.first_member + i];
      in_lo = std::min(in_lo, graph.input_end_ns(m));
      in_hi = std::max(in_hi, graph.input_end_ns(m));
      if (replay.end_ns[m] == kUnset) continue;
      re_lo = std::min(re_lo, replay.end_ns[m]);
      re_hi = std::max(re_hi, replay.end_ns[m]);
    }
    accuracy.max_collective_end_spread_input_ns =
        std::max(accuracy.max_collective_end_spread_input_ns, in_hi - in_lo);
    if (re_hi >= re_lo) {
      accuracy.max_collective_end_spread_replay_ns =
          std::max(accuracy.max_collective_end_spread_replay_ns, re_hi - re_lo);
    }
  }
  return accuracy;
}

Verdict judge_replay(const graph::ExecutionGraph& graph, const ReplayResult& replay,
                     const StepMetrics& input, const StepMetrics& replayed,
                     const ReplayAccuracy& accuracy, const VerdictOptions& options) {
  Verdict verdict;
  const auto add = [&](std::string text, double explained_s) {
    verdict.faithful = false;
    verdict.reasons.push_back({std::move(text), explained_s});
  };
  int steps = 1;
  for (const RankMetrics& r : input.ranks) steps = std::max(steps, r.window.steps);
  if (replay.stalled_tasks > 0) {
    double lost_ns = 0.0;
    for (std::int32_t v = 0; v < graph.task_count(); ++v) {
      if (v < static_cast<std::int32_t>(replay.end_ns.size()) &&
          replay.end_ns[v] == std::numeric_limits<std::int64_t>::min()) {
        lost_ns += static_cast<double>(graph.input_duration_ns[v]);
      }
    }
    add(fmt::format("{} tasks never ran", replay.stalled_tasks), lost_ns * 1e-9 / steps);
  }
  for (std::size_t r = 0; r < input.ranks.size() && r < replayed.ranks.size(); ++r) {
    const double error =
        r < accuracy.rank_step_time_error_pct.size() ? accuracy.rank_step_time_error_pct[r] : 0.0;
    const double in_s = input.ranks[r].step_time_ns * 1e-9;
    const double out_s = replayed.ranks[r].step_time_ns * 1e-9;
    if (std::abs(error) > options.max_step_error_pct) {
      add(fmt::format("rank {}: step time {:+.2f} % (measured {:.6f} s, replayed {:.6f} s)",
                      graph.ranks[r].rank, error, in_s, out_s),
          std::abs(out_s - in_s));
    }
    const Breakdown& a = input.ranks[r].breakdown;
    const Breakdown& b = replayed.ranks[r].breakdown;
    const std::pair<const char*, double> shares[] = {
        {"exposed compute", b.exposed_compute - a.exposed_compute},
        {"exposed communication", b.exposed_communication - a.exposed_communication},
        {"overlapped", b.overlapped - a.overlapped},
        {"other", b.other - a.other}};
    const auto* worst = std::max_element(
        std::begin(shares), std::end(shares),
        [](const auto& x, const auto& y) { return std::abs(x.second) < std::abs(y.second); });
    if (100.0 * std::abs(worst->second) > options.max_breakdown_error_pp) {
      add(fmt::format("rank {}: breakdown share '{}' {:+.2f} pp", graph.ranks[r].rank, worst->first,
                      100.0 * worst->second),
          std::abs(worst->second) * in_s);
    }
  }
  if (replay.released_total() > 0 && replay.released_shift_ns > options.max_release_shift_ns) {
    std::string kinds;
    for (int k = 0; k < kReleasedKinds; ++k) {
      if (replay.released[k] == 0) continue;
      kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", replay.released[k],
                           to_string(static_cast<ReleasedKind>(k)));
    }
    add(fmt::format("{} dependencies released to break deadlocks ({}); the released tasks end "
                    "{:.1f} us from their measured ends in total",
                    replay.released_total(), kinds, replay.released_shift_ns * 1e-3),
        static_cast<double>(replay.released_shift_ns) * 1e-9 / steps);
  }
  std::stable_sort(
      verdict.reasons.begin(), verdict.reasons.end(),
      [](const VerdictReason& x, const VerdictReason& y) { return x.explained_s > y.explained_s; });
  return verdict;
}

}  // namespace powertrain::sim
