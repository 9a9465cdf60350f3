// `emulate --two-pass`: the predicted completion time of every cudaEventRecord, written per rank
// for a second run of the program, whose interposer answers cudaEventElapsedTime with them (so a
// benchmark's own printed timings are predictions, not this machine's host time).
#pragma once

#include <filesystem>

#include "core/result.h"
#include "emulate/emulate.h"

namespace powertrain::emulate {

/// Writes DIR/rank-R.tsv for every rank: a '#' header line, then one line per event record,
/// "event occurrence device_ns" (tab-separated integers; device_ns from the process's first
/// record). Errors: an unwritable directory or file. O(events).
core::Status write_predicted_events(const EmulationResult& result,
                                    const std::filesystem::path& dir);

}  // namespace powertrain::emulate
