// Builds an ExecutionGraph from normalized Kineto traces (one RankTrace per rank): which host
// events are tasks, the four dependency kinds of Lumos §3.3.2 and the cross-rank collective
// matching. The rules and their reasons are in docs/replay.md.
#pragma once

#include <cstdint>
#include <vector>

#include "core/result.h"
#include "graph/execution_graph.h"
#include "trace/trace_events.h"

namespace powertrain::graph {

struct GraphOptions {
  /// A host task that starts at least this long after the previous task on its thread ended (or
  /// that is the first on its thread) depends on the latest task of another thread of the rank
  /// that ended inside the gap (Lumos's inter-thread rule, e.g. the autograd thread).
  std::int64_t cross_thread_gap_ns = 50'000;
  /// Rule-based syncs and stream waits whose resolution on the input timeline contradicts it
  /// (the awaited task ends after the call returned, or after the waiting task started, by more
  /// than this) are dropped and counted instead of slowing the replay down.
  std::int64_t contradiction_tolerance_ns = 1'000;
  /// Keep a ParentSpan for every host event with children (for the replayed Chrome trace);
  /// ProfilerStep spans are always kept.
  bool keep_parent_spans = true;
};

/// Builds the graph of all ranks. Traces are ordered by RankTrace::rank; each trace's events must
/// be sorted by (start, -duration) as the reader leaves them (unsorted input is sorted here).
/// Errors: no traces, two traces with the same rank, more than 2^31 − 1 tasks.
/// Complexity: O(N log N) in the number of events (sorting the correlation table), O(N) memory.
core::Result<ExecutionGraph> build_execution_graph(const std::vector<trace::RankTrace>& traces,
                                                   const GraphOptions& options = {});

}  // namespace powertrain::graph
