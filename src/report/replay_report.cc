// Writers for replay and what-if results. Every number says whether it is measured, simulated
// or modelled, and its unit.
#include "report/replay_report.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <iterator>
#include <nlohmann/json.hpp>

#include "report/json.h"
#include "sim/replay_trace.h"

namespace powertrain::report {
namespace {

std::size_t warning_count(const std::vector<trace::TraceWarning>& warnings) {
  std::size_t n = 0;
  for (const auto& w : warnings) n += static_cast<std::size_t>(w.count);
  return n;
}

}  // namespace

std::string replay_summary_json(const replay::ReplayRun& run, const ReplayRequest& request) {
  nlohmann::json doc;
  doc["units"] = "seconds, joules; fractions in [0, 1]";
  doc["traces"] = request.traces;
  doc["what_if"] = request.scale_texts;
  if (request.data_parallel > 0) doc["what_if_data_parallel"] = request.data_parallel;
  if (request.hidden_ratio > 0.0) doc["what_if_hidden_ratio"] = request.hidden_ratio;
  doc["replay_outcome"] =
      run.result.outcome == sim::ReplayOutcome::kComplete ? "complete" : "stalled";
  doc["faithful"] = run.verdict.faithful;
  doc["reasons"] = nlohmann::json::array();
  for (const auto& reason : run.verdict.reasons)
    doc["reasons"].push_back(
        {{"reason", reason.text}, {"explained_s_per_step", reason.explained_s}});
  doc["dependencies_released"] = nlohmann::json::object();
  for (int k = 0; k < sim::kReleasedKinds; ++k)
    doc["dependencies_released"][std::string(sim::to_string(static_cast<sim::ReleasedKind>(k)))] =
        run.faithful.released[k];
  doc["tasks_lost"] = run.faithful.stalled_tasks;
  doc["ranks"] = nlohmann::json::array();
  for (std::size_t r = 0; r < run.graph.ranks.size(); ++r) {
    nlohmann::json rank = {{"rank", run.graph.ranks[r].rank},
                           {"source", run.graph.ranks[r].source},
                           {"input_step_s", run.input.ranks[r].step_time_ns * 1e-9},
                           {"replay_step_s", run.replayed.ranks[r].step_time_ns * 1e-9},
                           {"replay_step_error_percent", run.accuracy.rank_step_time_error_pct[r]},
                           {"input_breakdown", breakdown_json(run.input.ranks[r].breakdown)},
                           {"replay_breakdown", breakdown_json(run.replayed.ranks[r].breakdown)},
                           {"input_gpu_utilization", run.input.ranks[r].mean_utilization},
                           {"replay_gpu_utilization", run.replayed.ranks[r].mean_utilization}};
    if (run.changed && !run.restaged) {
      rank["what_if_step_s"] = run.result_metrics.ranks[r].step_time_ns * 1e-9;
      rank["what_if_breakdown"] = breakdown_json(run.result_metrics.ranks[r].breakdown);
      rank["what_if_gpu_utilization"] = run.result_metrics.ranks[r].mean_utilization;
    }
    doc["ranks"].push_back(rank);
  }
  doc["job"] = {{"input_step_s", run.input.job_step_time_ns * 1e-9},
                {"replay_step_s", run.replayed.job_step_time_ns * 1e-9},
                {"replay_step_error_percent", run.accuracy.job_step_time_error_pct},
                {"max_breakdown_error_pp", run.accuracy.max_breakdown_error_pp},
                {"max_utilization_error_pp", run.accuracy.max_utilization_error_pp},
                {"kernel_start_mae_s", run.accuracy.kernel_start_mae_ns * 1e-9},
                {"kernel_end_mae_s", run.accuracy.kernel_end_mae_ns * 1e-9},
                {"collective_end_spread_input_s",
                 static_cast<double>(run.accuracy.max_collective_end_spread_input_ns) * 1e-9},
                {"collective_end_spread_replay_s",
                 static_cast<double>(run.accuracy.max_collective_end_spread_replay_ns) * 1e-9},
                {"collectives_joined", run.faithful.collectives_joined},
                {"critical_path_s", static_cast<double>(run.path.length_ns) * 1e-9}};
  if (run.changed) {
    doc["job"]["what_if_step_s"] = run.result_metrics.job_step_time_ns * 1e-9;
    doc["job"]["what_if_tasks_changed"] = run.changed_tasks;
  }
  if (run.restaged) {
    const whatif::LayerProfile& p = run.restaged->profile;
    nlohmann::json stages = nlohmann::json::array();
    for (std::size_t r = 0; r < run.what_if_graph().ranks.size(); ++r)
      stages.push_back(
          {{"stage", r},
           {"layers", run.restaged->layers_per_stage[r]},
           {"what_if_step_s", run.result_metrics.ranks[r].step_time_ns * 1e-9},
           {"what_if_breakdown", breakdown_json(run.result_metrics.ranks[r].breakdown)},
           {"what_if_gpu_utilization", run.result_metrics.ranks[r].mean_utilization}});
    doc["restage"] = {
        {"layer_detection", p.method},
        {"input", {{"stages", p.stages}, {"microbatches", p.microbatches}, {"layers", p.layers}}},
        {"what_if",
         {{"stages", run.restaged->stages},
          {"microbatches", run.restaged->microbatches},
          {"layers", run.restaged->layers},
          {"schedule", "1f1b"}}},
        {"measured_forward_layer_s", p.forward_layer_ns() * 1e-9},
        {"measured_backward_layer_s", p.backward_layer_ns() * 1e-9},
        {"measured_first_stage_extra_s", p.first_stage_extra_ns * 1e-9},
        {"measured_last_stage_extra_s", p.last_stage_extra_ns * 1e-9},
        {"p2p_s", run.restaged->p2p_ns * 1e-9},
        {"dropped_non_layer_s", p.dropped_ns * 1e-9},
        {"stages", stages}};
    if (run.rebuilt_at_input_shape_step_s) {
      const double identity_s = *run.rebuilt_at_input_shape_step_s;
      doc["restage"]["rebuilt_at_input_shape_step_s"] = identity_s;
      doc["restage"]["rebuild_error_percent"] =
          100.0 * (identity_s / (run.replayed.job_step_time_ns * 1e-9) - 1.0);
    }
  }
  doc["energy_modelled"] = {{"gpu", run.energy.gpu},
                            {"clock_mhz", run.energy.clock_mhz},
                            {"static_j", run.energy.static_j},
                            {"dynamic_j", run.energy.dynamic_j},
                            {"total_j", run.energy.total_j},
                            {"total_j_per_step", run.energy.total_j_per_step},
                            {"timeline", run.changed ? "what-if replay" : "replay"}};
  nlohmann::json warnings = nlohmann::json::array();
  auto add = [&](const std::string& where, const std::vector<trace::TraceWarning>& list) {
    for (const auto& w : list)
      warnings.push_back(
          {{"where", where}, {"kind", w.kind}, {"count", w.count}, {"example", w.example}});
  };
  for (const auto& t : run.traces.ranks) add(t.source, t.warnings);
  add("graph", run.graph.warnings);
  add("replay", run.result.warnings);
  doc["warnings"] = warnings;
  return doc.dump(2) + "\n";
}

core::Status write_replay(const replay::ReplayRun& run, const ReplayRequest& request,
                          core::AtomicOutputDirectory& output) {
  if (auto written = sim::write_replay_chrome_trace(output.staging() / "replay_trace.json",
                                                    run.what_if_graph(), run.result);
      !written)
    return written;
  return output.write_file("summary.json", replay_summary_json(run, request));
}

std::string replay_console(const replay::ReplayRun& run, const ReplayRequest& request,
                           double total_s, const std::filesystem::path& directory) {
  std::string buffer;
  auto out = std::back_inserter(buffer);
  // The verdict comes first: a step time that does not reproduce the trace is no prediction.
  if (run.verdict.faithful) {
    fmt::format_to(
        out,
        "verdict: FAITHFUL - the replay reproduces the trace (step within 1 %, breakdown "
        "within 2 pp, {} dependencies released)\n",
        run.faithful.released_total());
  } else {
    fmt::format_to(
        out,
        "verdict: NOT FAITHFUL - the replay does not reproduce the trace; its numbers are "
        "not predictions:\n");
    for (const auto& reason : run.verdict.reasons)
      fmt::format_to(out, "  - {} ({:.6f} s per step)\n", reason.text, reason.explained_s);
  }
  fmt::format_to(out,
                 "powertrain {}: {} rank(s), {} events, {} GPU tasks; read {:.2f} s, "
                 "total {:.2f} s\n",
                 request.command, run.graph.ranks.size(), run.traces.events,
                 run.graph.stats.gpu_tasks, run.traces.read_s, total_s);
  fmt::format_to(out, "  {:>5} {:>13} {:>13} {:>8} {:>25} {:>11}\n", "rank", "input step s",
                 "replay step s", "error %", "replay comp/comm/ovl/other", "GPU busy %");
  for (std::size_t r = 0; r < run.graph.ranks.size(); ++r) {
    const auto& b = run.replayed.ranks[r].breakdown;
    fmt::format_to(
        out,
        "  {:>5} {:>13.6f} {:>13.6f} {:>+8.3f} {:>6.1f}/{:>4.1f}/{:>4.1f}/{:>5.1f} % {:>11.1f}\n",
        run.graph.ranks[r].rank, run.input.ranks[r].step_time_ns * 1e-9,
        run.replayed.ranks[r].step_time_ns * 1e-9, run.accuracy.rank_step_time_error_pct[r],
        100 * b.exposed_compute, 100 * b.exposed_communication, 100 * b.overlapped, 100 * b.other,
        100 * run.replayed.ranks[r].mean_utilization);
  }
  fmt::format_to(
      out,
      "  fidelity      kernel start error {:.2f} us mean (replay vs measured); breakdown "
      "within {:.2f} pp, utilization within {:.2f} pp; collective ends spread {:.1f} us "
      "measured, {:.1f} us replayed\n",
      run.accuracy.kernel_start_mae_ns * 1e-3, run.accuracy.max_breakdown_error_pp,
      run.accuracy.max_utilization_error_pp,
      static_cast<double>(run.accuracy.max_collective_end_spread_input_ns) * 1e-3,
      static_cast<double>(run.accuracy.max_collective_end_spread_replay_ns) * 1e-3);
  if (run.restaged) {
    const whatif::LayerProfile& p = run.restaged->profile;
    fmt::format_to(
        out,
        "  layers        {} found by {}: forward {:.1f} us, backward {:.1f} us per layer and "
        "microbatch (measured medians); input {} stage(s) x {} microbatch(es)\n",
        p.layers, p.method, p.forward_layer_ns() * 1e-3, p.backward_layer_ns() * 1e-3, p.stages,
        p.microbatches);
    if (run.rebuilt_at_input_shape_step_s)
      fmt::format_to(
          out,
          "  rebuild check the job rebuilt from its layers at the input's own shape: {:.6f} s "
          "({:+.2f} % vs the replay)\n",
          *run.rebuilt_at_input_shape_step_s,
          100.0 *
              (*run.rebuilt_at_input_shape_step_s / (run.replayed.job_step_time_ns * 1e-9) - 1.0));
    fmt::format_to(
        out,
        "  re-staged     {} stage(s) x {} microbatch(es), {} layers (1F1B, {:.1f} us per "
        "transfer): step {:.6f} s (simulated)\n",
        run.restaged->stages, run.restaged->microbatches, run.restaged->layers,
        run.restaged->p2p_ns * 1e-3, run.result_metrics.job_step_time_ns * 1e-9);
  }
  if (run.changed) {
    std::vector<std::string> what = request.scale_texts;
    if (request.restages) what.push_back("re-staged");
    if (request.data_parallel > 0) what.push_back(fmt::format("dp={}", request.data_parallel));
    if (request.hidden_ratio > 0.0) what.push_back(fmt::format("hidden x{}", request.hidden_ratio));
    fmt::format_to(
        out,
        "  what-if       {}: {} tasks changed; job step {:.6f} s -> {:.6f} s ({:+.2f} %, "
        "simulated)\n",
        fmt::join(what, ", "), run.changed_tasks, run.replayed.job_step_time_ns * 1e-9,
        run.result_metrics.job_step_time_ns * 1e-9,
        100.0 * (run.result_metrics.job_step_time_ns / run.replayed.job_step_time_ns - 1.0));
  }
  const double per_step =
      run.energy.total_j > 0.0 ? run.energy.total_j_per_step / run.energy.total_j : 0.0;
  fmt::format_to(
      out,
      "  energy        {:.2f} J per step on {} GPU(s) at {:.0f} MHz ({}: static {:.2f} J, "
      "dynamic {:.2f} J per step; modelled)\n",
      run.energy.total_j_per_step, run.energy.gpus.size(), run.energy.clock_mhz, run.energy.gpu,
      run.energy.static_j * per_step, run.energy.dynamic_j * per_step);
  const std::size_t warned =
      warning_count(run.graph.warnings) + warning_count(run.result.warnings) + [&] {
        std::size_t n = 0;
        for (const auto& t : run.traces.ranks) n += warning_count(t.warnings);
        return n;
      }();
  if (warned > 0)
    fmt::format_to(out, "  warnings      {} (kinds and examples in summary.json)\n", warned);
  fmt::format_to(out,
                 "  files         {}/: summary.json replay_trace.json (open in ui.perfetto.dev)\n",
                 directory.string());
  return buffer;
}

}  // namespace powertrain::report
