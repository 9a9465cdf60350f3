// The files `powertrain cluster` writes: cluster.csv, summary.json and the savings plot.
#pragma once

#include <cstdio>
#include <string>

#include "study/cluster.h"

namespace powertrain::report {

/// One row per (configuration, slowdown); column names carry units.
std::string cluster_csv(const study::ClusterEmulation& emulation);
/// Inputs, definitions, per-configuration results and every slowdown.
std::string cluster_summary_json(const study::ClusterEmulation& emulation);
/// Perseus Figure 8: cluster savings (%) vs straggler slowdown, one series per configuration, with
/// a ★ at T*/T_min (EnvPipe is in the CSV; its flat line would hide under the legend).
std::string cluster_svg(const study::ClusterEmulation& emulation);

/// The console summary: settings and definitions, one table per configuration (one energy unit for
/// all), the files in `out_dir` and, with `stages_from_profile`, a note that the stage count is
/// the profile's.
void print_cluster_summary(std::FILE* out, const study::ClusterEmulation& emulation,
                           const std::string& out_dir, bool stages_from_profile);
/// Sets `settings`' callbacks to print progress on `out`: one line per configuration.
void print_cluster_progress(study::ClusterSettings& settings, std::FILE* out);

}  // namespace powertrain::report
