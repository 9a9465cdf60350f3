// `powertrain replay` and `powertrain whatif`: replay Kineto traces through the execution graph
// (Lumos), report step time, breakdown, utilization and modelled energy, optionally after what-if
// changes.
#include <fmt/core.h>

#include <chrono>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/atomic_output.h"
#include "device/gpu.h"
#include "replay/replay_settings.h"
#include "report/replay_report.h"

namespace powertrain::cli {
namespace {

struct ReplayFlags {
  replay::ReplaySettings settings;
  std::string out = "powertrain-replay";
  bool quiet = false;
  bool force = false;
  bool strict = false;  // exit non-zero when the replay does not reproduce the trace
};

int run_replay(const ReplayFlags& flags, bool what_if) {
  const char* command = what_if ? "whatif" : "replay";
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  const replay::ReplaySettings& settings = flags.settings;
  auto options = replay::replay_options(settings, what_if);
  if (!options) return usage_error(command, options.error().message);
  auto gpu = device::find_gpu(settings.gpu);
  if (!gpu) return fail(command, gpu.error().message);
  auto output = core::AtomicOutputDirectory::create(flags.out, output_policy(flags.force));
  if (!output) return fail(command, output.error().message);

  options->gpu = *gpu;
  const replay::Progress progress = stderr_progress(command, flags.quiet);
  auto run = replay::replay(settings.traces, *options, progress);
  if (!run) return fail(command, run.error().message);

  const report::ReplayRequest request{.command = command,
                                      .traces = settings.traces,
                                      .scale_texts = settings.scales,
                                      .data_parallel = settings.data_parallel,
                                      .hidden_ratio = settings.hidden_ratio,
                                      .restages = settings.restages()};
  if (auto written = report::write_replay(*run, request, *output); !written)
    return fail(command, written.error().message);
  if (auto committed = output->commit(); !committed)
    return fail(command, committed.error().message);
  const double total_s = std::chrono::duration<double>(Clock::now() - started).count();
  fmt::print("{}", report::replay_console(*run, request, total_s, output->target()));
  return flags.strict && !run->verdict.faithful ? 3 : 0;
}

void add_flags(CLI::App& app, ReplayFlags& flags, bool what_if) {
  app.add_option("traces", flags.settings.traces,
                 "Kineto trace files (JSON or gzip), directories of them, or a .tar.gz of ranks")
      ->required();
  app.add_option("--out", flags.out,
                 "Output directory: new, empty or an earlier powertrain output (default "
                 "powertrain-replay)");
  add_force_flag(app, flags.force);
  add_input_limit_flag(app);
  app.add_option("--gpu", flags.settings.gpu,
                 fmt::format("GPU type for the modelled energy (default {})", device::kDefaultGpu));
  app.add_option("--scale", flags.settings.scales,
                 what_if ? "CLASS=FACTOR, repeatable: all, gpu, cpu, matmul, memory, collective"
                         : "Optional what-if: CLASS=FACTOR (as in `powertrain whatif`)");
  add_option_with_aliases(app, "--bus-bandwidth-gb-s", {"--bus-bandwidth"},
                          flags.settings.bus_bandwidth_gb_s,
                          "Collectives take latency + bytes / this bus bandwidth (GB/s) instead "
                          "of the shortest measured duration",
                          number_in(0.0, 1e6, true));
  add_option_with_aliases(
      app, "--collective-latency-s", {"--collective-latency"}, flags.settings.collective_latency_s,
      "Latency per collective with --bus-bandwidth-gb-s, s", number_in(0.0, 1e3));
  app.add_flag("--quiet", flags.quiet, "No progress output");
  app.add_flag("--strict", flags.strict,
               "Exit with status 3 when the replay does not reproduce the trace");
  if (!what_if) return;
  add_option_with_aliases(app, "--pp", {"--stages"}, flags.settings.pipeline_stages,
                          "Re-stage to this many pipeline stages (layers found in the trace, 1F1B "
                          "order regenerated, send/recv inserted)",
                          integer_in(1, 100'000));
  add_option_with_aliases(app, "--microbatches", {}, flags.settings.microbatches,
                          "Microbatches of the re-staged pipeline", integer_in(1, 1'000'000));
  add_option_with_aliases(app, "--layers", {}, flags.settings.layers,
                          "Number of layers of the re-staged model", integer_in(1, 100'000));
  add_option_with_aliases(app, "--input-microbatches", {}, flags.settings.input_microbatches,
                          "Microbatches in the input (default: from its send/recv pairs, or 1 "
                          "for one rank)",
                          integer_in(1, 1'000'000));
  add_option_with_aliases(app, "--p2p-s", {}, flags.settings.p2p_s,
                          "Seconds per stage-to-stage transfer when re-staging (default: the "
                          "input's measured median, 0 without)",
                          number_in(0.0, 1e3));
  add_option_with_aliases(app, "--dp", {}, flags.settings.data_parallel,
                          "Data-parallel degree: collectives re-estimated with ring bus factors",
                          integer_in(1, 10'000'000));
  add_option_with_aliases(app, "--hidden-ratio", {}, flags.settings.hidden_ratio,
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
