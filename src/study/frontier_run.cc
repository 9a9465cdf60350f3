// Derived results of one frontier run (realized plans, baselines, straggler table).
#include "study/frontier_run.h"

#include <utility>

namespace powertrain::study {

std::vector<double> default_straggler_slowdowns() { return {1.05, 1.1, 1.2, 1.3, 1.4, 1.5}; }

FrontierRun analyze(const frontier::PlanningProblem& problem, const frontier::Frontier& frontier,
                    std::string profile_source, const profile::Profile* profile) {
  FrontierRun run;
  run.profile_source = std::move(profile_source);
  run.problem = &problem;
  run.frontier = &frontier;
  run.realized = frontier::realize_frontier(problem, frontier);
  run.baseline = frontier::all_max_clock_baseline(problem);
  for (double slowdown : default_straggler_slowdowns()) {
    run.stragglers.push_back(frontier::straggler_outcome(problem, frontier, slowdown));
  }
  if (profile != nullptr) run.baselines = compute_baselines(problem, *profile);
  return run;
}

}  // namespace powertrain::study
