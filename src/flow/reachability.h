// Depth-first reachability over any adjacency, shared by the hand-written and the Boost.Graph
// max flow (the uncapacitated-path test and the source side of a cut).
#pragma once

#include <vector>

namespace powertrain::flow {

/// Nodes reachable from `source` (1 = reachable). `for_each_neighbor(v, visit)` calls visit(w) for
/// every arc v → w that may be followed. O(nodes + arcs followed).
template <class ForEachNeighbor>
std::vector<char> reachable_nodes(int num_nodes, int source, ForEachNeighbor&& for_each_neighbor) {
  std::vector<char> seen(static_cast<std::size_t>(num_nodes), 0);
  std::vector<int> stack = {source};
  seen[static_cast<std::size_t>(source)] = 1;
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    for_each_neighbor(v, [&](int w) {
      if (!seen[static_cast<std::size_t>(w)]) {
        seen[static_cast<std::size_t>(w)] = 1;
        stack.push_back(w);
      }
    });
  }
  return seen;
}

}  // namespace powertrain::flow
