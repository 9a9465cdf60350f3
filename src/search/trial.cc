#include "search/trial.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "frontier/evaluate.h"
#include "frontier/problem.h"
#include "frontier/solver.h"
#include "profile/model_profile.h"
#include "workload/memory.h"

namespace powertrain::search {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

profile::ModelJobRequest request_for(const SearchSpec& spec, const ConfigValues& c, int dp,
                                     int microbatches, int stages) {
  profile::ModelJobRequest request;
  request.model = spec.model;
  request.gpu = spec.gpu;
  request.tp = c.tp;
  request.pp = stages;
  request.dp = dp;
  request.microbatch_size = c.microbatch_size;
  request.seq_len = spec.seq_len;
  request.microbatches = microbatches;
  request.precision = spec.precision;
  request.recompute = c.recompute;
  request.sequence_parallel = c.sequence_parallel;
  request.distributed_optimizer = c.distributed_optimizer;
  return request;
}

TrialResult invalid(TrialResult r, std::string reason) {
  r.status = TrialStatus::kInvalid;
  r.reason = std::move(reason);
  return r;
}

// The structural checks and the memory model; on success also the pp-stage job.
TrialResult check(const SearchSpec& spec, const Config& config, profile::ModelJob* job_out) {
  TrialResult r;
  r.config = config;
  const ConfigValues c = values_of(spec, config);
  if (spec.num_gpus % (c.tp * c.pp) != 0)
    return invalid(r,
                   fmt::format("tp x pp = {} does not divide {} GPUs", c.tp * c.pp, spec.num_gpus));
  r.dp = spec.num_gpus / (c.tp * c.pp);
  if (spec.global_batch % (c.microbatch_size * r.dp) != 0)
    return invalid(r, fmt::format("global batch {} is not a multiple of microbatch {} x dp {}",
                                  spec.global_batch, c.microbatch_size, r.dp));
  r.num_microbatches = spec.global_batch / (c.microbatch_size * r.dp);
  if (c.sequence_parallel && c.tp == 1)
    return invalid(r, "sequence parallelism needs tp > 1 (same as without)");
  if (c.distributed_optimizer && r.dp == 1)
    return invalid(r, "distributed optimizer needs dp > 1 (same as without)");
  if (c.virtual_stages > 1) {
    if (c.pp == 1) return invalid(r, "virtual stages need pp > 1");
    if (c.recompute) return invalid(r, "interleaved 1F1B with recomputation is not modelled");
    if (r.num_microbatches % c.pp != 0)
      return invalid(r, fmt::format("interleaving needs microbatches ({}) a multiple of pp ({})",
                                    r.num_microbatches, c.pp));
  }
  auto job = profile::build_model_job(request_for(spec, c, r.dp, r.num_microbatches, c.pp));
  if (!job) return invalid(r, job.error().message);
  // Memory of the pp-stage layout; interleaving's extra in-flight activations are not modelled.
  auto memory = workload::estimate_memory(job->model, job->parallel, job->partition,
                                          job->gpu.memory_gib * kGiB);
  if (!memory) return invalid(r, memory.error().message);
  r.peak_memory_gib =
      memory->stages[static_cast<std::size_t>(memory->peak_stage)].total_bytes / kGiB;
  if (!memory->fits) {
    r.status = TrialStatus::kOom;
    r.reason = memory->verdict;
    return r;
  }
  r.status = TrialStatus::kOk;
  if (job_out != nullptr) *job_out = std::move(*job);
  return r;
}

}  // namespace

std::string_view status_name(TrialStatus status) {
  switch (status) {
    case TrialStatus::kOk:
      return "ok";
    case TrialStatus::kInvalid:
      return "invalid";
    case TrialStatus::kOom:
      return "oom";
    case TrialStatus::kPrunedOom:
      return "pruned-oom";
    case TrialStatus::kPrunedDominated:
      return "pruned-dominated";
    case TrialStatus::kPrunedBound:
      return "pruned-bound";
  }
  return "?";
}

TrialResult check_config(const SearchSpec& spec, const Config& config) {
  return check(spec, config, nullptr);
}

TrialResult pruned_by_bound(TrialResult planned, std::string reason) {
  TrialResult r;
  r.config = std::move(planned.config);
  r.status = TrialStatus::kPrunedBound;
  r.reason = std::move(reason);
  r.dp = planned.dp;
  r.num_microbatches = planned.num_microbatches;
  r.peak_memory_gib = planned.peak_memory_gib;
  r.bound_time_s = planned.bound_time_s;
  r.bound_energy_j = planned.bound_energy_j;
  r.seconds = planned.seconds;
  return r;
}

TrialResult evaluate_config(const SearchSpec& spec, const Config& config, const BoundFilter& skip) {
  const auto started = std::chrono::steady_clock::now();
  profile::ModelJob job;
  TrialResult r = check(spec, config, &job);
  auto done = [&](TrialResult out) {
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return out;
  };
  if (r.status != TrialStatus::kOk) return done(std::move(r));
  const ConfigValues c = values_of(spec, config);
  const int v = c.virtual_stages;
  if (v > 1) {
    auto chunked =
        profile::build_model_job(request_for(spec, c, r.dp, r.num_microbatches, c.pp * v));
    if (!chunked) return done(invalid(r, chunked.error().message));
    job = std::move(*chunked);
  }
  const profile::Profile profile = profile::generate_profile(job);

  // Once-per-iteration work (gradient reduction, optimizer step) at the highest clock: a constant
  // node per GPU, whose energy above blocking power is added to every point.
  const int max_clock = job.gpu.max_clock_mhz();
  std::vector<double> per_iter_s(static_cast<std::size_t>(c.pp), 0.0);
  double per_iter_extra_j = 0.0;
  for (std::size_t s = 0; s < job.stages.size(); ++s) {
    const auto& stage = job.stages[s];
    const std::size_t gpu = s % static_cast<std::size_t>(c.pp);
    const auto e =
        device::estimate_work(job.gpu, workload::works_of(stage.per_iteration), max_clock);
    per_iter_s[gpu] += e.time_s;
    per_iter_extra_j += e.energy_j - job.gpu.p_blocking_w * e.time_s;
  }
  pipeline::PipelineSpec pipe;
  pipe.schedule = v > 1         ? pipeline::ScheduleKind::kInterleavedOneFOneB
                  : c.recompute ? pipeline::ScheduleKind::kOneFOneBEarlyRecompute
                                : pipeline::ScheduleKind::kOneFOneB;
  pipe.num_gpus = c.pp;
  pipe.chunks_per_gpu = v;
  pipe.num_microbatches = r.num_microbatches;
  pipe.optimizer_step_time_s = *std::max_element(per_iter_s.begin(), per_iter_s.end());
  // Coarse τ: a fraction of the shortest instruction at the highest clock, so that rounding
  // each instruction to whole τ (ceil) costs at most 1/tau_steps of it.
  double shortest_s = std::numeric_limits<double>::infinity();
  for (const auto& entry : profile.entries)
    for (const auto& option : entry.options)
      if (option.time_s > 0.0) shortest_s = std::min(shortest_s, option.time_s);
  frontier::PlanningSettings settings;
  settings.unit_time_s = shortest_s / spec.tau_steps;
  settings.p_blocking_w = job.gpu.p_blocking_w;
  settings.cost_model = frontier::CostModelKind::kPiecewiseLinear;
  auto problem = frontier::build_planning_problem(profile, pipe, settings);
  if (!problem) return done(invalid(r, problem.error().message));
  // The pipeline's energy stands for one tensor-parallel rank of one data-parallel replica.
  const double replicas = static_cast<double>(c.tp) * r.dp;
  // Lower bounds on every realized point, for the bound tactic: realized time is the longest path
  // of the chosen options' times, so no less than with every node at its fastest option; realized
  // energy is Σ (e − P_blocking·t) + P_blocking·GPUs·time, each term no less than its least option.
  // Shrunk by 1e-9 so summation order cannot make a bound exceed a realized value.
  {
    const pipeline::OperationDag& dag = problem->dag;
    std::vector<double> fastest(dag.operations.size(), 0.0);
    double above_blocking_j = 0.0;
    for (std::size_t v = 0; v < fastest.size(); ++v) {
      const pipeline::Operation& op = dag.operations[v];
      if (!pipeline::is_profiled(op.kind)) {
        fastest[v] = op.constant_time_s;
        continue;
      }
      double t = std::numeric_limits<double>::infinity(), e = t;
      for (const auto& option : problem->model_of(static_cast<int>(v)).options()) {
        t = std::min(t, option.time_s);
        e = std::min(e, option.energy_j - settings.p_blocking_w * option.time_s);
      }
      fastest[v] = t;
      above_blocking_j += e;
    }
    const double time_s = frontier::longest_path(dag, fastest);
    r.bound_time_s = time_s * (1.0 - 1e-9);
    const double pipe_j = above_blocking_j + settings.p_blocking_w * dag.num_gpus * time_s;
    const double energy_j = (pipe_j + per_iter_extra_j) * replicas;
    r.bound_energy_j = energy_j - std::abs(energy_j) * 1e-9;
  }
  if (skip) {
    if (std::string why = skip(r.bound_time_s, r.bound_energy_j); !why.empty()) {
      r.status = TrialStatus::kPrunedBound;
      r.reason = std::move(why);
      return done(std::move(r));
    }
  }
  frontier::Frontier solved = frontier::solve_frontier(*problem);
  frontier::pin_fastest_point(*problem, solved);

  // Points are the realized ones (modelled time and energy at the planned clocks, without the τ
  // rounding), Pareto-filtered: rounding can make a planned point realize no better than another.
  const std::vector<frontier::RealizedPlan> realized = frontier::realize_frontier(*problem, solved);
  std::vector<TrialPoint> points;
  for (std::size_t i = 0; i < realized.size(); ++i)
    points.push_back({realized[i].time_s, (realized[i].energy_j + per_iter_extra_j) * replicas,
                      static_cast<int>(i)});
  std::stable_sort(points.begin(), points.end(), [](const TrialPoint& a, const TrialPoint& b) {
    return a.time_s != b.time_s ? a.time_s > b.time_s : a.energy_j < b.energy_j;
  });
  // Slowest first; keep a point only if it uses less energy than every faster point.
  double least = std::numeric_limits<double>::infinity();
  for (auto it = points.rbegin(); it != points.rend(); ++it) {
    if (it->energy_j < least) {
      least = it->energy_j;
      r.frontier.push_back(*it);
    }
  }
  std::reverse(r.frontier.begin(), r.frontier.end());
  const frontier::RealizedPlan baseline = frontier::all_max_clock_baseline(*problem);
  r.baseline_time_s = baseline.time_s;
  r.baseline_energy_j = (baseline.energy_j + per_iter_extra_j) * replicas;
  r.t_min_s = r.frontier.back().time_s;
  r.energy_at_t_min_j = r.frontier.back().energy_j;
  r.t_star_s = r.frontier.front().time_s;
  r.energy_at_t_star_j = r.frontier.front().energy_j;
  return done(std::move(r));
}

}  // namespace powertrain::search
