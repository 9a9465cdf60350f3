#include "analyze/critical.h"

#include <algorithm>

#include "analyze/analyze.h"

namespace powertrain::analyze {
namespace {

enum class PieceClass { kCompute, kCommunication, kHost, kIdle };

void add(BoundBy& b, PieceClass c, std::int64_t ns) {
  switch (c) {
    case PieceClass::kCompute:
      b.compute_ns += ns;
      break;
    case PieceClass::kCommunication:
      b.communication_ns += ns;
      break;
    case PieceClass::kHost:
      b.host_ns += ns;
      break;
    case PieceClass::kIdle:
      b.idle_gap_ns += ns;
      break;
  }
}

}  // namespace

std::vector<RankPath> critical_paths(
    const graph::ExecutionGraph& graph, const sim::ReplayResult& replay,
    const sim::EnergyReport& energy,
    const std::vector<std::pair<std::int64_t, std::int64_t>>& fallback_windows) {
  std::vector<RankPath> paths;
  for (std::size_t r = 0; r < graph.ranks.size(); ++r) {
    const graph::RankInfo& info = graph.ranks[r];
    RankPath out;
    out.rank = info.rank;
    // The model's powers for this rank's GPU (the first GPU entry of the rank).
    double static_w = 0.0, dynamic_w[3] = {0.0, 0.0, 0.0};
    for (const sim::GpuEnergy& g : energy.gpus) {
      if (g.rank != info.rank) continue;
      if (g.window_s > 0.0) static_w = g.static_j / g.window_s;
      for (int c = 0; c < 3; ++c)
        if (g.busy_s[c] > 0.0) dynamic_w[c] = g.dynamic_j_by_class[c] / g.busy_s[c];
      break;
    }
    out.static_power_w = static_w;
    const sim::CriticalPath path = sim::critical_path(graph, replay, static_cast<int>(r));
    // Steps: replayed ProfilerStep spans, else one span for the whole path.
    for (std::size_t s = 0; s < info.profiler_steps.size(); ++s) {
      const graph::ParentSpan& span = graph.parents[info.profiler_steps[s]];
      if (span.first_leaf == graph::kNone || span.last_leaf == graph::kNone) continue;
      StepPath step;
      step.step = static_cast<int>(s);
      step.start_ns = replay.start_ns[span.first_leaf] - span.lead_ns;
      step.end_ns = replay.end_ns[span.last_leaf] + span.trail_ns;
      out.steps.push_back(step);
    }
    if (out.steps.empty() && r < fallback_windows.size() &&
        fallback_windows[r].second > fallback_windows[r].first)
      out.steps.push_back({-1, fallback_windows[r].first, fallback_windows[r].second, {}, 0, 0.0});
    if (path.tasks.empty()) {
      paths.push_back(std::move(out));
      continue;
    }
    out.start_ns = replay.start_ns[path.tasks.front()];
    out.end_ns = replay.end_ns[path.tasks.back()];
    out.tasks = static_cast<std::int64_t>(path.tasks.size());
    if (out.steps.empty()) out.steps.push_back({0, out.start_ns, out.end_ns, {}, 0, 0.0});

    auto record = [&](PieceClass c, std::int64_t a, std::int64_t b, double power_w) {
      if (b <= a) return;
      add(out.bound, c, b - a);
      out.energy_j += power_w * static_cast<double>(b - a) * 1e-9;
      for (StepPath& step : out.steps) {
        const std::int64_t lo = std::max(a, step.start_ns);
        const std::int64_t hi = std::min(b, step.end_ns);
        if (hi <= lo) continue;
        add(step.bound, c, hi - lo);
        step.energy_j += power_w * static_cast<double>(hi - lo) * 1e-9;
      }
    };
    std::int64_t cursor = out.start_ns;
    for (std::int32_t v : path.tasks) {
      const std::int64_t start = replay.start_ns[v];
      const std::int64_t end = replay.end_ns[v];
      if (graph.rank_index_of(v) != static_cast<std::int32_t>(r)) ++out.other_rank_tasks;
      record(PieceClass::kIdle, cursor, start, static_w);
      PieceClass c = PieceClass::kHost;
      double power = static_w;
      if (graph::is_gpu(graph.kind[v])) {
        const sim::KernelClass k =
            sim::classify_kernel(graph.task_name(v), graph.kind[v], graph.nccl[v] != 0);
        const bool comm =
            graph.nccl[v] != 0 || comm_library(graph.task_name(v)) != CommLibrary::kNone;
        c = comm ? PieceClass::kCommunication : PieceClass::kCompute;
        power += dynamic_w[static_cast<int>(k)];
      }
      const std::int64_t from = std::max(cursor, start);
      record(c, from, end, power);
      if (end > from) out.longest.push_back({v, end - from});
      for (StepPath& step : out.steps)
        if (end > step.start_ns && end <= step.end_ns) ++step.tasks;
      cursor = std::max(cursor, end);
    }
    std::sort(out.longest.begin(), out.longest.end(),
              [](const RankPath::Top& a, const RankPath::Top& b) {
                return a.on_path_ns != b.on_path_ns ? a.on_path_ns > b.on_path_ns : a.task < b.task;
              });
    if (out.longest.size() > 10) out.longest.resize(10);
    paths.push_back(std::move(out));
  }
  return paths;
}

}  // namespace powertrain::analyze
