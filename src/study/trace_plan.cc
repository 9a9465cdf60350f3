#include "study/trace_plan.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <span>
#include <string_view>

#include "frontier/evaluate.h"
#include "pipeline/schedule.h"
#include "sim/energy.h"

namespace powertrain::study {
namespace {

using pipeline::InstructionKind;

constexpr std::int64_t kNotRun = std::numeric_limits<std::int64_t>::min();

// Pipeline transfers: NCCL tasks of 2-member groups or named send/recv. Other collectives (data
// or tensor parallel) neither cut instructions nor count as their compute.
bool is_p2p(const graph::ExecutionGraph& graph, std::int32_t task) {
  if (graph.nccl[task] == 0) return false;
  const std::int32_t group = graph.collective[task];
  if (group != graph::kNone) {
    std::string kind = graph.collectives[group].collective;
    std::transform(kind.begin(), kind.end(), kind.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    // NCCL runs all-to-all as SendRecv kernels: the metadata's collective name decides.
    if (!kind.empty())
      return (kind.find("send") != std::string::npos || kind.find("recv") != std::string::npos) &&
             kind.find("all") == std::string::npos;
    return graph.collectives[group].expected_members == 2;
  }
  const std::string& name = graph.task_name(task);
  for (std::string_view marker : {"SendRecv", "Send", "Recv", "send", "recv"})
    if (name.find(marker) != std::string::npos) return true;
  return false;
}

// A rank's compute tasks cut at its transfers.
struct Group {
  std::vector<std::int32_t> tasks;
  bool transfer_before = false;  // a transfer precedes the group
  bool transfer_after = false;   // a transfer follows it
  bool blocking_after = false;   // ... on the stream of the group's last task (holds the stage)
};

std::vector<Group> split_rank(const graph::ExecutionGraph& graph, int rank,
                              const std::vector<std::int64_t>& start_ns,
                              const std::vector<std::int64_t>& end_ns, bool& any_p2p) {
  const graph::RankInfo& info = graph.ranks[static_cast<std::size_t>(rank)];
  std::vector<std::int32_t> tasks;
  for (std::int32_t t = info.first_task; t < info.end_task; ++t)
    // Tasks a partial replay never ran have no times (INT64_MIN).
    if (graph::is_gpu(graph.kind[t]) && start_ns[t] != kNotRun && end_ns[t] >= start_ns[t] &&
        (graph.nccl[t] == 0 || is_p2p(graph, t)))
      tasks.push_back(t);
  // Transfers first on ties: one issued when an instruction ends separates it from the next one
  // even when both start at the same nanosecond.
  std::sort(tasks.begin(), tasks.end(), [&](std::int32_t a, std::int32_t b) {
    if (start_ns[a] != start_ns[b]) return start_ns[a] < start_ns[b];
    if (graph.nccl[a] != graph.nccl[b]) return graph.nccl[a] > graph.nccl[b];
    return a < b;
  });
  std::vector<Group> groups;
  bool pending = false, open = false;
  any_p2p = false;
  for (std::int32_t t : tasks) {
    if (graph.nccl[t] != 0) {
      any_p2p = true;
      if (open) {
        groups.back().transfer_after = true;
        groups.back().blocking_after =
            graph.processor[t] == graph.processor[groups.back().tasks.back()];
      }
      pending = true;
      open = false;
      continue;
    }
    if (!open) {
      groups.push_back({});
      groups.back().transfer_before = pending;
      pending = false;
      open = true;
    }
    groups.back().tasks.push_back(t);
  }
  return groups;
}

bool sends(InstructionKind kind, int stage, int stages) {
  return kind == InstructionKind::kForward ? stage + 1 < stages : stage > 0;
}
bool receives(InstructionKind kind, int stage, int stages) {
  return kind == InstructionKind::kForward ? stage > 0 : stage + 1 < stages;
}

// The 1F1B order of one stage cut where a transfer separates consecutive instructions: each run
// is the list of instructions one group of GPU work should hold.
std::vector<std::vector<pipeline::ScheduledInstruction>> expected_runs(
    const std::vector<pipeline::ScheduledInstruction>& order, int stage, int stages) {
  std::vector<std::vector<pipeline::ScheduledInstruction>> runs;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const bool cut =
        i == 0 || sends(order[i - 1].kind, stage, stages) || receives(order[i].kind, stage, stages);
    if (cut) runs.emplace_back();
    runs.back().push_back(order[i]);
  }
  return runs;
}

core::Result<std::vector<std::vector<pipeline::ScheduledInstruction>>> order_for(int stages,
                                                                                 int microbatches) {
  pipeline::PipelineSpec spec;
  spec.schedule = pipeline::ScheduleKind::kOneFOneB;
  spec.num_gpus = stages;
  spec.num_microbatches = microbatches;
  return pipeline::schedule_order(spec);
}

// The wire time of one transfer: the shortest transfer of the job (one whose partner was
// already waiting); longer ones include waiting, which the schedule's dependencies model.
std::int64_t shortest_transfer_ns(const graph::ExecutionGraph& graph,
                                  const std::vector<std::int64_t>& start_ns,
                                  const std::vector<std::int64_t>& end_ns) {
  std::int64_t wire_ns = -1;
  for (std::int32_t t = 0; t < graph.task_count(); ++t)
    if (graph::is_gpu(graph.kind[t]) && is_p2p(graph, t) && start_ns[t] != kNotRun &&
        end_ns[t] > start_ns[t])
      wire_ns = wire_ns < 0 ? end_ns[t] - start_ns[t] : std::min(wire_ns, end_ns[t] - start_ns[t]);
  return wire_ns;
}

// Each rank's GPU work cut at its transfers, without the set-up and optimizer work outside the
// pipeline.
core::Result<std::vector<std::vector<Group>>> groups_per_stage(
    const graph::ExecutionGraph& graph, const std::vector<std::int64_t>& start_ns,
    const std::vector<std::int64_t>& end_ns) {
  const int stages = static_cast<int>(graph.ranks.size());
  std::vector<std::vector<Group>> groups(static_cast<std::size_t>(stages));
  for (int s = 0; s < stages; ++s) {
    bool any_p2p = false;
    groups[s] = split_rank(graph, s, start_ns, end_ns, any_p2p);
    const graph::RankInfo& info = graph.ranks[static_cast<std::size_t>(s)];
    if (!any_p2p)
      return core::Error{fmt::format(
          "no pipeline structure: rank {} ({}) has no point-to-point (send/recv) transfers; its "
          "GPU work is not split into pipeline stages",
          info.rank, info.source)};
    // Work before the first transfer of a stage whose first forward receives (set-up), and after
    // the last transfer of one whose last backward sends (optimizer), is outside the pipeline.
    if (s > 0 && !groups[s].empty() && !groups[s].front().transfer_before)
      groups[s].erase(groups[s].begin());
    if (s > 0 && !groups[s].empty() && !groups[s].back().transfer_after) groups[s].pop_back();
  }
  return groups;
}

// The microbatch count whose 1F1B order cuts rank 0 into as many groups as observed (the count
// grows with M; the others are checked against it).
core::Result<int> microbatches_of(const graph::ExecutionGraph& graph, int stages,
                                  std::size_t observed0) {
  // Binary search: every forward on stage 0 is followed by a send, so M ≤ groups, and the
  // count of groups grows with M.
  int lo = 1, hi = static_cast<int>(std::min<std::size_t>(observed0, 100'000));
  while (lo <= hi) {
    const int m = lo + (hi - lo) / 2;
    auto order = order_for(stages, m);
    if (!order) return order.error();
    const std::size_t runs = expected_runs((*order)[0], 0, stages).size();
    if (runs == observed0) return m;
    if (runs < observed0)
      lo = m + 1;
    else
      hi = m - 1;
  }
  return core::Error{fmt::format(
      "no pipeline structure: rank {} has {} groups of GPU work between NCCL transfers, which "
      "no synchronous 1F1B pipeline of {} stages gives (not pipeline-parallel, or another "
      "schedule)",
      graph.ranks[0].rank, observed0, stages)};
}

// Sends on the compute stream (the usual case for NCCL P2P issued in the training loop)?
bool sends_block_stream(const std::vector<std::vector<Group>>& groups) {
  std::size_t sends_seen = 0, sends_blocking = 0;
  for (const auto& rank_groups : groups)
    for (const Group& g : rank_groups) {
      sends_seen += g.transfer_after;
      sends_blocking += g.blocking_after;
    }
  return 2 * sends_blocking > sends_seen;
}

using Runs = std::vector<std::vector<pipeline::ScheduledInstruction>>;  // per group

// Where a group holding two instructions (`run`, k0 then k1) is cut: by the task count of
// single-instruction groups of either kind on the stage, else by kernel names.
core::Result<std::size_t> cut_of_pair(const graph::ExecutionGraph& graph, int stage,
                                      const Group& group,
                                      const std::vector<pipeline::ScheduledInstruction>& run,
                                      const std::array<long long, 2>& count_of,
                                      const std::array<std::set<std::string>, 2>& names_of) {
  const int k0 = run[0].kind == InstructionKind::kForward ? 0 : 1;
  const int k1 = 1 - k0;
  const std::size_t n = group.tasks.size();
  if (n < 2)
    return core::Error{fmt::format(
        "no pipeline structure: rank {} has a group of {} GPU task(s) where a {} and a {} "
        "should run",
        graph.ranks[stage].rank, n, pipeline::instruction_name(run[0].kind),
        pipeline::instruction_name(run[1].kind))};
  if (count_of[k1] > 0 && static_cast<std::size_t>(count_of[k1]) < n)
    return n - static_cast<std::size_t>(count_of[k1]);
  if (count_of[k0] > 0 && static_cast<std::size_t>(count_of[k0]) < n)
    return static_cast<std::size_t>(count_of[k0]);
  // Name evidence: the first part's names come from pure k0 groups, the rest from k1.
  // score(c) = Σ_{i<c} (in0 − in1) + Σ_{i≥c} (in1 − in0), by prefix sums: O(n).
  std::size_t cut = n;
  long long tail = 0;
  std::vector<long long> delta(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::string& name = graph.task_name(group.tasks[i]);
    const int in0 = names_of[k0].count(name) > 0 && names_of[k1].count(name) == 0;
    const int in1 = names_of[k1].count(name) > 0 && names_of[k0].count(name) == 0;
    delta[i] = in0 - in1;
    tail -= delta[i];
  }
  long long best = std::numeric_limits<long long>::min(), head = 0;
  for (std::size_t c = 1; c < n; ++c) {
    head += delta[c - 1];
    tail += delta[c - 1];
    const long long score = head + tail;
    // Ties: names seen in neither (a last stage's head and loss) go to the forward.
    if (score > best || (score == best && k0 == 0)) best = score, cut = c;
  }
  return cut;
}

// Matmul, memory and idle time of an instruction's tasks within its span.
void add_task_times(const graph::ExecutionGraph& graph, const std::vector<std::int64_t>& start_ns,
                    const std::vector<std::int64_t>& end_ns, TraceInstruction& ins) {
  std::int64_t first = std::numeric_limits<std::int64_t>::max();
  std::int64_t last = std::numeric_limits<std::int64_t>::min();
  for (std::int32_t t : ins.tasks) {
    first = std::min(first, start_ns[t]);
    last = std::max(last, end_ns[t]);
    const double d = static_cast<double>(end_ns[t] - start_ns[t]) * 1e-9;
    if (sim::classify_kernel(graph.task_name(t), graph.kind[t], false) == sim::KernelClass::kMatmul)
      ins.matmul_s += d;
    else
      ins.memory_s += d;
  }
  ins.start_s = static_cast<double>(first) * 1e-9;
  ins.end_s = static_cast<double>(last) * 1e-9;
  const double span = ins.end_s - ins.start_s;
  const double busy = ins.matmul_s + ins.memory_s;
  if (busy > span && busy > 0.0) {  // overlapping streams: scale busy time into the span
    ins.matmul_s *= span / busy;
    ins.memory_s *= span / busy;
  }
  ins.idle_s = std::max(0.0, span - ins.matmul_s - ins.memory_s);
}

}  // namespace

core::Result<TracePipeline> find_pipeline(const graph::ExecutionGraph& graph,
                                          const std::vector<std::int64_t>& start_ns,
                                          const std::vector<std::int64_t>& end_ns) {
  const int stages = static_cast<int>(graph.ranks.size());
  if (stages < 2)
    return core::Error{fmt::format(
        "no pipeline structure: {} rank(s) in the trace; a pipeline needs one rank per stage "
        "(at least 2) with send/recv between them",
        stages)};
  if (start_ns.size() != static_cast<std::size_t>(graph.task_count()) ||
      end_ns.size() != start_ns.size())
    return core::Error{"internal: timeline size differs from the graph's task count"};
  const std::int64_t wire_ns = shortest_transfer_ns(graph, start_ns, end_ns);
  auto found_groups = groups_per_stage(graph, start_ns, end_ns);
  if (!found_groups) return found_groups.error();
  const std::vector<std::vector<Group>>& groups = *found_groups;
  auto found_microbatches = microbatches_of(graph, stages, groups[0].size());
  if (!found_microbatches) return found_microbatches.error();
  const int microbatches = *found_microbatches;
  auto order = order_for(stages, microbatches);
  if (!order) return order.error();
  const bool blocking = sends_block_stream(groups);

  TracePipeline pipeline;
  pipeline.stages = stages;
  pipeline.microbatches = microbatches;
  // Kernel names of groups that hold exactly one instruction, by kind (for splitting pairs).
  std::array<std::set<std::string>, 2> names_of;
  std::vector<Runs> runs(static_cast<std::size_t>(stages));
  for (int s = 0; s < stages; ++s) {
    runs[s] = expected_runs((*order)[s], s, stages);
    if (runs[s].size() != groups[s].size())
      return core::Error{fmt::format(
          "no pipeline structure: rank {} has {} groups of GPU work between NCCL transfers; stage "
          "{} of a 1F1B pipeline of {} stages x {} microbatches (found from rank 0) has {}",
          graph.ranks[s].rank, groups[s].size(), s, stages, microbatches, runs[s].size())};
    for (std::size_t g = 0; g < runs[s].size(); ++g)
      if (runs[s][g].size() == 1)
        for (std::int32_t t : groups[s][g].tasks)
          names_of[runs[s][g][0].kind == InstructionKind::kForward ? 0 : 1].insert(
              graph.task_name(t));
  }
  for (int s = 0; s < stages; ++s) {
    // Task count of this stage's single-instruction groups per kind, when all agree.
    std::array<long long, 2> count_of = {-1, -1};
    for (std::size_t g = 0; g < runs[s].size(); ++g) {
      if (runs[s][g].size() != 1) continue;
      const int k = runs[s][g][0].kind == InstructionKind::kForward ? 0 : 1;
      const auto n = static_cast<long long>(groups[s][g].tasks.size());
      count_of[k] = count_of[k] == -1 || count_of[k] == n ? n : -2;
    }
    for (std::size_t g = 0; g < runs[s].size(); ++g) {
      const Group& group = groups[s][g];
      const auto& run = runs[s][g];
      if (run.size() > 2)
        return core::Error{fmt::format(
            "internal: {} instructions between two transfers on stage {}", run.size(), s)};
      std::size_t cut = group.tasks.size();
      if (run.size() == 2) {
        auto pair_cut = cut_of_pair(graph, s, group, run, count_of, names_of);
        if (!pair_cut) return pair_cut.error();
        cut = *pair_cut;
      }
      for (std::size_t part = 0; part < run.size(); ++part) {
        TraceInstruction ins;
        ins.stage = s;
        ins.microbatch = run[part].microbatch;
        ins.kind = run[part].kind;
        const std::size_t lo = part == 0 ? 0 : cut, hi = part == 0 ? cut : group.tasks.size();
        ins.tasks.assign(group.tasks.begin() + static_cast<std::ptrdiff_t>(lo),
                         group.tasks.begin() + static_cast<std::ptrdiff_t>(hi));
        // One wire time per transfer: on the sender when sends hold its stream (it is busy until
        // the partner has the data), else on the receiver (it waits for the data).
        if (wire_ns > 0 && blocking && part + 1 == run.size() && sends(ins.kind, s, stages) &&
            group.transfer_after)
          ins.send_s = static_cast<double>(wire_ns) * 1e-9;
        if (wire_ns > 0 && !blocking && part == 0 && receives(ins.kind, s, stages) &&
            group.transfer_before)
          ins.receive_s = static_cast<double>(wire_ns) * 1e-9;
        add_task_times(graph, start_ns, end_ns, ins);
        pipeline.instructions.push_back(std::move(ins));
      }
    }
  }
  double first = INFINITY, last = -INFINITY;
  for (const TraceInstruction& ins : pipeline.instructions) {
    first = std::min(first, ins.start_s - ins.receive_s);
    last = std::max(last, ins.end_s + ins.send_s);
  }
  pipeline.makespan_s = last - first;
  return pipeline;
}

device::WorkEstimate model_instruction(const TraceInstruction& instruction,
                                       const device::GpuSpec& gpu, double clock_mhz) {
  const device::DvfsParams& p = gpu.dvfs;
  // Tensor precision the GPU has (work sized so that it takes the measured time at f_max).
  device::Precision precision = device::Precision::kFp32;
  for (device::Precision candidate :
       {device::Precision::kBf16, device::Precision::kFp16, device::Precision::kTf32})
    if (gpu.peak_tflops(candidate) > 0.0) {
      precision = candidate;
      break;
    }
  std::vector<device::Work> work;
  if (instruction.matmul_s > 0.0) {
    device::Work w;
    w.kind = device::WorkKind::kMatmul;
    w.precision = precision;
    w.flops = instruction.matmul_s * gpu.peak_tflops(precision) * 1e12 * p.matmul_efficiency;
    work.push_back(w);
  }
  if (instruction.memory_s > 0.0) {
    device::Work w;
    w.kind = device::WorkKind::kMemoryBound;
    w.memory_bytes = instruction.memory_s * gpu.memory_bandwidth_gb_s * 1e9 * p.memory_efficiency;
    work.push_back(w);
  }
  device::WorkEstimate estimate{0.0, 0.0, clock_mhz, false};
  if (!work.empty()) {
    estimate = device::estimate_work(gpu, std::span<const device::Work>(work), clock_mhz);
    // The model may power-cap even the top clock; the trace says what the top clock takes, so
    // scale time and energy (same power) to give exactly the measured busy time there.
    const device::WorkEstimate top =
        device::estimate_work(gpu, std::span<const device::Work>(work), gpu.max_clock_mhz());
    const double busy = instruction.matmul_s + instruction.memory_s;
    if (top.time_s > 0.0) {
      estimate.time_s *= busy / top.time_s;
      estimate.energy_j *= busy / top.time_s;
    }
  }
  const double transfer_w =
      p.static_power_w +
      device::dynamic_power_w(gpu, p, estimate.effective_clock_mhz) * p.collective_activity;
  const double transfer_s = instruction.receive_s + instruction.send_s;
  estimate.time_s += instruction.idle_s + transfer_s;
  estimate.energy_j += instruction.idle_s * p.static_power_w + transfer_s * transfer_w;
  return estimate;
}

profile::Profile trace_profile(const TracePipeline& pipeline, const device::GpuSpec& gpu,
                               const std::string& source) {
  profile::Profile profile;
  profile.source = source;
  std::map<std::pair<int, int>, std::vector<const TraceInstruction*>> by_key;
  for (const TraceInstruction& ins : pipeline.instructions)
    by_key[{ins.stage, static_cast<int>(ins.kind)}].push_back(&ins);
  for (auto& [key, list] : by_key) {
    // The median instruction by time at max clock (lower median; deterministic).
    std::sort(list.begin(), list.end(), [](const TraceInstruction* a, const TraceInstruction* b) {
      if (a->time_at_max_s() != b->time_at_max_s()) return a->time_at_max_s() < b->time_at_max_s();
      return a->microbatch < b->microbatch;
    });
    const TraceInstruction& median = *list[(list.size() - 1) / 2];
    profile::InstructionProfile entry;
    entry.stage = key.first;
    entry.kind = static_cast<InstructionKind>(key.second);
    for (int clock : gpu.clocks_mhz) {
      const device::WorkEstimate e = model_instruction(median, gpu, clock);
      // Profiles refuse zero times and energies (an instruction of zero-length tasks).
      entry.options.push_back({clock, std::max(e.time_s, 1e-9), std::max(e.energy_j, 1e-12), 0});
    }
    profile.entries.push_back(std::move(entry));
  }
  return profile;
}

double TracePlan::t_min_s() const {
  return frontier.points.empty() ? 0.0
                                 : frontier.points.back().time_units * problem.settings.unit_time_s;
}

core::Result<TracePlan> plan_from_timeline(const graph::ExecutionGraph& graph,
                                           const std::vector<std::int64_t>& start_ns,
                                           const std::vector<std::int64_t>& end_ns,
                                           double replayed_step_s, const device::GpuSpec& gpu,
                                           const std::string& source,
                                           const TracePlanOptions& options) {
  auto found = find_pipeline(graph, start_ns, end_ns);
  if (!found) return found.error();
  TracePlan plan;
  plan.pipeline = std::move(*found);
  plan.replayed_step_s = replayed_step_s;
  plan.outside_s = std::max(0.0, replayed_step_s - plan.pipeline.makespan_s);
  plan.profile = trace_profile(plan.pipeline, gpu, source);
  pipeline::PipelineSpec spec;
  spec.schedule = pipeline::ScheduleKind::kOneFOneB;
  spec.num_gpus = plan.pipeline.stages;
  spec.num_microbatches = plan.pipeline.microbatches;
  spec.data_loading_time_s = plan.outside_s;
  frontier::PlanningSettings settings;
  settings.unit_time_s =
      options.unit_time_s > 0.0 ? options.unit_time_s : std::max(replayed_step_s, 1e-9) / 4000.0;
  settings.p_blocking_w = options.p_blocking_w >= 0.0 ? options.p_blocking_w : gpu.p_blocking_w;
  auto problem = frontier::build_planning_problem(plan.profile, spec, settings);
  if (!problem) return problem.error();
  plan.problem = std::move(*problem);
  plan.frontier = frontier::solve_frontier(plan.problem, options.solver);
  plan.fastest_point_pinned = frontier::pin_fastest_point(plan.problem, plan.frontier);
  return plan;
}

}  // namespace powertrain::study
