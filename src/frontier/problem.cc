// Wiring profiles to schedules: one cost model per profiled (stage, instruction).
#include "frontier/problem.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>

#include "frontier/solver.h"

namespace powertrain::frontier {

using pipeline::InstructionKind;

core::Result<PlanningProblem> build_planning_problem(const profile::Profile& profile,
                                                     const pipeline::PipelineSpec& spec,
                                                     const PlanningSettings& settings) {
  if (!(settings.unit_time_s > 0.0) || !std::isfinite(settings.unit_time_s) ||
      settings.unit_time_s > 10.0) {
    return core::Error{
        fmt::format("--unit-time-s: expected a positive number of seconds up to 10, got {}",
                    settings.unit_time_s)};
  }
  if (!(settings.p_blocking_w >= 0.0) || !std::isfinite(settings.p_blocking_w) ||
      settings.p_blocking_w > 1e5) {
    return core::Error{fmt::format("--p-blocking-w: expected a power of 0 to 100000 W, got {}",
                                   settings.p_blocking_w)};
  }
  PlanningProblem problem;
  problem.spec = spec;
  problem.settings = settings;
  auto dag = pipeline::build_pipeline_dag(spec);
  if (!dag) return dag.error();
  problem.dag = std::move(*dag);
  const bool recompute = spec.schedule == pipeline::ScheduleKind::kOneFOneBEarlyRecompute;
  if (auto valid =
          profile::validate_profile_for_pipeline(profile, spec.num_profile_stages(), recompute);
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
        const auto units =
            quantize_checked(op.constant_time_s, settings.unit_time_s, settings.quantization);
        if (!units) {
          return core::Error{fmt::format(
              "constant-time {} of {} s is more than {:.0e} time units of {} s; increase "
              "--unit-time-s",
              pipeline::instruction_name(op.kind), op.constant_time_s, kMaxUnitsPerInstruction,
              settings.unit_time_s)};
        }
        it = constant_index.emplace(key, static_cast<int>(problem.models.size())).first;
        problem.models.push_back(InstructionCostModel::constant(*units, 0.0));
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
      const profile::InstructionProfile* entry = profile.find(op.stage, op.kind);
      auto model =
          build_cost_model(*entry, settings.unit_time_s, settings.p_blocking_w, settings.cost_model,
                           settings.quantization, settings.fit_method);
      // The only error names the line first: "file:line: field 'time': ...".
      if (!model) return core::Error{fmt::format("{}:{}", profile.source, model.error().message)};
      it = model_index.emplace(key, static_cast<int>(problem.models.size())).first;
      problem.models.push_back(std::move(*model));
      problem.model_stage.push_back(op.stage);
      problem.model_kind.push_back(op.kind);
      problem.max_clock_option.push_back(
          *std::max_element(entry->options.begin(), entry->options.end(),
                            [](const profile::MeasuredOption& a, const profile::MeasuredOption& b) {
                              return a.frequency_mhz < b.frequency_mhz;
                            }));
    }
    problem.model_of_operation[id] = it->second;
  }

  // Bound the solver's work before it starts: it steps one τ at a time from T* to T_min, and
  // iteration times are ints of τ.
  std::vector<double> slowest(problem.dag.operations.size()), fastest(slowest.size());
  for (std::size_t v = 0; v < slowest.size(); ++v) {
    const InstructionCostModel& model = problem.model_of(static_cast<int>(v));
    slowest[v] = model.max_units();
    fastest[v] = model.min_units();
  }
  const double t_star_units = longest_path(problem.dag, slowest);
  const double t_min_units = longest_path(problem.dag, fastest);
  if (t_star_units > 1e9) {
    return core::Error{
        fmt::format("{}: T* is {:.3g} time units of {} s, more than 1e9; increase --unit-time-s",
                    profile.source, t_star_units, settings.unit_time_s)};
  }
  if (t_star_units - t_min_units > kMaxFrontierUnits) {
    return core::Error{fmt::format(
        "{}: T* - T_min spans {:.3g} time units of {} s, more than the limit of {:.0e} (one solver "
        "step each); increase --unit-time-s",
        profile.source, t_star_units - t_min_units, settings.unit_time_s, kMaxFrontierUnits)};
  }
  return problem;
}

std::string fit_fallback_summary(const PlanningProblem& problem) {
  std::string line;
  for (std::size_t m = 0; m < problem.models.size(); ++m) {
    const FitReport& fit = problem.models[m].fit();
    if (fit.fallback == FitFallback::kNone) continue;
    fmt::format_to(std::back_inserter(line), "{}stage {} {}: {} ({})", line.empty() ? "" : "; ",
                   problem.model_stage[m], pipeline::instruction_name(problem.model_kind[m]),
                   fit_fallback_name(fit.fallback), fit.fallback_reason);
  }
  return line;
}

}  // namespace powertrain::frontier
