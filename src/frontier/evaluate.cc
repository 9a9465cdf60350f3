// Realized plans and baselines: the numbers users compare against the planned frontier.
#include "frontier/evaluate.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "flow/max_flow.h"

namespace powertrain::frontier {
namespace {

// Measured (time, energy) of a node at its planned duration.
std::pair<double, double> measured_at(const PlanningProblem& problem, int v, int units) {
  const pipeline::Operation& op = problem.dag.operations[static_cast<std::size_t>(v)];
  if (!pipeline::is_profiled(op.kind)) {
    return {op.constant_time_s, op.constant_time_s * problem.settings.p_blocking_w};
  }
  const QuantizedOption& option = problem.model_of(v).option_for(units);
  return {option.time_s, option.energy_j};
}

// Energy of one pipeline whose GPUs are busy for `busy_s` in total and idle-blocked for the rest.
double pipeline_energy(const PlanningProblem& problem, double busy_energy_j, double busy_s,
                       double time_s) {
  return busy_energy_j + problem.settings.p_blocking_w * (problem.num_gpus() * time_s - busy_s);
}

// Index in the node's Pareto options (fastest first) of the option a planned duration runs.
std::size_t option_index(const PlanningProblem& problem, int v, int units) {
  const InstructionCostModel& model = problem.model_of(v);
  return static_cast<std::size_t>(&model.option_for(units) - model.options().data());
}

}  // namespace

std::vector<int> frequencies_for(const PlanningProblem& problem,
                                 const std::vector<int>& durations) {
  std::vector<int> mhz(durations.size(), 0);
  for (std::size_t v = 0; v < durations.size(); ++v) {
    if (pipeline::is_profiled(problem.dag.operations[v].kind)) {
      mhz[v] = problem.model_of(static_cast<int>(v)).option_for(durations[v]).frequency_mhz;
    }
  }
  return mhz;
}

std::vector<double> measured_times(const PlanningProblem& problem,
                                   const std::vector<int>& durations) {
  std::vector<double> times(durations.size());
  for (std::size_t v = 0; v < durations.size(); ++v) {
    times[v] = measured_at(problem, static_cast<int>(v), durations[v]).first;
  }
  return times;
}

RealizedPlan realize(const PlanningProblem& problem, const std::vector<int>& durations) {
  std::vector<double> times(durations.size());
  double busy_energy = 0.0, busy_time = 0.0;
  for (std::size_t v = 0; v < durations.size(); ++v) {
    auto [time, energy] = measured_at(problem, static_cast<int>(v), durations[v]);
    times[v] = time;
    busy_energy += energy;
    busy_time += time;
  }
  RealizedPlan plan;
  plan.time_s = longest_path(problem.dag, times);
  plan.energy_j = pipeline_energy(problem, busy_energy, busy_time, plan.time_s);
  return plan;
}

std::vector<RealizedPlan> realize_frontier(const PlanningProblem& problem,
                                           const Frontier& frontier) {
  std::vector<RealizedPlan> realized;
  realized.reserve(frontier.points.size());
  std::vector<int> units = frontier.initial_units;
  for (std::size_t point = 0; point < frontier.points.size(); ++point) {
    for (std::size_t i = frontier.change_offsets[point]; i < frontier.change_offsets[point + 1];
         ++i) {
      units[frontier.changes[i].operation] = frontier.changes[i].units;
    }
    realized.push_back(realize(problem, units));
  }
  return realized;
}

RealizedPlan evaluate_measured(const PlanningProblem& problem, const std::vector<double>& times_s,
                               const std::vector<double>& energies_j) {
  double busy_energy = 0.0, busy_time = 0.0;
  for (std::size_t v = 0; v < times_s.size(); ++v) {
    busy_energy += energies_j[v];
    busy_time += times_s[v];
  }
  RealizedPlan plan;
  plan.time_s = longest_path(problem.dag, times_s);
  plan.energy_j = pipeline_energy(problem, busy_energy, busy_time, plan.time_s);
  return plan;
}

RealizedPlan all_max_clock_baseline(const PlanningProblem& problem) {
  std::vector<double> times(problem.dag.operations.size()), energies(times.size());
  for (std::size_t v = 0; v < times.size(); ++v) {
    const profile::MeasuredOption& option = problem.max_clock_option[problem.model_of_operation[v]];
    times[v] = option.time_s;
    energies[v] = option.energy_j;
  }
  return evaluate_measured(problem, times, energies);
}

bool pin_fastest_point(const PlanningProblem& problem, Frontier& frontier) {
  if (frontier.points.empty()) return false;
  const std::size_t last = frontier.points.size() - 1;
  const std::vector<int> units = frontier.durations_at(last);
  // Relative slack: the same measured times summed in a different order.
  const double limit_s = all_max_clock_baseline(problem).time_s * (1.0 + 1e-12);
  std::vector<int> pinned = units;
  const pipeline::OperationDag& dag = problem.dag;
  const int n = static_cast<int>(pinned.size());
  const double infinity = std::numeric_limits<double>::infinity();
  const double blocking_w = problem.settings.p_blocking_w;
  // Each round: on the realized critical subgraph (zero-slack nodes and tight edges), move the
  // cheapest set of nodes that meets every critical path one measured option faster — a minimum
  // vertex cut, node capacity = the pipeline-energy increase of that move. Pinning every critical
  // node instead would undo most of the plan's saving when many paths tie (1F1B's identical
  // stages). Terminates: every round moves at least one node one option faster, never back; stops
  // when a critical path has every node at its fastest option already (floor quantization).
  flow::FlowNetwork network;
  for (;;) {
    const std::vector<double> times = measured_times(problem, pinned);
    std::vector<double> finish(times.size(), 0.0);
    double makespan = 0.0;
    for (int v : dag.topological_order) {
      double start = 0.0;
      for (int p : dag.predecessors[v]) start = std::max(start, finish[p]);
      finish[v] = start + times[v];
      makespan = std::max(makespan, finish[v]);
    }
    if (makespan <= limit_s) break;
    std::vector<double> latest_finish(times.size(), makespan);
    for (auto it = dag.topological_order.rbegin(); it != dag.topological_order.rend(); ++it) {
      for (int s : dag.successors[*it]) {
        latest_finish[*it] = std::min(latest_finish[*it], latest_finish[s] - times[s]);
      }
    }
    const double tolerance_s = 1e-12 * makespan;
    auto critical = [&](int v) { return latest_finish[v] - finish[v] <= tolerance_s; };
    const int source = 2 * n, sink = 2 * n + 1;
    network.reset(2 * n + 2);
    for (int v = 0; v < n; ++v) {
      if (!critical(v)) continue;
      double capacity = infinity;
      if (pipeline::is_profiled(dag.operations[static_cast<std::size_t>(v)].kind)) {
        const std::size_t now = option_index(problem, v, pinned[v]);
        if (now > 0) {
          const auto& options = problem.model_of(v).options();
          const QuantizedOption& slow = options[now];
          const QuantizedOption& fast = options[now - 1];
          const double increase_j = (fast.energy_j - blocking_w * fast.time_s) -
                                    (slow.energy_j - blocking_w * slow.time_s);
          // A small positive floor keeps free moves from being taken more than needed.
          capacity = std::max(increase_j, 0.0) + 1e-9;
        }
      }
      network.add_arc(2 * v, 2 * v + 1, capacity);
      if (finish[v] - times[v] <= tolerance_s) network.add_arc(source, 2 * v, infinity);
      if (finish[v] >= makespan - tolerance_s) network.add_arc(2 * v + 1, sink, infinity);
      for (int s : dag.successors[v]) {
        if (critical(s) && std::abs(finish[s] - times[s] - finish[v]) <= tolerance_s) {
          network.add_arc(2 * v + 1, 2 * s, infinity);
        }
      }
    }
    if (std::isinf(network.max_flow(source, sink, 0.0))) break;
    const std::vector<char> reached = network.reachable_from(source, 0.0);
    bool changed = false;
    for (int v = 0; v < n; ++v) {
      if (reached[2 * v] && !reached[2 * v + 1]) {
        pinned[v] = problem.model_of(v).options()[option_index(problem, v, pinned[v]) - 1].units;
        changed = true;
      }
    }
    if (!changed) break;
  }
  if (pinned == units) return false;
  const int time_units = longest_path(dag, pinned);
  const bool append = time_units < frontier.points[last].time_units;
  if (append) frontier.change_offsets.push_back(frontier.changes.size());
  for (std::size_t v = 0; v < units.size(); ++v) {
    if (units[v] != pinned[v]) frontier.changes.push_back({static_cast<int>(v), pinned[v]});
  }
  frontier.change_offsets.back() = frontier.changes.size();
  const FrontierPoint point{time_units, planned_energy(problem, pinned, time_units)};
  if (append) {
    frontier.points.push_back(point);
  } else {
    frontier.points[last] = point;
  }
  return true;
}

double max_clock_energy_at(const PlanningProblem& problem, double iteration_time_s) {
  double busy_energy = 0.0, busy_time = 0.0;
  for (std::size_t v = 0; v < problem.dag.operations.size(); ++v) {
    const profile::MeasuredOption& option = problem.max_clock_option[problem.model_of_operation[v]];
    busy_energy += option.energy_j;
    busy_time += option.time_s;
  }
  return pipeline_energy(problem, busy_energy, busy_time, iteration_time_s);
}

std::size_t point_for_time(const Frontier& frontier, double unit_time_s, double target_time_s) {
  // Points are strictly decreasing in time; find the first with time ≤ target.
  const double target_units = target_time_s / unit_time_s * (1.0 + 1e-12);
  auto it = std::find_if(frontier.points.begin(), frontier.points.end(),
                         [&](const FrontierPoint& p) { return p.time_units <= target_units; });
  if (it == frontier.points.end()) return frontier.points.size() - 1;
  return static_cast<std::size_t>(it - frontier.points.begin());
}

StragglerOutcome straggler_outcome(const PlanningProblem& problem, const Frontier& frontier,
                                   double slowdown) {
  const double tau = problem.settings.unit_time_s;
  const double t_min = frontier.points.back().time_units * tau;
  const double t_star = frontier.points.front().time_units * tau;
  StragglerOutcome out;
  out.slowdown = slowdown;
  out.straggler_time_s = slowdown * t_min;
  out.target_time_s = std::min(t_star, out.straggler_time_s);
  out.point = point_for_time(frontier, tau, out.target_time_s);
  out.planned_time_s = frontier.points[out.point].time_units * tau;
  const double blocking = problem.settings.p_blocking_w * problem.num_gpus();
  out.energy_j =
      frontier.points[out.point].energy_j + blocking * (out.straggler_time_s - out.planned_time_s);
  out.baseline_energy_j =
      max_clock_energy_at(problem, t_min) + blocking * (out.straggler_time_s - t_min);
  out.savings_fraction = 1.0 - out.energy_j / out.baseline_energy_j;
  return out;
}

}  // namespace powertrain::frontier
