// The replayed timeline as a Chrome trace (JSON, opens in https://ui.perfetto.dev): one process per
// rank, one thread per host thread and per GPU stream, every replayed task and (optionally) every
// parent span (ops, annotations, ProfilerStep#N) rebuilt around its leaves.
#pragma once

#include <filesystem>
#include <string>

#include "core/result.h"
#include "graph/execution_graph.h"
#include "sim/simulator.h"

namespace powertrain::sim {

struct ChromeTraceOptions {
  bool include_parents = true;   // host spans with children (needs GraphOptions::keep_parent_spans)
  std::string label = "replay";  // appended to each process name: "rank 3 (replay)"
};

/// Times are µs from the earliest replayed event (otherData.time_origin_ns holds it, absolute).
/// Tasks that never ran are left out. O(tasks + parents).
std::string replay_chrome_trace(const graph::ExecutionGraph& graph, const ReplayResult& replay,
                                const ChromeTraceOptions& options = {});

/// Writes replay_chrome_trace atomically. Errors: the file cannot be written.
core::Status write_replay_chrome_trace(const std::filesystem::path& path,
                                       const graph::ExecutionGraph& graph,
                                       const ReplayResult& replay,
                                       const ChromeTraceOptions& options = {});

}  // namespace powertrain::sim
