// libFuzzer target through the whole Perseus pipeline: profile CSV -> filter and fit -> solve ->
// realize and baselines. Nothing may crash, overflow (UBSan) or run away; every frontier must be
// monotone (time falls, energy rises) and realized points never slower than planned with ceil.
// The first byte picks microbatches, quantization and cost model; tau is derived from the data so
// that a solve stays small whatever the numbers are.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/csv.h"
#include "frontier/problem.h"
#include "frontier/solver.h"
#include "profile/profile.h"
#include "report/frontier_report.h"
#include "study/frontier_run.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace powertrain;
  if (size < 2) return 0;
  const std::uint8_t mode = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  auto table = core::parse_csv(text, "fuzz.csv");
  if (!table) return 0;
  auto profile = profile::parse_profile(*table);
  if (!profile) return 0;
  const int stages = profile->num_stages();
  if (stages < 1 || stages > 6) return 0;

  double longest_s = 0.0;
  for (int stage = 0; stage < stages; ++stage) {
    for (auto kind : {pipeline::InstructionKind::kForward, pipeline::InstructionKind::kBackward}) {
      if (const auto* entry = profile->find(stage, kind)) {
        for (const auto& option : entry->options) longest_s = std::max(longest_s, option.time_s);
      }
    }
  }
  if (!(longest_s > 0.0)) return 0;

  pipeline::PipelineSpec spec;
  spec.num_gpus = stages;
  spec.num_microbatches = 1 + (mode & 3);
  spec.schedule = (mode & 4) ? pipeline::ScheduleKind::kGPipe : pipeline::ScheduleKind::kOneFOneB;
  frontier::PlanningSettings settings;
  settings.unit_time_s = longest_s / 24.0;  // at most ~24 units per instruction
  settings.p_blocking_w = (mode & 8) ? 0.0 : 50.0;
  settings.quantization =
      (mode & 16) ? frontier::Quantization::kFloor : frontier::Quantization::kCeil;
  settings.cost_model = (mode & 32) ? frontier::CostModelKind::kPiecewiseLinear
                                    : frontier::CostModelKind::kExponential;
  auto problem = frontier::build_planning_problem(*profile, spec, settings);
  if (!problem) return 0;
  frontier::Frontier solved = frontier::solve_frontier(*problem, {});
  if (solved.points.empty()) __builtin_trap();
  for (std::size_t i = 1; i < solved.points.size(); ++i) {
    if (solved.points[i].time_units >= solved.points[i - 1].time_units) __builtin_trap();
  }
  const study::FrontierRun run = study::analyze(*problem, solved, "fuzz.csv", &*profile);
  if (run.realized.size() != solved.points.size()) __builtin_trap();
  if (settings.quantization == frontier::Quantization::kCeil) {
    const double tau = settings.unit_time_s;
    for (std::size_t i = 0; i < solved.points.size(); ++i) {
      if (run.realized[i].time_s > solved.points[i].time_units * tau * (1.0 + 1e-9) + 1e-12) {
        __builtin_trap();
      }
    }
  }
  return 0;
}
