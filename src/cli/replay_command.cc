// `powertrain replay` and `powertrain whatif`: replay Kineto traces through the execution graph
// (Lumos), report step time, breakdown, utilization and modelled energy, optionally after what-if
// changes.
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/atomic_output.h"
#include "device/gpu.h"
#include "graph/graph_builder.h"
#include "sim/energy.h"
#include "sim/metrics.h"
#include "sim/replay_trace.h"
#include "sim/simulator.h"
#include "trace/kineto_reader.h"
#include "whatif/restage.h"
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
  bool force = false;
  bool strict = false;  // exit non-zero when the replay does not reproduce the trace
  // Structural what-ifs (0 = unchanged).
  int pipeline_stages = 0;
  int microbatches = 0;
  int layers = 0;
  int input_microbatches = 0;
  double p2p_s = -1.0;
  int data_parallel = 0;
  double hidden_ratio = 0.0;
  bool restages() const { return pipeline_stages > 0 || microbatches > 0 || layers > 0; }
  bool changes_anything() const {
    return !scales.empty() || restages() || data_parallel > 0 || hidden_ratio > 0.0;
  }
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
  if (flags.traces.empty())
    return usage_error(command, "give one or more trace files or directories");
  if (what_if && !flags.changes_anything())
    return usage_error(command,
                "give at least one change: --scale CLASS=FACTOR, --pp, --microbatches, --layers, "
                "--dp or --hidden-ratio");
  if (flags.data_parallel > 0 && flags.restages())
    return usage_error(command,
                "--dp applies to the measured graph; a pipeline rebuilt with --pp/--microbatches/"
                "--layers has only send/recv, no data-parallel collectives to re-estimate");
  if ((flags.data_parallel > 0 || flags.hidden_ratio > 0.0) && flags.bus_bandwidth_gb_s > 0.0)
    return usage_error(command,
                "--dp and --hidden-ratio change measured collective times; --bus-bandwidth "
                "replaces them with a model (use one or the other)");
  if (flags.p2p_s >= 0.0 && !(flags.p2p_s <= 1e3))
    return usage_error(command, "--p2p-s must be in [0, 1000] seconds");
  if (flags.pipeline_stages < 0 || flags.microbatches < 0 || flags.layers < 0 ||
      flags.input_microbatches < 0 || flags.data_parallel < 0 || flags.hidden_ratio < 0.0)
    return usage_error(command,
                "--pp, --microbatches, --layers, --input-microbatches, --dp and "
                "--hidden-ratio must be positive");
  std::vector<whatif::DurationScaling> scalings;
  for (const std::string& text : flags.scales) {
    auto scaling = whatif::parse_duration_scaling(text);
    if (!scaling) return usage_error(command, scaling.error().message);
    scalings.push_back(*scaling);
  }
  if (flags.bus_bandwidth_gb_s < 0.0 || flags.collective_latency_s < 0.0)
    return usage_error(command,
                       "--bus-bandwidth-gb-s and --collective-latency-s must not be negative");
  auto gpu = device::find_gpu(flags.gpu);
  if (!gpu) return fail(command, gpu.error().message);
  auto output = core::AtomicOutputDirectory::create(flags.out, output_policy(flags.force));
  if (!output) return fail(command, output.error().message);

  if (!flags.quiet)
    fmt::print(stderr, "{}: reading {} path(s) ...\n", command, flags.traces.size());
  auto traces = trace::read_kineto_traces(flags.traces);
  if (!traces) return fail(command, traces.error().message);
  std::size_t events = 0;
  for (const auto& t : *traces) {
    if (t.events.empty()) {
      return fail(command, fmt::format("{}: no duration events to replay (traceEvents is empty or "
                                       "holds only metadata)",
                                       t.source));
    }
    events += t.events.size();
  }
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
  const sim::Verdict verdict = sim::judge_replay(*graph, faithful, input, replayed, accuracy);

  // Structural changes rebuild the job from its layers; the other changes then apply to it.
  std::optional<whatif::RestagedJob> restaged;
  std::optional<whatif::RestagedJob> restaged_identity;
  if (flags.restages()) {
    if (!flags.quiet) fmt::print(stderr, "{}: finding layers and re-staging ...\n", command);
    auto job = whatif::restage(*graph,
                               {.stages = flags.pipeline_stages,
                                .microbatches = flags.microbatches,
                                .layers = flags.layers,
                                .p2p_s = flags.p2p_s},
                               flags.input_microbatches);
    if (!job) return fail(command, job.error().message);
    restaged = std::move(*job);
    // The same rebuild at the input's own shape says how much the rebuild itself loses.
    auto identity = whatif::build_pipeline_job(restaged->profile, {});
    if (identity) restaged_identity = std::move(*identity);
  }
  graph::ExecutionGraph& what_if_graph = restaged ? restaged->graph : *graph;
  const bool changed = flags.changes_anything();
  std::int64_t changed_tasks = 0;
  if (flags.data_parallel > 0) {
    auto n = whatif::change_data_parallel_degree(what_if_graph, flags.data_parallel);
    if (!n) return fail(command, n.error().message);
    changed_tasks += *n;
  }
  if (flags.hidden_ratio > 0.0) {
    auto n = whatif::change_hidden_size(what_if_graph, flags.hidden_ratio);
    if (!n) return fail(command, n.error().message);
    changed_tasks += *n;
  }
  for (const auto& scaling : scalings)
    changed_tasks += whatif::scale_durations(what_if_graph, scaling);
  const sim::ReplayResult result = changed ? sim::replay(what_if_graph, options) : faithful;
  const sim::StepMetrics result_metrics =
      changed ? sim::metrics_of_replay(what_if_graph, result) : replayed;
  const sim::EnergyReport energy = sim::replay_energy(what_if_graph, result, result_metrics, *gpu);
  const sim::CriticalPath path = sim::critical_path(what_if_graph, result);

  if (auto written = sim::write_replay_chrome_trace(output->staging() / "replay_trace.json",
                                                    what_if_graph, result);
      !written)
    return fail(command, written.error().message);

  nlohmann::json doc;
  doc["units"] = "seconds, joules; fractions in [0, 1]";
  doc["traces"] = flags.traces;
  doc["what_if"] = flags.scales;
  if (flags.data_parallel > 0) doc["what_if_data_parallel"] = flags.data_parallel;
  if (flags.hidden_ratio > 0.0) doc["what_if_hidden_ratio"] = flags.hidden_ratio;
  doc["replay_outcome"] = result.outcome == sim::ReplayOutcome::kComplete ? "complete" : "stalled";
  doc["faithful"] = verdict.faithful;
  doc["reasons"] = nlohmann::json::array();
  for (const auto& reason : verdict.reasons)
    doc["reasons"].push_back(
        {{"reason", reason.text}, {"explained_s_per_step", reason.explained_s}});
  doc["dependencies_released"] = nlohmann::json::object();
  for (int k = 0; k < sim::kReleasedKinds; ++k)
    doc["dependencies_released"][std::string(sim::to_string(static_cast<sim::ReleasedKind>(k)))] =
        faithful.released[k];
  doc["tasks_lost"] = faithful.stalled_tasks;
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
    if (changed && !restaged) {
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
  if (changed) {
    doc["job"]["what_if_step_s"] = result_metrics.job_step_time_ns * 1e-9;
    doc["job"]["what_if_tasks_changed"] = changed_tasks;
  }
  if (restaged) {
    const whatif::LayerProfile& p = restaged->profile;
    nlohmann::json stages = nlohmann::json::array();
    for (std::size_t r = 0; r < what_if_graph.ranks.size(); ++r)
      stages.push_back({{"stage", r},
                        {"layers", restaged->layers_per_stage[r]},
                        {"what_if_step_s", result_metrics.ranks[r].step_time_ns * 1e-9},
                        {"what_if_breakdown", breakdown_json(result_metrics.ranks[r].breakdown)},
                        {"what_if_gpu_utilization", result_metrics.ranks[r].mean_utilization}});
    doc["restage"] = {
        {"layer_detection", p.method},
        {"input", {{"stages", p.stages}, {"microbatches", p.microbatches}, {"layers", p.layers}}},
        {"what_if",
         {{"stages", restaged->stages},
          {"microbatches", restaged->microbatches},
          {"layers", restaged->layers},
          {"schedule", "1f1b"}}},
        {"measured_forward_layer_s", p.forward_layer_ns() * 1e-9},
        {"measured_backward_layer_s", p.backward_layer_ns() * 1e-9},
        {"measured_first_stage_extra_s", p.first_stage_extra_ns * 1e-9},
        {"measured_last_stage_extra_s", p.last_stage_extra_ns * 1e-9},
        {"p2p_s", restaged->p2p_ns * 1e-9},
        {"dropped_non_layer_s", p.dropped_ns * 1e-9},
        {"stages", stages}};
    if (restaged_identity) {
      const double identity_s =
          sim::metrics_of_replay(restaged_identity->graph,
                                 sim::replay(restaged_identity->graph, options))
              .job_step_time_ns *
          1e-9;
      doc["restage"]["rebuilt_at_input_shape_step_s"] = identity_s;
      doc["restage"]["rebuild_error_percent"] =
          100.0 * (identity_s / (replayed.job_step_time_ns * 1e-9) - 1.0);
    }
  }
  doc["energy_modelled"] = {{"gpu", energy.gpu},
                            {"clock_mhz", energy.clock_mhz},
                            {"static_j", energy.static_j},
                            {"dynamic_j", energy.dynamic_j},
                            {"total_j", energy.total_j},
                            {"total_j_per_step", energy.total_j_per_step},
                            {"timeline", changed ? "what-if replay" : "replay"}};
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

  // The verdict comes first: a step time that does not reproduce the trace is no prediction.
  if (verdict.faithful) {
    fmt::print(
        "verdict: FAITHFUL - the replay reproduces the trace (step within 1 %, breakdown "
        "within 2 pp, {} dependencies released)\n",
        faithful.released_total());
  } else {
    fmt::print(
        "verdict: NOT FAITHFUL - the replay does not reproduce the trace; its numbers are "
        "not predictions:\n");
    for (const auto& reason : verdict.reasons)
      fmt::print("  - {} ({:.6f} s per step)\n", reason.text, reason.explained_s);
  }
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
  if (restaged) {
    const whatif::LayerProfile& p = restaged->profile;
    fmt::print(
        "  layers        {} found by {}: forward {:.1f} us, backward {:.1f} us per layer and "
        "microbatch (measured medians); input {} stage(s) x {} microbatch(es)\n",
        p.layers, p.method, p.forward_layer_ns() * 1e-3, p.backward_layer_ns() * 1e-3, p.stages,
        p.microbatches);
    if (doc["restage"].contains("rebuild_error_percent"))
      fmt::print(
          "  rebuild check the job rebuilt from its layers at the input's own shape: {:.6f} s "
          "({:+.2f} % vs the replay)\n",
          doc["restage"]["rebuilt_at_input_shape_step_s"].get<double>(),
          doc["restage"]["rebuild_error_percent"].get<double>());
    fmt::print(
        "  re-staged     {} stage(s) x {} microbatch(es), {} layers (1F1B, {:.1f} us per "
        "transfer): step {:.6f} s (simulated)\n",
        restaged->stages, restaged->microbatches, restaged->layers, restaged->p2p_ns * 1e-3,
        result_metrics.job_step_time_ns * 1e-9);
  }
  if (changed) {
    std::vector<std::string> what = flags.scales;
    if (flags.restages()) what.push_back("re-staged");
    if (flags.data_parallel > 0) what.push_back(fmt::format("dp={}", flags.data_parallel));
    if (flags.hidden_ratio > 0.0) what.push_back(fmt::format("hidden x{}", flags.hidden_ratio));
    fmt::print(
        "  what-if       {}: {} tasks changed; job step {:.6f} s -> {:.6f} s ({:+.2f} %, "
        "simulated)\n",
        fmt::join(what, ", "), changed_tasks, replayed.job_step_time_ns * 1e-9,
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
  return flags.strict && !verdict.faithful ? 3 : 0;
}

void add_flags(CLI::App& app, ReplayFlags& flags, bool what_if) {
  app.add_option("traces", flags.traces,
                 "Kineto trace files (JSON or gzip), directories of them, or a .tar.gz of ranks")
      ->required();
  app.add_option("--out", flags.out,
                 "Output directory: new, empty or an earlier powertrain output (default "
                 "powertrain-replay)");
  add_force_flag(app, flags.force);
  add_input_limit_flag(app);
  app.add_option("--gpu", flags.gpu, "GPU type for the modelled energy (default a100-sxm)");
  app.add_option("--scale", flags.scales,
                 what_if ? "CLASS=FACTOR, repeatable: all, gpu, cpu, matmul, memory, collective"
                         : "Optional what-if: CLASS=FACTOR (as in `powertrain whatif`)");
  add_option_with_aliases(app, "--bus-bandwidth-gb-s", {"--bus-bandwidth"},
                          flags.bus_bandwidth_gb_s,
                          "Collectives take latency + bytes / this bus bandwidth (GB/s) instead "
                          "of the shortest measured duration",
                          number_in(0.0, 1e6, true));
  add_option_with_aliases(app, "--collective-latency-s", {"--collective-latency"},
                          flags.collective_latency_s,
                          "Latency per collective with --bus-bandwidth-gb-s, s",
                          number_in(0.0, 1e3));
  app.add_flag("--quiet", flags.quiet, "No progress output");
  app.add_flag("--strict", flags.strict,
               "Exit with status 3 when the replay does not reproduce the trace");
  if (!what_if) return;
  add_option_with_aliases(app, "--pp", {"--stages"}, flags.pipeline_stages,
                          "Re-stage to this many pipeline stages (layers found in the trace, 1F1B "
                          "order regenerated, send/recv inserted)",
                          integer_in(1, 100'000));
  add_option_with_aliases(app, "--microbatches", {}, flags.microbatches,
                          "Microbatches of the re-staged pipeline", integer_in(1, 1'000'000));
  add_option_with_aliases(app, "--layers", {}, flags.layers,
                          "Number of layers of the re-staged model", integer_in(1, 100'000));
  add_option_with_aliases(app, "--input-microbatches", {}, flags.input_microbatches,
                          "Microbatches in the input (default: from its send/recv pairs, or 1 "
                          "for one rank)",
                          integer_in(1, 1'000'000));
  add_option_with_aliases(app, "--p2p-s", {}, flags.p2p_s,
                          "Seconds per stage-to-stage transfer when re-staging (default: the "
                          "input's measured median, 0 without)",
                          number_in(0.0, 1e3));
  add_option_with_aliases(app, "--dp", {}, flags.data_parallel,
                          "Data-parallel degree: collectives re-estimated with ring bus factors",
                          integer_in(1, 10'000'000));
  add_option_with_aliases(app, "--hidden-ratio", {}, flags.hidden_ratio,
                          "Hidden size x this: GEMMs x r^2, attention and memory-bound kernels x "
                          "r, collectives x r^2",
                          number_in(0.0, 1e3, true));
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
