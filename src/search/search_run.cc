#include "search/search_run.h"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <thread>
#include <utility>

#include "search/checkpoint.h"
#include "search/emulation_trial.h"
#include "search/trial.h"

namespace powertrain::search {
namespace {

core::FlowError failed(std::string message, bool usage) {
  return core::FlowError{.message = std::move(message), .usage = usage};
}

// The command-line values that override the spec file's (parsed as the spec's own JSON, so a
// bad value reads like one in the file).
core::Status apply_overrides(const SearchSettings& settings, SearchSpec& spec) {
  if (!settings.algorithm.empty()) {
    auto overridden = parse_search_spec(
        fmt::format("{{\"algorithm\": \"{}\"}}", settings.algorithm), "--algorithm");
    if (!overridden) return overridden.error();
    spec.algorithm = overridden->algorithm;
  }
  if (!settings.objective.empty()) {
    auto overridden = parse_search_spec(
        fmt::format("{{\"objective\": \"{}\"}}", settings.objective), "--objective");
    if (!overridden) return overridden.error();
    spec.objective = overridden->objective;
  }
  if (settings.seed >= 0) spec.seed = static_cast<std::uint64_t>(settings.seed);
  if (settings.max_trials > 0) spec.max_trials = settings.max_trials;
  if (settings.no_pruning) spec.pruning = false;
  return core::Ok{};
}

EmulationRunner emulation_runner(const SearchSettings& settings) {
  EmulationRunner emulation;
  std::error_code ec;
  emulation.powertrain = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  emulation.interposer = settings.interposer;
  emulation.work_root = settings.work_dir;
  emulation.keep = settings.keep_trials;
  return emulation;
}

}  // namespace

MpiSession::~MpiSession() {
  if (world_.rank == 0) mpi_stop_workers(world_);
  mpi_finish(world_);
}

core::FlowResult<std::unique_ptr<SearchRun>> run_search_settings(const SearchSettings& settings,
                                                                 const SearchHooks& hooks) {
  auto run = std::make_unique<SearchRun>();
  auto spec = read_search_spec(settings.spec);
  if (!spec) return failed(spec.error().message, false);
  if (auto overridden = apply_overrides(settings, *spec); !overridden)
    return failed(overridden.error().message, true);
  // A bad model or GPU name fails here, once, not as an invalid trial per configuration.
  if (auto probe = check_config(*spec, Config{});
      probe.status == TrialStatus::kInvalid && (probe.reason.find("unknown") != std::string::npos ||
                                                probe.reason.find("no such") != std::string::npos))
    return failed(fmt::format("{}: {}", spec->source, probe.reason), false);
  auto world = mpi_start();
  if (!world) return failed(world.error().message, false);
  run->spec = std::move(*spec);
  // The machine's cores are shared by its ranks.
  run->threads = settings.threads > 0
                     ? settings.threads
                     : std::max(1, static_cast<int>(std::thread::hardware_concurrency()) /
                                       std::max(1, world->local_size));
  const EmulationRunner emulation = emulation_runner(settings);
  if (world->rank > 0) {
    MpiSession session(*world);  // finalizes MPI when the workers are told to stop
    BatchEvaluator worker(run->spec, *world, run->threads, emulation, nullptr);
    auto served =
        mpi_worker_loop(*world, [&](const TrialResult& fits) { return worker.evaluate_one(fits); });
    if (!served)
      return failed(fmt::format("rank {}: {}", world->rank, served.error().message), false);
    run->worker = true;
    return run;
  }
  run->mpi = std::make_unique<MpiSession>(*world);
  if (hooks.before_search) {
    if (auto ready = hooks.before_search(); !ready) return failed(ready.error().message, false);
  }
  std::unique_ptr<Checkpoint> checkpoint;
  if (!settings.checkpoint.empty()) {
    auto opened = Checkpoint::open(settings.checkpoint, run->spec);
    if (!opened) return failed(opened.error().message, false);
    checkpoint = std::move(*opened);
    for (const std::string& w : checkpoint->warnings())
      if (hooks.warning) hooks.warning(w);
  }

  SearchOptions options;
  options.threads = run->threads;
  BatchEvaluator evaluator(run->spec, *world, run->threads, emulation, checkpoint.get());
  options.evaluate_batch = [&](const SearchSpec& s, std::vector<TrialResult>& b,
                               const BoundFilter& skip) { evaluator(s, b, skip); };
  SearchProgress last;
  options.progress = [&](const SearchProgress& p, const std::vector<TrialResult>& trials) {
    last = p;
    if (hooks.progress) hooks.progress(run->spec, p, trials, false);
  };
  run->result = run_search(run->spec, options);
  if (!evaluator.error().empty()) return failed(evaluator.error(), false);
  SearchProgress final_progress = last;
  final_progress.trials = run->result.decided;
  if (hooks.progress) hooks.progress(run->spec, final_progress, run->result.trials, true);
  run->stats = evaluator.stats();
  return run;
}

}  // namespace powertrain::search
