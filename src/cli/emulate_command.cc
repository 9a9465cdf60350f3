// `powertrain emulate`: run an unmodified CUDA program on emulated GPUs (launcher + interposer)
// and predict its step time, breakdown, memory and energy, or analyse traces of an earlier run
// (--traces). Parses flags, calls src/emulate and prints; nothing else.
#include <fmt/core.h>

#include <cmath>
#include <filesystem>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/atomic_output.h"
#include "device/gpu.h"
#include "emulate/emulate.h"
#include "emulate/launcher.h"
#include "emulate/program_run.h"
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

int run_emulate(const EmulateFlags& flags) {
  const char* command = "emulate";
  if (const std::string problem = check_mode(flags); !problem.empty()) {
    return usage_error(command, problem);
  }
  emulate::LayoutRequest layout_request;
  layout_request.gpus = flags.gpus;
  layout_request.ranks = flags.ranks;
  layout_request.nodes = flags.nodes;
  layout_request.gpus_per_node = flags.gpus_per_node;
  layout_request.devices_per_process = flags.devices_per_process;
  auto layout = emulate::resolve_layout(layout_request);
  if (!layout) return usage_error(command, layout.error().message);
  if (const std::string problem = check_ranges(flags); !problem.empty()) {
    return usage_error(command, problem);
  }
  emulate::ProgramRunRequest request{.command = flags.command,
                                     .traces = flags.traces,
                                     .layout = *layout,
                                     .options = emulate_options(flags, *layout),
                                     .interposer = flags.interposer,
                                     .interposer_near = self_directory(),
                                     .timeout_s = flags.timeout_s,
                                     .two_pass = flags.two_pass,
                                     .keep_traces = flags.keep_traces,
                                     .out = flags.out,
                                     .progress = stderr_progress(command, flags.quiet),
                                     .notice = stderr_progress(command, false)};
  if (auto gpu = device::find_gpu(flags.gpu); !gpu) return fail(command, gpu.error().message);

  auto output = core::AtomicOutputDirectory::create(flags.out, output_policy(flags.force));
  if (!output) return fail(command, output.error().message);
  auto run = emulate::run_program(request, output->staging());
  if (!run) return fail(command, run.error().message);
  if (auto written = report::write_emulation_outputs(run->result, *output); !written) {
    return fail(command, written.error().message);
  }
  if (auto committed = output->commit(); !committed) {
    return fail(command, committed.error().message);
  }
  report::print_emulation_summary(stdout, run->result, output->target(), run->kept_traces);
  if (run->exit_code != 0) {
    fmt::print(stderr,
               "powertrain emulate: some processes failed (see above); the prediction "
               "covers what they recorded\n");
  }
  return run->exit_code;
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
