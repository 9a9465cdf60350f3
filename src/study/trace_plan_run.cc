#include "study/trace_plan_run.h"

#include <fmt/core.h>

#include <cmath>
#include <filesystem>

#include "emulate/emulate.h"
#include "graph/graph_builder.h"
#include "replay/replay.h"
#include "sim/metrics.h"

namespace powertrain::study {
namespace {

namespace fs = std::filesystem;

// Replays the Kineto traces, or emulates the kept traces of an emulated run.
core::Status read_timeline(const TracePlanRequest& request, const device::GpuSpec& gpu,
                           TracePlanRun& timeline) {
  if (!request.traces.empty()) {
    auto traces = replay::read_traces(request.traces, true, request.progress);
    if (!traces) return traces.error();
    auto built = graph::build_execution_graph(traces->ranks);
    if (!built) return built.error();
    timeline.graph = std::move(*built);
    timeline.replayed = replay::replay_graph(timeline.graph, gpu).result;
    timeline.measured_step_s = sim::metrics_of_input(timeline.graph).job_step_time_ns * 1e-9;
    timeline.source =
        request.traces.size() == 1
            ? request.traces.front()
            : fmt::format("{} (+{} more)", request.traces.front(), request.traces.size() - 1);
    return core::Ok{};
  }
  const fs::path dir = fs::path(request.emulated) / "traces";
  if (!fs::is_directory(dir))
    return core::Error{
        fmt::format("{}: no traces/ directory (run `powertrain emulate` with "
                    "--keep-traces)",
                    request.emulated)};
  emulate::EmulateOptions options;
  options.gpu = gpu.name;
  options.dedup = false;  // every stage differs; simulate them all
  options.kernel_table = request.kernel_table;
  options.host_costs.max_host_gap_ns =
      static_cast<std::int64_t>(std::llround(request.max_host_gap_us * 1e3));
  if (request.modelled_host_gap_us >= 0.0)
    options.host_costs.modelled_host_gap_ns =
        static_cast<std::int64_t>(std::llround(request.modelled_host_gap_us * 1e3));
  auto emulated = emulate::emulate_trace_paths({dir.string()}, options);
  if (!emulated) return emulated.error();
  timeline.graph = std::move(emulated->graph);
  timeline.replayed = std::move(emulated->replay);
  timeline.source = dir.string();
  timeline.step_basis = "predicted by the emulation";
  return core::Ok{};
}

}  // namespace

core::Result<TracePlanRun> plan_from_traces(const TracePlanRequest& request,
                                            const device::GpuSpec& gpu) {
  TracePlanRun run;
  if (auto read = read_timeline(request, gpu, run); !read) return read.error();
  if (run.replayed.outcome != sim::ReplayOutcome::kComplete)
    return core::Error{"the replay of the trace did not complete; cannot plan from it"};
  run.step_s = sim::metrics_of_replay(run.graph, run.replayed).job_step_time_ns * 1e-9;
  auto plan = plan_from_timeline(run.graph, run.replayed.start_ns, run.replayed.end_ns, run.step_s,
                                 gpu, run.source, request.options);
  if (!plan) return core::Error{fmt::format("{}: {}", run.source, plan.error().message)};
  run.plan = std::move(*plan);
  return run;
}

}  // namespace powertrain::study
