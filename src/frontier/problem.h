// A planning problem: the pipeline DAG plus a cost model for every node.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "frontier/cost_model.h"
#include "pipeline/operation_dag.h"
#include "pipeline/schedule.h"
#include "profile/profile.h"

namespace powertrain::frontier {

/// Settings that turn measurements into cost models.
struct PlanningSettings {
  double unit_time_s = 1e-3;  // τ
  double p_blocking_w = 0.0;  // power of a GPU blocked on communication
  CostModelKind cost_model = CostModelKind::kExponential;
  FitMethod fit_method = FitMethod::kReference;
  // Ceil by default: realized points are never slower than planned. Floor reproduces the
  // reference solver's frontiers.
  Quantization quantization = Quantization::kCeil;
};

/// Upper bound on the solver's work: τ steps between T* and T_min (one max flow each at most).
inline constexpr double kMaxFrontierUnits = 1e7;

/// Everything the solver and the evaluators need. Models are shared by all nodes of one
/// (stage, instruction); constant-time nodes get single-duration models.
struct PlanningProblem {
  pipeline::PipelineSpec spec;
  pipeline::OperationDag dag;
  PlanningSettings settings;
  std::vector<InstructionCostModel> models;
  std::vector<int> model_of_operation;  // per node, index into models
  std::vector<int> model_stage;         // per model: profile stage (-1 for constants)
  std::vector<pipeline::InstructionKind> model_kind;
  std::vector<profile::MeasuredOption>
      max_clock_option;  // per model: the highest measured clock (baseline)

  const InstructionCostModel& model_of(int operation) const {
    return models[static_cast<std::size_t>(
        model_of_operation[static_cast<std::size_t>(operation)])];
  }
  int num_gpus() const { return dag.num_gpus; }
};

/// Builds the DAG for `spec` and fits a cost model per (stage, instruction) of `profile`.
/// Errors: schedule errors, missing (stage, instruction), a single clock, bad τ or P_blocking,
/// an instruction longer than kMaxUnitsPerInstruction τ, T* above 10^9 τ or more than
/// kMaxFrontierUnits τ between T* and T_min — each naming the profile file. A failed or concave
/// fit is not an error: see FitReport::fallback and fit_fallback_summary.
core::Result<PlanningProblem> build_planning_problem(const profile::Profile& profile,
                                                     const pipeline::PipelineSpec& spec,
                                                     const PlanningSettings& settings);

/// One line naming every (stage, instruction) whose exponential fit fell back, with the fallback
/// and the reason; "" when none did.
std::string fit_fallback_summary(const PlanningProblem& problem);

}  // namespace powertrain::frontier
