// Builds the execution graph of all ranks: one RankBuilder per trace, then the cross-rank
// collective matching and the compressed edge store.
#include "graph/graph_builder.h"

#include <fmt/core.h>

#include <algorithm>
#include <limits>

#include "graph/collectives.h"
#include "graph/rank_builder.h"

namespace powertrain::graph {

core::Result<ExecutionGraph> build_execution_graph(const std::vector<trace::RankTrace>& traces,
                                                   const GraphOptions& options) {
  if (traces.empty()) return core::Error{"execution graph: no traces"};
  std::vector<const trace::RankTrace*> sorted;
  sorted.reserve(traces.size());
  for (const trace::RankTrace& trace : traces) sorted.push_back(&trace);
  std::stable_sort(
      sorted.begin(), sorted.end(),
      [](const trace::RankTrace* a, const trace::RankTrace* b) { return a->rank < b->rank; });
  for (std::size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i]->rank == sorted[i - 1]->rank) {
      return core::Error{fmt::format("execution graph: traces '{}' and '{}' are both rank {}",
                                     sorted[i - 1]->source, sorted[i]->source, sorted[i]->rank)};
    }
  }
  ExecutionGraph graph;
  std::vector<TempEdge> edges;
  for (std::size_t r = 0; r < sorted.size(); ++r) {
    const trace::RankTrace& trace = *sorted[r];
    RankInfo info;
    info.rank = trace.rank;
    info.world_size = trace.world_size;
    info.source = trace.source;
    info.names = trace.names;
    graph.ranks.push_back(std::move(info));
    detail::RankBuilder builder(trace, static_cast<std::int32_t>(r), options, graph, edges);
    builder.build();
    if (builder.too_many()) {
      return core::Error{fmt::format("execution graph: more than {} tasks (at '{}')",
                                     std::numeric_limits<std::int32_t>::max() - 1, trace.source)};
    }
  }
  detail::match_collectives(sorted, graph);
  store_edges(edges, graph);
  return graph;
}

}  // namespace powertrain::graph
