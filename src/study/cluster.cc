// Cluster emulation: one frontier per distinct pipeline, evaluated for N replicas and a straggler.
#include "study/cluster.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <map>
#include <utility>

#include "frontier/evaluate.h"
#include "study/baselines.h"

namespace powertrain::study {
namespace {

std::string describe(const ClusterConfig& c) {
  return fmt::format("{} GPUs (tp {}, pp {}, global batch {}, microbatch size {})", c.gpus,
                     c.tensor_parallel, c.pipeline_stages, c.global_batch_samples,
                     c.microbatch_samples);
}

std::string describe(const ClusterConfig& c, const ClusterShape& shape) {
  return fmt::format("{} GPUs = {} pipelines of pp {} x {} microbatches", c.gpus, shape.pipelines,
                     c.pipeline_stages, shape.microbatches_per_pipeline);
}

// One distinct pipeline (stages × microbatches): its problem, frontier and EnvPipe point.
struct SolvedPipeline {
  frontier::PlanningProblem problem;
  frontier::Frontier frontier;
  BaselinePoint envpipe;
  frontier::RealizedPlan max_clock;
  double solve_seconds = 0.0;
  bool solved = false;
  bool fastest_point_pinned = false;
};

// What every slowdown of one configuration needs.
struct ConfigContext {
  const frontier::PlanningProblem* problem = nullptr;
  const frontier::Frontier* frontier = nullptr;
  const BaselinePoint* envpipe = nullptr;
  const frontier::RealizedPlan* max_clock = nullptr;  // measured all-max-clock iteration
  double pipelines = 0.0;
  double tensor_parallel = 0.0;
  double blocking_w = 0.0;  // one pipeline (one GPU per stage) blocked
  double t_min_s = 0.0;
  double t_min_energy_j = 0.0;  // planned
};

// The straggler runs every instruction at its highest clock and is done at T′; it is charged
// exactly like a baseline pipeline (max-clock busy energy, blocking for the rest), and identically
// in every method, so it only dilutes the cluster percentages by about 1/N. If the non-stragglers
// take longer than T′ (EnvPipe or a realized plan can), the whole job waits for them.
ClusterEnergy run_cluster(const ConfigContext& c, double straggler_time_s, double plan_time_s,
                          double plan_energy_j, double baseline_pipeline_j,
                          double baseline_cluster_j) {
  ClusterEnergy e;
  e.iteration_time_s = std::max(straggler_time_s, plan_time_s);
  e.pipeline_energy_j = plan_energy_j + c.blocking_w * (e.iteration_time_s - plan_time_s);
  const double straggler_j = frontier::max_clock_energy_at(*c.problem, e.iteration_time_s);
  e.cluster_energy_j =
      c.tensor_parallel * ((c.pipelines - 1.0) * e.pipeline_energy_j + straggler_j);
  e.pipeline_savings_fraction =
      baseline_pipeline_j > 0.0 ? 1.0 - e.pipeline_energy_j / baseline_pipeline_j : 0.0;
  e.savings_fraction =
      baseline_cluster_j > 0.0 ? 1.0 - e.cluster_energy_j / baseline_cluster_j : 0.0;
  return e;
}

ClusterSlowdownResult evaluate_slowdown(const ConfigContext& c, double slowdown) {
  const double tau = c.problem->settings.unit_time_s;
  const frontier::StragglerOutcome outcome =
      frontier::straggler_outcome(*c.problem, *c.frontier, slowdown);
  ClusterSlowdownResult r;
  r.slowdown = slowdown;
  r.straggler_time_s = outcome.straggler_time_s;
  r.target_time_s = outcome.target_time_s;
  r.point = outcome.point;
  r.planned_time_s = outcome.planned_time_s;
  const double t_prime = r.straggler_time_s;

  // Baseline: every pipeline (the straggler too) at max clock, done at T_min, blocking until T′.
  const double base_pipeline = frontier::max_clock_energy_at(*c.problem, t_prime);
  const double base_cluster = c.tensor_parallel * c.pipelines * base_pipeline;
  r.baseline =
      run_cluster(c, t_prime, c.t_min_s, frontier::max_clock_energy_at(*c.problem, c.t_min_s),
                  base_pipeline, base_cluster);
  const frontier::FrontierPoint& point = c.frontier->points[r.point];
  r.perseus =
      run_cluster(c, t_prime, point.time_units * tau, point.energy_j, base_pipeline, base_cluster);
  r.intrinsic_only =
      run_cluster(c, t_prime, c.t_min_s, c.t_min_energy_j, base_pipeline, base_cluster);

  // The measured frame: the same slowdown of the measured all-max-clock iteration.
  const double t_prime_measured = slowdown * c.max_clock->time_s;
  r.measured_straggler_time_s = t_prime_measured;
  const double base_measured = frontier::max_clock_energy_at(*c.problem, t_prime_measured);
  const double base_measured_cluster = c.tensor_parallel * c.pipelines * base_measured;
  r.measured_baseline = run_cluster(c, t_prime_measured, c.max_clock->time_s, c.max_clock->energy_j,
                                    base_measured, base_measured_cluster);
  const frontier::RealizedPlan realized =
      frontier::realize(*c.problem, c.frontier->durations_at(r.point));
  r.perseus_realized = run_cluster(c, t_prime_measured, realized.time_s, realized.energy_j,
                                   base_measured, base_measured_cluster);
  r.envpipe = run_cluster(c, t_prime_measured, c.envpipe->time_s, c.envpipe->energy_j,
                          base_measured, base_measured_cluster);
  r.intrinsic_fraction = r.intrinsic_only.savings_fraction;
  r.extrinsic_fraction = r.perseus.savings_fraction - r.intrinsic_fraction;
  return r;
}

core::Result<std::vector<double>> normalized_slowdowns(std::vector<double> slowdowns) {
  if (slowdowns.empty()) return core::Error{"slowdowns: expected at least one"};
  for (double s : slowdowns) {
    if (!std::isfinite(s) || s < 1.0 || s > 100.0) {
      return core::Error{
          fmt::format("slowdowns: expected straggler slowdowns T'/T_min from 1 to 100, got {}", s)};
    }
  }
  std::sort(slowdowns.begin(), slowdowns.end());
  slowdowns.erase(std::unique(slowdowns.begin(), slowdowns.end()), slowdowns.end());
  return slowdowns;
}

}  // namespace

core::Result<ClusterShape> cluster_shape(const ClusterConfig& c) {
  if (c.gpus <= 0 || c.tensor_parallel <= 0 || c.pipeline_stages <= 0 ||
      c.global_batch_samples <= 0 || c.microbatch_samples <= 0) {
    return core::Error{fmt::format("{}: every size must be a positive integer", describe(c))};
  }
  const long long per_pipeline =
      static_cast<long long>(c.tensor_parallel) * static_cast<long long>(c.pipeline_stages);
  if (c.gpus % per_pipeline != 0) {
    return core::Error{
        fmt::format("{} GPUs: not a whole number of pipelines of tp x pp = {} x {} = {} GPUs",
                    c.gpus, c.tensor_parallel, c.pipeline_stages, per_pipeline)};
  }
  ClusterShape shape;
  shape.pipelines = c.gpus / per_pipeline;
  // global = N × microbatch size × M, checked without forming N × microbatch size (overflow).
  const long long microbatches = c.global_batch_samples / c.microbatch_samples;
  if (microbatches < shape.pipelines) {
    return core::Error{fmt::format(
        "{} GPUs = {} pipelines: global batch {} gives fewer than one microbatch of {} sample(s) "
        "to each pipeline",
        c.gpus, shape.pipelines, c.global_batch_samples, c.microbatch_samples)};
  }
  if (c.global_batch_samples % c.microbatch_samples != 0 || microbatches % shape.pipelines != 0) {
    return core::Error{fmt::format(
        "{} GPUs = {} pipelines: global batch {} is not a whole number of microbatches of {} "
        "sample(s) per pipeline ({} / ({} x {}) = {:.4g})",
        c.gpus, shape.pipelines, c.global_batch_samples, c.microbatch_samples,
        c.global_batch_samples, shape.pipelines, c.microbatch_samples,
        static_cast<double>(c.global_batch_samples) /
            (static_cast<double>(shape.pipelines) * static_cast<double>(c.microbatch_samples)))};
  }
  if (microbatches / shape.pipelines > kMaxClusterMicrobatches) {
    return core::Error{fmt::format(
        "{} GPUs = {} pipelines: {} microbatches per pipeline is more than the {} supported",
        c.gpus, shape.pipelines, microbatches / shape.pipelines, kMaxClusterMicrobatches)};
  }
  shape.microbatches_per_pipeline = static_cast<int>(microbatches / shape.pipelines);
  return shape;
}

std::vector<double> default_cluster_slowdowns() { return {1.0, 1.05, 1.1, 1.2, 1.3, 1.4, 1.5}; }

core::Result<ClusterEmulation> emulate_cluster(const profile::Profile& profile,
                                               const std::vector<ClusterConfig>& configs,
                                               const ClusterSettings& settings) {
  if (configs.empty()) return core::Error{"cluster: expected at least one configuration"};
  auto slowdowns = normalized_slowdowns(settings.slowdowns);
  if (!slowdowns) return slowdowns.error();

  // Validate everything and build each distinct pipeline's problem before any (slow) solve.
  std::vector<ClusterShape> shapes;
  std::map<std::pair<int, int>, SolvedPipeline> pipelines;  // (stages, microbatches)
  for (const ClusterConfig& config : configs) {
    auto shape = cluster_shape(config);
    if (!shape) return shape.error();
    if (shape->pipelines < 2) {
      // With one pipeline the straggler is the whole job and nothing can be saved.
      return core::Error{fmt::format(
          "{} GPUs = 1 pipeline: the emulation needs at least 2 data-parallel pipelines (one "
          "straggler and the rest); for a single pipeline use `powertrain frontier`",
          config.gpus)};
    }
    shapes.push_back(*shape);
    const auto key = std::make_pair(config.pipeline_stages, shape->microbatches_per_pipeline);
    if (pipelines.count(key) != 0) continue;
    pipeline::PipelineSpec spec = settings.pipeline;
    spec.num_gpus = config.pipeline_stages;
    spec.num_microbatches = shape->microbatches_per_pipeline;
    auto problem = frontier::build_planning_problem(profile, spec, settings.planning);
    if (!problem) {
      return core::Error{fmt::format("{}: {}", describe(config, *shape), problem.error().message)};
    }
    pipelines[key].problem = std::move(*problem);
  }

  ClusterEmulation emulation;
  emulation.profile_source = profile.source;
  emulation.planning = settings.planning;
  emulation.pipeline = settings.pipeline;
  emulation.slowdowns = *slowdowns;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const ClusterConfig& config = configs[i];
    const ClusterShape& shape = shapes[i];
    if (settings.on_config_start) settings.on_config_start(i, configs.size(), config, shape);
    SolvedPipeline& solved =
        pipelines.at(std::make_pair(config.pipeline_stages, shape.microbatches_per_pipeline));
    double solve_seconds = 0.0;
    if (!solved.solved) {
      const auto start = std::chrono::steady_clock::now();
      frontier::SolverOptions options;
      options.engine = settings.engine;
      solved.frontier = frontier::solve_frontier(solved.problem, options);
      // Ceil promises deployed plans never slower than all max clock, as in `powertrain frontier`.
      if (solved.problem.settings.quantization == frontier::Quantization::kCeil) {
        solved.fastest_point_pinned = frontier::pin_fastest_point(solved.problem, solved.frontier);
      }
      solved.envpipe = compute_baselines(solved.problem, profile).envpipe;
      solved.max_clock = frontier::all_max_clock_baseline(solved.problem);
      solved.solve_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      solved.solved = true;
      solve_seconds = solved.solve_seconds;
    }
    const frontier::PlanningProblem& problem = solved.problem;
    const frontier::Frontier& frontier = solved.frontier;
    const double tau = problem.settings.unit_time_s;

    ConfigContext context;
    context.problem = &problem;
    context.frontier = &frontier;
    context.envpipe = &solved.envpipe;
    context.max_clock = &solved.max_clock;
    context.pipelines = static_cast<double>(shape.pipelines);
    context.tensor_parallel = config.tensor_parallel;
    context.blocking_w = problem.settings.p_blocking_w * problem.num_gpus();
    context.t_min_s = frontier.points.back().time_units * tau;
    context.t_min_energy_j = frontier.points.back().energy_j;

    ClusterConfigResult result;
    result.config = config;
    result.shape = shape;
    result.t_min_s = context.t_min_s;
    result.t_star_s = frontier.points.front().time_units * tau;
    result.frontier_points = frontier.points.size();
    result.solve_seconds = solved.solve_seconds;
    result.fastest_point_pinned = solved.fastest_point_pinned;
    result.pipeline_max_clock_energy_j = frontier::max_clock_energy_at(problem, context.t_min_s);
    result.pipeline_t_min_energy_j = context.t_min_energy_j;
    result.pipeline_intrinsic_fraction =
        1.0 - result.pipeline_t_min_energy_j / result.pipeline_max_clock_energy_j;
    result.max_clock_time_s = solved.max_clock.time_s;
    result.max_clock_energy_j = solved.max_clock.energy_j;
    result.envpipe_time_s = solved.envpipe.time_s;
    result.envpipe_energy_j = solved.envpipe.energy_j;
    result.envpipe_fraction = 1.0 - solved.envpipe.energy_j / solved.max_clock.energy_j;
    result.envpipe_label = solved.envpipe.label;
    for (double slowdown : *slowdowns) {
      result.slowdowns.push_back(evaluate_slowdown(context, slowdown));
    }
    result.at_t_star = evaluate_slowdown(context, result.t_star_s / result.t_min_s);
    emulation.configs.push_back(std::move(result));
    if (settings.on_config_done) settings.on_config_done(i, configs.size(), solve_seconds);
  }
  return emulation;
}

}  // namespace powertrain::study
