// `powertrain plan`: a Perseus frequency plan straight from a pipeline-parallel Kineto trace
// (--trace) or the traces of a `powertrain emulate --keep-traces` run (--emulated): the trace is
// replayed, its GPU work grouped into 1F1B instructions, each instruction's time and energy at
// every clock modelled from its kernel mix (study/trace_plan.h), and the frontier solved and
// written like `powertrain frontier`.
#include <fmt/core.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/atomic_output.h"
#include "core/progress.h"
#include "emulate/emulate.h"
#include "graph/graph_builder.h"
#include "replay/replay.h"
#include "report/frontier_report.h"
#include "sim/metrics.h"
#include "study/frontier_run.h"
#include "study/trace_plan.h"

namespace powertrain::cli {
namespace {

namespace fs = std::filesystem;

struct PlanFlags {
  std::vector<std::string> traces;
  std::string emulated;
  std::string gpu = device::kDefaultGpu;
  double unit_time_s = 0.0;
  double p_blocking_w = -1.0;
  std::string kernel_table;
  double max_host_gap_us = 0.0;
  std::string out = "powertrain-out";
  bool force = false;
  bool quiet = false;
};

std::string instructions_csv(const study::TracePipeline& pipeline) {
  std::string csv =
      "stage,microbatch,instruction,start_s,time_s,matmul_s,memory_s,idle_s,receive_s\n";
  for (const study::TraceInstruction& i : pipeline.instructions)
    csv += fmt::format("{},{},{},{:.9f},{:.9f},{:.9f},{:.9f},{:.9f},{:.9f}\n", i.stage,
                       i.microbatch, pipeline::instruction_name(i.kind), i.start_s,
                       i.time_at_max_s(), i.matmul_s, i.memory_s, i.idle_s, i.receive_s);
  return csv;
}

std::string profile_csv(const profile::Profile& profile) {
  std::string csv = "stage,instruction,frequency,time,energy\n";
  for (const profile::InstructionProfile& e : profile.entries)
    for (const profile::MeasuredOption& o : e.options)
      csv += fmt::format("{},{},{},{:.9g},{:.9g}\n", e.stage, pipeline::instruction_name(e.kind),
                         o.frequency_mhz, o.time_s, o.energy_j);
  return csv;
}

// What the plan was built from and how its fastest point compares with the step (units in the
// field names).
std::string trace_plan_json(const study::TracePlan& plan, const std::string& step_basis,
                            double measured_step_s, const study::FrontierRun& run) {
  nlohmann::json doc;
  doc["stages"] = plan.pipeline.stages;
  doc["microbatches"] = plan.pipeline.microbatches;
  doc["instructions"] = plan.pipeline.instructions.size();
  doc["step_s"] = plan.replayed_step_s;
  doc["step_basis"] = step_basis;
  if (measured_step_s > 0.0) doc["measured_step_s"] = measured_step_s;
  doc["instruction_makespan_s"] = plan.pipeline.makespan_s;
  doc["outside_instructions_s"] = plan.outside_s;
  doc["planned_t_min_s"] = plan.t_min_s();
  doc["planned_t_min_error_pct"] = 100.0 * (plan.t_min_s() / plan.replayed_step_s - 1.0);
  doc["realized_t_min_s"] = run.realized.back().time_s;
  doc["unit_time_s"] = plan.problem.settings.unit_time_s;
  doc["frontier_points"] = plan.frontier.points.size();
  doc["basis"] =
      "instruction times at max clock from the timeline; other clocks and all energies modelled "
      "from the kernel mix";
  return doc.dump(2) + "\n";
}

// The graph and its replay: the timeline the instructions are read from.
struct Timeline {
  graph::ExecutionGraph graph;
  sim::ReplayResult replayed;
  std::string source;
  const char* step_basis = "replayed from the measured trace";
  double measured_step_s = -1.0;  // the trace's own step (--trace only)
};

// Replays --trace, or emulates the kept traces of --emulated.
core::Result<Timeline> read_timeline(const PlanFlags& flags, const device::GpuSpec& gpu) {
  const char* kCommand = "plan";
  Timeline timeline;
  if (!flags.traces.empty()) {
    auto traces = replay::read_traces(flags.traces, true, stderr_progress(kCommand, flags.quiet));
    if (!traces) return traces.error();
    auto built = graph::build_execution_graph(traces->ranks);
    if (!built) return built.error();
    timeline.graph = std::move(*built);
    timeline.replayed = replay::replay_graph(timeline.graph, gpu).result;
    timeline.measured_step_s = sim::metrics_of_input(timeline.graph).job_step_time_ns * 1e-9;
    timeline.source = flags.traces.size() == 1 ? flags.traces.front()
                                               : fmt::format("{} (+{} more)", flags.traces.front(),
                                                             flags.traces.size() - 1);
    return timeline;
  }
  const fs::path dir = fs::path(flags.emulated) / "traces";
  if (!fs::is_directory(dir))
    return core::Error{
        fmt::format("{}: no traces/ directory (run `powertrain emulate` with "
                    "--keep-traces)",
                    flags.emulated)};
  emulate::EmulateOptions options;
  options.gpu = gpu.name;
  options.dedup = false;  // every stage differs; simulate them all
  options.kernel_table = flags.kernel_table;
  options.host_costs.max_host_gap_ns =
      static_cast<std::int64_t>(std::llround(flags.max_host_gap_us * 1e3));
  auto emulated = emulate::emulate_trace_paths({dir.string()}, options);
  if (!emulated) return emulated.error();
  timeline.graph = std::move(emulated->graph);
  timeline.replayed = std::move(emulated->replay);
  timeline.source = dir.string();
  timeline.step_basis = "predicted by the emulation";
  return timeline;
}

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

  auto timeline = read_timeline(flags, *gpu);
  if (!timeline) return fail(kCommand, timeline.error().message);
  const graph::ExecutionGraph& graph = timeline->graph;
  const sim::ReplayResult& replayed = timeline->replayed;
  const std::string& source = timeline->source;
  const char* step_basis = timeline->step_basis;
  const double measured_step_s = timeline->measured_step_s;
  if (replayed.outcome != sim::ReplayOutcome::kComplete)
    return fail(kCommand, "the replay of the trace did not complete; cannot plan from it");
  const double step_s = sim::metrics_of_replay(graph, replayed).job_step_time_ns * 1e-9;

  study::TracePlanOptions options;
  options.unit_time_s = flags.unit_time_s;
  options.p_blocking_w = flags.p_blocking_w;
  core::ProgressLine progress("planning", "tau units from T* toward T_min", !flags.quiet);
  options.solver.progress = [&progress](long long done, long long total) {
    progress.update(done, total);
  };
  auto plan = study::plan_from_timeline(graph, replayed.start_ns, replayed.end_ns, step_s, *gpu,
                                        source, options);
  progress.finish();
  if (!plan) return fail(kCommand, fmt::format("{}: {}", source, plan.error().message));

  auto output = core::AtomicOutputDirectory::create(flags.out, output_policy(flags.force));
  if (!output) return fail(kCommand, output.error().message);
  study::FrontierRun run = study::analyze(plan->problem, plan->frontier, source, &plan->profile);
  run.fastest_point_pinned = plan->fastest_point_pinned;
  const auto& points = plan->frontier.points;
  const std::size_t last = points.size() - 1;
  const double tau = plan->problem.settings.unit_time_s;
  std::vector<report::OutputFile> files = report::frontier_files(run, last);
  files.emplace_back("instructions.csv", instructions_csv(plan->pipeline));
  files.emplace_back("profile.csv", (profile_csv)(plan->profile));  // ours, not ADL's
  files.emplace_back("trace_plan.json", trace_plan_json(*plan, step_basis, measured_step_s, run));
  for (std::size_t point : {std::size_t{0}, last}) {
    for (auto& file : report::plan_files(run, point)) files.push_back(std::move(file));
    if (last == 0) break;
  }
  for (const auto& [name, contents] : files)
    if (auto written = output->write_file(name, contents); !written)
      return fail(kCommand, written.error().message);
  if (auto committed = output->commit(); !committed)
    return fail(kCommand, committed.error().message);

  const double t_min = plan->t_min_s();
  const double t_star = points.front().time_units * tau;
  fmt::print("powertrain plan: {} stages x {} microbatches (1F1B found in the trace), {} ({})\n",
             plan->pipeline.stages, plan->pipeline.microbatches, gpu->name,
             gpu->calibrated ? "calibrated model" : "spec-derived model");
  fmt::print("  source        {}\n", source);
  fmt::print("  step          {:.6f} s ({})\n", step_s, step_basis);
  if (measured_step_s > 0.0)
    fmt::print("                {:.6f} s measured in the trace (replay {:+.3f} %)\n",
               measured_step_s, 100.0 * (step_s / measured_step_s - 1.0));
  fmt::print(
      "  instructions  {} found; makespan {:.6f} s; {:.6f} s outside them kept constant "
      "(host/non-pipeline time, as in the trace)\n",
      plan->pipeline.instructions.size(), plan->pipeline.makespan_s, plan->outside_s);
  fmt::print(
      "  model         per-instruction time/energy at {} clocks modelled from the trace's kernel "
      "mix: GEMM/attention time x f_max/f, memory-bound, idle and transfer time as in the "
      "trace\n",
      gpu->clocks_mhz.size());
  fmt::print("  tau           {:.4g} s (time quantum), P_blocking = {} W\n", tau,
             plan->problem.settings.p_blocking_w);
  fmt::print("  T_min         {:.6f} s planned (all max clock, modelled): {:+.3f} % vs the step\n",
             t_min, 100.0 * (t_min / step_s - 1.0));
  fmt::print("  T*            {:.6f} s planned (least energy, modelled)\n", t_star);
  fmt::print(
      "  energy        {:.3f} J at T_min .. {:.3f} J at T* per iteration (planned, "
      "modelled; {} frontier points)\n",
      points.back().energy_j, points.front().energy_j, points.size());
  if (points.size() == 1) {
    fmt::print(
        "  note          one point: no instruction's time depends on the clock (no GEMM/attention-"
        "class kernel names), so every instruction runs at its least-energy clock\n");
  }
  fmt::print("  baseline      all max clock: {:.6f} s, {:.3f} J per iteration (modelled)\n",
             run.baseline.time_s, run.baseline.energy_j);
  fmt::print(
      "  files         {}/: frontier.csv plans.csv summary.json baselines.csv frontier.svg "
      "timeline_{:05d}.json instructions.csv profile.csv trace_plan.json, plans of T* and T_min\n",
      output->target().string(), last);
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
  app.add_option("--out", flags->out,
                 "Output directory: new, empty or an earlier powertrain output (default "
                 "powertrain-out)");
  add_force_flag(app, flags->force);
  add_input_limit_flag(app);
  app.add_flag("--quiet", flags->quiet, "No progress output");
  return [flags]() { return run_plan(*flags); };
}

}  // namespace powertrain::cli
