// Stage memory: model state per parameter plus 1F1B in-flight activations.
#include "workload/memory.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

namespace powertrain::workload {

using core::Error;

StateBytes state_bytes_per_parameter(const ParallelConfig& config) {
  const bool mixed = activation_element_bytes(config.precision) == 2.0;
  StateBytes bytes;
  bytes.parameter = mixed ? 2.0 : 4.0;
  bytes.gradient = 4.0;
  bytes.optimizer = mixed ? 12.0 : 8.0;
  if (config.distributed_optimizer) bytes.optimizer /= double(config.dp) * config.cp;
  return bytes;
}

double korthikanti_layer_activation_bytes(double s, double b, double h, double a, double t,
                                          bool sequence_parallel, bool flash, bool recompute) {
  const double sbh = s * b * h;
  if (recompute) return sequence_parallel ? 2.0 * sbh / t : 2.0 * sbh;
  const double attention = flash ? 0.0 : 5.0 * a * s / h;
  if (sequence_parallel) return sbh / t * (34.0 + attention);
  return sbh * (10.0 + 24.0 / t + attention / t);
}

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string breakdown(const StageMemory& m) {
  return fmt::format(
      "parameters {:.1f}, gradients {:.1f}, optimizer {:.1f}, activations {:.1f} "
      "GiB",
      m.parameter_bytes / kGiB, m.gradient_bytes / kGiB, m.optimizer_bytes / kGiB,
      m.activation_bytes / kGiB);
}

}  // namespace

core::Result<MemoryEstimate> estimate_memory(const ModelSpec& spec, const ParallelConfig& config,
                                             const Partition& partition, double capacity_bytes) {
  core::Status job = validate_job(spec, config);
  if (!job) return job.error();
  core::Status layout = validate_partition(partition, num_layer_units(spec), config.pp);
  if (!layout) return layout.error();
  if (!std::isfinite(capacity_bytes) || capacity_bytes <= 0.0) {
    return Error{
        fmt::format("memory estimate: GPU capacity must be a positive number of bytes, "
                    "got {}",
                    capacity_bytes)};
  }

  const std::vector<LayerUnit> units = layer_units(spec, config);
  const StateBytes per_param = state_bytes_per_parameter(config);
  MemoryEstimate estimate;
  estimate.capacity_bytes = capacity_bytes;
  for (int s = 0; s < config.pp; ++s) {
    const StageWork work = build_stage_work(spec, config, units, partition, s);
    StageMemory m;
    m.stage = s;
    m.parameters = work.parameters_per_gpu;
    m.parameter_bytes = m.parameters * per_param.parameter;
    m.gradient_bytes = m.parameters * per_param.gradient;
    m.optimizer_bytes = m.parameters * per_param.optimizer;
    for (int u = work.first_unit; u < work.end_unit; ++u) {
      m.activation_bytes_per_microbatch += units[u].stored_activation_bytes;
      m.recompute_working_bytes =
          std::max(m.recompute_working_bytes, units[u].recompute_working_bytes);
    }
    // 1F1B: stage s runs pp - s forwards before its first backward.
    m.in_flight_microbatches = std::min(config.pp - s, config.num_microbatches);
    m.activation_bytes =
        m.activation_bytes_per_microbatch * m.in_flight_microbatches + m.recompute_working_bytes;
    m.total_bytes = m.parameter_bytes + m.gradient_bytes + m.optimizer_bytes + m.activation_bytes;
    estimate.stages.push_back(m);
  }

  int over = 0;
  for (const StageMemory& m : estimate.stages) {
    if (m.total_bytes > estimate.stages[estimate.peak_stage].total_bytes) {
      estimate.peak_stage = m.stage;
    }
    over += m.total_bytes > capacity_bytes ? 1 : 0;
  }
  const StageMemory& peak = estimate.stages[estimate.peak_stage];
  estimate.fits = over == 0;
  if (estimate.fits) {
    estimate.verdict = fmt::format(
        "fits: the fullest stage, {}, needs {:.1f} GiB per GPU of "
        "{:.1f} GiB ({})",
        peak.stage, peak.total_bytes / kGiB, capacity_bytes / kGiB, breakdown(peak));
  } else {
    estimate.verdict = fmt::format(
        "does not fit: stage {} needs {:.1f} GiB per GPU but the GPU "
        "has {:.1f} GiB ({}); {} of {} stages are over",
        peak.stage, peak.total_bytes / kGiB, capacity_bytes / kGiB, breakdown(peak), over,
        config.pp);
  }
  return estimate;
}

}  // namespace powertrain::workload
