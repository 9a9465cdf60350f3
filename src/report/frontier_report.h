// The files `powertrain frontier` writes: frontier.csv, plans.csv, Zeus plan files, summary.json,
// the frontier plot and a Perfetto timeline.
#pragma once

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "frontier/evaluate.h"
#include "frontier/problem.h"
#include "frontier/solver.h"
#include "study/frontier_inputs.h"
#include "study/frontier_run.h"

namespace powertrain::report {

/// `time,energy,realized_time,realized_energy`, one row per point, slowest first (s, J).
std::string frontier_csv(const study::FrontierRun& run);

/// Compact plans: `point,gpu,slot,stage,instruction,microbatch,frequency_mhz`. Point 0 lists every
/// instruction; each later point lists only instructions whose clock changed.
std::string plans_csv(const study::FrontierRun& run);

/// Per GPU, (instruction name, MHz) in execution order, at a point.
std::vector<std::vector<std::pair<std::string, int>>> gpu_plans_at(
    const frontier::PlanningProblem& problem, const std::vector<int>& durations);

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
std::string baselines_csv(const study::FrontierRun& run);

/// The command summary's lines about baselines, one per baseline (ZeusGlobal and ZeusPerStage as
/// ranges over their points), each with Perseus's saving at the same time; "" without baselines.
std::string baselines_summary(const study::FrontierRun& run);

/// summary.json: T_min, T*, baseline, savings, straggler table, fits and solver statistics, and a
/// "baselines" object (each point's savings vs all max clock and Perseus's realized point at the
/// same time) when the run has baselines.
std::string summary_json(const study::FrontierRun& run);

/// frontier.svg: planned and realized frontiers with the all-max-clock baseline, and the
/// ZeusGlobal and ZeusPerStage curves and the EnvPipe point when the run has baselines.
std::string frontier_svg(const study::FrontierRun& run);

/// Chrome/Perfetto trace JSON of a point's realized timeline: one track per GPU, one slice per
/// instruction labelled with its clock.
std::string timeline_trace_json(const study::FrontierRun& run, std::size_t point);

/// The plan file name for a point, e.g. freqs_pipeline_00012.py.
std::string zeus_plan_filename(std::size_t point);

/// One output file: (name, contents).
using OutputFile = std::pair<std::string, std::string>;

/// The files of every frontier run, in this order: frontier.csv, plans.csv, summary.json,
/// baselines.csv, frontier.svg and timeline_NNNNN.json of `timeline_point`.
std::vector<OutputFile> frontier_files(const study::FrontierRun& run, std::size_t timeline_point);

/// The plan of one point as freqs_pipeline_NNNNN.py (Zeus) and plan_NNNNN.json, with its planned
/// and realized time and energy.
std::vector<OutputFile> plan_files(const study::FrontierRun& run, std::size_t point);

/// Warnings about the input on `to`: averaged repeated rows and fits that fell back.
void print_input_warnings(std::FILE* to, const profile::Profile& profile,
                          const frontier::PlanningProblem& problem);

/// The console summary of a written run: settings, the frontier's ends, savings at T_min and T*,
/// the straggler table, the baselines, the files in `directory` and notes (a stage count taken
/// from the profile when !pp_given, recompute rows left unplanned).
void print_frontier_summary(std::FILE* to, const study::ProfileSource& source,
                            const pipeline::PipelineSpec& spec, const study::FrontierRun& run,
                            const std::string& directory, std::size_t timeline_point,
                            std::size_t plans_written, bool pp_given);

}  // namespace powertrain::report
