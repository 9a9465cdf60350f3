#include "emulate/program_settings.h"

#include <cmath>
#include <cstdint>

namespace powertrain::emulate {
namespace {

// The flag combinations the parser cannot check; empty when they are fine.
std::string check_mode(const ProgramSettings& settings) {
  if (settings.traces.empty() == settings.command.empty()) {
    return "give a program after -- (e.g. powertrain emulate --gpu h100 -- ./prog) or "
           "--traces DIR to analyse an earlier run, not both";
  }
  if (settings.two_pass && settings.command.empty()) {
    return "--two-pass runs a program twice: give one after --";
  }
  return {};
}

// The ranges the parser cannot check; empty when they are fine.
std::string check_ranges(const ProgramSettings& settings) {
  if (settings.timeout_s < 0 || !(settings.inter_node_gb_s > 0)) {
    return "--timeout-s must be >= 0 and --inter-node-bandwidth-gb-s > 0";
  }
  if (!(settings.max_host_gap_us >= 0.0) || settings.max_host_gap_us > 1e9) {
    return "--max-host-gap-us must be in [0, 1e9] microseconds";
  }
  return {};
}

EmulateOptions emulate_options(const ProgramSettings& settings, const Layout& layout) {
  EmulateOptions options;
  options.gpu = settings.gpu;
  if (!settings.command.empty() || settings.gpus > 0 || settings.nodes > 0 ||
      settings.gpus_per_node > 0) {
    options.nodes = layout.nodes;
    options.gpus_per_node = layout.gpus_per_node;
  } else {
    options.nodes = 0;  // traces without a topology: as many nodes of 8 as their GPUs need
    options.gpus_per_node = 8;
  }
  options.dedup = !settings.no_dedup;
  options.kernel_table = settings.kernel_table;
  options.detect_steps = !settings.whole_trace;
  options.device_model.inter_node_bandwidth_gb_s = settings.inter_node_gb_s;
  options.host_costs.max_host_gap_ns =
      static_cast<std::int64_t>(std::llround(settings.max_host_gap_us * 1e3));
  if (settings.host_time == "model") {
    options.host_costs.modelled_host_gap_ns =
        static_cast<std::int64_t>(std::llround(settings.modelled_host_gap_us * 1e3));
  }
  return options;
}

}  // namespace

std::filesystem::path self_directory() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::current_path() : exe.parent_path();
}

core::Result<ProgramRunRequest> program_request(const ProgramSettings& settings) {
  if (std::string problem = check_mode(settings); !problem.empty()) {
    return core::Error{std::move(problem)};
  }
  LayoutRequest layout_request;
  layout_request.gpus = settings.gpus;
  layout_request.ranks = settings.ranks;
  layout_request.nodes = settings.nodes;
  layout_request.gpus_per_node = settings.gpus_per_node;
  layout_request.devices_per_process = settings.devices_per_process;
  auto layout = resolve_layout(layout_request);
  if (!layout) return layout.error();
  if (std::string problem = check_ranges(settings); !problem.empty()) {
    return core::Error{std::move(problem)};
  }
  return ProgramRunRequest{.command = settings.command,
                           .traces = settings.traces,
                           .layout = *layout,
                           .options = emulate_options(settings, *layout),
                           .interposer = settings.interposer,
                           .interposer_near = self_directory(),
                           .timeout_s = settings.timeout_s,
                           .two_pass = settings.two_pass,
                           .keep_traces = settings.keep_traces,
                           .out = settings.out,
                           .progress = {},
                           .notice = {}};
}

}  // namespace powertrain::emulate
