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

// Reports progress in whole percent of the time range [lower_bound, slowest] (at most 101 calls).
class ProgressReporter {
 public:
  ProgressReporter(const SolverOptions& options, int slowest, int lower_bound)
      : options_(options), slowest_(slowest), total_(std::max(1, slowest - lower_bound)) {}
  void step(int makespan) {
    if (!options_.progress) return;
    const long long done = slowest_ - makespan;
    if (done * 100 / total_ != last_report_) {
      last_report_ = done * 100 / total_;
      options_.progress(done, total_);
    }
  }
  void finish(int makespan) const {
    if (options_.progress) options_.progress(slowest_ - makespan, total_);
  }

 private:
  const SolverOptions& options_;
  int slowest_;
  long long total_;
  long long last_report_ = -1;
};

double seconds_since(std::chrono::steady_clock::time_point started) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

// The reference step's buffers, reused across steps: the critical DAG as bounded arcs over one
// in/out node pair per critical instruction, and its contraction.
struct CriticalNetwork {
  std::vector<int> critical_ops, in_node, out_node;
  std::vector<BoundedArc> raw_arcs, arcs;
  ArcContraction contraction;
  FlowNetwork network;
  FlowWarmStart warm_start;
};

// Critical DAG: nodes with zero slack, dependency edges that are tight. Arcs: one per critical
// instruction (lower, upper from the cost slopes) and uncapacitated ones for tight dependencies and
// the source (0) / sink (1). Returns the number of nodes.
int list_critical_arcs(const PlanningProblem& problem, const std::vector<int>& d,
                       const Schedule& schedule, CriticalNetwork& net) {
  const pipeline::OperationDag& dag = problem.dag;
  net.critical_ops.clear();
  for (int v : dag.topological_order) {
    if (schedule.earliest_finish[v] == schedule.latest_finish[v]) net.critical_ops.push_back(v);
  }
  const int source = 0, sink = 1;
  int num_nodes = 2;
  for (int v : net.critical_ops) {
    net.in_node[v] = num_nodes++;
    net.out_node[v] = num_nodes++;
  }
  net.raw_arcs.clear();
  for (int v : net.critical_ops) {
    const InstructionCostModel& model = problem.model_of(v);
    BoundedArc arc{net.in_node[v], net.out_node[v], 0.0, kInfinity};
    // Lower bound: energy saved by slowing down one τ; upper: energy added by speeding up one τ.
    if (d[v] < model.max_units())
      arc.lower = std::max(0.0, model.cost(d[v]) - model.cost(d[v] + 1));
    if (d[v] > model.min_units())
      arc.upper = std::max(arc.lower, model.cost(d[v] - 1) - model.cost(d[v]));
    net.raw_arcs.push_back(arc);
    const int start = schedule.earliest_finish[v] - d[v];
    if (start == 0) net.raw_arcs.push_back({source, net.in_node[v], 0.0, kInfinity});
    if (schedule.earliest_finish[v] == schedule.makespan)
      net.raw_arcs.push_back({net.out_node[v], sink, 0.0, kInfinity});
    for (int w : dag.successors[v]) {
      if (schedule.earliest_finish[w] == schedule.latest_finish[w] &&
          schedule.earliest_finish[w] - d[w] == schedule.earliest_finish[v]) {
        net.raw_arcs.push_back({net.out_node[v], net.in_node[w], 0.0, kInfinity});
      }
    }
  }
  return num_nodes;
}

// Merges the ends of free arcs that some minimum cut never separates (flow/contraction.h) and
// fills net.arcs with the arcs left; returns the number of contracted nodes.
int contract_critical_arcs(int num_nodes, CriticalNetwork& net) {
  const std::vector<BoundedArc>& raw = net.raw_arcs;
  const int num_compact = net.contraction.contract(
      num_nodes, static_cast<int>(raw.size()), 0, 1, [&](int k) { return raw[k].from; },
      [&](int k) { return raw[k].to; },
      [&](int k) { return std::isinf(raw[k].upper) && raw[k].lower == 0.0; });
  net.arcs.clear();
  for (const BoundedArc& arc : raw) {
    const int a = net.contraction.node(arc.from), b = net.contraction.node(arc.to);
    if (a != b) net.arcs.push_back({a, b, arc.lower, arc.upper});
  }
  return num_compact;
}

// ±τ on the instructions the cut crosses: −τ where the cut crosses forward, +τ where it crosses
// backward and slowing down saves energy. `in_source_side(v)` / `out_source_side(v)` say on which
// side the two ends of v's arc lie.
template <typename InSide, typename OutSide>
void apply_cut(const std::vector<int>& ops, InSide in_source_side, OutSide out_source_side,
               const InstructionCostModel* const* model, std::vector<int>& d,
               std::vector<int>& changed, std::vector<int>& lengthened) {
  lengthened.clear();
  changed.clear();
  for (int v : ops) {
    const bool in_s = in_source_side(v);
    const bool out_s = out_source_side(v);
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
}

// The pre-issue-12 step, kept as the reference the incremental engine is tested against: each step
// rebuilds the critical DAG, its contraction and the flow network from scratch.
Frontier solve_reference(const PlanningProblem& problem, const SolverOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  const pipeline::OperationDag& dag = problem.dag;
  const int n = dag.size();
  Frontier frontier;
  std::vector<int> d(n), fastest(n);
  std::vector<const InstructionCostModel*> model(n);
  for (int v = 0; v < n; ++v) {
    model[v] = &problem.model_of(v);
    d[v] = model[v]->max_units();
    fastest[v] = model[v]->min_units();
  }
  frontier.initial_units = d;
  frontier.change_offsets.push_back(0);

  Schedule schedule;
  forward_pass(dag, d, schedule);
  ProgressReporter progress(options, schedule.makespan, longest_path(dag, fastest));
  CriticalNetwork net;
  net.in_node.resize(n);
  net.out_node.resize(n);
  std::vector<int> lengthened, changed;
  std::vector<char> touched(n, 0);

  while (true) {
    frontier.points.push_back({schedule.makespan, planned_energy(problem, d, schedule.makespan)});
    frontier.change_offsets.push_back(frontier.changes.size());
    if (options.max_points != 0 && frontier.points.size() >= options.max_points) break;
    progress.step(schedule.makespan);
    backward_pass(dag, d, schedule);
    const int makespan = schedule.makespan;
    const int num_nodes = list_critical_arcs(problem, d, schedule, net);
    frontier.stats.max_critical_operations =
        std::max(frontier.stats.max_critical_operations, net.critical_ops.size());
    const int num_compact = contract_critical_arcs(num_nodes, net);
    MinCut cut = options.engine == MaxFlowEngine::kDinic
                     ? flow::min_cut_with_lower_bounds(num_compact, 0, 1, net.arcs, net.network,
                                                       &net.warm_start)
                     : flow::boost_min_cut_with_lower_bounds(
                           num_compact, 0, 1, net.arcs,
                           options.engine == MaxFlowEngine::kBoostBoykovKolmogorov);
    if (cut.outcome != CutOutcome::kOptimal) break;  // no finite cut: T_min reached

    apply_cut(
        net.critical_ops,
        [&](int v) { return cut.source_side[net.contraction.node(net.in_node[v])]; },
        [&](int v) { return cut.source_side[net.contraction.node(net.out_node[v])]; }, model.data(),
        d, changed, lengthened);
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
  progress.finish(schedule.makespan);
  frontier.stats.seconds = seconds_since(started);
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
// longest-path passes; the backward pass also checks each node's critical-arc signature, and when
// none changed — 97 % of steps at 96 microbatches — the critical DAG and its contraction are
// reused, only the arcs of instructions whose duration changed get new bounds, and
// IncrementalMinCut repairs the previous maximum flow around them. Otherwise the critical DAG is
// listed (flat arrays, no allocation), contracted again and the flow network reloaded, starting
// from the last network's flows arc by arc. Same cut rule, tolerance and tie-breaking as
// solve_reference.
class IncrementalSolver {
 public:
  IncrementalSolver(const PlanningProblem& problem, const SolverOptions& options);
  Frontier run();

 private:
  void refresh(int v);
  double energy_at(int time_units);
  int forward(int from);
  int fastest_makespan() const;
  bool backward(int makespan);
  void list_critical();
  void list_arcs(int makespan);
  void load_structure(int makespan);
  void undo_overshoot(int makespan);
  void record_step();

  // The critical DAG's arcs at a node are a function of its signature: bit 0 critical, bit 1 a
  // source arc (starts at 0), bit 2 a sink arc (ends at T), bit 3 its instruction arc is free
  // (lower 0, upper +inf), bit 4 + i the arc to its i-th successor is tight. The list of all arcs
  // (and so the contraction) is unchanged exactly when no node's signature changed, which the
  // backward pass checks in passing, so most steps skip listing the arcs. Nodes with more
  // successors than the signature holds turn the check off (then every step lists).
  static constexpr int kSignatureSuccessors = 27;
  static constexpr int kSource = 0, kSink = 1;

  const PlanningProblem& problem_;
  const SolverOptions& options_;
  const int n_;
  const std::vector<int>& order_;  // node id at each position
  Csr successors_, predecessors_;
  Frontier frontier_;
  std::vector<const InstructionCostModel*> model_;
  std::vector<int> d_, fastest_;
  std::vector<double> cost_by_id_, lower_, upper_;
  // energy_at's running sums: energy_prefix_[i] = cost_by_id_[0] + ... + cost_by_id_[i − 1], added
  // in that order from 0.0 (so the same bits as one loop), valid below energy_stale_ (the lowest
  // id whose cost changed since).
  std::vector<double> energy_prefix_;
  int energy_stale_ = 0;
  // latest_start = latest finish − duration, and critical_start = the start of a node with zero
  // slack (−1 otherwise), so the inner loops read one array per neighbour.
  std::vector<int> finish_, latest_start_, critical_start_;
  std::vector<int> finish_max_;  // running maximum of finish_ over positions 0..i
  bool signatures_usable_ = true;
  std::vector<std::uint32_t> signature_;
  std::vector<int> critical_ops_;  // zero slack, in topological order, after the backward pass

  // The critical DAG of this step and the previous one, as flat arc lists: arc k goes from node
  // raw_from[k] to raw_to[k]; raw_op[k] is the instruction of an instruction arc, -1 for a
  // dependency or terminal arc. The contraction is a function of these lists and of which
  // instruction arcs are uncapacitated with lower bound 0 (raw_free).
  std::vector<int> raw_from_, raw_to_, raw_op_;
  std::vector<char> raw_free_;
  std::vector<int> in_node_, out_node_;
  ArcContraction contraction_;
  std::vector<int> compact_arc_;
  std::vector<int> arc_ops_;  // critical instructions with a contracted arc, in critical order
  std::vector<BoundedArc> arcs_;
  // A key per arc of the critical DAG that survives renumbering: the instruction at position v
  // (v), its source arc (n + v), its sink arc (2n + v), its arc to its i-th successor (3n + CSR
  // index). arc_key[k] is the key of contracted arc k; key_flow holds the flows of the last
  // network by key (valid where key_stamp == the load's stamp), so a new contraction starts from
  // them.
  std::vector<int> raw_key_, arc_key_;
  std::vector<double> key_flow_;
  std::vector<int> key_stamp_;
  std::vector<double> initial_flows_;
  int stamp_ = 0;
  std::vector<int> lengthened_, changed_, last_changed_, changed_ids_;
  std::vector<char> touched_;
  std::vector<int> to_end_, through_;  // longest paths, only when a slow-down must be undone
  std::vector<int> d_by_id_;           // d by node id, for record_changes
  IncrementalMinCut cut_;
  bool have_structure_ = false;
};

IncrementalSolver::IncrementalSolver(const PlanningProblem& problem, const SolverOptions& options)
    : problem_(problem),
      options_(options),
      n_(problem.dag.size()),
      order_(problem.dag.topological_order),
      model_(n_),
      d_(n_),
      fastest_(n_),
      cost_by_id_(n_),
      lower_(n_),
      upper_(n_),
      energy_prefix_(n_ + 1, 0.0),
      finish_(n_),
      latest_start_(n_),
      critical_start_(n_),
      finish_max_(n_),
      signature_(n_, 0),
      in_node_(n_, -1),
      out_node_(n_, -1),
      compact_arc_(n_, -1),
      touched_(n_, 0) {
  std::vector<int> position(n_);
  for (int i = 0; i < n_; ++i) position[order_[i]] = i;
  successors_.build(problem.dag.successors, order_, position);
  predecessors_.build(problem.dag.predecessors, order_, position);
  for (int v = 0; v < n_; ++v) {
    model_[v] = &problem.model_of(order_[v]);
    d_[v] = model_[v]->max_units();
    fastest_[v] = model_[v]->min_units();
    refresh(v);
  }
  frontier_.initial_units.resize(n_);
  for (int v = 0; v < n_; ++v) frontier_.initial_units[order_[v]] = d_[v];
  frontier_.change_offsets.push_back(0);
  d_by_id_ = frontier_.initial_units;
  for (int v = 0; v < n_; ++v) {
    if (successors_.end(v) - successors_.begin(v) > kSignatureSuccessors)
      signatures_usable_ = false;
  }
  key_flow_.assign(3 * static_cast<std::size_t>(n_) + successors_.items.size(), 0.0);
  key_stamp_.assign(key_flow_.size(), 0);
}

void IncrementalSolver::refresh(int v) {
  cost_by_id_[order_[v]] = model_[v]->cost(d_[v]);
  energy_stale_ = std::min(energy_stale_, order_[v]);
  instruction_bounds(*model_[v], d_[v], lower_[v], upper_[v]);
}

// planned_energy with the costs cached: same terms in the same order (node ids), so the same bits;
// the partial sums before the lowest changed id are kept from the last call.
double IncrementalSolver::energy_at(int time_units) {
  for (int v = energy_stale_; v < n_; ++v)
    energy_prefix_[v + 1] = energy_prefix_[v] + cost_by_id_[v];
  energy_stale_ = n_;
  return energy_prefix_[n_] + problem_.num_gpus() * time_units * problem_.settings.unit_time_s *
                                  problem_.settings.p_blocking_w;
}

// Earliest finishes from position `from` on: a finish depends only on durations at its position
// and before, so when no duration before `from` changed since the last pass, those finishes (and
// their running maximum) still hold.
int IncrementalSolver::forward(int from) {
  int makespan = from > 0 ? finish_max_[from - 1] : 0;
  for (int v = from; v < n_; ++v) {
    int start = 0;
    for (const int* p = predecessors_.begin(v); p != predecessors_.end(v); ++p)
      start = std::max(start, finish_[*p]);
    finish_[v] = start + d_[v];
    makespan = std::max(makespan, finish_[v]);
    finish_max_[v] = makespan;
  }
  return makespan;
}

int IncrementalSolver::fastest_makespan() const {
  int makespan = 0;
  std::vector<int> fastest_finish(n_);
  for (int v = 0; v < n_; ++v) {
    int start = 0;
    for (const int* p = predecessors_.begin(v); p != predecessors_.end(v); ++p)
      start = std::max(start, fastest_finish[*p]);
    fastest_finish[v] = start + fastest_[v];
    makespan = std::max(makespan, fastest_finish[v]);
  }
  return makespan;
}

// Latest starts and critical starts; true when some node's signature changed.
bool IncrementalSolver::backward(int makespan) {
  bool changed_signature = false;
  for (int v = n_ - 1; v >= 0; --v) {
    int end = makespan;
    std::uint32_t tight = 0, bit = 1u << 4;
    const int f = finish_[v];
    for (const int* w = successors_.begin(v); w != successors_.end(v); ++w, bit <<= 1) {
      end = std::min(end, latest_start_[*w]);
      if (critical_start_[*w] == f) tight |= bit;
    }
    latest_start_[v] = end - d_[v];
    const bool critical = f == end;
    std::uint32_t sig = 0;
    if (critical) {
      critical_start_[v] = f - d_[v];
      sig = 1u | (f == d_[v] ? 2u : 0u) | (f == makespan ? 4u : 0u) |
            (lower_[v] == 0.0 && std::isinf(upper_[v]) ? 8u : 0u) | tight;
    } else {
      critical_start_[v] = -1;
    }
    if (sig != signature_[v]) {
      signature_[v] = sig;
      changed_signature = true;
    }
  }
  return changed_signature || !signatures_usable_;
}

void IncrementalSolver::list_critical() {
  critical_ops_.clear();
  for (int v = 0; v < n_; ++v) {
    if (critical_start_[v] >= 0) critical_ops_.push_back(v);
  }
}

// The critical DAG's arcs in solve_reference's order (list_critical_arcs), with their keys.
void IncrementalSolver::list_arcs(int makespan) {
  int num_nodes = 2;
  for (int v : critical_ops_) {
    in_node_[v] = num_nodes++;
    out_node_[v] = num_nodes++;
  }
  raw_from_.clear();
  raw_to_.clear();
  raw_op_.clear();
  raw_free_.clear();
  raw_key_.clear();
  auto add_raw = [&](int from, int to, int op, bool free, int key) {
    raw_from_.push_back(from);
    raw_to_.push_back(to);
    raw_op_.push_back(op);
    raw_free_.push_back(free);
    raw_key_.push_back(key);
  };
  for (int v : critical_ops_) {
    add_raw(in_node_[v], out_node_[v], v, lower_[v] == 0.0 && std::isinf(upper_[v]), v);
    if (finish_[v] - d_[v] == 0) add_raw(kSource, in_node_[v], -1, true, n_ + v);
    if (finish_[v] == makespan) add_raw(out_node_[v], kSink, -1, true, 2 * n_ + v);
    for (const int* w = successors_.begin(v); w != successors_.end(v); ++w) {
      if (critical_start_[*w] == finish_[v]) {
        add_raw(out_node_[v], in_node_[*w], -1, true,
                3 * n_ + static_cast<int>(w - successors_.items.data()));
      }
    }
  }
}

// Lists the critical DAG's arcs, contracts them exactly as solve_reference does (same arcs in the
// same order, same merges) and loads the contracted network, starting from the last network's
// flows where an arc's key survives.
void IncrementalSolver::load_structure(int makespan) {
  list_arcs(makespan);
  if (have_structure_) {
    ++stamp_;
    for (std::size_t k = 0; k < arc_key_.size(); ++k) {
      key_flow_[arc_key_[k]] = cut_.flow(static_cast<int>(k));
      key_stamp_[arc_key_[k]] = stamp_;
    }
  }
  const int num_nodes = 2 + 2 * static_cast<int>(critical_ops_.size());
  const int num_compact = contraction_.contract(
      num_nodes, static_cast<int>(raw_from_.size()), kSource, kSink,
      [&](int k) { return raw_from_[k]; }, [&](int k) { return raw_to_[k]; },
      [&](int k) { return raw_free_[k] != 0; });
  arcs_.clear();
  arc_key_.clear();
  initial_flows_.clear();
  for (int v : arc_ops_) compact_arc_[v] = -1;
  arc_ops_.clear();
  for (std::size_t k = 0; k < raw_from_.size(); ++k) {
    const int a = contraction_.node(raw_from_[k]), b = contraction_.node(raw_to_[k]);
    if (a == b) continue;
    const int v = raw_op_[k];
    if (v >= 0) {
      compact_arc_[v] = static_cast<int>(arcs_.size());
      arc_ops_.push_back(v);
    }
    arcs_.push_back({a, b, v >= 0 ? lower_[v] : 0.0, v >= 0 ? upper_[v] : kInfinity});
    arc_key_.push_back(raw_key_[k]);
    const int key = raw_key_[k];
    initial_flows_.push_back(stamp_ > 0 && key_stamp_[key] == stamp_ ? key_flow_[key] : 0.0);
  }
  cut_.load(num_compact, kSource, kSink, arcs_, initial_flows_);
  have_structure_ = true;
}

// A slowed-down instruction may also lie on a path that had exactly one τ of slack; undo such
// slow-downs until every path is at most T − τ (rare; done as in solve_reference, with
// longest_through over positions). The caller runs the forward pass again.
void IncrementalSolver::undo_overshoot(int makespan) {
  to_end_.assign(n_, 0);
  through_.resize(n_);
  for (int v = n_ - 1; v >= 0; --v) {
    int tail = 0;
    for (const int* w = successors_.begin(v); w != successors_.end(v); ++w)
      tail = std::max(tail, to_end_[*w]);
    to_end_[v] = d_[v] + tail;
    through_[v] = finish_[v] - d_[v] + to_end_[v];
  }
  revert_slowdowns(through_, makespan, lengthened_, d_, frontier_.stats);
}

// record_changes over node ids: the same changes in the same order as solve_reference.
void IncrementalSolver::record_step() {
  for (int v : changed_) refresh(v);
  changed_ids_.clear();
  for (int v : changed_) {
    changed_ids_.push_back(order_[v]);
    d_by_id_[order_[v]] = d_[v];
  }
  record_changes(changed_ids_, d_by_id_, touched_, frontier_);
  std::swap(changed_, last_changed_);
  ++frontier_.stats.iterations;
}

Frontier IncrementalSolver::run() {
  const auto started = std::chrono::steady_clock::now();
  int makespan_now = forward(0);
  ProgressReporter progress(options_, makespan_now, fastest_makespan());
  while (true) {
    frontier_.points.push_back({makespan_now, energy_at(makespan_now)});
    frontier_.change_offsets.push_back(frontier_.changes.size());
    if (options_.max_points != 0 && frontier_.points.size() >= options_.max_points) break;
    progress.step(makespan_now);
    const bool new_signatures = backward(makespan_now);
    const int makespan = makespan_now;
    if (have_structure_ && !new_signatures) {
      // Only the instructions changed by the last step have new bounds.
      for (int v : last_changed_) {
        if (compact_arc_[v] >= 0) cut_.set_bounds(compact_arc_[v], lower_[v], upper_[v]);
      }
    } else {
      list_critical();
      frontier_.stats.max_critical_operations =
          std::max(frontier_.stats.max_critical_operations, critical_ops_.size());
      load_structure(makespan);
    }
    if (cut_.solve() != CutOutcome::kOptimal) break;  // no finite cut: T_min reached

    // Only instructions with an arc left after the contraction can cross the cut (the two ends
    // of a contracted arc are on one side), so only those are read, in critical order.
    apply_cut(
        arc_ops_, [&](int v) { return cut_.source_side(contraction_.node(in_node_[v])); },
        [&](int v) { return cut_.source_side(contraction_.node(out_node_[v])); }, model_.data(), d_,
        changed_, lengthened_);
    // Durations changed only at changed_'s positions (the reverts too: lengthened_ is a subset).
    const int from = changed_.empty() ? n_ : *std::min_element(changed_.begin(), changed_.end());
    makespan_now = forward(from);
    while (makespan_now > makespan - 1) {
      undo_overshoot(makespan);
      makespan_now = forward(from);
    }
    if (makespan_now < makespan - 1) ++frontier_.stats.multi_unit_steps;
    record_step();
  }
  progress.finish(makespan_now);
  frontier_.stats.seconds = seconds_since(started);
  return std::move(frontier_);
}

}  // namespace

Frontier solve_frontier(const PlanningProblem& problem, const SolverOptions& options) {
  if (options.incremental && options.engine == MaxFlowEngine::kDinic)
    return IncrementalSolver(problem, options).run();
  return solve_reference(problem, options);
}

}  // namespace powertrain::frontier
