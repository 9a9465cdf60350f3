// `powertrain plan`: a Perseus frequency plan straight from a pipeline-parallel Kineto trace
// (--trace) or the traces of a `powertrain emulate --keep-traces` run (--emulated): the trace is
// replayed, its GPU work grouped into 1F1B instructions, each instruction's time and energy at
// every clock modelled from its kernel mix (study/trace_plan.h), and the frontier solved and
// written like `powertrain frontier`.
#include <fmt/core.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/atomic_output.h"
#include "core/progress.h"
#include "report/trace_plan_report.h"
#include "study/frontier_run.h"
#include "study/trace_plan_run.h"

namespace powertrain::cli {
namespace {

struct PlanFlags {
  std::vector<std::string> traces;
  std::string emulated;
  std::string gpu = device::kDefaultGpu;
  double unit_time_s = 0.0;
  double p_blocking_w = -1.0;
  std::string kernel_table;
  double max_host_gap_us = 0.0;
  std::string host_time = "measured";
  double modelled_host_gap_us = 1.0;
  std::string out = "powertrain-out";
  bool force = false;
  bool quiet = false;
};

int run_plan(const PlanFlags& flags) {
  const char* kCommand = "plan";
  if (flags.traces.empty() == flags.emulated.empty())
    return usage_error(kCommand, "give either --trace PATH... or --emulated OUTDIR");
  if (!(flags.max_host_gap_us >= 0.0))
    return usage_error(kCommand, "--max-host-gap-us: expected a number >= 0");
  auto gpu = device::find_gpu(flags.gpu);
  if (!gpu) return usage_error(kCommand, fmt::format("--gpu: {}", gpu.error().message));
  if (auto checked = core::check_output_directory(flags.out, output_policy(flags.force)); !checked)
    return fail(kCommand, checked.error().message);

  study::TracePlanRequest request;
  request.traces = flags.traces;
  request.emulated = flags.emulated;
  request.kernel_table = flags.kernel_table;
  request.max_host_gap_us = flags.max_host_gap_us;
  if (flags.host_time == "model") request.modelled_host_gap_us = flags.modelled_host_gap_us;
  request.progress = stderr_progress(kCommand, flags.quiet);
  request.options.unit_time_s = flags.unit_time_s;
  request.options.p_blocking_w = flags.p_blocking_w;
  core::ProgressLine progress("planning", "tau units from T* toward T_min", !flags.quiet);
  request.options.solver.progress = [&progress](long long done, long long total) {
    progress.update(done, total);
  };
  auto traced = study::plan_from_traces(request, *gpu);
  progress.finish();
  if (!traced) return fail(kCommand, traced.error().message);

  auto output = core::AtomicOutputDirectory::create(flags.out, output_policy(flags.force));
  if (!output) return fail(kCommand, output.error().message);
  const study::TracePlan& plan = traced->plan;
  study::FrontierRun run =
      study::analyze(plan.problem, plan.frontier, traced->source, &plan.profile);
  run.fastest_point_pinned = plan.fastest_point_pinned;
  for (const auto& [name, contents] : report::trace_plan_files(*traced, run))
    if (auto written = output->write_file(name, contents); !written)
      return fail(kCommand, written.error().message);
  if (auto committed = output->commit(); !committed)
    return fail(kCommand, committed.error().message);
  report::print_trace_plan_summary(stdout, *traced, *gpu, run, output->target().string());
  return 0;
}

}  // namespace

Action add_plan_command(CLI::App& app) {
  auto flags = std::make_shared<PlanFlags>();
  app.add_option("--trace", flags->traces,
                 "Kineto trace files or directories of a pipeline-parallel run (one rank per "
                 "stage)");
  app.add_option("--emulated", flags->emulated,
                 "Output directory of `powertrain emulate --keep-traces` (reads OUTDIR/traces)");
  app.add_option("--gpu", flags->gpu,
                 fmt::format("GPU to plan for (catalog name, default {})", device::kDefaultGpu));
  add_option_with_aliases(app, "--unit-time-s", {"--unit-time"}, flags->unit_time_s,
                          "Time quantum tau in seconds (default: step / 4000)",
                          number_in(0.0, 3600.0, true));
  add_option_with_aliases(app, "--p-blocking-w", {"--p-blocking"}, flags->p_blocking_w,
                          "Power of a GPU blocked on P2P communication, W (default: the GPU's)",
                          number_in(0.0, 1e5));
  app.add_option("--kernel-table", flags->kernel_table,
                 "With --emulated: CSV name,duration_us of profiled kernels (as for emulate)");
  add_option_with_aliases(app, "--max-host-gap-us", {}, flags->max_host_gap_us,
                          "With --emulated: cap on host gaps between calls, us (as for emulate)",
                          number_in(0.0, 1e9));
  app.add_option("--host-time", flags->host_time,
                 "With --emulated: host time between calls, 'measured' (default) or 'model' "
                 "(--modelled-host-gap-us; as for emulate)")
      ->check(CLI::IsMember({"measured", "model"}));
  app.add_option("--modelled-host-gap-us", flags->modelled_host_gap_us,
                 "With --host-time model: host time between two calls of a thread, us (default 1)")
      ->check(number_in(0.0, 1e9));
  app.add_option("--out", flags->out,
                 "Output directory: new, empty or an earlier powertrain output (default "
                 "powertrain-out)");
  add_force_flag(app, flags->force);
  add_input_limit_flag(app);
  app.add_flag("--quiet", flags->quiet, "No progress output");
  return [flags]() { return run_plan(*flags); };
}

}  // namespace powertrain::cli
