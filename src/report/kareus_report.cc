#include "report/kareus_report.h"

#include <fmt/core.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "kareus/plans.h"
#include "kareus/surrogate.h"
#include "report/svg_plot.h"

namespace powertrain::report {
namespace {

const char* const kColors[kareus::kNumSystems] = {"#444444", "#1f77b4", "#ff7f0e", "#2ca02c",
                                                  "#d62728"};

std::string fmt_pct(std::optional<double> v) { return v ? fmt::format("{:.1f}", *v) : "—"; }

std::string deviation_or_dash(std::optional<double> ours, std::optional<double> paper) {
  return ours && paper ? fmt::format("{:+.1f}", *ours - *paper) : "—";
}

}  // namespace

void print_kareus_systems(std::FILE* to, const kareus::SystemsResult& r, double p_static_w,
                          const std::string& search, bool modelled_profiler) {
  fmt::print(to, "  search: {} of {} partition schedules evaluated ({:.1f} %, {})\n", r.evaluated,
             r.space_total,
             100.0 * double(r.evaluated) / double(std::max<std::size_t>(1, r.space_total)), search);
  fmt::print(to, "  {}; energy of all {} GPUs per iteration; static = {} GPUs × {:.1f} W × time\n",
             modelled_profiler ? "all numbers modelled"
                               : "numbers mix measured partitions with modelled composition",
             r.gpus, r.gpus, p_static_w);
  const auto [m_t, m_e] = kareus::fastest_point(r.systems[kareus::kMegatron]);
  fmt::print(to,
             "\n  max-throughput (fastest point)    time s   energy J   static J  dynamic J  "
             "time red. %  energy red. % (vs Megatron-LM)\n");
  for (const kareus::SystemFrontier& m : r.systems) {
    const auto [t, e] = kareus::fastest_point(m);
    const double st = r.gpus * p_static_w * t;
    fmt::print(to, "  {:<32s} {:7.3f} {:10.0f} {:10.0f} {:10.0f} {:12.1f} {:14.1f}\n", m.name, t, e,
               st, e - st, 100.0 * (1.0 - t / m_t), 100.0 * (1.0 - e / m_e));
  }
  const kareus::SystemFrontier& mpm = r.systems[kareus::kMegatronPerseus];
  fmt::print(
      to,
      "\n  frontier vs Megatron-LM + Perseus  iso-time energy red. %  iso-energy time red. %\n");
  for (int i : {kareus::kNanobatchingPerseus, kareus::kKareus}) {
    const auto f = kareus::frontier_improvement(mpm, r.systems[static_cast<std::size_t>(i)]);
    fmt::print(to, "  {:<32s} {:>22s} {:>23s}\n", kareus::system_name(i),
               fmt_pct(f.iso_time_energy_reduction_pct), fmt_pct(f.iso_energy_time_reduction_pct));
  }
  double mp_tmin = 1e300, mp_emin = 1e300;
  for (auto [t, e] : mpm.points) {
    mp_tmin = std::min(mp_tmin, t);
    mp_emin = std::min(mp_emin, e);
  }
  fmt::print(to,
             "  (iso-time: least energy within M+P's fastest time {:.3f} s; iso-energy: fastest "
             "within M+P's least energy {:.0f} J; — = no point meets it)\n",
             mp_tmin, mp_emin);
}

std::string kareus_frontier_rows(const kareus::SystemsResult& r, double p_static_w,
                                 const std::string& workload) {
  std::string csv;
  for (const kareus::SystemFrontier& m : r.systems)
    for (auto [t, e] : m.points)
      csv += fmt::format("{}{},{:.9g},{:.9g},{:.9g},{:.9g}\n", workload, m.name, t, e,
                         r.gpus * p_static_w * t, e - r.gpus * p_static_w * t);
  return csv;
}

std::string kareus_frontier_svg(const kareus::SystemsResult& r, const std::string& description) {
  PlotSpec plot;
  plot.title = fmt::format("Kareus vs baselines: {} (modelled)", description);
  plot.x_label = "iteration time (s, modelled)";
  plot.y_label = fmt::format("energy per iteration, {} GPUs (J, modelled)", r.gpus);
  for (std::size_t i = 0; i < r.systems.size(); ++i) {
    const kareus::SystemFrontier& m = r.systems[i];
    PlotSeries series;
    series.label = m.name;
    series.color = kColors[i];
    series.points = m.points;
    series.style =
        m.points.size() > 1 ? PlotSeries::Style::kLineAndMarkers : PlotSeries::Style::kMarkers;
    series.marker_radius_px = m.points.size() > 1 ? 2.0 : 5.0;
    plot.series.push_back(series);
  }
  return render_svg_plot(plot);
}

core::Result<std::vector<OutputFile>> kareus_job_files(const kareus::SystemsResult& r,
                                                       const std::string& description,
                                                       const device::GpuSpec& gpu,
                                                       const kareus::ConcurrencyParams& params,
                                                       std::size_t plan_points) {
  const std::string csv = "method,time_s,energy_j,static_j,dynamic_j\n" +
                          kareus_frontier_rows(r, gpu.dvfs.static_power_w, "");
  std::vector<OutputFile> files = {{"frontier.svg", kareus_frontier_svg(r, description)},
                                   {"frontier.csv", csv}};
  // Zeus plan files (per-instruction clock) of every planned point of Kareus and of M+P, and
  // every point's per-instruction schedule (clock, comm SMs, launch slot) in schedules.json.
  for (const auto& [system, prefix] : {std::pair{kareus::kKareus, "kareus_"},
                                       std::pair{kareus::kMegatronPerseus, "megatron_perseus_"}}) {
    const kareus::SystemPlans& plans = *r.plans[static_cast<std::size_t>(system)];
    for (std::size_t i : kareus::plan_points(plans.iteration.frontier.points.size(), plan_points)) {
      auto plan = kareus::zeus_plan_at(plans, i);
      if (!plan) return plan.error();
      files.emplace_back(fmt::format("{}{}", prefix, zeus_plan_filename(i)),
                         zeus_plan_py(*plan, kareus::planned_time_s(plans, i),
                                      plans.iteration.frontier.points[i].energy_j,
                                      plans.iteration.realized.at(i).time_s,
                                      plans.iteration.realized.at(i).energy_j));
    }
  }
  auto schedules = kareus::schedules_json(
      gpu, params,
      {{kareus::system_name(kareus::kKareus), r.plans[kareus::kKareus].get()},
       {kareus::system_name(kareus::kMegatronPerseus), r.plans[kareus::kMegatronPerseus].get()}},
      plan_points);
  if (!schedules) return schedules.error();
  files.emplace_back("schedules.json", schedules->dump(1) + "\n");
  return files;
}

void print_large_scale(std::FILE* to, const kareus::LargeScaleResult& result,
                       const kareus::LargeScaleOptions& options, const std::string& search,
                       long long seed, double total_s) {
  fmt::print(
      to,
      "powertrain kareus-cluster: {}, global batch {} samples = {} microbatches (Kareus §6.3, "
      "Table 6)\n",
      result.description, options.global_batch,
      options.global_batch / std::max(1, options.request.microbatch_size));
  fmt::print(
      to,
      "  profiler: {}; search: {} of {} schedules of {} distinct partition types ({}, seed {})\n",
      result.profiler, result.evaluated, result.space, result.partition_types, search, seed);
  fmt::print(
      to,
      "  times and energies modelled (profiler model) per iteration; energy of all GPUs = tp × "
      "pipelines × one pipeline's realized energy\n\n");
  fmt::print(to, "  {:>6s} {:>9s} {:>4s} | {:>9s} {:>10s} | {:>9s} {:>10s} | {:>9s} {:>10s}\n",
             "GPUs", "pipelines", "M", "Meg. t s", "Meg. E MJ", "M+P t s", "M+P E MJ", "Kar. t s",
             "Kar. E MJ");
  for (const auto& r : result.rows)
    fmt::print(
        to,
        "  {:>6d} {:>9d} {:>4d} | {:>9.3f} {:>10.3f} | {:>9.3f} {:>10.3f} | {:>9.3f} {:>10.3f}\n",
        r.config.gpus, r.shape.pipelines, r.shape.microbatches_per_pipeline, r.megatron.time_s,
        r.megatron.energy_j / 1e6, r.perseus_fastest.time_s, r.perseus_fastest.energy_j / 1e6,
        r.kareus_fastest.time_s, r.kareus_fastest.energy_j / 1e6);
  fmt::print(to,
             "\n  Table 7 (max throughput vs Megatron-LM, %): ours / paper / deviation (pp)\n"
             "  {:>6s} {:>4s} | {:>20s} | {:>20s} | {:>20s} | {:>20s}\n",
             "GPUs", "M", "M+P time red.", "Kareus time red.", "M+P energy red.",
             "Kareus energy red.");
  for (const auto& r : result.rows) {
    const auto paper = kareus::paper_large_scale_row(r.shape.microbatches_per_pipeline);
    auto cell = [&](double ours, std::optional<double> p) {
      return fmt::format("{:>6.1f} {:>6s} {:>6s}", ours, p ? fmt::format("{:.1f}", *p) : "—",
                         deviation_or_dash(ours, p));
    };
    fmt::print(to, "  {:>6d} {:>4d} | {} | {} | {} | {}\n", r.config.gpus,
               r.shape.microbatches_per_pipeline,
               cell(r.perseus_time_reduction_pct,
                    paper ? std::optional(paper->mp_time_pct) : std::nullopt),
               cell(r.kareus_time_reduction_pct,
                    paper ? std::optional(paper->kareus_time_pct) : std::nullopt),
               cell(r.perseus_energy_reduction_pct,
                    paper ? std::optional(paper->mp_energy_pct) : std::nullopt),
               cell(r.kareus_energy_reduction_pct,
                    paper ? std::optional(paper->kareus_energy_pct) : std::nullopt));
  }
  fmt::print(to,
             "\n  Table 8 (Kareus vs Megatron-LM + Perseus, %): ours / paper / deviation (pp)\n"
             "  {:>6s} {:>4s} | {:>22s} | {:>22s}\n",
             "GPUs", "M", "iso-time energy red.", "iso-energy time red.");
  for (const auto& r : result.rows) {
    const auto paper = kareus::paper_large_scale_row(r.shape.microbatches_per_pipeline);
    std::optional<double> pe;
    std::optional<double> pt;
    if (paper) {
      pe = paper->iso_time_energy_pct;
      pt = paper->iso_energy_time_pct;
    }
    fmt::print(to, "  {:>6d} {:>4d} | {:>8s} {:>6s} {:>6s} | {:>8s} {:>6s} {:>6s}\n", r.config.gpus,
               r.shape.microbatches_per_pipeline, fmt_pct(r.iso_time_energy_reduction_pct),
               fmt_pct(pe), deviation_or_dash(r.iso_time_energy_reduction_pct, pe),
               fmt_pct(r.iso_energy_time_reduction_pct), fmt_pct(pt),
               deviation_or_dash(r.iso_energy_time_reduction_pct, pt));
  }
  fmt::print(to, "\n  wall time (measured): search {:.2f} s, total {:.2f} s\n", result.search_s,
             total_s);
}

std::string large_scale_csv(const kareus::LargeScaleResult& result) {
  std::string csv = "gpus,pipelines,microbatches,method,time_s,energy_j\n";
  for (const auto& r : result.rows) {
    auto rows = [&](const char* method, const std::vector<kareus::ClusterPoint>& points) {
      for (const auto& p : points)
        csv += fmt::format("{},{},{},{},{:.9g},{:.9g}\n", r.config.gpus, r.shape.pipelines,
                           r.shape.microbatches_per_pipeline, method, p.time_s, p.energy_j);
    };
    rows("Megatron-LM", {r.megatron});
    rows("Megatron-LM + Perseus", r.perseus);
    rows("Kareus", r.kareus);
  }
  return csv;
}

OutputFile KareusTable3Files::add(const kareus::Table3Outcome& outcome,
                                  const profile::ModelJob& job) {
  const std::string label = outcome.workload.label();
  csv += kareus_frontier_rows(*outcome.result, job.gpu.dvfs.static_power_w, label + ",");
  std::string name = label;
  for (char& c : name)
    if (c == ' ' || c == '+') c = '_';
  return {"frontier_" + name + ".svg", kareus_frontier_svg(*outcome.result, job.description)};
}

void print_kareus_job(std::FILE* to, const profile::ModelJob& job, int microbatches) {
  fmt::print(to, "powertrain kareus: {} ({} microbatches, surrogate: {})\n", job.description,
             microbatches, kareus::surrogate_name());
}

void print_kareus_profiler(std::FILE* to, const kareus::Profiler& profiler,
                           bool modelled_profiler) {
  fmt::print(to, "  profiler: {}{}\n", profiler.name(),
             modelled_profiler ? ""
                               : " (partition candidates measured; solo kernels, sequential "
                                 "microbatches and the composition modelled)");
}

void print_kareus_table3_header(std::FILE* to, const std::string& search) {
  fmt::print(
      to,
      "powertrain kareus --table3: 12 workloads of Kareus Table 3 × 5 systems (modelled; A100 "
      "SXM4 {:.0f} GB as on the paper's p4d.24xlarge testbed; search {}, surrogate {})\n",
      kareus::kTable3GpuMemoryGib, search, kareus::surrogate_name());
}

void print_kareus_job_written(std::FILE* to, const std::string& out, std::size_t files) {
  fmt::print(to,
             "\n  wrote {}/frontier.svg, frontier.csv, schedules.json and {} Zeus plan files "
             "(kareus_freqs_pipeline_*.py, megatron_perseus_freqs_pipeline_*.py)\n",
             out, files - 3);
}

void print_kareus_table3_memory(std::FILE* to, const kareus::Table3Outcome& outcome) {
  fmt::print(to, "  {:<28s} memory (modelled): {}\n", outcome.workload.label(),
             outcome.memory_verdict);
}

void print_kareus_table3_searches(std::FILE* to, const kareus::Table3Run& run) {
  fmt::print(to, "  partition-type searches: {} run, {} reused from identical types\n\n",
             run.searches_run, run.searches_reused);
}

void print_kareus_table3_written(std::FILE* to, const std::string& out) {
  fmt::print(to, "  wrote {}/tables.md, frontiers.csv and frontier_*.svg\n", out);
}

}  // namespace powertrain::report
