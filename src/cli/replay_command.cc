// `powertrain replay` and `powertrain whatif`: replay Kineto traces through the execution graph
// (Lumos), report step time, breakdown, utilization and modelled energy, optionally after what-if
// changes.
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/atomic_output.h"
#include "device/gpu.h"
#include "graph/graph_builder.h"
#include "sim/energy.h"
#include "sim/metrics.h"
#include "sim/replay_trace.h"
#include "sim/simulator.h"
#include "trace/kineto_reader.h"
#include "whatif/whatif.h"

namespace powertrain::cli {
namespace {

struct ReplayFlags {
  std::vector<std::string> traces;
  std::string out = "powertrain-replay";
  std::string gpu = "a100-sxm";
  std::vector<std::string> scales;
  double bus_bandwidth_gb_s = 0.0;
  double collective_latency_s = 0.0;
  bool quiet = false;
};

nlohmann::json breakdown_json(const sim::Breakdown& b) {
  return {{"exposed_compute", b.exposed_compute},
          {"exposed_communication", b.exposed_communication},
          {"overlapped", b.overlapped},
          {"other", b.other}};
}

std::size_t warning_count(const std::vector<trace::TraceWarning>& warnings) {
  std::size_t n = 0;
  for (const auto& w : warnings) n += static_cast<std::size_t>(w.count);
  return n;
}

int run_replay(const ReplayFlags& flags, bool what_if) {
  const char* command = what_if ? "whatif" : "replay";
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  if (flags.traces.empty()) return fail(command, "give one or more trace files or directories");
  if (what_if && flags.scales.empty())
    return fail(command, "give at least one --scale CLASS=FACTOR (e.g. --scale matmul=0.5)");
  std::vector<whatif::DurationScaling> scalings;
  for (const std::string& text : flags.scales) {
    auto scaling = whatif::parse_duration_scaling(text);
    if (!scaling) return fail(command, scaling.error().message);
    scalings.push_back(*scaling);
  }
  if (flags.bus_bandwidth_gb_s < 0.0 || flags.collective_latency_s < 0.0)
    return fail(command, "--bus-bandwidth and --collective-latency must not be negative");
  auto gpu = device::find_gpu(flags.gpu);
  if (!gpu) return fail(command, gpu.error().message);
  auto output = core::AtomicOutputDirectory::create(flags.out);
  if (!output) return fail(command, output.error().message);

  if (!flags.quiet)
    fmt::print(stderr, "{}: reading {} path(s) ...\n", command, flags.traces.size());
  auto traces = trace::read_kineto_traces(flags.traces);
  if (!traces) return fail(command, traces.error().message);
  std::size_t events = 0;
  for (const auto& t : *traces) events += t.events.size();
  const double read_s = std::chrono::duration<double>(Clock::now() - started).count();
  if (!flags.quiet)
    fmt::print(stderr, "{}: {} rank(s), {} events read in {:.2f} s; building the graph ...\n",
               command, traces->size(), events, read_s);
  auto graph = graph::build_execution_graph(*traces);
  if (!graph) return fail(command, graph.error().message);

  sim::ReplayOptions options;
  if (flags.bus_bandwidth_gb_s > 0.0) {
    options.collective_time = sim::ReplayOptions::CollectiveTime::kBandwidthLatency;
    options.bus_bandwidth_gb_s = flags.bus_bandwidth_gb_s;
    options.collective_latency_s = flags.collective_latency_s;
  }
  // The unchanged replay is the reference for both commands (fidelity for replay, baseline for
  // what-if).
  const sim::ReplayResult faithful = sim::replay(*graph, options);
  const sim::StepMetrics input = sim::metrics_of_input(*graph);
  const sim::StepMetrics replayed = sim::metrics_of_replay(*graph, faithful);
  const sim::ReplayAccuracy accuracy = sim::compare_replay(*graph, faithful, input, replayed);

  std::int64_t changed_tasks = 0;
  for (const auto& scaling : scalings) changed_tasks += whatif::scale_durations(*graph, scaling);
  const sim::ReplayResult result = scalings.empty() ? faithful : sim::replay(*graph, options);
  const sim::StepMetrics result_metrics =
      scalings.empty() ? replayed : sim::metrics_of_replay(*graph, result);
  const sim::EnergyReport energy = sim::replay_energy(*graph, result, result_metrics, *gpu);
  const sim::CriticalPath path = sim::critical_path(*graph, result);

  if (auto written =
          sim::write_replay_chrome_trace(output->staging() / "replay_trace.json", *graph, result);
      !written)
    return fail(command, written.error().message);

  nlohmann::json doc;
  doc["units"] = "seconds, joules; fractions in [0, 1]";
  doc["traces"] = flags.traces;
  doc["what_if"] = flags.scales;
  doc["replay_outcome"] = result.outcome == sim::ReplayOutcome::kComplete ? "complete" : "stalled";
  doc["ranks"] = nlohmann::json::array();
  for (std::size_t r = 0; r < graph->ranks.size(); ++r) {
    nlohmann::json rank = {{"rank", graph->ranks[r].rank},
                           {"source", graph->ranks[r].source},
                           {"input_step_s", input.ranks[r].step_time_ns * 1e-9},
                           {"replay_step_s", replayed.ranks[r].step_time_ns * 1e-9},
                           {"replay_step_error_percent", accuracy.rank_step_time_error_pct[r]},
                           {"input_breakdown", breakdown_json(input.ranks[r].breakdown)},
                           {"replay_breakdown", breakdown_json(replayed.ranks[r].breakdown)},
                           {"input_gpu_utilization", input.ranks[r].mean_utilization},
                           {"replay_gpu_utilization", replayed.ranks[r].mean_utilization}};
    if (!scalings.empty()) {
      rank["what_if_step_s"] = result_metrics.ranks[r].step_time_ns * 1e-9;
      rank["what_if_breakdown"] = breakdown_json(result_metrics.ranks[r].breakdown);
      rank["what_if_gpu_utilization"] = result_metrics.ranks[r].mean_utilization;
    }
    doc["ranks"].push_back(rank);
  }
  doc["job"] = {{"input_step_s", input.job_step_time_ns * 1e-9},
                {"replay_step_s", replayed.job_step_time_ns * 1e-9},
                {"replay_step_error_percent", accuracy.job_step_time_error_pct},
                {"max_breakdown_error_pp", accuracy.max_breakdown_error_pp},
                {"max_utilization_error_pp", accuracy.max_utilization_error_pp},
                {"kernel_start_mae_s", accuracy.kernel_start_mae_ns * 1e-9},
                {"kernel_end_mae_s", accuracy.kernel_end_mae_ns * 1e-9},
                {"collective_end_spread_input_s",
                 static_cast<double>(accuracy.max_collective_end_spread_input_ns) * 1e-9},
                {"collective_end_spread_replay_s",
                 static_cast<double>(accuracy.max_collective_end_spread_replay_ns) * 1e-9},
                {"collectives_joined", faithful.collectives_joined},
                {"critical_path_s", static_cast<double>(path.length_ns) * 1e-9}};
  if (!scalings.empty()) {
    doc["job"]["what_if_step_s"] = result_metrics.job_step_time_ns * 1e-9;
    doc["job"]["what_if_tasks_changed"] = changed_tasks;
  }
  doc["energy_modelled"] = {{"gpu", energy.gpu},
                            {"clock_mhz", energy.clock_mhz},
                            {"static_j", energy.static_j},
                            {"dynamic_j", energy.dynamic_j},
                            {"total_j", energy.total_j},
                            {"total_j_per_step", energy.total_j_per_step},
                            {"timeline", scalings.empty() ? "replay" : "what-if replay"}};
  nlohmann::json warnings = nlohmann::json::array();
  auto add = [&](const std::string& where, const std::vector<trace::TraceWarning>& list) {
    for (const auto& w : list)
      warnings.push_back(
          {{"where", where}, {"kind", w.kind}, {"count", w.count}, {"example", w.example}});
  };
  for (const auto& t : *traces) add(t.source, t.warnings);
  add("graph", graph->warnings);
  add("replay", result.warnings);
  doc["warnings"] = warnings;
  if (auto written = output->write_file("summary.json", doc.dump(2) + "\n"); !written)
    return fail(command, written.error().message);
  auto committed = output->commit();
  if (!committed) return fail(command, committed.error().message);
  const double total_s = std::chrono::duration<double>(Clock::now() - started).count();

  fmt::print("powertrain {}: {} rank(s), {} events, {} GPU tasks; read {:.2f} s, total {:.2f} s\n",
             command, graph->ranks.size(), events, graph->stats.gpu_tasks, read_s, total_s);
  fmt::print("  {:>5} {:>13} {:>13} {:>8} {:>25} {:>11}\n", "rank", "input step s", "replay step s",
             "error %", "replay comp/comm/ovl/other", "GPU busy %");
  for (std::size_t r = 0; r < graph->ranks.size(); ++r) {
    const auto& b = replayed.ranks[r].breakdown;
    fmt::print(
        "  {:>5} {:>13.6f} {:>13.6f} {:>+8.3f} {:>6.1f}/{:>4.1f}/{:>4.1f}/{:>5.1f} % {:>11.1f}\n",
        graph->ranks[r].rank, input.ranks[r].step_time_ns * 1e-9,
        replayed.ranks[r].step_time_ns * 1e-9, accuracy.rank_step_time_error_pct[r],
        100 * b.exposed_compute, 100 * b.exposed_communication, 100 * b.overlapped, 100 * b.other,
        100 * replayed.ranks[r].mean_utilization);
  }
  fmt::print(
      "  fidelity      kernel start error {:.2f} us mean (replay vs measured); breakdown "
      "within {:.2f} pp, utilization within {:.2f} pp; collective ends spread {:.1f} us "
      "measured, {:.1f} us replayed\n",
      accuracy.kernel_start_mae_ns * 1e-3, accuracy.max_breakdown_error_pp,
      accuracy.max_utilization_error_pp,
      static_cast<double>(accuracy.max_collective_end_spread_input_ns) * 1e-3,
      static_cast<double>(accuracy.max_collective_end_spread_replay_ns) * 1e-3);
  if (!scalings.empty()) {
    fmt::print(
        "  what-if       {}: {} tasks changed; job step {:.6f} s -> {:.6f} s ({:+.2f} %, "
        "simulated)\n",
        fmt::join(flags.scales, ", "), changed_tasks, replayed.job_step_time_ns * 1e-9,
        result_metrics.job_step_time_ns * 1e-9,
        100.0 * (result_metrics.job_step_time_ns / replayed.job_step_time_ns - 1.0));
  }
  const double per_step = energy.total_j > 0.0 ? energy.total_j_per_step / energy.total_j : 0.0;
  fmt::print(
      "  energy        {:.2f} J per step on {} GPU(s) at {:.0f} MHz ({}: static {:.2f} J, "
      "dynamic {:.2f} J per step; modelled)\n",
      energy.total_j_per_step, energy.gpus.size(), energy.clock_mhz, energy.gpu,
      energy.static_j * per_step, energy.dynamic_j * per_step);
  const std::size_t warned = warning_count(graph->warnings) + warning_count(result.warnings) + [&] {
    std::size_t n = 0;
    for (const auto& t : *traces) n += warning_count(t.warnings);
    return n;
  }();
  if (warned > 0) fmt::print("  warnings      {} (kinds and examples in summary.json)\n", warned);
  fmt::print("  files         {}/: summary.json replay_trace.json (open in ui.perfetto.dev)\n",
             output->target().string());
  return 0;
}

void add_flags(CLI::App& app, ReplayFlags& flags, bool what_if) {
  app.add_option("traces", flags.traces,
                 "Kineto trace files (JSON or gzip), directories of them, or a .tar.gz of ranks")
      ->required();
  app.add_option("--out", flags.out, "Output directory, replaced atomically");
  app.add_option("--gpu", flags.gpu, "GPU type for the modelled energy (default a100-sxm)");
  app.add_option("--scale", flags.scales,
                 what_if ? "CLASS=FACTOR, repeatable: all, gpu, cpu, matmul, memory, collective"
                         : "Optional what-if: CLASS=FACTOR (as in `powertrain whatif`)");
  app.add_option("--bus-bandwidth", flags.bus_bandwidth_gb_s,
                 "Collectives take latency + bytes / this bus bandwidth (GB/s) instead of the "
                 "shortest measured duration");
  app.add_option("--collective-latency", flags.collective_latency_s,
                 "Latency per collective with --bus-bandwidth, s");
  app.add_flag("--quiet", flags.quiet, "No progress output");
}

}  // namespace

Action add_replay_command(CLI::App& app) {
  auto flags = std::make_shared<ReplayFlags>();
  add_flags(app, *flags, false);
  return [flags]() { return run_replay(*flags, false); };
}

Action add_whatif_command(CLI::App& app) {
  auto flags = std::make_shared<ReplayFlags>();
  add_flags(app, *flags, true);
  return [flags]() { return run_replay(*flags, true); };
}

}  // namespace powertrain::cli
