// What `powertrain emulate` writes: summary.json (every number modelled or predicted, with its
// unit) and emulated_trace.json for Perfetto.
#include "report/emulation_report.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "report/json.h"
#include "sim/replay_trace.h"

namespace powertrain::report {

using emulate::ClockLock;
using emulate::EstimatorUse;
using emulate::HostCosts;
using emulate::OutOfMemory;
using emulate::RankReport;

namespace {

std::string gib(std::int64_t bytes) {
  if (bytes < (std::int64_t{1} << 30)) {
    return fmt::format("{:.2f} MiB", static_cast<double>(bytes) / 1048576.0);
  }
  return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / 1073741824.0);
}

}  // namespace

std::string emulation_summary_json(const emulate::EmulationResult& r) {
  using nlohmann::json;
  json doc;
  doc["basis"] =
      "modelled/predicted: durations from the kernel estimators and the host-cost model, replayed "
      "by the execution-graph simulator; nothing here was measured on a GPU";
  doc["units"] = "seconds (_s), joules (_j), bytes (_bytes), watts (_w); fractions in [0, 1]";
  doc["gpu"] = {{"name", r.gpu.name},
                {"display_name", r.gpu.display_name},
                {"memory_bytes", static_cast<std::int64_t>(r.gpu.memory_gib * 1073741824.0)},
                {"calibration", r.gpu.calibration}};
  doc["topology"] = {{"nodes", r.nodes},
                     {"gpus_per_node", r.gpus_per_node},
                     {"gpus_in_traces", r.gpu_count},
                     {"processes", r.ranks.size()}};
  const int steps = r.ranks.empty() ? 1 : r.ranks.front().steps;
  const bool detected = !r.ranks.empty() && r.ranks.front().steps_detected;
  doc["job"] = {
      {"predicted_step_s", r.job_step_s},
      {"steps", steps},
      {"iteration_rule", detected ? "repeated block of operations ending the trace (find_steps)"
                                  : "whole trace (no repeated block with a host sync found)"},
      {"predicted_breakdown", breakdown_json(r.job_breakdown)},
      {"predicted_gpu_utilization", r.job_gpu_utilization},
      {"predicted_gpu_span_s", r.job_gpu_span_s},
      {"modelled_energy_j_per_step", r.energy_j_per_step},
      {"modelled_static_j_per_step", r.static_j_per_step},
      {"modelled_dynamic_j_per_step", r.dynamic_j_per_step},
      {"modelled_average_power_w_per_gpu",
       r.job_step_s > 0.0 && r.gpu_count > 0
           ? r.energy_j_per_step / r.job_step_s / static_cast<double>(r.gpu_count)
           : 0.0},
      {"predicted_critical_path_s", r.critical_path_s},
      {"collectives_joined", r.replay.collectives_joined},
      {"replay_outcome",
       r.replay.outcome == sim::ReplayOutcome::kComplete ? "complete" : "stalled"},
      {"records", r.records}};
  json ranks = json::array();
  json gpus = json::array();
  for (const RankReport& k : r.ranks) {
    ranks.push_back({{"rank", k.rank},
                     {"source", k.source},
                     {"devices", k.devices},
                     {"class", k.rank_class},
                     {"simulated", k.simulated},
                     {"representative_rank", k.representative_rank},
                     {"predicted_step_s", k.step_s},
                     {"steps", k.steps},
                     {"predicted_breakdown", breakdown_json(k.breakdown)},
                     {"predicted_gpu_utilization", k.gpu_utilization},
                     {"predicted_gpu_span_s", k.gpu_span_s},
                     {"modelled_energy_j_per_step", k.energy_j_per_step},
                     {"peak_memory_bytes", k.peak_memory_bytes},
                     {"gpu_tasks", k.gpu_tasks},
                     {"out_of_memory", k.out_of_memory},
                     {"unsupported_calls", k.unsupported_calls},
                     {"misuse_calls", k.misuse_calls}});
    for (int d = 0; d < k.devices; ++d) {
      const std::int64_t index = k.first_gpu + d;
      gpus.push_back({{"gpu", index},
                      {"node", index / std::max(r.gpus_per_node, 1)},
                      {"rank", k.rank},
                      {"device", d},
                      {"peak_memory_bytes", k.peak_memory_bytes[d]},
                      {"modelled_energy_j_per_step", k.device_energy_j_per_step[d]}});
    }
  }
  doc["ranks"] = ranks;
  doc["gpus"] = gpus;
  json oom = json::array();
  for (const OutOfMemory& o : r.out_of_memory) {
    oom.push_back({{"rank", o.rank},
                   {"device", o.device},
                   {"gpu", o.gpu},
                   {"api", o.api},
                   {"requested_bytes", o.bytes},
                   {"used_bytes", o.used_bytes},
                   {"where", o.where}});
  }
  doc["out_of_memory"] = oom;
  doc["unsupported_calls"] = r.unsupported;
  doc["misuse"] = r.misuse;
  json locks = json::array();
  for (const ClockLock& l : r.clock_locks) {
    locks.push_back({{"rank", l.rank},
                     {"device", l.device},
                     {"t_s", l.t_s},
                     {"min_mhz", l.min_mhz},
                     {"max_mhz", l.max_mhz},
                     {"api", l.api}});
  }
  doc["clock_locks"] = locks;
  json classes = json::array();
  for (std::size_t c = 0; c < r.classes.representative.size(); ++c) {
    classes.push_back({{"class", c},
                       {"representative_rank", r.collation.rank[r.classes.representative[c]]},
                       {"ranks", r.classes.size[c]}});
  }
  doc["dedup"] = {{"enabled", r.classes.enabled},
                  {"classes", classes},
                  {"simulated_processes", r.classes.representative.size()},
                  {"refinement_rounds", r.classes.refinement_rounds}};
  json estimators = json::array();
  for (const EstimatorUse& e : r.estimators) {
    estimators.push_back({{"name", e.name}, {"basis", e.basis}, {"gpu_tasks", e.tasks}});
  }
  doc["estimators"] = estimators;
  const HostCosts& c = r.host_costs;
  doc["host_costs_s"] = {
      {"launch", c.launch_ns * 1e-9},  {"gemm", c.gemm_ns * 1e-9},
      {"nccl", c.nccl_ns * 1e-9},      {"copy", c.copy_ns * 1e-9},
      {"sync_tail", c.sync_ns * 1e-9}, {"event", c.event_ns * 1e-9},
      {"malloc", c.malloc_ns * 1e-9},  {"free", c.free_ns * 1e-9},
      {"create", c.create_ns * 1e-9},  {"comm_init", c.comm_init_ns * 1e-9},
      {"other", c.other_ns * 1e-9},    {"launch_latency", c.launch_latency_ns * 1e-9}};
  doc["host_time"] = {
      {"mode", c.host_time_modelled() ? "modelled" : "measured"},
      {"modelled_gap_s", c.host_time_modelled() ? c.modelled_host_gap_ns * 1e-9 : 0.0},
      {"max_measured_gap_s", c.max_host_gap_ns * 1e-9}};
  json warnings = json::array();
  for (const trace::TraceWarning& w : r.warnings) {
    warnings.push_back({{"kind", w.kind}, {"count", w.count}, {"example", w.example}});
  }
  doc["warnings"] = warnings;
  doc["analysis_wall_s"] = r.analysis_s;
  return doc.dump(2) + "\n";
}

core::Status write_emulation_outputs(const emulate::EmulationResult& result,
                                     core::AtomicOutputDirectory& out) {
  sim::ChromeTraceOptions chrome;
  chrome.label = "emulated";
  if (auto status = out.write_file("emulated_trace.json",
                                   sim::replay_chrome_trace(result.graph, result.replay, chrome));
      !status) {
    return status;
  }
  return out.write_file("summary.json", emulation_summary_json(result));
}

core::Status write_emulation_outputs(const emulate::EmulationResult& result,
                                     const std::filesystem::path& dir) {
  auto out = core::AtomicOutputDirectory::create(dir);
  if (!out) return out.error();
  if (auto status = write_emulation_outputs(result, *out); !status) return status;
  return out->commit();
}

void print_emulation_summary(std::FILE* to, const emulate::EmulationResult& r,
                             const std::filesystem::path& out, bool kept_traces) {
  const std::int64_t capacity = static_cast<std::int64_t>(r.gpu.memory_gib * 1073741824.0);
  fmt::print(
      to,
      "powertrain emulate: {} process(es), {} GPU(s) of {} on {} node(s) x {} GPU(s); {} records; "
      "{} rank class(es) simulated{}\n",
      r.ranks.size(), r.gpu_count, r.gpu.name, r.nodes, r.gpus_per_node, r.records,
      r.classes.representative.size(), r.classes.enabled ? " (dedup)" : " (no dedup)");
  const bool detected = !r.ranks.empty() && r.ranks.front().steps_detected;
  fmt::print(to, "  step time     {:.6f} s per step, predicted ({})\n", r.job_step_s,
             detected ? fmt::format("{} repeated iteration(s) found", r.ranks.front().steps)
                      : std::string("whole trace as one step"));
  fmt::print(
      to, "  GPU span      {:.6f} s from the first GPU task to the last (all steps), predicted\n",
      r.job_gpu_span_s);
  const emulate::HostCosts& hc = r.host_costs;
  if (hc.host_time_modelled()) {
    fmt::print(
        to,
        "  host time     modelled: API costs (launch {:.1f} us, ...) + {:.3f} us between calls; "
        "this machine's speed and load do not enter (--host-time model)\n",
        hc.launch_ns * 1e-3, hc.modelled_host_gap_ns * 1e-3);
  } else {
    fmt::print(to, "  host time     measured: the gaps between calls as this machine ran them{}\n",
               hc.max_host_gap_ns > 0
                   ? fmt::format(", capped at {:.3f} us", hc.max_host_gap_ns * 1e-3)
                   : std::string());
  }
  const sim::Breakdown& b = r.job_breakdown;
  fmt::print(
      to,
      "  breakdown     compute {:.1f} % / communication {:.1f} % / overlapped {:.1f} % / other "
      "{:.1f} % of the step, predicted; GPU busy {:.1f} %\n",
      100 * b.exposed_compute, 100 * b.exposed_communication, 100 * b.overlapped, 100 * b.other,
      100 * r.job_gpu_utilization);
  fmt::print(to,
             "  energy        {:.3f} J per step on {} GPU(s) (static {:.3f} J, dynamic {:.3f} J), "
             "average {:.1f} W per GPU; modelled\n",
             r.energy_j_per_step, r.gpu_count, r.static_j_per_step, r.dynamic_j_per_step,
             r.job_step_s > 0 && r.gpu_count > 0
                 ? r.energy_j_per_step / r.job_step_s / static_cast<double>(r.gpu_count)
                 : 0.0);
  std::int64_t peak = 0;
  int peak_rank = 0, peak_device = 0;
  for (const auto& rank : r.ranks) {
    for (std::size_t d = 0; d < rank.peak_memory_bytes.size(); ++d) {
      if (rank.peak_memory_bytes[d] > peak) {
        peak = rank.peak_memory_bytes[d];
        peak_rank = rank.rank;
        peak_device = static_cast<int>(d);
      }
    }
  }
  fmt::print(to, "  peak memory   {} of {} per GPU (rank {} device {}), recorded by the emulator\n",
             gib(peak), gib(capacity), peak_rank, peak_device);
  for (std::size_t i = 0; i < r.out_of_memory.size() && i < 8; ++i) {
    const auto& o = r.out_of_memory[i];
    fmt::print(to, "  OUT OF MEMORY rank {} device {}: {} of {} bytes failed ({} in use) at {}\n",
               o.rank, o.device, o.api, o.bytes,
               o.used_bytes >= 0 ? gib(o.used_bytes) : std::string("?"), o.where);
  }
  if (r.out_of_memory.size() > 8) {
    fmt::print(to, "  OUT OF MEMORY ... {} more in summary.json\n", r.out_of_memory.size() - 8);
  }
  if (!r.clock_locks.empty()) {
    std::set<int> locked;
    bool reset = false;
    for (const ClockLock& l : r.clock_locks) {
      if (l.max_mhz > 0) {
        locked.insert(l.max_mhz);
      } else {
        reset = true;
      }
    }
    std::string values;
    for (int mhz : locked) values += fmt::format("{}{} MHz", values.empty() ? "" : ", ", mhz);
    fmt::print(to,
               "  SM clocks     locked by the program through NVML {} time(s) ({}{}): work "
               "launched while locked is timed and its energy modelled at that clock\n",
               r.clock_locks.size(), values.empty() ? "none" : values,
               reset ? "; reset to the default" : "");
  }
  for (const auto& [api, count] : r.unsupported) {
    // "NAME (what)": the call succeeded but that effect of it is not modelled.
    const bool accepted = !api.empty() && api.back() == ')';
    fmt::print(to, "  unsupported   {} called {} time(s): {}\n", api, count,
               accepted ? "accepted, that effect not modelled" : "not emulated, returned an error");
  }
  for (const auto& [what, count] : r.misuse) {
    fmt::print(to, "  misuse        {} ({} time(s))\n", what, count);
  }
  fmt::print(to, "  {:>5} {:>5} {:>16} {:>25} {:>13} {:>11}\n", "rank", "class", "step s (pred.)",
             "comp/comm/ovl/other %", "J/step (mod.)", "peak GiB");
  const std::size_t shown = r.ranks.size() <= 32 ? r.ranks.size() : 16;
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& k = r.ranks[i];
    const std::int64_t rank_peak =
        k.peak_memory_bytes.empty()
            ? 0
            : *std::max_element(k.peak_memory_bytes.begin(), k.peak_memory_bytes.end());
    fmt::print(
        to, "  {:>5} {:>5} {:>16.6f} {:>6.1f}/{:>4.1f}/{:>4.1f}/{:>5.1f}   {:>13.3f} {:>11.2f}\n",
        k.rank, k.rank_class, k.step_s, 100 * k.breakdown.exposed_compute,
        100 * k.breakdown.exposed_communication, 100 * k.breakdown.overlapped,
        100 * k.breakdown.other, k.energy_j_per_step,
        static_cast<double>(rank_peak) / 1073741824.0);
  }
  if (shown < r.ranks.size())
    fmt::print(to, "  ... {} more ranks in summary.json\n", r.ranks.size() - shown);
  std::int64_t warned = 0;
  for (const auto& w : r.warnings) warned += w.count;
  if (warned > 0) {
    fmt::print(to, "  warnings      {} ({} kind(s); first: {}: {})\n", warned, r.warnings.size(),
               r.warnings.front().kind, r.warnings.front().example);
  }
  fmt::print(to,
             "  files         {}/: summary.json emulated_trace.json (open in ui.perfetto.dev){}\n",
             out.string(), kept_traces ? " traces/" : "");
}

}  // namespace powertrain::report
