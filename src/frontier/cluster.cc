// Cluster emulation: one frontier per distinct pipeline, evaluated for N replicas and a straggler.
#include "frontier/cluster.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/svg_plot.h"
#include "frontier/baselines.h"
#include "frontier/evaluate.h"

namespace powertrain::frontier {
namespace {

using json = nlohmann::ordered_json;

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
  PlanningProblem problem;
  Frontier frontier;
  BaselinePoint envpipe;
  RealizedPlan max_clock;
  double solve_seconds = 0.0;
  bool solved = false;
  bool fastest_point_pinned = false;
};

// What every slowdown of one configuration needs.
struct ConfigContext {
  const PlanningProblem* problem = nullptr;
  const Frontier* frontier = nullptr;
  const BaselinePoint* envpipe = nullptr;
  const RealizedPlan* max_clock = nullptr;  // measured all-max-clock iteration
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
  const double straggler_j = max_clock_energy_at(*c.problem, e.iteration_time_s);
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
  const StragglerOutcome outcome = straggler_outcome(*c.problem, *c.frontier, slowdown);
  ClusterSlowdownResult r;
  r.slowdown = slowdown;
  r.straggler_time_s = outcome.straggler_time_s;
  r.target_time_s = outcome.target_time_s;
  r.point = outcome.point;
  r.planned_time_s = outcome.planned_time_s;
  const double t_prime = r.straggler_time_s;

  // Baseline: every pipeline (the straggler too) at max clock, done at T_min, blocking until T′.
  const double base_pipeline = max_clock_energy_at(*c.problem, t_prime);
  const double base_cluster = c.tensor_parallel * c.pipelines * base_pipeline;
  r.baseline = run_cluster(c, t_prime, c.t_min_s, max_clock_energy_at(*c.problem, c.t_min_s),
                           base_pipeline, base_cluster);
  const FrontierPoint& point = c.frontier->points[r.point];
  r.perseus =
      run_cluster(c, t_prime, point.time_units * tau, point.energy_j, base_pipeline, base_cluster);
  r.intrinsic_only =
      run_cluster(c, t_prime, c.t_min_s, c.t_min_energy_j, base_pipeline, base_cluster);

  // The measured frame: the same slowdown of the measured all-max-clock iteration.
  const double t_prime_measured = slowdown * c.max_clock->time_s;
  r.measured_straggler_time_s = t_prime_measured;
  const double base_measured = max_clock_energy_at(*c.problem, t_prime_measured);
  const double base_measured_cluster = c.tensor_parallel * c.pipelines * base_measured;
  r.measured_baseline = run_cluster(c, t_prime_measured, c.max_clock->time_s, c.max_clock->energy_j,
                                    base_measured, base_measured_cluster);
  const RealizedPlan realized = realize(*c.problem, c.frontier->durations_at(r.point));
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

double percent(double fraction) { return 100.0 * fraction; }

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

core::Result<ClusterEmulation> emulate_cluster(const Profile& profile,
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
    auto problem = build_planning_problem(profile, spec, settings.planning);
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
      SolverOptions options;
      options.engine = settings.engine;
      solved.frontier = solve_frontier(solved.problem, options);
      // Ceil promises deployed plans never slower than all max clock, as in `powertrain frontier`.
      if (solved.problem.settings.quantization == Quantization::kCeil) {
        solved.fastest_point_pinned = pin_fastest_point(solved.problem, solved.frontier);
      }
      solved.envpipe = compute_baselines(solved.problem, profile).envpipe;
      solved.max_clock = all_max_clock_baseline(solved.problem);
      solved.solve_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      solved.solved = true;
      solve_seconds = solved.solve_seconds;
    }
    const PlanningProblem& problem = solved.problem;
    const Frontier& frontier = solved.frontier;
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
    result.pipeline_max_clock_energy_j = max_clock_energy_at(problem, context.t_min_s);
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

std::string cluster_csv(const ClusterEmulation& emulation) {
  // (column, value) pairs keep the header and the rows in step.
  using Row = std::vector<std::pair<const char*, std::string>>;
  auto row_of = [](const ClusterConfigResult& c, const ClusterSlowdownResult& s) -> Row {
    auto num = [](double v) { return fmt::format("{}", v); };
    auto pct = [](double fraction) { return fmt::format("{:.4f}", percent(fraction)); };
    return {
        {"gpus", fmt::format("{}", c.config.gpus)},
        {"tensor_parallel", fmt::format("{}", c.config.tensor_parallel)},
        {"pipeline_stages", fmt::format("{}", c.config.pipeline_stages)},
        {"pipelines", fmt::format("{}", c.shape.pipelines)},
        {"microbatches_per_pipeline", fmt::format("{}", c.shape.microbatches_per_pipeline)},
        {"slowdown", num(s.slowdown)},
        {"t_min_s", num(c.t_min_s)},
        {"t_star_s", num(c.t_star_s)},
        {"t_star_over_t_min", num(c.t_star_s / c.t_min_s)},
        {"straggler_time_s", num(s.straggler_time_s)},
        {"t_opt_s", num(s.target_time_s)},
        {"frontier_point", fmt::format("{}", s.point)},
        {"perseus_planned_time_s", num(s.planned_time_s)},
        {"baseline_cluster_energy_j", num(s.baseline.cluster_energy_j)},
        {"perseus_planned_cluster_energy_j", num(s.perseus.cluster_energy_j)},
        {"intrinsic_only_planned_cluster_energy_j", num(s.intrinsic_only.cluster_energy_j)},
        {"savings_percent", pct(s.perseus.savings_fraction)},
        {"intrinsic_savings_percent", pct(s.intrinsic_fraction)},
        {"extrinsic_savings_percent", pct(s.extrinsic_fraction)},
        {"pipeline_savings_percent", pct(s.perseus.pipeline_savings_fraction)},
        {"measured_straggler_time_s", num(s.measured_straggler_time_s)},
        {"baseline_measured_cluster_energy_j", num(s.measured_baseline.cluster_energy_j)},
        {"perseus_realized_cluster_energy_j", num(s.perseus_realized.cluster_energy_j)},
        {"perseus_realized_iteration_time_s", num(s.perseus_realized.iteration_time_s)},
        {"realized_savings_percent", pct(s.perseus_realized.savings_fraction)},
        {"envpipe_cluster_energy_j", num(s.envpipe.cluster_energy_j)},
        {"envpipe_iteration_time_s", num(s.envpipe.iteration_time_s)},
        {"envpipe_savings_percent", pct(s.envpipe.savings_fraction)},
        {"pipeline_envpipe_savings_percent", pct(s.envpipe.pipeline_savings_fraction)},
    };
  };
  std::string out;
  const ClusterConfigResult empty_config;
  const Row header = row_of(empty_config, ClusterSlowdownResult{});
  for (std::size_t i = 0; i < header.size(); ++i) {
    out.append(i == 0 ? "" : ",").append(header[i].first);
  }
  out.push_back('\n');
  for (const ClusterConfigResult& c : emulation.configs) {
    for (const ClusterSlowdownResult& s : c.slowdowns) {
      const Row row = row_of(c, s);
      for (std::size_t i = 0; i < row.size(); ++i) {
        out.append(i == 0 ? "" : ",").append(row[i].second);
      }
      out.push_back('\n');
    }
  }
  return out;
}

namespace {

json energy_json(const ClusterEnergy& e) {
  return {{"iteration_time_s", e.iteration_time_s},
          {"pipeline_energy_j", e.pipeline_energy_j},
          {"cluster_energy_j", e.cluster_energy_j},
          {"pipeline_savings_percent", percent(e.pipeline_savings_fraction)},
          {"cluster_savings_percent", percent(e.savings_fraction)}};
}

json slowdown_json(const ClusterSlowdownResult& s) {
  return {{"slowdown", s.slowdown},
          {"straggler_time_s", s.straggler_time_s},
          {"t_opt_s", s.target_time_s},
          {"frontier_point", s.point},
          {"perseus_planned_time_s", s.planned_time_s},
          {"savings_percent", percent(s.perseus.savings_fraction)},
          {"intrinsic_savings_percent", percent(s.intrinsic_fraction)},
          {"extrinsic_savings_percent", percent(s.extrinsic_fraction)},
          {"envpipe_savings_percent", percent(s.envpipe.savings_fraction)},
          {"measured_straggler_time_s", s.measured_straggler_time_s},
          {"baseline", energy_json(s.baseline)},
          {"perseus_planned", energy_json(s.perseus)},
          {"intrinsic_only_planned", energy_json(s.intrinsic_only)},
          {"baseline_measured", energy_json(s.measured_baseline)},
          {"perseus_realized", energy_json(s.perseus_realized)},
          {"envpipe_measured", energy_json(s.envpipe)}};
}

}  // namespace

std::string cluster_summary_json(const ClusterEmulation& emulation) {
  json configs = json::array();
  for (const ClusterConfigResult& c : emulation.configs) {
    json slowdowns = json::array();
    for (const ClusterSlowdownResult& s : c.slowdowns) slowdowns.push_back(slowdown_json(s));
    configs.push_back(
        {{"gpus", c.config.gpus},
         {"tensor_parallel", c.config.tensor_parallel},
         {"pipeline_stages", c.config.pipeline_stages},
         {"global_batch_samples", c.config.global_batch_samples},
         {"microbatch_samples", c.config.microbatch_samples},
         {"pipelines", c.shape.pipelines},
         {"microbatches_per_pipeline", c.shape.microbatches_per_pipeline},
         {"t_min_s", c.t_min_s},
         {"t_star_s", c.t_star_s},
         {"t_star_over_t_min", c.t_star_s / c.t_min_s},
         {"frontier_points", c.frontier_points},
         {"solve_seconds", c.solve_seconds},
         {"fastest_point_pinned", c.fastest_point_pinned},
         {"no_straggler",
          {{"pipeline_max_clock_energy_j", c.pipeline_max_clock_energy_j},
           {"pipeline_t_min_planned_energy_j", c.pipeline_t_min_energy_j},
           {"pipeline_intrinsic_savings_percent", percent(c.pipeline_intrinsic_fraction)},
           {"max_clock_measured_time_s", c.max_clock_time_s},
           {"max_clock_measured_energy_j", c.max_clock_energy_j},
           {"envpipe_label", c.envpipe_label},
           {"envpipe_time_s", c.envpipe_time_s},
           {"envpipe_energy_j", c.envpipe_energy_j},
           {"envpipe_pipeline_savings_percent", percent(c.envpipe_fraction)}}},
         {"at_t_star", slowdown_json(c.at_t_star)},
         {"slowdowns", slowdowns}});
  }
  json doc = {
      {"profile", emulation.profile_source},
      {"schedule", std::string(pipeline::schedule_name(emulation.pipeline.schedule))},
      {"unit_time_s", emulation.planning.unit_time_s},
      {"p_blocking_w", emulation.planning.p_blocking_w},
      {"cost_model", std::string(cost_model_name(emulation.planning.cost_model))},
      {"quantization", std::string(quantization_name(emulation.planning.quantization))},
      {"slowdowns", emulation.slowdowns},
      {"definitions",
       {{"units", "energies in J per training iteration, times in s, savings in % of the baseline"},
        {"straggler",
         "one pipeline per configuration takes T' = slowdown x T_min (planned T_min); it runs "
         "every instruction at its highest clock and is charged like a baseline pipeline in every "
         "method, so it only dilutes cluster savings by about 1/N"},
        {"baseline",
         "every pipeline at its highest measured clocks, done at T_min and blocked at P_blocking "
         "until T' (measured energies, planned T_min; Perseus Table 6 definition); Perseus's "
         "planned energies are compared with it"},
        {"baseline_measured",
         "every pipeline at its highest clocks with measured time t_max and energy, blocked until "
         "the measured T' = slowdown x t_max; realized Perseus and EnvPipe are compared with it so "
         "that time quantization never counts as a slowdown"},
        {"perseus_planned",
         "non-stragglers run the frontier point for T_opt = min(T*, T') and block until T' "
         "(planned energy of the fitted cost model)"},
        {"perseus_realized", "the same point with its discrete measured clocks"},
        {"intrinsic", "savings of the T_min point blocking until T' (no use of the slack)"},
        {"extrinsic", "the rest of Perseus's savings, from slowing down to T_opt"},
        {"envpipe",
         "EnvPipe's single point (measured clocks) blocking until the measured T'; if it is "
         "slower than that the whole job waits for it"},
        {"cluster_energy", "tensor_parallel x (N-1 non-straggler pipelines + the straggler)"},
        {"pipeline_savings", "one non-straggler pipeline against one baseline pipeline"}}},
      {"configs", configs}};
  return doc.dump(2) + "\n";
}

std::string cluster_svg(const ClusterEmulation& emulation) {
  static const char* const kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                        "#9467bd", "#8c564b", "#e377c2", "#17becf"};
  core::PlotSpec spec;
  spec.title = "Cluster energy savings vs straggler slowdown (Perseus Figure 8); ★ at T' = T*";
  spec.x_label = "straggler slowdown T'/T_min";
  spec.y_label = "cluster energy savings vs all max clock (%)";
  for (std::size_t i = 0; i < emulation.configs.size(); ++i) {
    const ClusterConfigResult& c = emulation.configs[i];
    const std::string color = kColors[i % std::size(kColors)];
    const std::string name =
        fmt::format("Perseus, {} GPUs = {} pipelines x {} microbatches (planned)", c.config.gpus,
                    c.shape.pipelines, c.shape.microbatches_per_pipeline);
    core::PlotSeries perseus{name, {}, color};
    perseus.style = core::PlotSeries::Style::kLineAndMarkers;
    // The ★ point joins the line so that the peak at T′ = T* is drawn where it is.
    std::vector<ClusterSlowdownResult> points = c.slowdowns;
    points.push_back(c.at_t_star);
    std::sort(points.begin(), points.end(),
              [](const auto& a, const auto& b) { return a.slowdown < b.slowdown; });
    for (const ClusterSlowdownResult& s : points) {
      perseus.points.emplace_back(s.slowdown, percent(s.perseus.savings_fraction));
    }
    spec.series.push_back(std::move(perseus));
    spec.annotations.push_back(
        {c.at_t_star.slowdown, percent(c.at_t_star.perseus.savings_fraction), "★", color});
  }
  return core::render_svg_plot(spec);
}

}  // namespace powertrain::frontier
