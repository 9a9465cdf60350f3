// Internals of the graph builder shared between its files: the cross-rank collective matching.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/execution_graph.h"
#include "trace/trace_events.h"

namespace powertrain::graph::detail {

/// Groups the NCCL GPU tasks of all ranks into collectives: by (process group, sequence number)
/// when the trace has them, else (process group, the rank's n-th collective of that group), else
/// the rank's n-th collective. `traces` are in graph rank order. O(C) hash lookups.
void match_collectives(const std::vector<const trace::RankTrace*>& traces, ExecutionGraph& graph);

}  // namespace powertrain::graph::detail
