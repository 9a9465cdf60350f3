// Wiring profiles to schedules: one cost model per profiled (stage, instruction).
#include "frontier/problem.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace powertrain::frontier {

using pipeline::InstructionKind;

core::Result<PlanningProblem> build_planning_problem(const Profile& profile,
                                                     const pipeline::PipelineSpec& spec,
                                                     const PlanningSettings& settings) {
  if (!(settings.unit_time_s > 0.0) || !std::isfinite(settings.unit_time_s) ||
      settings.unit_time_s > 10.0) {
    return core::Error{
        fmt::format("--unit-time: expected a positive number of seconds up to 10, got {}",
                    settings.unit_time_s)};
  }
  if (!(settings.p_blocking_w >= 0.0) || !std::isfinite(settings.p_blocking_w) ||
      settings.p_blocking_w > 1e5) {
    return core::Error{fmt::format("--p-blocking: expected a power of 0 to 100000 W, got {}",
                                   settings.p_blocking_w)};
  }
  PlanningProblem problem;
  problem.spec = spec;
  problem.settings = settings;
  auto dag = pipeline::build_pipeline_dag(spec);
  if (!dag) return dag.error();
  problem.dag = std::move(*dag);
  const bool recompute = spec.schedule == pipeline::ScheduleKind::kOneFOneBEarlyRecompute;
  if (auto valid = validate_profile_for_pipeline(profile, spec.num_profile_stages(), recompute);
      !valid) {
    return valid.error();
  }

  std::map<std::pair<int, InstructionKind>, int> model_index;
  std::map<std::pair<InstructionKind, double>, int> constant_index;
  problem.model_of_operation.resize(problem.dag.operations.size());
  for (std::size_t id = 0; id < problem.dag.operations.size(); ++id) {
    const pipeline::Operation& op = problem.dag.operations[id];
    if (!pipeline::is_profiled(op.kind)) {
      auto key = std::make_pair(op.kind, op.constant_time_s);
      auto it = constant_index.find(key);
      if (it == constant_index.end()) {
        // Constant work is charged at blocking power, so its effective energy is zero.
        const int units = quantize(op.constant_time_s, settings.unit_time_s, settings.quantization);
        it = constant_index.emplace(key, static_cast<int>(problem.models.size())).first;
        problem.models.push_back(InstructionCostModel::constant(units, 0.0));
        problem.model_stage.push_back(-1);
        problem.model_kind.push_back(op.kind);
        problem.max_clock_option.push_back(
            {0, op.constant_time_s, settings.p_blocking_w * op.constant_time_s, 0});
      }
      problem.model_of_operation[id] = it->second;
      continue;
    }
    auto key = std::make_pair(op.stage, op.kind);
    auto it = model_index.find(key);
    if (it == model_index.end()) {
      const InstructionProfile* entry = profile.find(op.stage, op.kind);
      auto model = build_cost_model(*entry, settings.unit_time_s, settings.p_blocking_w,
                                    settings.cost_model, settings.quantization);
      if (!model) return core::Error{fmt::format("{}: {}", profile.source, model.error().message)};
      it = model_index.emplace(key, static_cast<int>(problem.models.size())).first;
      problem.models.push_back(std::move(*model));
      problem.model_stage.push_back(op.stage);
      problem.model_kind.push_back(op.kind);
      problem.max_clock_option.push_back(
          *std::max_element(entry->options.begin(), entry->options.end(),
                            [](const MeasuredOption& a, const MeasuredOption& b) {
                              return a.frequency_mhz < b.frequency_mhz;
                            }));
    }
    problem.model_of_operation[id] = it->second;
  }
  return problem;
}

}  // namespace powertrain::frontier
