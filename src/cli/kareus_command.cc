// `powertrain kareus`: Kareus (joint clock, communication-SM and launch-timing search over
// partitioned overlap) against Megatron-LM, Megatron+Perseus, Nanobatching and
// Nanobatching+Perseus, all modelled (docs/kareus.md).
#include <fmt/core.h>

#include <memory>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/model_job_options.h"
#include "core/atomic_output.h"
#include "core/svg_plot.h"
#include "kareus/compose.h"
#include "kareus/profiler_gpu.h"
#include "kareus/surrogate.h"
#include "profile/model_profile.h"

namespace powertrain::cli {
namespace {

constexpr const char* kCommand = "kareus";

struct KareusFlags {
  profile::ModelJobRequest request;
  std::string out;
  bool force = false;
  std::string search = "mbo";
  long long seed = 1;
  std::string profiler = "model";
};

struct Method {
  std::string name;
  std::string color;
  std::vector<std::pair<double, double>> points;  // realized (time s, energy J), slowest first
};

double min_time(const Method& m) {
  double t = 1e300;
  for (auto [x, y] : m.points) t = std::min(t, x);
  return t;
}
double min_energy(const Method& m) {
  double e = 1e300;
  for (auto [x, y] : m.points) e = std::min(e, y);
  return e;
}
// Energy of the fastest point.
std::pair<double, double> fastest(const Method& m) {
  std::pair<double, double> best{1e300, 1e300};
  for (auto p : m.points)
    if (p.first < best.first || (p.first == best.first && p.second < best.second)) best = p;
  return best;
}
// Least energy within a time budget (nullopt: none).
std::optional<double> energy_within(const Method& m, double time_s) {
  std::optional<double> best;
  for (auto [t, e] : m.points)
    if (t <= time_s * (1 + 1e-12) && (!best || e < *best)) best = e;
  return best;
}
std::optional<double> time_within(const Method& m, double energy_j) {
  std::optional<double> best;
  for (auto [t, e] : m.points)
    if (e <= energy_j * (1 + 1e-12) && (!best || t < *best)) best = t;
  return best;
}

int run_kareus(const KareusFlags& flags) {
  auto job = profile::build_model_job(flags.request);
  if (!job) return fail(kCommand, job.error().message);
  if (flags.request.tp < 2)
    return fail(kCommand,
                "--tp must be at least 2: partitions pair tensor-parallel collectives "
                "with compute");
  const device::GpuSpec& gpu = job->gpu;
  const kareus::ConcurrencyParams params;
  const int pp = flags.request.pp;
  auto profiler = kareus::make_profiler(flags.profiler, gpu, params);
  if (!profiler) return fail(kCommand, profiler.error().message);
  fmt::print("powertrain kareus: {} ({} microbatches, surrogate: {})\n", job->description,
             flags.request.microbatches, kareus::surrogate_name());

  std::vector<int> clocks;  // App. C clock grid, shared by every method
  kareus::StageOptions megatron(pp), nanobatch(pp), kareus_opts(pp);
  std::vector<std::array<kareus::MicrobatchOption, 2>> megatron_max(pp), nanobatch_max(pp);
  std::size_t evaluated = 0, space_total = 0;
  for (int s = 0; s < pp; ++s) {
    for (int kind = 0; kind < 2; ++kind) {
      const auto& ops = kind == 0 ? job->stages[s].forward : job->stages[s].backward;
      const kareus::MicrobatchWork mb =
          kareus::build_microbatch_work(ops, kind == 1, flags.request.tp);
      std::vector<std::vector<kareus::Evaluated>> found, defaults;
      for (const kareus::PartitionType& p : mb.partitions) {
        const kareus::SearchSpace space = kareus::default_search_space(gpu, params, p);
        if (clocks.empty()) clocks = space.clocks_mhz;
        space_total += space.size();
        if (flags.search == "exhaustive") {
          auto all = kareus::exhaustive(**profiler, p, space);
          if (!all) return fail(kCommand, all.error().message);
          found.push_back(std::move(*all));
        } else {
          auto mbo =
              kareus::run_mbo(**profiler, p, space,
                              kareus::app_c_options(p, static_cast<std::uint64_t>(flags.seed)));
          if (!mbo) return fail(kCommand, mbo.error().message);
          found.push_back(std::move(mbo->evaluated));
        }
        evaluated += found.back().size();
        // Nanobatching: NCCL-like SM count, launched as soon as possible, at every clock.
        kareus::SearchSpace fixed{space.clocks_mhz, {params.default_comm_sms}, {0}};
        auto fixed_costs = kareus::exhaustive(**profiler, p, fixed);
        if (!fixed_costs) return fail(kCommand, fixed_costs.error().message);
        defaults.push_back(std::move(*fixed_costs));
      }
      if (clocks.empty()) {
        for (int f : gpu.clocks_mhz)
          if (f >= 900.0 / 1410.0 * gpu.max_clock_mhz()) clocks.push_back(f);
      }
      megatron[s][kind] = kareus::microbatch_frontier(gpu, params, mb, {}, clocks, true);
      nanobatch[s][kind] = kareus::microbatch_frontier(gpu, params, mb, defaults, clocks, false);
      kareus_opts[s][kind] = kareus::microbatch_frontier(gpu, params, mb, found, clocks, true);
      const int fmax = gpu.max_clock_mhz();
      megatron_max[s][kind] =
          kareus::microbatch_frontier(gpu, params, mb, {}, {fmax}, true).front();
      nanobatch_max[s][kind] =
          mb.partitions.empty()
              ? megatron_max[s][kind]
              : kareus::microbatch_frontier(gpu, params, mb, defaults, {fmax}, false).front();
    }
  }
  // τ: a thousandth of the shortest forward at max clock.
  double shortest = 1e300;
  for (const auto& stage : megatron_max) shortest = std::min(shortest, stage[0].time_s);
  const double tau = shortest / 1000.0;
  auto solve = [&](const kareus::StageOptions& o) {
    return kareus::iteration_frontier(o, flags.request.microbatches, tau, gpu.p_blocking_w);
  };
  auto mp = solve(megatron), np = solve(nanobatch), kp = solve(kareus_opts);
  if (!mp) return fail(kCommand, mp.error().message);
  if (!np) return fail(kCommand, np.error().message);
  if (!kp) return fail(kCommand, kp.error().message);
  // Energies are per pipeline (one tensor-parallel rank); × tp × dp for the job.
  const double replicas = double(flags.request.tp) * flags.request.dp;
  auto to_method = [&](const std::string& name, const std::string& color,
                       const kareus::IterationFrontier& f) {
    Method m{name, color, {}};
    for (const auto& r : f.realized) m.points.emplace_back(r.time_s, r.energy_j * replicas);
    return m;
  };
  const auto m_point = kareus::evaluate_fixed(mp->problem, megatron_max);
  const auto n_point = kareus::evaluate_fixed(mp->problem, nanobatch_max);
  std::vector<Method> methods = {
      {"Megatron-LM", "#444444", {{m_point.time_s, m_point.energy_j * replicas}}},
      to_method("Megatron-LM + Perseus", "#1f77b4", *mp),
      {"Nanobatching", "#ff7f0e", {{n_point.time_s, n_point.energy_j * replicas}}},
      to_method("Nanobatching + Perseus", "#2ca02c", *np),
      to_method("Kareus", "#d62728", *kp)};

  const double gpus = double(pp) * replicas;
  const double p_static = gpu.dvfs.static_power_w;
  const auto [m_t, m_e] = fastest(methods[0]);
  fmt::print("  search: {} of {} partition schedules evaluated ({:.1f} %, {})\n", evaluated,
             space_total, 100.0 * double(evaluated) / double(space_total), flags.search);
  fmt::print("  profiler: {}\n", (*profiler)->name());
  fmt::print(
      "  all numbers modelled; energy of all {} GPUs per iteration; static = {} GPUs × "
      "{:.1f} W × time\n",
      gpus, gpus, p_static);
  fmt::print(
      "\n  max-throughput (fastest point)    time s   energy J   static J  dynamic J  "
      "time red. %  energy red. % (vs Megatron-LM)\n");
  for (const Method& m : methods) {
    const auto [t, e] = fastest(m);
    const double st = gpus * p_static * t;
    fmt::print("  {:<32s} {:7.3f} {:10.0f} {:10.0f} {:10.0f} {:12.1f} {:14.1f}\n", m.name, t, e, st,
               e - st, 100.0 * (1.0 - t / m_t), 100.0 * (1.0 - e / m_e));
  }
  const Method& mpm = methods[1];
  const double mp_tmin = min_time(mpm), mp_emin = min_energy(mpm);
  fmt::print(
      "\n  frontier vs Megatron-LM + Perseus  iso-time energy red. %  iso-energy time red. %\n");
  for (std::size_t i : {3u, 4u}) {
    const auto e = energy_within(methods[i], mp_tmin);
    const auto t = time_within(methods[i], mp_emin);
    const double e_mp = *energy_within(mpm, mp_tmin);
    const double t_mp = *time_within(mpm, mp_emin);
    fmt::print("  {:<32s} {:>22s} {:>23s}\n", methods[i].name,
               e ? fmt::format("{:.1f}", 100.0 * (1.0 - *e / e_mp)) : "—",
               t ? fmt::format("{:.1f}", 100.0 * (1.0 - *t / t_mp)) : "—");
  }
  fmt::print(
      "  (iso-time: least energy within M+P's fastest time {:.3f} s; iso-energy: fastest "
      "within M+P's least energy {:.0f} J; — = no point meets it)\n",
      mp_tmin, mp_emin);

  if (flags.out.empty()) return 0;
  auto output = core::AtomicOutputDirectory::create(flags.out, output_policy(flags.force));
  if (!output) return fail(kCommand, output.error().message);
  core::PlotSpec plot;
  plot.title = fmt::format("Kareus vs baselines: {} (modelled)", job->description);
  plot.x_label = "iteration time (s, modelled)";
  plot.y_label = fmt::format("energy per iteration, {} GPUs (J, modelled)", gpus);
  std::string csv = "method,time_s,energy_j,static_j,dynamic_j\n";
  for (const Method& m : methods) {
    core::PlotSeries series;
    series.label = m.name;
    series.color = m.color;
    series.points = m.points;
    series.style = m.points.size() > 1 ? core::PlotSeries::Style::kLineAndMarkers
                                       : core::PlotSeries::Style::kMarkers;
    series.marker_radius_px = m.points.size() > 1 ? 2.0 : 5.0;
    plot.series.push_back(series);
    for (auto [t, e] : m.points)
      csv += fmt::format("{},{:.9g},{:.9g},{:.9g},{:.9g}\n", m.name, t, e, gpus * p_static * t,
                         e - gpus * p_static * t);
  }
  for (const auto& [name, contents] :
       {std::pair<std::string, std::string>{"frontier.svg", core::render_svg_plot(plot)},
        {"frontier.csv", csv}}) {
    if (auto written = output->write_file(name, contents); !written)
      return fail(kCommand, written.error().message);
  }
  if (auto committed = output->commit(); !committed)
    return fail(kCommand, committed.error().message);
  fmt::print("\n  wrote {}/frontier.svg and frontier.csv\n", flags.out);
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
  app.add_option("--out", flags->out, "Output directory (frontier.svg, frontier.csv)");
  app.add_option("--search", flags->search, "Per-partition search: mbo (default) or exhaustive")
      ->check(CLI::IsMember({"mbo", "exhaustive"}));
  add_option_with_aliases(app, "--seed", {}, flags->seed, "MBO seed (1)", integer_in(0, 1LL << 40));
  app.add_option("--profiler", flags->profiler,
                 "Partition measurements: model (default) or gpu (GPU 0 via libcuda and NVML, "
                 "5 s window and 5 s cooldown per candidate; docs/kareus.md)")
      ->check(CLI::IsMember({"model", "gpu"}));
  add_force_flag(app, flags->force);
  return [flags]() { return run_kareus(*flags); };
}

}  // namespace powertrain::cli
