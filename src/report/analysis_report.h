// What `powertrain analyze` writes (summary.json, kernels.csv, report.html) and prints. Trace
// quantities are measured; the critical path's energy is modelled.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "analyze/analysis_run.h"
#include "core/atomic_output.h"
#include "core/result.h"

namespace powertrain::report {

/// The request as the user gave it, echoed in the outputs.
struct AnalysisEcho {
  std::vector<std::string> traces;
  std::string window;  // as given
  double kernel_wait_us = 30.0;
  int top = 10;  // kernels listed per rank
};

/// summary.json: analysis_json (analysis_document.h) plus the request and the notes.
std::string analysis_summary_json(const analyze::AnalysisRun& run, const AnalysisEcho& echo);

/// kernels.csv: one row per (rank, kernel name), times in seconds (measured).
std::string analysis_kernels_csv(const analyze::AnalysisRun& run);

/// Writes summary.json, kernels.csv and report.html into the output's staging directory.
core::Status write_analysis(const analyze::AnalysisRun& run, const AnalysisEcho& echo,
                            core::AtomicOutputDirectory& output);

/// The console report; `total_s` is the command's wall-clock time, `directory` the output.
std::string analysis_console(const analyze::AnalysisRun& run, const AnalysisEcho& echo,
                             double total_s, const std::filesystem::path& directory);

}  // namespace powertrain::report
