#include "study/planning_choices.h"

#include <fmt/core.h>

namespace powertrain::study {

core::Result<PlanningChoices> parse_planning_choices(const std::string& schedule,
                                                     const std::string& cost_model,
                                                     const std::string& quantization,
                                                     const std::string& max_flow) {
  PlanningChoices choices;
  auto parsed_schedule = pipeline::parse_schedule(schedule);
  if (!parsed_schedule) {
    return core::Error{
        fmt::format("--schedule: unknown '{}'; known: {}", schedule, pipeline::known_schedules())};
  }
  choices.schedule = *parsed_schedule;
  auto parsed_cost_model = frontier::parse_cost_model(cost_model);
  if (!parsed_cost_model) {
    return core::Error{
        fmt::format("--cost-model: unknown '{}'; known: exponential, pwl", cost_model)};
  }
  choices.cost_model = *parsed_cost_model;
  auto parsed_quantization = frontier::parse_quantization(quantization);
  if (!parsed_quantization) {
    return core::Error{
        fmt::format("--quantization: unknown '{}'; known: floor, ceil", quantization)};
  }
  choices.quantization = *parsed_quantization;
  if (max_flow == "dinic") {
    choices.engine = frontier::MaxFlowEngine::kDinic;
  } else if (max_flow == "boykov-kolmogorov") {
    choices.engine = frontier::MaxFlowEngine::kBoostBoykovKolmogorov;
  } else if (max_flow == "edmonds-karp") {
    choices.engine = frontier::MaxFlowEngine::kBoost;
  } else {
    return core::Error{fmt::format(
        "--max-flow: unknown engine '{}' (known: dinic, boykov-kolmogorov, edmonds-karp)",
        max_flow)};
  }
  return choices;
}

}  // namespace powertrain::study
