#include "kareus/compose.h"

#include <algorithm>
#include <map>

namespace powertrain::kareus {

std::vector<MicrobatchOption> pareto_options(std::vector<MicrobatchOption> options) {
  std::stable_sort(options.begin(), options.end(),
                   [](const MicrobatchOption& a, const MicrobatchOption& b) {
                     return a.time_s != b.time_s ? a.time_s < b.time_s : a.energy_j < b.energy_j;
                   });
  std::vector<MicrobatchOption> front;
  for (MicrobatchOption& o : options)
    if (front.empty() || o.energy_j < front.back().energy_j) front.push_back(std::move(o));
  return front;
}

std::vector<MicrobatchOption> microbatch_frontier(
    const device::GpuSpec& gpu, const ConcurrencyParams& params, const MicrobatchWork& microbatch,
    const std::vector<std::vector<Evaluated>>& candidates, const std::vector<int>& clocks_mhz,
    bool include_sequential) {
  std::vector<MicrobatchOption> all;
  for (int clock : clocks_mhz) {
    if (include_sequential) {
      const Cost c = microbatch.sequential_kernels.empty()
                         ? sequential_cost(gpu, params, microbatch.sequential, clock)
                         : sequential_cost(gpu, params, microbatch.sequential_kernels, clock);
      all.push_back({c.time_s, c.energy_j, clock, true, {}});
    }
    // No candidates given (Megatron-LM only): the partitioned execution is not considered.
    if (microbatch.partitions.empty() || candidates.size() != microbatch.partitions.size())
      continue;
    const Cost solo = evaluate_solo(gpu, params, microbatch.solo, clock);
    std::vector<MicrobatchOption> set = {{solo.time_s, solo.energy_j, clock, false, {}}};
    bool complete = true;
    for (std::size_t t = 0; t < microbatch.partitions.size() && complete; ++t) {
      const double count = microbatch.partitions[t].count;
      std::vector<MicrobatchOption> here;
      for (const Evaluated& e : candidates[t])
        if (e.schedule.clock_mhz == clock)
          here.push_back({e.cost.time_s, e.cost.energy_j, clock, false, {e.schedule}});
      here = pareto_options(std::move(here));
      if (here.empty()) {
        complete = false;
        break;
      }
      std::vector<MicrobatchOption> next;
      next.reserve(set.size() * here.size());
      for (const MicrobatchOption& a : set)
        for (const MicrobatchOption& b : here) {
          MicrobatchOption sum = a;
          sum.time_s += count * b.time_s;
          sum.energy_j += count * b.energy_j;
          sum.schedules.push_back(b.schedules.front());
          next.push_back(std::move(sum));
        }
      set = pareto_options(std::move(next));
    }
    if (complete) all.insert(all.end(), set.begin(), set.end());
  }
  return pareto_options(std::move(all));
}

profile::Profile options_profile(const StageOptions& options, const std::string& source) {
  profile::Profile profile;
  profile.source = source;
  for (std::size_t s = 0; s < options.size(); ++s) {
    for (int kind = 0; kind < 2; ++kind) {
      profile::InstructionProfile entry;
      entry.stage = static_cast<int>(s);
      entry.kind =
          kind == 0 ? pipeline::InstructionKind::kForward : pipeline::InstructionKind::kBackward;
      const auto& opts = options[s][kind];
      // Slowest first: code 1 is the slowest option, the fastest gets the highest code.
      for (std::size_t i = 0; i < opts.size(); ++i) {
        const MicrobatchOption& o = opts[opts.size() - 1 - i];
        entry.options.push_back({static_cast<int>(i + 1), o.time_s, o.energy_j, 0});
      }
      profile.entries.push_back(std::move(entry));
    }
  }
  return profile;
}

core::Result<IterationFrontier> iteration_frontier(const StageOptions& options, int microbatches,
                                                   double unit_time_s, double p_blocking_w) {
  pipeline::PipelineSpec spec;
  spec.schedule = pipeline::ScheduleKind::kOneFOneB;
  spec.num_gpus = static_cast<int>(options.size());
  spec.num_microbatches = microbatches;
  frontier::PlanningSettings settings;
  settings.unit_time_s = unit_time_s;
  settings.p_blocking_w = p_blocking_w;
  settings.cost_model = frontier::CostModelKind::kPiecewiseLinear;
  settings.quantization = frontier::Quantization::kCeil;
  auto problem =
      frontier::build_planning_problem(options_profile(options, "kareus"), spec, settings);
  if (!problem) return problem.error();
  IterationFrontier out;
  out.problem = std::move(*problem);
  out.frontier = frontier::solve_frontier(out.problem);
  frontier::pin_fastest_point(out.problem, out.frontier);
  out.realized = frontier::realize_frontier(out.problem, out.frontier);
  return out;
}

frontier::RealizedPlan evaluate_fixed(const frontier::PlanningProblem& problem,
                                      const std::vector<std::array<MicrobatchOption, 2>>& chosen) {
  const std::size_t n = problem.dag.operations.size();
  std::vector<double> times(n), energies(n);
  for (std::size_t v = 0; v < n; ++v) {
    const pipeline::Operation& op = problem.dag.operations[v];
    const MicrobatchOption& o = chosen[static_cast<std::size_t>(op.stage)]
                                      [op.kind == pipeline::InstructionKind::kForward ? 0 : 1];
    times[v] = o.time_s;
    energies[v] = o.energy_j;
  }
  return frontier::evaluate_measured(problem, times, energies);
}

}  // namespace powertrain::kareus
