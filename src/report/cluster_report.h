// The files `powertrain cluster` writes: cluster.csv, summary.json and the savings plot.
#pragma once

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

}  // namespace powertrain::report
