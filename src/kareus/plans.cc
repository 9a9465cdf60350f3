#include "kareus/plans.h"

#include <fmt/core.h>

#include "frontier/evaluate.h"
#include "kareus/search.h"
#include "pipeline/operation_dag.h"

namespace powertrain::kareus {

using nlohmann::json;

core::Result<std::vector<std::vector<InstructionChoice>>> choices_at(const SystemPlans& plans,
                                                                     std::size_t point) {
  const frontier::PlanningProblem& problem = plans.iteration.problem;
  const frontier::Frontier& solved = plans.iteration.frontier;
  if (point >= solved.points.size())
    return core::Error{fmt::format("kareus plans: point {} of {}", point, solved.points.size())};
  // The solver's "frequencies" are option codes 1..n, slowest first (options_profile).
  const std::vector<int> codes = frontier::frequencies_for(problem, solved.durations_at(point));
  std::vector<std::vector<InstructionChoice>> out(problem.dag.gpu_order.size());
  for (std::size_t gpu = 0; gpu < out.size(); ++gpu) {
    for (int v : problem.dag.gpu_order[gpu]) {
      const auto node = static_cast<std::size_t>(v);
      const pipeline::Operation& op = problem.dag.operations.at(node);
      if (!pipeline::is_profiled(op.kind)) continue;
      const bool backward = op.kind == pipeline::InstructionKind::kBackward;
      const auto stage = static_cast<std::size_t>(op.stage);
      if (op.stage < 0 || stage >= plans.options.size())
        return core::Error{fmt::format("kareus plans: node {} has stage {}", v, op.stage)};
      const auto& opts = plans.options[stage][backward ? 1 : 0];
      const int code = codes.at(node);
      if (code < 1 || static_cast<std::size_t>(code) > opts.size())
        return core::Error{
            fmt::format("kareus plans: node {} chose option code {} of {}", v, code, opts.size())};
      out[gpu].push_back({v, op.stage, backward, op.microbatch,
                          &opts[opts.size() - static_cast<std::size_t>(code)]});
    }
  }
  return out;
}

double planned_time_s(const SystemPlans& plans, std::size_t point) {
  return plans.iteration.frontier.points.at(point).time_units *
         plans.iteration.problem.settings.unit_time_s;
}

core::Result<std::vector<std::vector<std::pair<std::string, int>>>> zeus_plan_at(
    const SystemPlans& plans, std::size_t point) {
  auto choices = choices_at(plans, point);
  if (!choices) return choices.error();
  std::vector<std::vector<std::pair<std::string, int>>> plan(choices->size());
  for (std::size_t gpu = 0; gpu < plan.size(); ++gpu)
    for (const InstructionChoice& c : (*choices)[gpu])
      plan[gpu].emplace_back(c.backward ? "backward" : "forward", c.option->clock_mhz);
  return plan;
}

std::vector<std::size_t> plan_points(std::size_t count, std::size_t max_points) {
  std::vector<std::size_t> out;
  if (count == 0) return out;
  if (max_points == 0 || max_points >= count) {
    for (std::size_t i = 0; i < count; ++i) out.push_back(i);
    return out;
  }
  if (max_points == 1) return {count - 1};
  for (std::size_t j = 0; j < max_points; ++j) {
    // Rounded j × (count − 1) / (max_points − 1): strictly increasing since count > max_points.
    const std::size_t i = (j * (count - 1) + (max_points - 1) / 2) / (max_points - 1);
    if (out.empty() || i > out.back()) out.push_back(i);
  }
  return out;
}

namespace {

json partition_types_json(const device::GpuSpec& gpu, const ConcurrencyParams& params,
                          const SystemPlans& plans) {
  json stages = json::array();
  for (std::size_t s = 0; s < plans.work.size(); ++s) {
    json stage = {{"stage", s}};
    for (int kind = 0; kind < 2; ++kind) {
      const MicrobatchWork& mb = plans.work[s][static_cast<std::size_t>(kind)];
      json types = json::array();
      for (std::size_t t = 0; t < mb.partitions.size(); ++t) {
        const PartitionType& p = mb.partitions[t];
        json compute = json::array();
        for (const Kernel& k : p.compute) compute.push_back(k.name);
        const SearchSpace space = default_search_space(gpu, params, p);
        types.push_back({{"type", t},
                         {"name", p.name},
                         {"count_per_microbatch", p.count},
                         {"collective", p.comm.name},
                         {"collective_group_size", p.group_size},
                         {"compute_kernels", compute},
                         {"searched_comm_sms", space.comm_sms},
                         {"searched_launch_slots", space.launch_slots}});
      }
      json solo = json::array();
      for (const Kernel& k : mb.solo) solo.push_back(k.name);
      stage[kind == 0 ? "forward" : "backward"] = {{"partition_types", types},
                                                   {"solo_kernels", solo}};
    }
    stages.push_back(std::move(stage));
  }
  return stages;
}

}  // namespace

core::Result<json> schedules_json(
    const device::GpuSpec& gpu, const ConcurrencyParams& params,
    const std::vector<std::pair<std::string, const SystemPlans*>>& systems,
    std::size_t max_points) {
  json doc;
  doc["gpu"] = gpu.name;
  doc["gpu_clocks_mhz"] = gpu.clocks_mhz;
  doc["note"] =
      "modelled; planned time/energy from the Perseus solver (energy per pipeline, one rank of "
      "each TP/CP group), realized = the chosen options' modelled costs on the pipeline DAG";
  if (!systems.empty() && systems.front().second)
    doc["stages"] = partition_types_json(gpu, params, *systems.front().second);
  json out_systems = json::array();
  for (const auto& [name, plans_ptr] : systems) {
    if (!plans_ptr) continue;
    const SystemPlans& plans = *plans_ptr;
    json points = json::array();
    for (std::size_t i : plan_points(plans.iteration.frontier.points.size(), max_points)) {
      auto choices = choices_at(plans, i);
      if (!choices) return choices.error();
      json point = {{"point", i},
                    {"planned_time_s", planned_time_s(plans, i)},
                    {"planned_energy_j", plans.iteration.frontier.points[i].energy_j}};
      if (i < plans.iteration.realized.size()) {
        point["realized_time_s"] = plans.iteration.realized[i].time_s;
        point["realized_energy_j"] = plans.iteration.realized[i].energy_j;
        point["realized_energy_all_gpus_j"] = plans.iteration.realized[i].energy_j * plans.replicas;
      }
      json stages = json::array();
      for (std::size_t gpu_index = 0; gpu_index < choices->size(); ++gpu_index) {
        json instructions = json::array();
        int stage_id = static_cast<int>(gpu_index);
        for (const InstructionChoice& c : (*choices)[gpu_index]) {
          stage_id = c.stage;
          const MicrobatchOption& o = *c.option;
          const MicrobatchWork& mb =
              plans.work.at(static_cast<std::size_t>(c.stage)).at(c.backward ? 1 : 0);
          json parts = json::array();
          for (std::size_t t = 0; t < mb.partitions.size(); ++t) {
            if (o.sequential || t >= o.schedules.size()) {
              parts.push_back({{"type", t}, {"schedule", "sequential"}});
              continue;
            }
            const Schedule& sch = o.schedules[t];
            const auto& compute = mb.partitions[t].compute;
            const auto slot = static_cast<std::size_t>(sch.launch_slot);
            parts.push_back({{"type", t},
                             {"comm_sms", sch.comm_sms},
                             {"launch_slot", sch.launch_slot},
                             {"launch_with_kernel",
                              slot < compute.size() ? compute[slot].name : std::string()}});
          }
          instructions.push_back({{"instruction", c.backward ? "backward" : "forward"},
                                  {"microbatch", c.microbatch},
                                  {"clock_mhz", o.clock_mhz},
                                  {"execution", o.sequential ? "sequential" : "partitioned"},
                                  {"modelled_time_s", o.time_s},
                                  {"modelled_energy_j", o.energy_j},
                                  {"partitions", parts}});
        }
        stages.push_back({{"stage", stage_id}, {"instructions", instructions}});
      }
      point["stages"] = std::move(stages);
      points.push_back(std::move(point));
    }
    out_systems.push_back({{"system", name},
                           {"unit_time_s", plans.iteration.problem.settings.unit_time_s},
                           {"gpus_per_pipeline_rank", plans.replicas},
                           {"points", points}});
  }
  doc["systems"] = std::move(out_systems);
  return doc;
}

}  // namespace powertrain::kareus
