// `powertrain search`: energy-aware configuration search (docs/search.md).
#include <fmt/core.h>

#include <cstdio>
#include <optional>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/atomic_output.h"
#include "report/search_report.h"
#include "search/outputs.h"
#include "search/search_run.h"

namespace powertrain::cli {
namespace {

struct SearchFlags {
  search::SearchSettings settings;
  int top = 10;
  std::string out = "powertrain-search";
  bool quiet = false;
  bool force = false;
};

int run_search_command(const SearchFlags& flags) {
  const char* kCommand = "search";
  std::optional<core::AtomicOutputDirectory> output;
  report::SearchProgressLine progress(!flags.quiet);
  const search::SearchHooks hooks{
      .before_search = [&]() -> core::Status {
        auto created = core::AtomicOutputDirectory::create(flags.out, output_policy(flags.force));
        if (!created) return created.error();
        output.emplace(std::move(*created));
        return core::Ok{};
      },
      .warning = [](const std::string& w) { fmt::print(stderr, "warning: {}\n", w); },
      .progress = [&](const search::SearchSpec& spec, const search::SearchProgress& p,
                      const std::vector<search::TrialResult>& trials,
                      bool final_line) { progress.update(spec, p, trials, final_line); }};
  const auto searched = search::run_search_settings(flags.settings, hooks);
  if (!searched) {
    const core::FlowError& error = searched.error();
    return error.usage ? usage_error(kCommand, error.message) : fail(kCommand, error.message);
  }
  const std::unique_ptr<search::SearchRun>& run = *searched;
  if (run->worker) return 0;
  const search::SearchSpec& spec = run->spec;
  const std::vector<std::pair<std::string, std::string>> files = {
      {"trials.csv", search::trials_csv(spec, run->result)},
      {"frontier.csv", search::frontier_csv(spec, run->result)},
      {"frontier.svg", search::frontier_svg(spec, run->result)},
      {"summary.json", search::summary_json(spec, run->result, run->threads)},
  };
  for (const auto& [name, contents] : files)
    if (auto written = output->write_file(name, contents); !written)
      return fail(kCommand, written.error().message);
  if (auto committed = output->commit(); !committed)
    return fail(kCommand, committed.error().message);

  report::print_search_summary(stdout, spec, run->result, run->mpi->world(), run->threads,
                               run->stats, output->target(), flags.top);
  return 0;
}

}  // namespace

Action add_search_command(CLI::App& app) {
  auto flags = std::make_shared<SearchFlags>();
  app.add_option("spec", flags->settings.spec,
                 "Search space JSON (docs/search.md, examples/search_*.json)")
      ->required();
  app.add_option("--algorithm", flags->settings.algorithm,
                 "grid, random, cmaes or nsga2 (default: the spec's)");
  app.add_option("--objective", flags->settings.objective,
                 "time, energy or both (default: the spec's)");
  add_option_with_aliases(app, "--seed", {}, flags->settings.seed, "Seed for random and cmaes",
                          integer_in(0, 1'000'000'000'000LL));
  add_option_with_aliases(app, "--max-trials", {}, flags->settings.max_trials,
                          "Configurations to decide at most (default: grid all, others 15 %)",
                          integer_in(1, 1 << 24));
  add_option_with_aliases(app, "--threads", {}, flags->settings.threads,
                          "Concurrent trials (default: all cores); results do not depend on it",
                          integer_in(1, 1024));
  add_option_with_aliases(app, "--top", {}, flags->top, "Rows of the ranked table (default 10)",
                          integer_in(1, 100000));
  app.add_flag("--no-pruning", flags->settings.no_pruning,
               "Disable Maya's fidelity-preserving tactics");
  app.add_option("--out", flags->out, "Output directory (default powertrain-search)");
  add_force_flag(app, flags->force);
  app.add_flag("--quiet", flags->quiet, "No progress line");
  app.add_option("--checkpoint", flags->settings.checkpoint,
                 "Append-only log of finished trials; a search restarted with it skips them");
  app.add_option("--interposer", flags->settings.interposer,
                 "Emulation backend: libpowertrain_cuda.so for `emulate` (default: its search)");
  app.add_option("--work-dir", flags->settings.work_dir,
                 "Emulation backend: where per-trial directories go (default $TMPDIR or /tmp)");
  app.add_flag("--keep-trials", flags->settings.keep_trials,
               "Emulation backend: keep each trial's emulation and plan directory");
  return [flags]() { return run_search_command(*flags); };
}

}  // namespace powertrain::cli
