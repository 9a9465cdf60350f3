// `powertrain analyze` as one library call: read the traces, analyse every rank (analyze.h) and,
// unless skipped, replay them for the critical path per step (critical.h) with modelled energy.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analyze/analyze.h"
#include "analyze/critical.h"
#include "core/result.h"
#include "device/gpu.h"
#include "graph/execution_graph.h"
#include "replay/replay.h"
#include "sim/metrics.h"

namespace powertrain::analyze {

/// Critical-path results and their context for the summary (absent when the replay failed).
struct PathContext {
  const graph::ExecutionGraph* graph = nullptr;
  const std::vector<RankPath>* paths = nullptr;
  std::string gpu;          // catalog name of the energy model's GPU
  double clock_mhz = 0.0;   // SM clock of the energy estimate
  std::string unavailable;  // why there is no critical path, when graph/paths are null
};

struct AnalysisRequest {
  std::vector<std::string> traces;  // files, directories or a .tar.gz of ranks
  AnalyzeOptions options;
  device::GpuSpec gpu;  // energy model along the critical path
  bool critical_path = true;
};

struct AnalysisRun {
  std::vector<RankAnalysis> ranks;
  std::vector<std::string> notes;  // what could not be analysed as asked, one line each
  std::optional<graph::ExecutionGraph> graph;
  std::vector<RankPath> paths;  // empty when `unavailable` says why
  std::string gpu;              // catalog name of the energy model's GPU
  double clock_mhz = 0.0;
  std::string unavailable;
  /// Whether the replay behind the critical path reproduces the trace (replay's verdict);
  /// absent when there was no replay.
  std::optional<sim::Verdict> verdict;

  /// The critical-path context for the writers; points into this run.
  PathContext context() const;
};

/// Reads and analyses the traces. A trace the graph builder refuses still gets every analysis
/// but the critical path (`unavailable` says why). Errors: those of replay::read_traces.
core::Result<AnalysisRun> analyze_traces(const AnalysisRequest& request,
                                         const replay::Progress& progress = {});

}  // namespace powertrain::analyze
