// The files `powertrain frontier` writes: frontier.csv, plans.csv, Zeus plan files, summary.json,
// the frontier plot and a Perfetto timeline.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "frontier/baselines.h"
#include "frontier/evaluate.h"
#include "frontier/problem.h"
#include "frontier/solver.h"

namespace powertrain::frontier {

/// Everything computed for one run, ready to be written.
struct FrontierRun {
  std::string profile_source;
  const PlanningProblem* problem = nullptr;
  const Frontier* frontier = nullptr;
  std::vector<RealizedPlan> realized;  // per point
  RealizedPlan baseline;               // all max clock, measured
  std::vector<StragglerOutcome> stragglers;
  std::optional<Baselines> baselines;  // ZeusGlobal, ZeusPerStage, EnvPipe (needs the profile)
  bool fastest_point_pinned = false;   // pin_fastest_point changed the fastest point
};

/// The straggler slowdowns summary.json reports (Perseus Table 4).
std::vector<double> default_straggler_slowdowns();

/// Builds realized plans, baseline and straggler outcomes, and the Zeus and EnvPipe baselines when
/// `profile` (the one `problem` was built from) is given.
FrontierRun analyze(const PlanningProblem& problem, const Frontier& frontier,
                    std::string profile_source, const Profile* profile = nullptr);

/// `time,energy,realized_time,realized_energy`, one row per point, slowest first (s, J).
std::string frontier_csv(const FrontierRun& run);

/// Compact plans: `point,gpu,slot,stage,instruction,microbatch,frequency_mhz`. Point 0 lists every
/// instruction; each later point lists only instructions whose clock changed.
std::string plans_csv(const FrontierRun& run);

/// Per GPU, (instruction name, MHz) in execution order, at a point.
std::vector<std::vector<std::pair<std::string, int>>> gpu_plans_at(
    const PlanningProblem& problem, const std::vector<int>& durations);

/// A `freqs_pipeline_%05d.py` file as Zeus's pipeline frequency optimizer reads it: a Python list
/// per GPU of (instruction, MHz) tuples in execution order, then comment lines with the costs.
std::string zeus_plan_py(const std::vector<std::vector<std::pair<std::string, int>>>& plan,
                         double planned_time_s, double planned_energy_j, double realized_time_s,
                         double realized_energy_j);

/// The same plan as JSON.
std::string plan_json(const std::vector<std::vector<std::pair<std::string, int>>>& plan,
                      std::size_t point, double planned_time_s, double planned_energy_j,
                      double realized_time_s, double realized_energy_j);

/// baselines.csv: `baseline,label,time,energy`, one row per baseline point (all max clock, then
/// ZeusGlobal, ZeusPerStage, EnvPipe), realized with measured clocks (s, J per iteration of one
/// pipeline). Only the header when the run has no baselines.
std::string baselines_csv(const FrontierRun& run);

/// The command summary's lines about baselines, one per baseline (ZeusGlobal and ZeusPerStage as
/// ranges over their points), each with Perseus's saving at the same time; "" without baselines.
std::string baselines_summary(const FrontierRun& run);

/// summary.json: T_min, T*, baseline, savings, straggler table, fits and solver statistics, and a
/// "baselines" object (each point's savings vs all max clock and Perseus's realized point at the
/// same time) when the run has baselines.
std::string summary_json(const FrontierRun& run);

/// frontier.svg: planned and realized frontiers with the all-max-clock baseline, and the
/// ZeusGlobal and ZeusPerStage curves and the EnvPipe point when the run has baselines.
std::string frontier_svg(const FrontierRun& run);

/// Chrome/Perfetto trace JSON of a point's realized timeline: one track per GPU, one slice per
/// instruction labelled with its clock.
std::string timeline_trace_json(const FrontierRun& run, std::size_t point);

/// The plan file name for a point, e.g. freqs_pipeline_00012.py.
std::string zeus_plan_filename(std::size_t point);

}  // namespace powertrain::frontier
