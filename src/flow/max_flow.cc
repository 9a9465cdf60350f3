// Dinic's max flow on a reusable residual network, and minimum cuts with flow lower bounds.
#include "flow/max_flow.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "flow/reachability.h"

namespace powertrain::flow {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
// Residuals below this fraction of the largest finite bound are rounding noise.
constexpr double kRelativeTolerance = 1e-11;
// label_augment's work per solve (entries scanned, relabels), as a multiple of the network's size;
// past it the phases finish the flow. And the relabels (as a share of the nodes) after which all
// labels are recomputed: a path saturated deep in this long, thin network raises whole regions
// behind it, which one backward search fixes for less than relabelling them two by two. Both
// chosen by timing the 16 x 128 case (docs/benchmarks.md, sixth round); any value gives the same
// cuts.
constexpr double kLabelBudget = 8.0;
constexpr double kRelabelShare = 0.03;

}  // namespace

bool has_uncapacitated_path(int num_nodes, int source, int sink,
                            const std::vector<BoundedArc>& arcs) {
  std::vector<std::vector<int>> out(num_nodes);
  for (const auto& arc : arcs) {
    if (std::isinf(arc.upper)) out[arc.from].push_back(arc.to);
  }
  return reachable_nodes(num_nodes, source, [&](int v, auto&& visit) {
           for (int w : out[v]) visit(w);
         })[static_cast<std::size_t>(sink)] != 0;
}

void FlowNetwork::reset(int num_nodes) {
  num_nodes_ = num_nodes;
  from_.clear();
  to_.clear();
  residual_.clear();
  original_.clear();
  adjacency_valid_ = false;
}

int FlowNetwork::add_arc(int from, int to, double capacity) {
  assert(from >= 0 && from < num_nodes_ && to >= 0 && to < num_nodes_ && capacity >= 0.0);
  const int id = static_cast<int>(to_.size());
  from_.push_back(from);
  to_.push_back(to);
  residual_.push_back(capacity);
  original_.push_back(capacity);
  from_.push_back(to);
  to_.push_back(from);
  residual_.push_back(0.0);
  original_.push_back(0.0);
  adjacency_valid_ = false;
  return id;
}

void FlowNetwork::disable_arc(int arc) {
  const int pair = arc & ~1;
  residual_[pair] = residual_[pair + 1] = 0.0;
  original_[pair] = original_[pair + 1] = 0.0;
}

void FlowNetwork::build_adjacency() {
  adjacency_start_.assign(num_nodes_ + 1, 0);
  for (int tail : from_) ++adjacency_start_[tail + 1];
  for (int v = 0; v < num_nodes_; ++v) adjacency_start_[v + 1] += adjacency_start_[v];
  adjacency_.resize(from_.size());
  next_arc_.assign(adjacency_start_.begin(), adjacency_start_.end() - 1);
  for (int arc = 0; arc < static_cast<int>(from_.size()); ++arc)
    adjacency_[next_arc_[from_[arc]]++] = arc;
  adjacency_valid_ = true;
}

bool FlowNetwork::build_levels(int source, int sink, double tolerance) {
  level_.assign(num_nodes_, -1);
  queue_.clear();
  queue_.push_back(source);
  level_[source] = 0;
  for (std::size_t head = 0; head < queue_.size(); ++head) {
    const int v = queue_[head];
    // Nodes at or beyond the sink's level cannot be on a shortest augmenting path.
    if (level_[sink] >= 0 && level_[v] >= level_[sink]) break;
    for (int i = adjacency_start_[v]; i < adjacency_start_[v + 1]; ++i) {
      const int arc = adjacency_[i];
      const int w = to_[arc];
      if (level_[w] < 0 && residual_[arc] > tolerance) {
        level_[w] = level_[v] + 1;
        queue_.push_back(w);
      }
    }
  }
  return level_[sink] >= 0;
}

double FlowNetwork::max_flow(int source, int sink, double tolerance) {
  if (!adjacency_valid_) build_adjacency();
  double total = 0.0;
  while (build_levels(source, sink, tolerance)) {
    next_arc_.assign(adjacency_start_.begin(), adjacency_start_.end() - 1);
    path_.clear();
    int v = source;
    while (true) {
      if (v == sink) {
        double bottleneck = kInfinity;
        for (int arc : path_) bottleneck = std::min(bottleneck, residual_[arc]);
        if (std::isinf(bottleneck)) return kInfinity;
        for (int arc : path_) {
          residual_[arc] -= bottleneck;
          residual_[arc ^ 1] += bottleneck;
        }
        total += bottleneck;
        // Retreat to the tail of the first saturated arc.
        std::size_t keep = 0;
        while (keep < path_.size() && residual_[path_[keep]] > tolerance) ++keep;
        path_.resize(keep);
        v = keep == 0 ? source : to_[path_.back()];
        continue;
      }
      bool advanced = false;
      for (int& i = next_arc_[v]; i < adjacency_start_[v + 1]; ++i) {
        const int arc = adjacency_[i];
        const int w = to_[arc];
        if (residual_[arc] > tolerance && level_[w] == level_[v] + 1 &&
            (w == sink || level_[w] < level_[sink])) {
          path_.push_back(arc);
          v = w;
          advanced = true;
          break;
        }
      }
      if (advanced) continue;
      // Dead end: remove v from the level graph and step back.
      level_[v] = -1;
      if (path_.empty()) break;
      const int arc = path_.back();
      path_.pop_back();
      v = from_[arc];
      ++next_arc_[v];
    }
  }
  return total;
}

std::vector<char> FlowNetwork::reachable_from(int source, double tolerance) const {
  std::vector<char> seen(num_nodes_, 0);
  std::vector<int> stack = {source};
  seen[source] = 1;
  // Adjacency may be stale if arcs were added after the last max_flow; scan arcs by tail instead.
  std::vector<std::vector<int>> out;
  const bool use_csr = adjacency_valid_;
  if (!use_csr) {
    out.resize(num_nodes_);
    for (int arc = 0; arc < static_cast<int>(from_.size()); ++arc) out[from_[arc]].push_back(arc);
  }
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    auto visit = [&](int arc) {
      const int w = to_[arc];
      if (!seen[w] && residual_[arc] > tolerance) {
        seen[w] = 1;
        stack.push_back(w);
      }
    };
    if (use_csr) {
      for (int i = adjacency_start_[v]; i < adjacency_start_[v + 1]; ++i) visit(adjacency_[i]);
    } else {
      for (int arc : out[v]) visit(arc);
    }
  }
  return seen;
}

double cut_capacity(const std::vector<BoundedArc>& arcs, const std::vector<char>& source_side) {
  double value = 0.0;
  for (const auto& arc : arcs) {
    if (source_side[arc.from] && !source_side[arc.to]) value += arc.upper;
    if (!source_side[arc.from] && source_side[arc.to]) value -= arc.lower;
  }
  return value;
}

double flow_tolerance(const std::vector<BoundedArc>& arcs) {
  double scale = 0.0;
  for (const auto& arc : arcs) {
    scale = std::max(scale, std::abs(arc.lower));
    if (std::isfinite(arc.upper)) scale = std::max(scale, std::abs(arc.upper));
  }
  return kRelativeTolerance * scale;
}

namespace {

bool same_structure(const FlowWarmStart& warm, int num_nodes, const std::vector<BoundedArc>& arcs) {
  if (warm.num_nodes != num_nodes || warm.from.size() != arcs.size()) return false;
  for (std::size_t i = 0; i < arcs.size(); ++i) {
    if (warm.from[i] != arcs[i].from || warm.to[i] != arcs[i].to) return false;
  }
  return true;
}

// Turns the previous flow into a feasible flow of the new network: clamp each arc to its new
// bounds, then cancel what the terminal arcs cannot absorb by lowering flow on in-arcs (excess
// moves towards the source) or out-arcs (deficit moves towards the sink). Returns the flow f' on
// each arc of the transformed network, or false when the repair does not settle quickly.
bool repair_flow(int num_nodes, int source, int sink, const std::vector<BoundedArc>& arcs,
                 const std::vector<double>& demand, const std::vector<double>& previous,
                 double tolerance, std::vector<double>& flow) {
  const std::size_t m = arcs.size();
  flow.resize(m);
  std::vector<double> balance(num_nodes, 0.0);  // inflow − outflow over the bounded arcs
  std::vector<std::vector<int>> in_arcs(num_nodes), out_arcs(num_nodes);
  for (std::size_t i = 0; i < m; ++i) {
    const BoundedArc& arc = arcs[i];
    flow[i] = std::clamp(previous[i] - arc.lower, 0.0, arc.upper - arc.lower);
    balance[arc.to] += flow[i];
    balance[arc.from] -= flow[i];
    in_arcs[arc.to].push_back(static_cast<int>(i));
    out_arcs[arc.from].push_back(static_cast<int>(i));
  }
  // Terminal capacity: v→sink carries up to demand (> 0), source→v up to −demand (< 0).
  auto to_sink = [&](int v) { return std::max(0.0, demand[v]); };
  auto from_source = [&](int v) { return std::max(0.0, -demand[v]); };
  std::vector<int> work;
  std::vector<char> queued(num_nodes, 0);
  auto enqueue = [&](int v) {
    if (v != source && v != sink && !queued[v]) {
      queued[v] = 1;
      work.push_back(v);
    }
  };
  for (int v = 0; v < num_nodes; ++v) enqueue(v);
  long long budget = 64LL * static_cast<long long>(m + num_nodes);
  while (!work.empty()) {
    if (--budget < 0) return false;
    const int v = work.back();
    work.pop_back();
    queued[v] = 0;
    double excess = balance[v] - to_sink(v);
    if (excess > tolerance) {
      for (int i : in_arcs[v]) {
        const double cut = std::min(flow[i], excess);
        if (cut <= 0.0) continue;
        flow[i] -= cut;
        excess -= cut;
        balance[v] -= cut;
        balance[arcs[i].from] += cut;
        enqueue(arcs[i].from);
        if (excess <= tolerance) break;
      }
      continue;
    }
    double deficit = -balance[v] - from_source(v);
    if (deficit > tolerance) {
      for (int i : out_arcs[v]) {
        const double cut = std::min(flow[i], deficit);
        if (cut <= 0.0) continue;
        flow[i] -= cut;
        deficit -= cut;
        balance[v] += cut;
        balance[arcs[i].to] -= cut;
        enqueue(arcs[i].to);
        if (deficit <= tolerance) break;
      }
    }
  }
  return true;
}

}  // namespace

MinCut min_cut_with_lower_bounds(int num_nodes, int source, int sink,
                                 const std::vector<BoundedArc>& arcs, FlowNetwork& scratch,
                                 FlowWarmStart* warm_start) {
  MinCut result;
  if (has_uncapacitated_path(num_nodes, source, sink, arcs)) {
    result.outcome = CutOutcome::kUnbounded;
    result.value = kInfinity;
    if (warm_start != nullptr) warm_start->num_nodes = -1;
    return result;
  }
  // C(S) = Σ_{S→T} (u − l) + Σ_{v∈S} (out_l(v) − in_l(v)): the second term is modular, so it
  // becomes arcs v→sink (positive demand, paid when v ∈ S) and source→v (negative, paid when v ∈
  // T).
  std::vector<double> demand(num_nodes, 0.0);
  scratch.reset(num_nodes);
  for (const auto& arc : arcs) {
    assert(arc.lower >= 0.0 && arc.upper >= arc.lower);
    scratch.add_arc(arc.from, arc.to, arc.upper - arc.lower);
    demand[arc.from] += arc.lower;
    demand[arc.to] -= arc.lower;
  }
  std::vector<int> terminal_arc(num_nodes, -1);
  for (int v = 0; v < num_nodes; ++v) {
    if (v == source || v == sink) continue;
    if (demand[v] > 0.0) terminal_arc[v] = scratch.add_arc(v, sink, demand[v]);
    if (demand[v] < 0.0) terminal_arc[v] = scratch.add_arc(source, v, -demand[v]);
  }
  const double tolerance = flow_tolerance(arcs);

  std::vector<double> start_flow;
  if (warm_start != nullptr && same_structure(*warm_start, num_nodes, arcs) &&
      repair_flow(num_nodes, source, sink, arcs, demand, warm_start->flow, tolerance, start_flow)) {
    std::vector<double> balance(num_nodes, 0.0);
    for (std::size_t i = 0; i < arcs.size(); ++i) {
      scratch.set_flow(2 * static_cast<int>(i), start_flow[i]);
      balance[arcs[i].to] += start_flow[i];
      balance[arcs[i].from] -= start_flow[i];
    }
    for (int v = 0; v < num_nodes; ++v) {
      if (terminal_arc[v] < 0) continue;
      const double capacity = std::abs(demand[v]);
      const double terminal = demand[v] > 0.0 ? balance[v] : -balance[v];
      scratch.set_flow(terminal_arc[v], std::clamp(terminal, 0.0, capacity));
    }
    ++warm_start->reused;
  } else if (warm_start != nullptr) {
    ++warm_start->cold;
  }
  scratch.max_flow(source, sink, tolerance);
  result.source_side = scratch.reachable_from(source, tolerance);
  result.value = cut_capacity(arcs, result.source_side);
  if (warm_start != nullptr) {
    warm_start->num_nodes = num_nodes;
    warm_start->from.resize(arcs.size());
    warm_start->to.resize(arcs.size());
    warm_start->flow.resize(arcs.size());
    for (std::size_t i = 0; i < arcs.size(); ++i) {
      warm_start->from[i] = arcs[i].from;
      warm_start->to[i] = arcs[i].to;
      warm_start->flow[i] = arcs[i].lower + scratch.flow(2 * static_cast<int>(i));
    }
  }
  return result;
}

void IncrementalMinCut::load(int num_nodes, int source, int sink,
                             const std::vector<BoundedArc>& arcs) {
  const int m = static_cast<int>(arcs.size());
  bool same = num_nodes == num_nodes_ && m == num_arcs_ && source == source_ && sink == sink_;
  for (int i = 0; same && i < m; ++i) same = arcs[i].from == from_[i] && arcs[i].to == to_[i];
  if (same) {
    for (int i = 0; i < m; ++i) set_bounds(i, arcs[i].lower, arcs[i].upper);
    return;
  }
  num_nodes_ = num_nodes;
  num_arcs_ = m;
  source_ = source;
  sink_ = sink;
  from_.resize(m);
  to_.resize(m);
  lower_.resize(m);
  upper_.resize(m);
  // Adjacency by tail, each node's entries in arc order (forward 2i, reverse 2i + 1), as
  // FlowNetwork's, so node demands are summed in the same order.
  first_entry_.assign(num_nodes + 1, 0);
  for (int i = 0; i < m; ++i) {
    const BoundedArc& arc = arcs[i];
    assert(arc.lower >= 0.0 && arc.upper >= arc.lower && arc.from != arc.to);
    from_[i] = arc.from;
    to_[i] = arc.to;
    lower_[i] = arc.lower;
    upper_[i] = arc.upper;
    ++first_entry_[arc.from + 1];
    ++first_entry_[arc.to + 1];
  }
  for (int v = 0; v < num_nodes; ++v) first_entry_[v + 1] += first_entry_[v];
  entries_.resize(2 * static_cast<std::size_t>(m));
  back_.resize(2 * static_cast<std::size_t>(m));
  arc_of_entry_.resize(2 * static_cast<std::size_t>(m));
  forward_.resize(m);
  next_entry_.assign(first_entry_.begin(), first_entry_.end() - 1);
  for (int i = 0; i < m; ++i) {
    const int f = next_entry_[from_[i]]++, r = next_entry_[to_[i]]++;
    entries_[f] = {to_[i], r, upper_[i] - lower_[i]};
    entries_[r] = {from_[i], f, 0.0};
    back_[f] = 0.0;
    back_[r] = upper_[i] - lower_[i];
    arc_of_entry_[f] = 2 * i;
    arc_of_entry_[r] = 2 * i + 1;
    forward_[i] = f;
  }
  source_residual_.assign(num_nodes, 0.0);
  source_flow_.assign(num_nodes, 0.0);
  sink_residual_.assign(num_nodes, 0.0);
  sink_flow_.assign(num_nodes, 0.0);
  distance_.assign(num_nodes, -1);
  seed_valid_ = false;
  touched_arcs_.clear();
  reached_.assign(num_nodes, 0);
  is_candidate_.assign(num_nodes, 0);
  candidates_.clear();
  is_demand_candidate_.assign(num_nodes, 0);
  demand_candidates_.clear();
  demand_.resize(num_nodes);
  for (int v = 0; v < num_nodes; ++v) demand_[v] = node_demand(v);
  is_dirty_.assign(num_nodes, 0);
  queued_.assign(num_nodes, 0);
  label_.assign(num_nodes, 0);
  current_.assign(num_nodes, 0);
  current_call_.assign(num_nodes, 0);
  label_call_ = 0;
  dirty_.clear();
  clear_flow();
  rescale_ = true;
  recheck_infinite_ = true;
}

void IncrementalMinCut::load(int num_nodes, int source, int sink,
                             const std::vector<BoundedArc>& arcs,
                             const std::vector<double>& flows) {
  const bool was_cold = cold_;
  load(num_nodes, source, sink, arcs);
  // load() keeps the flow (and cold_) when the endpoints are the same; after a rebuild cold_ is
  // set and the flow is zero.
  if (!cold_ || was_cold || flows.size() != arcs.size()) return;
  for (int i = 0; i < num_arcs_; ++i) {
    set_arc(i, upper_[i] - lower_[i], std::clamp(flows[i] - lower_[i], 0.0, upper_[i] - lower_[i]));
  }
  for (int v = 0; v < num_nodes_; ++v) mark(v);
  cold_ = false;
}

void IncrementalMinCut::set_bounds(int arc, double lower, double upper) {
  assert(lower >= 0.0 && upper >= lower);
  const double old_lower = lower_[arc], old_upper = upper_[arc];
  // The previous flow clamped to the new bounds, as FlowWarmStart's repair does.
  const double flow =
      cold_ ? 0.0 : std::clamp(old_lower + arc_flow(arc) - lower, 0.0, upper - lower);
  set_arc(arc, upper - lower, flow);
  touched_arcs_.push_back(arc);
  lower_[arc] = lower;
  upper_[arc] = upper;
  if (std::isinf(old_upper) != std::isinf(upper)) recheck_infinite_ = true;
  // The tolerance follows the largest finite bound: recompute it only when that one may shrink.
  if (scale_ > 0.0 && (old_lower == scale_ || old_upper == scale_)) rescale_ = true;
  scale_ = std::max(scale_, lower);
  if (std::isfinite(upper)) scale_ = std::max(scale_, upper);
  mark(from_[arc]);
  mark(to_[arc]);
}

void IncrementalMinCut::mark(int node) {
  if (node == source_ || node == sink_ || is_dirty_[node]) return;
  is_dirty_[node] = 1;
  dirty_.push_back(node);
}

double IncrementalMinCut::node_demand(int node) const {
  // Same summation order as min_cut_with_lower_bounds (arc order), so the same bits.
  double demand = 0.0;
  for (int e = first_entry_[node]; e < first_entry_[node + 1]; ++e) {
    const int id = arc_of_entry_[e];
    if (id % 2 == 0)
      demand += lower_[id / 2];
    else
      demand -= lower_[id / 2];
  }
  return demand;
}

double IncrementalMinCut::flow_balance(int node) const {
  double balance = 0.0;
  for (int e = first_entry_[node]; e < first_entry_[node + 1]; ++e) {
    if (is_reverse(e))
      balance += entries_[e].residual;
    else
      balance -= entries_[entries_[e].mate].residual;
  }
  return balance;
}

void IncrementalMinCut::clear_flow() {
  for (int i = 0; i < num_arcs_; ++i) set_arc(i, upper_[i] - lower_[i], 0.0);
  seed_valid_ = false;
  for (int v = 0; v < num_nodes_; ++v) {
    const bool terminal = v == source_ || v == sink_;
    source_residual_[v] = terminal ? 0.0 : std::max(0.0, -demand_[v]);
    sink_residual_[v] = terminal ? 0.0 : std::max(0.0, demand_[v]);
    source_flow_[v] = sink_flow_[v] = 0.0;
    note_supply(v);
    note_demand(v);
  }
  cold_ = true;
}

// The warm start of min_cut_with_lower_bounds, restricted to the nodes around changed arcs: excess
// the terminal arcs cannot absorb is cancelled backwards along in-arcs, deficits forwards along
// out-arcs; then the terminal flows of every node touched are set to its balance.
bool IncrementalMinCut::repair() {
  const double tolerance = kRelativeTolerance * scale_;
  work_.assign(dirty_.begin(), dirty_.end());
  for (int v : work_) queued_[v] = 1;
  long long budget = 64LL * (num_arcs_ + num_nodes_);
  while (!work_.empty()) {
    if (--budget < 0) {
      for (int v : work_) queued_[v] = 0;
      work_.clear();
      return false;
    }
    const int v = work_.back();
    work_.pop_back();
    queued_[v] = 0;
    const double balance = flow_balance(v);
    double excess = balance - std::max(0.0, demand_[v]);
    double deficit = -balance - std::max(0.0, -demand_[v]);
    if (!(excess > tolerance) && !(deficit > tolerance)) continue;
    for (int e = first_entry_[v]; e < first_entry_[v + 1]; ++e) {
      const bool incoming = is_reverse(e);
      if (incoming != (excess > tolerance)) continue;
      const int arc = arc_of_entry_[e] / 2;
      const double flow = arc_flow(arc);
      double& rest = incoming ? excess : deficit;
      const double cut = std::min(flow, rest);
      if (cut <= 0.0) continue;
      set_arc(arc, upper_[arc] - lower_[arc], flow - cut);
      touched_arcs_.push_back(arc);
      rest -= cut;
      const int other = entries_[e].head;
      mark(other);
      if (other != source_ && other != sink_ && !queued_[other]) {
        queued_[other] = 1;
        work_.push_back(other);
      }
      if (rest <= tolerance) break;
    }
  }
  for (int v : dirty_) {
    const double balance = flow_balance(v);
    const double demand = demand_[v];
    const double to_sink = demand > 0.0 ? std::clamp(balance, 0.0, demand) : 0.0;
    const double from_source = demand < 0.0 ? std::clamp(-balance, 0.0, -demand) : 0.0;
    sink_residual_[v] = std::max(0.0, demand) - to_sink;
    sink_flow_[v] = to_sink;
    source_residual_[v] = std::max(0.0, -demand) - from_source;
    source_flow_[v] = from_source;
    note_supply(v);
    note_demand(v);
  }
  return true;
}

bool IncrementalMinCut::infinite_path() {
  std::fill(reached_.begin(), reached_.end(), 0);
  queue_.clear();
  queue_.push_back(source_);
  reached_[source_] = 1;
  for (std::size_t head = 0; head < queue_.size(); ++head) {
    const int v = queue_[head];
    if (v == sink_) return true;
    for (int e = first_entry_[v]; e < first_entry_[v + 1]; ++e) {
      const int w = entries_[e].head;
      if (!reached_[w] && std::isinf(entries_[e].residual)) {
        reached_[w] = 1;
        queue_.push_back(w);
      }
    }
  }
  return false;
}

void IncrementalMinCut::note_supply(int node) {
  if (source_residual_[node] > 0.0 && !is_candidate_[node]) {
    is_candidate_[node] = 1;
    candidates_.push_back(node);
  }
}

void IncrementalMinCut::note_demand(int node) {
  if (sink_residual_[node] > 0.0 && !is_demand_candidate_[node]) {
    is_demand_candidate_[node] = 1;
    demand_candidates_.push_back(node);
  }
}

bool IncrementalMinCut::push_path(int start, int v) {
  double bottleneck = start == source_ ? kInfinity : source_residual_[start];
  for (int e : path_) bottleneck = std::min(bottleneck, entries_[e].residual);
  if (v != sink_) bottleneck = std::min(bottleneck, sink_residual_[v]);
  if (!std::isfinite(bottleneck)) return false;
  if (start != source_) {
    source_residual_[start] -= bottleneck;
    source_flow_[start] += bottleneck;
  }
  for (int e : path_) {
    const int mate = entries_[e].mate;
    entries_[e].residual -= bottleneck;
    entries_[mate].residual += bottleneck;
    back_[mate] -= bottleneck;
    back_[e] += bottleneck;
  }
  if (v != sink_) {
    sink_residual_[v] -= bottleneck;
    sink_flow_[v] += bottleneck;
  }
  return true;
}

std::size_t IncrementalMinCut::unsaturated_prefix(double tolerance) const {
  std::size_t keep = 0;
  while (keep < path_.size() && entries_[path_[keep]].residual > tolerance) ++keep;
  return keep;
}

bool IncrementalMinCut::search_source_side(double tolerance) {
  std::fill(distance_.begin(), distance_.end(), -1);
  queue_.clear();
  collect_starts(tolerance);
  for (int v : starts_) {
    distance_[v] = 0;
    next_entry_[v] = first_entry_[v];
    queue_.push_back(v);
  }
  demand_level_ = -1;
  for (std::size_t head = 0; head < queue_.size(); ++head) {
    const int v = queue_[head];
    // Shortest augmenting paths end at the first level holding a node with sink residual.
    if (demand_level_ >= 0 && distance_[v] >= demand_level_) break;
    for (int e = first_entry_[v]; e < first_entry_[v + 1]; ++e) {
      const Entry& entry = entries_[e];
      const int w = entry.head;
      if (distance_[w] >= 0 || !(entry.residual > tolerance)) continue;
      distance_[w] = distance_[v] + 1;
      next_entry_[w] = first_entry_[w];  // blocking_flow's current entry
      queue_.push_back(w);
      if (demand_level_ < 0 && is_demand(w, tolerance)) demand_level_ = distance_[w];
    }
  }
  // Otherwise distance_ marks the source side (source_side()) until the next search.
  return demand_level_ >= 0;
}

void IncrementalMinCut::collect_starts(double tolerance) {
  starts_.clear();
  starts_.push_back(source_);
  std::size_t kept = 0;
  for (int v : candidates_) {
    if (!(source_residual_[v] > 0.0)) {
      is_candidate_[v] = 0;
      continue;
    }
    candidates_[kept++] = v;
    if (source_residual_[v] > tolerance) starts_.push_back(v);
  }
  candidates_.resize(kept);
  std::sort(starts_.begin(), starts_.end());
}

int IncrementalMinCut::seeded_search(double tolerance) {
  collect_starts(tolerance);
  if (starts_ != seed_starts_) return -1;
  // Since the last search, residuals changed only on touched arcs: the old source side S keeps its
  // distances unless a touched arc lies inside S, and new nodes are reached only through the
  // touched arcs' ends in S (the seeds).
  seeds_.clear();
  for (int arc : touched_arcs_) {
    const bool tail_in = distance_[from_[arc]] >= 0, head_in = distance_[to_[arc]] >= 0;
    if (tail_in && head_in) return -1;
    if (tail_in) seeds_.push_back(from_[arc]);
    if (head_in) seeds_.push_back(to_[arc]);
  }
  std::sort(seeds_.begin(), seeds_.end(), [&](int a, int b) {
    return distance_[a] != distance_[b] ? distance_[a] < distance_[b] : a < b;
  });
  seeds_.erase(std::unique(seeds_.begin(), seeds_.end()), seeds_.end());
  queue_.clear();  // the newly reached nodes, in order of distance
  demand_level_ = -1;
  std::size_t seed = 0, head = 0;
  while (seed < seeds_.size() || head < queue_.size()) {
    int v;
    if (head == queue_.size() ||
        (seed < seeds_.size() && distance_[seeds_[seed]] <= distance_[queue_[head]])) {
      v = seeds_[seed++];
    } else {
      v = queue_[head++];
    }
    if (demand_level_ >= 0 && distance_[v] >= demand_level_) break;
    const int next = distance_[v] + 1;
    for (int e = first_entry_[v]; e < first_entry_[v + 1]; ++e) {
      const Entry& entry = entries_[e];
      if (!(entry.residual > tolerance)) continue;
      const int w = entry.head;
      if (distance_[w] >= 0) {
        if (distance_[w] > next) return -1;  // a shorter way back into S: distances moved
        continue;
      }
      distance_[w] = next;
      next_entry_[w] = first_entry_[w];
      queue_.push_back(w);
      if (demand_level_ < 0 && is_demand(w, tolerance)) demand_level_ = next;
    }
  }
  return demand_level_ >= 0 ? 1 : 0;
}

void IncrementalMinCut::blocking_flow(double tolerance) {
  for (int start : starts_) {
    int v = start;
    path_.clear();
    while (true) {
      if (distance_[v] == demand_level_ && is_demand(v, tolerance)) {
        // Infinite paths are found before (unbounded_).
        [[maybe_unused]] const bool pushed = push_path(start, v);
        assert(pushed);
        if (start != source_ && !(source_residual_[start] > tolerance)) break;
        // Retreat to the tail of the first saturated arc; when only v's sink arc was, v is now
        // a dead end and the search below retreats from it.
        const std::size_t keep = unsaturated_prefix(tolerance);
        if (keep < path_.size()) {
          path_.resize(keep);
          v = keep == 0 ? start : entries_[path_.back()].head;
          continue;
        }
      }
      bool advanced = false;
      if (distance_[v] < demand_level_) {
        const int want = distance_[v] + 1;
        for (int& e = next_entry_[v]; e < first_entry_[v + 1]; ++e) {
          const Entry& entry = entries_[e];
          if (distance_[entry.head] == want && entry.residual > tolerance) {
            path_.push_back(e);
            v = entry.head;
            advanced = true;
            break;
          }
        }
      }
      if (advanced) continue;
      distance_[v] = -1;  // dead end: out of the level graph
      if (path_.empty()) break;
      const int e = path_.back();
      path_.pop_back();
      v = entries_[entries_[e].mate].head;
      ++next_entry_[v];
    }
  }
}

// Distances from the supplies (the source and the nodes with source residual) through residual
// arcs, by a breadth-first search; nodes that no supply reaches get num_nodes_. The hot loop works
// on raw pointers (stores to label_ would otherwise reload the members).
//
// The partial search: the nodes labelled below exact_below are a prefix of label_order_ (they were
// labelled below it by the last search and have not changed since, and every other label only
// rose), and since labels are lower bounds on distances, they are exactly the nodes at distance
// below exact_below. The breadth-first search restarted from the last layer of that prefix (the
// nodes at exact_below − 1) over the nodes after it gives the same distances as a search from the
// supplies, and leaves label_order_ in label order again.
void IncrementalMinCut::compute_labels(double tolerance, int exact_below) {
  ++global_labels;
  const int n = num_nodes_;
  int* label = label_.data();
  label_order_.resize(static_cast<std::size_t>(n));  // every node enters at most once
  int* order = label_order_.data();
  int head = 0, tail = 0;
  if (exact_below <= 0) {
    std::fill(label, label + n, n);
    // starts_ holds this solve's supplies; pushes since only lowered source residuals.
    for (int v : starts_) {
      if (v == source_ || source_residual_[v] > tolerance) {
        label[v] = 0;
        order[tail++] = v;
      }
    }
  } else {
    // First positions with a label ≥ exact_below and ≥ exact_below − 1 (labels along the prefix
    // are nondecreasing; after it all are ≥ exact_below).
    auto first_at_least = [&](int level) {
      return static_cast<int>(std::partition_point(order, order + label_count_,
                                                   [&](int v) { return label[v] < level; }) -
                              order);
    };
    tail = first_at_least(exact_below);
    head = first_at_least(exact_below - 1);
    for (int i = tail; i < label_count_; ++i) label[order[i]] = n;
  }
  const int searched_from = exact_below <= 0 ? 0 : tail;
  const Entry* entries = entries_.data();
  const int* first = first_entry_.data();
  for (; head < tail; ++head) {
    const int x = order[head];
    const int next = label[x] + 1;
    for (int e = first[x], end = first[x + 1]; e < end; ++e) {
      const int w = entries[e].head;
      if (label[w] != n || !(entries[e].residual > tolerance)) continue;
      label[w] = next;
      order[tail++] = w;
    }
  }
  label_count_ = tail;
  labelled_nodes += tail - searched_from;
  if (exact_below <= 0) return;
  ++partial_labels;
  if (verify_labels) {
    const std::vector<int> partial(label_.begin(), label_.end());
    const long long counted = global_labels, nodes = labelled_nodes;
    compute_labels(tolerance, 0);
    global_labels = counted;
    labelled_nodes = nodes;
    for (int v = 0; v < n; ++v)
      label_mismatches += partial[static_cast<std::size_t>(v)] != label_[v];
  }
}

// Any maximum flow gives the same minimal cut (residual reachability from the source), so the
// augmenting paths are free. Dinic's phases label the whole ~7,000-node network from the source
// to find ~2 paths of ~530 arcs per phase at 16 x 128, ~5 phases per solve that augments. Here one
// search labels every node with its distance from the supplies, and paths then run backwards from
// each demand along arcs whose tail is one label lower (a dead end is relabelled to 1 + its lowest
// residual in-neighbour and the path retreats), so each further path costs about its length
// instead of a phase. Labels need not stay exact: stale ones cost relabels, not correctness, and
// after kRelabelShare·nodes relabels they are recomputed — only behind the lowest arc saturated
// since (below it every label is still exact; at 16 x 128 about a fifth of the labels are kept per
// search, docs/benchmarks.md, seventh round). The search that follows decides whether the flow
// is maximal; the phases finish it when this gave up (work bound).
bool IncrementalMinCut::label_augment(double tolerance) {
  // Labels kept from the last solve are useless: at a maximum flow no demand is reachable from a
  // supply. So every call starts from exact ones.
  compute_labels(tolerance, 0);
  // Labels below exact_below are exact distances (all are, right after a search): a push removes
  // only arcs it saturates, whose heads lie at label[tail] + 1, and adds reverse arcs that lead one
  // label down, so every node below the lowest saturated arc's head keeps its distance — unless the
  // supply at the path's start ran out (then none is known). Relabels happen only at or above it.
  int exact_below = num_nodes_ + 1;
  long long budget =
      static_cast<long long>(kLabelBudget * (static_cast<double>(entries_.size()) + num_nodes_));
  if (label_call_ == std::numeric_limits<int>::max()) {
    std::fill(current_call_.begin(), current_call_.end(), 0);
    label_call_ = 0;
  }
  const int call = ++label_call_;
  auto entry_of = [&](int v) -> int& {
    if (current_call_[v] != call) {
      current_call_[v] = call;
      current_[v] = first_entry_[v];
    }
    return current_[v];
  };
  auto is_supply = [&](int v) { return v == source_ || source_residual_[v] > tolerance; };
  // The demands, in node order.
  ends_.clear();
  ends_.push_back(sink_);
  std::size_t kept = 0;
  for (int v : demand_candidates_) {
    if (!(sink_residual_[v] > 0.0)) {
      is_demand_candidate_[v] = 0;
      continue;
    }
    demand_candidates_[kept++] = v;
    if (v != source_ && v != sink_ && sink_residual_[v] > tolerance) ends_.push_back(v);
  }
  demand_candidates_.resize(kept);
  std::sort(ends_.begin(), ends_.end());
  bool augmented = false;
  const long long relabel_limit = std::max(1LL, static_cast<long long>(kRelabelShare * num_nodes_));
  long long relabels = 0;
  // path_ holds the arcs' entries at their tails, from the demand backwards.
  for (int end : ends_) {
    int v = end;
    path_.clear();
    while (label_[end] < num_nodes_) {
      if (--budget < 0) return augmented;
      if (v != sink_ && is_supply(v)) {
        if (!push_path(v, end)) return augmented;  // unbounded: left to the phases
        for (int e : path_) {
          if (!(entries_[e].residual > tolerance))
            exact_below = std::min(exact_below, label_[entries_[e].head]);
        }
        if (v != source_ && !(source_residual_[v] > tolerance)) exact_below = 0;
        ++label_paths;
        augmented = true;
        if (end != sink_ && !(sink_residual_[end] > tolerance)) break;
        const std::size_t keep = unsaturated_prefix(tolerance);
        path_.resize(keep);
        v = keep == 0 ? end : entries_[entries_[path_.back()].mate].head;
        continue;
      }
      bool advanced = false;
      const int want = label_[v] - 1;
      for (int& e = entry_of(v); e < first_entry_[v + 1]; ++e) {
        const Entry& entry = entries_[e];
        --budget;
        if (label_[entry.head] == want && back_[e] > tolerance) {
          path_.push_back(entry.mate);
          v = entry.head;
          advanced = true;
          break;
        }
      }
      if (advanced) continue;
      // Dead end: relabel to one more than the lowest residual in-neighbour, then retreat.
      int lowest = num_nodes_ - 1;
      for (int e = first_entry_[v]; e < first_entry_[v + 1]; ++e) {
        if (back_[e] > tolerance) lowest = std::min(lowest, label_[entries_[e].head]);
      }
      budget -= first_entry_[v + 1] - first_entry_[v];
      label_[v] = (v != sink_ && is_supply(v)) ? 0 : lowest + 1;
      if (++relabels > relabel_limit) {
        // Saturations in a thin network raise whole regions step by step: relabel them at once.
        compute_labels(tolerance, exact_below);
        exact_below = num_nodes_ + 1;
        budget -= num_nodes_;
        relabels = 0;
        path_.clear();
        v = end;
        continue;
      }
      current_[v] = first_entry_[v];
      if (path_.empty()) continue;
      const int e = path_.back();
      path_.pop_back();
      v = entries_[e].head;
    }
  }
  return augmented;
}

CutOutcome IncrementalMinCut::solve() {
  for (int v : dirty_) demand_[v] = node_demand(v);
  if (recheck_infinite_) {
    unbounded_ = infinite_path();
    recheck_infinite_ = false;
  }
  if (unbounded_) return CutOutcome::kUnbounded;
  if (rescale_) {
    scale_ = 0.0;
    for (int i = 0; i < num_arcs_; ++i) {
      scale_ = std::max(scale_, std::abs(lower_[i]));
      if (std::isfinite(upper_[i])) scale_ = std::max(scale_, std::abs(upper_[i]));
    }
    rescale_ = false;
  }
  if (cold_ || !repair()) {
    clear_flow();
    ++cold_solves;
  } else {
    ++warm_solves;
  }
  const double tolerance = kRelativeTolerance * scale_;
  // A node of the last source side that now has sink residual would end the first search early:
  // search from scratch then.
  bool seeded = seed_valid_ && tolerance == seed_tolerance_;
  for (int v : dirty_) {
    is_dirty_[v] = 0;
    if (distance_[v] >= 0 && is_demand(v, tolerance)) seeded = false;
  }
  dirty_.clear();
  // The repaired flow is often maximal already: one search of the source side then decides.
  bool augment = false;
  if (seeded) {
    const int outcome = seeded_search(tolerance);
    if (outcome < 0) {
      augment = search_source_side(tolerance);
    } else {
      augment = outcome == 1;
      ++seeded_searches;
    }
  } else {
    augment = search_source_side(tolerance);
  }
  if (augment && label_augment(tolerance)) augment = search_source_side(tolerance);
  while (augment) {
    ++phases;
    blocking_flow(tolerance);
    augment = search_source_side(tolerance);
  }
  // distance_ now labels the source side; the next solve's first search can start from it.
  touched_arcs_.clear();
  seed_valid_ = true;
  seed_tolerance_ = tolerance;
  seed_starts_.assign(starts_.begin(), starts_.end());
  cold_ = false;
  return CutOutcome::kOptimal;
}

MinCut max_flow_with_lower_bounds(int num_nodes, int source, int sink,
                                  const std::vector<BoundedArc>& arcs) {
  MinCut result;
  if (has_uncapacitated_path(num_nodes, source, sink, arcs)) {
    result.outcome = CutOutcome::kUnbounded;
    result.value = kInfinity;
    return result;
  }
  const int helper_source = num_nodes, helper_sink = num_nodes + 1;
  FlowNetwork network;
  network.reset(num_nodes + 2);
  std::vector<double> inflow_lower(num_nodes, 0.0), outflow_lower(num_nodes, 0.0);
  for (const auto& arc : arcs) {
    network.add_arc(arc.from, arc.to, arc.upper - arc.lower);
    inflow_lower[arc.to] += arc.lower;
    outflow_lower[arc.from] += arc.lower;
  }
  std::vector<int> helper_arcs;
  double required = 0.0;
  for (int v = 0; v < num_nodes; ++v) {
    if (inflow_lower[v] > 0.0)
      helper_arcs.push_back(network.add_arc(helper_source, v, inflow_lower[v]));
    if (outflow_lower[v] > 0.0)
      helper_arcs.push_back(network.add_arc(v, helper_sink, outflow_lower[v]));
    required += inflow_lower[v];
  }
  helper_arcs.push_back(network.add_arc(sink, source, kInfinity));
  const double tolerance = flow_tolerance(arcs);
  const double phase_one = network.max_flow(helper_source, helper_sink, tolerance);
  if (phase_one < required - tolerance * std::max<std::size_t>(1, arcs.size())) {
    result.outcome = CutOutcome::kInfeasible;
    return result;
  }
  // The residual of the original arcs now describes a feasible flow f = f' + l; drop the helpers
  // and augment from source to sink (residuals u − f forward, f − l backward).
  for (int arc : helper_arcs) network.disable_arc(arc);
  network.max_flow(source, sink, tolerance);
  result.source_side = network.reachable_from(source, tolerance);
  result.source_side.resize(num_nodes);
  result.value = cut_capacity(arcs, result.source_side);
  return result;
}

MinCut brute_force_min_cut(int num_nodes, int source, int sink,
                           const std::vector<BoundedArc>& arcs) {
  assert(num_nodes <= 22);
  std::vector<int> free_nodes;
  for (int v = 0; v < num_nodes; ++v) {
    if (v != source && v != sink) free_nodes.push_back(v);
  }
  MinCut best;
  best.value = kInfinity;
  best.outcome = CutOutcome::kUnbounded;
  std::vector<char> side(num_nodes, 0);
  for (std::uint32_t mask = 0; mask < (1u << free_nodes.size()); ++mask) {
    std::fill(side.begin(), side.end(), 0);
    side[source] = 1;
    for (std::size_t i = 0; i < free_nodes.size(); ++i) side[free_nodes[i]] = (mask >> i) & 1u;
    const double value = cut_capacity(arcs, side);
    if (value < best.value) {
      best.value = value;
      best.source_side = side;
      best.outcome = CutOutcome::kOptimal;
    }
  }
  return best;
}

}  // namespace powertrain::flow
