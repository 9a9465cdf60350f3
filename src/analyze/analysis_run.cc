#include "analyze/analysis_run.h"

#include <fmt/core.h>

#include <utility>

#include "analyze/memcpy_bytes.h"
#include "graph/graph_builder.h"

namespace powertrain::analyze {
namespace {

// The critical path needs the execution graph and the replay.
void add_critical_paths(const std::vector<trace::RankTrace>& traces, const device::GpuSpec& gpu,
                        AnalysisRun& run) {
  auto built = graph::build_execution_graph(traces);
  if (!built) {
    run.unavailable = built.error().message;
    return;
  }
  run.graph = std::move(*built);
  const replay::Replayed replayed = replay::replay_graph(*run.graph, gpu);
  const sim::EnergyReport& energy = replayed.energy;
  // Ranks without ProfilerSteps split their path inside the analysis window.
  std::vector<std::pair<std::int64_t, std::int64_t>> windows;
  for (const graph::RankInfo& info : run.graph->ranks) {
    std::pair<std::int64_t, std::int64_t> w{0, 0};
    for (const auto& r : run.ranks)
      if (r.rank == info.rank) w = {r.window.start_ns, r.window.end_ns};
    windows.push_back(w);
  }
  run.paths = critical_paths(*run.graph, replayed.result, energy, windows);
  // The path is only as good as the replay: judge it as `powertrain replay` does.
  const sim::StepMetrics input = sim::metrics_of_input(*run.graph);
  const sim::ReplayAccuracy accuracy =
      sim::compare_replay(*run.graph, replayed.result, input, replayed.metrics);
  run.verdict = sim::judge_replay(*run.graph, replayed.result, input, replayed.metrics, accuracy);
  run.gpu = energy.gpu;
  run.clock_mhz = energy.clock_mhz;
}

}  // namespace

PathContext AnalysisRun::context() const {
  PathContext context;
  if (graph && unavailable.empty()) {
    context.graph = &*graph;
    context.paths = &paths;
    context.gpu = gpu;
    context.clock_mhz = clock_mhz;
  }
  context.unavailable = unavailable;
  return context;
}

core::Result<AnalysisRun> analyze_traces(const AnalysisRequest& request,
                                         const replay::Progress& progress) {
  auto loaded = replay::read_traces(request.traces, false, progress);
  if (!loaded) return loaded.error();
  const std::vector<trace::RankTrace>& traces = loaded->ranks;
  AnalysisRun run;
  const WindowKind window = request.options.window;
  for (const trace::RankTrace& t : traces) {
    auto bytes = read_memcpy_bytes(t.source);
    if (!bytes) run.notes.push_back("memcpy bytes not read: " + bytes.error().message);
    run.ranks.push_back(analyze_rank(t, request.options, bytes ? &*bytes : nullptr));
    if (window == WindowKind::kSteps && run.ranks.back().window.used != window)
      run.notes.push_back(
          fmt::format("rank {}: no ProfilerStep spans; window gpu-span used instead", t.rank));
  }
  if (!request.critical_path) {
    run.unavailable = "--no-critical-path";
  } else {
    if (progress) progress("replaying for the critical path ...");
    add_critical_paths(traces, request.gpu, run);
  }
  return run;
}

}  // namespace powertrain::analyze
