// `powertrain analyze`: HTA-style trace analysis of Kineto traces (temporal and kernel-type
// breakdowns, overlap, streams, communication libraries) plus the replay's critical path per step,
// written as summary.json, kernels.csv and a self-contained report.html.
#include <fmt/core.h>

#include <chrono>

#include "analyze/analysis_run.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "core/atomic_output.h"
#include "device/gpu.h"
#include "report/analysis_report.h"

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
  bool strict = false;  // exit non-zero when the replay does not reproduce the trace
};

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

  analyze::AnalysisRequest request;
  request.traces = flags.traces;
  request.options.window = *window;
  request.options.consecutive_kernel_delay_ns =
      static_cast<std::int64_t>(flags.kernel_wait_us * 1e3);
  request.gpu = *gpu;
  request.critical_path = !flags.no_critical_path;
  auto run = analyze::analyze_traces(request, stderr_progress(command, flags.quiet));
  if (!run) return fail(command, run.error().message);

  const report::AnalysisEcho echo{flags.traces, flags.window, flags.kernel_wait_us, flags.top};
  if (auto w = report::write_analysis(*run, echo, *output); !w)
    return fail(command, w.error().message);
  if (auto c = output->commit(); !c) return fail(command, c.error().message);
  const double total_s = std::chrono::duration<double>(Clock::now() - started).count();
  fmt::print("{}", report::analysis_console(*run, echo, total_s, output->target()));
  return flags.strict && run->verdict && !run->verdict->faithful ? 3 : 0;
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
  app.add_flag("--strict", flags->strict,
               "Exit with status 3 when the replay behind the critical path does not reproduce "
               "the trace");
  add_force_flag(app, flags->force);
  add_input_limit_flag(app);
  app.add_flag("--quiet", flags->quiet, "No progress output");
  return [flags]() { return run_analyze(*flags); };
}

}  // namespace powertrain::cli
