// What `powertrain emulate` is asked for, as plain values, and its checks and defaults: the
// settings become one ProgramRunRequest (emulate/program_run.h) or a usage error.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/result.h"
#include "device/gpu.h"
#include "emulate/program_run.h"

namespace powertrain::emulate {

/// The command line's values; 0 = not given for the layout sizes (LayoutRequest).
struct ProgramSettings {
  std::vector<std::string> command;
  std::vector<std::string> traces;
  std::string out = "powertrain-emulate";
  std::string gpu = device::kDefaultEmulatedGpu;
  int gpus = 0;
  int ranks = 0;
  int nodes = 0;
  int gpus_per_node = 0;
  int devices_per_process = 0;
  bool no_dedup = false;
  std::string kernel_table;
  bool keep_traces = false;
  std::string interposer;
  double timeout_s = 0.0;
  double inter_node_gb_s = 50.0;
  double max_host_gap_us = 0.0;
  bool whole_trace = false;
  bool two_pass = false;
  std::string host_time = "measured";  // "measured" or "model"
  double modelled_host_gap_us = 1.0;
};

/// The run request for `settings` (progress and notice left empty). Every error is a usage
/// error: a program and --traces both or neither, --two-pass without a program, a layout that
/// does not divide, ranges the flag parser cannot check.
core::Result<ProgramRunRequest> program_request(const ProgramSettings& settings);

/// The directory of the running binary (where the interposer is looked for first); the current
/// directory when /proc/self/exe cannot be read.
std::filesystem::path self_directory();

}  // namespace powertrain::emulate
