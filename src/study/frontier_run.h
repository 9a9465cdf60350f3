// One frontier run's derived results: realized plans, the all-max-clock baseline, the straggler
// table and the Zeus/EnvPipe baselines, ready for the writers in report/frontier_report.h.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "frontier/evaluate.h"
#include "frontier/problem.h"
#include "frontier/solver.h"
#include "profile/profile.h"
#include "study/baselines.h"

namespace powertrain::study {

/// Everything computed for one run, ready to be written.
struct FrontierRun {
  std::string profile_source;
  const frontier::PlanningProblem* problem = nullptr;
  const frontier::Frontier* frontier = nullptr;
  std::vector<frontier::RealizedPlan> realized;  // per point
  frontier::RealizedPlan baseline;               // all max clock, measured
  std::vector<frontier::StragglerOutcome> stragglers;
  std::optional<Baselines> baselines;  // ZeusGlobal, ZeusPerStage, EnvPipe (needs the profile)
  bool fastest_point_pinned = false;   // pin_fastest_point changed the fastest point
};

/// The straggler slowdowns summary.json reports (Perseus Table 4).
std::vector<double> default_straggler_slowdowns();

/// Builds realized plans, baseline and straggler outcomes, and the Zeus and EnvPipe baselines when
/// `profile` (the one `problem` was built from) is given.
FrontierRun analyze(const frontier::PlanningProblem& problem, const frontier::Frontier& frontier,
                    std::string profile_source, const profile::Profile* profile = nullptr);

}  // namespace powertrain::study
