#include "report/search_report.h"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "core/progress.h"
#include "search/outputs.h"

namespace powertrain::report {

SearchProgressLine::SearchProgressLine(bool enabled)
    : enabled_(enabled), terminal_(isatty(2) != 0) {}

void SearchProgressLine::update(const search::SearchSpec& spec, const search::SearchProgress& p,
                                const std::vector<search::TrialResult>& trials, bool final_line) {
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

void print_search_summary(std::FILE* to, const search::SearchSpec& spec,
                          const search::SearchResult& result, const search::MpiWorld& world,
                          int threads, const search::BatchStats& stats,
                          const std::filesystem::path& out, int top) {
  fmt::print(to, "powertrain search: {} on {} x {}, global batch {}, {} search, objective {}{}\n",
             spec.model, spec.num_gpus, spec.gpu, spec.global_batch,
             search::algorithm_name(spec.algorithm), search::objective_name(spec.objective),
             spec.pruning ? ", pruning on" : ", pruning off");
  fmt::print(
      to,
      "  trials        {} decided of a {}-configuration grid: {} planned, {} OOM (memory model), "
      "{} pruned as OOM, {} pruned as dominated, {} pruned by bounds; {} structurally invalid{}\n",
      result.decided, result.grid_size, result.planned, result.oom, result.pruned_oom,
      result.pruned_dominated, result.pruned_bound, result.invalid,
      result.early_stopped ? "; stopped early" : "");
  fmt::print(
      to,
      "  time          {:.2f} s measured wall time on {} rank(s) x {} thread(s), {:.1f} trials/s; "
      "{} trial(s) {} here, {} from the checkpoint{}\n",
      result.seconds, world.size, threads,
      result.seconds > 0 ? result.decided / result.seconds : 0.0, stats.evaluated,
      spec.emulation.enabled() ? "emulated" : "planned", stats.restored,
      spec.emulation.enabled()
          ? fmt::format(", {} reused an identical emulation", stats.deduplicated)
          : std::string());
  if (result.best < 0) {
    fmt::print(to, "  no configuration fits; see {}/trials.csv for why\n", out.string());
    return;
  }
  fmt::print(to, "  ranked by {} ({}; energy is all {} GPUs per iteration):\n",
             spec.objective == search::Objective::kEnergy ? "least energy (at T*)" : "T_min",
             spec.emulation.enabled()
                 ? "T_min = the step predicted by powertrain emulate; T* and energies from plan "
                   "--emulated, modelled"
                 : "modelled device, realized Perseus frontier points",
             spec.num_gpus);
  fmt::print(to, "{}", search::ranked_table(spec, result, top));
  const auto& fastest = result.frontier.front();
  const auto& leanest = result.frontier.back();
  fmt::print(
      to,
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
        to,
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
  fmt::print(to, "  files         {}/: trials.csv frontier.csv frontier.svg summary.json\n",
             out.string());
}

}  // namespace powertrain::report
