// Internals of the graph builder shared between its files: the temporary edge list, the
// compressed-row edge store and the cross-rank collective matching.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/execution_graph.h"
#include "trace/trace_events.h"

namespace powertrain::graph::detail {

struct TempEdge {
  std::int32_t src;
  std::int32_t dst;
  std::int64_t lag_ns;  // the measured slack until lags are assigned
  EdgeKind kind;
};

/// Moves `edges` into the graph's compressed rows (grouped by source, order kept). O(V + E).
void store_edges(std::vector<TempEdge>& edges, ExecutionGraph& graph);

/// Groups the NCCL GPU tasks of all ranks into collectives: by (process group, sequence number)
/// when the trace has them, else (process group, the rank's n-th collective of that group), else
/// the rank's n-th collective. `traces` are in graph rank order. O(C) hash lookups.
void match_collectives(const std::vector<const trace::RankTrace*>& traces, ExecutionGraph& graph);

}  // namespace powertrain::graph::detail
