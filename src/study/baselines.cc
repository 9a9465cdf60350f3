// Baselines (Perseus §6.2, §6.4): clock choices of Zeus and EnvPipe, evaluated with measured
// numbers on the same DAG and energy definition as realized frontier points.
#include "study/baselines.h"

#include <fmt/core.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <set>

#include "frontier/solver.h"

namespace powertrain::study {
namespace {

using pipeline::InstructionKind;

// Relative slack under which an instruction counts as critical, and under which a time counts as
// not longer than another: well above floating-point noise, far below any measured difference.
constexpr double kRelativeTolerance = 1e-9;

// Every measured option of every model, lowest clock first; constant-time models get their single
// fixed option (clock 0). A plan is an index into its node's ladder.
struct Ladders {
  std::vector<std::vector<profile::MeasuredOption>> by_model;

  const std::vector<profile::MeasuredOption>& of(const frontier::PlanningProblem& problem,
                                                 int v) const {
    return by_model[static_cast<std::size_t>(problem.model_of_operation[v])];
  }
  // Index of `mhz` in a ladder, or -1.
  static int find(const std::vector<profile::MeasuredOption>& ladder, int mhz) {
    for (std::size_t i = 0; i < ladder.size(); ++i) {
      if (ladder[i].frequency_mhz == mhz) return static_cast<int>(i);
    }
    return -1;
  }
};

Ladders build_ladders(const frontier::PlanningProblem& problem, const profile::Profile& profile) {
  Ladders ladders;
  for (std::size_t m = 0; m < problem.models.size(); ++m) {
    if (problem.model_stage[m] < 0) {
      ladders.by_model.push_back({problem.max_clock_option[m]});
      continue;
    }
    const profile::InstructionProfile* entry =
        profile.find(problem.model_stage[m], problem.model_kind[m]);
    std::vector<profile::MeasuredOption> ladder = entry->options;
    std::sort(ladder.begin(), ladder.end(),
              [](const profile::MeasuredOption& a, const profile::MeasuredOption& b) {
                return a.frequency_mhz < b.frequency_mhz;
              });
    ladders.by_model.push_back(std::move(ladder));
  }
  return ladders;
}

// Measured times of a plan given as ladder indices.
std::vector<double> plan_times(const frontier::PlanningProblem& problem, const Ladders& ladders,
                               const std::vector<int>& index) {
  std::vector<double> times(index.size());
  for (std::size_t v = 0; v < index.size(); ++v) {
    times[v] = ladders.of(problem, static_cast<int>(v))[static_cast<std::size_t>(index[v])].time_s;
  }
  return times;
}

BaselinePoint evaluate_plan(const frontier::PlanningProblem& problem, const Ladders& ladders,
                            const std::vector<int>& index, std::string label) {
  std::vector<double> times(index.size()), energies(index.size());
  BaselinePoint point;
  point.label = std::move(label);
  point.clock_by_operation.resize(index.size());
  for (std::size_t v = 0; v < index.size(); ++v) {
    const profile::MeasuredOption& option =
        ladders.of(problem, static_cast<int>(v))[static_cast<std::size_t>(index[v])];
    times[v] = option.time_s;
    energies[v] = option.energy_j;
    point.clock_by_operation[v] = option.frequency_mhz;
  }
  const frontier::RealizedPlan realized = frontier::evaluate_measured(problem, times, energies);
  point.time_s = realized.time_s;
  point.energy_j = realized.energy_j;
  return point;
}

// Every node at the top of its ladder (constant nodes have one option).
std::vector<int> top_indices(const frontier::PlanningProblem& problem, const Ladders& ladders) {
  std::vector<int> index(problem.dag.operations.size());
  for (std::size_t v = 0; v < index.size(); ++v) {
    index[v] = static_cast<int>(ladders.of(problem, static_cast<int>(v)).size()) - 1;
  }
  return index;
}

// Clocks measured for every profiled model in `models`, ascending.
std::vector<int> common_clocks(const Ladders& ladders, const std::vector<int>& models) {
  std::vector<int> common;
  bool first = true;
  for (int m : models) {
    std::vector<int> clocks;
    for (const profile::MeasuredOption& o : ladders.by_model[static_cast<std::size_t>(m)]) {
      clocks.push_back(o.frequency_mhz);
    }
    if (first) {
      common = clocks;
      first = false;
      continue;
    }
    std::vector<int> kept;
    std::set_intersection(common.begin(), common.end(), clocks.begin(), clocks.end(),
                          std::back_inserter(kept));
    common = std::move(kept);
  }
  return common;
}

// Plan with the given clock on every profiled node for which `clock_of(v)` returns a clock.
template <typename ClockOf>
std::vector<int> plan_with_clocks(const frontier::PlanningProblem& problem, const Ladders& ladders,
                                  ClockOf clock_of) {
  std::vector<int> index = top_indices(problem, ladders);
  for (std::size_t v = 0; v < index.size(); ++v) {
    if (!pipeline::is_profiled(problem.dag.operations[v].kind)) continue;
    index[v] = Ladders::find(ladders.of(problem, static_cast<int>(v)), clock_of(v));
  }
  return index;
}

std::vector<BaselinePoint> zeus_global(const frontier::PlanningProblem& problem,
                                       const Ladders& ladders) {
  std::vector<int> profiled;
  for (std::size_t m = 0; m < problem.models.size(); ++m) {
    if (problem.model_stage[m] >= 0) profiled.push_back(static_cast<int>(m));
  }
  std::vector<BaselinePoint> points;
  for (int mhz : common_clocks(ladders, profiled)) {
    const auto index = plan_with_clocks(problem, ladders, [mhz](std::size_t) { return mhz; });
    points.push_back(evaluate_plan(problem, ladders, index, fmt::format("ZeusGlobal {} MHz", mhz)));
  }
  return points;
}

std::vector<BaselinePoint> zeus_per_stage(const frontier::PlanningProblem& problem,
                                          const Ladders& ladders) {
  // A power limit is per GPU, so balance GPUs; a GPU's forward time per microbatch is the sum over
  // the model chunks it holds (one chunk unless interleaved).
  const int gpus = problem.num_gpus();
  std::vector<std::set<int>> models_of_gpu(static_cast<std::size_t>(gpus));
  std::vector<std::set<int>> forward_models_of_gpu(static_cast<std::size_t>(gpus));
  for (std::size_t v = 0; v < problem.dag.operations.size(); ++v) {
    const pipeline::Operation& op = problem.dag.operations[v];
    if (!pipeline::is_profiled(op.kind) || op.gpu < 0) continue;
    models_of_gpu[static_cast<std::size_t>(op.gpu)].insert(problem.model_of_operation[v]);
    if (op.kind == InstructionKind::kForward) {
      forward_models_of_gpu[static_cast<std::size_t>(op.gpu)].insert(problem.model_of_operation[v]);
    }
  }
  std::vector<std::vector<int>> clocks(static_cast<std::size_t>(gpus));
  std::vector<std::vector<double>> forward_s(static_cast<std::size_t>(gpus));  // per clock
  for (std::size_t g = 0; g < clocks.size(); ++g) {
    clocks[g] = common_clocks(ladders, {models_of_gpu[g].begin(), models_of_gpu[g].end()});
    for (int mhz : clocks[g]) {
      double sum = 0.0;
      for (int m : forward_models_of_gpu[g]) {
        const auto& ladder = ladders.by_model[static_cast<std::size_t>(m)];
        sum += ladder[static_cast<std::size_t>(Ladders::find(ladder, mhz))].time_s;
      }
      forward_s[g].push_back(sum);
    }
    if (clocks[g].empty()) return {};  // no clock shared by a GPU's instructions
  }
  std::size_t slowest = 0;
  for (std::size_t g = 1; g < clocks.size(); ++g) {
    if (forward_s[g].back() > forward_s[slowest].back()) slowest = g;
  }
  std::vector<double> targets = forward_s[slowest];
  std::sort(targets.begin(), targets.end(), std::greater<>());

  std::vector<BaselinePoint> points;
  std::set<std::vector<int>> seen;
  for (double target : targets) {
    std::vector<int> gpu_clock(clocks.size());
    for (std::size_t g = 0; g < clocks.size(); ++g) {
      // Lowest clock not slower than the target; failing that (noisy profiles), the fastest.
      std::size_t pick = clocks[g].size();
      for (std::size_t i = 0; i < clocks[g].size() && pick == clocks[g].size(); ++i) {
        if (forward_s[g][i] <= target * (1.0 + kRelativeTolerance)) pick = i;
      }
      if (pick == clocks[g].size()) {
        pick = 0;
        for (std::size_t i = 1; i < clocks[g].size(); ++i) {
          if (forward_s[g][i] <= forward_s[g][pick]) pick = i;
        }
      }
      gpu_clock[g] = clocks[g][pick];
    }
    if (!seen.insert(gpu_clock).second) continue;
    std::string label = "ZeusPerStage";
    for (std::size_t g = 0; g < gpu_clock.size(); ++g) {
      label += fmt::format("{}{}", g == 0 ? " " : "/", gpu_clock[g]);
    }
    label += " MHz";
    const auto index = plan_with_clocks(problem, ladders, [&](std::size_t v) {
      return gpu_clock[static_cast<std::size_t>(problem.dag.operations[v].gpu)];
    });
    points.push_back(evaluate_plan(problem, ladders, index, std::move(label)));
  }
  return points;
}

// Zero-slack nodes of a DAG with given durations; also returns the makespan.
std::vector<char> critical_nodes(const pipeline::OperationDag& dag, const std::vector<double>& d,
                                 double& makespan) {
  const std::size_t n = d.size();
  std::vector<double> finish(n, 0.0), latest(n, std::numeric_limits<double>::infinity());
  makespan = 0.0;
  for (int v : dag.topological_order) {
    double start = 0.0;
    for (int p : dag.predecessors[v]) start = std::max(start, finish[p]);
    finish[v] = start + d[v];
    makespan = std::max(makespan, finish[v]);
  }
  for (auto it = dag.topological_order.rbegin(); it != dag.topological_order.rend(); ++it) {
    const int v = *it;
    double end = makespan;
    for (int s : dag.successors[v]) end = std::min(end, latest[s] - d[s]);
    latest[v] = end;
  }
  std::vector<char> critical(n, 0);
  for (std::size_t v = 0; v < n; ++v) {
    critical[v] = latest[v] - finish[v] <= kRelativeTolerance * makespan ? 1 : 0;
  }
  return critical;
}

BaselinePoint envpipe(const frontier::PlanningProblem& problem, const Ladders& ladders,
                      double all_max_time_s) {
  const pipeline::OperationDag& dag = problem.dag;
  const int last_gpu = problem.num_gpus() - 1;
  const int last_microbatch = problem.spec.num_microbatches - 1;
  std::vector<int> index = top_indices(problem, ladders);
  for (std::size_t v = 0; v < index.size(); ++v) {
    const pipeline::Operation& op = dag.operations[v];
    if (!pipeline::is_profiled(op.kind)) continue;
    // The outer envelope EnvPipe keeps at the top clock: it is the critical path of 1F1B when the
    // last stage is the heaviest, which EnvPipe assumes.
    const bool envelope =
        op.gpu == last_gpu || (op.kind == InstructionKind::kForward && op.microbatch == 0) ||
        (op.kind != InstructionKind::kForward && op.microbatch == last_microbatch);
    if (envelope) continue;
    // EnvPipe's "optimal" clock: the bottom of the energy valley (least measured energy; the
    // higher clock on ties).
    const auto& ladder = ladders.of(problem, static_cast<int>(v));
    int best = 0;
    for (std::size_t i = 1; i < ladder.size(); ++i) {
      if (ladder[i].energy_j <= ladder[static_cast<std::size_t>(best)].energy_j) {
        best = static_cast<int>(i);
      }
    }
    index[v] = best;
  }
  // Balanced reconfiguration: raise the lowest clock on the critical paths one step at a time
  // until the iteration is no slower than all max clock. Terminates: every round raises a clock,
  // and with all critical nodes at the top the makespan is at most the all-max one.
  const std::vector<int> top = top_indices(problem, ladders);
  while (true) {
    double makespan = 0.0;
    const std::vector<char> critical =
        critical_nodes(dag, plan_times(problem, ladders, index), makespan);
    if (makespan <= all_max_time_s * (1.0 + kRelativeTolerance)) break;
    int lowest_mhz = std::numeric_limits<int>::max();
    for (std::size_t v = 0; v < index.size(); ++v) {
      if (critical[v] && index[v] < top[v]) {
        lowest_mhz = std::min(
            lowest_mhz, ladders.of(problem, static_cast<int>(v))[static_cast<std::size_t>(index[v])]
                            .frequency_mhz);
      }
    }
    if (lowest_mhz == std::numeric_limits<int>::max()) break;  // only rounding can get here
    for (std::size_t v = 0; v < index.size(); ++v) {
      if (critical[v] && index[v] < top[v] &&
          ladders.of(problem, static_cast<int>(v))[static_cast<std::size_t>(index[v])]
                  .frequency_mhz == lowest_mhz) {
        ++index[v];
      }
    }
  }
  return evaluate_plan(problem, ladders, index, "EnvPipe");
}

}  // namespace

Baselines compute_baselines(const frontier::PlanningProblem& problem,
                            const profile::Profile& profile) {
  const Ladders ladders = build_ladders(problem, profile);
  Baselines baselines;
  baselines.all_max_clock =
      evaluate_plan(problem, ladders, top_indices(problem, ladders), "all max clock");
  baselines.zeus_global = zeus_global(problem, ladders);
  baselines.zeus_per_stage = zeus_per_stage(problem, ladders);
  baselines.envpipe = envpipe(problem, ladders, baselines.all_max_clock.time_s);
  return baselines;
}

std::optional<std::size_t> perseus_point_within(const std::vector<frontier::RealizedPlan>& realized,
                                                double time_s) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < realized.size(); ++i) {
    if (realized[i].time_s > time_s * (1.0 + kRelativeTolerance)) continue;
    if (!best || realized[i].energy_j < realized[*best].energy_j) best = i;
  }
  return best;
}

}  // namespace powertrain::study
