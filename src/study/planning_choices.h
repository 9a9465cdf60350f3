// Planning choices shared by the flows that plan a frontier (frontier, cluster): schedule, cost
// model, quantization and max-flow engine, parsed once with the same one-line errors.
#pragma once

#include <string>

#include "core/result.h"
#include "frontier/cost_model.h"
#include "frontier/solver.h"
#include "pipeline/schedule.h"

namespace powertrain::study {

struct PlanningChoices {
  pipeline::ScheduleKind schedule = pipeline::ScheduleKind::kOneFOneB;
  frontier::CostModelKind cost_model = frontier::CostModelKind::kExponential;
  frontier::Quantization quantization = frontier::Quantization::kFloor;
  frontier::MaxFlowEngine engine = frontier::MaxFlowEngine::kDinic;
};

/// Errors name the flag, the bad value and the known values.
core::Result<PlanningChoices> parse_planning_choices(const std::string& schedule,
                                                     const std::string& cost_model,
                                                     const std::string& quantization,
                                                     const std::string& max_flow);

}  // namespace powertrain::study
