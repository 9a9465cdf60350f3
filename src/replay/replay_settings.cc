#include "replay/replay_settings.h"

#include "whatif/whatif.h"

namespace powertrain::replay {
namespace {

// The combinations and ranges the flag parser cannot check; empty when they are fine.
std::string check_settings(const ReplaySettings& settings, bool what_if) {
  if (settings.traces.empty()) return "give one or more trace files or directories";
  if (what_if && !settings.changes_anything())
    return "give at least one change: --scale CLASS=FACTOR, --pp, --microbatches, --layers, "
           "--dp or --hidden-ratio";
  if (settings.data_parallel > 0 && settings.restages())
    return "--dp applies to the measured graph; a pipeline rebuilt with --pp/--microbatches/"
           "--layers has only send/recv, no data-parallel collectives to re-estimate";
  if ((settings.data_parallel > 0 || settings.hidden_ratio > 0.0) &&
      settings.bus_bandwidth_gb_s > 0.0)
    return "--dp and --hidden-ratio change measured collective times; --bus-bandwidth "
           "replaces them with a model (use one or the other)";
  if (settings.p2p_s >= 0.0 && !(settings.p2p_s <= 1e3))
    return "--p2p-s must be in [0, 1000] seconds";
  if (settings.pipeline_stages < 0 || settings.microbatches < 0 || settings.layers < 0 ||
      settings.input_microbatches < 0 || settings.data_parallel < 0 || settings.hidden_ratio < 0.0)
    return "--pp, --microbatches, --layers, --input-microbatches, --dp and "
           "--hidden-ratio must be positive";
  return {};
}

}  // namespace

core::Result<Options> replay_options(const ReplaySettings& settings, bool what_if) {
  if (std::string problem = check_settings(settings, what_if); !problem.empty())
    return core::Error{std::move(problem)};
  Options options;
  for (const std::string& text : settings.scales) {
    auto scaling = whatif::parse_duration_scaling(text);
    if (!scaling) return scaling.error();
    options.scalings.push_back(*scaling);
  }
  if (settings.bus_bandwidth_gb_s < 0.0 || settings.collective_latency_s < 0.0)
    return core::Error{"--bus-bandwidth-gb-s and --collective-latency-s must not be negative"};
  if (settings.bus_bandwidth_gb_s > 0.0) {
    options.replay.collective_time = sim::ReplayOptions::CollectiveTime::kBandwidthLatency;
    options.replay.bus_bandwidth_gb_s = settings.bus_bandwidth_gb_s;
    options.replay.collective_latency_s = settings.collective_latency_s;
  }
  options.data_parallel = settings.data_parallel;
  options.hidden_ratio = settings.hidden_ratio;
  options.restage = {.stages = settings.pipeline_stages,
                     .microbatches = settings.microbatches,
                     .layers = settings.layers,
                     .p2p_s = settings.p2p_s};
  options.input_microbatches = settings.input_microbatches;
  return options;
}

}  // namespace powertrain::replay
