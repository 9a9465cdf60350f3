// What `powertrain emulate` writes (summary.json, emulated_trace.json). Every number is
// modelled or predicted (nothing is measured on a GPU) and carries its unit in its name.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>

#include "core/atomic_output.h"
#include "core/result.h"
#include "emulate/emulate.h"

namespace powertrain::report {

/// The summary as JSON (units in field names: _s, _j, _bytes, _w; fractions in [0, 1]).
std::string emulation_summary_json(const emulate::EmulationResult& result);

/// Writes summary.json and emulated_trace.json (Perfetto) into the staging directory of `out`
/// (the caller may add files, then commits). Errors: a file cannot be written.
core::Status write_emulation_outputs(const emulate::EmulationResult& result,
                                     core::AtomicOutputDirectory& out);

/// The same into `dir`, replaced atomically as a whole.
core::Status write_emulation_outputs(const emulate::EmulationResult& result,
                                     const std::filesystem::path& dir);

/// The console summary: step time, host-time basis, breakdown, energy, memory (and any
/// out-of-memory, unsupported or misused call), the per-rank table and the files in `out`.
void print_emulation_summary(std::FILE* to, const emulate::EmulationResult& result,
                             const std::filesystem::path& out, bool kept_traces);

}  // namespace powertrain::report
