// What `powertrain replay` and `powertrain whatif` write (summary.json, replay_trace.json) and
// print. Every number says whether it is measured, simulated or modelled, and its unit.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/atomic_output.h"
#include "core/result.h"
#include "replay/replay.h"

namespace powertrain::report {

/// The request as the user gave it, echoed in the outputs.
struct ReplayRequest {
  std::string command;                   // "replay" or "whatif"
  std::vector<std::string> traces;       // paths as given
  std::vector<std::string> scale_texts;  // --scale values as given
  int data_parallel = 0;
  double hidden_ratio = 0.0;
  bool restages = false;
};

/// summary.json: verdict and reasons, per-rank and job metrics (measured, replayed, what-if),
/// restage details, modelled energy and every warning.
std::string replay_summary_json(const replay::ReplayRun& run, const ReplayRequest& request);

/// Writes replay_trace.json (Perfetto) and summary.json into the output's staging directory.
/// Errors: those of writing the files.
core::Status write_replay(const replay::ReplayRun& run, const ReplayRequest& request,
                          core::AtomicOutputDirectory& output);

/// The console report: verdict first, then per-rank table, fidelity, restage, what-if, energy,
/// warnings and the files in `directory`. `total_s` is the command's wall-clock time.
std::string replay_console(const replay::ReplayRun& run, const ReplayRequest& request,
                           double total_s, const std::filesystem::path& directory);

}  // namespace powertrain::report
