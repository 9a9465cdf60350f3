// `powertrain replay` and `powertrain whatif`: replay Kineto traces through the execution graph
// (Lumos), report step time, breakdown, utilization and modelled energy, optionally after what-if
// changes.
#include <fmt/core.h>

#include <chrono>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/atomic_output.h"
#include "device/gpu.h"
#include "replay/replay.h"
#include "report/replay_report.h"
#include "whatif/whatif.h"

namespace powertrain::cli {
namespace {

struct ReplayFlags {
  std::vector<std::string> traces;
  std::string out = "powertrain-replay";
  std::string gpu = device::kDefaultGpu;
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

int run_replay(const ReplayFlags& flags, bool what_if) {
  const char* command = what_if ? "whatif" : "replay";
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  if (flags.traces.empty())
    return usage_error(command, "give one or more trace files or directories");
  if (what_if && !flags.changes_anything())
    return usage_error(
        command,
        "give at least one change: --scale CLASS=FACTOR, --pp, --microbatches, --layers, "
        "--dp or --hidden-ratio");
  if (flags.data_parallel > 0 && flags.restages())
    return usage_error(
        command,
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
  replay::Options options;
  for (const std::string& text : flags.scales) {
    auto scaling = whatif::parse_duration_scaling(text);
    if (!scaling) return usage_error(command, scaling.error().message);
    options.scalings.push_back(*scaling);
  }
  if (flags.bus_bandwidth_gb_s < 0.0 || flags.collective_latency_s < 0.0)
    return usage_error(command,
                       "--bus-bandwidth-gb-s and --collective-latency-s must not be negative");
  auto gpu = device::find_gpu(flags.gpu);
  if (!gpu) return fail(command, gpu.error().message);
  auto output = core::AtomicOutputDirectory::create(flags.out, output_policy(flags.force));
  if (!output) return fail(command, output.error().message);

  options.gpu = *gpu;
  if (flags.bus_bandwidth_gb_s > 0.0) {
    options.replay.collective_time = sim::ReplayOptions::CollectiveTime::kBandwidthLatency;
    options.replay.bus_bandwidth_gb_s = flags.bus_bandwidth_gb_s;
    options.replay.collective_latency_s = flags.collective_latency_s;
  }
  options.data_parallel = flags.data_parallel;
  options.hidden_ratio = flags.hidden_ratio;
  options.restage = {.stages = flags.pipeline_stages,
                     .microbatches = flags.microbatches,
                     .layers = flags.layers,
                     .p2p_s = flags.p2p_s};
  options.input_microbatches = flags.input_microbatches;
  const replay::Progress progress = stderr_progress(command, flags.quiet);
  auto run = replay::replay(flags.traces, options, progress);
  if (!run) return fail(command, run.error().message);

  const report::ReplayRequest request{.command = command,
                                      .traces = flags.traces,
                                      .scale_texts = flags.scales,
                                      .data_parallel = flags.data_parallel,
                                      .hidden_ratio = flags.hidden_ratio,
                                      .restages = flags.restages()};
  if (auto written = report::write_replay(*run, request, *output); !written)
    return fail(command, written.error().message);
  if (auto committed = output->commit(); !committed)
    return fail(command, committed.error().message);
  const double total_s = std::chrono::duration<double>(Clock::now() - started).count();
  fmt::print("{}", report::replay_console(*run, request, total_s, output->target()));
  return flags.strict && !run->verdict.faithful ? 3 : 0;
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
  app.add_option("--gpu", flags.gpu,
                 fmt::format("GPU type for the modelled energy (default {})", device::kDefaultGpu));
  app.add_option("--scale", flags.scales,
                 what_if ? "CLASS=FACTOR, repeatable: all, gpu, cpu, matmul, memory, collective"
                         : "Optional what-if: CLASS=FACTOR (as in `powertrain whatif`)");
  add_option_with_aliases(app, "--bus-bandwidth-gb-s", {"--bus-bandwidth"},
                          flags.bus_bandwidth_gb_s,
                          "Collectives take latency + bytes / this bus bandwidth (GB/s) instead "
                          "of the shortest measured duration",
                          number_in(0.0, 1e6, true));
  add_option_with_aliases(
      app, "--collective-latency-s", {"--collective-latency"}, flags.collective_latency_s,
      "Latency per collective with --bus-bandwidth-gb-s, s", number_in(0.0, 1e3));
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
