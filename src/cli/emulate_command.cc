// `powertrain emulate`: run an unmodified CUDA program on emulated GPUs (launcher + interposer)
// and predict its step time, breakdown, memory and energy, or analyse traces of an earlier run
// (--traces). Parses flags, calls src/emulate and prints; nothing else.
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/atomic_output.h"
#include "device/gpu.h"
#include "emulate/emulate.h"
#include "emulate/launcher.h"
#include "emulate/two_pass.h"
#include "report/emulation_report.h"

namespace powertrain::cli {
namespace {

namespace fs = std::filesystem;

struct EmulateFlags {
  std::vector<std::string> command;
  std::vector<std::string> traces;
  std::string out = "powertrain-emulate";
  std::string gpu = device::kDefaultEmulatedGpu;
  int gpus = 0;  // 0 = not given (emulate::LayoutRequest)
  int ranks = 0;
  int nodes = 0;
  int gpus_per_node = 0;
  int devices_per_process = 0;
  bool no_dedup = false;
  std::string kernel_table;
  bool keep_traces = false;
  std::string interposer;
  double timeout_s = 0.0;
  double inter_node_gb_s = 50.0;
  double max_host_gap_us = 0.0;
  bool whole_trace = false;
  bool quiet = false;
  bool force = false;
  bool two_pass = false;
  std::string host_time = "measured";
  double modelled_host_gap_us = 1.0;
};

std::string gib(std::int64_t bytes) {
  if (bytes < (std::int64_t{1} << 30)) {
    return fmt::format("{:.2f} MiB", static_cast<double>(bytes) / 1048576.0);
  }
  return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / 1073741824.0);
}

void print_result(const emulate::EmulationResult& r, const fs::path& out, bool kept_traces) {
  const std::int64_t capacity = static_cast<std::int64_t>(r.gpu.memory_gib * 1073741824.0);
  fmt::print(
      "powertrain emulate: {} process(es), {} GPU(s) of {} on {} node(s) x {} GPU(s); {} records; "
      "{} rank class(es) simulated{}\n",
      r.ranks.size(), r.gpu_count, r.gpu.name, r.nodes, r.gpus_per_node, r.records,
      r.classes.representative.size(), r.classes.enabled ? " (dedup)" : " (no dedup)");
  const bool detected = !r.ranks.empty() && r.ranks.front().steps_detected;
  fmt::print("  step time     {:.6f} s per step, predicted ({})\n", r.job_step_s,
             detected ? fmt::format("{} repeated iteration(s) found", r.ranks.front().steps)
                      : std::string("whole trace as one step"));
  fmt::print(
      "  GPU span      {:.6f} s from the first GPU task to the last (all steps), predicted\n",
      r.job_gpu_span_s);
  const emulate::HostCosts& hc = r.host_costs;
  if (hc.host_time_modelled()) {
    fmt::print(
        "  host time     modelled: API costs (launch {:.1f} us, ...) + {:.3f} us between calls; "
        "this machine's speed and load do not enter (--host-time model)\n",
        hc.launch_ns * 1e-3, hc.modelled_host_gap_ns * 1e-3);
  } else {
    fmt::print("  host time     measured: the gaps between calls as this machine ran them{}\n",
               hc.max_host_gap_ns > 0
                   ? fmt::format(", capped at {:.3f} us", hc.max_host_gap_ns * 1e-3)
                   : std::string());
  }
  const sim::Breakdown& b = r.job_breakdown;
  fmt::print(
      "  breakdown     compute {:.1f} % / communication {:.1f} % / overlapped {:.1f} % / other "
      "{:.1f} % of the step, predicted; GPU busy {:.1f} %\n",
      100 * b.exposed_compute, 100 * b.exposed_communication, 100 * b.overlapped, 100 * b.other,
      100 * r.job_gpu_utilization);
  fmt::print(
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
  fmt::print("  peak memory   {} of {} per GPU (rank {} device {}), recorded by the emulator\n",
             gib(peak), gib(capacity), peak_rank, peak_device);
  for (std::size_t i = 0; i < r.out_of_memory.size() && i < 8; ++i) {
    const auto& o = r.out_of_memory[i];
    fmt::print("  OUT OF MEMORY rank {} device {}: {} of {} bytes failed ({} in use) at {}\n",
               o.rank, o.device, o.api, o.bytes,
               o.used_bytes >= 0 ? gib(o.used_bytes) : std::string("?"), o.where);
  }
  if (r.out_of_memory.size() > 8) {
    fmt::print("  OUT OF MEMORY ... {} more in summary.json\n", r.out_of_memory.size() - 8);
  }
  for (const auto& [api, count] : r.unsupported) {
    fmt::print("  unsupported   {} called {} time(s): not emulated, returned an error\n", api,
               count);
  }
  for (const auto& [what, count] : r.misuse) {
    fmt::print("  misuse        {} ({} time(s))\n", what, count);
  }
  fmt::print("  {:>5} {:>5} {:>16} {:>25} {:>13} {:>11}\n", "rank", "class", "step s (pred.)",
             "comp/comm/ovl/other %", "J/step (mod.)", "peak GiB");
  const std::size_t shown = r.ranks.size() <= 32 ? r.ranks.size() : 16;
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& k = r.ranks[i];
    const std::int64_t rank_peak =
        k.peak_memory_bytes.empty()
            ? 0
            : *std::max_element(k.peak_memory_bytes.begin(), k.peak_memory_bytes.end());
    fmt::print(
        "  {:>5} {:>5} {:>16.6f} {:>6.1f}/{:>4.1f}/{:>4.1f}/{:>5.1f}   {:>13.3f} {:>11.2f}\n",
        k.rank, k.rank_class, k.step_s, 100 * k.breakdown.exposed_compute,
        100 * k.breakdown.exposed_communication, 100 * k.breakdown.overlapped,
        100 * k.breakdown.other, k.energy_j_per_step,
        static_cast<double>(rank_peak) / 1073741824.0);
  }
  if (shown < r.ranks.size())
    fmt::print("  ... {} more ranks in summary.json\n", r.ranks.size() - shown);
  std::int64_t warned = 0;
  for (const auto& w : r.warnings) warned += w.count;
  if (warned > 0) {
    fmt::print("  warnings      {} ({} kind(s); first: {}: {})\n", warned, r.warnings.size(),
               r.warnings.front().kind, r.warnings.front().example);
  }
  fmt::print("  files         {}/: summary.json emulated_trace.json (open in ui.perfetto.dev){}\n",
             out.string(), kept_traces ? " traces/" : "");
}

fs::path self_directory() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : exe.parent_path();
}

// The flag combinations CLI11 cannot check; empty when they are fine.
std::string check_mode(const EmulateFlags& flags) {
  if (flags.traces.empty() == flags.command.empty()) {
    return "give a program after -- (e.g. powertrain emulate --gpu h100 -- ./prog) or "
           "--traces DIR to analyse an earlier run, not both";
  }
  if (flags.two_pass && flags.command.empty()) {
    return "--two-pass runs a program twice: give one after --";
  }
  return {};
}

// The ranges CLI11 cannot check; empty when they are fine.
std::string check_ranges(const EmulateFlags& flags) {
  if (flags.timeout_s < 0 || !(flags.inter_node_gb_s > 0)) {
    return "--timeout-s must be >= 0 and --inter-node-bandwidth-gb-s > 0";
  }
  if (!(flags.max_host_gap_us >= 0.0) || flags.max_host_gap_us > 1e9) {
    return "--max-host-gap-us must be in [0, 1e9] microseconds";
  }
  return {};
}

emulate::EmulateOptions emulate_options(const EmulateFlags& flags, const emulate::Layout& layout) {
  emulate::EmulateOptions options;
  options.gpu = flags.gpu;
  if (!flags.command.empty() || flags.gpus > 0 || flags.nodes > 0 || flags.gpus_per_node > 0) {
    options.nodes = layout.nodes;
    options.gpus_per_node = layout.gpus_per_node;
  } else {
    options.nodes = 0;  // traces without a topology: as many nodes of 8 as their GPUs need
    options.gpus_per_node = 8;
  }
  options.dedup = !flags.no_dedup;
  options.kernel_table = flags.kernel_table;
  options.detect_steps = !flags.whole_trace;
  options.device_model.inter_node_bandwidth_gb_s = flags.inter_node_gb_s;
  options.host_costs.max_host_gap_ns =
      static_cast<std::int64_t>(std::llround(flags.max_host_gap_us * 1e3));
  if (flags.host_time == "model") {
    options.host_costs.modelled_host_gap_ns =
        static_cast<std::int64_t>(std::llround(flags.modelled_host_gap_us * 1e3));
  }
  return options;
}

// Prints each process that did not end cleanly; 1 when there was one, else 0.
int report_failed_processes(const emulate::LaunchResult& launched, const char* pass) {
  int exit_code = 0;
  for (const auto& p : launched.processes) {
    if (!p.ok()) {
      fmt::print(stderr, "emulate: {}rank {} (pid {}) ended with {}\n", pass, p.rank, p.pid,
                 p.describe());
      exit_code = 1;
    }
  }
  return exit_code;
}

// Keeps what a failed run recorded for a look at the failure (the staging dir is removed). Never
// over an existing path: the first free "<out>.traces[-N]".
void keep_failed_traces(const fs::path& run_dir, const std::string& out) {
  fs::path kept = fs::path(out).string() + ".traces";
  std::error_code ec;
  for (int n = 2; fs::exists(fs::symlink_status(kept, ec)) && n < 1000; ++n)
    kept = fs::path(out).string() + fmt::format(".traces-{}", n);
  fs::rename(run_dir, kept, ec);
  if (!ec) fmt::print(stderr, "emulate: traces kept in {}\n", kept.string());
}

// Pass 1 (or the only pass): runs the program under the interposer, its traces in `run_dir`.
// Returns the process exit summary (0 or 1), or the error; `launch` is kept for pass 2.
core::Result<int> run_program(const EmulateFlags& flags, const emulate::Layout& layout,
                              const fs::path& run_dir, emulate::LaunchOptions& launch) {
  auto interposer = emulate::find_interposer(flags.interposer, self_directory());
  if (!interposer) return interposer.error();
  launch.command = flags.command;
  launch.gpu = flags.gpu;
  launch.nodes = layout.nodes;
  launch.gpus_per_node = layout.gpus_per_node;
  launch.devices_per_process = layout.devices_per_process;
  launch.trace_dir = run_dir;
  launch.interposer = *interposer;
  launch.timeout_s = flags.timeout_s;
  if (!flags.quiet) {
    fmt::print(stderr, "emulate: starting {} of {}; interposer {}\n", layout.explanation, flags.gpu,
               *interposer);
  }
  if (flags.two_pass) {
    // The program's own output comes from the second pass (its timings are predictions); the
    // recording pass prints with host timings, so its output is held back.
    launch.on_line = [](int, bool, std::string_view) {};
    if (!flags.quiet) {
      fmt::print(stderr, "emulate: pass 1 of 2: recording (program output held back)\n");
    }
  }
  auto launched = emulate::launch(launch);
  if (!launched) return launched.error();
  const int exit_code = report_failed_processes(*launched, "");
  if (!flags.quiet) {
    fmt::print(stderr,
               "emulate: {} process(es) finished in {:.2f} s (wall clock of the emulated run)\n",
               launched->processes.size(), launched->wall_s);
  }
  return exit_code;
}

// Pass 2: the same program, its event timings answered from the prediction of pass 1. Returns the
// process exit summary (0 or 1), or the error.
core::Result<int> run_second_pass(const EmulateFlags& flags, const emulate::EmulationResult& result,
                                  const emulate::LaunchOptions& first,
                                  core::AtomicOutputDirectory& output) {
  const fs::path events_dir = output.staging() / "predicted_events";
  if (auto written = emulate::write_predicted_events(result, events_dir); !written) {
    return written.error();
  }
  emulate::LaunchOptions second = first;
  second.on_line = nullptr;
  second.trace_dir = output.staging() / "traces-pass2";
  second.event_times_dir = events_dir;
  if (!flags.quiet) {
    fmt::print(stderr,
               "emulate: pass 2 of 2: the program again; cudaEventElapsedTime reports the "
               "predicted device time of pass 1\n");
  }
  auto relaunched = emulate::launch(second);
  if (!relaunched) return relaunched.error();
  const int exit_code = report_failed_processes(*relaunched, "pass 2: ");
  std::error_code ec;
  fs::remove_all(second.trace_dir, ec);
  return exit_code;
}

int run_emulate(const EmulateFlags& flags) {
  const char* command = "emulate";
  if (const std::string problem = check_mode(flags); !problem.empty()) {
    return usage_error(command, problem);
  }
  emulate::LayoutRequest request;
  request.gpus = flags.gpus;
  request.ranks = flags.ranks;
  request.nodes = flags.nodes;
  request.gpus_per_node = flags.gpus_per_node;
  request.devices_per_process = flags.devices_per_process;
  auto layout = emulate::resolve_layout(request);
  if (!layout) return usage_error(command, layout.error().message);
  if (const std::string problem = check_ranges(flags); !problem.empty()) {
    return usage_error(command, problem);
  }
  const emulate::EmulateOptions options = emulate_options(flags, *layout);
  if (auto gpu = device::find_gpu(flags.gpu); !gpu) return fail(command, gpu.error().message);

  auto output = core::AtomicOutputDirectory::create(flags.out, output_policy(flags.force));
  if (!output) return fail(command, output.error().message);

  std::vector<std::string> trace_paths = flags.traces;
  fs::path run_dir;
  emulate::LaunchOptions launch_options;
  int exit_code = 0;
  if (!flags.command.empty()) {
    run_dir = output->staging() / "traces";
    auto ran = run_program(flags, *layout, run_dir, launch_options);
    if (!ran) return fail(command, ran.error().message);
    exit_code = *ran;
    trace_paths = {run_dir.string()};
  }
  if (!flags.quiet) fmt::print(stderr, "emulate: analysing traces ...\n");
  auto result = emulate::emulate_trace_paths(trace_paths, options);
  if (!result) {
    if (!run_dir.empty()) keep_failed_traces(run_dir, flags.out);
    return fail(command, result.error().message);
  }
  if (auto written = report::write_emulation_outputs(*result, *output); !written) {
    return fail(command, written.error().message);
  }
  if (flags.two_pass && !run_dir.empty()) {
    auto second = run_second_pass(flags, *result, launch_options, *output);
    if (!second) return fail(command, second.error().message);
    exit_code = std::max(exit_code, *second);
  }
  if (!run_dir.empty() && !flags.keep_traces) {
    std::error_code ec;
    fs::remove_all(run_dir, ec);
  }
  if (auto committed = output->commit(); !committed) {
    return fail(command, committed.error().message);
  }
  print_result(*result, output->target(), !run_dir.empty() && flags.keep_traces);
  if (exit_code != 0) {
    fmt::print(stderr,
               "powertrain emulate: some processes failed (see above); the prediction "
               "covers what they recorded\n");
  }
  return exit_code;
}

}  // namespace

Action add_emulate_command(CLI::App& app) {
  auto flags = std::make_shared<EmulateFlags>();
  app.add_option("command", flags->command, "Program and arguments, after --");
  app.add_option("--traces", flags->traces,
                 "Analyse trace-*.jsonl files or directories of an earlier run instead of running");
  app.add_option("--out", flags->out,
                 "Output directory: new, empty or an earlier powertrain output");
  add_force_flag(app, flags->force);
  add_input_limit_flag(app);
  app.add_option(
      "--gpu", flags->gpu,
      fmt::format("Emulated GPU (catalog name; default {})", device::kDefaultEmulatedGpu));
  app.add_option("--gpus", flags->gpus,
                 "GPUs of the job (default 1, or --nodes x --gpus-per-node); one process sees "
                 "them all unless --ranks is given")
      ->check(integer_in(1, 1'048'576));
  add_option_with_aliases(app, "--ranks", {"--processes", "--nproc"}, flags->ranks,
                          "Processes to start (torchrun-style, RANK/WORLD_SIZE set; default 1, "
                          "or one per node); each drives --gpus / --ranks devices",
                          integer_in(1, 4096));
  app.add_option("--nodes", flags->nodes, "Nodes (default: --gpus / --gpus-per-node)")
      ->check(integer_in(1, 100'000));
  app.add_option("--gpus-per-node", flags->gpus_per_node,
                 "GPUs per node (default: all GPUs, at most 8)")
      ->check(integer_in(1, 1024));
  app.add_option("--devices-per-process", flags->devices_per_process,
                 "Devices each process drives (older spelling of --ranks = GPUs / this)")
      ->check(integer_in(1, 1024));
  app.add_flag("--no-dedup", flags->no_dedup, "Simulate every rank, not one per identical class");
  app.add_option("--kernel-table", flags->kernel_table,
                 "CSV 'name,duration_us' of profiled kernels (takes precedence over the model)");
  app.add_flag("--keep-traces", flags->keep_traces, "Keep the traces in OUT/traces");
  app.add_option("--interposer", flags->interposer,
                 "Path of libpowertrain_cuda.so (default: next to this binary, or "
                 "$POWERTRAIN_INTERPOSER)");
  add_option_with_aliases(app, "--timeout-s", {"--timeout"}, flags->timeout_s,
                          "Kill the processes after this many seconds (0 = no limit)",
                          number_in(0.0, 1e7));
  add_option_with_aliases(app, "--inter-node-bandwidth-gb-s", {"--inter-node-bandwidth"},
                          flags->inter_node_gb_s,
                          "Per-GPU network bandwidth between nodes, GB/s (default 50 = 400 Gb/s)",
                          number_in(0.0, 1e6, true));
  add_option_with_aliases(app, "--max-host-gap-us", {"--max-host-gap"}, flags->max_host_gap_us,
                          "Cap measured host gaps between calls at this many microseconds (0 = no "
                          "cap; removes the CPU machine's scheduling noise from the prediction)",
                          number_in(0.0, 1e9));
  app.add_option("--host-time", flags->host_time,
                 "Host time between calls: 'measured' (as this machine ran the program; default) "
                 "or 'model' (API costs + --modelled-host-gap-us; independent of this machine)")
      ->check(CLI::IsMember({"measured", "model"}));
  app.add_option("--modelled-host-gap-us", flags->modelled_host_gap_us,
                 "With --host-time model: host time between two calls of a thread, microseconds "
                 "(default 1)")
      ->check(number_in(0.0, 1e9));
  app.add_flag("--whole-trace", flags->whole_trace,
               "One step = the whole trace (no search for repeated iterations)");
  app.add_flag("--quiet", flags->quiet, "No progress output");
  app.add_flag("--two-pass", flags->two_pass,
               "Run the program twice: record, predict, then run it again with "
               "cudaEventElapsedTime answering the predicted device time (its printed timings "
               "become predictions)");
  return [flags]() { return run_emulate(*flags); };
}

}  // namespace powertrain::cli
