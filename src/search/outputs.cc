#include "search/outputs.h"

#include <fmt/core.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>

#include "report/svg_plot.h"

namespace powertrain::search {
namespace {

std::vector<int> ranked(const SearchSpec& spec, const SearchResult& result) {
  std::vector<int> order;
  for (std::size_t i = 0; i < result.trials.size(); ++i)
    if (result.trials[i].usable()) order.push_back(static_cast<int>(i));
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return objective_value(spec.objective, result.trials[static_cast<std::size_t>(a)]) <
           objective_value(spec.objective, result.trials[static_cast<std::size_t>(b)]);
  });
  return order;
}

}  // namespace

std::string trials_csv(const SearchSpec& spec, const SearchResult& result) {
  std::string out =
      "trial,tp,pp,dp,microbatch_size,microbatches,virtual_stages,recompute,sequence_parallel,"
      "distributed_optimizer,status,peak_memory_gib,t_min_s,energy_at_t_min_j,t_star_s,"
      "energy_at_t_star_j,baseline_time_s,baseline_energy_j,frontier_points,eval_s,reason\n";
  for (std::size_t i = 0; i < result.trials.size(); ++i) {
    const TrialResult& t = result.trials[i];
    const ConfigValues c = values_of(spec, t.config);
    std::string reason = t.reason;
    std::replace(reason.begin(), reason.end(), '"', '\'');
    out += fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{:.3f},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{},{:."
        "4f},"
        "\"{}\"\n",
        i, c.tp, c.pp, t.dp, c.microbatch_size, t.num_microbatches, c.virtual_stages,
        c.recompute ? 1 : 0, c.sequence_parallel ? 1 : 0, c.distributed_optimizer ? 1 : 0,
        status_name(t.status), t.peak_memory_gib, t.t_min_s, t.energy_at_t_min_j, t.t_star_s,
        t.energy_at_t_star_j, t.baseline_time_s, t.baseline_energy_j, t.frontier.size(), t.seconds,
        reason);
  }
  return out;
}

std::string frontier_csv(const SearchSpec& spec, const SearchResult& result) {
  std::string out = "time_s,energy_j,trial,config,plan_point\n";
  for (const ParetoPoint& p : result.frontier) {
    out += fmt::format("{:.6g},{:.6g},{},{},{}\n", p.time_s, p.energy_j, p.trial,
                       config_label(spec, result.trials[static_cast<std::size_t>(p.trial)].config),
                       p.point);
  }
  return out;
}

std::string frontier_svg(const SearchSpec& spec, const SearchResult& result) {
  report::PlotSpec plot;
  plot.title = fmt::format("{} on {} x {}: time-energy frontier across configurations (modelled)",
                           spec.model, spec.num_gpus, spec.gpu);
  plot.x_label = "iteration time (s, realized, modelled)";
  plot.y_label = "energy per iteration, all GPUs (J, realized, modelled)";
  report::PlotSeries all;
  all.label = "every configuration's frontier";
  all.color = "#bbbbbb";
  all.style = report::PlotSeries::Style::kMarkers;
  all.marker_radius_px = 1.5;
  for (const TrialResult& t : result.trials)
    if (t.usable())
      for (const TrialPoint& p : t.frontier) all.points.emplace_back(p.time_s, p.energy_j);
  report::PlotSeries front;
  front.label = "cross-configuration frontier";
  front.color = "#d62728";
  front.style = report::PlotSeries::Style::kLineAndMarkers;
  for (const ParetoPoint& p : result.frontier) front.points.emplace_back(p.time_s, p.energy_j);
  plot.series = {all, front};
  if (!result.frontier.empty()) {
    // Label where the frontier changes configuration.
    int last = -1;
    for (const ParetoPoint& p : result.frontier) {
      if (p.trial == last) continue;
      last = p.trial;
      plot.annotations.push_back(
          {p.time_s, p.energy_j,
           config_label(spec, result.trials[static_cast<std::size_t>(p.trial)].config)});
      if (plot.annotations.size() >= 8) break;
    }
  }
  return report::render_svg_plot(plot);
}

std::string summary_json(const SearchSpec& spec, const SearchResult& result, int threads) {
  nlohmann::json j;
  j["model"] = spec.model;
  j["gpu"] = spec.gpu;
  j["num_gpus"] = spec.num_gpus;
  j["global_batch"] = spec.global_batch;
  j["objective"] = std::string(objective_name(spec.objective));
  j["algorithm"] = std::string(algorithm_name(spec.algorithm));
  j["seed"] = spec.seed;
  j["pruning"] = spec.pruning;
  j["threads"] = threads;
  j["grid_size"] = result.grid_size;
  j["decided"] = result.decided;
  j["planned"] = result.planned;
  j["oom"] = result.oom;
  j["pruned_oom"] = result.pruned_oom;
  j["pruned_dominated"] = result.pruned_dominated;
  j["pruned_bound"] = result.pruned_bound;
  j["invalid"] = result.invalid;
  j["early_stopped"] = result.early_stopped;
  j["search_seconds_measured"] = result.seconds;
  j["basis"] = spec.emulation.enabled()
                   ? "emulated (T_min and baseline time: the step predicted by powertrain emulate; "
                     "frontier points and energies: plan --emulated, modelled from the kernel mix)"
                   : "modelled (device model; planned Perseus frontiers)";
  if (result.best >= 0) {
    const TrialResult& b = result.trials[static_cast<std::size_t>(result.best)];
    j["best"] = {{"trial", result.best},
                 {"config", config_label(spec, b.config)},
                 {"t_min_s", b.t_min_s},
                 {"energy_at_t_min_j", b.energy_at_t_min_j},
                 {"t_star_s", b.t_star_s},
                 {"energy_at_t_star_j", b.energy_at_t_star_j},
                 {"baseline_time_s", b.baseline_time_s},
                 {"baseline_energy_j", b.baseline_energy_j}};
  }
  if (const EnergyAwareSaving saving = energy_aware_saving(result, 0.05);
      saving.reference_trial >= 0) {
    const TrialResult& c = result.trials[static_cast<std::size_t>(saving.chosen.trial)];
    j["energy_aware_at_5pct_more_time"] = {
        {"reference", "time-optimal configuration at max clocks (modelled)"},
        {"reference_config",
         config_label(spec,
                      result.trials[static_cast<std::size_t>(saving.reference_trial)].config)},
        {"reference_time_s", saving.reference_time_s},
        {"reference_energy_j", saving.reference_energy_j},
        {"time_budget_s", saving.time_budget_s},
        {"chosen_config", config_label(spec, c.config)},
        {"chosen_plan_point", saving.chosen.point},
        {"chosen_time_s", saving.chosen.time_s},
        {"chosen_energy_j", saving.chosen.energy_j},
        {"energy_saving_fraction", saving.saving_fraction}};
  }
  nlohmann::json front = nlohmann::json::array();
  for (const ParetoPoint& p : result.frontier)
    front.push_back(
        {{"time_s", p.time_s},
         {"energy_j", p.energy_j},
         {"trial", p.trial},
         {"config", config_label(spec, result.trials[static_cast<std::size_t>(p.trial)].config)},
         {"plan_point", p.point}});
  j["frontier"] = front;
  return j.dump(2) + "\n";
}

std::string ranked_table(const SearchSpec& spec, const SearchResult& result, int rows) {
  std::string out = fmt::format("  {:>4}  {:<28} {:>5} {:>4}  {:>10} {:>12} {:>10} {:>12} {:>9}\n",
                                "rank", "configuration", "dp", "mbs", "T_min (s)", "E@T_min (J)",
                                "T* (s)", "E@T* (J)", "mem (GiB)");
  const std::vector<int> order = ranked(spec, result);
  for (int r = 0; r < std::min<int>(rows, static_cast<int>(order.size())); ++r) {
    const TrialResult& t =
        result.trials[static_cast<std::size_t>(order[static_cast<std::size_t>(r)])];
    out += fmt::format(
        "  {:>4}  {:<28} {:>5} {:>4}  {:>10.4f} {:>12.1f} {:>10.4f} {:>12.1f} {:>9.1f}\n", r + 1,
        config_label(spec, t.config), t.dp, t.num_microbatches, t.t_min_s, t.energy_at_t_min_j,
        t.t_star_s, t.energy_at_t_star_j, t.peak_memory_gib);
  }
  return out;
}

}  // namespace powertrain::search
