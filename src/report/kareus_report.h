// What `powertrain kareus` prints and writes: the systems' tables, frontier.csv rows, the frontier
// plot, Zeus plan files and schedules.json. Every number is modelled unless a GPU profiler measured
// the partitions.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include "core/result.h"
#include "device/gpu.h"
#include "kareus/large_scale.h"
#include "kareus/profiler.h"
#include "kareus/systems.h"
#include "kareus/table3_run.h"
#include "profile/model_profile.h"
#include "report/frontier_report.h"

namespace powertrain::report {

/// The `kareus` command's first lines: the modelled job, then the profiler (what it measures).
void print_kareus_job(std::FILE* to, const profile::ModelJob& job, int microbatches);
void print_kareus_profiler(std::FILE* to, const kareus::Profiler& profiler, bool modelled_profiler);

/// The `kareus --table3` run's first line: what runs, on which GPU, with which search.
void print_kareus_table3_header(std::FILE* to, const std::string& search);

/// The search counts, the basis of the numbers, and the max-throughput and frontier tables.
void print_kareus_systems(std::FILE* to, const kareus::SystemsResult& r, double p_static_w,
                          const std::string& search, bool modelled_profiler);

/// frontier.csv rows (no header), each prefixed with `workload` ("" or "label,"):
/// method,time_s,energy_j,static_j,dynamic_j.
std::string kareus_frontier_rows(const kareus::SystemsResult& r, double p_static_w,
                                 const std::string& workload);

/// The --table3 run's files as its workloads finish: frontiers.csv's rows (all workloads) and a
/// frontier_<label>.svg per workload (blanks and '+' in the label as '_').
struct KareusTable3Files {
  std::string csv = "workload,method,time_s,energy_j,static_j,dynamic_j\n";
  /// Adds the workload's rows to `csv` and returns its SVG file.
  OutputFile add(const kareus::Table3Outcome& outcome, const profile::ModelJob& job);
};

/// The five systems' frontiers, one series each (modelled).
std::string kareus_frontier_svg(const kareus::SystemsResult& r, const std::string& description);

/// frontier.svg, frontier.csv, Zeus plan files of up to `plan_points` points of Kareus and M+P
/// (kareus_freqs_pipeline_*.py, megatron_perseus_freqs_pipeline_*.py) and schedules.json.
core::Result<std::vector<OutputFile>> kareus_job_files(const kareus::SystemsResult& r,
                                                       const std::string& description,
                                                       const device::GpuSpec& gpu,
                                                       const kareus::ConcurrencyParams& params,
                                                       std::size_t plan_points);

/// `kareus-cluster`'s console text: the setting, the per-configuration table, Tables 7 and 8 next
/// to the paper's values with the deviation, and the measured wall time (`total_s`).
void print_large_scale(std::FILE* to, const kareus::LargeScaleResult& result,
                       const kareus::LargeScaleOptions& options, const std::string& search,
                       long long seed, double total_s);

/// large_scale.csv: every system's realized frontier per configuration (all GPUs).
std::string large_scale_csv(const kareus::LargeScaleResult& result);

/// `kareus --out`'s last line: what was written to `out` (`files` files, all but three of them
/// Zeus plan files).
void print_kareus_job_written(std::FILE* to, const std::string& out, std::size_t files);

/// `kareus --table3`'s lines after the header: a workload's modelled memory as it finishes, the
/// search counts before the tables, and what was written to `out`.
void print_kareus_table3_memory(std::FILE* to, const kareus::Table3Outcome& outcome);
void print_kareus_table3_searches(std::FILE* to, const kareus::Table3Run& run);
void print_kareus_table3_written(std::FILE* to, const std::string& out);

}  // namespace powertrain::report
