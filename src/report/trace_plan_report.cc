#include "report/trace_plan_report.h"

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "profile/model_profile.h"

namespace powertrain::report {
namespace {

std::string instructions_csv(const study::TracePipeline& pipeline) {
  std::string csv =
      "stage,microbatch,instruction,start_s,time_s,matmul_s,memory_s,idle_s,receive_s\n";
  for (const study::TraceInstruction& i : pipeline.instructions)
    csv += fmt::format("{},{},{},{:.9f},{:.9f},{:.9f},{:.9f},{:.9f},{:.9f}\n", i.stage,
                       i.microbatch, pipeline::instruction_name(i.kind), i.start_s,
                       i.time_at_max_s(), i.matmul_s, i.memory_s, i.idle_s, i.receive_s);
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

}  // namespace

std::vector<OutputFile> trace_plan_files(const study::TracePlanRun& traced,
                                         const study::FrontierRun& run) {
  const study::TracePlan& plan = traced.plan;
  const std::size_t last = plan.frontier.points.size() - 1;
  std::vector<OutputFile> files = frontier_files(run, last);
  files.emplace_back("instructions.csv", instructions_csv(plan.pipeline));
  files.emplace_back("profile.csv", profile::profile_csv(plan.profile));
  files.emplace_back("trace_plan.json",
                     trace_plan_json(plan, traced.step_basis, traced.measured_step_s, run));
  for (std::size_t point : {std::size_t{0}, last}) {
    for (auto& file : plan_files(run, point)) files.push_back(std::move(file));
    if (last == 0) break;
  }
  return files;
}

void print_trace_plan_summary(std::FILE* to, const study::TracePlanRun& traced,
                              const device::GpuSpec& gpu, const study::FrontierRun& run,
                              const std::string& directory) {
  const study::TracePlan& plan = traced.plan;
  const auto& points = plan.frontier.points;
  const std::size_t last = points.size() - 1;
  const double tau = plan.problem.settings.unit_time_s;
  const std::string& source = traced.source;
  const char* step_basis = traced.step_basis;
  const double measured_step_s = traced.measured_step_s;
  const double step_s = traced.step_s;
  const double t_min = plan.t_min_s();
  const double t_star = points.front().time_units * tau;
  fmt::print(to,
             "powertrain plan: {} stages x {} microbatches (1F1B found in the trace), {} ({})\n",
             plan.pipeline.stages, plan.pipeline.microbatches, gpu.name,
             gpu.calibrated ? "calibrated model" : "spec-derived model");
  fmt::print(to, "  source        {}\n", source);
  fmt::print(to, "  step          {:.6f} s ({})\n", step_s, step_basis);
  if (measured_step_s > 0.0)
    fmt::print(to, "                {:.6f} s measured in the trace (replay {:+.3f} %)\n",
               measured_step_s, 100.0 * (step_s / measured_step_s - 1.0));
  fmt::print(to,
             "  instructions  {} found; makespan {:.6f} s; {:.6f} s outside them kept constant "
             "(host/non-pipeline time, as in the trace)\n",
             plan.pipeline.instructions.size(), plan.pipeline.makespan_s, plan.outside_s);
  fmt::print(
      to,
      "  model         per-instruction time/energy at {} clocks modelled from the trace's kernel "
      "mix: GEMM/attention time x f_max/f, memory-bound, idle and transfer time as in the "
      "trace\n",
      gpu.clocks_mhz.size());
  fmt::print(to, "  tau           {:.4g} s (time quantum), P_blocking = {} W\n", tau,
             plan.problem.settings.p_blocking_w);
  fmt::print(to,
             "  T_min         {:.6f} s planned (all max clock, modelled): {:+.3f} % vs the step\n",
             t_min, 100.0 * (t_min / step_s - 1.0));
  fmt::print(to, "  T*            {:.6f} s planned (least energy, modelled)\n", t_star);
  fmt::print(to,
             "  energy        {:.3f} J at T_min .. {:.3f} J at T* per iteration (planned, "
             "modelled; {} frontier points)\n",
             points.back().energy_j, points.front().energy_j, points.size());
  if (points.size() == 1) {
    fmt::print(
        to,
        "  note          one point: no instruction's time depends on the clock (no GEMM/attention-"
        "class kernel names), so every instruction runs at its least-energy clock\n");
  }
  fmt::print(to, "  baseline      all max clock: {:.6f} s, {:.3f} J per iteration (modelled)\n",
             run.baseline.time_s, run.baseline.energy_j);
  fmt::print(
      to,
      "  files         {}/: frontier.csv plans.csv summary.json baselines.csv frontier.svg "
      "timeline_{:05d}.json instructions.csv profile.csv trace_plan.json, plans of T* and T_min\n",
      directory, last);
}

}  // namespace powertrain::report
