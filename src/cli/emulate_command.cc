// `powertrain emulate`: run an unmodified CUDA program on emulated GPUs (launcher + interposer)
// and predict its step time, breakdown, memory and energy, or analyse traces of an earlier run
// (--traces). Parses flags, calls src/emulate and prints; nothing else.
#include <fmt/core.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/atomic_output.h"
#include "device/gpu.h"
#include "emulate/program_settings.h"
#include "report/emulation_report.h"

namespace powertrain::cli {
namespace {

struct EmulateFlags {
  emulate::ProgramSettings settings;
  bool quiet = false;
  bool force = false;
};

int run_emulate(const EmulateFlags& flags) {
  const char* command = "emulate";
  auto request = emulate::program_request(flags.settings);
  if (!request) return usage_error(command, request.error().message);
  request->progress = stderr_progress(command, flags.quiet);
  request->notice = stderr_progress(command, false);
  if (auto gpu = device::find_gpu(flags.settings.gpu); !gpu) {
    return fail(command, gpu.error().message);
  }

  auto output = core::AtomicOutputDirectory::create(flags.settings.out, output_policy(flags.force));
  if (!output) return fail(command, output.error().message);
  auto run = emulate::run_program(*request, output->staging());
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
  app.add_option("command", flags->settings.command, "Program and arguments, after --");
  app.add_option("--traces", flags->settings.traces,
                 "Analyse trace-*.jsonl files or directories of an earlier run instead of running");
  app.add_option("--out", flags->settings.out,
                 "Output directory: new, empty or an earlier powertrain output");
  add_force_flag(app, flags->force);
  add_input_limit_flag(app);
  app.add_option(
      "--gpu", flags->settings.gpu,
      fmt::format("Emulated GPU (catalog name; default {})", device::kDefaultEmulatedGpu));
  app.add_option("--gpus", flags->settings.gpus,
                 "GPUs of the job (default 1, or --nodes x --gpus-per-node); one process sees "
                 "them all unless --ranks is given")
      ->check(integer_in(1, 1'048'576));
  add_option_with_aliases(app, "--ranks", {"--processes", "--nproc"}, flags->settings.ranks,
                          "Processes to start (torchrun-style, RANK/WORLD_SIZE set; default 1, "
                          "or one per node); each drives --gpus / --ranks devices",
                          integer_in(1, 4096));
  app.add_option("--nodes", flags->settings.nodes, "Nodes (default: --gpus / --gpus-per-node)")
      ->check(integer_in(1, 100'000));
  app.add_option("--gpus-per-node", flags->settings.gpus_per_node,
                 "GPUs per node (default: all GPUs, at most 8)")
      ->check(integer_in(1, 1024));
  app.add_option("--devices-per-process", flags->settings.devices_per_process,
                 "Devices each process drives (older spelling of --ranks = GPUs / this)")
      ->check(integer_in(1, 1024));
  app.add_flag("--no-dedup", flags->settings.no_dedup,
               "Simulate every rank, not one per identical class");
  app.add_option("--kernel-table", flags->settings.kernel_table,
                 "CSV 'name,duration_us' of profiled kernels (takes precedence over the model)");
  app.add_flag("--keep-traces", flags->settings.keep_traces, "Keep the traces in OUT/traces");
  app.add_option("--interposer", flags->settings.interposer,
                 "Path of libpowertrain_cuda.so (default: next to this binary, or "
                 "$POWERTRAIN_INTERPOSER)");
  add_option_with_aliases(app, "--timeout-s", {"--timeout"}, flags->settings.timeout_s,
                          "Kill the processes after this many seconds (0 = no limit)",
                          number_in(0.0, 1e7));
  add_option_with_aliases(app, "--inter-node-bandwidth-gb-s", {"--inter-node-bandwidth"},
                          flags->settings.inter_node_gb_s,
                          "Per-GPU network bandwidth between nodes, GB/s (default 50 = 400 Gb/s)",
                          number_in(0.0, 1e6, true));
  add_option_with_aliases(app, "--max-host-gap-us", {"--max-host-gap"},
                          flags->settings.max_host_gap_us,
                          "Cap measured host gaps between calls at this many microseconds (0 = no "
                          "cap; removes the CPU machine's scheduling noise from the prediction)",
                          number_in(0.0, 1e9));
  app.add_option("--host-time", flags->settings.host_time,
                 "Host time between calls: 'measured' (as this machine ran the program; default) "
                 "or 'model' (API costs + --modelled-host-gap-us; independent of this machine)")
      ->check(CLI::IsMember({"measured", "model"}));
  app.add_option("--modelled-host-gap-us", flags->settings.modelled_host_gap_us,
                 "With --host-time model: host time between two calls of a thread, microseconds "
                 "(default 1)")
      ->check(number_in(0.0, 1e9));
  app.add_flag("--whole-trace", flags->settings.whole_trace,
               "One step = the whole trace (no search for repeated iterations)");
  app.add_flag("--quiet", flags->quiet, "No progress output");
  app.add_flag("--two-pass", flags->settings.two_pass,
               "Run the program twice: record, predict, then run it again with "
               "cudaEventElapsedTime answering the predicted device time (its printed timings "
               "become predictions)");
  return [flags]() { return run_emulate(*flags); };
}

}  // namespace powertrain::cli
