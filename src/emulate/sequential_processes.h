// Processes of one rank that ran one after another — a shell script, make, or a Python driver
// running several CUDA programs under one `powertrain emulate` — are one GPU's work in sequence,
// not two ranks of a job; workers that one process started at the same time, each on a device of
// its own, are that device's ranks.
#pragma once

#include <vector>

#include "core/result.h"
#include "emulate/emulation_trace.h"
#include "trace/trace_events.h"

namespace powertrain::emulate {

/// Resolves traces that share a rank (set, ≥ 0):
/// - ran one after another: joined into one trace, in start order. A later process's times move
///   by the difference of the processes' start times (never before the previous one's last
///   call), its string, record and correlation indices are rebased, and where a process exited
///   one device reset per device is inserted (the context's teardown waits for its GPU work, so
///   the next program's work starts after it). The joined trace keeps the first process's
///   identity; its source names every file.
/// - workers of one launcher (torch.multiprocessing.spawn): each drives one device of the rank,
///   and the devices differ or two of them share an NCCL communicator (they ran together even
///   where the host clock shows no overlap: an emulated collective does not wait for its
///   peers). Each device's processes (joined in sequence as above) become that device's own
///   rank (rank × devices + device, one device), so the global GPU is unchanged; processes
///   without GPU work among them (the launcher) are left out.
/// - ran at the same time on the same device(s) (a background job; a GPU time-shared by
///   processes is not modelled): the one with the most GPU work stands for them, the others are
///   left out.
/// Each join, split and omission is a counted warning.
/// Errors: traces of one rank that cannot be ordered (no start time) or emulate different GPUs. Traces with a unique or
/// unset rank pass through unchanged; the output keeps input order (a joined trace where its
/// first process was). O(records).
core::Result<std::vector<ProcessTrace>> join_sequential_processes(
    std::vector<ProcessTrace> processes, std::vector<trace::TraceWarning>& warnings);

}  // namespace powertrain::emulate
