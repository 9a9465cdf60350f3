// Processes of one rank that ran one after another — a shell script, make, or a Python driver
// running several CUDA programs under one `powertrain emulate` — are one GPU's work in sequence,
// not two ranks of a job.
#pragma once

#include <vector>

#include "core/result.h"
#include "emulate/emulation_trace.h"
#include "trace/trace_events.h"

namespace powertrain::emulate {

/// Joins traces that share a rank (set, ≥ 0) and ran one after another into one trace per rank,
/// in start order. A later process's times move by the difference of the processes' start
/// times (never before the previous one's last call), its string, record and correlation
/// indices are rebased, and where a process exited one device reset per device is inserted (the
/// context's teardown waits for its GPU work, so the next program's work starts after it). The
/// joined trace keeps the first process's identity; its source names every file. Each join is
/// a counted warning.
/// Errors: traces of one rank that ran at the same time (a process starting CUDA processes of
/// its own concurrently), or that cannot be ordered (no start time) or drive different devices.
/// Traces with a unique or unset rank pass through unchanged; the output keeps input order
/// (a joined trace where its first process was). O(records).
core::Result<std::vector<ProcessTrace>> join_sequential_processes(
    std::vector<ProcessTrace> processes, std::vector<trace::TraceWarning>& warnings);

}  // namespace powertrain::emulate
