// summary.json and report.html of `powertrain analyze`, and the JSON of `powertrain diff`.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analyze/analyze.h"
#include "analyze/critical.h"
#include "analyze/diff.h"
#include "graph/execution_graph.h"

namespace powertrain::analyze {

/// Critical-path results and their context for the summary (absent when the replay failed).
struct PathContext {
  const graph::ExecutionGraph* graph = nullptr;
  const std::vector<RankPath>* paths = nullptr;
  std::string gpu;          // catalog name of the energy model's GPU
  double clock_mhz = 0.0;   // SM clock of the energy estimate
  std::string unavailable;  // why there is no critical path, when graph/paths are null
};

/// The summary document: per rank, every quantity of analyze_rank (times in seconds, shares in
/// percent) with the top `top_n` kernels, and the per-step critical path when given.
nlohmann::json analysis_json(const std::vector<RankAnalysis>& ranks, const PathContext& paths,
                             int top_n);

/// A single self-contained HTML page (inline CSS, SVG built by inline JS, no network) drawing the
/// summary: timeline per rank, breakdown bars, top kernels, streams, critical path. The script
/// sets document.title to "powertrain analyze: ok" once everything rendered.
std::string html_report(const nlohmann::json& summary);

nlohmann::json diff_json(const TraceDiff& diff, int top_n);

}  // namespace powertrain::analyze
