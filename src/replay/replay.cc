// The replay / what-if flow: read, build, replay unchanged, change, replay again.
#include "replay/replay.h"

#include <fmt/core.h>

#include <chrono>
#include <utility>

#include "graph/graph_builder.h"
#include "trace/kineto_reader.h"

namespace powertrain::replay {

core::Result<LoadedTraces> read_traces(const std::vector<std::string>& paths, bool require_events,
                                       const Progress& progress) {
  const auto started = std::chrono::steady_clock::now();
  if (progress) progress(fmt::format("reading {} path(s) ...", paths.size()));
  auto ranks = trace::read_kineto_traces(paths);
  if (!ranks) return ranks.error();
  LoadedTraces loaded;
  for (const auto& t : *ranks) {
    if (require_events && t.events.empty()) {
      return core::Error{fmt::format(
          "{}: no duration events to replay (traceEvents is empty or holds only metadata)",
          t.source)};
    }
    loaded.events += t.events.size();
  }
  loaded.ranks = std::move(*ranks);
  loaded.read_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return loaded;
}

Replayed replay_graph(const graph::ExecutionGraph& graph, const device::GpuSpec& gpu,
                      const sim::ReplayOptions& options) {
  Replayed out;
  out.result = sim::replay(graph, options);
  out.metrics = sim::metrics_of_replay(graph, out.result);
  out.energy = sim::replay_energy(graph, out.result, out.metrics, gpu);
  return out;
}

core::Result<ReplayRun> replay(const std::vector<std::string>& paths, const Options& options,
                               const Progress& progress) {
  // The energy model reads the GPU's clock table; a default-constructed GpuSpec has none.
  if (options.gpu.clocks_mhz.empty())
    return core::Error{
        "replay: options.gpu has no clock table (look one up with device::find_gpu)"};
  ReplayRun run;
  auto traces = read_traces(paths, true, progress);
  if (!traces) return traces.error();
  run.traces = std::move(*traces);
  if (progress)
    progress(fmt::format("{} rank(s), {} events read in {:.2f} s; building the graph ...",
                         run.traces.ranks.size(), run.traces.events, run.traces.read_s));
  auto graph = graph::build_execution_graph(run.traces.ranks);
  if (!graph) return graph.error();
  run.graph = std::move(*graph);

  run.faithful = sim::replay(run.graph, options.replay);
  run.input = sim::metrics_of_input(run.graph);
  run.replayed = sim::metrics_of_replay(run.graph, run.faithful);
  run.accuracy = sim::compare_replay(run.graph, run.faithful, run.input, run.replayed);
  run.verdict = sim::judge_replay(run.graph, run.faithful, run.input, run.replayed, run.accuracy);

  // Structural changes rebuild the job from its layers; the other changes then apply to it.
  if (options.restages()) {
    if (progress) progress("finding layers and re-staging ...");
    auto job = whatif::restage(run.graph, options.restage, options.input_microbatches);
    if (!job) return job.error();
    run.restaged = std::move(*job);
    auto identity = whatif::build_pipeline_job(run.restaged->profile, {});
    if (identity) {
      run.rebuilt_at_input_shape_step_s =
          sim::metrics_of_replay(identity->graph, sim::replay(identity->graph, options.replay))
              .job_step_time_ns *
          1e-9;
    }
  }
  graph::ExecutionGraph& what_if_graph = run.restaged ? run.restaged->graph : run.graph;
  run.changed = options.changes_anything();
  if (options.data_parallel > 0) {
    auto n = whatif::change_data_parallel_degree(what_if_graph, options.data_parallel);
    if (!n) return n.error();
    run.changed_tasks += *n;
  }
  if (options.hidden_ratio > 0.0) {
    auto n = whatif::change_hidden_size(what_if_graph, options.hidden_ratio);
    if (!n) return n.error();
    run.changed_tasks += *n;
  }
  for (const auto& scaling : options.scalings)
    run.changed_tasks += whatif::scale_durations(what_if_graph, scaling);
  run.result = run.changed ? sim::replay(what_if_graph, options.replay) : run.faithful;
  run.result_metrics =
      run.changed ? sim::metrics_of_replay(what_if_graph, run.result) : run.replayed;
  run.energy = sim::replay_energy(what_if_graph, run.result, run.result_metrics, options.gpu);
  run.path = sim::critical_path(what_if_graph, run.result);
  return run;
}

}  // namespace powertrain::replay
