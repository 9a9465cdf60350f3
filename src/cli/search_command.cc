// `powertrain search`: energy-aware configuration search (docs/search.md).
#include <fmt/core.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/atomic_output.h"
#include "report/search_report.h"
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

  report::SearchProgressLine progress(!flags.quiet);
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

  report::print_search_summary(stdout, *spec, result, *world, threads, evaluator.stats(),
                               output->target(), flags.top);
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
