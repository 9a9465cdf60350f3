// Phillips–Dessouky on the critical DAG: one node pair per critical instruction, capacities from
// the cost slopes, a minimum cut with lower bounds, then ±τ on the cut's instructions.
#include "frontier/solver.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>

#include "flow/contraction.h"
#include "flow/max_flow.h"

namespace powertrain::frontier {

using flow::ArcContraction;
using flow::BoundedArc;
using flow::CutOutcome;
using flow::FlowNetwork;
using flow::FlowWarmStart;
using flow::IncrementalMinCut;
using flow::MinCut;

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

struct Schedule {
  std::vector<int> earliest_finish;
  std::vector<int> latest_finish;
  int makespan = 0;
};

void forward_pass(const pipeline::OperationDag& dag, const std::vector<int>& d, Schedule& s) {
  s.earliest_finish.assign(d.size(), 0);
  s.makespan = 0;
  for (int v : dag.topological_order) {
    int start = 0;
    for (int p : dag.predecessors[v]) start = std::max(start, s.earliest_finish[p]);
    s.earliest_finish[v] = start + d[v];
    s.makespan = std::max(s.makespan, s.earliest_finish[v]);
  }
}

void backward_pass(const pipeline::OperationDag& dag, const std::vector<int>& d, Schedule& s) {
  s.latest_finish.assign(d.size(), s.makespan);
  for (auto it = dag.topological_order.rbegin(); it != dag.topological_order.rend(); ++it) {
    const int v = *it;
    int finish = s.makespan;
    for (int w : dag.successors[v]) finish = std::min(finish, s.latest_finish[w] - d[w]);
    s.latest_finish[v] = finish;
  }
}

// Longest path through each node (start of the node's earliest start to the end of the DAG).
std::vector<int> longest_through(const pipeline::OperationDag& dag, const std::vector<int>& d,
                                 const Schedule& s) {
  std::vector<int> to_end(d.size(), 0);
  for (auto it = dag.topological_order.rbegin(); it != dag.topological_order.rend(); ++it) {
    const int v = *it;
    int tail = 0;
    for (int w : dag.successors[v]) tail = std::max(tail, to_end[w]);
    to_end[v] = d[v] + tail;
  }
  std::vector<int> through(d.size());
  for (std::size_t v = 0; v < d.size(); ++v) through[v] = s.earliest_finish[v] - d[v] + to_end[v];
  return through;
}

}  // namespace

template <typename Duration>
Duration longest_path(const pipeline::OperationDag& dag, const std::vector<Duration>& durations) {
  std::vector<Duration> finish(durations.size(), Duration{});
  Duration makespan{};
  for (int v : dag.topological_order) {
    Duration start{};
    for (int p : dag.predecessors[v]) start = std::max(start, finish[p]);
    finish[v] = start + durations[v];
    makespan = std::max(makespan, finish[v]);
  }
  return makespan;
}
template int longest_path<int>(const pipeline::OperationDag&, const std::vector<int>&);
template double longest_path<double>(const pipeline::OperationDag&, const std::vector<double>&);

double planned_energy(const PlanningProblem& problem, const std::vector<int>& durations,
                      int time_units) {
  double energy = 0.0;
  for (std::size_t v = 0; v < durations.size(); ++v) {
    energy += problem.model_of(static_cast<int>(v)).cost(durations[v]);
  }
  return energy + problem.num_gpus() * time_units * problem.settings.unit_time_s *
                      problem.settings.p_blocking_w;
}

std::vector<int> Frontier::durations_at(std::size_t point) const {
  std::vector<int> units = initial_units;
  for (std::size_t i = change_offsets[0]; i < change_offsets[point + 1] && i < changes.size();
       ++i) {
    units[changes[i].operation] = changes[i].units;
  }
  return units;
}

namespace {

// Undoes the slow-downs that lie on a path longer than T − τ (`through`: the longest path through
// each instruction); when none does — which cannot happen, as every critical path crosses the cut
// forward — undoes them all. Undone entries of `lengthened` become −1.
void revert_slowdowns(const std::vector<int>& through, int makespan, std::vector<int>& lengthened,
                      std::vector<int>& d, SolverStats& stats) {
  bool reverted = false;
  for (int& v : lengthened) {
    if (v >= 0 && through[v] > makespan - 1) {
      --d[v];
      v = -1;
      reverted = true;
      ++stats.reverted_slowdowns;
    }
  }
  if (!reverted) {
    for (int& v : lengthened) {
      if (v >= 0) {
        --d[v];
        v = -1;
      }
    }
  }
}

// Appends this step's changed instructions once each, with their final durations (a revert may
// have restored some). `touched` is all zero before and after.
void record_changes(const std::vector<int>& changed, const std::vector<int>& d,
                    std::vector<char>& touched, Frontier& frontier) {
  for (int v : changed) {
    if (!touched[v]) {
      touched[v] = 1;
      frontier.changes.push_back({v, d[v]});
    }
  }
  for (std::size_t i = frontier.change_offsets.back(); i < frontier.changes.size(); ++i) {
    DurationChange& change = frontier.changes[i];
    change.units = d[change.operation];
    touched[change.operation] = 0;
  }
}

// The pre-issue-12 step, kept as the reference the incremental engine is tested against: each step
// rebuilds the critical DAG, its contraction and the flow network from scratch.
Frontier solve_reference(const PlanningProblem& problem, const SolverOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  const pipeline::OperationDag& dag = problem.dag;
  const int n = dag.size();
  Frontier frontier;
  std::vector<int> d(n);
  std::vector<int> fastest(n);
  for (int v = 0; v < n; ++v) {
    d[v] = problem.model_of(v).max_units();
    fastest[v] = problem.model_of(v).min_units();
  }
  frontier.initial_units = d;
  frontier.change_offsets.push_back(0);

  const int lower_bound = longest_path(dag, fastest);
  Schedule schedule;
  forward_pass(dag, d, schedule);
  const int slowest = schedule.makespan;

  FlowNetwork network;
  FlowWarmStart warm_start;
  std::vector<BoundedArc> arcs, raw_arcs;
  ArcContraction contraction;
  std::vector<int> in_node(n), out_node(n), critical_ops;
  std::vector<int> lengthened, changed;
  std::vector<char> touched(n, 0);
  long long last_report = -1;

  while (true) {
    frontier.points.push_back({schedule.makespan, planned_energy(problem, d, schedule.makespan)});
    frontier.change_offsets.push_back(frontier.changes.size());
    if (options.max_points != 0 && frontier.points.size() >= options.max_points) break;
    if (options.progress) {
      const long long done = slowest - schedule.makespan;
      const long long total = std::max(1, slowest - lower_bound);
      if (done * 100 / total != last_report) {
        last_report = done * 100 / total;
        options.progress(done, total);
      }
    }
    backward_pass(dag, d, schedule);
    const int makespan = schedule.makespan;

    // Critical DAG: nodes with zero slack, dependency edges that are tight.
    critical_ops.clear();
    for (int v : dag.topological_order) {
      if (schedule.earliest_finish[v] == schedule.latest_finish[v]) critical_ops.push_back(v);
    }
    frontier.stats.max_critical_operations =
        std::max(frontier.stats.max_critical_operations, critical_ops.size());
    const int source = 0, sink = 1;
    int num_nodes = 2;
    for (int v : critical_ops) {
      in_node[v] = num_nodes++;
      out_node[v] = num_nodes++;
    }
    // Arcs of the critical DAG: one per critical instruction (lower, upper from the cost slopes)
    // and uncapacitated ones for tight dependencies and the source/sink.
    raw_arcs.clear();
    for (int v : critical_ops) {
      const InstructionCostModel& model = problem.model_of(v);
      BoundedArc arc{in_node[v], out_node[v], 0.0, kInfinity};
      // Lower bound: energy saved by slowing down one τ; upper: energy added by speeding up one τ.
      if (d[v] < model.max_units())
        arc.lower = std::max(0.0, model.cost(d[v]) - model.cost(d[v] + 1));
      if (d[v] > model.min_units())
        arc.upper = std::max(arc.lower, model.cost(d[v] - 1) - model.cost(d[v]));
      raw_arcs.push_back(arc);
      const int start = schedule.earliest_finish[v] - d[v];
      if (start == 0) raw_arcs.push_back({source, in_node[v], 0.0, kInfinity});
      if (schedule.earliest_finish[v] == makespan)
        raw_arcs.push_back({out_node[v], sink, 0.0, kInfinity});
      for (int w : dag.successors[v]) {
        if (schedule.earliest_finish[w] == schedule.latest_finish[w] &&
            schedule.earliest_finish[w] - d[w] == schedule.earliest_finish[v]) {
          raw_arcs.push_back({out_node[v], in_node[w], 0.0, kInfinity});
        }
      }
    }
    // Merge the ends of free arcs that some minimum cut never separates (flow/contraction.h).
    const int num_compact = contraction.contract(
        num_nodes, static_cast<int>(raw_arcs.size()), source, sink,
        [&](int k) { return raw_arcs[k].from; }, [&](int k) { return raw_arcs[k].to; },
        [&](int k) { return std::isinf(raw_arcs[k].upper) && raw_arcs[k].lower == 0.0; });
    arcs.clear();
    for (const BoundedArc& arc : raw_arcs) {
      const int a = contraction.node(arc.from), b = contraction.node(arc.to);
      if (a != b) arcs.push_back({a, b, arc.lower, arc.upper});
    }
    MinCut cut =
        options.engine == MaxFlowEngine::kDinic
            ? flow::min_cut_with_lower_bounds(num_compact, 0, 1, arcs, network, &warm_start)
            : flow::boost_min_cut_with_lower_bounds(
                  num_compact, 0, 1, arcs, options.engine == MaxFlowEngine::kBoostBoykovKolmogorov);
    if (cut.outcome != CutOutcome::kOptimal) break;  // no finite cut: T_min reached

    lengthened.clear();
    changed.clear();
    for (int v : critical_ops) {
      const bool in_s = cut.source_side[contraction.node(in_node[v])];
      const bool out_s = cut.source_side[contraction.node(out_node[v])];
      const InstructionCostModel& model = problem.model_of(v);
      if (in_s && !out_s) {
        --d[v];
        changed.push_back(v);
      } else if (!in_s && out_s && d[v] < model.max_units() &&
                 model.cost(d[v]) - model.cost(d[v] + 1) > 0.0) {
        ++d[v];
        changed.push_back(v);
        lengthened.push_back(v);
      }
    }
    forward_pass(dag, d, schedule);
    // A slowed-down instruction may also lie on a path that had exactly one τ of slack; undo such
    // slow-downs until every path is at most T − τ.
    while (schedule.makespan > makespan - 1) {
      revert_slowdowns(longest_through(dag, d, schedule), makespan, lengthened, d, frontier.stats);
      forward_pass(dag, d, schedule);
    }
    if (schedule.makespan < makespan - 1) ++frontier.stats.multi_unit_steps;
    record_changes(changed, d, touched, frontier);
    ++frontier.stats.iterations;
  }
  if (options.progress)
    options.progress(slowest - schedule.makespan, std::max(1, slowest - lower_bound));
  frontier.stats.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return frontier;
}

// Compressed adjacency of the DAG (contiguous, unlike OperationDag's vectors of vectors), over
// topological positions: row i lists the positions of the neighbours of node order[i], in the
// DAG's order.
struct Csr {
  std::vector<int> start, items;
  void build(const std::vector<std::vector<int>>& lists, const std::vector<int>& order,
             const std::vector<int>& position) {
    start.assign(lists.size() + 1, 0);
    items.clear();
    for (std::size_t i = 0; i < order.size(); ++i) {
      for (int w : lists[order[i]]) items.push_back(position[w]);
      start[i + 1] = static_cast<int>(items.size());
    }
  }
  const int* begin(int v) const { return items.data() + start[v]; }
  const int* end(int v) const { return items.data() + start[v + 1]; }
};

// Bounds of a critical instruction's arc: lower = energy saved by slowing down one τ (0 at the
// slowest), upper = energy added by speeding up one τ (+∞ at the fastest). Same expressions as the
// reference step, so the same bits.
void instruction_bounds(const InstructionCostModel& model, int d, double& lower, double& upper) {
  lower = 0.0;
  upper = kInfinity;
  if (d < model.max_units()) lower = std::max(0.0, model.cost(d) - model.cost(d + 1));
  if (d > model.min_units()) upper = std::max(lower, model.cost(d - 1) - model.cost(d));
}

// The incremental engine. Per-node state is indexed by topological position (node order[i] is
// position i), so both longest-path passes read their arrays sequentially and most neighbours
// nearby; node ids appear only in the recorded changes and the energy sum. Per step it runs both
// longest-path passes; the backward pass also
// checks each node's critical-arc signature, and when none changed — 97 % of steps at 96
// microbatches — the critical DAG and its contraction are reused, only the arcs of instructions
// whose duration changed get new bounds, and IncrementalMinCut repairs the previous maximum flow
// around them. Otherwise the critical DAG is listed (flat arrays, no allocation), contracted again
// and the flow network reloaded, starting from the last network's flows arc by arc. Same cut
// rule, tolerance and tie-breaking as solve_reference.
Frontier solve_incremental(const PlanningProblem& problem, const SolverOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  const pipeline::OperationDag& dag = problem.dag;
  const int n = dag.size();
  const std::vector<int>& order = dag.topological_order;  // node id at each position
  std::vector<int> position(n);
  for (int i = 0; i < n; ++i) position[order[i]] = i;
  Csr successors, predecessors;
  successors.build(dag.successors, order, position);
  predecessors.build(dag.predecessors, order, position);

  Frontier frontier;
  std::vector<const InstructionCostModel*> model(n);
  std::vector<int> d(n), fastest(n);
  std::vector<double> cost_by_id(n), lower(n), upper(n);
  auto refresh = [&](int v) {
    cost_by_id[order[v]] = model[v]->cost(d[v]);
    instruction_bounds(*model[v], d[v], lower[v], upper[v]);
  };
  for (int v = 0; v < n; ++v) {
    model[v] = &problem.model_of(order[v]);
    d[v] = model[v]->max_units();
    fastest[v] = model[v]->min_units();
    refresh(v);
  }
  frontier.initial_units.resize(n);
  for (int v = 0; v < n; ++v) frontier.initial_units[order[v]] = d[v];
  frontier.change_offsets.push_back(0);
  // planned_energy with the costs cached: same terms in the same order (node ids), so the same
  // bits.
  auto energy_at = [&](int time_units) {
    double energy = 0.0;
    for (int v = 0; v < n; ++v) energy += cost_by_id[v];
    return energy + problem.num_gpus() * time_units * problem.settings.unit_time_s *
                        problem.settings.p_blocking_w;
  };

  // latest_start = latest finish − duration, and critical_start = the start of a node with zero
  // slack (−1 otherwise), so the inner loops read one array per neighbour.
  std::vector<int> finish(n), latest_start(n), critical_start(n);
  auto forward = [&]() {
    int makespan = 0;
    for (int v = 0; v < n; ++v) {
      int start = 0;
      for (const int* p = predecessors.begin(v); p != predecessors.end(v); ++p)
        start = std::max(start, finish[*p]);
      finish[v] = start + d[v];
      makespan = std::max(makespan, finish[v]);
    }
    return makespan;
  };
  // The critical DAG's arcs at a node are a function of its signature: bit 0 critical, bit 1 a
  // source arc (starts at 0), bit 2 a sink arc (ends at T), bit 3 its instruction arc is free
  // (lower 0, upper +inf), bit 4 + i the arc to its i-th successor is tight. The list of all arcs
  // (and so the contraction) is unchanged exactly when no node's signature changed, which the
  // backward pass checks in passing, so most steps skip listing the arcs. Nodes with more
  // successors than the signature holds turn the check off (then every step lists).
  constexpr int kSignatureSuccessors = 27;
  bool signatures_usable = true;
  for (int v = 0; v < n; ++v) {
    if (successors.end(v) - successors.begin(v) > kSignatureSuccessors) signatures_usable = false;
  }
  std::vector<std::uint32_t> signature(n, 0);
  // Latest starts and critical starts; true when some node's signature changed.
  auto backward = [&](int makespan) {
    bool changed_signature = false;
    for (int v = n - 1; v >= 0; --v) {
      int end = makespan;
      std::uint32_t tight = 0, bit = 1u << 4;
      const int f = finish[v];
      for (const int* w = successors.begin(v); w != successors.end(v); ++w, bit <<= 1) {
        end = std::min(end, latest_start[*w]);
        if (critical_start[*w] == f) tight |= bit;
      }
      latest_start[v] = end - d[v];
      const bool critical = f == end;
      std::uint32_t sig = 0;
      if (critical) {
        critical_start[v] = f - d[v];
        sig = 1u | (f == d[v] ? 2u : 0u) | (f == makespan ? 4u : 0u) |
              (lower[v] == 0.0 && std::isinf(upper[v]) ? 8u : 0u) | tight;
      } else {
        critical_start[v] = -1;
      }
      if (sig != signature[v]) {
        signature[v] = sig;
        changed_signature = true;
      }
    }
    return changed_signature || !signatures_usable;
  };
  // The critical instructions (zero slack) in topological order, after the backward pass.
  std::vector<int> critical_ops;
  auto list_critical = [&]() {
    critical_ops.clear();
    for (int v = 0; v < n; ++v) {
      if (critical_start[v] >= 0) critical_ops.push_back(v);
    }
  };

  int lower_bound = 0;
  {
    std::vector<int> fastest_finish(n);
    for (int v = 0; v < n; ++v) {
      int start = 0;
      for (const int* p = predecessors.begin(v); p != predecessors.end(v); ++p)
        start = std::max(start, fastest_finish[*p]);
      fastest_finish[v] = start + fastest[v];
      lower_bound = std::max(lower_bound, fastest_finish[v]);
    }
  }
  int makespan_now = forward();
  const int slowest = makespan_now;

  // The critical DAG of this step and the previous one, as flat arc lists: arc k goes from node
  // raw_from[k] to raw_to[k]; raw_op[k] is the instruction of an instruction arc, -1 for a
  // dependency or terminal arc. The contraction is a function of these lists and of which
  // instruction arcs are uncapacitated with lower bound 0 (raw_free).
  std::vector<int> raw_from, raw_to, raw_op;
  std::vector<char> raw_free;
  std::vector<int> in_node(n, -1), out_node(n, -1);
  ArcContraction contraction;
  std::vector<int> compact_arc(n, -1);
  std::vector<int> arc_ops;  // critical instructions with a contracted arc, in critical order
  std::vector<BoundedArc> arcs;
  // A key per arc of the critical DAG that survives renumbering: the instruction at position v
  // (v), its source arc (n + v), its sink arc (2n + v), its arc to its i-th successor (3n + CSR
  // index).
  // arc_key[k] is the key of contracted arc k; key_flow holds the flows of the last network by
  // key (valid where key_stamp == the load's stamp), so a new contraction starts from them.
  std::vector<int> raw_key, arc_key;
  std::vector<double> key_flow(3 * static_cast<std::size_t>(n) + successors.items.size(), 0.0);
  std::vector<int> key_stamp(key_flow.size(), 0);
  std::vector<double> initial_flows;
  int stamp = 0;
  std::vector<int> lengthened, changed, last_changed, changed_ids;
  std::vector<char> touched(n, 0);
  std::vector<int> to_end, through;  // longest paths, only when a slow-down must be undone
  std::vector<int> d_by_id = frontier.initial_units;  // d by node id, for record_changes
  IncrementalMinCut cut;
  bool have_structure = false;
  long long last_report = -1;
  const int source = 0, sink = 1;

  // Lists the critical DAG's arcs, contracts them exactly as solve_reference does (same arcs in
  // the same order, same merges) and loads the contracted network (warm when its arcs are
  // unchanged).
  auto load_structure = [&](int makespan) {
    int num_nodes = 2;
    for (int v : critical_ops) {
      in_node[v] = num_nodes++;
      out_node[v] = num_nodes++;
    }
    raw_from.clear();
    raw_to.clear();
    raw_op.clear();
    raw_free.clear();
    raw_key.clear();
    auto add_raw = [&](int from, int to, int op, bool free, int key) {
      raw_from.push_back(from);
      raw_to.push_back(to);
      raw_op.push_back(op);
      raw_free.push_back(free);
      raw_key.push_back(key);
    };
    for (int v : critical_ops) {
      add_raw(in_node[v], out_node[v], v, lower[v] == 0.0 && std::isinf(upper[v]), v);
      if (finish[v] - d[v] == 0) add_raw(source, in_node[v], -1, true, n + v);
      if (finish[v] == makespan) add_raw(out_node[v], sink, -1, true, 2 * n + v);
      for (const int* w = successors.begin(v); w != successors.end(v); ++w) {
        if (critical_start[*w] == finish[v]) {
          add_raw(out_node[v], in_node[*w], -1, true,
                  3 * n + static_cast<int>(w - successors.items.data()));
        }
      }
    }
    // The last network's flows by key.
    if (have_structure) {
      ++stamp;
      for (std::size_t k = 0; k < arc_key.size(); ++k) {
        key_flow[arc_key[k]] = cut.flow(static_cast<int>(k));
        key_stamp[arc_key[k]] = stamp;
      }
    }
    const int num_compact = contraction.contract(
        num_nodes, static_cast<int>(raw_from.size()), source, sink,
        [&](int k) { return raw_from[k]; }, [&](int k) { return raw_to[k]; },
        [&](int k) { return raw_free[k] != 0; });
    arcs.clear();
    arc_key.clear();
    initial_flows.clear();
    for (int v : arc_ops) compact_arc[v] = -1;
    arc_ops.clear();
    for (std::size_t k = 0; k < raw_from.size(); ++k) {
      const int a = contraction.node(raw_from[k]), b = contraction.node(raw_to[k]);
      if (a == b) continue;
      const int v = raw_op[k];
      if (v >= 0) {
        compact_arc[v] = static_cast<int>(arcs.size());
        arc_ops.push_back(v);
      }
      arcs.push_back({a, b, v >= 0 ? lower[v] : 0.0, v >= 0 ? upper[v] : kInfinity});
      arc_key.push_back(raw_key[k]);
      initial_flows.push_back(stamp > 0 && key_stamp[raw_key[k]] == stamp ? key_flow[raw_key[k]]
                                                                          : 0.0);
    }
    cut.load(num_compact, source, sink, arcs, initial_flows);
    have_structure = true;
  };

  while (true) {
    frontier.points.push_back({makespan_now, energy_at(makespan_now)});
    frontier.change_offsets.push_back(frontier.changes.size());
    if (options.max_points != 0 && frontier.points.size() >= options.max_points) break;
    if (options.progress) {
      const long long done = slowest - makespan_now;
      const long long total = std::max(1, slowest - lower_bound);
      if (done * 100 / total != last_report) {
        last_report = done * 100 / total;
        options.progress(done, total);
      }
    }
    const bool new_signatures = backward(makespan_now);
    const int makespan = makespan_now;
    const bool same_structure = have_structure && !new_signatures;
    if (same_structure) {
      // Only the instructions changed by the last step have new bounds.
      for (int v : last_changed) {
        if (compact_arc[v] >= 0) cut.set_bounds(compact_arc[v], lower[v], upper[v]);
      }
    } else {
      list_critical();
      frontier.stats.max_critical_operations =
          std::max(frontier.stats.max_critical_operations, critical_ops.size());
      load_structure(makespan);
    }
    if (cut.solve() != CutOutcome::kOptimal) break;  // no finite cut: T_min reached

    lengthened.clear();
    changed.clear();
    // Only instructions with an arc left after the contraction can cross the cut (the two ends
    // of a contracted arc are on one side), so only those are read, in critical order.
    for (int v : arc_ops) {
      const bool in_s = cut.source_side(contraction.node(in_node[v]));
      const bool out_s = cut.source_side(contraction.node(out_node[v]));
      if (in_s && !out_s) {
        --d[v];
        changed.push_back(v);
      } else if (!in_s && out_s && d[v] < model[v]->max_units() &&
                 model[v]->cost(d[v]) - model[v]->cost(d[v] + 1) > 0.0) {
        ++d[v];
        changed.push_back(v);
        lengthened.push_back(v);
      }
    }
    makespan_now = forward();
    // A slowed-down instruction may also lie on a path that had exactly one τ of slack; undo such
    // slow-downs until every path is at most T − τ (rare; done as in solve_reference).
    while (makespan_now > makespan - 1) {
      // longest_through over positions.
      to_end.assign(n, 0);
      through.resize(n);
      for (int v = n - 1; v >= 0; --v) {
        int tail = 0;
        for (const int* w = successors.begin(v); w != successors.end(v); ++w)
          tail = std::max(tail, to_end[*w]);
        to_end[v] = d[v] + tail;
        through[v] = finish[v] - d[v] + to_end[v];
      }
      revert_slowdowns(through, makespan, lengthened, d, frontier.stats);
      makespan_now = forward();
    }
    if (makespan_now < makespan - 1) ++frontier.stats.multi_unit_steps;
    for (int v : changed) refresh(v);
    // record_changes over node ids: the same changes in the same order.
    changed_ids.clear();
    for (int v : changed) {
      changed_ids.push_back(order[v]);
      d_by_id[order[v]] = d[v];
    }
    record_changes(changed_ids, d_by_id, touched, frontier);
    std::swap(changed, last_changed);
    ++frontier.stats.iterations;
  }
  if (options.progress)
    options.progress(slowest - makespan_now, std::max(1, slowest - lower_bound));
  frontier.stats.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return frontier;
}

}  // namespace

Frontier solve_frontier(const PlanningProblem& problem, const SolverOptions& options) {
  if (options.incremental && options.engine == MaxFlowEngine::kDinic)
    return solve_incremental(problem, options);
  return solve_reference(problem, options);
}

}  // namespace powertrain::frontier
