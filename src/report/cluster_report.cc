// Writers for cluster emulation results. Every number says whether it is planned or measured.
#include "report/cluster_report.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <nlohmann/json.hpp>
#include <utility>

#include "report/svg_plot.h"

namespace powertrain::report {
namespace {

using json = nlohmann::ordered_json;

double percent(double fraction) { return 100.0 * fraction; }

}  // namespace

std::string cluster_csv(const study::ClusterEmulation& emulation) {
  // (column, value) pairs keep the header and the rows in step.
  using Row = std::vector<std::pair<const char*, std::string>>;
  auto row_of = [](const study::ClusterConfigResult& c,
                   const study::ClusterSlowdownResult& s) -> Row {
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
  const study::ClusterConfigResult empty_config;
  const Row header = row_of(empty_config, study::ClusterSlowdownResult{});
  for (std::size_t i = 0; i < header.size(); ++i) {
    out.append(i == 0 ? "" : ",").append(header[i].first);
  }
  out.push_back('\n');
  for (const study::ClusterConfigResult& c : emulation.configs) {
    for (const study::ClusterSlowdownResult& s : c.slowdowns) {
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

json energy_json(const study::ClusterEnergy& e) {
  return {{"iteration_time_s", e.iteration_time_s},
          {"pipeline_energy_j", e.pipeline_energy_j},
          {"cluster_energy_j", e.cluster_energy_j},
          {"pipeline_savings_percent", percent(e.pipeline_savings_fraction)},
          {"cluster_savings_percent", percent(e.savings_fraction)}};
}

json slowdown_json(const study::ClusterSlowdownResult& s) {
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

std::string cluster_summary_json(const study::ClusterEmulation& emulation) {
  json configs = json::array();
  for (const study::ClusterConfigResult& c : emulation.configs) {
    json slowdowns = json::array();
    for (const study::ClusterSlowdownResult& s : c.slowdowns) slowdowns.push_back(slowdown_json(s));
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
      {"cost_model", std::string(frontier::cost_model_name(emulation.planning.cost_model))},
      {"quantization", std::string(frontier::quantization_name(emulation.planning.quantization))},
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

std::string cluster_svg(const study::ClusterEmulation& emulation) {
  static const char* const kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                        "#9467bd", "#8c564b", "#e377c2", "#17becf"};
  PlotSpec spec;
  spec.title = "Cluster energy savings vs straggler slowdown (Perseus Figure 8); ★ at T' = T*";
  spec.x_label = "straggler slowdown T'/T_min";
  spec.y_label = "cluster energy savings vs all max clock (%)";
  for (std::size_t i = 0; i < emulation.configs.size(); ++i) {
    const study::ClusterConfigResult& c = emulation.configs[i];
    const std::string color = kColors[i % std::size(kColors)];
    const std::string name =
        fmt::format("Perseus, {} GPUs = {} pipelines x {} microbatches (planned)", c.config.gpus,
                    c.shape.pipelines, c.shape.microbatches_per_pipeline);
    PlotSeries perseus{name, {}, color};
    perseus.style = PlotSeries::Style::kLineAndMarkers;
    // The ★ point joins the line so that the peak at T′ = T* is drawn where it is.
    std::vector<study::ClusterSlowdownResult> points = c.slowdowns;
    points.push_back(c.at_t_star);
    std::sort(points.begin(), points.end(),
              [](const auto& a, const auto& b) { return a.slowdown < b.slowdown; });
    for (const study::ClusterSlowdownResult& s : points) {
      perseus.points.emplace_back(s.slowdown, percent(s.perseus.savings_fraction));
    }
    spec.series.push_back(std::move(perseus));
    spec.annotations.push_back(
        {c.at_t_star.slowdown, percent(c.at_t_star.perseus.savings_fraction), "★", color});
  }
  return render_svg_plot(spec);
}

void print_cluster_summary(std::FILE* out, const study::ClusterEmulation& emulation,
                           const std::string& out_dir, bool stages_from_profile) {
  const auto& first = emulation.configs.front().config;
  // One energy unit for the whole table, large enough to keep a few significant digits.
  double largest_j = 0.0;
  for (const auto& c : emulation.configs) {
    for (const auto& s : c.slowdowns) largest_j = std::max(largest_j, s.baseline.cluster_energy_j);
  }
  const auto [unit, joules_per_unit] = largest_j >= 1e6   ? std::pair{"MJ", 1e6}
                                       : largest_j >= 1e3 ? std::pair{"kJ", 1e3}
                                                          : std::pair{"J", 1.0};
  fmt::print(
      out,
      "powertrain cluster: {} pipeline stages, {}, tau = {} s, P_blocking = {} W, global batch {} "
      "samples, microbatch {} sample(s)\n",
      first.pipeline_stages, pipeline::schedule_name(emulation.pipeline.schedule),
      emulation.planning.unit_time_s, emulation.planning.p_blocking_w, first.global_batch_samples,
      first.microbatch_samples);
  fmt::print(out, "  profile   {}\n", emulation.profile_source);
  const bool pinned = std::any_of(emulation.configs.begin(), emulation.configs.end(),
                                  [](const auto& c) { return c.fastest_point_pinned; });
  fmt::print(out, "  quantization  {}{}\n",
             frontier::quantization_name(emulation.planning.quantization),
             emulation.planning.quantization == frontier::Quantization::kCeil
                 ? (pinned ? " (plans never slower than all max clock; T_min's plan pinned to it)"
                           : " (plans never slower than all max clock)")
                 : " (the reference's rule: realized plans may be slower than planned)");
  fmt::print(
      out,
      "  model     per configuration, one straggler pipeline takes T' = slowdown x T_min at all "
      "max clock;\n"
      "            the other N-1 run Perseus's plan for T_opt = min(T*, T') and block at "
      "P_blocking until T'.\n"
      "            Energies: {} per iteration of the whole cluster (every GPU, tensor-parallel "
      "ones included).\n"
      "            base  = every pipeline at max clock (measured energies, planned T_min), "
      "blocking until T'.\n"
      "            saved = Perseus planned (fitted cost model) vs base: intrinsic (its T_min plan "
      "alone)\n"
      "                    + extrinsic (the rest, from slowing to T_opt); pipeline = one "
      "non-straggler.\n"
      "            realized, EnvPipe = measured clocks vs max clock measured, T' = slowdown x "
      "measured max-clock time.\n"
      "            All savings are % of the baseline energy.\n",
      unit);
  for (const study::ClusterConfigResult& c : emulation.configs) {
    fmt::print(
        out,
        "\n{} GPUs = {} pipelines x (TP{} x PP{}), {} microbatches per pipeline: T_min = {:.3f} s, "
        "T* = {:.3f} s (planned), T*/T_min = {:.3f} (the star)\n",
        c.config.gpus, c.shape.pipelines, c.config.tensor_parallel, c.config.pipeline_stages,
        c.shape.microbatches_per_pipeline, c.t_min_s, c.t_star_s, c.t_star_s / c.t_min_s);
    fmt::print(
        out,
        "  no straggler: Perseus T_min plan saves {:.2f} % per pipeline (planned, Perseus Table "
        "6); EnvPipe {:.2f} % at {:.3f} s vs max clock {:.3f} s (measured)\n",
        100.0 * c.pipeline_intrinsic_fraction, 100.0 * c.envpipe_fraction, c.envpipe_time_s,
        c.max_clock_time_s);
    fmt::print(out, "  {:>8} {:>8} {:>8} {:>9} {:>10} | {:>7} {:>9} {:>9} {:>8} | {:>8} {:>8}\n",
               "T'/T_min", "T' s", "T_opt s", fmt::format("base {}", unit),
               fmt::format("Perseus {}", unit), "saved %", "intrins %", "extrins %", "pipeln %",
               "realiz %", "EnvPipe %");
    for (const study::ClusterSlowdownResult& s : c.slowdowns) {
      fmt::print(
          out,
          "  {:>8.3f} {:>8.3f} {:>8.3f} {:>9.3f} {:>10.3f} | {:>7.2f} {:>9.2f} {:>9.2f} {:>8.2f} | "
          "{:>8.2f} {:>8.2f}\n",
          s.slowdown, s.straggler_time_s, s.target_time_s,
          s.baseline.cluster_energy_j / joules_per_unit,
          s.perseus.cluster_energy_j / joules_per_unit, 100.0 * s.perseus.savings_fraction,
          100.0 * s.intrinsic_fraction, 100.0 * s.extrinsic_fraction,
          100.0 * s.perseus.pipeline_savings_fraction, 100.0 * s.perseus_realized.savings_fraction,
          100.0 * s.envpipe.savings_fraction);
    }
    const auto& star = c.at_t_star;
    fmt::print(
        out,
        "  at T' = T*: saved {:.2f} % (intrinsic {:.2f} + extrinsic {:.2f}); solved in {:.2f} s, "
        "{} frontier points\n",
        100.0 * star.perseus.savings_fraction, 100.0 * star.intrinsic_fraction,
        100.0 * star.extrinsic_fraction, c.solve_seconds, c.frontier_points);
  }
  fmt::print(out, "\n  files     {}/: cluster.csv summary.json cluster.svg\n", out_dir);
  if (stages_from_profile) {
    // Said aloud: a truncated profile would otherwise plan a shorter pipeline without a word.
    fmt::print(out, "  note      --pp not given: planned the {} stage(s) found in the profile\n",
               first.pipeline_stages);
  }
}

void print_cluster_progress(study::ClusterSettings& settings, std::FILE* out) {
  settings.on_config_start = [out](std::size_t index, std::size_t count,
                                   const study::ClusterConfig& config,
                                   const study::ClusterShape& shape) {
    fmt::print(out, "cluster: [{}/{}] {} GPUs = {} pipelines x {} microbatches: planning...",
               index + 1, count, config.gpus, shape.pipelines, shape.microbatches_per_pipeline);
    std::fflush(out);
  };
  settings.on_config_done = [out](std::size_t, std::size_t, double seconds) {
    if (seconds > 0.0) {
      fmt::print(out, " solved in {:.2f} s\n", seconds);
    } else {
      fmt::print(out, " same pipeline as before, reused\n");
    }
  };
}

}  // namespace powertrain::report
