// `powertrain analyze`: HTA-style trace analysis of Kineto traces (temporal and kernel-type
// breakdowns, overlap, streams, communication libraries) plus the replay's critical path per step,
// written as summary.json, kernels.csv and a self-contained report.html.
#include <fmt/core.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "analyze/analyze.h"
#include "analyze/critical.h"
#include "analyze/memcpy_bytes.h"
#include "analyze/report.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "core/atomic_output.h"
#include "device/gpu.h"
#include "graph/graph_builder.h"
#include "replay/replay.h"
#include "report/csv.h"
#include "sim/energy.h"
#include "sim/metrics.h"
#include "sim/simulator.h"

namespace powertrain::cli {
namespace {

struct AnalyzeFlags {
  std::vector<std::string> traces;
  std::string out = "powertrain-analyze";
  std::string window = "gpu-span";
  std::string gpu = device::kDefaultGpu;
  int top = 10;
  double kernel_wait_us = 30.0;
  bool no_critical_path = false;
  bool quiet = false;
  bool force = false;
};

std::string shorten(const std::string& name, std::size_t width) {
  if (name.size() <= width) return name;
  return name.substr(0, width - 3) + "...";
}

int run_analyze(const AnalyzeFlags& flags) {
  const char* command = "analyze";
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  const auto window = analyze::parse_window_kind(flags.window);
  if (!window)
    return usage_error(command, fmt::format("--window: unknown '{}'; known: steps, gpu-span, whole",
                                            flags.window));
  auto gpu = device::find_gpu(flags.gpu);
  if (!gpu) return fail(command, gpu.error().message);
  auto output = core::AtomicOutputDirectory::create(flags.out, output_policy(flags.force));
  if (!output) return fail(command, output.error().message);

  const replay::Progress progress = stderr_progress(command, flags.quiet);
  auto loaded = replay::read_traces(flags.traces, false, progress);
  if (!loaded) return fail(command, loaded.error().message);
  const std::vector<trace::RankTrace>& traces = loaded->ranks;

  analyze::AnalyzeOptions options;
  options.window = *window;
  options.consecutive_kernel_delay_ns = static_cast<std::int64_t>(flags.kernel_wait_us * 1e3);
  std::vector<analyze::RankAnalysis> ranks;
  std::vector<std::string> notes;
  for (const trace::RankTrace& t : traces) {
    auto bytes = analyze::read_memcpy_bytes(t.source);
    if (!bytes) notes.push_back("memcpy bytes not read: " + bytes.error().message);
    ranks.push_back(analyze::analyze_rank(t, options, bytes ? &*bytes : nullptr));
    if (*window == analyze::WindowKind::kSteps && ranks.back().window.used != *window)
      notes.push_back(
          fmt::format("rank {}: no ProfilerStep spans; window gpu-span used instead", t.rank));
  }

  // The critical path needs the execution graph and the replay; a trace the graph builder
  // refuses still gets every other analysis.
  analyze::PathContext context;
  std::optional<graph::ExecutionGraph> graph;
  std::vector<analyze::RankPath> paths;
  if (flags.no_critical_path) {
    context.unavailable = "--no-critical-path";
  } else {
    if (!flags.quiet) fmt::print(stderr, "{}: replaying for the critical path ...\n", command);
    auto built = graph::build_execution_graph(traces);
    if (!built) {
      context.unavailable = built.error().message;
    } else {
      graph = std::move(*built);
      const replay::Replayed replayed = replay::replay_graph(*graph, *gpu);
      const sim::EnergyReport& energy = replayed.energy;
      // Ranks without ProfilerSteps split their path inside the analysis window.
      std::vector<std::pair<std::int64_t, std::int64_t>> windows;
      for (const graph::RankInfo& info : graph->ranks) {
        std::pair<std::int64_t, std::int64_t> w{0, 0};
        for (const auto& r : ranks)
          if (r.rank == info.rank) w = {r.window.start_ns, r.window.end_ns};
        windows.push_back(w);
      }
      paths = analyze::critical_paths(*graph, replayed.result, energy, windows);
      context.graph = &*graph;
      context.paths = &paths;
      context.gpu = energy.gpu;
      context.clock_mhz = energy.clock_mhz;
    }
  }

  nlohmann::json doc = analyze::analysis_json(ranks, context, flags.top);
  doc["traces"] = flags.traces;
  doc["window"] = flags.window;
  doc["kernel_wait_threshold_s"] = flags.kernel_wait_us * 1e-6;
  doc["notes"] = notes;
  if (auto w = output->write_file("summary.json", doc.dump(2) + "\n"); !w)
    return fail(command, w.error().message);
  std::string csv = "rank,name,type,library,count,total_s,mean_s,min_s,max_s\n";
  for (const auto& r : ranks)
    for (const auto& k : r.kernels)
      csv += fmt::format("{},{},{},{},{},{:.9f},{:.9f},{:.9f},{:.9f}\n", r.rank,
                         report::csv_field(k.name), analyze::to_string(k.type),
                         analyze::to_string(k.library), k.count, k.total_ns * 1e-9,
                         k.mean_ns() * 1e-9, k.min_ns * 1e-9, k.max_ns * 1e-9);
  if (auto w = output->write_file("kernels.csv", csv); !w) return fail(command, w.error().message);
  if (auto w = output->write_file("report.html", analyze::html_report(doc)); !w)
    return fail(command, w.error().message);
  if (auto c = output->commit(); !c) return fail(command, c.error().message);

  const double total_s = std::chrono::duration<double>(Clock::now() - started).count();
  fmt::print("powertrain analyze: {} rank(s), window {}; measured from the trace ({:.2f} s)\n",
             ranks.size(), flags.window, total_s);
  fmt::print("  {:>5} {:>12} {:>7} {:>9} {:>9} {:>9} {:>10} {:>8}\n", "rank", "window ms", "idle %",
             "compute %", "non-comp%", "overlap %", "comm ms", "GPU evts");
  for (const auto& r : ranks)
    fmt::print("  {:>5} {:>12.3f} {:>7.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>10.3f} {:>8}\n", r.rank,
               r.window.length_ns() * 1e-6, r.temporal.pct(r.temporal.idle_ns),
               r.temporal.pct(r.temporal.compute_ns), r.temporal.pct(r.temporal.non_compute_ns),
               r.comm_comp_overlap_pct(), r.communication_ns * 1e-6, r.gpu_events);
  fmt::print("  kernel types (% of GPU busy time, HTA states; measured):\n");
  for (const auto& r : ranks) {
    std::string line;
    for (int m = 1; m < 8; ++m)
      if (r.types.state_ns[m] > 0)
        line += fmt::format("  {} {:.2f}", analyze::state_name(m), r.types.state_pct(m));
    fmt::print("  {:>5}{}\n", r.rank, line);
    for (const auto& l : r.libraries)
      fmt::print("        {} kernels: {} ({:.3f} ms total)\n", analyze::to_string(l.library),
                 l.count, l.total_ns * 1e-6);
  }
  if (!ranks.empty()) {
    const auto& r = ranks.front();
    fmt::print("  top kernels of rank {} (measured):\n", r.rank);
    fmt::print("    {:<60} {:>13} {:>7} {:>11} {:>11}\n", "name", "type", "count", "total ms",
               "mean us");
    for (std::size_t k = 0; k < r.kernels.size() && static_cast<int>(k) < flags.top; ++k) {
      const auto& ks = r.kernels[k];
      fmt::print("    {:<60} {:>13} {:>7} {:>11.3f} {:>11.2f}\n", shorten(ks.name, 60),
                 analyze::to_string(ks.type), ks.count, ks.total_ns * 1e-6, ks.mean_ns() * 1e-3);
    }
  }
  if (!paths.empty()) {
    fmt::print("  critical path (replay; energy modelled on {}):\n", context.gpu);
    for (const auto& p : paths) {
      const auto& b = p.bound;
      const double len = static_cast<double>(std::max<std::int64_t>(b.total_ns(), 1));
      fmt::print(
          "  {:>5} whole path {:.3f} ms: compute {:.1f} %, communication {:.1f} %, host {:.1f} "
          "%, idle gap {:.1f} %; {:.3f} J (modelled)\n",
          p.rank, (p.end_ns - p.start_ns) * 1e-6, 100 * b.compute_ns / len,
          100 * b.communication_ns / len, 100 * b.host_ns / len, 100 * b.idle_gap_ns / len,
          p.energy_j);
      for (const auto& st : p.steps) {
        const auto& sb = st.bound;
        const double on = static_cast<double>(std::max<std::int64_t>(sb.total_ns(), 1));
        fmt::print(
            "        {} {:.3f} ms, {:.3f} ms on the path: compute {:.1f} %, communication {:.1f} "
            "%, host {:.1f} %, idle gap {:.1f} %; {:.3f} J (modelled)\n",
            st.step < 0 ? std::string("window") : fmt::format("step {}", st.step),
            (st.end_ns - st.start_ns) * 1e-6, sb.total_ns() * 1e-6, 100 * sb.compute_ns / on,
            100 * sb.communication_ns / on, 100 * sb.host_ns / on, 100 * sb.idle_gap_ns / on,
            st.energy_j);
      }
    }
  } else {
    fmt::print("  critical path: not available ({})\n", context.unavailable);
  }
  for (const auto& note : notes) fmt::print("  note: {}\n", note);
  fmt::print("  files         {}/: summary.json kernels.csv report.html\n",
             output->target().string());
  return 0;
}

}  // namespace

Action add_analyze_command(CLI::App& app) {
  auto flags = std::make_shared<AnalyzeFlags>();
  app.add_option("traces", flags->traces,
                 "Kineto trace files (JSON or gzip), directories of them, or a .tar.gz of ranks")
      ->required();
  app.add_option("--out", flags->out,
                 "Output directory: new, empty or an earlier powertrain output (default "
                 "powertrain-analyze)");
  app.add_option("--window", flags->window,
                 "steps (ProfilerStep spans), gpu-span (first to last GPU event, HTA's default; "
                 "default) or whole (first to last event)");
  add_option_with_aliases(app, "--top", {}, flags->top, "Kernels listed per rank (default 10)",
                          integer_in(1, 100'000));
  add_option_with_aliases(app, "--kernel-wait-us", {}, flags->kernel_wait_us,
                          "Gaps below this (us) with the next kernel already launched are "
                          "'kernel wait' (HTA's consecutive_kernel_delay; default 30)",
                          number_in(0.0, 1e9));
  app.add_option(
      "--gpu", flags->gpu,
      fmt::format("GPU type for the modelled energy along the critical path (default {})",
                  device::kDefaultGpu));
  app.add_flag("--no-critical-path", flags->no_critical_path,
               "Skip the replay (and the critical path)");
  add_force_flag(app, flags->force);
  add_input_limit_flag(app);
  app.add_flag("--quiet", flags->quiet, "No progress output");
  return [flags]() { return run_analyze(*flags); };
}

}  // namespace powertrain::cli
