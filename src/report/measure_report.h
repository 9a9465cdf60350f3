// What `powertrain measure` prints and writes: every number measured by NVML.
#pragma once

#include <cstdio>
#include <string>

#include "nvml/measure.h"

namespace powertrain::report {

/// The first line: the command, the phases, the NVML library, device and energy source.
void print_measure_header(std::FILE* to, const nvml::MeasureOptions& options,
                          const std::string& library, const char* energy_source);
/// One run's line on `to`; a warning on `warn` when cooldown ended above the temperature target.
void print_measure_run(std::FILE* to, std::FILE* warn, const nvml::MeasureOptions& options,
                       int index, const nvml::MeasuredRun& run);
/// The mean over the runs.
void print_measure_mean(std::FILE* to, const nvml::MeasureOptions& options,
                        const nvml::MeasureSummary& summary);

/// measurements.csv: one row per run (s, J, W, degrees C).
std::string measurements_csv(const nvml::MeasureSummary& summary);
/// summary.json: the settings, the NVML source and the means.
std::string measure_summary_json(const nvml::MeasureOptions& options, const std::string& library,
                                 const char* energy_source, const nvml::MeasureSummary& summary);

}  // namespace powertrain::report
