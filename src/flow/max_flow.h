// Maximum flow (Dinic) and minimum s–t cuts with flow lower bounds: generic graph algorithms on
// integer node/arc handles, with no knowledge of what the arcs stand for (the frontier solver in
// src/frontier builds the networks).
#pragma once

#include <cstdint>
#include <vector>

namespace powertrain::flow {

/// A residual flow network with double capacities; +infinity is allowed for uncapacitated arcs.
/// Arcs are stored in pairs (arc, reverse = arc ^ 1). Memory is kept across reset() for reuse in
/// a caller's inner loop. Not thread-safe; use one per thread.
class FlowNetwork {
 public:
  /// Clears all arcs and sets the node count. O(nodes).
  void reset(int num_nodes);
  /// Adds an arc with capacity ≥ 0 (may be +inf). Returns its id. O(1) amortized.
  int add_arc(int from, int to, double capacity);
  /// Dinic's algorithm from `source` to `sink` on the current residual capacities; residuals at or
  /// below `tolerance` count as zero. Returns the flow added (may be +inf if an all-infinite path
  /// exists). O(V²E) worst case.
  double max_flow(int source, int sink, double tolerance);
  /// Nodes reachable from `source` through arcs with residual > tolerance (1 = reachable).
  std::vector<char> reachable_from(int source, double tolerance) const;
  double residual(int arc) const { return residual_[arc]; }
  /// Starts an arc at a given flow in [0, capacity] (before max_flow, for warm starts).
  void set_flow(int arc, double flow) {
    residual_[arc] = original_[arc] - flow;
    residual_[arc ^ 1] = flow;
  }
  /// Flow on an arc returned by add_arc, read from its reverse residual (exact for infinite
  /// capacities too, where capacity minus residual is not).
  double flow(int arc) const { return residual_[arc ^ 1]; }
  /// Sets an arc pair's capacity and residual to zero (used to drop helper arcs between phases).
  void disable_arc(int arc);
  int num_nodes() const { return num_nodes_; }
  int num_arcs() const { return static_cast<int>(to_.size()); }

 private:
  void build_adjacency();
  bool build_levels(int source, int sink, double tolerance);

  int num_nodes_ = 0;
  std::vector<int> from_, to_;
  std::vector<double> residual_, original_;
  std::vector<int> adjacency_start_, adjacency_;  // CSR over arcs by tail
  std::vector<int> level_, next_arc_, queue_;
  std::vector<int> path_;
  bool adjacency_valid_ = false;
};

/// An arc with flow bounds lower ≤ flow ≤ upper (upper may be +inf).
struct BoundedArc {
  int from = 0;
  int to = 0;
  double lower = 0.0;
  double upper = 0.0;
};

enum class CutOutcome {
  kOptimal,     // a finite minimum cut was found
  kUnbounded,   // every cut crosses an uncapacitated arc forward: no finite cut exists
  kInfeasible,  // (two-phase method only) no flow satisfies the lower bounds
};

/// A cut (S containing the source, T containing the sink) and its capacity
/// Σ_{S→T} upper − Σ_{T→S} lower.
struct MinCut {
  CutOutcome outcome = CutOutcome::kOptimal;
  double value = 0.0;
  std::vector<char> source_side;  // 1 for nodes in S
};

/// True if `sink` is reachable from `source` through arcs with infinite upper bound only, i.e. no
/// finite cut exists. O(nodes + arcs).
bool has_uncapacitated_path(int num_nodes, int source, int sink,
                            const std::vector<BoundedArc>& arcs);

/// Capacity of a given cut: Σ upper over S→T arcs − Σ lower over T→S arcs (+inf if an infinite arc
/// goes S→T).
double cut_capacity(const std::vector<BoundedArc>& arcs, const std::vector<char>& source_side);

/// Tolerance used to treat a residual as zero: a fixed small fraction of the largest finite bound.
double flow_tolerance(const std::vector<BoundedArc>& arcs);

/// The flow of the previous min_cut_with_lower_bounds call, kept to start the next one from it.
/// Reused only when the next call has the same nodes and arc endpoints, which holds for most
/// calls of an iterative caller that only changes bounds.
struct FlowWarmStart {
  int num_nodes = -1;
  std::vector<int> from, to;
  std::vector<double> flow;  // flow on each BoundedArc (within its bounds' frame: lower + f')
  long long reused = 0;      // calls that started from the previous flow
  long long cold = 0;        // calls that started from zero
};

/// Minimum of cut_capacity over all s–t cuts with one max flow: lower bounds become node demands
/// (arcs source→v and v→sink), which is Algorithm 3's first phase with s' = s and t' = t, so it
/// never reports infeasible. Returns the minimal minimum cut (the source side is everything
/// reachable from the source in the residual network), which is the same for every maximum flow,
/// so a warm start cannot change the answer. Deterministic. O(max flow).
MinCut min_cut_with_lower_bounds(int num_nodes, int source, int sink,
                                 const std::vector<BoundedArc>& arcs, FlowNetwork& scratch,
                                 FlowWarmStart* warm_start = nullptr);

/// Minimal minimum cuts with lower bounds (as min_cut_with_lower_bounds) for a sequence of networks
/// whose arc endpoints rarely change and whose consecutive calls change a few arcs' bounds. Keeps
/// the residual network and the last maximum flow; a bound change repairs the flow around the arc's
/// ends only, so a step costs a few searches of the network and no allocation. The terminal arcs
/// that turn lower bounds into node demands (source→v, v→sink) are not stored as arcs: each node
/// keeps their residuals, so searches scan only the bounded arcs, stored in adjacency order
/// (residual next to head) for sequential reads. When the repaired flow is not maximal, it is
/// augmented first along distance-from-supply labels (shortest-augmenting-path style, backwards
/// from the demands, bounded work, labels repaired only behind saturated arcs),
/// then by Dinic phases if needed: other augmenting paths than a fresh solve's, the same minimal
/// cut (residual reachability from the source is the same set for every maximum flow).
class IncrementalMinCut {
 public:
  /// Loads a network. With the same node count and arc endpoints as the loaded one, only bounds
  /// change (set_bounds for every arc; the flow stays warm); otherwise it is rebuilt from zero
  /// flow.
  void load(int num_nodes, int source, int sink, const std::vector<BoundedArc>& arcs);
  /// As load, and when the arcs' endpoints differ from the loaded ones, starts from `flows` (one
  /// per arc, clamped to its bounds) instead of zero: the next solve first repairs the flow at
  /// every node (as after set_bounds), which keeps most of a previous network's flow when the new
  /// one is mostly the same arcs renumbered. Same cut as from zero flow.
  void load(int num_nodes, int source, int sink, const std::vector<BoundedArc>& arcs,
            const std::vector<double>& flows);
  /// Flow on a loaded arc (lower + flow above the lower bound); valid after a solve.
  double flow(int arc) const { return lower_[arc] + arc_flow(arc); }
  /// Changes the bounds of arc `arc` (index into the loaded arcs).
  void set_bounds(int arc, double lower, double upper);
  /// Minimal minimum cut of the current bounds: kOptimal (then source_side() is valid) or
  /// kUnbounded. Same answer as min_cut_with_lower_bounds on the same arcs.
  CutOutcome solve();
  bool source_side(int node) const { return distance_[node] >= 0; }
  long long warm_solves = 0;      // solves that started from the previous flow
  long long cold_solves = 0;      // solves that started from zero (new structure or failed repair)
  long long phases = 0;           // Dinic phases over all solves (0 when the repair was enough)
  long long seeded_searches = 0;  // first searches that started from the last source side
  long long label_paths = 0;      // augmenting paths found along distance-from-supply labels
  long long global_labels = 0;    // searches that (re)computed those labels
  long long labelled_nodes = 0;   // nodes those searches labelled (the kept ones not counted)
  long long partial_labels = 0;   // of global_labels, those that kept the labels below a saturation
  // Test hook: after every partial label search, search from the supplies again and count the
  // nodes whose label differs (must stay 0).
  bool verify_labels = false;
  long long label_mismatches = 0;

 private:
  // One direction of an arc in a node's adjacency: the arc itself at its tail, its reverse at its
  // head. `mate` is the other direction's entry; flow on an arc is its reverse entry's residual.
  struct Entry {
    int head;
    int mate;
    double residual;
  };
  bool is_reverse(int entry) const { return (arc_of_entry_[entry] & 1) != 0; }
  double arc_flow(int arc) const { return entries_[entries_[forward_[arc]].mate].residual; }
  void set_arc(int arc, double capacity, double flow) {
    const int f = forward_[arc];
    Entry& forward = entries_[f];
    forward.residual = capacity - flow;
    entries_[forward.mate].residual = flow;
    back_[f] = flow;
    back_[forward.mate] = capacity - flow;
  }
  // Pushes path_'s bottleneck (with the supply's source residual and the demand's sink residual)
  // from supply `start` to demand `v`; false, pushing nothing, when it is infinite.
  bool push_path(int start, int v);
  // Length of path_'s prefix before its first arc at or below the tolerance.
  std::size_t unsaturated_prefix(double tolerance) const;
  bool is_demand(int node, double tolerance) const {
    return node == sink_ || sink_residual_[node] > tolerance;
  }
  double flow_balance(int node) const;  // inflow − outflow over the bounded arcs (shifted frame)
  double node_demand(int node) const;   // Σ lower out − Σ lower in, summed in arc order
  void mark(int node);
  bool repair();
  void clear_flow();
  bool infinite_path();
  // Breadth-first levels from the source and the nodes with source residual. Returns false when
  // no node with sink residual (nor the sink) is reached: the flow is maximal and the labelled
  // nodes are the source side (source_side()). Otherwise the levels stop at the first level holding
  // such a node (demand_level_).
  bool search_source_side(double tolerance);
  // The supplies (source and nodes with source residual) into starts_, in node order, from the
  // nodes that may have source residual (kept as it is set) rather than a scan of every node.
  void collect_starts(double tolerance);
  // search_source_side from the last solve's source side S, whose labels distance_ still holds:
  // when residuals changed only on arcs with at most one end in S (touched_arcs_) and the supplies
  // are the same, S keeps its distances and only the touched arcs' ends in S lead out of it, so
  // the search scans those and the newly reached nodes instead of S again. Returns 1 / 0 as
  // search_source_side's true / false, or −1 when the premise fails (a touched arc inside S, other
  // supplies, a shorter way back into S): then the labels are stale and the full search must run.
  int seeded_search(double tolerance);
  // Augments along shortest paths of those levels (a blocking flow), pruning dead ends.
  void blocking_flow(double tolerance);
  // Augmenting paths from the demands back along distance-from-supply labels (advance/retreat with
  // relabels, as in the shortest-augmenting-path algorithm), bounded work; see max_flow.cc.
  // Returns true when it augmented.
  bool label_augment(double tolerance);
  // Labels every node with its exact distance from the supplies. With exact_below ≥ 1, the labels
  // below it are known to be exact distances still (see label_augment) and only the rest is
  // searched again, from the nodes at exact_below − 1; the result is the same as a full search's.
  void compute_labels(double tolerance, int exact_below);

  int num_nodes_ = -1, num_arcs_ = 0, source_ = 0, sink_ = 1;
  std::vector<int> from_, to_;
  std::vector<double> lower_, upper_, demand_;
  std::vector<Entry> entries_;
  // Per entry, the mate's residual (the arc's other direction), kept equal to it bit for bit so
  // that label_augment's backward path search reads it in adjacency order, not through `mate`.
  std::vector<double> back_;
  std::vector<int> arc_of_entry_;  // 2·arc at the arc's tail, 2·arc + 1 at its head
  std::vector<int> first_entry_;   // CSR over nodes, entries in arc order
  std::vector<int> forward_;       // per arc: its entry at the tail
  // Terminal arcs source→v and v→sink: residual and flow (capacity = residual + flow).
  std::vector<double> source_residual_, source_flow_, sink_residual_, sink_flow_;
  std::vector<int> distance_, next_entry_, queue_, path_, starts_;
  std::vector<char> reached_;
  // Nodes whose source residual may be positive (is_candidate_ = 1), in no particular order.
  std::vector<int> candidates_;
  std::vector<char> is_candidate_;
  void note_supply(int node);
  // Nodes whose sink residual may be positive, as candidates_ for the source residual: the demands
  // label_augment's paths start from, without a scan of every node.
  std::vector<int> demand_candidates_;
  std::vector<char> is_demand_candidate_;
  void note_demand(int node);
  // Arcs whose residual changed since the last search (set_bounds, repair), and that search's
  // state.
  std::vector<int> touched_arcs_, seeds_, seed_starts_;
  bool seed_valid_ = false;
  double seed_tolerance_ = 0.0;
  int demand_level_ = -1;
  std::vector<int> dirty_, work_;
  // label_augment: distance-from-supply labels, current entries with the call that last reset them.
  std::vector<int> label_, current_, current_call_;
  // The nodes with a finite label in the order the last compute_labels labelled them, so in
  // nondecreasing label order as of then; label_count_ of them.
  std::vector<int> label_order_;
  std::vector<int> ends_;  // label_augment's demands
  int label_count_ = 0;
  int label_call_ = 0;
  std::vector<char> is_dirty_, queued_;
  double scale_ = 0.0;  // largest |finite bound|; the tolerance is a fixed fraction of it
  bool rescale_ = false, recheck_infinite_ = true, unbounded_ = false, cold_ = true;
};

/// The textbook two-phase method with lower bounds: find a feasible flow through a helper
/// source/sink, then augment it to a maximum flow. Reports kInfeasible when the lower bounds cannot
/// be met. Kept as a reference to cross-check min_cut_with_lower_bounds in tests.
MinCut max_flow_with_lower_bounds(int num_nodes, int source, int sink,
                                  const std::vector<BoundedArc>& arcs);

/// Exhaustive minimum over all 2^(n−2) cuts; for tests on small graphs (n ≤ 22).
MinCut brute_force_min_cut(int num_nodes, int source, int sink,
                           const std::vector<BoundedArc>& arcs);

/// Max flow of the plain network {from, to, capacity} by Boost.Graph's Edmonds–Karp, infinite
/// capacities replaced by (sum of finite capacities + 1). Cross-check for FlowNetwork::max_flow.
double boost_max_flow(int num_nodes, int source, int sink,
                      const std::vector<BoundedArc>& arcs_upper_only);

/// min_cut_with_lower_bounds computed with Boost.Graph's max flow instead of Dinic: Edmonds–Karp,
/// or Boykov–Kolmogorov when `boykov_kolmogorov` is set.
MinCut boost_min_cut_with_lower_bounds(int num_nodes, int source, int sink,
                                       const std::vector<BoundedArc>& arcs,
                                       bool boykov_kolmogorov = false);

}  // namespace powertrain::flow
