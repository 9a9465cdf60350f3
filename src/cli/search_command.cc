// `powertrain search`: energy-aware configuration search (docs/search.md).
#include <fmt/core.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/atomic_output.h"
#include "core/progress.h"
#include "search/batch.h"
#include "search/outputs.h"
#include "search/search.h"

namespace powertrain::cli {
namespace {

struct SearchFlags {
  std::string spec;
  std::string algorithm;  // overrides the spec's
  std::string objective;
  long long seed = -1;
  int max_trials = 0;
  int threads = 0;  // 0: hardware concurrency
  int top = 10;
  bool no_pruning = false;
  std::string out = "powertrain-search";
  bool quiet = false;
  bool force = false;
  std::string checkpoint;  // append-only trial log; resumes from it when it exists
  std::string interposer;  // emulation backend: `emulate --interposer`
  std::string work_dir;    // emulation backend: parent of the per-trial directories
  bool keep_trials = false;
};

// "search: 120/960 trials, 85.3 trials/s, best tp2 pp1 mb4 v1 1.2345 s, ETA 10 s" on stderr: in
// place on a terminal, every 5 s otherwise.
class SearchProgressLine {
 public:
  explicit SearchProgressLine(bool enabled) : enabled_(enabled), terminal_(isatty(2) != 0) {}
  void update(const search::SearchSpec& spec, const search::SearchProgress& p,
              const std::vector<search::TrialResult>& trials, bool final_line = false) {
    if (!enabled_) return;
    const auto now = Clock::now();
    const double since = std::chrono::duration<double>(now - last_).count();
    if (!final_line && since < (terminal_ ? 0.25 : 5.0)) return;
    last_ = now;
    const double elapsed = std::chrono::duration<double>(now - started_).count();
    const double rate = elapsed > 0.0 ? p.trials / elapsed : 0.0;
    std::string best = "none yet";
    if (p.best_trial >= 0) {
      const char* unit = spec.objective == search::Objective::kEnergy ? "J at T*" : "s T_min";
      best = fmt::format(
          "{} {:.4g} {}",
          search::config_label(spec, trials[static_cast<std::size_t>(p.best_trial)].config),
          p.best_value, unit);
    }
    const double eta = rate > 0.0 ? (p.budget - p.trials) / rate : 0.0;
    const std::string line =
        fmt::format("search: {}/{} trials, {:.1f} trials/s, best {} (modelled), ETA {}", p.trials,
                    p.budget, rate, best, final_line ? "done" : core::format_duration(eta));
    if (terminal_)
      fmt::print(stderr, "\r{}\x1b[K{}", line, final_line ? "\n" : "");
    else
      fmt::print(stderr, "{}\n", line);
    std::fflush(stderr);
  }

 private:
  using Clock = std::chrono::steady_clock;
  bool enabled_;
  bool terminal_;
  Clock::time_point started_ = Clock::now();
  Clock::time_point last_ = Clock::now() - std::chrono::hours(1);
};

// The command-line flags that override the spec file's values (parsed as the spec's own JSON,
// so a bad value reads like one in the file).
core::Status apply_flag_overrides(const SearchFlags& flags, search::SearchSpec& spec) {
  if (!flags.algorithm.empty()) {
    auto overridden = search::parse_search_spec(
        fmt::format("{{\"algorithm\": \"{}\"}}", flags.algorithm), "--algorithm");
    if (!overridden) return overridden.error();
    spec.algorithm = overridden->algorithm;
  }
  if (!flags.objective.empty()) {
    auto overridden = search::parse_search_spec(
        fmt::format("{{\"objective\": \"{}\"}}", flags.objective), "--objective");
    if (!overridden) return overridden.error();
    spec.objective = overridden->objective;
  }
  if (flags.seed >= 0) spec.seed = static_cast<std::uint64_t>(flags.seed);
  if (flags.max_trials > 0) spec.max_trials = flags.max_trials;
  if (flags.no_pruning) spec.pruning = false;
  return core::Ok{};
}

// The run's printed summary: counts, measured time, the ranked table and the frontier's ends.
void print_summary(const search::SearchSpec& spec, const search::SearchResult& result,
                   const search::MpiWorld& world, int threads, const search::BatchStats& stats,
                   const std::filesystem::path& out, int top) {
  fmt::print("powertrain search: {} on {} x {}, global batch {}, {} search, objective {}{}\n",
             spec.model, spec.num_gpus, spec.gpu, spec.global_batch,
             search::algorithm_name(spec.algorithm), search::objective_name(spec.objective),
             spec.pruning ? ", pruning on" : ", pruning off");
  fmt::print(
      "  trials        {} decided of a {}-configuration grid: {} planned, {} OOM (memory model), "
      "{} pruned as OOM, {} pruned as dominated, {} pruned by bounds; {} structurally invalid{}\n",
      result.decided, result.grid_size, result.planned, result.oom, result.pruned_oom,
      result.pruned_dominated, result.pruned_bound, result.invalid,
      result.early_stopped ? "; stopped early" : "");
  fmt::print(
      "  time          {:.2f} s measured wall time on {} rank(s) x {} thread(s), {:.1f} trials/s; "
      "{} trial(s) {} here, {} from the checkpoint{}\n",
      result.seconds, world.size, threads,
      result.seconds > 0 ? result.decided / result.seconds : 0.0, stats.evaluated,
      spec.emulation.enabled() ? "emulated" : "planned", stats.restored,
      spec.emulation.enabled()
          ? fmt::format(", {} reused an identical emulation", stats.deduplicated)
          : std::string());
  if (result.best < 0) {
    fmt::print("  no configuration fits; see {}/trials.csv for why\n", out.string());
    return;
  }
  fmt::print("  ranked by {} ({}; energy is all {} GPUs per iteration):\n",
             spec.objective == search::Objective::kEnergy ? "least energy (at T*)" : "T_min",
             spec.emulation.enabled()
                 ? "T_min = the step predicted by powertrain emulate; T* and energies from plan "
                   "--emulated, modelled"
                 : "modelled device, realized Perseus frontier points",
             spec.num_gpus);
  fmt::print("{}", search::ranked_table(spec, result, top));
  const auto& fastest = result.frontier.front();
  const auto& leanest = result.frontier.back();
  fmt::print(
      "  frontier      {} points across {} configuration(s): fastest {:.4f} s at {:.1f} J ({}), "
      "least energy {:.1f} J at {:.4f} s ({}) (realized at the planned clocks, modelled)\n",
      result.frontier.size(),
      [&] {
        std::vector<int> seen;
        for (const auto& p : result.frontier)
          if (std::find(seen.begin(), seen.end(), p.trial) == seen.end()) seen.push_back(p.trial);
        return seen.size();
      }(),
      fastest.time_s, fastest.energy_j,
      search::config_label(spec, result.trials[static_cast<std::size_t>(fastest.trial)].config),
      leanest.energy_j, leanest.time_s,
      search::config_label(spec, result.trials[static_cast<std::size_t>(leanest.trial)].config));
  if (const search::EnergyAwareSaving saving = search::energy_aware_saving(result, 0.05);
      saving.reference_trial >= 0) {
    fmt::print(
        "  energy-aware  within 5 % of {} at max clocks ({:.4f} s, {:.1f} J): {} plan point {} "
        "{:.4f} s {:.1f} J, {:.1f} % less energy (realized, modelled)\n",
        search::config_label(
            spec, result.trials[static_cast<std::size_t>(saving.reference_trial)].config),
        saving.reference_time_s, saving.reference_energy_j,
        search::config_label(spec,
                             result.trials[static_cast<std::size_t>(saving.chosen.trial)].config),
        saving.chosen.point, saving.chosen.time_s, saving.chosen.energy_j,
        100.0 * saving.saving_fraction);
  }
  fmt::print("  files         {}/: trials.csv frontier.csv frontier.svg summary.json\n",
             out.string());
}

int run_search_command(const SearchFlags& flags) {
  const char* kCommand = "search";
  auto spec = search::read_search_spec(flags.spec);
  if (!spec) return fail(kCommand, spec.error().message);
  if (auto overridden = apply_flag_overrides(flags, *spec); !overridden)
    return usage_error(kCommand, overridden.error().message);
  // A bad model or GPU name fails here, once, not as an invalid trial per configuration.
  if (auto probe = search::check_config(*spec, search::Config{});
      probe.status == search::TrialStatus::kInvalid &&
      (probe.reason.find("unknown") != std::string::npos ||
       probe.reason.find("no such") != std::string::npos))
    return fail(kCommand, fmt::format("{}: {}", spec->source, probe.reason));
  // Under mpirun every rank runs this command; rank 0 searches and writes, the others evaluate
  // the trials it sends them.
  auto world = search::mpi_start();
  if (!world) return fail(kCommand, world.error().message);
  struct Finish {
    search::MpiWorld world;
    ~Finish() { search::mpi_finish(world); }
  } finish{*world};
  // The machine's cores are shared by its ranks.
  const int threads = flags.threads > 0
                          ? flags.threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()) /
                                            std::max(1, world->local_size));
  search::EmulationRunner emulation;
  {
    std::error_code ec;
    emulation.powertrain = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  }
  emulation.interposer = flags.interposer;
  emulation.work_root = flags.work_dir;
  emulation.keep = flags.keep_trials;
  if (world->rank > 0) {
    search::BatchEvaluator worker(*spec, *world, threads, emulation, nullptr);
    auto served = search::mpi_worker_loop(
        *world, [&](const search::TrialResult& fits) { return worker.evaluate_one(fits); });
    if (!served)
      return fail(kCommand, fmt::format("rank {}: {}", world->rank, served.error().message));
    return 0;
  }
  struct StopWorkers {
    search::MpiWorld world;
    ~StopWorkers() { search::mpi_stop_workers(world); }
  } stop_workers{*world};
  auto output = core::AtomicOutputDirectory::create(flags.out, output_policy(flags.force));
  if (!output) return fail(kCommand, output.error().message);
  std::unique_ptr<search::Checkpoint> checkpoint;
  if (!flags.checkpoint.empty()) {
    auto opened = search::Checkpoint::open(flags.checkpoint, *spec);
    if (!opened) return fail(kCommand, opened.error().message);
    checkpoint = std::move(*opened);
    for (const std::string& w : checkpoint->warnings()) fmt::print(stderr, "warning: {}\n", w);
  }

  SearchProgressLine progress(!flags.quiet);
  search::SearchOptions options;
  options.threads = threads;
  search::BatchEvaluator evaluator(*spec, *world, threads, emulation, checkpoint.get());
  options.evaluate_batch = [&](const search::SearchSpec& s, std::vector<search::TrialResult>& b,
                               const search::BoundFilter& skip) { evaluator(s, b, skip); };
  search::SearchProgress last;
  const std::vector<search::TrialResult>* last_trials = nullptr;
  options.progress = [&](const search::SearchProgress& p,
                         const std::vector<search::TrialResult>& trials) {
    last = p;
    last_trials = &trials;
    progress.update(*spec, p, trials);
  };
  search::SearchResult result = search::run_search(*spec, options);
  if (!evaluator.error().empty()) return fail(kCommand, evaluator.error());
  {
    search::SearchProgress final_p = last;
    final_p.trials = result.decided;
    progress.update(*spec, final_p, result.trials, true);
  }
  const std::vector<std::pair<std::string, std::string>> files = {
      {"trials.csv", search::trials_csv(*spec, result)},
      {"frontier.csv", search::frontier_csv(*spec, result)},
      {"frontier.svg", search::frontier_svg(*spec, result)},
      {"summary.json", search::summary_json(*spec, result, threads)},
  };
  for (const auto& [name, contents] : files)
    if (auto written = output->write_file(name, contents); !written)
      return fail(kCommand, written.error().message);
  if (auto committed = output->commit(); !committed)
    return fail(kCommand, committed.error().message);

  print_summary(*spec, result, *world, threads, evaluator.stats(), output->target(), flags.top);
  (void)last_trials;
  return 0;
}

}  // namespace

Action add_search_command(CLI::App& app) {
  auto flags = std::make_shared<SearchFlags>();
  app.add_option("spec", flags->spec, "Search space JSON (docs/search.md, examples/search_*.json)")
      ->required();
  app.add_option("--algorithm", flags->algorithm,
                 "grid, random, cmaes or nsga2 (default: the spec's)");
  app.add_option("--objective", flags->objective, "time, energy or both (default: the spec's)");
  add_option_with_aliases(app, "--seed", {}, flags->seed, "Seed for random and cmaes",
                          integer_in(0, 1'000'000'000'000LL));
  add_option_with_aliases(app, "--max-trials", {}, flags->max_trials,
                          "Configurations to decide at most (default: grid all, others 15 %)",
                          integer_in(1, 1 << 24));
  add_option_with_aliases(app, "--threads", {}, flags->threads,
                          "Concurrent trials (default: all cores); results do not depend on it",
                          integer_in(1, 1024));
  add_option_with_aliases(app, "--top", {}, flags->top, "Rows of the ranked table (default 10)",
                          integer_in(1, 100000));
  app.add_flag("--no-pruning", flags->no_pruning, "Disable Maya's fidelity-preserving tactics");
  app.add_option("--out", flags->out, "Output directory (default powertrain-search)");
  add_force_flag(app, flags->force);
  app.add_flag("--quiet", flags->quiet, "No progress line");
  app.add_option("--checkpoint", flags->checkpoint,
                 "Append-only log of finished trials; a search restarted with it skips them");
  app.add_option("--interposer", flags->interposer,
                 "Emulation backend: libpowertrain_cuda.so for `emulate` (default: its search)");
  app.add_option("--work-dir", flags->work_dir,
                 "Emulation backend: where per-trial directories go (default $TMPDIR or /tmp)");
  app.add_flag("--keep-trials", flags->keep_trials,
               "Emulation backend: keep each trial's emulation and plan directory");
  return [flags]() { return run_search_command(*flags); };
}

}  // namespace powertrain::cli
