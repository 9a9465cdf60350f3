// Plans of the Perseus-planned Kareus systems (M+P, N+P, Kareus): which microbatch option every
// pipeline instruction runs at a frontier point, as Zeus plan files (per-instruction clock) and as
// a per-instruction schedule (clock, and per partition type the comm SMs and launch slot) in JSON.
#pragma once

#include <array>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "kareus/compose.h"
#include "kareus/partition.h"

namespace powertrain::kareus {

/// What the Perseus solver chose from, and what it chose: options[stage][0 forward, 1 backward]
/// (fastest first, as microbatch_frontier returns them), the microbatch work they belong to
/// (schedules[t] of an option is for work[stage][kind].partitions[t]) and the solved frontier.
struct SystemPlans {
  StageOptions options;
  std::vector<std::array<MicrobatchWork, 2>> work;
  IterationFrontier iteration;
  double replicas = 1.0;  // GPUs running each pipeline rank's plan (tp × cp × dp)
};

/// One pipeline instruction at a point.
struct InstructionChoice {
  int operation = 0;  // DAG node
  int stage = 0;
  bool backward = false;
  int microbatch = 0;
  const MicrobatchOption* option = nullptr;  // into SystemPlans::options
};

/// Per GPU, its forward/backward instructions in execution order with the option each runs at
/// `point`. Errors: point out of range, an option code the options do not have.
core::Result<std::vector<std::vector<InstructionChoice>>> choices_at(const SystemPlans& plans,
                                                                     std::size_t point);

/// Planned iteration time of a point (τ units × τ, s).
double planned_time_s(const SystemPlans& plans, std::size_t point);

/// The Zeus plan of a point: per GPU, (instruction name, clock MHz of its option).
core::Result<std::vector<std::vector<std::pair<std::string, int>>>> zeus_plan_at(
    const SystemPlans& plans, std::size_t point);

/// At most `max_points` point indices of a frontier with `count` points, spread evenly by index,
/// always the slowest (0) and the fastest (count − 1); every point when max_points is 0 or ≥ count.
std::vector<std::size_t> plan_points(std::size_t count, std::size_t max_points);

/// schedules.json: the job's partition types per (stage, instruction) with their kernels and
/// searched space, then per system and frontier point each instruction's clock and, per partition
/// type, its comm SMs and launch slot ("sequential" when the microbatch runs Megatron-LM's
/// sequential execution), for the points plan_points(points, max_points) selects. Errors: those of
/// choices_at.
core::Result<nlohmann::json> schedules_json(
    const device::GpuSpec& gpu, const ConcurrencyParams& params,
    const std::vector<std::pair<std::string, const SystemPlans*>>& systems,
    std::size_t max_points = 0);

}  // namespace powertrain::kareus
