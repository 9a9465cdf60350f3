// What `powertrain plan` writes and prints besides the frontier files: the instructions found in
// the trace, the profile modelled from them, trace_plan.json and the console summary.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "device/gpu.h"
#include "report/frontier_report.h"
#include "study/frontier_run.h"
#include "study/trace_plan_run.h"

namespace powertrain::report {

/// The frontier files (timeline of T_min), instructions.csv, profile.csv, trace_plan.json and the
/// plan files of T* and T_min.
std::vector<OutputFile> trace_plan_files(const study::TracePlanRun& traced,
                                         const study::FrontierRun& run);

/// The console summary: pipeline, source, step, instructions, model, the frontier's ends, the
/// baseline and the files in `directory`.
void print_trace_plan_summary(std::FILE* to, const study::TracePlanRun& traced,
                              const device::GpuSpec& gpu, const study::FrontierRun& run,
                              const std::string& directory);

}  // namespace powertrain::report
