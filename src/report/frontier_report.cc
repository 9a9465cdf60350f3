// Writers for frontier results. Every number says whether it is planned, realized or measured.
#include "report/frontier_report.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/savings_text.h"
#include "report/svg_plot.h"
#include "study/frontier_run.h"

namespace powertrain::report {

using nlohmann::json;

namespace {

// Every baseline point in file order, with its short name.
std::vector<std::pair<std::string, const study::BaselinePoint*>> baseline_rows(
    const study::Baselines& b) {
  std::vector<std::pair<std::string, const study::BaselinePoint*>> rows;
  rows.emplace_back("all_max_clock", &b.all_max_clock);
  for (const study::BaselinePoint& p : b.zeus_global) rows.emplace_back("zeus_global", &p);
  for (const study::BaselinePoint& p : b.zeus_per_stage) rows.emplace_back("zeus_per_stage", &p);
  rows.emplace_back("envpipe", &b.envpipe);
  return rows;
}

std::size_t fastest_realized(const std::vector<frontier::RealizedPlan>& realized) {
  std::size_t fastest = 0;
  for (std::size_t i = 1; i < realized.size(); ++i) {
    if (realized[i].time_s < realized[fastest].time_s) fastest = i;
  }
  return fastest;
}

json baseline_json(const study::FrontierRun& run, const study::BaselinePoint& point) {
  json doc = {{"label", point.label},
              {"time_s", point.time_s},
              {"energy_j", point.energy_j},
              {"savings_vs_all_max_clock_percent",
               100.0 * (1.0 - point.energy_j / run.baselines->all_max_clock.energy_j)}};
  const auto perseus = study::perseus_point_within(run.realized, point.time_s);
  if (perseus) {
    doc["perseus_point"] = *perseus;
    doc["perseus_time_s"] = run.realized[*perseus].time_s;
    doc["perseus_energy_j"] = run.realized[*perseus].energy_j;
    doc["perseus_savings_vs_this_percent"] =
        100.0 * (1.0 - run.realized[*perseus].energy_j / point.energy_j);
  } else {
    // Every realized point is slower (quantization can leave T_min just above all max clock):
    // report the fastest one so the comparison is still there, with its slowdown.
    doc["perseus_point"] = nullptr;
    const std::size_t fastest = fastest_realized(run.realized);
    doc["perseus_fastest_point"] = {
        {"point", fastest},
        {"time_s", run.realized[fastest].time_s},
        {"energy_j", run.realized[fastest].energy_j},
        {"slowdown_vs_this_percent", 100.0 * (run.realized[fastest].time_s / point.time_s - 1.0)},
        {"savings_vs_this_percent",
         100.0 * (1.0 - run.realized[fastest].energy_j / point.energy_j)}};
  }
  return doc;
}

}  // namespace

std::string baselines_csv(const study::FrontierRun& run) {
  std::string out = "baseline,label,time,energy\n";
  if (!run.baselines) return out;
  for (const auto& [name, point] : baseline_rows(*run.baselines)) {
    fmt::format_to(std::back_inserter(out), "{},{},{},{}\n", name, point->label, point->time_s,
                   point->energy_j);
  }
  return out;
}

std::string frontier_csv(const study::FrontierRun& run) {
  const double tau = run.problem->settings.unit_time_s;
  std::string out = "time,energy,realized_time,realized_energy\n";
  for (std::size_t i = 0; i < run.frontier->points.size(); ++i) {
    const frontier::FrontierPoint& p = run.frontier->points[i];
    fmt::format_to(std::back_inserter(out), "{},{},{},{}\n", p.time_units * tau, p.energy_j,
                   run.realized[i].time_s, run.realized[i].energy_j);
  }
  return out;
}

std::string plans_csv(const study::FrontierRun& run) {
  const frontier::PlanningProblem& problem = *run.problem;
  const frontier::Frontier& frontier = *run.frontier;
  std::string out = "point,gpu,slot,stage,instruction,microbatch,frequency_mhz\n";
  std::vector<int> units = frontier.initial_units;
  std::vector<int> previous(units.size(), -1);
  for (std::size_t point = 0; point < frontier.points.size(); ++point) {
    for (std::size_t i = frontier.change_offsets[point]; i < frontier.change_offsets[point + 1];
         ++i) {
      units[frontier.changes[i].operation] = frontier.changes[i].units;
    }
    // Only nodes that changed can change clock, but point 0 lists everything.
    auto emit = [&](int v) {
      const pipeline::Operation& op = problem.dag.operations[v];
      if (op.gpu < 0) return;
      const int mhz = pipeline::is_profiled(op.kind)
                          ? problem.model_of(v).option_for(units[v]).frequency_mhz
                          : 0;
      if (mhz == previous[v]) return;
      previous[v] = mhz;
      fmt::format_to(std::back_inserter(out), "{},{},{},{},{},{},{}\n", point, op.gpu, op.slot,
                     op.stage, pipeline::instruction_name(op.kind), op.microbatch, mhz);
    };
    if (point == 0) {
      for (const auto& order : problem.dag.gpu_order) {
        for (int v : order) emit(v);
      }
    } else {
      std::vector<int> touched;
      for (std::size_t i = frontier.change_offsets[point]; i < frontier.change_offsets[point + 1];
           ++i) {
        touched.push_back(frontier.changes[i].operation);
      }
      std::sort(touched.begin(), touched.end(), [&](int a, int b) {
        const auto& x = problem.dag.operations[a];
        const auto& y = problem.dag.operations[b];
        return std::tie(x.gpu, x.slot) < std::tie(y.gpu, y.slot);
      });
      for (int v : touched) emit(v);
    }
  }
  return out;
}

std::vector<std::vector<std::pair<std::string, int>>> gpu_plans_at(
    const frontier::PlanningProblem& problem, const std::vector<int>& durations) {
  const std::vector<int> mhz = frontier::frequencies_for(problem, durations);
  std::vector<std::vector<std::pair<std::string, int>>> plan(problem.dag.gpu_order.size());
  for (std::size_t gpu = 0; gpu < plan.size(); ++gpu) {
    for (int v : problem.dag.gpu_order[gpu]) {
      plan[gpu].emplace_back(
          std::string(pipeline::instruction_name(problem.dag.operations[v].kind)), mhz[v]);
    }
  }
  return plan;
}

std::string zeus_plan_py(const std::vector<std::vector<std::pair<std::string, int>>>& plan,
                         double planned_time_s, double planned_energy_j, double realized_time_s,
                         double realized_energy_j) {
  std::string out = "[\n";
  for (const auto& gpu : plan) {
    out += "  [";
    for (std::size_t i = 0; i < gpu.size(); ++i) {
      fmt::format_to(std::back_inserter(out), "{}('{}', {})", i == 0 ? "" : ", ", gpu[i].first,
                     gpu[i].second);
    }
    out += "],\n";
  }
  out += "]\n";
  fmt::format_to(std::back_inserter(out), "# planned iteration time: {:.6f} s\n", planned_time_s);
  fmt::format_to(std::back_inserter(out), "# planned energy per pipeline: {:.3f} J\n",
                 planned_energy_j);
  fmt::format_to(std::back_inserter(out), "# realized iteration time (measured clocks): {:.6f} s\n",
                 realized_time_s);
  fmt::format_to(std::back_inserter(out),
                 "# realized energy per pipeline (measured clocks): {:.3f} J\n", realized_energy_j);
  return out;
}

std::string plan_json(const std::vector<std::vector<std::pair<std::string, int>>>& plan,
                      std::size_t point, double planned_time_s, double planned_energy_j,
                      double realized_time_s, double realized_energy_j) {
  json doc;
  doc["point"] = point;
  doc["planned_time_s"] = planned_time_s;
  doc["planned_energy_j"] = planned_energy_j;
  doc["realized_time_s"] = realized_time_s;
  doc["realized_energy_j"] = realized_energy_j;
  json gpus = json::array();
  for (const auto& gpu : plan) {
    json list = json::array();
    for (const auto& [name, mhz] : gpu)
      list.push_back({{"instruction", name}, {"frequency_mhz", mhz}});
    gpus.push_back(list);
  }
  doc["gpus"] = gpus;
  return doc.dump(1) + "\n";
}

std::string baselines_summary(const study::FrontierRun& run) {
  if (!run.baselines) return "";
  const study::Baselines& b = *run.baselines;
  std::string out =
      "  baselines     realized with measured clocks; Perseus = its least-energy realized point "
      "no slower\n";
  // One line per baseline; a curve is summarized by its range and Perseus's smallest saving.
  auto line = [&](const char* name, const std::vector<study::BaselinePoint>& points) {
    if (points.empty()) {
      fmt::format_to(std::back_inserter(out), "                {:<13} no clock measured for all\n",
                     name);
      return;
    }
    double t_lo = points[0].time_s, t_hi = t_lo, e_lo = points[0].energy_j, e_hi = e_lo;
    std::optional<double> least_saving;
    const study::BaselinePoint* least_at = nullptr;
    std::size_t unmatched = 0;
    for (const study::BaselinePoint& p : points) {
      t_lo = std::min(t_lo, p.time_s);
      t_hi = std::max(t_hi, p.time_s);
      e_lo = std::min(e_lo, p.energy_j);
      e_hi = std::max(e_hi, p.energy_j);
      const auto perseus = study::perseus_point_within(run.realized, p.time_s);
      if (!perseus) {
        ++unmatched;
        continue;
      }
      const double saving = 1.0 - run.realized[*perseus].energy_j / p.energy_j;
      if (!least_saving || saving < *least_saving) {
        least_saving = saving;
        least_at = &p;
      }
    }
    if (points.size() == 1) {
      fmt::format_to(std::back_inserter(out), "                {:<13} {:.4f} s, {:.1f} J", name,
                     t_lo, e_lo);
    } else {
      fmt::format_to(std::back_inserter(out),
                     "                {:<13} {} points, {:.4f}-{:.4f} s, {:.1f}-{:.1f} J", name,
                     points.size(), t_lo, t_hi, e_lo, e_hi);
    }
    if (least_saving) {
      std::string phrase = core::savings_phrase(*least_saving);
      if (points.size() > 1) {  // the least saving over the baseline's points
        if (phrase.rfind("saves ", 0) == 0) phrase.insert(6, "at least ");
        if (phrase.rfind("uses ", 0) == 0) phrase.insert(5, "up to ");
      }
      fmt::format_to(std::back_inserter(out), ": Perseus at the same time {}", phrase);
      if (points.size() > 1) fmt::format_to(std::back_inserter(out), " (vs {})", least_at->label);
    }
    if (unmatched > 0 && points.size() == 1) {
      const frontier::RealizedPlan& fastest = run.realized[fastest_realized(run.realized)];
      fmt::format_to(std::back_inserter(out),
                     ": Perseus's fastest realized point is {:.2f} % slower ({:.4f} s) and {}",
                     100.0 * (fastest.time_s / t_lo - 1.0), fastest.time_s,
                     core::savings_phrase(1.0 - fastest.energy_j / e_lo));
    } else if (unmatched > 0) {
      fmt::format_to(std::back_inserter(out), "{}{} of them are faster than every realized point",
                     least_saving ? "; " : ": ", unmatched);
    }
    out += "\n";
  };
  line("EnvPipe", {b.envpipe});
  line("ZeusGlobal", b.zeus_global);
  line("ZeusPerStage", b.zeus_per_stage);
  return out;
}

namespace {

// The planning inputs as given.
json inputs_json(const study::FrontierRun& run) {
  const frontier::PlanningProblem& problem = *run.problem;
  const double tau = problem.settings.unit_time_s;
  return {
      {"profile", run.profile_source},
      {"schedule", std::string(pipeline::schedule_name(problem.spec.schedule))},
      {"stages", problem.spec.num_gpus},
      {"microbatches", problem.spec.num_microbatches},
      {"chunks_per_gpu", problem.spec.chunks_per_gpu},
      {"p_blocking_w", problem.settings.p_blocking_w},
      {"unit_time_s", tau},
      {"cost_model", std::string(frontier::cost_model_name(problem.settings.cost_model))},
      {"fit_method", std::string(frontier::fit_method_name(problem.settings.fit_method))},
      {"quantization", std::string(frontier::quantization_name(problem.settings.quantization))},
  };
}

// Per straggler slowdown of the run: T_opt, the planned point and its savings.
json stragglers_json(const study::FrontierRun& run) {
  json stragglers = json::array();
  for (const frontier::StragglerOutcome& s : run.stragglers) {
    stragglers.push_back({{"slowdown", s.slowdown},
                          {"straggler_time_s", s.straggler_time_s},
                          {"t_opt_s", s.target_time_s},
                          {"point", s.point},
                          {"planned_time_s", s.planned_time_s},
                          {"energy_with_blocking_j", s.energy_j},
                          {"baseline_energy_with_blocking_j", s.baseline_energy_j},
                          {"savings_percent", 100.0 * s.savings_fraction}});
  }
  return stragglers;
}

// The fitted cost model of every (stage, instruction), and the fits that fell back.
std::pair<json, json> fits_json(const frontier::PlanningProblem& problem) {
  json fits = json::array();
  json fallbacks = json::array();
  for (std::size_t m = 0; m < problem.models.size(); ++m) {
    if (problem.model_stage[m] < 0) continue;
    const frontier::FitReport& fit = problem.models[m].fit();
    fits.push_back({{"stage", problem.model_stage[m]},
                    {"instruction", std::string(pipeline::instruction_name(problem.model_kind[m]))},
                    {"model", fit.fell_back_to_piecewise_linear
                                  ? "piecewise-linear (fallback)"
                                  : std::string(frontier::cost_model_name(fit.kind))},
                    {"fit_method", std::string(frontier::fit_method_name(fit.method))},
                    {"fallback", std::string(frontier::fit_fallback_name(fit.fallback))},
                    {"noise_tolerant_filter", fit.noise_filter},
                    {"converged_start_guesses", fit.converged_starts},
                    {"a", fit.a},
                    {"b_per_unit", fit.b},
                    {"c", fit.c},
                    {"t0_units", fit.t0_units},
                    {"pareto_points", fit.num_points},
                    {"rms_error_j", fit.rms_error_j},
                    {"max_relative_error", fit.max_relative_error}});
    if (fit.fallback != frontier::FitFallback::kNone) {
      fallbacks.push_back(
          {{"stage", problem.model_stage[m]},
           {"instruction", std::string(pipeline::instruction_name(problem.model_kind[m]))},
           {"fallback", std::string(frontier::fit_fallback_name(fit.fallback))},
           {"reason", fit.fallback_reason}});
    }
  }
  return {fits, fallbacks};
}

// The baselines realized with measured clocks, each with the Perseus point that beats it.
json baselines_json(const study::FrontierRun& run, const study::Baselines& b) {
  json zeus_global = json::array(), zeus_per_stage = json::array();
  for (const study::BaselinePoint& p : b.zeus_global) zeus_global.push_back(baseline_json(run, p));
  for (const study::BaselinePoint& p : b.zeus_per_stage)
    zeus_per_stage.push_back(baseline_json(run, p));
  return {
      {"all_max_clock", baseline_json(run, b.all_max_clock)},
      {"zeus_global", zeus_global},
      {"zeus_per_stage", zeus_per_stage},
      {"envpipe", baseline_json(run, b.envpipe)},
      {"definition",
       "realized with measured clocks: time = longest path of measured instruction times, "
       "energy = measured energies + P_blocking x (GPUs x time - busy time); perseus_* = the "
       "realized frontier point with the least energy among those no slower than the baseline "
       "point (null if none; then perseus_fastest_point is the fastest realized point)"},
  };
}

}  // namespace

std::string summary_json(const study::FrontierRun& run) {
  const frontier::PlanningProblem& problem = *run.problem;
  const frontier::Frontier& frontier = *run.frontier;
  const double tau = problem.settings.unit_time_s;
  const frontier::FrontierPoint& slowest = frontier.points.front();
  const frontier::FrontierPoint& fastest = frontier.points.back();
  const double t_min = fastest.time_units * tau;
  json doc;
  doc["quantization"] = {
      {"rule", std::string(frontier::quantization_name(problem.settings.quantization))},
      {"meaning", problem.settings.quantization == frontier::Quantization::kCeil
                      ? "ceil: every realized point is no slower than planned; options are "
                        "Pareto-filtered on measured time, the fastest kept per time unit"
                      : "floor: the reference solver's rule (for comparing with its frontiers); "
                        "realized points may be up to one tau per instruction slower than "
                        "planned"},
      {"fastest_point_at_fastest_clocks", run.fastest_point_pinned}};
  doc["num_points"] = frontier.points.size();
  doc["t_min_planned_s"] = t_min;
  doc["t_star_planned_s"] = slowest.time_units * tau;
  doc["energy_at_t_min_planned_j"] = fastest.energy_j;
  doc["energy_at_t_star_planned_j"] = slowest.energy_j;
  doc["realized_at_t_min"] = {{"time_s", run.realized.back().time_s},
                              {"energy_j", run.realized.back().energy_j}};
  doc["realized_at_t_star"] = {{"time_s", run.realized.front().time_s},
                               {"energy_j", run.realized.front().energy_j}};
  doc["baseline_all_max_clock_measured"] = {{"time_s", run.baseline.time_s},
                                            {"energy_j", run.baseline.energy_j}};
  const double paper_baseline = frontier::max_clock_energy_at(problem, t_min);
  doc["savings_at_t_min"] = {
      {"planned_vs_max_clock_at_t_min_percent", 100.0 * (1.0 - fastest.energy_j / paper_baseline)},
      {"max_clock_energy_at_t_min_j", paper_baseline},
      {"realized_vs_measured_baseline_percent",
       100.0 * (1.0 - run.realized.back().energy_j / run.baseline.energy_j)},
      {"definition",
       "planned: 1 - planned energy at T_min / (sum of measured max-clock energies + P_blocking x "
       "(GPUs x T_min - "
       "max-clock busy time)) as in Perseus Table 6; realized: the T_min plan at measured clocks "
       "vs all max "
       "clock, both measured"},
  };
  doc["inputs"] = inputs_json(run);
  doc["stragglers_planned"] = stragglers_json(run);
  const auto [fits, fallbacks] = fits_json(problem);
  doc["fits"] = fits;
  doc["fit_fallbacks"] = fallbacks;
  if (run.baselines) doc["baselines"] = baselines_json(run, *run.baselines);
  doc["solver"] = {{"iterations", frontier.stats.iterations},
                   {"seconds", frontier.stats.seconds},
                   {"max_critical_instructions", frontier.stats.max_critical_operations},
                   {"reverted_slowdowns", frontier.stats.reverted_slowdowns},
                   {"multi_unit_steps", frontier.stats.multi_unit_steps}};
  doc["units"] =
      "times in seconds, energies in joules per iteration of one pipeline, power in watts";
  return doc.dump(1) + "\n";
}

std::string frontier_svg(const study::FrontierRun& run) {
  const double tau = run.problem->settings.unit_time_s;
  // A profile generated by the device model is modelled, not measured: label it so.
  const bool modelled = run.profile_source.rfind("model:", 0) == 0;
  const std::string clocks = modelled ? "(modelled clocks)" : "(measured clocks)";
  PlotSpec spec;
  spec.title = fmt::format("Time-energy frontier: {} stages, {} microbatches, {}",
                           run.problem->spec.num_gpus, run.problem->spec.num_microbatches,
                           pipeline::schedule_name(run.problem->spec.schedule));
  spec.x_label = "iteration time (s)";
  spec.y_label = "energy per iteration of one pipeline (J)";
  PlotSeries planned{"planned (fitted model)", {}, "#1f77b4"};
  PlotSeries realized{"realized " + clocks, {}, "#ff7f0e"};
  realized.style = PlotSeries::Style::kMarkers;
  realized.marker_radius_px = 1.5;
  for (std::size_t i = 0; i < run.frontier->points.size(); ++i) {
    planned.points.emplace_back(run.frontier->points[i].time_units * tau,
                                run.frontier->points[i].energy_j);
    realized.points.emplace_back(run.realized[i].time_s, run.realized[i].energy_j);
  }
  spec.series = {planned, realized};
  // Baselines as series, so that the legend names them (Perseus Fig. 9).
  auto point_series = [](std::string label, double time_s, double energy_j, std::string color) {
    PlotSeries series{std::move(label), {{time_s, energy_j}}, std::move(color)};
    series.style = PlotSeries::Style::kMarkers;
    series.marker_radius_px = 5.0;
    return series;
  };
  if (run.baselines) {
    const study::Baselines& b = *run.baselines;
    PlotSeries zeus_global{"ZeusGlobal " + clocks, {}, "#8c564b"};
    PlotSeries zeus_per_stage{"ZeusPerStage " + clocks, {}, "#e377c2"};
    for (auto* series : {&zeus_global, &zeus_per_stage}) {
      series->style = PlotSeries::Style::kLineAndMarkers;
      series->marker_radius_px = 2.0;
    }
    // Low clocks make the Zeus curves run far past T* (to 7 s for a 1.5 s frontier), which
    // squeezes the frontier into a corner: draw them only up to 1.3 × T* and say so.
    const double t_star_s = run.frontier->points.front().time_units * tau;
    const double drawn_until_s = 1.3 * std::max(t_star_s, run.realized.front().time_s);
    bool clipped = false;
    for (auto [source, series] :
         {std::pair{&b.zeus_global, &zeus_global}, std::pair{&b.zeus_per_stage, &zeus_per_stage}}) {
      for (const study::BaselinePoint& p : *source) {
        if (p.time_s <= drawn_until_s) {
          series->points.emplace_back(p.time_s, p.energy_j);
        } else {
          clipped = true;
        }
      }
    }
    if (clipped) {
      for (auto* series : {&zeus_global, &zeus_per_stage})
        series->label += fmt::format(", shown up to {:.2f} s", drawn_until_s);
    }
    spec.series.push_back(zeus_global);
    spec.series.push_back(zeus_per_stage);
    spec.series.push_back(
        point_series("EnvPipe " + clocks, b.envpipe.time_s, b.envpipe.energy_j, "#17becf"));
  }
  spec.series.push_back(
      point_series(modelled ? "all max clock (modelled)" : "all max clock (measured)",
                   run.baseline.time_s, run.baseline.energy_j, "#d62728"));
  spec.annotations.push_back({run.frontier->points.back().time_units * tau,
                              run.frontier->points.back().energy_j, "T_min", "#2ca02c"});
  spec.annotations.push_back({run.frontier->points.front().time_units * tau,
                              run.frontier->points.front().energy_j, "T* (least-energy clocks)",
                              "#9467bd"});
  return render_svg_plot(spec);
}

std::string timeline_trace_json(const study::FrontierRun& run, std::size_t point) {
  const frontier::PlanningProblem& problem = *run.problem;
  const std::vector<int> units = run.frontier->durations_at(point);
  const std::vector<int> mhz = frontier::frequencies_for(problem, units);
  const pipeline::OperationDag& dag = problem.dag;
  const std::vector<double> duration = frontier::measured_times(problem, units);
  std::vector<double> finish(units.size(), 0.0);
  for (int v : dag.topological_order) {
    double start = 0.0;
    for (int p : dag.predecessors[v]) start = std::max(start, finish[p]);
    finish[v] = start + duration[v];
  }
  json events = json::array();
  for (int gpu = 0; gpu < dag.num_gpus; ++gpu) {
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", 0},
                      {"tid", gpu},
                      {"args", {{"name", fmt::format("GPU {} (pipeline stage {})", gpu, gpu)}}}});
    events.push_back({{"ph", "M"},
                      {"name", "thread_sort_index"},
                      {"pid", 0},
                      {"tid", gpu},
                      {"args", {{"sort_index", gpu}}}});
  }
  events.push_back(
      {{"ph", "M"},
       {"name", "process_name"},
       {"pid", 0},
       {"args",
        {{"name", fmt::format("pipeline, plan {} (realized with measured clocks)", point)}}}});
  for (std::size_t v = 0; v < units.size(); ++v) {
    const pipeline::Operation& op = dag.operations[v];
    const char letter = op.kind == pipeline::InstructionKind::kForward     ? 'F'
                        : op.kind == pipeline::InstructionKind::kBackward  ? 'B'
                        : op.kind == pipeline::InstructionKind::kRecompute ? 'R'
                                                                           : 'C';
    std::string name = pipeline::is_profiled(op.kind)
                           ? fmt::format("{}{} @ {} MHz", letter, op.microbatch, mhz[v])
                           : std::string(pipeline::instruction_name(op.kind));
    const int tid = op.gpu >= 0 ? op.gpu : dag.num_gpus + op.stage;
    events.push_back({{"ph", "X"},
                      {"name", name},
                      {"cat", std::string(pipeline::instruction_name(op.kind))},
                      {"pid", 0},
                      {"tid", tid},
                      {"ts", (finish[v] - duration[v]) * 1e6},
                      {"dur", duration[v] * 1e6},
                      {"args",
                       {{"stage", op.stage},
                        {"microbatch", op.microbatch},
                        {"frequency_mhz", mhz[v]},
                        {"planned_duration_s", units[v] * problem.settings.unit_time_s},
                        {"measured_duration_s", duration[v]}}}});
  }
  json doc;
  doc["traceEvents"] = events;
  doc["displayTimeUnit"] = "ms";
  return doc.dump() + "\n";
}

std::string zeus_plan_filename(std::size_t point) {
  return fmt::format("freqs_pipeline_{:05d}.py", point);
}

std::vector<OutputFile> frontier_files(const study::FrontierRun& run, std::size_t timeline_point) {
  return {
      {"frontier.csv", frontier_csv(run)},
      {"plans.csv", plans_csv(run)},
      {"summary.json", summary_json(run)},
      {"baselines.csv", baselines_csv(run)},
      {"frontier.svg", frontier_svg(run)},
      {fmt::format("timeline_{:05d}.json", timeline_point),
       timeline_trace_json(run, timeline_point)},
  };
}

std::vector<OutputFile> plan_files(const study::FrontierRun& run, std::size_t point) {
  const auto plan = gpu_plans_at(*run.problem, run.frontier->durations_at(point));
  const frontier::FrontierPoint& planned = run.frontier->points.at(point);
  const double planned_time_s = planned.time_units * run.problem->settings.unit_time_s;
  const frontier::RealizedPlan& realized = run.realized.at(point);
  return {
      {zeus_plan_filename(point),
       zeus_plan_py(plan, planned_time_s, planned.energy_j, realized.time_s, realized.energy_j)},
      {fmt::format("plan_{:05d}.json", point),
       plan_json(plan, point, planned_time_s, planned.energy_j, realized.time_s,
                 realized.energy_j)},
  };
}

// Warnings about the input: averaged repeated rows and fits that fell back.
void print_input_warnings(std::FILE* to, const profile::Profile& profile,
                          const frontier::PlanningProblem& problem) {
  if (profile.merged_duplicate_rows > 0) {
    fmt::print(to, "warning: {}:{}: {} repeated (stage, instruction, frequency) row(s) averaged\n",
               profile.source, profile.first_duplicate_line, profile.merged_duplicate_rows);
  }
  if (const std::string fallbacks = frontier::fit_fallback_summary(problem); !fallbacks.empty()) {
    fmt::print(to, "warning: exponential fit fell back for {}\n", fallbacks);
  }
}

// The console summary of a written run.
void print_frontier_summary(std::FILE* to, const study::ProfileSource& source,
                            const pipeline::PipelineSpec& spec, const study::FrontierRun& run,
                            const std::string& directory, std::size_t timeline_point,
                            std::size_t plans_written, bool pp_given) {
  const frontier::PlanningProblem& problem = *run.problem;
  const frontier::Frontier& solved = *run.frontier;
  const frontier::PlanningSettings& settings = problem.settings;
  const profile::Profile& profile = source.profile;
  const bool builtin = source.builtin;
  const double tau = settings.unit_time_s;
  const auto& first = solved.points.front();
  const auto& fastest = solved.points.back();
  const double t_min = fastest.time_units * tau;
  const double paper_baseline = frontier::max_clock_energy_at(problem, t_min);
  double max_fit_error = 0.0;
  for (const auto& model : problem.models)
    max_fit_error = std::max(max_fit_error, model.fit().max_relative_error);
  fmt::print(
      to, "powertrain frontier: {} stages x {} microbatches, {}, tau = {} s, P_blocking = {} W\n",
      spec.num_gpus, spec.num_microbatches, pipeline::schedule_name(spec.schedule), tau,
      settings.p_blocking_w);
  fmt::print(to, "  profile       {}{}\n", profile.source,
             builtin ? " (run `powertrain example-profile` to see it)" : "");
  if (!source.job && !builtin && !pp_given) {
    // Said aloud: a truncated profile would otherwise plan a shorter pipeline without a word.
    fmt::print(to, "  note          --pp not given: planned the {} stage(s) found in the profile\n",
               spec.num_gpus);
  }
  const char* basis = source.job ? "modelled" : "measured";
  if (source.job) {
    fmt::print(
        to,
        "  note          the profile is modelled by the device model: 'measured' below means "
        "the modelled time and energy at a clock, not a GPU measurement\n");
  }
  fmt::print(to, "  cost model    {} fit ({}), largest fit error {:.2f} % of {} energy\n",
             frontier::cost_model_name(settings.cost_model),
             frontier::fit_method_name(settings.fit_method), 100.0 * max_fit_error, basis);
  fmt::print(to, "  quantization  {}{}\n", frontier::quantization_name(settings.quantization),
             settings.quantization == frontier::Quantization::kCeil
                 ? " (realized points never slower than planned)"
                 : " (reference solver's rule; realized may exceed planned)");
  fmt::print(
      to,
      "  frontier      {} points, T_min = {:.4f} s .. T* = {:.4f} s (planned); solved in {:.2f} "
      "s\n",
      solved.points.size(), t_min, first.time_units * tau, solved.stats.seconds);
  fmt::print(to, "  baseline      all max clock: {:.4f} s, {:.1f} J per iteration ({})\n",
             run.baseline.time_s, run.baseline.energy_j, basis);
  fmt::print(
      to,
      "  at T_min      {:.1f} J planned: {:.2f} % less than max clock at T_min ({:.1f} J, Perseus "
      "Table 6 "
      "definition)\n",
      fastest.energy_j, 100.0 * (1.0 - fastest.energy_j / paper_baseline), paper_baseline);
  fmt::print(to,
             "                realized with {} clocks: {:.4f} s, {:.1f} J ({:+.2f} % energy vs "
             "baseline)\n",
             basis, run.realized.back().time_s, run.realized.back().energy_j,
             100.0 * (run.realized.back().energy_j / run.baseline.energy_j - 1.0));
  fmt::print(to, "  at T*         {:.1f} J planned (least energy), {:.2f} % slower than T_min\n",
             first.energy_j, 100.0 * (first.time_units * tau / t_min - 1.0));
  fmt::print(
      to,
      "  stragglers    slowdown T'/T_min -> plan point, planned time, savings incl. blocking "
      "(planned)\n");
  for (const auto& s : run.stragglers) {
    fmt::print(to, "                {:.2f}x  T' = {:.4f} s -> point {:5d}, {:.4f} s, {}\n",
               s.slowdown, s.straggler_time_s, s.point, s.planned_time_s,
               core::savings_phrase(s.savings_fraction));
  }
  fmt::print(to, "{}", baselines_summary(run));
  fmt::print(to,
             "  files         {}/: frontier.csv plans.csv summary.json baselines.csv frontier.svg "
             "timeline_{:05d}.json "
             "and {} plan(s) as freqs_pipeline_NNNNN.py + plan_NNNNN.json\n",
             directory, timeline_point, plans_written);
  if (!builtin && profile.find(0, pipeline::InstructionKind::kRecompute) != nullptr &&
      spec.schedule != pipeline::ScheduleKind::kOneFOneBEarlyRecompute) {
    fmt::print(
        to, "note: {} has recompute rows; they are planned only with --schedule 1f1b-recompute\n",
        profile.source);
  }
}

}  // namespace powertrain::report
