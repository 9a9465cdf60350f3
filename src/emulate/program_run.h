// The `emulate` flow as one call: run a program under the interposer (or take the traces of an
// earlier run), analyse its traces and, with two passes, run it again with its event timings
// answered from the prediction. The caller writes the result (report/emulation_report.h).
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/result.h"
#include "emulate/emulate.h"
#include "emulate/launcher.h"

namespace powertrain::emulate {

struct ProgramRunRequest {
  std::vector<std::string> command;  // the program; empty: analyse `traces` instead
  std::vector<std::string> traces;   // trace files or directories of an earlier run
  Layout layout;
  EmulateOptions options;
  std::string interposer;                 // explicit path, else find_interposer's search
  std::filesystem::path interposer_near;  // directory find_interposer looks in first
  double timeout_s = 0.0;
  bool two_pass = false;
  bool keep_traces = false;  // leave the program's traces in <staging>/traces
  std::string out;           // the output directory's name: a failed run's traces go next to it
  std::function<void(const std::string&)> progress;  // what happens, step by step (may be empty)
  std::function<void(const std::string&)> notice;    // failed processes, kept traces (always)
};

struct ProgramRun {
  EmulationResult result;
  int exit_code = 0;         // 1 when a process of either pass did not end cleanly
  bool kept_traces = false;  // <staging>/traces holds the program's traces
};

/// Runs the program with its traces in `staging`/traces (or reads request.traces), analyses them
/// and, with two_pass, runs it again with cudaEventElapsedTime answering pass 1's prediction
/// (predicted events in `staging`/predicted_events). When the analysis fails the traces are moved
/// to the first free "<out>.traces[-N]" for a look at the failure.
core::Result<ProgramRun> run_program(const ProgramRunRequest& request,
                                     const std::filesystem::path& staging);

}  // namespace powertrain::emulate
