// Shrinks an s–t network before a minimum cut by merging the ends of free arcs (lower bound 0,
// no upper bound) that some minimum cut never separates.
#pragma once

#include <utility>
#include <vector>

namespace powertrain::flow {

/// Merges the ends of every free arc x→y where x has no other out-arc or y no other in-arc: moving
/// the lone end to its neighbour's side never raises a cut's capacity, so some minimum cut keeps
/// them together and merging keeps the optimum (and shortens augmenting paths). Arcs are read
/// through accessors so callers keep their own arc layout: from(k), to(k) give arc k's ends and
/// is_free(k) says whether it is free. The source and sink are never merged with each other and
/// stay representatives. Deterministic: merges in arc order, numbers contracted nodes by first
/// node. Memory is kept across calls. Not thread-safe. O((nodes + arcs) α).
/// Degrees are those of the original network, not of merged groups: the minimum is kept on the
/// frontier solver's networks (each node one end of its operation's arc; checked by brute force
/// in tests/flow/contraction_test.cc), but on general networks chained merges can raise it (brute
/// force finds such cases), so check before using it elsewhere.
class ArcContraction {
 public:
  /// Contracts the network and returns the number of contracted nodes; then node(x) is x's
  /// contracted node, with node(source) = 0, node(sink) = 1 and the others numbered from 2 in
  /// order of their smallest original node.
  template <class From, class To, class IsFree>
  int contract(int num_nodes, int num_arcs, int source, int sink, From from, To to,
               IsFree is_free) {
    out_degree_.assign(num_nodes, 0);
    in_degree_.assign(num_nodes, 0);
    for (int k = 0; k < num_arcs; ++k) {
      ++out_degree_[from(k)];
      ++in_degree_[to(k)];
    }
    parent_.resize(num_nodes);
    for (int i = 0; i < num_nodes; ++i) parent_[i] = i;
    for (int k = 0; k < num_arcs; ++k) {
      if (!is_free(k) || (out_degree_[from(k)] != 1 && in_degree_[to(k)] != 1)) continue;
      int a = find(from(k)), b = find(to(k));
      if (a == b) continue;
      if (b == source || b == sink) std::swap(a, b);  // keep the terminals as representatives
      if (b == source || b == sink) continue;         // never merge source with sink
      parent_[b] = a;
    }
    compact_.assign(num_nodes, -1);
    compact_[source] = 0;
    compact_[sink] = 1;
    int num_compact = 2;
    for (int i = 0; i < num_nodes; ++i) {
      if (i == source || i == sink) continue;
      const int r = find(i);
      if (compact_[r] < 0) compact_[r] = num_compact++;
    }
    for (int i = 0; i < num_nodes; ++i) compact_[i] = compact_[find(i)];
    return num_compact;
  }
  /// The contracted node of original node `x` (after contract()).
  int node(int x) const { return compact_[x]; }

 private:
  int find(int x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  std::vector<int> out_degree_, in_degree_, parent_, compact_;
};

}  // namespace powertrain::flow
