// `powertrain kareus`: Kareus (joint clock, communication-SM and launch-timing search over
// partitioned overlap) against Megatron-LM, Megatron+Perseus, Nanobatching and
// Nanobatching+Perseus, all modelled (docs/kareus.md).
#include <fmt/core.h>

#include <algorithm>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/model_job_options.h"
#include "core/atomic_output.h"
#include "kareus/compose.h"
#include "kareus/large_scale.h"
#include "kareus/paper_tables.h"
#include "kareus/profiler_gpu.h"
#include "kareus/surrogate.h"
#include "kareus/systems.h"
#include "profile/model_profile.h"
#include "report/frontier_report.h"
#include "report/svg_plot.h"

namespace powertrain::cli {
namespace {

constexpr const char* kCommand = "kareus";

struct KareusFlags {
  profile::ModelJobRequest request;
  std::string out;
  bool force = false;
  std::string search = "mbo";
  long long seed = 1;
  bool table3 = false;
  bool table7 = true;
  std::string profiler = "model";
  long long plan_points = 16;  // frontier points with plan files (0: all)
};

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

const char* const kColors[kareus::kNumSystems] = {"#444444", "#1f77b4", "#ff7f0e", "#2ca02c",
                                                  "#d62728"};

std::string fmt_pct(std::optional<double> v) { return v ? fmt::format("{:.1f}", *v) : "—"; }

// The max-throughput and frontier tables of one job.
void print_systems(const kareus::SystemsResult& r, double p_static_w) {
  const auto [m_t, m_e] = kareus::fastest_point(r.systems[kareus::kMegatron]);
  fmt::print(
      "\n  max-throughput (fastest point)    time s   energy J   static J  dynamic J  "
      "time red. %  energy red. % (vs Megatron-LM)\n");
  for (const kareus::SystemFrontier& m : r.systems) {
    const auto [t, e] = kareus::fastest_point(m);
    const double st = r.gpus * p_static_w * t;
    fmt::print("  {:<32s} {:7.3f} {:10.0f} {:10.0f} {:10.0f} {:12.1f} {:14.1f}\n", m.name, t, e, st,
               e - st, 100.0 * (1.0 - t / m_t), 100.0 * (1.0 - e / m_e));
  }
  const kareus::SystemFrontier& mpm = r.systems[kareus::kMegatronPerseus];
  fmt::print(
      "\n  frontier vs Megatron-LM + Perseus  iso-time energy red. %  iso-energy time red. %\n");
  for (int i : {kareus::kNanobatchingPerseus, kareus::kKareus}) {
    const auto f = kareus::frontier_improvement(mpm, r.systems[static_cast<std::size_t>(i)]);
    fmt::print("  {:<32s} {:>22s} {:>23s}\n", kareus::system_name(i),
               fmt_pct(f.iso_time_energy_reduction_pct), fmt_pct(f.iso_energy_time_reduction_pct));
  }
  double mp_tmin = 1e300, mp_emin = 1e300;
  for (auto [t, e] : mpm.points) {
    mp_tmin = std::min(mp_tmin, t);
    mp_emin = std::min(mp_emin, e);
  }
  fmt::print(
      "  (iso-time: least energy within M+P's fastest time {:.3f} s; iso-energy: fastest "
      "within M+P's least energy {:.0f} J; — = no point meets it)\n",
      mp_tmin, mp_emin);
}

std::string frontier_csv(const kareus::SystemsResult& r, double p_static_w,
                         const std::string& workload) {
  std::string csv;
  for (const kareus::SystemFrontier& m : r.systems)
    for (auto [t, e] : m.points)
      csv += fmt::format("{}{},{:.9g},{:.9g},{:.9g},{:.9g}\n", workload, m.name, t, e,
                         r.gpus * p_static_w * t, e - r.gpus * p_static_w * t);
  return csv;
}

std::string frontier_svg(const kareus::SystemsResult& r, const std::string& description) {
  report::PlotSpec plot;
  plot.title = fmt::format("Kareus vs baselines: {} (modelled)", description);
  plot.x_label = "iteration time (s, modelled)";
  plot.y_label = fmt::format("energy per iteration, {} GPUs (J, modelled)", r.gpus);
  for (std::size_t i = 0; i < r.systems.size(); ++i) {
    const kareus::SystemFrontier& m = r.systems[i];
    report::PlotSeries series;
    series.label = m.name;
    series.color = kColors[i];
    series.points = m.points;
    series.style = m.points.size() > 1 ? report::PlotSeries::Style::kLineAndMarkers
                                       : report::PlotSeries::Style::kMarkers;
    series.marker_radius_px = m.points.size() > 1 ? 2.0 : 5.0;
    plot.series.push_back(series);
  }
  return report::render_svg_plot(plot);
}

kareus::SystemsOptions systems_options(const KareusFlags& flags) {
  kareus::SystemsOptions o;
  o.exhaustive = flags.search == "exhaustive";
  o.seed = static_cast<std::uint64_t>(flags.seed);
  return o;
}

int run_kareus(const KareusFlags& flags) {
  if (!flags.out.empty()) {
    if (auto checked = core::check_output_directory(flags.out, output_policy(flags.force));
        !checked)
      return fail(kCommand, checked.error().message);
  }
  auto job = profile::build_model_job(flags.request);
  if (!job) return fail(kCommand, job.error().message);
  if (flags.request.tp < 2 && flags.request.cp < 2)
    return fail(kCommand,
                "--tp or --cp must be at least 2: partitions pair collectives with compute");
  const device::GpuSpec& gpu = job->gpu;
  fmt::print("powertrain kareus: {} ({} microbatches, surrogate: {})\n", job->description,
             flags.request.microbatches, kareus::surrogate_name());
  kareus::SystemsOptions options = systems_options(flags);
  auto profiler = kareus::make_profiler(flags.profiler, gpu, options.params);
  if (!profiler) return fail(kCommand, profiler.error().message);
  if (flags.profiler != "model") options.profiler = profiler->get();
  fmt::print("  profiler: {}{}\n", (*profiler)->name(),
             flags.profiler == "model"
                 ? ""
                 : " (partition candidates measured; solo kernels, sequential microbatches and "
                   "the composition modelled)");
  auto r = kareus::run_systems(*job, flags.request.microbatches, options, nullptr);
  if (!r) return fail(kCommand, r.error().message);
  const double p_static = gpu.dvfs.static_power_w;
  fmt::print("  search: {} of {} partition schedules evaluated ({:.1f} %, {})\n", r->evaluated,
             r->space_total,
             100.0 * double(r->evaluated) / double(std::max<std::size_t>(1, r->space_total)),
             flags.search);
  fmt::print("  {}; energy of all {} GPUs per iteration; static = {} GPUs × {:.1f} W × time\n",
             flags.profiler == "model"
                 ? "all numbers modelled"
                 : "numbers mix measured partitions with modelled composition",
             r->gpus, r->gpus, p_static);
  print_systems(*r, p_static);

  if (flags.out.empty()) return 0;
  auto output = core::AtomicOutputDirectory::create(flags.out, output_policy(flags.force));
  if (!output) return fail(kCommand, output.error().message);
  const std::string csv =
      "method,time_s,energy_j,static_j,dynamic_j\n" + frontier_csv(*r, p_static, "");
  std::vector<std::pair<std::string, std::string>> files = {
      {"frontier.svg", frontier_svg(*r, job->description)}, {"frontier.csv", csv}};
  // Zeus plan files (per-instruction clock) of every planned point of Kareus and of M+P, and
  // every point's per-instruction schedule (clock, comm SMs, launch slot) in schedules.json.
  std::size_t plan_files = 0;
  for (const auto& [system, prefix] : {std::pair{kareus::kKareus, "kareus_"},
                                       std::pair{kareus::kMegatronPerseus, "megatron_perseus_"}}) {
    const kareus::SystemPlans& plans = *r->plans[static_cast<std::size_t>(system)];
    for (std::size_t i : kareus::plan_points(plans.iteration.frontier.points.size(),
                                             static_cast<std::size_t>(flags.plan_points))) {
      auto plan = kareus::zeus_plan_at(plans, i);
      if (!plan) return fail(kCommand, plan.error().message);
      files.emplace_back(fmt::format("{}{}", prefix, report::zeus_plan_filename(i)),
                         report::zeus_plan_py(*plan, kareus::planned_time_s(plans, i),
                                              plans.iteration.frontier.points[i].energy_j,
                                              plans.iteration.realized.at(i).time_s,
                                              plans.iteration.realized.at(i).energy_j));
      ++plan_files;
    }
  }
  auto schedules = kareus::schedules_json(
      gpu, options.params,
      {{kareus::system_name(kareus::kKareus), r->plans[kareus::kKareus].get()},
       {kareus::system_name(kareus::kMegatronPerseus), r->plans[kareus::kMegatronPerseus].get()}},
      static_cast<std::size_t>(flags.plan_points));
  if (!schedules) return fail(kCommand, schedules.error().message);
  files.emplace_back("schedules.json", schedules->dump(1) + "\n");
  for (const auto& [name, contents] : files) {
    if (auto written = output->write_file(name, contents); !written)
      return fail(kCommand, written.error().message);
  }
  if (auto committed = output->commit(); !committed)
    return fail(kCommand, committed.error().message);
  fmt::print(
      "\n  wrote {}/frontier.svg, frontier.csv, schedules.json and {} Zeus plan files "
      "(kareus_freqs_pipeline_*.py, megatron_perseus_freqs_pipeline_*.py)\n",
      flags.out, plan_files);
  return 0;
}

// --table3: the 12 Table 3 workloads × 5 systems (and Llama 3.3 70B for Tables 7–8), with the
// paper's values side by side.
int run_table3(const KareusFlags& flags) {
  std::optional<core::AtomicOutputDirectory> output;
  if (!flags.out.empty()) {
    auto created = core::AtomicOutputDirectory::create(flags.out, output_policy(flags.force));
    if (!created) return fail(kCommand, created.error().message);
    output.emplace(std::move(*created));
  }
  const kareus::SystemsOptions options = systems_options(flags);
  kareus::SearchCache cache;
  std::vector<kareus::Table3Outcome> outcomes;
  std::string csv = "workload,method,time_s,energy_j,static_j,dynamic_j\n";
  fmt::print(
      "powertrain kareus --table3: 12 workloads of Kareus Table 3 × 5 systems (modelled; A100 "
      "SXM4 {:.0f} GB as on the paper's p4d.24xlarge testbed; search {}, surrogate {})\n",
      kareus::kTable3GpuMemoryGib, flags.search, kareus::surrogate_name());
  for (const kareus::Table3Workload& w : kareus::table3_workloads()) {
    kareus::Table3Outcome o;
    o.workload = w;
    auto job = profile::build_model_job(kareus::table3_request(w));
    if (!job) return fail(kCommand, w.label() + ": " + job.error().message);
    auto memory = kareus::table3_memory(*job);
    if (!memory) return fail(kCommand, w.label() + ": " + memory.error().message);
    o.oom = !memory->fits;
    o.memory_verdict = memory->verdict;
    o.peak_gib = memory->stages[static_cast<std::size_t>(memory->peak_stage)].total_bytes / kGiB;
    auto no_recompute = kareus::table3_memory(*job, false);
    if (!no_recompute) return fail(kCommand, w.label() + ": " + no_recompute.error().message);
    o.peak_gib_no_recompute =
        no_recompute->stages[static_cast<std::size_t>(no_recompute->peak_stage)].total_bytes / kGiB;
    o.ready_power_w = job->gpu.idle_power_w;
    {
      auto r = kareus::run_systems(*job, job->parallel.num_microbatches, options, &cache);
      if (!r) return fail(kCommand, w.label() + ": " + r.error().message);
      r->plans = {};  // plan files come from single-job runs; free the solved frontiers
      csv += frontier_csv(*r, job->gpu.dvfs.static_power_w, w.label() + ",");
      if (output) {
        std::string name = w.label();
        for (char& c : name)
          if (c == ' ' || c == '+') c = '_';
        if (auto written =
                output->write_file("frontier_" + name + ".svg", frontier_svg(*r, job->description));
            !written)
          return fail(kCommand, written.error().message);
      }
      o.result = std::move(*r);
    }
    fmt::print("  {:<28s} memory (modelled): {}\n", w.label(), o.memory_verdict);
    outcomes.push_back(std::move(o));
  }
  std::vector<kareus::SystemsResult> table7;
  if (flags.table7) {
    for (int microbatches : kareus::kTable7Microbatches) {
      auto job = profile::build_model_job(kareus::table7_request(microbatches));
      if (!job) return fail(kCommand, job.error().message);
      auto r = kareus::run_systems(*job, microbatches, options, &cache);
      if (!r) return fail(kCommand, r.error().message);
      r->plans = {};
      table7.push_back(std::move(*r));
    }
  }
  fmt::print("  partition-type searches: {} run, {} reused from identical types\n\n", cache.misses,
             cache.hits);
  const std::string md = kareus::paper_tables_markdown(outcomes, table7);
  fmt::print("{}", md);
  if (!output) return 0;
  for (const auto& [name, contents] :
       {std::pair<std::string, std::string>{"tables.md", md}, {"frontiers.csv", csv}}) {
    if (auto written = output->write_file(name, contents); !written)
      return fail(kCommand, written.error().message);
  }
  if (auto committed = output->commit(); !committed)
    return fail(kCommand, committed.error().message);
  fmt::print("  wrote {}/tables.md, frontiers.csv and frontier_*.svg\n", flags.out);
  return 0;
}

}  // namespace

Action add_kareus_command(CLI::App& app) {
  auto flags = std::make_shared<KareusFlags>();
  flags->request.model = "llama3.2-3b";
  flags->request.tp = 8;
  flags->request.pp = 2;
  flags->request.microbatch_size = 8;
  flags->request.seq_len = 4096;
  flags->request.microbatches = 8;
  add_model_job_options(app, flags->request);
  add_option_with_aliases(app, "--microbatches", {}, flags->request.microbatches,
                          "Microbatches per pipeline per iteration (8)", integer_in(1, 4096));
  app.add_option("--out", flags->out,
                 "Output directory (frontier.svg, frontier.csv, schedules.json, Zeus plan files)");
  app.add_option("--search", flags->search, "Per-partition search: mbo (default) or exhaustive")
      ->check(CLI::IsMember({"mbo", "exhaustive"}));
  add_option_with_aliases(app, "--seed", {}, flags->seed, "MBO seed (1)", integer_in(0, 1LL << 40));
  add_option_with_aliases(app, "--cp", {}, flags->request.cp,
                          "Context-parallel degree: K/V all-gather over cp ranks (1)",
                          integer_in(1, 64));
  app.add_flag("--table3", flags->table3,
               "Run the paper's Table 3 workloads x 5 systems (and Llama 3.3 70B for Tables 7-8) "
               "and print Tables 1, 4, 5, 7, 8 next to the paper's values; job flags are ignored");
  app.add_flag("!--no-table7", flags->table7,
               "With --table3: skip the Llama 3.3 70B runs of Tables 7-8");
  app.add_option("--profiler", flags->profiler,
                 "Partition measurements: model (default) or gpu (GPU 0 via libcuda and NVML, "
                 "5 s window and 5 s cooldown per candidate; docs/kareus.md)")
      ->check(CLI::IsMember({"model", "gpu"}));
  add_option_with_aliases(app, "--plan-points", {}, flags->plan_points,
                          "With --out: frontier points of Kareus and M+P that get Zeus plan files "
                          "and schedules.json entries, spread evenly, always the slowest and the "
                          "fastest (16; 0: every point)",
                          integer_in(0, 1LL << 30));
  add_force_flag(app, flags->force);
  return [flags]() {
    if (flags->table3 && flags->profiler != "model")
      return usage_error(kCommand, "--table3 runs on the model profiler only (drop --profiler)");
    return flags->table3 ? run_table3(*flags) : run_kareus(*flags);
  };
}

}  // namespace powertrain::cli
