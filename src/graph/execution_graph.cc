// Small helpers shared by the builder, the simulator and the tests.
#include "graph/execution_graph.h"

#include <algorithm>

namespace powertrain::graph {

std::string_view to_string(RuntimeOpKind kind) {
  switch (kind) {
    case RuntimeOpKind::kEventRecord:
      return "event record";
    case RuntimeOpKind::kStreamWait:
      return "stream wait";
    case RuntimeOpKind::kStreamSync:
      return "stream sync";
    case RuntimeOpKind::kEventSync:
      return "event sync";
    case RuntimeOpKind::kContextSync:
      return "context sync";
    case RuntimeOpKind::kSyncCopy:
      return "blocking copy";
  }
  return "?";
}

void add_warning(std::vector<trace::TraceWarning>& warnings, std::string_view kind,
                 std::string_view example) {
  for (trace::TraceWarning& warning : warnings) {
    if (warning.kind == kind) {
      ++warning.count;
      return;
    }
  }
  warnings.push_back({std::string(kind), std::string(example), 1});
}

void merge_warnings(std::vector<trace::TraceWarning>& into,
                    const std::vector<trace::TraceWarning>& from) {
  for (const trace::TraceWarning& w : from) {
    auto it = std::find_if(into.begin(), into.end(),
                           [&](const trace::TraceWarning& x) { return x.kind == w.kind; });
    if (it == into.end()) {
      into.push_back(w);
    } else {
      it->count += w.count;
    }
  }
}

std::int32_t find_task(const ExecutionGraph& graph, int rank_index, std::string_view name,
                       std::int32_t from) {
  const RankInfo& rank = graph.ranks[rank_index];
  for (std::int32_t task = std::max(from, rank.first_task); task < rank.end_task; ++task) {
    if (rank.names[graph.name[task]] == name) return task;
  }
  return kNone;
}

void store_edges(std::vector<TempEdge>& edges, ExecutionGraph& graph) {
  const std::size_t tasks = static_cast<std::size_t>(graph.task_count());
  graph.edge_begin.assign(tasks + 1, 0);
  for (const TempEdge& edge : edges) ++graph.edge_begin[edge.src + 1];
  for (std::size_t v = 0; v < tasks; ++v) graph.edge_begin[v + 1] += graph.edge_begin[v];
  graph.edge_dst.resize(edges.size());
  graph.edge_lag_ns.resize(edges.size());
  graph.edge_kind.resize(edges.size());
  std::vector<std::uint32_t> cursor(graph.edge_begin.begin(), graph.edge_begin.end() - 1);
  for (const TempEdge& edge : edges) {
    const std::uint32_t slot = cursor[edge.src]++;
    graph.edge_dst[slot] = edge.dst;
    graph.edge_lag_ns[slot] = edge.lag_ns;
    graph.edge_kind[slot] = edge.kind;
  }
  edges.clear();
  edges.shrink_to_fit();
}

}  // namespace powertrain::graph
