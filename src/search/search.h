// The search driver: grid, seeded random and CMA-ES over a SearchSpec, with Maya's
// fidelity-preserving pruning tactics, concurrent trials and early stopping, and the
// cross-configuration time–energy frontier.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "search/space.h"
#include "search/trial.h"

namespace powertrain::search {

struct SearchProgress {
  long long trials = 0;  // decided so far (planned, OOM or pruned)
  long long budget = 0;  // the most the search will decide
  int best_trial = -1;   // index into the trials so far, -1 before the first planned one
  double best_value = 0.0;
};

struct SearchOptions {
  int threads = 1;  // concurrent plannings; results do not depend on it
  /// Plans a batch of fitting configurations in place (each has its config and check_config's
  /// fields; status kOk). Unset: evaluate_config on `threads` threads. The MPI runner, the
  /// checkpoint and the emulation backend plug in here (src/search/batch.h). Results must not
  /// depend on how the batch is spread. `skip` is the bound tactic's filter for this batch (may be
  /// empty); trials planned without it are pruned by it afterwards, so using it is only a saving.
  std::function<void(const SearchSpec&, std::vector<TrialResult>& batch, const BoundFilter& skip)>
      evaluate_batch;
  std::function<void(const SearchProgress&, const std::vector<TrialResult>&)> progress;
};

/// A point of the cross-configuration frontier.
struct ParetoPoint {
  int trial = 0;  // index into SearchResult::trials
  int point = 0;  // the configuration's frontier point (clock plan), 0 = its T*
  double time_s = 0.0;
  double energy_j = 0.0;
};

struct SearchResult {
  /// Every configuration the search decided, in the order it proposed them (structurally
  /// invalid ones too, at no cost). Pruned-dominated trials name their dominator in `reason`.
  std::vector<TrialResult> trials;
  std::vector<int> dominator;         // per trial: the trial a pruned-dominated one copies, else -1
  std::vector<ParetoPoint> frontier;  // fastest first
  int best = -1;                      // best trial by the objective, -1 when none was planned
  long long grid_size = 0;
  long long decided = 0;  // valid configurations decided (planned + OOM + pruned)
  long long planned = 0;
  long long oom = 0, pruned_oom = 0, pruned_dominated = 0, pruned_bound = 0, invalid = 0;
  bool early_stopped = false;
  double seconds = 0.0;
};

/// The value the objective ranks by (lower is better): T_min for time and both, the least energy
/// (at T*) for energy. +inf for trials that were not planned.
double objective_value(Objective objective, const TrialResult& trial);

/// Runs the search. Deterministic for a fixed spec (seed included) whatever options.threads is.
SearchResult run_search(const SearchSpec& spec, const SearchOptions& options = {});

/// Pareto filter (least time and energy) over every point of every planned trial.
std::vector<ParetoPoint> cross_frontier(const std::vector<TrialResult>& trials);

/// The least-energy point of the cross-configuration frontier that is at most (1 + slack) × the
/// all-max-clock time of the fastest configuration, against that configuration at max clocks.
struct EnergyAwareSaving {
  int reference_trial = -1;  // the time-optimal configuration (least T_min), -1 if none planned
  double reference_time_s = 0.0;    // its all-max-clock iteration time (modelled)
  double reference_energy_j = 0.0;  // its all-max-clock energy, all GPUs (modelled)
  ParetoPoint chosen;               // the least-energy frontier point within the time budget
  double time_budget_s = 0.0;       // (1 + slack) × reference_time_s
  double saving_fraction = 0.0;     // 1 − chosen energy / reference energy
};
EnergyAwareSaving energy_aware_saving(const SearchResult& result, double slack);

/// The pruning tactics alone: why `config` would be skipped given the decided trials (status
/// kPrunedOom or kPrunedDominated, `dominator` set to the trial it follows), or kOk if not.
TrialStatus prune_status(const SearchSpec& spec, const Config& config,
                         const std::vector<TrialResult>& decided, int* dominator);

}  // namespace powertrain::search
